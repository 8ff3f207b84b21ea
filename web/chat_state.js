// @ts-check
// What WebLLM's engine remembers between chat completions, per model: the last reply
// (`getMessage`), throughput since the last reset (`runtimeStatsText`), and the sampling defaults
// given to `reload(ids, chatOpts)`.

/**
 * @typedef {{prompt_tokens: number, completion_tokens: number,
 *            prompt_tokens_details?: {cached_tokens: number}|null,
 *            extra?: Record<string, number>|null}} Usage
 * @typedef {{message: string, prefillTokens: number, prefillS: number, decodeTokens: number,
 *            decodeS: number}} ModelState
 */

/** The chat options whose meaning is a default for a request field of the same name. */
export const SAMPLING_OPTIONS = ["temperature", "top_p", "frequency_penalty", "presence_penalty",
  "repetition_penalty"];
/** Chat options that size the KV cache: there is nothing to size here, so they are accepted as no-ops. */
export const CACHE_OPTIONS = ["context_window_size", "sliding_window_size", "attention_sink_size"];

export class ChatStates {
  constructor() {
    /** @type {Map<string, ModelState>} */
    this.byModel = new Map();
    /** @type {string|null} the model of the last completion */
    this.lastModel = null;
    /** @type {Map<string, Record<string, number>>} sampling defaults per model */
    this.defaults = new Map();
  }

  /** @param {string} model @returns {ModelState} */
  state(model) {
    let s = this.byModel.get(model);
    if (!s) {
      s = { message: "", prefillTokens: 0, prefillS: 0, decodeTokens: 0, decodeS: 0 };
      this.byModel.set(model, s);
    }
    return s;
  }

  /**
   * A completion ended: remember its first choice's text and add its timings.
   * @param {string} model @param {string} message @param {Usage|null|undefined} usage
   */
  finish(model, message, usage) {
    const s = this.state(model);
    s.message = message;
    this.lastModel = model;
    if (!usage) return;
    const extra = usage.extra ?? {};
    const ttft = extra.time_to_first_token_s ?? 0;
    s.prefillTokens += usage.prompt_tokens - (usage.prompt_tokens_details?.cached_tokens ?? 0);
    s.prefillS += ttft;
    s.decodeTokens += Math.max(0, usage.completion_tokens - 1);
    s.decodeS += Math.max(0, (extra.e2e_latency_s ?? ttft) - ttft);
  }

  /**
   * Follow a stream: collect choice 0's text and the usage, and `finish` when it ends.
   * @returns {{chunk: (c: any) => void, end: () => void}}
   */
  follow() {
    let text = "";
    /** @type {string|null} */
    let model = null;
    /** @type {Usage|null} */
    let usage = null;
    return {
      chunk: (c) => {
        model = c?.model ?? model;
        usage = c?.usage ?? usage;
        for (const choice of c?.choices ?? []) {
          if (choice.index === 0) text += choice.delta?.content ?? choice.text ?? "";
        }
      },
      end: () => {
        if (model) this.finish(model, text, usage);
      },
    };
  }

  /** @param {string|undefined} model @returns {ModelState|null} */
  find(model) {
    const id = model ?? this.lastModel;
    return id === null ? null : this.byModel.get(id) ?? null;
  }

  /** WebLLM's format: tokens per second since the last reset. @param {string} [model] */
  statsText(model) {
    const s = this.find(model);
    const rate = (/** @type {number} */ n, /** @type {number} */ t) => (t > 0 ? n / t : 0).toFixed(4);
    return `prefill: ${rate(s?.prefillTokens ?? 0, s?.prefillS ?? 0)} tokens/sec, `
      + `decoding: ${rate(s?.decodeTokens ?? 0, s?.decodeS ?? 0)} tokens/sec`;
  }

  /**
   * Keep `chatOpts` (one object for every model, or one per model) as the models' sampling defaults.
   * @param {string[]} ids @param {any} chatOpts
   * @returns {{param: string, message: string}|null} what cannot be honored
   */
  setOptions(ids, chatOpts) {
    /** @type {Map<string, Record<string, number>>} */
    const chosen = new Map();
    if (chatOpts === undefined || chatOpts === null) {
      this.defaults = chosen;
      return null;
    }
    const list = Array.isArray(chatOpts) ? chatOpts : ids.map(() => chatOpts);
    if (list.length !== ids.length) {
      return { param: "chatOpts", message: `${list.length} chat options for ${ids.length} models` };
    }
    for (const [i, opts] of list.entries()) {
      if (opts === undefined || opts === null) continue;
      if (typeof opts !== "object" || Array.isArray(opts)) return { param: "chatOpts", message: "chat options are an object" };
      /** @type {Record<string, number>} */
      const defaults = {};
      for (const [k, v] of Object.entries(opts)) {
        if (SAMPLING_OPTIONS.includes(k)) defaults[k] = v;
        else if (!CACHE_OPTIONS.includes(k)) {
          return { param: `chatOpts.${k}`, message: `chat option \`${k}\` cannot be honored: csi-web reads the model's own configuration` };
        }
      }
      if (Object.keys(defaults).length) chosen.set(ids[i], defaults);
    }
    this.defaults = chosen;
    return null;
  }

  /** @param {boolean} keepStats @param {string} [model] all models when not given */
  reset(keepStats, model) {
    for (const [id, s] of this.byModel) {
      if (model !== undefined && id !== model) continue;
      s.message = "";
      if (!keepStats) Object.assign(s, { prefillTokens: 0, prefillS: 0, decodeTokens: 0, decodeS: 0 });
    }
  }

  /**
   * The request with the model's sampling defaults filled in where it leaves a field out.
   * @template {Record<string, any>} R
   * @param {R} request
   * @returns {R}
   */
  withDefaults(request) {
    const model = request?.model ?? (this.defaults.size === 1 ? [...this.defaults.keys()][0] : null);
    const defaults = model === null ? undefined : this.defaults.get(model);
    if (!defaults || !request || typeof request !== "object") return request;
    /** @type {Record<string, any>} */
    const out = { ...request };
    for (const [k, v] of Object.entries(defaults)) if (out[k] === undefined || out[k] === null) out[k] = v;
    return /** @type {R} */ (out);
  }
}
