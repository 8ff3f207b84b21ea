// Prints, as JSON, the request bodies the official `openai` npm client sends for structured
// output and tool calls: its `fetch` is replaced by one that records the body and answers 200.
import OpenAI from "openai";

const bodies = [];
const client = new OpenAI({
  apiKey: "not-used",
  baseURL: "http://127.0.0.1:9/v1",
  fetch: async (_url, init) => {
    bodies.push(JSON.parse(init.body));
    const reply = { id: "x", object: "chat.completion", created: 0, model: "tiny-chat", choices: [] };
    return new Response(JSON.stringify(reply), { status: 200, headers: { "content-type": "application/json" } });
  },
});

const messages = [{ role: "user", content: "What is the weather in Paris? Answer in JSON." }];
await client.chat.completions.create({
  model: "tiny-chat",
  messages,
  max_tokens: 48,
  response_format: {
    type: "json_schema",
    json_schema: {
      name: "weather",
      strict: true,
      schema: {
        type: "object",
        properties: { city: { type: "string", maxLength: 12 }, celsius: { type: "integer" } },
        required: ["city", "celsius"],
        additionalProperties: false,
      },
    },
  },
});
await client.chat.completions.create({
  model: "tiny-chat",
  messages,
  max_tokens: 160,
  tools: [{
    type: "function",
    function: {
      name: "get_weather",
      description: "The weather in a city",
      strict: true,
      parameters: {
        type: "object",
        properties: { city: { type: "string", maxLength: 12 } },
        required: ["city"],
        additionalProperties: false,
      },
    },
  }],
  tool_choice: "required",
  parallel_tool_calls: false,
});
process.stdout.write(JSON.stringify(bodies));
