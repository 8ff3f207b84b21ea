// @ts-check
// Chrome's Prompt API (`LanguageModel`, webmachinelearning/prompt-api) over a csi-web engine, so an
// app written for Chrome's built-in AI runs in any browser with WebAssembly, on a model it chooses.
//
//   import { LanguageModel } from "/web/prompt_api.js";
//   LanguageModel.configure({ model: "smollm2-135m-instruct" });    // optional: this is the default
//   const session = await LanguageModel.create({ initialPrompts: [{ role: "system", content: "Be brief." }] });
//   console.log(await session.prompt("What is the capital of France?"));
//
// Or, to run an app that uses the global unchanged, where the browser has no LanguageModel of its own:
//   import { installLanguageModel } from "/web/prompt_api.js";  installLanguageModel({ model: "..." });
//   (or <script type="module" src="/web/prompt_api_global.js?model=..."></script>)
//
// Each session keeps its own conversation; every prompt sends it whole, and the engine keeps the
// KV cache of the longest prefix it already ran, so a session's next prompt runs only its new
// tokens (while no other session used the model in between). Options a model cannot honor
// (images, audio, languages it does not read) are refused as the spec says. Tools (`create({tools})`)
// run during prompt() through the engine's tool calling (prompt_api_tools.js).

import {
  canonicalPrompt, coreOptions, domError, MAX_TEMPERATURE, MAX_TOP_K, modelSampling, quotaExceeded,
  refusal, responseConstraint, withGuidance,
} from "./prompt_api_input.js";
import { checkedConfig, EngineSource } from "./prompt_api_engine.js";
import { abortable, createMonitor, fromEngine, prefill, readReply, wire } from "./prompt_api_calls.js";
import { promptWithTools, toolSet } from "./prompt_api_tools.js";
import { install } from "./prompt_api_install.js";

/**
 * @typedef {import("./prompt_api_input.js").TextMessage} TextMessage
 * @typedef {import("./prompt_api_input.js").Constraint} Constraint
 * @typedef {import("./prompt_api_input.js").SamplingMode} SamplingMode
 * @typedef {import("./prompt_api_input.js").Expected} Expected
 * @typedef {import("./prompt_api_engine.js").FacadeConfig} FacadeConfig
 * @typedef {import("./prompt_api_tools.js").ToolSet} ToolSet
 * @typedef {import("./prompt_api_engine.js").Availability} Availability
 * @typedef {import("./engine.js").WebWorkerEngine} WebWorkerEngine
 * @typedef {{responseConstraint?: object, omitResponseConstraintInput?: boolean, signal?: AbortSignal}} PromptOptions
 * @typedef {{engine: WebWorkerEngine, model: string, window: number, maxTokens: number|undefined,
 *            initial: TextMessage[], turns: TextMessage[][], usage: number, temperature: number, topK: number,
 *            chosen: import("./prompt_api_input.js").ChosenSampling,
 *            samplingMode: SamplingMode|null, expectedInputs: Expected[], expectedOutputs: Expected[],
 *            tools: ToolSet|null}} SessionState
 */

const source = new EngineSource();
const CONSTRUCTING = Symbol("LanguageModel.create");

/**
 * A Prompt API session: a conversation with the configured model (see {@link LanguageModel.configure}).
 * Create it with `LanguageModel.create(options)`.
 */
export class LanguageModel extends EventTarget {
  /** @type {SessionState} */
  #s;
  /** @type {Promise<unknown>} the session's operations run one after the other */
  #queue = Promise.resolve();
  #destroyer = new AbortController();
  /** @type {((this: LanguageModel, ev: Event) => any)|null} */
  oncontextoverflow = null;
  /** @type {((this: LanguageModel, ev: Event) => any)|null} the deprecated name of `oncontextoverflow`'s event */
  onquotaoverflow = null;

  /** @param {symbol} token @param {SessionState} state */
  constructor(token, state) {
    super();
    if (token !== CONSTRUCTING) throw new TypeError("Illegal constructor: use LanguageModel.create()");
    this.#s = state;
  }

  /**
   * Choose the model (and engine) of the sessions created from now on; csi-web's own, not the
   * Prompt API's. Without a call, sessions use the built-in `smollm2-135m-instruct` on WASM, in a
   * worker the facade creates on the first `create()`.
   * @param {FacadeConfig} config
   */
  static configure(config = {}) {
    source.configure(checkedConfig(config));
  }

  /**
   * Whether sessions with these options can be created: "available", "downloading" (after the
   * load under way), "downloadable" (after loading the model) or "unavailable".
   * @param {any} [options] `expectedInputs`, `expectedOutputs`, `samplingMode`, `temperature`, `topK`, `tools`
   * @returns {Promise<Availability>}
   */
  static async availability(options = {}) {
    toolSet(options?.tools, options?.toolChoice);
    return refusal(coreOptions(options), source.languages) ? "unavailable" : source.availability();
  }

  /**
   * The sampling limits and defaults (the Prompt API's experimental `params()`): the defaults are
   * the model's own (its generation config), so the model is loaded first if need be; null when
   * no session can be created.
   * @returns {Promise<{defaultTopK: number, maxTopK: number, defaultTemperature: number, maxTemperature: number}|null>}
   */
  static async params() {
    if ((await source.availability()) === "unavailable") return null;
    const probe = await source.acquire(() => {})
      .then((engine) => engine.chatTokens({ model: source.model ?? null, messages: [{ role: "user", content: "" }] }))
      .catch((e) => {
        throw fromEngine(e);
      });
    const { temperature, topK } = modelSampling(probe.sampling);
    return Object.freeze({ defaultTopK: topK, maxTopK: MAX_TOP_K, defaultTemperature: temperature,
      maxTemperature: MAX_TEMPERATURE });
  }

  /**
   * A new session. Besides the Prompt API's options (`initialPrompts`, `monitor`, `signal`,
   * `expectedInputs`, `expectedOutputs`, `samplingMode`, `temperature`, `topK`, `tools`), csi-web takes
   * `engine` (and `model`): an engine the app made, instead of the configured one; and `toolChoice`:
   * "required" makes each prompt's first reply call a tool (small models seldom decide to).
   * @param {any} [options]
   * @returns {Promise<LanguageModel>}
   */
  static async create(options = {}) {
    const core = coreOptions(options);
    const tools = toolSet(options?.tools, options?.toolChoice);
    const signal = /** @type {AbortSignal|undefined} */ (options?.signal);
    signal?.throwIfAborted();
    const initial = options.initialPrompts === undefined ? [] : canonicalPrompt(options.initialPrompts, false);
    if (initial.some((m) => m.prefix)) {
      throw domError("NotSupportedError", "a prefix starts a reply: send it with prompt(), not in initialPrompts");
    }
    const from = options.engine === undefined ? source
      : new EngineSource(checkedConfig({ ...source.config, engine: options.engine, model: options.model }));
    const why = refusal(core, from.languages);
    if (why || (await from.availability()) === "unavailable") {
      throw domError("NotSupportedError", why ?? `the model ${from.model ?? ""} cannot be used here`);
    }
    const monitor = createMonitor(options.monitor);
    monitor.report(0);
    const engine = await abortable(from.acquire(monitor.report), signal).catch((e) => {
      throw fromEngine(e);
    });
    monitor.report(1);
    const probe = await abortable(engine.chatTokens({
      model: from.model ?? null, messages: wire(initial.length ? initial : [{ role: "user", content: "", prefix: false }]),
      ...(tools ? { tools: tools.declarations } : {}),
    }), signal).catch((e) => {
      throw fromEngine(e);
    });
    if ((initial.length || tools) && probe.token_ids === null) {
      throw quotaExceeded(`the initial prompts and tools take ${probe.count} tokens; the context window holds ${
        probe.context_window}`, probe.count, probe.context_window);
    }
    if (probe.token_ids && initial.length) await abortable(prefill(engine, probe.model, probe.token_ids, signal), signal);
    return new LanguageModel(CONSTRUCTING, {
      engine, model: probe.model, window: probe.context_window, maxTokens: from.config.maxTokens,
      initial, turns: [], usage: initial.length || tools ? probe.count : 0, ...modelSampling(probe.sampling),
      ...core.sampling, chosen: core.sampling, tools,
      samplingMode: core.samplingMode, expectedInputs: core.expectedInputs, expectedOutputs: core.expectedOutputs,
    });
  }

  get contextUsage() { return this.#s.usage; }
  get contextWindow() { return this.#s.window; }
  /** The deprecated name of `contextUsage`. */
  get inputUsage() { return this.#s.usage; }
  /** The deprecated name of `contextWindow`. */
  get inputQuota() { return this.#s.window; }
  get topK() { return this.#s.topK; }
  get temperature() { return this.#s.temperature; }
  /** The sampling mode the session was created with (null: the model's defaults, or `temperature`/`topK` given). */
  get samplingMode() { return this.#s.samplingMode; }

  /**
   * The model's reply to `input` (a string, or messages), added to the conversation.
   * @param {unknown} input @param {PromptOptions} [options]
   * @returns {Promise<string>}
   */
  async prompt(input, options = {}) {
    const prepared = this.#prepare(input, options, true);
    return this.#enqueue((signal) => this.#generate(prepared, signal, null), options.signal);
  }

  /**
   * The reply as a stream of text chunks, each the text new since the one before.
   * @param {unknown} input @param {PromptOptions} [options]
   * @returns {ReadableStream<string>}
   */
  promptStreaming(input, options = {}) {
    this.#alive();
    /** @type {ReadableStreamDefaultController<string>} */
    let out;
    const stream = new ReadableStream({ start: (c) => { out = c; } });
    Promise.resolve()
      .then(() => this.#prepare(input, options, true))
      .then((prepared) => this.#enqueue((signal) => this.#generate(prepared, signal, (t) => out.enqueue(t)), options.signal))
      .then(() => out.close(), (e) => out.error(e));
    return stream;
  }

  /**
   * Add messages to the conversation without asking for a reply (the model reads them now, so the
   * next prompt starts sooner).
   * @param {unknown} input @param {{signal?: AbortSignal}} [options]
   * @returns {Promise<undefined>}
   */
  async append(input, options = {}) {
    const { messages } = this.#prepare(input, {}, false);
    if (messages.some((m) => m.prefix)) {
      throw domError("NotSupportedError", "a prefix starts a reply: send it with prompt(), not append()");
    }
    return this.#enqueue(async (signal) => {
      const fit = await this.#fit(messages, null, signal);
      await prefill(this.#s.engine, this.#s.model, fit.ids, signal);
      this.#s.turns.push(messages);
      this.#s.usage = fit.count;
      return undefined;
    }, options.signal);
  }

  /**
   * How much of the context window `input` would take (tokens, control tokens included), as
   * prompt() would send it after this session's conversation.
   * @param {unknown} input @param {PromptOptions} [options]
   * @returns {Promise<number>}
   */
  async measureContextUsage(input, options = {}) {
    const { messages, prefix } = this.#prepare(input, options, true);
    return this.#enqueue(async (signal) => {
      const history = this.#history();
      const count = (/** @type {TextMessage[]} */ ms, /** @type {string|null} */ p) =>
        this.#tokens(ms, p, signal).then((r) => r.count);
      const before = history.length || this.#s.tools ? await count(history, null) : 0;
      return (await count([...history, ...messages], prefix)) - before;
    }, options.signal);
  }

  /** The deprecated name of {@link measureContextUsage}. @param {unknown} input @param {PromptOptions} [options] */
  measureInputUsage(input, options = {}) {
    return this.measureContextUsage(input, options);
  }

  /**
   * A new session with this one's options and conversation so far, which then goes its own way.
   * @param {{signal?: AbortSignal}} [options]
   * @returns {Promise<LanguageModel>}
   */
  async clone(options = {}) {
    this.#alive();
    return this.#enqueue(async () => new LanguageModel(CONSTRUCTING, {
      ...this.#s, initial: [...this.#s.initial], turns: this.#s.turns.map((t) => [...t]),
    }), options.signal);
  }

  /** End the session: calls under way reject with an AbortError, later ones with an InvalidStateError. */
  destroy() {
    this.#destroyer.abort(domError("AbortError", "the session was destroyed"));
  }

  /** @param {unknown} input @param {PromptOptions} options @param {boolean} prompting */
  #prepare(input, options, prompting) {
    this.#alive();
    if (!options || typeof options !== "object") throw new TypeError("the options must be an object");
    const given = options.responseConstraint !== undefined && options.responseConstraint !== null;
    if (options.omitResponseConstraintInput && !given) {
      throw new TypeError("omitResponseConstraintInput needs a responseConstraint");
    }
    const constraint = given ? responseConstraint(options.responseConstraint) : null;
    let messages = canonicalPrompt(input, this.#s.usage > 0 || this.#s.turns.length > 0);
    if (constraint && !options.omitResponseConstraintInput) messages = withGuidance(messages, constraint.guidance);
    const last = messages[messages.length - 1];
    const prefix = prompting && last.prefix ? last.content : null;
    return { messages: prefix === null ? messages : messages.slice(0, -1), prefix, constraint };
  }

  /**
   * Run one prompt: fit it in the window, stream the reply (to `chunk`), then keep the turn.
   * @param {{messages: TextMessage[], prefix: string|null, constraint: Constraint|null}} p
   * @param {AbortSignal} signal @param {((text: string) => void)|null} chunk
   */
  async #generate({ messages, prefix, constraint }, signal, chunk) {
    const s = this.#s;
    if (s.tools && prefix === null && !constraint) return this.#generateWithTools(messages, signal, chunk);
    const fit = await this.#fit(messages, prefix, signal);
    const room = s.window - fit.count;
    const request = {
      model: s.model, prompt: fit.ids, stream: /** @type {const} */ (true), stream_options: { include_usage: true },
      max_tokens: Math.min(room, s.maxTokens ?? room), ...this.#sampling(),
      ...(constraint ? { response_format: constraint.format } : {}),
    };
    let text = "";
    const { finish, generated } = await readReply(() => s.engine.completions.create(request, { signal }), signal,
      (choice) => {
        if (choice?.text) {
          text += choice.text;
          chunk?.(choice.text);
        }
      });
    if (constraint && finish !== "stop") {
      throw domError("SyntaxError", "the reply ran out of room before it satisfied the response constraint");
    }
    s.turns.push([...messages, { role: "assistant", content: (prefix ?? "") + text, prefix: false }]);
    s.usage = fit.count + generated;
    return text;
  }

  /**
   * A prompt in a session with tools (without a prefix or a response constraint, which take the
   * path above: the model reads the tools but calls none), the whole exchange then kept.
   * @param {TextMessage[]} messages @param {AbortSignal} signal @param {((text: string) => void)|null} chunk
   */
  async #generateWithTools(messages, signal, chunk) {
    const s = this.#s;
    const fit = async (/** @type {TextMessage[]} */ added) => {
      const { count } = await this.#fit(added, null, signal);
      return { count, window: s.window, history: this.#history() };
    };
    const r = await promptWithTools({ engine: s.engine, model: s.model, set: /** @type {ToolSet} */ (s.tools),
      maxTokens: s.maxTokens, sampling: this.#sampling() }, messages, fit, signal, chunk);
    s.turns.push([...r.added, { role: "assistant", content: r.last, prefix: false }]);
    s.usage = r.count + r.generated;
    return r.text;
  }

  #sampling() {
    const { temperature, topK } = this.#s.chosen;
    return { ...(temperature === undefined ? {} : { temperature }), ...(topK === undefined ? {} : { top_k: topK }) };
  }

  /**
   * The token ids of the conversation with `messages` after it, dropping the oldest turns (never
   * the initial prompts) until it fits; a QuotaExceededError, and nothing dropped, when it cannot.
   * @param {TextMessage[]} messages @param {string|null} prefix @param {AbortSignal} signal
   * @returns {Promise<{ids: number[], count: number}>}
   */
  async #fit(messages, prefix, signal) {
    const s = this.#s;
    let kept = s.turns;
    for (;;) {
      const r = await this.#tokens([...s.initial, ...kept.flat(), ...messages], prefix, signal);
      if (r.token_ids !== null && r.count < r.context_window) {
        if (kept !== s.turns) {
          s.turns = kept;
          this.#overflowed();
        }
        return { ids: r.token_ids, count: r.count };
      }
      if (!kept.length) {
        throw quotaExceeded(`the prompt needs ${r.count} tokens of context; the window holds ${r.context_window}`,
          r.count, r.context_window);
      }
      kept = kept.slice(1);
    }
  }

  /** @param {TextMessage[]} messages @param {string|null} prefix @param {AbortSignal} signal */
  async #tokens(messages, prefix, signal) {
    const list = messages.length ? messages : [{ role: /** @type {const} */ ("user"), content: "", prefix: false }];
    const tools = this.#s.tools ? { tools: this.#s.tools.declarations } : {};
    const r = await this.#s.engine.chatTokens({ model: this.#s.model, messages: wire(list), prefix, ...tools })
      .catch((e) => { throw fromEngine(e); });
    signal.throwIfAborted();
    return r;
  }

  #history() {
    return [...this.#s.initial, ...this.#s.turns.flat()];
  }

  #overflowed() {
    for (const type of ["contextoverflow", "quotaoverflow"]) {
      const event = new Event(type);
      this.dispatchEvent(event);
      const handler = type === "contextoverflow" ? this.oncontextoverflow : this.onquotaoverflow;
      handler?.call(this, event);
    }
  }

  #alive() {
    if (this.#destroyer.signal.aborted) throw domError("InvalidStateError", "the session was destroyed");
  }

  /**
   * Run `work` after the session's earlier operations; it rejects at once when `signal` aborts or
   * the session is destroyed (a queued operation then never runs).
   * @template T @param {(signal: AbortSignal) => Promise<T>} work @param {AbortSignal|undefined} signal
   * @returns {Promise<T>}
   */
  #enqueue(work, signal) {
    this.#alive();
    const both = signal ? AbortSignal.any([this.#destroyer.signal, signal]) : this.#destroyer.signal;
    both.throwIfAborted();
    const run = this.#queue.then(() => {
      both.throwIfAborted();
      return work(both);
    });
    this.#queue = run.catch(() => {});
    return abortable(run, both);
  }
}

/**
 * Make this facade `globalThis.LanguageModel` where the browser has no usable one of its own, and
 * configure it (see {@link LanguageModel.configure}). `replace` says when a browser's own
 * LanguageModel gives way: "unavailable" (the default: when its `availability()` says
 * "unavailable", e.g. Chromium without Google's model), "never", or "always". Resolves to the
 * `LanguageModel` the page now has: the browser's, left as it is, or this one.
 * @param {FacadeConfig} [config] @param {{replace?: "unavailable"|"never"|"always"}} [options]
 * @returns {Promise<any>}
 */
export const installLanguageModel = (config, options = {}) => install(LanguageModel, config, options);
