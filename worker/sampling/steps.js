// One token's choice as a named list of steps, run in this order by the Sampler (sampler.js).
// csi.backends.cpython lists the same steps, in the same order, in snake_case. Each step reads and
// writes one StepState, made once per request and reused on every token (no allocation per step).

import { applyBitmask } from "../grammar.js";
import { drawOnKernel, logprobsOnKernel } from "./kernel_draw.js";
import { logprobs as logprobsOf } from "./logprobs.js";
import { biasInPlace, changesLogits, penalizeInPlace, scratchCopy } from "./penalties.js";
import { draw as drawToken } from "./selection.js";

/** @typedef {import("./params.js").SamplingParams} SamplingParams */
/** @typedef {import("./rng.js").Rng} Rng */
/** @typedef {import("./kernel.js").Kernel} Kernel */

/** Marks a step error that is the request's grammar's fault (Python makes it a typed error). */
export const GRAMMAR_ERROR = "[grammar] ";

/** The steps of one token's choice, in the order they run. */
export const SAMPLING_STEPS = ["maskGrammar", "penalize", "bias", "draw", "count", "acceptGrammar", "logprobs"];

const NO_LOGITS = new Float32Array(0);
/** @type {number[]} */
const NO_SEQUENCE = [];

/** What the steps of one request share: its parameters and generator, and the current token's work. */
export class StepState {
  /** @param {SamplingParams} params @param {Rng} rng @param {Kernel|null} kernel the WebAssembly kernel, else JS */
  constructor(params, rng, kernel) {
    this.params = params;
    this.rng = rng;
    this.kernel = kernel;
    /** whether penalties or bias change the logits (else `penalize` and `bias` leave them alone) */
    this.changes = changesLogits(params);
    /** @type {Map<number, number>} how often each token was chosen in this choice */
    this.counts = new Map();
    /** @type {any} web-xgrammar's matcher, when the request has a grammar (made on its first token) */
    this.matcher = null;
    /** @type {Int32Array|null} the grammar's mask for this token (fetched before the steps run), else null */
    this.bitmask = null;
    /** @type {Float32Array} the logits as the steps so far left them */
    this.logits = NO_LOGITS;
    /** @type {number[]} every token in the model's context so far (prompt and generated) */
    this.sequence = NO_SEQUENCE;
    this.token = -1;
    /** log-sum-exp of the logits when the draw computed it, else NaN */
    this.lse = NaN;
    /** @type {number|undefined} */
    this.logprob = undefined;
    /** @type {Array<[number, number]>|undefined} */
    this.top = undefined;
    /** milliseconds of this token's grammar work (mask and accept) */
    this.grammarMs = 0;
    /** seconds the last token spent on penalties and on the bias (the rest is the draw and logprobs) */
    this.timing = { penalty: 0, bias: 0 };
  }

  /** Let go of the token's logits and sequence (a prompt's logits may be large). */
  release() {
    this.logits = NO_LOGITS;
    this.sequence = NO_SEQUENCE;
  }
}

/** The steps by name. Each takes the request's StepState and returns nothing. */
const STEPS = {
  /** Rule out the tokens the grammar does not allow here. @param {StepState} s */
  maskGrammar(s) {
    const bitmask = s.bitmask;
    if (bitmask === null) return;
    const t = performance.now();
    if (!bitmask.some((word) => word !== 0)) {
      throw new Error(`${GRAMMAR_ERROR}the grammar allows no token here: it accepts no text`);
    }
    s.logits = applyBitmask(s.logits, bitmask);
    s.grammarMs += performance.now() - t;
  },

  /** Repetition, frequency and presence penalties, on a copy of the logits. @param {StepState} s */
  penalize(s) {
    const t = performance.now();
    if (s.changes) {
      s.logits = s.kernel ? s.kernel.load(s.logits) : scratchCopy(s.logits);
      penalizeInPlace(s.logits, s.params, s.sequence, s.counts);
    }
    s.timing.penalty = (performance.now() - t) / 1000;
  },

  /** The logit bias, on that copy. @param {StepState} s */
  bias(s) {
    const bias = s.params.logit_bias;
    if (!s.changes || !bias || bias.length === 0) {
      s.timing.bias = 0;
      return;
    }
    const t = performance.now();
    biasInPlace(s.logits, bias);
    s.timing.bias = (performance.now() - t) / 1000;
  },

  /** Temperature, top-k, top-p and the draw (selection.js). @param {StepState} s */
  draw(s) {
    const k = s.kernel;
    let drawn = null;
    if (k && s.params.temperature > 0) {
      s.logits = k.load(s.logits);
      drawn = drawOnKernel(k, s.logits, s.params, s.rng);
    }
    const { token, lse } = drawn ?? drawToken(s.logits, s.params, s.rng);
    s.token = token;
    s.lse = lse;
  },

  /** Count the token, for the frequency and presence penalties. @param {StepState} s */
  count(s) {
    s.counts.set(s.token, (s.counts.get(s.token) ?? 0) + 1);
  },

  /** Advance the grammar by the token. @param {StepState} s */
  acceptGrammar(s) {
    if (s.bitmask === null) return;
    s.bitmask = null;
    const t = performance.now();
    if (!s.matcher.acceptToken(s.token)) {
      throw new Error(`the grammar rejected token ${s.token} it allowed`);
    }
    s.grammarMs += performance.now() - t;
  },

  /** Log-probabilities of the token and the most likely ones, when asked. @param {StepState} s */
  logprobs(s) {
    const p = s.params;
    if (!p.logprobs) return;
    const lse = Number.isNaN(s.lse) ? undefined : s.lse;
    const top = p.top_logprobs ?? 0;
    const r = (s.kernel && logprobsOnKernel(s.kernel, s.logits, s.token, top, lse)) ?? logprobsOf(s.logits, s.token, top, lse);
    s.logprob = r.logprob;
    s.top = r.top;
  },
};

/** @typedef {keyof typeof STEPS} StepName */

/** The steps as functions, in the order of {@link SAMPLING_STEPS}. */
export const PIPELINE = SAMPLING_STEPS.map((name) => {
  const step = STEPS[/** @type {StepName} */ (name)];
  if (!step) throw new Error(`no sampling step ${name}`);
  return step;
});
