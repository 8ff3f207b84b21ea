// @ts-check
// The Prompt API facade as `globalThis.LanguageModel`, where the browser has no usable one of its
// own (none, or one whose availability() is "unavailable"), for apps that use the global unchanged:
//
//   <script type="module" src="/web/prompt_api_global.js?model=smollm2-135m-instruct"></script>
//
// The query string configures it (see `LanguageModel.configure` in prompt_api.js): `model`,
// `device` ("wasm" | "webgpu" | "auto"), `languages` (comma-separated BCP 47 tags), `maxTokens`.
// Import prompt_api.js and call `installLanguageModel(config)` instead to pass an engine.

import { installLanguageModel } from "./prompt_api.js";

const query = new URL(import.meta.url).searchParams;
/** @type {import("./prompt_api_engine.js").FacadeConfig} */
const config = {};
const model = query.get("model");
const device = query.get("device");
const languages = query.get("languages");
const maxTokens = query.get("maxTokens");
if (model) config.model = model;
if (device) config.device = /** @type {any} */ (device);
if (languages) config.languages = languages.split(",").map((l) => l.trim()).filter(Boolean);
if (maxTokens) config.maxTokens = Number(maxTokens);

await installLanguageModel(config);
