// What the Python engine needs from the worker besides models: language data files fetched from
// the site (only the languages asked for), registered skills kept in IndexedDB, the packages
// skills import (loaded on demand), and the document index's store.

import { DocStore } from "./doc_store.js";
import { transact, result } from "./idb.js";
import { httpStart } from "./http_fetch.js";

const SITE = new URL("../", import.meta.url);
const SKILLS = "skills";
const RESPONSES = "responses";

export class Host {
  /** @param {import("./packages.js").PackageLoader} packages */
  constructor(packages) {
    this.documents = new DocStore();
    this.packages = packages;
  }

  /** An HTTP request to a remote model's server (see http_fetch.js). */
  httpStart = httpStart;

  /** @param {string} code ISO 639-3 */
  async languageData(code) {
    if (!/^[a-z]{3}$/.test(code)) throw new Error(`bad language code ${code}`);
    const res = await fetch(new URL(`lang/${code}.bin`, SITE));
    if (!res.ok) throw new Error(`lang/${code}.bin: HTTP ${res.status}`);
    return new Uint8Array(await res.arrayBuffer());
  }

  /** Every stored skill as JSON `{name: source}`. */
  async storedSkills() {
    const rows = await transact([SKILLS], "readonly", (tx) => result(tx.objectStore(SKILLS).getAll()));
    return JSON.stringify(Object.fromEntries(rows.map((r) => [r.name, r.source])));
  }

  /** @param {string} name @param {string} source */
  async storeSkill(name, source) {
    await transact([SKILLS], "readwrite", (tx) => tx.objectStore(SKILLS).put({ name, source, stored: Date.now() }));
  }

  /** @param {string} name */
  async deleteSkill(name) {
    await transact([SKILLS], "readwrite", (tx) => tx.objectStore(SKILLS).delete(name));
  }

  /** A stored response's record as JSON, or undefined. @param {string} id */
  async storedResponse(id) {
    const row = await transact([RESPONSES], "readonly", (tx) => result(tx.objectStore(RESPONSES).get(id)));
    return row ? row.record : undefined; // undefined reaches Python as None (null as JsNull)
  }

  /** @param {string} id @param {string} record JSON */
  async storeResponse(id, record) {
    await transact([RESPONSES], "readwrite", (tx) => tx.objectStore(RESPONSES).put({ id, record, stored: Date.now() }));
  }

  /** Whether a stored response was there (and is now deleted). @param {string} id */
  async deleteResponse(id) {
    return transact([RESPONSES], "readwrite", async (tx) => {
      const store = tx.objectStore(RESPONSES);
      const found = (await result(store.count(id))) > 0;
      if (found) store.delete(id);
      return found;
    });
  }

  /** @param {string} names JSON: the import names of the packages to load */
  async loadPackages(names) {
    await this.packages.load(JSON.parse(names));
  }
}
