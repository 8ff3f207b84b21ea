"""``tools_connect``, ``tools_disconnect``, ``tools_servers``: MCP servers whose tools skills run in a
namespace call (``engine.tools.connect``), their bodies and replies."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, JsonValue, RootModel

from ..core.scope import Scope
from ..mcp.namespaces import McpConnection, McpNamespaces
from ..wire import Reply, Strict


class ToolServerConnect(Strict):
    """``tools_connect``: the MCP server at ``url`` (Streamable HTTP) for the skills of ``namespace``."""

    namespace: str
    """1-64 letters, digits, '-' or '_'; a skill run with this ``namespace`` sees the server's tools."""
    url: str
    """The server's MCP endpoint, e.g. ``http://127.0.0.1:8931/mcp``; connecting it again replaces it."""
    headers: Annotated[dict[str, str], Field(max_length=64)] = {}
    """Sent with every request (``Authorization``, ...)."""
    label: str | None = None
    """How errors name the server (``None``: the namespace)."""
    timeout_s: Annotated[float, Field(gt=0, le=3600)] = 60.0
    """How long one request to the server may take."""


class ToolServerRef(Strict):
    """``tools_disconnect``: the server at ``url`` in ``namespace`` (``url`` left out: all of them)."""

    namespace: str
    url: str | None = None


class ServerTool(Reply):
    """A tool as an MCP server lists it."""

    name: str
    description: str | None
    input_schema: dict[str, JsonValue]


class ToolServer(Reply):
    """A server connected in a namespace, with its tools as last listed."""

    namespace: str
    url: str
    label: str
    tools: list[ServerTool]


class ToolServers(RootModel[list[ToolServer]]):
    """Every MCP server connected, by namespace."""


def described(c: McpConnection) -> ToolServer:
    return ToolServer(namespace=c.namespace, url=c.url, label=c.label, tools=[
        ServerTool(name=t.name, description=t.description, input_schema=t.input_schema) for t in c.tools])


async def connect(servers: McpNamespaces, r: ToolServerConnect, scope: Scope) -> ToolServer:
    """Start a session with the server and list its tools; it then serves its namespace."""
    return described(await servers.connect(r.namespace, r.url, r.headers, label=r.label, timeout_s=r.timeout_s,
                                           scope=scope))


async def disconnect(servers: McpNamespaces, r: ToolServerRef) -> ToolServers:
    """End the sessions of the servers named; the servers disconnected."""
    return ToolServers([described(c) for c in await servers.disconnect(r.namespace, r.url)])


async def listed(servers: McpNamespaces) -> ToolServers:
    return ToolServers([described(c) for c in servers.connections()])
