// What the tests' pages import of the Vercel AI SDK (npm `ai`, `@ai-sdk/openai`), bundled by
// buildtools/site/ai_sdk.py into dist/vendor/ai-sdk/index.mjs: apps bundle it the same way.
export { generateText, jsonSchema, Output, stepCountIs, streamText, tool } from "ai";
export { createOpenAI } from "@ai-sdk/openai";
