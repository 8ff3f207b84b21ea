"""The Responses API's ``mcp`` tools: each server's tools listed (``mcp_list_tools`` items), offered
to the model as functions, and called by the engine itself (``mcp_call`` items), unless the request
asks for approval first (``mcp_approval_request`` items, answered by ``mcp_approval_response``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ....core.scope import Scope
from ....core.tools import content_texts
from ....errors import InvalidInputError
from .objects import McpCallOut, McpListToolsOut, McpToolInfo
from .protocol import McpTool as McpToolSpec
from .protocol import ResponseCreateRequest


class ListedTool(Protocol):
    """A tool as an MCP server lists it (``csi.mcp.client.McpTool``)."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str | None: ...

    @property
    def input_schema(self) -> dict[str, Any]: ...


class ToolResult(Protocol):
    """What a tool call answered (``csi.mcp.client.McpToolResult``)."""

    @property
    def content(self) -> list[dict[str, Any]]: ...

    @property
    def is_error(self) -> bool: ...


class ToolServer(Protocol):
    """One MCP server, as the Responses API uses it (``csi.mcp.client.McpClient``, a port: the faces
    sit below the MCP client)."""

    async def list_tools(self, scope: Scope | None = None) -> Sequence[ListedTool]: ...

    async def call_tool(self, name: str, arguments: dict[str, Any], scope: Scope | None = None) -> ToolResult: ...

    async def close(self) -> None: ...


OpenClient = Callable[[str, dict[str, str], str, tuple[str, str]], ToolServer]
"""``(url, headers, label, (url_param, headers_param))`` -> a client of that server."""


def result_text(result: ToolResult) -> str:
    """A result as the model reads it: one line per part (``csi.core.tools.content_texts``)."""
    return "\n".join(content_texts(result.content))


@dataclass
class Server:
    index: int
    spec: McpToolSpec
    client: ToolServer
    tools: list[ListedTool] = field(default_factory=list)


def _names(value: Any) -> set[str] | None:
    """Tool names of ``allowed_tools`` / ``require_approval`` filters (``None``: no filter)."""
    if value is None:
        return None
    if isinstance(value, list):
        return {str(v) for v in value}
    names = value.get("tool_names")
    return {str(v) for v in names} if isinstance(names, list) else set()


class McpServers:
    """The MCP servers of one request."""

    def __init__(self, req: ResponseCreateRequest, open_client: OpenClient | None) -> None:
        self.servers: list[Server] = []
        labels: set[str] = set()
        for i, spec in req.mcp_tools:
            if spec.server_url is None:
                raise InvalidInputError("an `mcp` tool needs a `server_url` (connectors are OpenAI's)",
                                        f"tools[{i}].server_url")
            if spec.server_label in labels:
                raise InvalidInputError(f"two `mcp` tools are labelled {spec.server_label!r}",
                                        f"tools[{i}].server_label")
            if isinstance(spec.allowed_tools, dict) and spec.allowed_tools.get("read_only") is not None:
                raise InvalidInputError("tools cannot be filtered by `read_only` here: name them in `tool_names`",
                                        f"tools[{i}].allowed_tools.read_only")
            labels.add(spec.server_label)
            if open_client is None:
                raise InvalidInputError("this engine cannot reach MCP servers", f"tools[{i}]")
            headers = dict(spec.headers or {})
            if spec.authorization:
                headers["Authorization"] = f"Bearer {spec.authorization}"
            client = open_client(spec.server_url, headers, spec.server_label,
                                 (f"tools[{i}].server_url", f"tools[{i}].headers"))
            self.servers.append(Server(i, spec, client))

    async def list_all(self, function_names: set[str], scope: Scope | None) -> None:
        """Each server's tools, as ``allowed_tools`` filters them (a failure: its typed error)."""
        seen = set(function_names)
        for server in self.servers:
            allowed = _names(server.spec.allowed_tools)
            server.tools = [t for t in await server.client.list_tools(scope) if allowed is None or t.name in allowed]
            for tool in server.tools:
                if tool.name in seen:
                    raise InvalidInputError(f"two tools are named {tool.name!r} (one of them on MCP server "
                                            f"{server.spec.server_label!r})", f"tools[{server.index}]")
                seen.add(tool.name)

    def list_items(self, new_id: Callable[[str], str]) -> list[McpListToolsOut]:
        return [McpListToolsOut(id=new_id("mcp_list_tools"), server_label=s.spec.server_label,
                                tools=[McpToolInfo(name=t.name, description=t.description, input_schema=t.input_schema)
                                       for t in s.tools]) for s in self.servers]

    def functions(self) -> list[dict[str, Any]]:
        """The servers' tools as chat completion tools."""
        return [{"type": "function", "function": {"name": t.name, "description": t.description or "",
                                                  "parameters": t.input_schema}}
                for s in self.servers for t in s.tools]

    def server_of(self, name: str) -> Server | None:
        return next((s for s in self.servers if any(t.name == name for t in s.tools)), None)

    def server_labelled(self, label: str) -> Server | None:
        return next((s for s in self.servers if s.spec.server_label == label), None)

    def needs_approval(self, server: Server, name: str) -> bool:
        """OpenAI's default: every call needs approval, unless ``require_approval`` says otherwise."""
        rule = server.spec.require_approval
        if rule is None or rule == "always":
            return True
        if rule == "never":
            return False
        assert isinstance(rule, dict)
        never, always = _names(rule.get("never")), _names(rule.get("always"))
        if always is not None and name in always:
            return True
        return not (never is not None and name in never)

    async def call(self, call: McpCallOut, scope: Scope | None) -> None:
        """Run ``call`` on its server: its ``output``, or its ``error`` when the tool failed; a server
        that fails raises its typed error."""
        server = self.server_labelled(call.server_label)
        try:
            arguments = json.loads(call.arguments or "{}")
        except ValueError:
            arguments = None
        if server is None or not isinstance(arguments, dict):
            what = "its arguments are not a JSON object" if server else f"no server {call.server_label!r}"
            call.error = {"type": "mcp_protocol_error", "code": -32602, "message": f"the call was not made: {what}"}
            call.status = "failed"
            return
        result = await server.client.call_tool(call.name, arguments, scope)
        if result.is_error:
            call.error = {"type": "mcp_tool_execution_error", "content": result.content}
            call.status = "failed"
        else:
            call.output = result_text(result)
            call.status = "completed"

    async def close(self) -> None:
        for server in self.servers:
            await server.client.close()
