// The worker's IndexedDB database: one connection, and transactions that settle only once committed.

const DB_NAME = "csi-web";
const DB_VERSION = 3;

/** Object stores and their key paths. Version 1 had `skills`; 2 adds the document index; 3 stored responses. */
const STORES = {
  skills: "name",
  collections: "key", // [namespace, collection]
  indexes: "key", // [namespace, collection, index]
  documents: "key", // [namespace, collection, name]
  chunks: "key", // [namespace, collection, index, name]: one document's chunks in one index
  responses: "id", // the Responses API's stored responses: {id, record (JSON), stored}
};

/** How long an upgrade may wait for another tab (an older version of this site) to let go. */
const BLOCKED_MS = 10_000;

/** @type {Promise<IDBDatabase>|null} */
let opened = null;

/** The open database; a failed or closed connection is opened anew on the next call. */
export function database() {
  opened ??= new Promise((resolve, reject) => {
    const req = indexedDB.open(DB_NAME, DB_VERSION);
    let timer = 0;
    let gaveUp = false;
    const fail = (/** @type {unknown} */ err) => {
      if (gaveUp) return;
      clearTimeout(timer);
      gaveUp = true;
      opened = null;
      reject(err);
    };
    req.onupgradeneeded = () => {
      const db = req.result;
      for (const [name, keyPath] of Object.entries(STORES)) {
        if (!db.objectStoreNames.contains(name)) db.createObjectStore(name, { keyPath });
      }
    };
    req.onsuccess = () => {
      clearTimeout(timer);
      const db = req.result;
      if (gaveUp) { // it was blocked too long: the caller has had its error
        db.close();
        return;
      }
      const forget = () => {
        opened = null;
      };
      db.onversionchange = () => { // a newer page wants to upgrade: let it
        db.close();
        forget();
      };
      db.onclose = forget;
      resolve(db);
    };
    req.onerror = () => fail(req.error);
    req.onblocked = () => {
      timer = setTimeout(() => fail(new Error(
        "IndexedDB cannot be upgraded while another tab runs an older version of this site: reload or close it")),
      BLOCKED_MS);
    };
  });
  return opened;
}

/**
 * Run `body` in one transaction over `stores`; resolve with what it returns only once the
 * transaction has committed (durability "strict": on disk, not just in the OS cache).
 * @template T
 * @param {string[]} stores @param {IDBTransactionMode} mode
 * @param {(tx: IDBTransaction) => T} body
 * @returns {Promise<Awaited<T>>} what `body` returned (its value, when it returned a promise)
 */
export async function transact(stores, mode, body) {
  const db = await database();
  // resolving with a promise adopts its value: hence Awaited<T>
  return /** @type {Promise<Awaited<T>>} */ (new Promise((resolve, reject) => {
    const tx = db.transaction(stores, mode, { durability: "strict" });
    let result;
    try {
      result = body(tx);
    } catch (err) {
      tx.abort();
      reject(err);
      return;
    }
    // the body's own read promises reject too when the transaction fails: the rejection below says why
    if (result instanceof Promise) result.catch(() => {});
    tx.oncomplete = () => resolve(/** @type {Awaited<T>} */ (result));
    tx.onerror = (event) =>
      reject(tx.error ?? /** @type {IDBRequest|null} */ (event.target)?.error ?? new Error("transaction failed"));
    tx.onabort = () => reject(tx.error ?? new Error("transaction aborted"));
  }));
}

/**
 * The value of a request once it has succeeded (for reads inside a transaction).
 * @template T @param {IDBRequest<T>} req @returns {Promise<T>}
 */
export function result(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

/**
 * Every key starting with `prefix` (arrays sort after strings, so `[...prefix, []]` bounds them).
 * @param {string[]} prefix
 */
export function prefixRange(prefix) {
  return IDBKeyRange.bound(prefix, [...prefix, []]);
}
