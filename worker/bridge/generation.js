// The Bridge's generation role: a chat model's cache fitted to a prompt, each request's sampling
// and grammar, and the decode steps whose tokens go back to Python through its callbacks.

import { jsonSchemaToEBNF } from "../grammar.js";
import { LOGIT_PROCESSORS } from "../logit_processors.js";
import { Sampler } from "../sampling/index.js";

/** @typedef {import("./model_store.js").ModelStore} ModelStore */
/** @typedef {(ticket: number, token: number, logprobs: string|undefined, grammarS: number|undefined) => void} OnToken */
/** @typedef {(ticket: number, message: string) => void} OnError */
/** @typedef {(ticket: number, resultsJson: string) => void} OnTokens */

// A decode loop resumed from promise callbacks never returns to the worker's task queue, so it
// lets messages (interrupt, cancel, new requests) in at least this often.
const YIELD_EVERY_MS = 8;
const yieldChannel = new MessageChannel();
/** @type {Array<() => void>} */
const yieldWaiters = [];
yieldChannel.port1.onmessage = () => yieldWaiters.shift()?.();
/** Resolve after one turn of the event loop (a message to ourselves: no timer clamping). @returns {Promise<void>} */
function yieldToEventLoop() {
  return new Promise((resolve) => {
    yieldWaiters.push(resolve);
    yieldChannel.port2.postMessage(0);
  });
}

/** @returns {never} */
function noCallbacks() {
  throw new Error("setStepCallbacks was not called");
}

export class GenerationRole {
  /** @param {ModelStore} store */
  constructor(store) {
    this.store = store;
    this.lastYield = 0;
    /** @type {OnToken} */
    this.onToken = noCallbacks;
    /** @type {OnError} */
    this.onError = noCallbacks;
    /** @type {OnTokens} */
    this.onTokens = noCallbacks;
  }

  /**
   * Compile a grammar for model `id` unless cached. Rejects with the compiler's message.
   * @param {string} id @param {string} specJson {kind, source}
   * @param {string} vocabType @param {boolean} prependSpace @param {string} stopIdsJson
   */
  async compileGrammar(id, specJson, vocabType, prependSpace, stopIdsJson) {
    const grammars = this.store.chat(id).grammarsFor(vocabType, !!prependSpace, JSON.parse(stopIdsJson));
    await grammars.compile(JSON.parse(specJson));
  }

  /** A JSON Schema as compact EBNF (for structural tags). @param {string} schemaJson */
  jsonSchemaToEBNF(schemaJson) {
    return jsonSchemaToEBNF(schemaJson);
  }

  /**
   * Fit model `id`'s cache to a new prompt: keep its longest common prefix with `ids` (short of the
   * last prompt token); returns how many tokens were kept. `reusePrefix(id, [])` drops the cache.
   * @param {string} id @param {ArrayLike<number>} ids the prompt's token ids
   * @returns {number}
   */
  reusePrefix(id, ids) {
    const model = this.store.chat(id);
    const cached = model.sequence.length;
    const kept = model.reusePrefix(ids);
    // as WebLLM: a prompt that does not continue the cached conversation (or resetChat) starts over
    if (kept < cached || !ids.length) LOGIT_PROCESSORS.get(id)?.resetState();
    return kept;
  }

  /** @param {string} id @param {string} paramsJson SamplingParams as JSON: a new request */
  setSampling(id, paramsJson) {
    const model = this.store.chat(id);
    model.sampler.dispose();
    model.sampler = new Sampler(JSON.parse(paramsJson), model.grammars);
    model.resetBreakdown();
  }

  /**
   * Seconds per step of the current request, by stage, as JSON (see ChatModel's Breakdown).
   * @param {string} id
   */
  latencyBreakdown(id) {
    return JSON.stringify(this.store.chat(id).breakdown);
  }

  /**
   * The next choice of the same request (`n` > 1): counts restart, the generator goes on.
   * @param {string} id
   */
  nextChoice(id) {
    this.store.chat(id).sampler.nextChoice();
  }

  /**
   * Python's persistent callbacks for `stepAsync` results: settling a Python future through
   * them costs far less per token than awaiting a returned Promise from Python.
   * @param {OnToken} onToken @param {OnError} onError @param {OnTokens} onTokens (`verifyAsync`'s)
   */
  setStepCallbacks(onToken, onError, onTokens) {
    this.onToken = onToken;
    this.onError = onError;
    this.onTokens = onTokens;
  }

  /**
   * Start a step: run `ids` (one token id, or an array) after the cache and sample; the token
   * arrives through `onToken(ticket, token, logprobsJson, grammarSeconds)` (`undefined` unless
   * logprobs were asked, or the request has a grammar).
   * @param {string} id @param {number|Int32Array|number[]} ids @param {number} ticket
   */
  stepAsync(id, ids, ticket) {
    const model = this.store.chat(id);
    const input = typeof ids === "number" ? [ids] : ids;
    const run = performance.now() - this.lastYield > YIELD_EVERY_MS
      ? yieldToEventLoop().then(() => {
        this.lastYield = performance.now();
        return model.step(input);
      })
      : model.step(input);
    run.then(
        // `undefined`, not `null`: Pyodide hands JS null to Python as a JsNull object, not None
        (r) => this.onToken(ticket, r.token, r.logprob === undefined ? undefined : JSON.stringify([r.logprob, r.top]),
          r.grammarS),
        (err) => this.onError(ticket, String(err?.message ?? err)),
      );
  }

  /**
   * Start a speculative step (ChatModel.verify): the choices arrive through
   * `onTokens(ticket, json)`, a list of `[token, logprob, top, grammarSeconds]` (nulls where absent).
   * @param {string} id @param {Int32Array|number[]} ids @param {Int32Array|number[]} drafts @param {number} ticket
   */
  verifyAsync(id, ids, drafts, ticket) {
    const model = this.store.chat(id);
    const run = () => model.verify(Array.from(ids), Array.from(drafts));
    const started = performance.now() - this.lastYield > YIELD_EVERY_MS
      ? yieldToEventLoop().then(() => {
        this.lastYield = performance.now();
        return run();
      })
      : run();
    started.then(
      (rs) => this.onTokens(ticket, JSON.stringify(rs.map((r) => [r.token, r.logprob ?? null, r.top ?? null,
        r.grammarS ?? null]))),
      (err) => this.onError(ticket, String(err?.message ?? err)),
    );
  }
}
