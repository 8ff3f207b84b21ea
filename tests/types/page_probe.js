// @ts-check
// Every page method of the library (web/engine.js and its parts under web/client/), called and its
// result used by its declared type; each `@ts-expect-error` uses a result wrongly. A method whose
// result fell back to `any` would let that wrong use pass, and an unused `@ts-expect-error` is an
// error: so tsc fails (tests/unit/test_client_types.py) unless every result is declared. Never run.

import {
  CreateMLCEngine,
  CreateServiceWorkerMLCEngine,
  CreateWebWorkerEngine,
  CreateWebWorkerMLCEngine,
  deleteChatConfigInCache,
  deleteModelAllInfoInCache,
  deleteModelInCache,
  deleteModelWasmInCache,
  EngineError,
  ggufFileModelId,
  hasModelInCache,
  listCachedModels,
  MLCEngine,
  trustedScriptURL,
  WebWorkerEngine,
  withSanitizerPolicy,
  workerUrl,
} from "../../web/engine.js";

/** @param {unknown} value @returns {void} */
const use = (value) => void value;
const path = { namespace: "n", collection: "c", name: "d" };
const where = { namespace: "n", collection: "c", index: "i" };

/** @param {WebWorkerEngine} engine @param {Worker} worker */
export async function probe(engine, worker) {
  // ---- OpenAI / WebLLM
  const chat = await engine.chat.completions.create({ messages: [{ role: "user", content: "hi" }] });
  use(/** @type {string|null} */ (chat.choices[0].message.content));
  // @ts-expect-error the content is text, not a number
  use(/** @type {number} */ (chat.choices[0].message.content));
  for await (const chunk of await engine.chat.completions.create({ messages: [], stream: true })) {
    use(/** @type {string|null|undefined} */ (chunk.choices[0].delta.content));
    // @ts-expect-error a chunk has no message
    use(chunk.choices[0].message);
  }
  const same = await engine.chatCompletion({ messages: [], stream: false });
  // @ts-expect-error the model is a name
  use(/** @type {number} */ (same.model));
  const completion = await engine.completions.create({ prompt: "x" });
  use(/** @type {string} */ (completion.choices[0].text));
  // @ts-expect-error the text is text
  use(/** @type {number} */ (completion.choices[0].text));
  for await (const chunk of await engine.completions.create({ prompt: "x", stream: true })) {
    // @ts-expect-error a completion chunk's text is text
    use(/** @type {number} */ (chunk.choices[0].text));
  }
  const either = await engine.completion({ prompt: "x" });
  // @ts-expect-error either a whole completion or its chunks
  use(either.choices);
  const response = await engine.responses.create({ input: "hi" });
  use(/** @type {string} */ (response.output_text));
  // @ts-expect-error a whole response has no events
  use(response[Symbol.asyncIterator]);
  for await (const event of await engine.responses.create({ input: "hi", stream: true })) {
    use(/** @type {number} */ (event.sequence_number));
    // @ts-expect-error an event's type is its name
    use(/** @type {number} */ (event.type));
  }
  use(/** @type {string} */ ((await engine.responses.retrieve(response.id)).status));
  use(/** @type {boolean} */ ((await engine.responses.delete(response.id)).deleted));
  use(/** @type {boolean} */ ((await engine.responses.inputItems.list(response.id, { order: "asc" })).has_more));
  const vectors = await engine.embeddings.create({ input: "x" });
  use(/** @type {number} */ (vectors.usage.prompt_tokens));
  // @ts-expect-error a token count is a number
  use(/** @type {string} */ (vectors.usage.prompt_tokens));
  const again = await engine.embedding({ input: ["x"] });
  // @ts-expect-error the data are a list
  use(/** @type {string} */ (again.data));
  const tokens = await engine.chatTokens({ messages: [{ role: "user", content: "hi" }] });
  use(/** @type {number} */ (tokens.count));
  // @ts-expect-error the count is a number
  use(/** @type {string} */ (tokens.count));

  // ---- the generic call
  const loaded = await engine.send("load", { request: { model_ids: "tiny-chat" } });
  use(/** @type {string} */ (loaded.models[0].model_id));
  // @ts-expect-error a model id is a name
  use(/** @type {number} */ (loaded.models[0].model_id));

  // ---- WebLLM's methods
  use(/** @type {number} */ (engine.pendingCount));
  // @ts-expect-error a count
  use(/** @type {string} */ (engine.pendingCount));
  // @ts-expect-error nothing comes back
  use(engine.terminate().x);
  use(/** @type {string} */ (await engine.getMessage()));
  // @ts-expect-error the message is text
  use(/** @type {number} */ (await engine.getMessage()));
  use(/** @type {string} */ (await engine.runtimeStatsText()));
  // @ts-expect-error the stats are text
  use(/** @type {number} */ (await engine.runtimeStatsText()));
  use(/** @type {number} */ (await engine.forwardTokensAndSample([1], true)));
  // @ts-expect-error a token id
  use(/** @type {string} */ (await engine.forwardTokensAndSample([1], false, "m")));
  // @ts-expect-error it throws: nothing comes back
  use(engine.setLogitProcessorRegistry(new Map()).x);
  // @ts-expect-error nothing comes back
  use(engine.setAppConfig({ model_list: [] }).x);
  const config = engine.getAppConfig();
  // @ts-expect-error a config, if set, is an object
  use(/** @type {string} */ (config));
  // @ts-expect-error nothing comes back
  use(engine.setInitProgressCallback(undefined).x);
  const callback = engine.getInitProgressCallback();
  // @ts-expect-error a callback, if set, is a function
  use(/** @type {string} */ (callback));
  const memory = await engine.memoryStats({ jsHeap: true });
  use(/** @type {number} */ (memory.python_objects));
  // @ts-expect-error a count
  use(/** @type {string} */ (memory.python_objects));
  use(/** @type {string} */ (await engine.getGPUVendor()));
  // @ts-expect-error a vendor is a name
  use(/** @type {number} */ (await engine.getGPUVendor()));
  use(/** @type {number} */ (await engine.getMaxStorageBufferBindingSize()));
  // @ts-expect-error a size in bytes
  use(/** @type {string} */ (await engine.getMaxStorageBufferBindingSize()));
  // @ts-expect-error nothing comes back
  use(engine.interruptGenerate().x);
  use(/** @type {null} */ (await engine.resetChat()));
  // @ts-expect-error null
  use((await engine.resetChat()).x);
  const reloaded = await engine.reload("tiny-chat");
  use(/** @type {number} */ (reloaded.load_s));
  // @ts-expect-error seconds
  use(/** @type {string} */ (reloaded.load_s));
  const aliases = await engine.setModelAliases({ a: "tiny-chat" });
  use(/** @type {string|undefined} */ (aliases.a));
  // @ts-expect-error a model's name
  use(/** @type {number} */ (aliases.a));
  const remotes = await engine.setRemotes([{ baseURL: "http://x/v1", models: ["m"] }]);
  use(/** @type {string} */ (remotes[0].server_model));
  // @ts-expect-error a name on the server
  use(/** @type {number} */ (remotes[0].server_model));
  use(/** @type {null} */ (await engine.unload()));
  // @ts-expect-error null
  use((await engine.unload()).x);

  // ---- the CSI
  const [done] = await engine.csi.complete([{ model: "m", prompt: "x", params: {} }]);
  use(/** @type {Uint8Array} */ (done.logprobs[0].sampled.token));
  // @ts-expect-error token bytes arrive as a Uint8Array
  use(/** @type {number[]} */ (done.logprobs[0].sampled.token));
  const [said] = await engine.csi.chat([{ model: "m", messages: [{ role: "user", content: "hi" }], params: {} }]);
  use(/** @type {string|null} */ (said.message.content));
  // @ts-expect-error usage counts tokens
  use(/** @type {string} */ (said.usage.prompt));
  const [chunks] = await engine.csi.chunk([{ text: "x", params: { model: "m", max_tokens: 8 } }]);
  use(/** @type {string} */ (chunks[0]));
  // @ts-expect-error a chunk is text
  use(/** @type {number} */ (chunks[0]));
  const [offsets] = await engine.csi.chunkWithOffsets([{ text: "x", params: { model: "m", max_tokens: 8 } }]);
  use(/** @type {number} */ (offsets[0].byte_offset));
  // @ts-expect-error an offset
  use(/** @type {string} */ (offsets[0].byte_offset));
  const [language] = await engine.csi.selectLanguage([{ text: "x", languages: ["eng"] }]);
  use(/** @type {string|null} */ (language));
  // @ts-expect-error a code or null
  use(/** @type {number} */ (language));
  const [found] = await engine.csi.search([{ index_path: where, query: "x" }]);
  use(/** @type {number} */ (found[0].score));
  // @ts-expect-error a score
  use(/** @type {string} */ (found[0].score));
  const [document] = await engine.csi.documents([path]);
  use(/** @type {string} */ (document.path.name));
  // @ts-expect-error a name
  use(/** @type {number} */ (document.path.name));
  const [metadata] = await engine.csi.documentMetadata([path]);
  // @ts-expect-error any JSON value: look before use
  use(metadata.x);

  // ---- the document index's writes
  const created = await engine.index.createIndex(where);
  use(/** @type {boolean} */ (created.created));
  // @ts-expect-error a flag
  use(/** @type {string} */ (created.created));
  const put = await engine.index.put([{ path, contents: [{ text: "x" }] }]);
  use(/** @type {number} */ (put.chunks));
  // @ts-expect-error a count
  use(/** @type {string} */ (put.chunks));
  const [existed] = await engine.index.delete([path]);
  use(/** @type {boolean} */ (existed));
  // @ts-expect-error a flag
  use(/** @type {string} */ (existed));
  const listed = await engine.index.list();
  use(/** @type {string} */ (listed.collections[0].namespace));
  // @ts-expect-error a name
  use(/** @type {number} */ (listed.collections[0].namespace));
  const dropped = await engine.index.drop(where);
  use(/** @type {"collection"|"index"} */ (dropped.dropped));
  // @ts-expect-error what was dropped
  use(/** @type {number} */ (dropped.dropped));

  // ---- skills and the page's tools
  const registered = await engine.skills.register({ name: "s", source: "x" });
  use(/** @type {"skill"|"message_stream"} */ (registered.kind));
  // @ts-expect-error a kind
  use(/** @type {number} */ (registered.kind));
  const [skill] = await engine.skills.list();
  use(/** @type {boolean} */ (skill.builtin));
  // @ts-expect-error a flag
  use(/** @type {string} */ (skill.builtin));
  const described = await engine.skills.metadata("s");
  use(/** @type {string|null} */ (described.description));
  // @ts-expect-error text or null
  use(/** @type {number} */ (described.description));
  const output = await engine.skills.run("s", { a: 1 });
  // @ts-expect-error any JSON value: look before use
  use(output.x);
  for await (const event of engine.skills.stream("s", {})) {
    if (event.type === "message_append") use(/** @type {string} */ (event.text));
    // @ts-expect-error only an append has text
    use(event.text);
  }
  use(/** @type {null} */ (await engine.skills.remove("s")));
  // @ts-expect-error null
  use((await engine.skills.remove("s")).x);
  const tool = await engine.tools.register({ name: "t", input_schema: {} }, () => 1);
  use(/** @type {string} */ (tool.description));
  // @ts-expect-error text
  use(/** @type {number} */ (tool.description));
  const [firstTool] = await engine.tools.list();
  use(/** @type {string} */ (firstTool.name));
  // @ts-expect-error a name
  use(/** @type {number} */ (firstTool.name));
  // @ts-expect-error nothing comes back
  use((await engine.tools.remove("t")).x);
  const server = await engine.tools.connect({ namespace: "n", url: "http://127.0.0.1:9/mcp", timeoutMs: 5000 });
  use(/** @type {string} */ (server.tools[0].name));
  use(/** @type {string|undefined|null} */ (server.tools[0].description));
  // @ts-expect-error a list of tools
  use(/** @type {string} */ (server.tools));
  // @ts-expect-error a namespace is required
  await engine.tools.connect({ url: "http://127.0.0.1:9/mcp" });
  use(/** @type {string} */ ((await engine.tools.servers())[0].url));
  use(/** @type {string} */ ((await engine.tools.disconnect({ namespace: "n" }))[0].label));
  use(await engine.skills.run("s", {}, { namespace: "n" }));
  const [kept] = await engine.cache.list();
  use(/** @type {number} */ (kept.tokens));
  // @ts-expect-error a count
  use(/** @type {string} */ (kept.tokens));
  use(/** @type {number} */ ((await engine.cache.delete([kept.id])).deleted));
  use(/** @type {number} */ ((await engine.cache.clear()).deleted));
  use(/** @type {boolean} */ ((await engine.cache.configure({ budget_bytes: 1 })).enabled));
  // @ts-expect-error a number of bytes
  await engine.cache.configure({ budget_bytes: "1" });

  // ---- Spin and RemoteLLM
  const inferred = await engine.llm.infer("m", "x");
  use(/** @type {"stop"|"length"|"abort"} */ (inferred.finish_reason));
  // @ts-expect-error a reason
  use(/** @type {number} */ (inferred.finish_reason));
  const embedded = await engine.llm.generateEmbeddings("m", ["x"]);
  use(/** @type {number[][]} */ (embedded.embeddings));
  // @ts-expect-error vectors
  use(/** @type {string} */ (embedded.embeddings));
  const generated = await engine.remote.generate({ prompts: ["x"] });
  use(/** @type {string} */ (generated.generations[0].generations[0].text));
  // @ts-expect-error text
  use(/** @type {number} */ (generated.generations[0].generations[0].text));
  const type = await engine.remote.getLlmType();
  use(/** @type {string} */ (type.llm_type));
  // @ts-expect-error a name
  use(/** @type {number} */ (type.llm_type));
  const guts = await engine.remote.generationalGuts({ prompt: "x" });
  use(/** @type {number} */ (guts.generations[0].probability));
  // @ts-expect-error a probability
  use(/** @type {string} */ (guts.generations[0].probability));

  // ---- factories and the model cache
  for (const made of [await CreateWebWorkerEngine(worker, "m"), await CreateWebWorkerMLCEngine(worker, "m"),
    await CreateMLCEngine("m"), await CreateServiceWorkerMLCEngine("m"), new MLCEngine()]) {
    use(/** @type {string[]} */ (made.modelIds));
    // @ts-expect-error an engine
    use(/** @type {string} */ (made));
  }
  use(/** @type {boolean} */ (await hasModelInCache("m")));
  // @ts-expect-error a flag
  use(/** @type {string} */ (await hasModelInCache("m")));
  for (const deleted of [await deleteModelAllInfoInCache("m", {}), await deleteModelInCache("m", {}),
    await deleteChatConfigInCache("m", {}), await deleteModelWasmInCache("m", {})]) {
    // @ts-expect-error what the deletion says
    use(deleted.x);
  }
  use(/** @type {string} */ (ggufFileModelId(new File([], "m.gguf"))));
  use(/** @type {string} */ (trustedScriptURL("worker/worker.js")));
  // @ts-expect-error a URL for a script sink
  use(/** @type {number} */ (trustedScriptURL("worker/worker.js")));
  use(/** @type {number} */ (withSanitizerPolicy(() => 1)));
  // @ts-expect-error what the callback returns
  use(/** @type {string} */ (withSanitizerPolicy(() => 1)));
  // @ts-expect-error a model id
  use(/** @type {number} */ (ggufFileModelId(new File([], "m.gguf"))));
  use(/** @type {URL} */ (workerUrl({ runtimeUrl: "/" })));
  // @ts-expect-error a URL
  use(/** @type {number} */ (workerUrl()));
  const error = new EngineError({ name: "InvalidInputError", message: "m", param: "p" });
  use(/** @type {string|null} */ (error.param));
  // @ts-expect-error a field's name, or null
  use(/** @type {number} */ (error.param));
  const [cached] = await listCachedModels();
  use(/** @type {number} */ (cached.bytes));
  // @ts-expect-error bytes
  use(/** @type {string} */ (cached.bytes));
}
