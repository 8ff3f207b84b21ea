// The generation knobs a conversation keeps, as one table: the settings form is drawn from it and
// an imported file is checked against it. The ranges are the engine's (py/csi/faces/openai/protocol.py).

/**
 * @typedef {"temperature"|"top_p"|"top_k"|"max_tokens"|"frequency_penalty"|"presence_penalty"
 *   |"repetition_penalty"|"seed"|"n"} NumberKnob
 * @typedef {{key: NumberKnob, label: string, min: number, max: number, step: number, integer: boolean,
 *   hint: string}} Knob
 * @typedef {Partial<Record<NumberKnob, number>> & {stop?: string[], ignore_eos?: boolean,
 *   token_view?: boolean}} Settings what a conversation asks of each request; a knob left out is the engine's default
 */

/** @type {readonly Knob[]} */
export const KNOBS = Object.freeze([
  { key: "temperature", label: "Temperature", min: 0, max: 2, step: 0.05, integer: false, hint: "0 is greedy" },
  { key: "top_p", label: "Top p", min: 0.01, max: 1, step: 0.01, integer: false, hint: "nucleus mass kept" },
  { key: "top_k", label: "Top k", min: 0, max: 1000, step: 1, integer: true, hint: "0 keeps every token" },
  { key: "max_tokens", label: "Max tokens", min: 1, max: 32768, step: 1, integer: true, hint: "reply length limit" },
  { key: "frequency_penalty", label: "Frequency penalty", min: -2, max: 2, step: 0.1, integer: false, hint: "per repeat" },
  { key: "presence_penalty", label: "Presence penalty", min: -2, max: 2, step: 0.1, integer: false, hint: "once per token seen" },
  { key: "repetition_penalty", label: "Repetition penalty", min: 0.01, max: 10, step: 0.05, integer: false, hint: "1 is off" },
  { key: "seed", label: "Seed", min: -(2 ** 53), max: 2 ** 53, step: 1, integer: true, hint: "same seed, same reply" },
  { key: "n", label: "Replies (n)", min: 1, max: 8, step: 1, integer: true, hint: "more than 1: alternatives" },
]);

/**
 * The presets everyone has; a preset sets the knobs it names and leaves the others ("Model
 * defaults" empties the sampling knobs: the model's own generation config decides them).
 */
export const BUILTIN_PRESETS = Object.freeze({
  "Model defaults": { temperature: undefined, top_p: undefined, top_k: undefined, frequency_penalty: undefined,
    presence_penalty: undefined, repetition_penalty: undefined },
  Precise: { temperature: 0, top_p: 1, top_k: 0, frequency_penalty: 0, presence_penalty: 0, repetition_penalty: 1 },
  Balanced: { temperature: 0.7, top_p: 0.95, top_k: 0, frequency_penalty: 0, presence_penalty: 0, repetition_penalty: 1 },
  Creative: { temperature: 1.1, top_p: 0.98, top_k: 0, frequency_penalty: 0.3, presence_penalty: 0.3, repetition_penalty: 1 },
});

/** A new conversation's settings before the URL or the user change them. @type {Settings} */
export const DEFAULT_SETTINGS = Object.freeze({ max_tokens: 256 });

/**
 * Why `value` is no setting for `key` (or "" when it is).
 * @param {string} key @param {unknown} value
 */
export function knobProblem(key, value) {
  if (key === "stop") {
    return Array.isArray(value) && value.length <= 4 && value.every((s) => typeof s === "string" && s && s.length <= 200)
      ? "" : "must be a list of at most 4 non-empty strings";
  }
  if (key === "ignore_eos" || key === "token_view") return typeof value === "boolean" ? "" : "must be true or false";
  const knob = KNOBS.find((k) => k.key === key);
  if (!knob) return "is not a setting";
  if (typeof value !== "number" || !Number.isFinite(value) || value < knob.min || value > knob.max
      || (knob.integer && !Number.isInteger(value))) {
    return `must be ${knob.integer ? "an integer" : "a number"} from ${knob.min} to ${knob.max}`;
  }
  return "";
}

/**
 * The request fields `settings` ask for.
 * @param {Settings} settings
 * @returns {Partial<import("csi-web").ChatCompletionRequest>}
 */
export function requestFields(settings) {
  const { stop, token_view: tokenView, ...rest } = settings;
  return {
    ...rest,
    ...(stop?.length ? { stop } : {}),
    ...(tokenView ? { logprobs: true, top_logprobs: 5 } : {}),
  };
}
