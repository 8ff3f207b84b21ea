// The models this site serves itself, as models/models.json lists them, and where they are.

import { env } from "../../vendor/transformers/transformers.js";
import { SITE_ONLY } from "../hub_fetch.js";

/**
 * Where models are looked for, in order: the worker URL's `models` query parameter (an app's
 * engine names its page's models/ folder there: web/runtime_base.js), then the runtime's own
 * models/ (the site's layout). The first whose models.json answers serves the models. Only this
 * origin's folders count: transformers.js reads local models by path.
 */
const CANDIDATES = [new URL(self.location.href).searchParams.get("models"), "../../models/"]
  .filter((c) => c !== null)
  .map((c) => new URL(/** @type {string} */ (c), import.meta.url))
  .filter((url) => url.origin === self.location.origin);

/**
 * The models the site serves from <models>/<id>/ (built in, or imported from a GGUF by
 * `python3 build.py import-gguf`), as `models.json` lists them; never asked of the Hub.
 * Filled once `SITE_MODELS_LISTED` settles (no top-level await: a module worker would drop the
 * messages that arrive while it waits).
 * @type {string[]}
 */
export const BUILTIN_MODELS = [];
/** @type {Map<string, string>} each site model's files' hash (models.json `sha256`), where the listing has one */
export const MODEL_HASHES = new Map();
export const SITE_MODELS_LISTED = siteModels().then(({ base, ids, hashes }) => {
  env.localModelPath = base.pathname; // transformers.js takes a path here, not a URL
  BUILTIN_MODELS.push(...ids);
  for (const id of ids) SITE_ONLY.add(id);
  for (const [id, hash] of hashes) MODEL_HASHES.set(id, hash);
});

/** @returns {Promise<{base: URL, ids: string[], hashes: Array<[string, string]>}>} */
async function siteModels() {
  for (const base of CANDIDATES) {
    try {
      const r = await fetch(new URL("models.json", base));
      if (r.ok) {
        /** @type {Array<{id: string, sha256?: unknown}>} */
        const models = (await r.json()).models;
        const hashes = models.filter((m) => typeof m.sha256 === "string").map((m) => /** @type {[string, string]} */ ([m.id, m.sha256]));
        return { base, ids: models.map((m) => m.id), hashes };
      }
    } catch {
      // not served there: the next place
    }
  }
  // a site without the listing: the models every build has, where the site keeps them
  return { base: CANDIDATES[CANDIDATES.length - 1], ids: ["smollm2-135m-instruct", "tiny-chat", "all-minilm-l6-v2", "tiny-gpt2"], hashes: [] };
}
