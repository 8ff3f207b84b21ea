"""Skills that call the tools of MCP servers connected in their namespace, run the same way in CPython
(tests/cpython/test_mcp_skills.py) and in Chromium (tests/browser/test_browser_mcp.py), with what
each must answer against tests/support/mcp_server.py."""

from __future__ import annotations

from typing import Any

MCP_USER = '''
from pydantic import BaseModel

from pharia_skill import Csi, ToolError, skill


class Input(BaseModel):
    a: int
    b: int
    city: str


class Output(BaseModel):
    tools: list[str]
    schema_required: list[str]
    added: str
    found: list[str]
    area: str
    failed: str
    unknown: str


@skill
def mcp_user(csi: Csi, input: Input) -> Output:
    """List the namespace's tools and call them."""
    tools = csi.list_tools()
    shape = next(t for t in tools if t.name == "shape_area")
    added = csi.invoke_tool("add", a=input.a, b=input.b).text()
    found = csi.invoke_tool("lookup", city=input.city).contents
    square = {"name": "square", "points": [{"x": 0, "y": 0}, {"x": 3, "y": 0}, {"x": 3, "y": 3}, {"x": 0, "y": 3}],
              "tags": {"from": "skill"}}
    area = csi.invoke_tool("shape_area", shape=square).text()
    try:
        csi.invoke_tool("fail", reason="asked by a skill")
        failed = ""
    except ToolError as e:
        failed = e.message
    try:
        csi.invoke_tool("no_such_tool")
        unknown = ""
    except Exception as e:
        unknown = f"{type(e).__name__}: {e}"
    return Output(tools=sorted(t.name for t in tools), schema_required=shape.input_schema["required"], added=added,
                  found=found, area=area, failed=failed, unknown=unknown)
'''

MCP_SLOW = '''
from pydantic import BaseModel

from pharia_skill import Csi, skill


class Input(BaseModel):
    seconds: float
    label: str


class Output(BaseModel):
    text: str


@skill
def mcp_slow(csi: Csi, input: Input) -> Output:
    """Call the slow tool (to be cancelled, or to time out)."""
    return Output(text=csi.invoke_tool("slow", seconds=input.seconds, label=input.label).text())
'''

USER_INPUT = {"a": 19, "b": 23, "city": "Berlin"}


def expected_user_output(page_tools: tuple[str, ...] = ()) -> dict[str, Any]:
    """What ``mcp_user`` answers on ``USER_INPUT`` (``page_tools``: names of the page's tools too)."""
    return {"tools": sorted(["add", "fail", "lookup", "shape_area", "slow", *page_tools]),
            "schema_required": ["shape"], "added": "42", "found": ["Berlin is the capital of Germany."],
            "area": "square: 9 [from=skill]",
            "failed": "Error executing tool fail: fail was asked to fail: asked by a skill",
            "unknown": "InvalidInputError: there is no tool named 'no_such_tool' (in namespace 'mcp-tools')"}
