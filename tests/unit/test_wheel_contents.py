"""Every module the browser wheel ships, each with why the worker needs it. A module added to py/csi
lands in the wheel unless buildtools/site/csi_wheel.py leaves it out (``NOT_IN_BROWSER``): this
list makes that a decision. Paths are relative to py/csi."""

from __future__ import annotations

import zipfile
from pathlib import Path

from buildtools.site.csi_wheel import NOT_IN_BROWSER, build_wheel
from tests.support.paths import ROOT

SHIPPED = {
    "__init__.py": "the package",
    "errors.py": "typed errors that cross the worker boundary",
    "wire.py": "the strict base model and request parser every face uses",
    "runtime.py": "the composition root the worker's app builds",
    # the worker's Python side: worker.js imports csi.worker.main
    "worker/__init__.py": "the worker's package",
    "worker/main.py": "the entry point worker.js imports",
    "worker/app.py": "the envelope: one page message in, messages out",
    "worker/message.py": "reads each page message as hostile input",
    "worker/routes.py": "message type -> handler, mode and request model",
    "worker/requests.py": "the bodies of the worker's own messages",
    "worker/remotes.py": "the page's servers of remote models",
    "worker/replies.py": "the replies of the worker's own messages",
    "worker/prompt_caches.py": "the prompt caches kept beyond the page, listed and sized",
    "worker/tool_servers.py": "the MCP servers connected for skills (engine.tools.connect)",
    # the Pyodide backend, over the JS bridges
    "backends/__init__.py": "the backends' package",
    "backends/pyodide/__init__.py": "the worker's Backend, Host and IndexStore",
    "backends/pyodide/bridge_state.py": "what every role shares: the JS bridge",
    "backends/pyodide/eager_future.py": "the per-token future the bridge resumes",
    "backends/pyodide/embeddings.py": "the embeddings role",
    "backends/pyodide/decoding.py": "the decoding role",
    "backends/pyodide/host.py": "the Host over worker/host.js",
    "backends/pyodide/http.py": "servers' HTTP over the browser's fetch",
    # models on OpenAI-compatible servers
    "servers/__init__.py": "the servers' package",
    "servers/placement.py": "which models the page placed on servers",
    "servers/endpoints.py": "the servers and models as configured",
    "servers/sse.py": "server-sent events read as the standard reads them, bounded",
    "servers/runner.py": "the runner of a model on a server",
    "servers/requests.py": "what a server is sent",
    "servers/events.py": "a server's streams as the engine's events",
    "servers/call.py": "one request, its errors and cancellation",
    "servers/errors.py": "a server's HTTP errors as typed errors",
    "servers/http.py": "the HTTP port",
    # tools from MCP servers
    "mcp/__init__.py": "the MCP client's package",
    "mcp/client.py": "an MCP server over Streamable HTTP: its tools listed and called",
    "mcp/exchange.py": "one JSON-RPC exchange: JSON or event-stream answers, typed errors",
    "mcp/namespaces.py": "the MCP servers connected per namespace, whose tools skills call",
    "backends/pyodide/index_store.py": "the document store over IndexedDB",
    "backends/pyodide/insides.py": "the insides role",
    "backends/pyodide/loading.py": "the loading role (transformers.js)",
    "backends/pyodide/page_tools.py": "the page's tools, called from Python",
    "backends/pyodide/prompt_caches.py": "the browser's prompt caches over the bridge",
    "backends/pyodide/response_store.py": "stored responses (Responses API) in IndexedDB",
    "backends/pyodide/tokenizers.py": "the tokenizers role",
    # the engine
    "core/__init__.py": "the engine's package",
    "core/aliases.py": "model aliases",
    "core/backend.py": "the port the backends implement",
    "core/decode.py": "the decode loop",
    "core/drafts.py": "speculative decoding's drafts from the context (prompt lookup)",
    "core/model_drafts.py": "drafts from a draft model with the same vocabulary",
    "core/detokenize.py": "incremental detokenization",
    "core/engine.py": "the engine: models, queues, cancellation",
    "core/generation.py": "what a generation hands its face",
    "core/grammar.py": "grammars that constrain a generation",
    "core/insides.py": "a model's insides in its ONNX graph",
    "core/host.py": "the services' port to their surroundings",
    "core/json_numbers.py": "JSON number grammars",
    "core/json_depth.py": "how deep JSON text nests, before it is parsed",
    "core/packages.py": "the packages skills may import",
    "core/prompt.py": "a local model's prompt, rendered and checked",
    "core/runner.py": "the port for where a model runs",
    "core/local_runner.py": "a model that runs here",
    "core/scheduler.py": "turns at the models, and cancellation",
    "core/request.py": "one generation request, whatever its API",
    "core/sampling_defaults.py": "sampling a request leaves out: the model's defaults, then the face's",
    "gguf/__init__.py": "the package of GGUF files opened in the page",
    "gguf/spec.py": "a GGUF's model from its header: shape, family, refusals",
    "gguf/graph.py": "a GGUF's decoder graph, written in the worker",
    "gguf/onnx_proto.py": "the ONNX protobuf the graph is written in",
    "gguf/sampling.py": "the sampling defaults a GGUF declares",
    "gguf/page.py": "a GGUF opened in the page: its model folder and graph",
    "gguf/ids.py": "which model ids name GGUF files",
    "core/scope.py": "which page message a piece of work serves",
    "core/stop_text.py": "stop sequences over streamed text",
    "core/token_bytes.py": "token id -> bytes tables",
    "core/tools.py": "tool calls: templates, grammar, parsing",
    # the faces: one per API the page speaks
    "faces/__init__.py": "the faces' package",
    "faces/chat_tokens.py": "a conversation's token ids",
    "faces/remote_llm.py": "the RemoteLLM face",
    "faces/spin.py": "Spin's llm face",
    "faces/structured.py": "response_format and tools as clients send them",
    "faces/openai/__init__.py": "the OpenAI face's package",
    "faces/openai/messages.py": "OpenAI chat messages",
    "faces/openai/protocol.py": "OpenAI request models",
    "faces/openai/responses.py": "OpenAI response shapes",
    "faces/openai/serving.py": "the OpenAI / WebLLM face",
    "faces/openai/responses_api/__init__.py": "the Responses API's package",
    "faces/openai/responses_api/protocol.py": "Responses API request models",
    "faces/openai/responses_api/objects.py": "Responses API response, items and events",
    "faces/openai/responses_api/items.py": "input items and their chat messages",
    "faces/openai/responses_api/output.py": "a reply as Responses API events",
    "faces/openai/responses_api/serving.py": "responses.create and stored responses",
    "faces/openai/responses_api/store.py": "the stored responses' port",
    "faces/openai/responses_api/mcp_tools.py": "the Responses API's mcp tools",
    "faces/openai/responses_api/approvals.py": "approved and denied MCP calls",
    "faces/pharia/__init__.py": "the pharia faces' package",
    "faces/pharia/index.py": "the document-index face",
    "faces/pharia/inference.py": "the CSI inference face",
    "faces/pharia/text.py": "the CSI chunking and language faces",
    # GGUF files opened in the browser
    "gguf/tokenizer.py": "a GGUF's tokenizer.json and tokenizer_config.json from its metadata",
    "gguf/tokenizer_pipelines.py": "the normalizer, pre-tokenizer and decoder of each GGUF tokenizer kind",
    # the document index
    "index/__init__.py": "the index's package",
    "index/cancel.py": "stopping an index write",
    "index/filters.py": "metadata filters",
    "index/ingest.py": "cutting and embedding an index write's documents, step by step",
    "index/lexical.py": "BM25 terms",
    "index/service.py": "the document index service",
    "index/store.py": "the store protocol and scoring kernel",
    "index/types.py": "the index's request shapes",
    # skills
    "skills/__init__.py": "the skills' package",
    "skills/wire.py": "the replies of the skills routes",
    "skills/engine_csi.py": "pharia-skill's Csi served by the engine",
    "skills/imports.py": "which modules a skill may import",
    "skills/interrupts.py": "a skill's time limit and interrupts",
    "skills/loaded.py": "a skill as its decorators leave it",
    "skills/page_tools.py": "tools skills call by name",
    "skills/registry.py": "the skill registry",
    "skills/sdk_wire.py": "pharia-skill's types to and from JSON",
    "skills/streams.py": "the SDK's stream responses",
    "skills/tool_schema.py": "a tool's input schema, compiled",
    "skills/examples/__init__.py": "the example skills' package",
    "skills/examples/language_sections.py": "an example skill every engine registers",
    "skills/examples/reply_in_language.py": "an example skill every engine registers",
    "skills/examples/search_answer.py": "an example skill every engine registers",
    "skills/examples/stream_answer.py": "an example skill every engine registers",
    "skills/examples/summarize.py": "an example skill every engine registers",
    # text: chunking, segmentation, language selection
    "text/__init__.py": "the text services' package",
    "text/chunk_levels.py": "chunking: the level to cut at",
    "text/chunk_sections.py": "chunking: where a text may be cut",
    "text/chunk_sizer.py": "chunking: token sizes of pieces",
    "text/chunking.py": "token-bounded chunking",
    "text/icu_trie.py": "ICU's tries, for the word dictionaries",
    "text/language.py": "select_language",
    "text/language_rules.py": "lingua's rule-based filters",
    "text/segmentation.py": "grapheme, word and sentence boundaries",
    "text/segmentation_dictionaries.py": "complex-script word boundaries",
    "text/segmentation_rules.py": "the rule-based break iterator",
    "text/services.py": "the chunking and language services",
    "text/tables/__init__.py": "the generated tables' package",
    "text/tables/unicode_breaks.py": "Unicode break tables (generated)",
    "text/tables/unicode_dict.py": "ICU word dictionaries (generated)",
}


def shipped(tmp_path: Path) -> set[str]:
    wheel = build_wheel(ROOT / "py" / "csi", "0.0.0", tmp_path)
    with zipfile.ZipFile(wheel) as zf:
        return {n.removeprefix("csi/") for n in zf.namelist() if n.startswith("csi/") and n.endswith(".py")}


def test_the_browser_wheel_ships_exactly_the_modules_listed_here(tmp_path: Path) -> None:
    modules = shipped(tmp_path)
    assert sorted(modules - set(SHIPPED)) == [], (
        "the browser wheel ships modules not listed in SHIPPED: list each with why the worker needs it, "
        "or leave it out of the wheel (NOT_IN_BROWSER of buildtools/site/csi_wheel.py)")
    assert sorted(set(SHIPPED) - modules) == [], "SHIPPED lists modules the browser wheel does not ship"
    assert all(SHIPPED.values())


def test_what_the_wheel_leaves_out_exists() -> None:
    """Each path of NOT_IN_BROWSER names a module or folder of py/csi (none left behind by a rename)."""
    assert [p for p in NOT_IN_BROWSER if not (ROOT / "py" / "csi" / p).exists()] == []
