// The JS side of the Python engine's Backend, the object csi.backends.pyodide calls by method name:
// tokenizers, forward passes with the KV cache kept in each ChatModel (chat_model.js: on the CPU or
// the GPU), sampling on typed arrays, embeddings. Each method hands the call to the role that does
// it (one file each); nothing here decides what to generate.

import { installMemoryProbes, workerMemory } from "../memory_stats.js";
import { configureRuntime } from "../runtime_env.js";
import { EmbeddingsRole } from "./embeddings.js";
import { GenerationRole } from "./generation.js";
import { InsidesRole } from "./insides.js";
import { LoadingRole } from "./loading.js";
import { ModelStore } from "./model_store.js";
import { PromptCachingRole } from "./prompt_caching.js";
import { TokenizersRole } from "./tokenizers.js";

export { BUILTIN_MODELS, SITE_MODELS_LISTED } from "./site_models.js";

configureRuntime();
installMemoryProbes();

/** Everything the Python backend calls. One instance per worker. */
export class Bridge {
  #store = new ModelStore();
  #loading = new LoadingRole(this.#store);
  #tokenizers = new TokenizersRole(this.#store);
  #generation = new GenerationRole(this.#store);
  #embeddings = new EmbeddingsRole(this.#store);
  #insides = new InsidesRole(this.#store);
  #promptCaching = new PromptCachingRole(this.#store);

  // loading (loading.js)

  builtinModels() { return this.#loading.builtinModels(); }
  /** @param {Parameters<LoadingRole["loadModel"]>} a */
  loadModel(...a) { return this.#loading.loadModel(...a); }
  abortLoads() { this.#loading.abortLoads(); }
  /** @param {Parameters<LoadingRole["openGGUF"]>} a */
  openGGUF(...a) { return this.#loading.openGGUF(...a); }
  /** @param {Parameters<LoadingRole["loadGGUF"]>} a */
  loadGGUF(...a) { return this.#loading.loadGGUF(...a); }
  /** Drop a GGUF opened and not loaded. @param {string} id */
  forgetGGUF(id) { this.#loading.opened.delete(id); }
  /** @param {string} id @param {string} device */
  preload(id, device) { this.#loading.preload(id, device); }
  discardPreloads() { return this.#loading.discardPreloads(); }
  /** @param {string} id */
  unloadModel(id) { return this.#loading.unloadModel(id); }
  /** The loaded chat model `id`, else throws. @param {string} id */
  chat(id) { return this.#store.chat(id); }

  /**
   * What this worker holds in memory (memory_stats.js), how many models are loaded, and how many
   * loads it began before Python asked (preloads: none once the page's first load has its answer), as JSON.
   */
  memoryStats() {
    return JSON.stringify({ ...workerMemory(), models: this.#store.models.size, preloads: this.#loading.preloads.size });
  }

  // tokenizers (tokenizers.js)

  /** @param {string} id */
  tokenizerOf(id) { return this.#tokenizers.tokenizerOf(id); }
  /** @param {string} id */
  loadTokenizer(id) { return this.#tokenizers.loadTokenizer(id); }
  /** @param {string} id @param {string} textsJson */
  countTokens(id, textsJson) { return this.#tokenizers.countTokens(id, textsJson); }
  /** @param {string} id */
  chatTemplate(id) { return this.#tokenizers.chatTemplate(id); }
  /** @param {Parameters<TokenizersRole["applyChatTemplate"]>} a */
  applyChatTemplate(...a) { return this.#tokenizers.applyChatTemplate(...a); }
  /** @param {Parameters<TokenizersRole["encode"]>} a */
  encode(...a) { return this.#tokenizers.encode(...a); }
  /** @param {string} id @param {Int32Array|number[]} ids */
  decode(id, ids) { return this.#tokenizers.decode(id, ids); }
  /** @param {string} id */
  tokenTable(id) { return this.#tokenizers.tokenTable(id); }

  // generation (generation.js)

  /** @param {Parameters<GenerationRole["compileGrammar"]>} a */
  compileGrammar(...a) { return this.#generation.compileGrammar(...a); }
  /** @param {string} schemaJson */
  jsonSchemaToEBNF(schemaJson) { return this.#generation.jsonSchemaToEBNF(schemaJson); }
  /** @param {string} id @param {ArrayLike<number>} ids */
  reusePrefix(id, ids) { return this.#generation.reusePrefix(id, ids); }
  /** @param {string} id @param {string} paramsJson */
  setSampling(id, paramsJson) { this.#generation.setSampling(id, paramsJson); }
  /** @param {string} id */
  latencyBreakdown(id) { return this.#generation.latencyBreakdown(id); }
  /** @param {string} id */
  nextChoice(id) { this.#generation.nextChoice(id); }
  /** @param {Parameters<GenerationRole["setStepCallbacks"]>} a */
  setStepCallbacks(...a) { this.#generation.setStepCallbacks(...a); }
  /** The per-token call. @param {string} id @param {number|Int32Array|number[]} ids @param {number} ticket */
  stepAsync(id, ids, ticket) { this.#generation.stepAsync(id, ids, ticket); }
  /** Speculative decoding's step. @param {Parameters<GenerationRole["verifyAsync"]>} a */
  verifyAsync(...a) { this.#generation.verifyAsync(...a); }

  // prompt caches kept beyond the page (prompt_caching.js)

  /** @param {string} id @param {ArrayLike<number>} ids */
  restorePrefix(id, ids) { return this.#promptCaching.restorePrefix(id, ids); }
  /** @param {string} id */
  remember(id) { return this.#promptCaching.remember(id); }
  promptCachesList() { return this.#promptCaching.list(); }
  /** @param {string} idsJson */
  promptCachesDelete(idsJson) { return this.#promptCaching.delete(idsJson); }
  /** @param {string} changesJson */
  promptCachesConfigure(changesJson) { return this.#promptCaching.configure(changesJson); }

  // insides (insides.js)

  /** @param {string} id */
  insidesGraph(id) { return this.#insides.insidesGraph(id); }
  /** @param {string} id @param {Int32Array|number[]} ids @param {string} planJson */
  insides(id, ids, planJson) { return this.#insides.insides(id, ids, planJson); }

  // embeddings (embeddings.js)

  /** @param {string} id @param {string} textsJson */
  embed(id, textsJson) { return this.#embeddings.embed(id, textsJson); }
  /** @param {string} id @param {string} idsJson */
  embedIds(id, idsJson) { return this.#embeddings.embedIds(id, idsJson); }
}
