// @ts-check
// The OpenAI shapes the page client takes and gives back (chat completions, embeddings), as WebLLM
// declares them. Types only: web/engine.js re-exports them for embedders.

/**
 * @typedef {{id: string, type: "function", function: {name: string, arguments: string}}} ChatCompletionMessageToolCall
 * @typedef {{index: number, id?: string, type?: "function", function: {name?: string, arguments?: string}}} ToolCallDelta
 * @typedef {{role: "system"|"user"|"assistant"|"tool", content: string|null|Array<{type: "text", text: string}>,
 *            name?: string, tool_call_id?: string, tool_calls?: ChatCompletionMessageToolCall[]}} ChatCompletionMessageParam
 * @typedef {{type: "function", function: {name: string, description?: string, parameters?: object,
 *            strict?: boolean}}} ChatCompletionTool
 * @typedef {"none"|"auto"|"required"|{type: "function", function: {name: string}}} ChatCompletionToolChoice
 * @typedef {{type?: "text"|"json_object"|"json_schema"|"grammar"|"regex"|"structural_tag", schema?: string,
 *            json_schema?: {name: string, description?: string, schema?: object, strict?: boolean},
 *            grammar?: string, pattern?: string, structural_tag?: object|string}} ResponseFormat
 * @typedef {{messages: ChatCompletionMessageParam[], model?: string|null, stream?: boolean|null,
 *            stream_options?: {include_usage?: boolean}|null, max_tokens?: number|null,
 *            temperature?: number|null, top_p?: number|null, top_k?: number|null,
 *            stop?: string|string[]|null, seed?: number|null, ignore_eos?: boolean,
 *            response_format?: ResponseFormat, tools?: ChatCompletionTool[],
 *            tool_choice?: ChatCompletionToolChoice, parallel_tool_calls?: boolean}} ChatCompletionRequest
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
 * @typedef {{input: string|string[], model?: string|null}} EmbeddingCreateParams
 * @typedef {{object: "list", model: string, data: Array<{object: "embedding", index: number,
 *            embedding: number[]}>, usage: {prompt_tokens: number, total_tokens: number}}} CreateEmbeddingResponse
 */

export {};
