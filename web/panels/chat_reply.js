// One assistant turn streamed into its message: the content and the tool calls as they arrive,
// then the token count, speed and finish reason under it.

/**
 * @typedef {import("../engine.js").ChatCompletionRequest} ChatCompletionRequest
 * @typedef {import("../engine.js").ChatCompletionChunk} ChatCompletionChunk
 * @typedef {import("../engine.js").ChatCompletionMessageParam} ChatCompletionMessageParam
 * @typedef {Extract<ChatCompletionMessageParam, {role: "assistant"}>} AssistantMessageParam
 * @typedef {import("../engine.js").ChatCompletionMessageToolCall} ChatCompletionMessageToolCall
 * @typedef {object} ReplyView where the chat shows a reply
 * @property {() => HTMLElement} newMessage adds an empty assistant message (a `.body` span inside)
 * @property {(text: string) => void} showSpeed shows the decoding speed in the footer
 * @property {() => void} scroll scrolls the conversation to its end
 */

/**
 * Stream one reply to `request` (with `stream: true`) into a new message. Returns the message for
 * the history and why it ended; on an error the message shows it, and the error thrown is marked
 * `shown`.
 * @param {import("../engine.js").WebWorkerEngine} engine @param {ReplyView} view
 * @param {ChatCompletionRequest} request
 * @returns {Promise<{message: AssistantMessageParam, finish: string|null}>}
 */
export async function streamReply(engine, view, request) {
  const div = view.newMessage();
  const body = /** @type {HTMLElement} */ (div.querySelector(".body"));
  const callsView = document.createElement("span");
  callsView.className = "calls";
  div.append(callsView);
  let reply = "";
  /** @type {ChatCompletionMessageToolCall[]} */
  const calls = [];
  /** @type {string|null} */
  let finish = null;
  try {
    const stream = /** @type {AsyncIterable<ChatCompletionChunk>} */ (await engine.chat.completions.create(request));
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        reply += choice.delta.content ?? "";
        body.textContent = reply;
        for (const d of choice.delta.tool_calls ?? []) {
          calls[d.index] ??= { id: d.id ?? "", type: "function", function: { name: d.function.name ?? "", arguments: "" } };
          calls[d.index].function.arguments += d.function.arguments ?? "";
        }
        if (calls.length) {
          callsView.textContent = calls.map((c) => `→ ${c.function.name}(${c.function.arguments})`).join("\n");
        }
        finish = choice.finish_reason ?? finish;
      }
      if (chunk.usage?.extra) {
        const x = chunk.usage.extra;
        const meta = document.createElement("span");
        meta.className = "meta";
        meta.textContent =
          `${chunk.usage.completion_tokens} tokens · ${x.decode_tokens_per_s.toFixed(1)} tokens/s · ` +
          `first token ${(x.time_to_first_token_s * 1000).toFixed(0)} ms · ${finish}`;
        div.append(meta);
        view.showSpeed(`${x.decode_tokens_per_s.toFixed(1)} tokens/s`);
      }
      view.scroll();
    }
    div.dataset.finish = finish ?? "";
    /** @type {AssistantMessageParam} */
    const message = { role: "assistant", content: calls.length && !reply.trim() ? null : reply };
    if (calls.length) message.tool_calls = calls;
    return { message, finish };
  } catch (/** @type {any} */ err) {
    div.classList.add("error");
    body.textContent = `${err.name}: ${err.message}`;
    throw Object.assign(err, { shown: true });
  } finally {
    div.dataset.done = "true";
  }
}
