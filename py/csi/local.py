"""A CSI for CPython: test pharia-skill skills with pytest against the same engine code the browser
runs, on onnxruntime and HF tokenizers (``csi.backends.cpython``; needs numpy, onnxruntime, tokenizers).

    with local_csi("dist", ["smollm2-135m-instruct"],
                   aliases={"llama-3.1-8b-instruct": "smollm2-135m-instruct"}) as csi:
        out = my_skill(csi, Input(...))
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .backends.local_host import LocalHost
from .runtime import Runtime, build_runtime
from .servers import ServerModel, ServerPlacement
from .servers.asyncio_http import AsyncioHttp
from .skills.engine_csi import EngineCsi, loop_run_sync

LOCAL_NAMESPACE = "local"
"""The namespace ``local_csi``'s MCP servers are connected in."""


@contextmanager
def local_runtime(site: str | Path, models: Sequence[str], aliases: Mapping[str, str] | None = None,
                  remotes: Sequence[ServerModel] = (),
                  tool_servers: Sequence[str | Mapping[str, Any]] = ()) -> Iterator[tuple[Runtime, EngineCsi]]:
    """A runtime over a built site (``site/models/<id>``, ``site/lang``) with ``models`` loaded (and
    ``aliases``: other names for them; ``remotes``: models on OpenAI-compatible servers;
    ``tool_servers``: MCP servers whose tools the CSI calls, each a URL or ``{url, headers}``), on an
    event loop in a thread of its own, and a ``Csi`` that calls it from any other thread."""
    from .backends.cpython import CPythonBackend  # noqa: PLC0415 - CPython only

    site = Path(site)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="csi-engine", daemon=True)
    thread.start()

    run_sync = loop_run_sync(loop)
    runtime = build_runtime(CPythonBackend(site / "models"), LocalHost(site / "lang"), http=AsyncioHttp())
    csi: EngineCsi | None = None
    try:
        runtime.engine.aliases.set(dict(aliases or {}))
        assert isinstance(runtime.engine.servers, ServerPlacement)
        runtime.engine.servers.set(list(remotes))
        if models:
            run_sync(runtime.engine.load(list(models)))
        for server in tool_servers:
            spec: dict[str, Any] = {"url": server} if isinstance(server, str) else dict(server)
            run_sync(runtime.mcp.connect(LOCAL_NAMESPACE, spec["url"], dict(spec.get("headers") or {})))
        csi = runtime.csi(run_sync, LOCAL_NAMESPACE if tool_servers else None)
        yield runtime, csi
    finally:
        if csi is not None:
            # a stream a skill left unread (chat_stream_step stops at the call) holds its model's
            # turn, and unloading waits for that turn: end it as a skill run's end does
            csi.close_streams()
        if runtime.mcp.serves(LOCAL_NAMESPACE):
            run_sync(runtime.mcp.disconnect(LOCAL_NAMESPACE))
        run_sync(runtime.engine.unload())
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


@contextmanager
def local_csi(site: str | Path, models: Sequence[str], aliases: Mapping[str, str] | None = None,
              remotes: Sequence[ServerModel] = (),
              tool_servers: Sequence[str | Mapping[str, Any]] = ()) -> Iterator[EngineCsi]:
    """pharia-skill's ``Csi`` over a built site (``site/models/<id>``, ``site/lang``) with ``models``
    loaded: csi-web's local stand-in for the SDK's ``DevCsi``. ``aliases`` lets skills name models
    the way they do on Pharia Kernel (``{"llama-3.1-8b-instruct": "smollm2-135m-instruct"}``).

    The engine lives on an event loop in a thread of its own, so skills (synchronous code) call it
    from the test's thread exactly as they do in the worker. ``remotes`` (``csi.servers.ServerModel``,
    listed in ``models`` to load them) are served by their servers. The tools of ``tool_servers``
    (MCP servers: a URL, or ``{"url": ..., "headers": {...}}``) are the CSI's, as a Kernel
    namespace's are its skills'.
    """
    with local_runtime(site, models, aliases, remotes, tool_servers) as (_, csi):
        yield csi
