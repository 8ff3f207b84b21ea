// The client snippets the endpoint panel offers: the official `openai` client, a plain `fetch`
// and curl, each asking the model this tab serves at `origin` + "/v1".

/** @typedef {{id: string, title: string, note: string, code: string}} Snippet */

/**
 * The snippets for `origin` and `model`.
 * @param {string} origin @param {string} model
 * @returns {Snippet[]}
 */
export function snippets(origin, model) {
  const body = { model, messages: [{ role: "user", content: "Say hello." }], max_tokens: 32, temperature: 0 };
  const json = JSON.stringify(body);
  return [
    {
      id: "openai",
      title: "openai (JavaScript)",
      note: "Run it as a module in a page of this site. In your own bundle: import OpenAI from \"openai\".",
      code: `import { OpenAI } from "${origin}/vendor/openai/index.mjs";

const client = new OpenAI({ baseURL: "${origin}/v1", apiKey: "unused", dangerouslyAllowBrowser: true });
const reply = await client.chat.completions.create(${JSON.stringify(body, null, 2)});
console.log(reply.choices[0].message.content);
`,
    },
    {
      id: "fetch",
      title: "fetch",
      note: "The same HTTP request, from any page of this site (its console, for one).",
      code: `const response = await fetch("${origin}/v1/chat/completions", {
  method: "POST",
  headers: { "Content-Type": "application/json" },
  body: JSON.stringify(${json}),
});
console.log((await response.json()).choices[0].message.content);
`,
    },
    {
      id: "curl",
      title: "curl",
      note: "/v1/ is answered inside the browser, by this site's service worker: from a terminal, curl reaches only "
        + "a server that forwards /v1/ to a page holding the engine. The request is the same.",
      code: `curl ${origin}/v1/chat/completions \\
  -H "Content-Type: application/json" \\
  -d '${json.replace(/'/g, "'\\''")}'
`,
    },
  ];
}
