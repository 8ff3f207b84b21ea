"""Items (the Responses API's conversation unit) as they are kept, and as chat messages for the
engine: input given as text becomes one user message item; every item gets an id; a conversation
(earlier items, then this input) becomes the chat completion messages the model reads."""

from __future__ import annotations

import secrets
from typing import Any

from ....errors import InvalidInputError, NotFoundError
from .protocol import InputItem, ItemReference, McpApprovalResponse

PREFIX = {"message": "msg_", "function_call": "fc_", "function_call_output": "fco_", "mcp_list_tools": "mcpl_",
          "mcp_call": "mcp_", "mcp_approval_request": "mcpr_", "mcp_approval_response": "mcpa_"}


def new_id(kind: str) -> str:
    return PREFIX.get(kind, "item_") + secrets.token_hex(12)


def input_items(given: str | list[InputItem], earlier: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """This request's input as kept items (ids given to those without); references resolved
    against ``earlier`` items of the conversation."""
    if isinstance(given, str):
        return [{"type": "message", "id": new_id("message"), "role": "user", "status": "completed",
                 "content": [{"type": "input_text", "text": given}]}]
    by_id = {item.get("id"): item for item in earlier if item.get("id")}
    out = []
    for i, item in enumerate(given):
        if isinstance(item, ItemReference):
            if item.id not in by_id:
                raise NotFoundError(f"no item {item.id!r} in this conversation", f"input[{i}].id")
            out.append(by_id[item.id])
            continue
        kept = item.model_dump(by_alias=True, exclude_none=True)
        kept.setdefault("type", "message")
        if isinstance(kept.get("content"), str):
            part = "output_text" if kept.get("role") == "assistant" else "input_text"
            kept["content"] = [{"type": part, "text": kept["content"]}]
        kept.setdefault("id", new_id(kept["type"]))
        if not isinstance(item, McpApprovalResponse):
            kept.setdefault("status", "completed")
        out.append(kept)
    return out


def _text(parts: str | list[dict[str, Any]]) -> str:
    if isinstance(parts, str):
        return parts
    return "".join(p.get("text", p.get("refusal", "")) for p in parts)


def chat_messages(items: list[dict[str, Any]], instructions: str | None) -> list[dict[str, Any]]:
    """The chat messages of a conversation's items: function calls (and MCP calls, with their
    results) join the assistant turn before them; approval items carry no turn."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": instructions}] if instructions else []

    def assistant_turn() -> dict[str, Any]:
        last = messages[-1] if messages else None
        if last is not None and last["role"] == "assistant":
            return last
        messages.append({"role": "assistant", "content": None})
        return messages[-1]

    for item in items:
        kind = item["type"]
        if kind == "message":
            text = _text(item["content"])
            last = messages[-1] if messages else None
            if item["role"] == "assistant" and last and last["role"] == "assistant" and not last.get("tool_calls"):
                last["content"] = (last["content"] or "") + text
            elif item["role"] == "assistant":
                messages.append({"role": "assistant", "content": text})
            else:
                messages.append({"role": item["role"], "content": text})
        elif kind in ("function_call", "mcp_call"):
            call_id = item.get("call_id") or item["id"]
            turn = assistant_turn()
            turn.setdefault("tool_calls", []).append(
                {"id": call_id, "type": "function", "function": {"name": item["name"], "arguments": item["arguments"]}})
            if kind == "mcp_call":
                result = item.get("output") if item.get("error") is None else f"error: {item['error']}"
                messages.append({"role": "tool", "tool_call_id": call_id, "content": result or ""})
        elif kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item["call_id"], "content": _text(item["output"])})
    return messages


def check_ends_with_a_question(items: list[dict[str, Any]]) -> None:
    """The model answers the user or a tool result: the last turn cannot be its own."""
    turns = [i for i in items if i["type"] not in ("mcp_list_tools", "mcp_approval_request", "mcp_approval_response")]
    if turns and turns[-1]["type"] == "message" and turns[-1]["role"] == "assistant":
        raise InvalidInputError("the input ends with an assistant message: the last item must be from the user "
                                "or a function call's output", "input")
