// The conversations this browser keeps: load, save, delete, search, export and import, which one is
// open, and the user's presets. IndexedDB when it opens; memory otherwise (the page still works).

import { openDb } from "./db.js";
import { EXPORT_FORMAT, parseExport } from "./validate.js";
import { matchesQuery, newId } from "./tree.js";

/**
 * @typedef {import("./tree.js").Conversation} Conversation
 * @typedef {import("./knobs.js").Settings} Settings
 */

export class Library {
  /** @param {import("./db.js").Db|null} db */
  constructor(db) {
    this.db = db;
    /** @type {Map<string, Conversation>} */
    this.byId = new Map();
    /** @type {Record<string, Settings>} */
    this.presets = {};
    /** @type {string|null} */
    this.openId = null;
  }

  /** Open the database and read what it holds. */
  static async open() {
    let db = null;
    try {
      db = await openDb();
    } catch (err) {
      console.warn(`conversations are kept in memory only: ${/** @type {Error} */ (err).message}`);
    }
    const lib = new Library(db);
    if (db) {
      for (const c of await db.all("conversations")) lib.byId.set(c.id, c);
      lib.presets = (await db.get("kv", "presets")) ?? {};
      lib.openId = (await db.get("kv", "open")) ?? null;
    }
    return lib;
  }

  /** Newest first, those matching `query` only. @param {string} [query] */
  list(query = "") {
    return [...this.byId.values()].filter((c) => matchesQuery(c, query)).sort((a, b) => b.updated - a.updated);
  }

  /** @param {string} id */
  get(id) {
    return this.byId.get(id) ?? null;
  }

  /** Keep `c` (a copy goes to the database: later edits of `c` need another save). @param {Conversation} c */
  async save(c) {
    this.byId.set(c.id, c);
    await this.db?.put("conversations", structuredClone(c));
  }

  /** @param {string} id */
  async remove(id) {
    this.byId.delete(id);
    await this.db?.delete("conversations", id);
  }

  /** Remember the open conversation for the next visit. @param {string} id */
  async setOpen(id) {
    this.openId = id;
    await this.db?.put("kv", id, "open");
  }

  /** @param {string} name @param {Settings|null} settings null deletes the preset */
  async setPreset(name, settings) {
    const next = { ...this.presets };
    if (settings) next[name] = settings;
    else delete next[name];
    this.presets = next;
    await this.db?.put("kv", next, "presets");
  }

  /** Every conversation as the JSON text of an export file. */
  exportJson() {
    const conversations = [...this.byId.values()].sort((a, b) => a.created - b.created || a.id.localeCompare(b.id));
    return JSON.stringify({ ...EXPORT_FORMAT, conversations }, null, 2);
  }

  /**
   * Add the conversations of an export file; all or none: a file that is not one throws an
   * `ImportError` naming what is wrong, and nothing changes. A conversation whose id is taken
   * comes in as a copy with an id of its own.
   * @param {string} text
   * @returns {Promise<Conversation[]>}
   */
  async importJson(text) {
    const incoming = parseExport(text);
    const added = incoming.map((c) => (this.byId.has(c.id) ? { ...c, id: newId() } : c));
    for (const c of added) await this.save(c);
    return added;
  }
}
