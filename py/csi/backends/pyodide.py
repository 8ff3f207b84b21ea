"""The Backend, Host and IndexStore that run in the Web Worker, over the JS bridge
(worker/bridge.js), host (worker/host.js) and document store (worker/doc_store.js).

The only module of ``csi`` that imports ``pyodide``; ``csi.worker.main`` imports it, nothing else does.
"""

from __future__ import annotations

import asyncio
from array import array
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from json import dumps, loads
from typing import Any, cast

from pyodide.ffi import JsException, create_proxy, run_sync, to_js

from ..core.backend import Embeddings, ModelInfo, ProgressFn, SamplingParams, StepResult
from ..core.grammar import Grammar, GrammarError, compact_json_formats, json_formats, vocab_type
from ..core.guts import GraphSummary, GutsArrays, GutsPlan, GutsTensors, find_tensors, rotary_inv_freq
from ..core.token_bytes import TokenBytes, build_token_bytes
from ..errors import InternalError, ModelLoadError, ModelNotSupportedError, NotFoundError
from ..index.store import Catalog, ChunkSet, Hit, IndexConfig, Key, ScoreQuery, StaleCatalogError, StoredDocument

__all__ = ["PyodideBackend", "PyodideHost", "PyodideIndexStore", "run_sync"]

GRAMMAR_ERROR = "[grammar] "


class _EagerFuture:
    """A future whose waiter resumes inside ``set_result`` instead of one event-loop turn later.

    Awaiting a JS promise (or an ``asyncio.Future`` set from JS) costs a browser task per token
    (about 70 us here); the decode loop awaits one of these per token, so the bridge's callback
    resumes it directly. asyncio's Task accepts any object with this future protocol.
    """

    _asyncio_future_blocking = False

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._callbacks: list[tuple[Any, Any]] = []
        self._done = False
        self._result: StepResult | None = None
        self._exception: BaseException | None = None

    def get_loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def add_done_callback(self, fn: Any, *, context: Any = None) -> None:
        if self._done:
            self._loop.call_soon(fn, self, context=context)
        else:
            self._callbacks.append((fn, context))

    def remove_done_callback(self, fn: Any) -> int:
        before = len(self._callbacks)
        self._callbacks = [c for c in self._callbacks if c[0] is not fn]
        return before - len(self._callbacks)

    def cancel(self, msg: Any = None) -> bool:
        return False  # a forward pass cannot be cancelled half-way; the loop stops after it

    def cancelled(self) -> bool:
        return False

    def done(self) -> bool:
        return self._done

    def result(self) -> StepResult:
        if self._exception is not None:
            raise self._exception
        assert self._result is not None
        return self._result

    def exception(self) -> BaseException | None:
        return self._exception

    def _settle(self, result: StepResult | None, exception: BaseException | None) -> None:
        if self._done:
            return
        self._done, self._result, self._exception = True, result, exception
        callbacks, self._callbacks = self._callbacks, []
        for fn, context in callbacks:
            if context is None:
                fn(self)
            else:
                context.run(fn, self)

    def __await__(self) -> Any:
        if not self._done:
            self._asyncio_future_blocking = True
            yield self
        return self.result()


class PyodideBackend:
    """``Backend`` over the JS ``Bridge`` object (transformers.js + onnxruntime-web)."""

    def __init__(self, bridge: Any) -> None:
        self._bridge = bridge
        self._steps: dict[int, _EagerFuture] = {}
        self._ticket = 0
        self._callbacks = (create_proxy(self._on_token), create_proxy(self._on_step_error))
        bridge.setStepCallbacks(*self._callbacks)
        self._vocab_types: dict[str, tuple[str, bool]] = {}
        self._eos: dict[str, tuple[int, ...]] = {}
        self._guts: dict[str, tuple[GutsTensors, tuple[float, ...] | None]] = {}

    def _on_token(self, ticket: int, token: int, logprobs: str | None = None, grammar_s: float | None = None) -> None:
        future = self._steps.pop(ticket, None)
        if future is None:
            return
        try:
            spent = float(grammar_s) if isinstance(grammar_s, float | int) else 0.0
            if isinstance(logprobs, str):
                logprob, top = loads(logprobs)
                result = StepResult(int(token), logprob, tuple((int(i), lp) for i, lp in top), spent)
            else:
                result = StepResult(int(token), grammar_s=spent)
        except BaseException as exc:  # noqa: BLE001 - a waiter must never be left hanging
            future._settle(None, InternalError(f"bad step result from the bridge: {type(exc).__name__}: {exc}"))
        else:
            future._settle(result, None)

    def _on_step_error(self, ticket: int, message: str) -> None:
        future = self._steps.pop(ticket, None)
        if future is not None:
            if message.startswith(GRAMMAR_ERROR):  # worker/sampling.js marks the grammar's faults
                future._settle(None, GrammarError(message[len(GRAMMAR_ERROR):]))
            else:
                future._settle(None, InternalError(f"forward pass failed: {message}"))

    async def load_model(self, model_id: str, device: str, progress: ProgressFn | None,
                         hub: str | None = None) -> ModelInfo:
        def on_progress(p: Any) -> None:
            if progress is not None:
                progress(p.to_py())

        callback = create_proxy(on_progress)
        try:
            info = loads(await self._bridge.loadModel(model_id, device, callback, None, hub))
        except JsException as exc:
            raise ModelLoadError(f"could not load model {model_id!r}: {exc.message}", "model") from None
        finally:
            callback.destroy()
        self._eos[model_id] = tuple(info["eos_token_ids"])
        return ModelInfo(
            model_id=model_id,
            kind=info["kind"],
            context_length=int(info["context_length"]),
            eos_token_ids=tuple(info["eos_token_ids"]),
            vocab_size=int(info["vocab_size"]),
        )

    def cancel_loads(self) -> None:
        self._bridge.abortLoads()

    async def unload_model(self, model_id: str) -> None:
        self._guts.pop(model_id, None)
        await self._bridge.unloadModel(model_id)

    def chat_template(self, model_id: str) -> str | None:
        template = self._bridge.chatTemplate(model_id)
        return template if isinstance(template, str) else None

    def apply_chat_template(self, model_id: str, messages: list[dict[str, Any]],
                            tools: list[dict[str, Any]] | None = None,
                            variables: dict[str, Any] | None = None) -> list[int]:
        tools_json = dumps(tools) if tools else None
        return self._bridge.applyChatTemplate(model_id, dumps(messages), tools_json,
                                              dumps(variables or {})).to_py().tolist()

    async def compile_grammar(self, model_id: str, grammar: Grammar) -> None:
        kind, prepend = self._vocab_types[model_id]  # from the token table the engine read at load
        try:
            spec = grammar.to_dict()
            if grammar.kind == "structural_tag":
                tag = loads(grammar.source)
                ebnf = {dumps(s): str(await self._bridge.jsonSchemaToEBNF(dumps(s))) for s in json_formats(tag)}
                spec["compiled_source"] = dumps(compact_json_formats(tag, lambda s: ebnf[dumps(s)]))
            await self._bridge.compileGrammar(
                model_id, dumps(spec), kind, prepend, dumps(list(self._eos.get(model_id, ()))))
        except JsException as exc:
            raise GrammarError(exc.message) from None

    def encode(self, model_id: str, text: str, add_special_tokens: bool = False) -> list[int]:
        return self._bridge.encode(model_id, text, add_special_tokens).to_py().tolist()

    def decode(self, model_id: str, ids: list[int]) -> str:
        return self._bridge.decode(model_id, to_js(ids))

    def reuse_prefix(self, model_id: str, ids: list[int]) -> int:
        return int(self._bridge.reusePrefix(model_id, to_js(ids)))

    def set_sampling(self, model_id: str, params: SamplingParams) -> None:
        self._bridge.setSampling(model_id, dumps(params.to_dict()))

    def next_choice(self, model_id: str) -> None:
        self._bridge.nextChoice(model_id)

    def latency_breakdown(self, model_id: str) -> dict[str, list[float]]:
        return cast(dict[str, list[float]], loads(self._bridge.latencyBreakdown(model_id)))

    def token_bytes(self, model_id: str) -> TokenBytes | None:
        spec = loads(self._bridge.tokenTable(model_id))
        self._vocab_types[model_id] = vocab_type(spec["decoder"])  # for grammars, without a second copy
        return build_token_bytes(spec["decoder"], spec["vocab"], [tuple(a) for a in spec["added"]])

    async def step(self, model_id: str, ids: list[int]) -> StepResult:
        self._ticket += 1
        ticket = self._ticket
        future = _EagerFuture(asyncio.get_running_loop())
        self._steps[ticket] = future
        try:
            # one token (every decode step) crosses as a plain number: no list conversion
            self._bridge.stepAsync(model_id, ids[0] if len(ids) == 1 else to_js(ids), ticket)
        except JsException as exc:
            self._steps.pop(ticket, None)
            raise InternalError(f"forward pass failed: {exc.message}") from None
        return await future

    def builtin_models(self) -> tuple[str, ...]:
        return tuple(self._bridge.builtinModels())

    async def load_tokenizer(self, model_id: str) -> None:
        try:
            await self._bridge.loadTokenizer(model_id)
        except JsException as exc:
            raise ModelNotSupportedError(f"no tokenizer for {model_id!r}: {exc.message}", "model") from None

    def count_tokens(self, model_id: str, texts: list[str]) -> list[int]:
        return self._bridge.countTokens(model_id, dumps(texts)).to_py().tolist()

    async def guts(self, model_id: str, ids: list[int], *, fft: bool, keep: int, top_k: int) -> GutsArrays:
        found = self._guts.get(model_id)
        if found is None:
            try:
                spec = loads(await self._bridge.gutsGraph(model_id))
            except JsException as exc:
                raise ModelNotSupportedError(f"could not read the model's ONNX graph: {exc.message}", "model") from None
            tensors = find_tensors(GraphSummary.from_json(spec["graph"]), spec["config"])
            found = (tensors, None if tensors.positional else rotary_inv_freq(spec["config"]))
            self._guts[model_id] = found
        plan = GutsPlan(found[0], found[1], fft, keep, top_k)
        try:
            out = await self._bridge.guts(model_id, to_js(ids), dumps(plan.to_json()))
        except JsException as exc:
            raise ModelNotSupportedError(f"the model's insides could not be computed: {exc.message}",
                                         "model") from None
        rows, width, pos_width = int(out.rows), int(out.width), int(out.posWidth)
        flat = out.data.to_py().tolist()

        def matrix(start: int, w: int) -> list[list[float]]:
            return [flat[start + i * w: start + (i + 1) * w] for i in range(rows)]

        return GutsArrays(matrix(0, width), matrix(rows * width, pos_width),
                          matrix(rows * (width + pos_width), width),
                          [(int(i), float(lg), float(p)) for i, lg, p in loads(out.top)])

    async def embed(self, model_id: str, texts: list[str]) -> Embeddings:
        return await self._embeddings(self._bridge.embed, model_id, texts)

    async def embed_ids(self, model_id: str, ids: list[list[int]]) -> Embeddings:
        return await self._embeddings(self._bridge.embedIds, model_id, ids)

    async def _embeddings(self, method: Any, model_id: str, inputs: list[Any]) -> Embeddings:
        try:
            out = await method(model_id, dumps(inputs))
        except JsException as exc:
            raise InternalError(f"embedding failed: {exc.message}") from None
        rows, dims = (int(d) for d in out.dims)
        flat = out.data.to_py().tolist()
        vectors = [flat[i * dims : (i + 1) * dims] for i in range(rows)]
        return Embeddings(vectors=vectors, prompt_tokens=int(out.tokens), dims=dims)


class PyodideIndexStore:
    """``IndexStore`` over worker/doc_store.js (IndexedDB, vectors and the kernel in JS)."""

    def __init__(self, store: Any) -> None:
        self._js = store

    @asynccontextmanager
    async def writing(self) -> AsyncIterator[None]:
        release = await self._js.lockWrites()  # a Web Lock: writers in every tab of the site take turns
        try:
            yield
        finally:
            release()

    async def collections(self) -> list[tuple[str, str]]:
        return [(ns, coll) for ns, coll in loads(await self._js.collections())]

    async def indexes(self, namespace: str | None = None, collection: str | None = None) -> list[IndexConfig]:
        return [IndexConfig.from_json(d) for d in loads(await self._js.indexes(namespace, collection))]

    async def create_index(self, config: IndexConfig) -> None:
        await self._js.createIndex(dumps(config.to_json()))

    async def drop_index(self, key: Key) -> None:
        await self._js.dropIndex(*key)

    async def drop_collection(self, namespace: str, collection: str) -> None:
        await self._js.dropCollection(namespace, collection)

    async def document_names(self, namespace: str, collection: str) -> list[str]:
        return loads(await self._js.documentNames(namespace, collection))

    async def unindexed(self, key: Key) -> list[str]:
        return loads(await self._js.unindexed(*key))

    async def put_documents(self, docs: list[StoredDocument]) -> None:
        vectors = array("f")
        wire = []
        for d in docs:
            chunks = []
            for index, cs in d.chunks.items():
                chunks.append({"index": index, **cs.to_json(), "offset": len(vectors)})
                vectors.extend(cs.vectors)
            wire.append({"namespace": d.namespace, "collection": d.collection, "name": d.name,
                         "body": dumps({"contents": d.contents, "metadata": d.metadata}),
                         "metadata": dumps(d.metadata), "chunks": chunks})
        await self._js.putDocuments(dumps(wire), to_js(vectors.tobytes()))

    async def add_chunks(self, key: Key, chunks: dict[str, ChunkSet]) -> None:
        vectors = array("f")
        wire = []
        for name, cs in chunks.items():
            wire.append({"name": name, **cs.to_json(), "offset": len(vectors)})
            vectors.extend(cs.vectors)
        await self._js.addChunks(*key, dumps(wire), to_js(vectors.tobytes()))

    async def delete_documents(self, paths: list[tuple[str, str, str]]) -> list[bool]:
        return loads(await self._js.deleteDocuments(dumps(paths)))

    async def documents(self, paths: list[tuple[str, str, str]]) -> list[dict[str, Any] | None]:
        out = loads(await self._js.documents(dumps(paths)))
        return [None if d is None else {"namespace": d["namespace"], "collection": d["collection"],
                                        "name": d["name"], **d["body"]} for d in out]

    async def chunk_counts(self, namespace: str, collection: str) -> dict[str, dict[str, int]]:
        return loads(await self._js.chunkCounts(namespace, collection))

    async def catalog(self, key: Key, known_generation: int | None) -> Catalog | None:
        try:
            raw = await self._js.catalog(*key, known_generation)
        except JsException as exc:
            raise _store_error(exc, key) from None
        if not isinstance(raw, str):  # JS null
            return None
        d = loads(raw)
        return Catalog(d["generation"], d["names"], d["metadata"])

    async def search(self, key: Key, query: ScoreQuery) -> list[Hit]:
        options = {"k": query.k, "min_score": query.min_score, "terms": query.terms,
                   "semantic_weight": query.semantic_weight, "k1": query.k1, "b": query.b,
                   "generation": query.generation}
        allowed = None if query.allowed is None else to_js(query.allowed)
        try:
            raw = await self._js.search(*key, to_js(query.vector.tobytes()), dumps(options), allowed)
        except JsException as exc:
            if exc.name == "StaleCatalog":
                raise StaleCatalogError from None
            raise _store_error(exc, key) from None
        return [Hit(*h) for h in loads(raw)]


def _store_error(exc: JsException, key: Key) -> Exception:
    if exc.name == "NoIndex":  # dropped while a search was on its way
        return NotFoundError(f"index {key[2]!r} does not exist in collection {key[1]!r}", "index_path.index")
    return InternalError(f"the document store failed: {exc.message}")


class PyodideHost:
    """``Host`` over worker/host.js: language data by fetch, skills in IndexedDB."""

    def __init__(self, host: Any) -> None:
        self._host = host

    async def language_data(self, code: str) -> bytes:
        try:
            return (await self._host.languageData(code)).to_bytes()
        except JsException as exc:
            raise InternalError(f"could not fetch the language data of {code!r}: {exc.message}") from None

    async def stored_skills(self) -> dict[str, str]:
        return loads(await self._host.storedSkills())

    async def store_skill(self, name: str, source: str) -> None:
        await self._host.storeSkill(name, source)

    async def delete_skill(self, name: str) -> None:
        await self._host.deleteSkill(name)
