// What the Python engine needs from the worker besides models: language data files fetched from
// the site (only the languages asked for), and registered skills kept in IndexedDB.

const SITE = new URL("../", import.meta.url);
const DB_NAME = "csi-web";
const DB_VERSION = 1;
const SKILLS = "skills";

/** @returns {Promise<IDBDatabase>} */
function openDb() {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(DB_NAME, DB_VERSION);
    req.onupgradeneeded = () => {
      const db = req.result;
      if (!db.objectStoreNames.contains(SKILLS)) db.createObjectStore(SKILLS, { keyPath: "name" });
    };
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
    req.onblocked = () => reject(new Error("IndexedDB is blocked by another open connection"));
  });
}

/**
 * Run `body` in one transaction; resolve with its result only once the transaction has committed.
 * @template T
 * @param {IDBDatabase} db @param {string} store @param {IDBTransactionMode} mode
 * @param {(s: IDBObjectStore) => IDBRequest<T>} body
 * @returns {Promise<T>}
 */
function transact(db, store, mode, body) {
  return new Promise((resolve, reject) => {
    const tx = db.transaction(store, mode, { durability: "strict" });
    const req = body(tx.objectStore(store));
    tx.oncomplete = () => resolve(req.result);
    tx.onerror = () => reject(tx.error ?? req.error);
    tx.onabort = () => reject(tx.error ?? new Error("transaction aborted"));
  });
}

export class Host {
  constructor() {
    /** @type {Promise<IDBDatabase>|null} */
    this.db = null;
  }

  database() {
    this.db ??= openDb();
    return this.db;
  }

  /** @param {string} code ISO 639-3 */
  async languageData(code) {
    if (!/^[a-z]{3}$/.test(code)) throw new Error(`bad language code ${code}`);
    const res = await fetch(new URL(`lang/${code}.bin`, SITE));
    if (!res.ok) throw new Error(`lang/${code}.bin: HTTP ${res.status}`);
    return new Uint8Array(await res.arrayBuffer());
  }

  /** Every stored skill as JSON `{name: source}`. */
  async storedSkills() {
    const rows = await transact(await this.database(), SKILLS, "readonly", (s) => s.getAll());
    return JSON.stringify(Object.fromEntries(rows.map((r) => [r.name, r.source])));
  }

  /** @param {string} name @param {string} source */
  async storeSkill(name, source) {
    await transact(await this.database(), SKILLS, "readwrite", (s) => s.put({ name, source, stored: Date.now() }));
  }

  /** @param {string} name */
  async deleteSkill(name) {
    await transact(await this.database(), SKILLS, "readwrite", (s) => s.delete(name));
  }
}
