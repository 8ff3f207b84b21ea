// Whole-vocabulary next-token selection on typed arrays, parameterized from Python: the Sampler
// (sampler.js) runs the named steps of steps.js on each token; the math they use lives in rng.js,
// penalties.js, selection.js (temperature, top-k, top-p, the draw) and logprobs.js.

export { Kernel, SIMD, kernelReady, loadKernel, sharedKernel, useKernel } from "./kernel.js";
export { MIN_LOGPROB, logprobs } from "./logprobs.js";
export { processLogits } from "./penalties.js";
export { Rng, makeRng } from "./rng.js";
export { Sampler } from "./sampler.js";
export { argmax, candidates, sample } from "./selection.js";
export { GRAMMAR_ERROR, SAMPLING_STEPS } from "./steps.js";

/** @typedef {import("./params.js").SamplingParams} SamplingParams */
/** @typedef {import("./params.js").Choice} Choice */
