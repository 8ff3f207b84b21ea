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
 * @typedef {import("../../worker/wire_types.js").ChatCompletion} ChatCompletion
 *   The replies too are the worker's models (generated from Python's response models).
 * @typedef {import("../../worker/wire_types.js").ChatCompletionChunk} ChatCompletionChunk
 * @typedef {import("../../worker/wire_types.js").CompletionUsage} CompletionUsage
 * @typedef {ChatCompletion["choices"][number]["finish_reason"]} FinishReason
 * @typedef {import("../../worker/wire_types.js").OpenAICompletionRequest} CompletionCreateParams
 *   An OpenAI (legacy) completion request.
 * @typedef {CompletionCreateParams & {stream: true}} CompletionCreateParamsStreaming
 * @typedef {CompletionCreateParams & {stream?: false|null}} CompletionCreateParamsNonStreaming
 * @typedef {import("../../worker/wire_types.js").Completion} Completion
 *   A completion, or (streamed) each chunk of it.
 * @typedef {import("../../worker/wire_types.js").EmbeddingRequest} EmbeddingCreateParams
 * @typedef {import("../../worker/wire_types.js").CreateEmbeddingResponse} CreateEmbeddingResponse
 */

export {};
