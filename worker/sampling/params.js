// What a request's sampling is told (Python sends it as JSON) and what one token's choice returns.

/**
 * @typedef {{temperature: number, top_k: number, top_p: number, seed: number|null,
 *            repetition_penalty?: number, repetition_window?: number,
 *            frequency_penalty?: number, presence_penalty?: number,
 *            logit_bias?: Array<[number, number]>, logprobs?: boolean, top_logprobs?: number,
 *            grammar?: import("../grammar.js").GrammarSpec|null}} SamplingParams
 *
 * Order of the per-token math (steps.js): the grammar's mask, repetition penalty (HF: divide
 * positive logits, multiply negative ones, over the last `repetition_window` tokens of the
 * sequence, all of it when 0), frequency and presence penalties (OpenAI: over the tokens
 * generated so far), logit bias, then temperature, top-k, top-p and the draw; log-probabilities
 * are of the distribution after the bias.
 */

/**
 * @typedef {{token: number, logprob?: number, top?: Array<[number, number]>, grammarS?: number}} Choice
 */

export {};
