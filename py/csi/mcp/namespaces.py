"""MCP servers connected per namespace (``engine.tools.connect``): a skill run in a namespace sees
the tools of that namespace's servers through the CSI's ``list_tools``/``invoke_tool``, beside the
page's tools, as Pharia Kernel serves a namespace's MCP servers to its skills.

Connecting starts a session and lists the server's tools (a server that cannot is refused then).
A skill's ``list_tools`` asks each server again; ``invoke_tool`` calls the server that listed the
name (the first, in the order they were connected). A tool that fails itself (``isError``) is the
skill's ``ToolError``; a server that fails is its typed error, naming the server and the tool."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.tools import content_texts
from ..errors import InvalidInputError, NotSupportedError, ToolFailed
from ..servers.endpoints import check_server_url
from .client import McpClient, McpTool, McpToolResult

if TYPE_CHECKING:
    from ..core.scope import CancelWatch, Scope
    from ..servers.http import HttpClient

NAMESPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}")
MAX_TIMEOUT_S = 3600.0


@dataclass
class McpConnection:
    """One server connected in a namespace, with its tools as last listed."""

    namespace: str
    url: str
    label: str
    client: McpClient
    tools: list[McpTool]


def check_namespace(namespace: Any, param: str = "namespace") -> str:
    if not isinstance(namespace, str) or not NAMESPACE.fullmatch(namespace):
        raise InvalidInputError("a namespace is 1-64 letters, digits, '-' or '_', starting with a letter or digit",
                                param)
    return namespace


def tool_texts(result: McpToolResult) -> list[str]:
    """A result's parts as ``ToolOutput.contents`` (``csi.core.tools.content_texts``)."""
    return content_texts(result.content)


class McpNamespaces:
    """The MCP servers connected, by namespace; ``http`` reaches them (``None``: nothing can be)."""

    def __init__(self, http: HttpClient | None, cancels: CancelWatch | None = None) -> None:
        self._http = http
        self._cancels = cancels
        self._connections: list[McpConnection] = []

    async def connect(self, namespace: str, url: str, headers: dict[str, str], *, label: str | None = None,
                      timeout_s: float = 60.0, scope: Scope | None = None) -> McpConnection:
        """Connect the server at ``url`` in ``namespace`` (replacing the same URL there): its session
        started, its tools listed."""
        check_namespace(namespace)
        client = self.client(url, headers, label or namespace, timeout_s=timeout_s)
        try:
            tools = await client.list_tools(scope)
        except BaseException:
            await client.close()
            raise
        connection = McpConnection(namespace, url, client.label, client, tools)
        old = [c for c in self._connections if (c.namespace, c.url) == (namespace, url)]
        self._connections = [c if c not in old else connection for c in self._connections]
        if not old:
            self._connections.append(connection)
        for c in old:
            await c.client.close()
        return connection

    def client(self, url: str, headers: dict[str, str], label: str, *, timeout_s: float = 60.0,
               params: tuple[str, str] = ("url", "headers")) -> McpClient:
        """A client of the server at ``url``, checked, in no namespace (the Responses API's ``mcp``
        tools); errors about the URL and the headers name ``params``."""
        url = check_server_url(url, params[0])
        for name, value in headers.items():
            if not HEADER_NAME.fullmatch(name) or not isinstance(value, str) or "\n" in value or "\r" in value:
                raise InvalidInputError(f"{name[:100]!r}: a header is a token name and a value on one line",
                                        params[1])
        if not 0 < timeout_s <= MAX_TIMEOUT_S:
            raise InvalidInputError(f"`timeout_s` must be a number of seconds from 0 (excluded) to {MAX_TIMEOUT_S:g}",
                                    "timeout_s")
        if self._http is None:
            raise NotSupportedError("this engine has no HTTP client to reach MCP servers with", params[0])
        return McpClient(self._http, url, headers, label, timeout_s=timeout_s, cancels=self._cancels)

    async def disconnect(self, namespace: str, url: str | None = None) -> list[McpConnection]:
        """Disconnect the server at ``url`` in ``namespace`` (``None``: every server there)."""
        check_namespace(namespace)
        gone = [c for c in self._connections if c.namespace == namespace and (url is None or c.url == url.rstrip("/"))]
        if not gone:
            where = f"at {url} " if url is not None else ""
            raise InvalidInputError(f"no MCP server is connected {where}in namespace {namespace!r}",
                                    "url" if url is not None else "namespace")
        self._connections = [c for c in self._connections if c not in gone]
        for c in gone:
            await c.client.close()
        return gone

    def connections(self) -> list[McpConnection]:
        """Every server connected, by namespace, in the order connected."""
        return sorted(self._connections, key=lambda c: c.namespace)

    def serves(self, namespace: str | None) -> bool:
        return namespace is not None and any(c.namespace == namespace for c in self._connections)

    async def list_tools(self, namespace: str, scope: Scope | None = None) -> list[McpTool]:
        """The tools of the namespace's servers, asked now (a name listed twice: the first server's)."""
        seen: dict[str, McpTool] = {}
        for c in [c for c in self._connections if c.namespace == namespace]:
            c.tools = await c.client.list_tools(scope)
            for tool in c.tools:
                seen.setdefault(tool.name, tool)
        return list(seen.values())

    def _owner(self, namespace: str, name: str) -> McpConnection | None:
        return next((c for c in self._connections if c.namespace == namespace
                     and any(t.name == name for t in c.tools)), None)

    async def invoke(self, namespace: str, name: str, arguments: dict[str, Any],
                     scope: Scope | None = None) -> list[str]:
        """Call tool ``name`` of the namespace's servers: its contents; ``ToolFailed`` when the tool
        failed, ``InvalidInputError`` when no server lists it."""
        owner = self._owner(namespace, name)
        if owner is None:
            await self.list_tools(namespace, scope)  # it may be new
            owner = self._owner(namespace, name)
        if owner is None:
            raise InvalidInputError(f"there is no tool named {name!r} (in namespace {namespace!r})", "name")
        result = await owner.client.call_tool(name, arguments, scope)
        if result.is_error:
            raise ToolFailed(result.text or f"tool {name!r} of {owner.client.where} failed")
        return tool_texts(result)
