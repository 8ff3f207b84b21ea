// @ts-check
// The OpenAI shapes the page client takes and gives back (chat completions, embeddings), as WebLLM
// declares them. Types only: web/engine.js re-exports them for embedders.

/**
 * @typedef {{id: string, type: "function", function: {name: string, arguments: string}}} ChatCompletionMessageToolCall
 * @typedef {{index: number, id?: string, type?: "function", function: {name?: string, arguments?: string}}} ToolCallDelta
 * @typedef {import("../../worker/wire_types.js").ChatCompletionRequest} ChatCompletionRequest
 *   The request bodies are the worker's own models (worker/wire_types.d.ts, generated from Python).
 * @typedef {ChatCompletionRequest["messages"][number]} ChatCompletionMessageParam
 * @typedef {NonNullable<ChatCompletionRequest["tools"]>[number]} ChatCompletionTool
 * @typedef {NonNullable<ChatCompletionRequest["tool_choice"]>} ChatCompletionToolChoice
 * @typedef {NonNullable<ChatCompletionRequest["response_format"]>} ResponseFormat
 * @typedef {ChatCompletionRequest & {stream: true}} ChatCompletionRequestStreaming
 * @typedef {ChatCompletionRequest & {stream?: false|null}} ChatCompletionRequestNonStreaming
 * @typedef {{prompt_tokens: number, completion_tokens: number, total_tokens: number,
 *            extra?: Record<string, number>}} CompletionUsage
 * @typedef {"stop"|"length"|"abort"|"tool_calls"} FinishReason
 * @typedef {{id: string, object: "chat.completion", created: number, model: string,
 *            choices: Array<{index: number, message: {role: "assistant", content: string|null,
 *                                                     tool_calls?: ChatCompletionMessageToolCall[]},
 *                            finish_reason: FinishReason, logprobs: null}>,
 *            usage?: CompletionUsage}} ChatCompletion
 * @typedef {{id: string, object: "chat.completion.chunk", created: number, model: string,
 *            choices: Array<{index: number, delta: {role?: "assistant", content?: string,
 *                                                   tool_calls?: ToolCallDelta[]},
 *                            finish_reason: FinishReason|null, logprobs: null}>,
 *            usage?: CompletionUsage|null}} ChatCompletionChunk
 * @typedef {import("../../worker/wire_types.js").EmbeddingRequest} EmbeddingCreateParams
 * @typedef {{object: "list", model: string, data: Array<{object: "embedding", index: number,
 *            embedding: number[]}>, usage: {prompt_tokens: number, total_tokens: number}}} CreateEmbeddingResponse
 */

export {};
