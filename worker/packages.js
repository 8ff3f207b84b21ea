// The packages skills import (jinja2, yaml, pharia_skill, ...), loaded on demand from the site's
// wheels/packages/: its index.json maps each import name to the wheel files it needs, its
// dependencies included (Pyodide does not resolve the dependencies of a wheel given by URL).
// Nothing here runs at boot: the index and a wheel are fetched the first time a skill needs them.

const PACKAGES = new URL("../wheels/packages/", import.meta.url);

/**
 * @typedef {object} PyodideLoader the part of the Pyodide API used here
 * @property {(urls: string[], options: {messageCallback: (m: string) => void,
 *   errorCallback: (m: string) => void}) => Promise<Array<{fileName: string}>>} loadPackage
 */

export class PackageLoader {
  /** @param {PyodideLoader} pyodide */
  constructor(pyodide) {
    this.pyodide = pyodide;
    /** @type {Promise<Record<string, string[]>>|null} import name -> wheel files */
    this.index = null;
    /** @type {Map<string, Promise<void>>} wheel file -> its load, under way or done */
    this.loads = new Map();
  }

  /**
   * Load the packages `names` (import names), each wheel once: a call that asks for a wheel
   * another call is loading waits for that load.
   * @param {string[]} names
   */
  async load(names) {
    const index = await this.readIndex();
    /** @type {Set<string>} */
    const files = new Set();
    for (const name of names) {
      if (!Object.hasOwn(index, name)) throw new Error(`the site serves no package named ${name}`);
      for (const file of index[name]) files.add(file);
    }
    const fresh = [...files].filter((file) => !this.loads.has(file));
    if (fresh.length) {
      const load = this.install(fresh);
      for (const file of fresh) this.loads.set(file, load);
      load.catch(() => { // a later call tries again
        for (const file of fresh) if (this.loads.get(file) === load) this.loads.delete(file);
      });
    }
    await Promise.all([...files].map((file) => this.loads.get(file)));
  }

  /** @returns {Promise<Record<string, string[]>>} */
  readIndex() {
    this.index ??= fetch(new URL("index.json", PACKAGES)).then(async (res) => {
      if (!res.ok) throw new Error(`wheels/packages/index.json: HTTP ${res.status}`);
      return res.json();
    });
    this.index.catch(() => { this.index = null; });
    return this.index;
  }

  /** @param {string[]} files wheel files of wheels/packages/ */
  async install(files) {
    /** @type {string[]} */
    const errors = [];
    const loaded = await this.pyodide.loadPackage(files.map((file) => new URL(file, PACKAGES).href), {
      messageCallback: () => {},
      errorCallback: (message) => errors.push(message),
    });
    // Pyodide reports a wheel it could not fetch or install on errorCallback, and leaves it out
    const names = new Set(loaded.map((p) => p.fileName.toLowerCase()));
    const missing = files.filter((file) => !names.has(file.toLowerCase()));
    if (missing.length) throw new Error(`could not load ${missing.join(", ")}: ${errors.join(" ")}`);
  }
}
