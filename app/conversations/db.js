// The playground's own IndexedDB database: conversations (one record each, its message tree
// inside) and a small key-value store (the open conversation, the user's presets). Versioned:
// each entry of UPGRADES moves the schema one version on, so an old database is upgraded in steps.

const NAME = "csi-playground";

/** @type {Array<(db: IDBDatabase, tx: IDBTransaction) => void>} */
const UPGRADES = [
  (db) => {
    db.createObjectStore("conversations", { keyPath: "id" }).createIndex("updated", "updated");
    db.createObjectStore("kv");
  },
];

/** @template T @param {IDBRequest<T>} req @returns {Promise<T>} */
function done(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

/** Open (creating or upgrading) the database. @param {string} [name] */
export async function openDb(name = NAME) {
  const req = indexedDB.open(name, UPGRADES.length);
  req.onupgradeneeded = (e) => {
    const tx = /** @type {IDBTransaction} */ (req.transaction);
    for (let v = e.oldVersion; v < UPGRADES.length; v++) UPGRADES[v](req.result, tx);
  };
  const db = await done(req);
  // another tab upgrading the schema: let it, this tab's next write reports the closed database
  db.onversionchange = () => db.close();
  return new Db(db);
}

export class Db {
  /** @param {IDBDatabase} db */
  constructor(db) {
    this.db = db;
  }

  /** @param {string} store */
  reader(store) {
    return this.db.transaction(store, "readonly").objectStore(store);
  }

  /** Every record of a store. @param {string} store @returns {Promise<any[]>} */
  all(store) {
    return done(this.reader(store).getAll());
  }

  /** @param {string} store @param {IDBValidKey} key @returns {Promise<any>} */
  get(store, key) {
    return done(this.reader(store).get(key));
  }

  /** Write a record (a key for stores without a key path), settled once committed. @param {string} store @param {any} value @param {IDBValidKey} [key] */
  put(store, value, key) {
    return this.write(store, (s) => s.put(value, key));
  }

  /** @param {string} store @param {IDBValidKey} key */
  delete(store, key) {
    return this.write(store, (s) => s.delete(key));
  }

  /** @param {string} store @param {(s: IDBObjectStore) => void} change @returns {Promise<void>} */
  write(store, change) {
    const tx = this.db.transaction(store, "readwrite");
    change(tx.objectStore(store));
    return new Promise((resolve, reject) => {
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error);
    });
  }
}
