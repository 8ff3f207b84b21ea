// The Bridge's tokenizers role: token counts for chunking (a tokenizer alone is enough), encoding
// and decoding, chat templates, and the token table Python decodes with.

import { AutoTokenizer } from "../../vendor/transformers/transformers.js";
import { ChatModel } from "../chat_model.js";
import { EmbeddingModel } from "./embedding_model.js";
import { BUILTIN_MODELS } from "./site_models.js";

/** @typedef {import("./model_store.js").ModelStore} ModelStore */

export class TokenizersRole {
  /** @param {ModelStore} store */
  constructor(store) {
    this.store = store;
    /** @type {Map<string, any>} tokenizers loaded for chunking alone (no weights) */
    this.tokenizers = new Map();
  }

  /** The tokenizer of model `id` (loaded, or loaded for chunking), else null. @param {string} id */
  tokenizerOf(id) {
    const m = this.store.models.get(id);
    if (m instanceof ChatModel) return m.tokenizer;
    if (m instanceof EmbeddingModel) return m.extractor.tokenizer;
    return this.tokenizers.get(id) ?? null;
  }

  /**
   * Make `countTokens` work for a loaded model or a built-in one (its tokenizer only). Other ids
   * are refused: chunking never reaches out to the network.
   * @param {string} id
   */
  async loadTokenizer(id) {
    if (this.tokenizerOf(id)) return;
    if (!BUILTIN_MODELS.includes(id)) throw new Error(`${id} is neither loaded nor built in`);
    this.tokenizers.set(id, await AutoTokenizer.from_pretrained(id));
  }

  /**
   * Token counts (no special tokens) of a batch of texts.
   * @param {string} id @param {string} textsJson
   */
  countTokens(id, textsJson) {
    const tokenizer = this.tokenizerOf(id);
    if (!tokenizer) throw new Error(`no tokenizer is loaded for ${id}`);
    const texts = JSON.parse(textsJson);
    const out = new Int32Array(texts.length);
    for (let i = 0; i < texts.length; i++) {
      out[i] = tokenizer.encode(texts[i], { add_special_tokens: false }).length;
    }
    return out;
  }

  /**
   * The model's chat template source (`undefined` if it has none).
   * @param {string} id
   * @returns {string|undefined}
   */
  chatTemplate(id) {
    const t = this.store.chat(id).tokenizer.chat_template;
    if (typeof t === "string") return t;
    if (Array.isArray(t)) {
      // named templates: the one for tools if there is one
      const named = t.find((x) => x.name === "tool_use") ?? t.find((x) => x.name === "default");
      return named?.template;
    }
    return undefined;
  }

  /**
   * @param {string} id @param {string} messagesJson
   * @param {string} [toolsJson] OpenAI-shaped tools for the template, as JSON
   * @param {string} [variablesJson] more of the template's inputs (such as `enable_thinking`), as JSON
   */
  applyChatTemplate(id, messagesJson, toolsJson, variablesJson) {
    /** @type {Record<string, any>} */
    const options = { ...JSON.parse(variablesJson || "{}"), add_generation_prompt: true, tokenize: true,
      return_tensor: false, return_dict: false };
    if (toolsJson) options.tools = JSON.parse(toolsJson);
    const ids = this.store.chat(id).tokenizer.apply_chat_template(JSON.parse(messagesJson), options);
    return Int32Array.from(ids);
  }

  /** @param {string} id @param {string} text @param {boolean} addSpecialTokens */
  encode(id, text, addSpecialTokens = false) {
    return Int32Array.from(this.store.chat(id).tokenizer.encode(text, { add_special_tokens: !!addSpecialTokens }));
  }

  /** @param {string} id @param {Int32Array|number[]} ids @returns {string} */
  decode(id, ids) {
    return this.store.chat(id).tokenizer.decode(Array.from(ids), { skip_special_tokens: true });
  }

  /**
   * What Python needs to turn token ids into bytes itself: the decoder config, the id -> token
   * strings and the added tokens, as JSON.
   * @param {string} id
   */
  tokenTable(id) {
    const tok = this.store.chat(id).tokenizer;
    const added = [...tok._tokenizer.get_added_tokens_decoder().entries()]
      .map((/** @type {[number, any]} */ [i, t]) => [i, t.content, !!t.special]);
    return JSON.stringify({
      decoder: tok._tokenizerJSON?.decoder ?? null,
      vocab: Array.from(tok._tokenizer.model.vocab),
      added,
    });
  }
}
