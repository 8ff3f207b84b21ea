// One request's replies streamed: every choice's content, tool calls and token logprobs as they
// arrive (choice 0 is shown live), then the usage as per-message stats.

/**
 * @typedef {import("csi-web").ChatCompletionRequest} ChatCompletionRequest
 * @typedef {import("csi-web").ChatCompletionChunk} ChatCompletionChunk
 * @typedef {import("csi-web").CompletionUsage} CompletionUsage
 * @typedef {import("../conversations/tree.js").ToolCall} ToolCall
 * @typedef {import("../conversations/tree.js").TokenLogprob} TokenLogprob
 * @typedef {import("../conversations/tree.js").Stats} Stats
 * @typedef {{content: string, tool_calls: ToolCall[], finish: string|null, logprobs: TokenLogprob[]}} ChoiceResult
 */

/** @returns {ChoiceResult} */
const emptyChoice = () => ({ content: "", tool_calls: [], finish: null, logprobs: [] });

/** The stats a message keeps from a reply's usage. @param {CompletionUsage} usage @returns {Stats} */
export function statsOf(usage) {
  const x = usage.extra;
  return {
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    cached_tokens: usage.prompt_tokens_details?.cached_tokens ?? 0,
    ttft_s: x?.time_to_first_token_s ?? 0,
    e2e_s: x?.e2e_latency_s ?? 0,
    tokens_per_s: x?.decode_tokens_per_s ?? 0,
    ...(x?.served_by === "remote" ? { served_by: "remote", ...(x.server ? { server: x.server } : {}) }
      : x?.served_by === "local" ? { served_by: "local" } : {}),
    ...(x?.draft_tokens ? { draft_tokens: x.draft_tokens, accepted_draft_tokens: x.accepted_draft_tokens ?? 0 } : {}),
    ...(x?.prompt_cache_tokens ? { prompt_cache_tokens: x.prompt_cache_tokens } : {}),
  };
}

/**
 * Stream `request` (sent with `stream: true` and usage); `onFirst` sees choice 0 after each chunk.
 * Engine errors propagate as they are (typed, `param` naming the field).
 * @param {import("csi-web").WebWorkerEngine} engine @param {ChatCompletionRequest} request
 * @param {(choice: ChoiceResult) => void} onFirst
 * @returns {Promise<{choices: ChoiceResult[], stats: Stats|null}>}
 */
export async function streamChoices(engine, request, onFirst) {
  /** @type {ChoiceResult[]} */
  const choices = [];
  /** @type {Stats|null} */
  let stats = null;
  const stream = /** @type {AsyncIterable<ChatCompletionChunk>} */ (
    await engine.chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } }));
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      const out = (choices[c.index] ??= emptyChoice());
      out.content += c.delta.content ?? "";
      for (const d of c.delta.tool_calls ?? []) {
        out.tool_calls[d.index] ??= { id: d.id ?? "", type: "function", function: { name: d.function.name ?? "", arguments: "" } };
        out.tool_calls[d.index].function.arguments += d.function.arguments ?? "";
      }
      out.logprobs.push(...(c.logprobs?.content ?? []));
      out.finish = c.finish_reason ?? out.finish;
    }
    if (chunk.usage) stats = statsOf(chunk.usage);
    if (choices[0]) onFirst(choices[0]);
  }
  for (let i = 0; i < choices.length; i++) choices[i] ??= emptyChoice();
  return { choices, stats };
}
