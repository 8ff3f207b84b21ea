// csi-web/vite: a Vite plugin for apps that bundle csi-web. The engine's worker loads its runtime
// (Pyodide, onnxruntime-web, transformers.js, the wheels) by URL, so the runtime cannot be bundled:
// this plugin copies it whole into the build (<outDir>/<dir>/) and tells the engine where it went.
// In `vite dev` the runtime is served from node_modules/csi-web/ as it is.
//
//   // vite.config.js
//   import { defineConfig } from "vite";
//   import csiWeb from "csi-web/vite";
//   export default defineConfig({ plugins: [csiWeb()] });

import { cp, copyFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

const PACKAGE = fileURLToPath(new URL(".", import.meta.url));
/** The folders the worker loads by URL. */
const RUNTIME = ["worker", "vendor", "wheels", "lang"];

/**
 * @param {{dir?: string, serviceWorker?: boolean}} [options] `dir`: the folder of the build the
 *   runtime goes to (default "csi-web"); `serviceWorker`: also write csi-web's service worker as
 *   <outDir>/sw.js (for /v1/ and cross-origin isolation on hosts without COOP/COEP; default true)
 */
export default function csiWeb(options = {}) {
  const dir = (options.dir ?? "csi-web").replace(/^\/+|\/+$/g, "");
  let outDir = "";
  let building = false;
  return {
    name: "csi-web",
    enforce: "pre",
    config() {
      // its modules find the runtime beside them (import.meta.url): not pre-bundled in dev
      return { optimizeDeps: { exclude: ["csi-web"] } };
    },
    /** @param {any} config */
    configResolved(config) {
      outDir = path.resolve(config.root, config.build.outDir);
      building = config.command === "build";
    },
    /** @param {string} code @param {string} id */
    transform(code, id) {
      if (!building) return null;
      // the package's modules that name where the build put things: the runtime, the service worker
      const marks = {
        "/csi-web/web/runtime_base.js": ["BUNDLED_RUNTIME", dir + "/"],
        ...((options.serviceWorker ?? true) ? { "/csi-web/web/site_worker.js": ["BUNDLED_SERVICE_WORKER", "sw.js"] } : {}),
      };
      const file = id.split("?")[0].replaceAll("\\", "/");
      const hit = Object.entries(marks).find(([suffix]) => file.endsWith(suffix));
      if (!hit) return null;
      const [suffix, [name, where]] = hit;
      const mark = `const ${name} = null;`;
      if (!code.includes(mark)) throw new Error(`csi-web/vite: ${suffix} has no \`${mark}\``);
      return { code: code.replace(mark, `const ${name} = import.meta.env.BASE_URL + ${JSON.stringify(where)};`), map: null };
    },
    async writeBundle() {
      for (const folder of RUNTIME) {
        await cp(path.join(PACKAGE, folder), path.join(outDir, dir, folder), { recursive: true });
      }
      if (options.serviceWorker ?? true) await copyFile(path.join(PACKAGE, "sw.js"), path.join(outDir, "sw.js"));
    },
  };
}
