// The models this site serves itself, as models/models.json lists them.

import { SITE_ONLY } from "../hub_fetch.js";

/**
 * The models the site serves from /models/<id>/ (built in, or imported from a GGUF by
 * `python3 build.py import-gguf`), as `models/models.json` lists them; never asked of the Hub.
 * Filled once `SITE_MODELS_LISTED` settles (no top-level await: a module worker would drop the
 * messages that arrive while it waits).
 * @type {string[]}
 */
export const BUILTIN_MODELS = [];
export const SITE_MODELS_LISTED = siteModels().then((ids) => {
  BUILTIN_MODELS.push(...ids);
  for (const id of ids) SITE_ONLY.add(id);
});

/** @returns {Promise<string[]>} */
async function siteModels() {
  try {
    const r = await fetch(new URL("../../models/models.json", import.meta.url));
    if (r.ok) return (await r.json()).models.map((/** @type {{id: string}} */ m) => m.id);
  } catch {
    // a site without the listing: the models every build has
  }
  return ["smollm2-135m-instruct", "tiny-chat", "all-minilm-l6-v2", "tiny-gpt2"];
}
