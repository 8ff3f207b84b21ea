"""``mcp_approval_response`` input items: the calls a person approved (made before the model goes
on) or denied (the model reads that they were not made)."""

from __future__ import annotations

from typing import Any

from ....errors import InvalidInputError, NotFoundError
from .items import new_id
from .mcp_tools import McpServers
from .objects import McpCallOut


def approved_calls(given: list[dict[str, Any]], earlier: list[dict[str, Any]],
                   servers: McpServers) -> list[McpCallOut]:
    """The calls this input approves (``in_progress``, to be made) or denies (``failed``)."""
    asked = {item["id"]: item for item in earlier if item.get("type") == "mcp_approval_request"}
    out = []
    for i, item in enumerate(given):
        if item["type"] != "mcp_approval_response":
            continue
        request = asked.get(item["approval_request_id"])
        if request is None:
            raise NotFoundError(f"no approval request {item['approval_request_id']!r} in this conversation",
                                f"input[{i}].approval_request_id")
        if servers.server_labelled(request["server_label"]) is None:
            raise InvalidInputError(f"the call needs MCP server {request['server_label']!r} among the request's "
                                    "`tools`", f"input[{i}]")
        call = McpCallOut(id=new_id("mcp_call"), server_label=request["server_label"], name=request["name"],
                          arguments=request["arguments"], approval_request_id=request["id"])
        if not item["approve"]:
            why = f": {item['reason']}" if item.get("reason") else ""
            call.error = {"type": "mcp_tool_execution_error",
                          "content": [{"type": "text", "text": f"the user did not approve this call{why}"}]}
            call.status = "failed"
        out.append(call)
    return out
