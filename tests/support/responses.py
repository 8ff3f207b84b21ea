"""The official `openai` Python package's types of OpenAI's Responses API, as the reference for the
objects and streamed events csi-web answers."""

from __future__ import annotations

import typing
from typing import Any

from openai.types.responses import Response as OpenAIResponse
from openai.types.responses import ResponseStreamEvent

# each event type's model in the `openai` package, by its `type`
EVENTS = {cls.model_fields["type"].annotation.__args__[0]: cls
          for cls in typing.get_args(typing.get_args(ResponseStreamEvent)[0])}


def checked(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Every event as the `openai` package reads it, numbered from 0, in OpenAI's order; the final response."""
    for e in events:
        EVENTS[e["type"]].model_validate(e)
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert [e["type"] for e in events[:2]] == ["response.created", "response.in_progress"]
    assert events[-1]["type"] in ("response.completed", "response.incomplete")
    final = events[-1]["response"]
    OpenAIResponse.model_validate(final)
    texts: dict[str, str] = {}
    args: dict[str, str] = {}
    for e in events:
        if e["type"] == "response.output_text.delta":
            texts[e["item_id"]] = texts.get(e["item_id"], "") + e["delta"]
        elif e["type"] == "response.function_call_arguments.delta":
            args[e["item_id"]] = args.get(e["item_id"], "") + e["delta"]
        elif e["type"] == "response.output_item.done":
            assert final["output"][e["output_index"]] == e["item"]
    for item in final["output"]:
        if item["type"] == "message":
            assert texts[item["id"]] == item["content"][0]["text"]
        elif item["type"] == "function_call":
            assert args.get(item["id"], "") == item["arguments"]
    return final
