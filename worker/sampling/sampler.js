// A request's sampling: its state, and the steps (steps.js) run on each token's logits.

import { sharedKernel } from "./kernel.js";
import { makeRng } from "./rng.js";
import { PIPELINE, StepState } from "./steps.js";

/** @typedef {import("./params.js").SamplingParams} SamplingParams */
/** @typedef {import("./params.js").Choice} Choice */
/** @typedef {import("../grammar.js").Grammars} Grammars */
/** @typedef {import("../grammar.js").GrammarSpec} GrammarSpec */
/** @typedef {import("./kernel.js").Kernel} Kernel */

/**
 * Per-request sampling state: parameters, generator, counts of generated tokens, and the grammar
 * matcher when the request is constrained.
 */
export class Sampler {
  /**
   * @param {SamplingParams} params
   * @param {Grammars|null} [grammars] the model's, when `params.grammar` is set
   * @param {Kernel|null} [kernel] the WebAssembly kernel the steps run on (null: the JS path)
   */
  constructor(params, grammars = null, kernel = sharedKernel()) {
    this.params = params;
    this.grammars = params.grammar ? grammars : null;
    this.state = new StepState(params, makeRng(params.seed), kernel);
    /** seconds the last choice spent on penalties and on the bias (the rest is the draw and logprobs) */
    this.timing = this.state.timing;
  }

  /** Which path chooses the tokens: "wasm" (the kernel) or "js". */
  get path() {
    return this.state.kernel ? "wasm" : "js";
  }

  get constrained() {
    return this.grammars !== null;
  }

  /** Start another choice of the same request: counts and the grammar restart, the generator goes on. */
  nextChoice() {
    this.state.counts = new Map();
    this.state.matcher?.reset();
  }

  dispose() {
    this.state.matcher?.dispose();
    this.state.matcher = null;
  }

  /**
   * Choose the next token under the request's grammar: fetch the grammar's mask for this token
   * (making the matcher on the first), then run the steps, which mask and accept with it.
   * @param {Float32Array} logits @param {number[]} sequence
   * @returns {Promise<Choice>}
   */
  async chooseConstrained(logits, sequence) {
    const s = this.state;
    let started = performance.now();
    if (!s.matcher) {
      const grammars = /** @type {Grammars} */ (this.grammars);
      s.matcher = await grammars.matcher(/** @type {GrammarSpec} */ (this.params.grammar));
      started = performance.now(); // creating the matcher is once per request, not per-token work
    }
    s.bitmask = await s.matcher.getNextTokenBitmask();
    s.grammarMs = performance.now() - started;
    const choice = this.#run(logits, sequence);
    choice.grammarS = s.grammarMs / 1000;
    return choice;
  }

  /**
   * Choose the next token from the model's logits (no grammar).
   * @param {Float32Array} logits @param {number[]} sequence
   * @returns {Choice}
   */
  choose(logits, sequence) {
    this.state.bitmask = null;
    return this.#run(logits, sequence);
  }

  /** @param {Float32Array} logits @param {number[]} sequence @returns {Choice} */
  #run(logits, sequence) {
    const s = this.state;
    s.logits = logits;
    s.sequence = sequence;
    try {
      for (let i = 0; i < PIPELINE.length; i++) PIPELINE[i](s);
    } finally {
      s.release();
    }
    return this.params.logprobs ? { token: s.token, logprob: s.logprob, top: s.top } : { token: s.token };
  }
}
