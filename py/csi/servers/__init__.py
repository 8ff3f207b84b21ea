"""Models on OpenAI-compatible servers (llama.cpp, vLLM, ...): where the page placed them
(``placement``), the runner that serves them behind the engine's ``Runner`` port (``runner``), what a
server is sent (``requests``) and how its streams read (``events``), one request with its errors and
cancellation (``call``, ``errors``), the HTTP port (``http``) and its client for CPython
(``asyncio_http``; the worker's, over fetch, is ``csi.backends.pyodide.http``: only that package
touches Pyodide)."""

from .endpoints import Endpoint, ServerModel, check_server_url
from .placement import ServerPlacement

__all__ = ["Endpoint", "ServerModel", "ServerPlacement", "check_server_url"]
