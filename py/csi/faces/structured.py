"""``response_format``, ``tools`` and ``tool_choice`` as clients send them (OpenAI's shapes and
WebLLM's), shared by the OpenAI and Pharia faces, and what they mean to the engine: a ``Grammar``,
``Tool``s, a tool choice."""

from __future__ import annotations

from json import dumps, loads
from typing import Annotated, Any, Literal

from pydantic import Field

from ..core.grammar import Grammar, SchemaError, check_schema, regex_grammar, structural_tag_grammar
from ..core.request import ForcedTool, Tool, ToolChoice
from ..errors import InvalidInputError
from ..wire import Strict

FunctionName = Annotated[str, Field(pattern=r"^[a-zA-Z0-9_-]{1,64}$")]


class JsonSchemaSpec(Strict):
    """OpenAI's ``response_format.json_schema``."""

    name: FunctionName
    description: str | None = None
    schema_: dict[str, Any] | bool | None = Field(default=None, alias="schema")
    strict: bool | None = None


class ResponseFormat(Strict):
    """Every shape: ``text``; ``json_object`` (WebLLM: with ``schema``, a JSON Schema string);
    OpenAI's ``json_schema``; WebLLM's ``grammar`` (EBNF); ``regex``; ``structural_tag``
    (xgrammar's, as ``structural_tag``, or WebLLM's ``tags`` + ``triggers``)."""

    type: Literal["text", "json_object", "json_schema", "grammar", "regex", "structural_tag"] | None = None
    schema_: str | dict[str, Any] | None = Field(default=None, alias="schema")
    json_schema: JsonSchemaSpec | None = None
    grammar: str | None = None
    pattern: str | None = None
    structural_tag: str | dict[str, Any] | None = None
    tags: list[dict[str, Any]] | None = None
    triggers: list[str] | None = None

    def to_grammar(self, param: str = "response_format") -> Grammar | None:
        """The grammar this format asks for (``None`` for text); errors name ``param``'s fields."""
        kind = self.type or ("grammar" if self.grammar is not None else "json_object" if self.schema_ is not None
                             else "text")
        allowed = {"text": set(), "json_object": {"schema_"}, "json_schema": {"json_schema"},
                   "grammar": {"grammar"}, "regex": {"pattern"},
                   "structural_tag": {"structural_tag", "tags", "triggers"}}[kind]
        for name in ("schema_", "json_schema", "grammar", "pattern", "structural_tag", "tags", "triggers"):
            if getattr(self, name) is not None and name not in allowed:
                field = name.rstrip("_")
                raise InvalidInputError(f"`{field}` does not go with type {kind!r}", f"{param}.{field}")
        if kind == "text":
            return None
        if kind == "json_object":
            if self.schema_ is None:
                return json_schema_grammar({"type": "object"}, f"{param}", strict=False)
            return json_schema_grammar(_decoded(self.schema_, f"{param}.schema"), f"{param}.schema")
        if kind == "json_schema":
            if self.json_schema is None:
                raise InvalidInputError("type 'json_schema' needs `json_schema`", f"{param}.json_schema")
            spec = self.json_schema.schema_
            if spec is None:
                return json_schema_grammar({"type": "object"}, f"{param}.json_schema", strict=False)
            return json_schema_grammar(spec, f"{param}.json_schema.schema")
        if kind == "grammar":
            if not self.grammar:
                raise InvalidInputError("type 'grammar' needs a non-empty `grammar` (EBNF)", f"{param}.grammar")
            return Grammar("ebnf", self.grammar, f"{param}.grammar")
        if kind == "regex":
            if not self.pattern:
                raise InvalidInputError("type 'regex' needs a non-empty `pattern`", f"{param}.pattern")
            return regex_grammar(self.pattern, f"{param}.pattern")
        return self._structural_tag(param)

    def _structural_tag(self, param: str) -> Grammar:
        if self.structural_tag is not None:
            tag = _decoded(self.structural_tag, f"{param}.structural_tag")
            if not isinstance(tag, dict):
                raise InvalidInputError("`structural_tag` must be an object", f"{param}.structural_tag")
            body = tag if "format" in tag else {"type": "structural_tag", "format": tag}
            return Grammar("structural_tag", dumps(body), f"{param}.structural_tag")
        if not self.tags or not self.triggers:
            raise InvalidInputError("type 'structural_tag' needs `structural_tag`, or `tags` and `triggers`",
                                    f"{param}.structural_tag")
        tags = []
        for i, item in enumerate(self.tags):
            if not (isinstance(item.get("begin"), str) and isinstance(item.get("end"), str)):
                raise InvalidInputError("a tag has a string `begin` and `end`", f"{param}.tags[{i}]")
            schema = _decoded(item.get("schema", {"type": "object"}), f"{param}.tags[{i}].schema")
            _check(schema, f"{param}.tags[{i}].schema")
            tags.append({"type": "tag", "begin": item["begin"], "end": item["end"],
                         "content": {"type": "json_schema", "json_schema": schema}})
        return structural_tag_grammar({"type": "triggered_tags", "triggers": self.triggers, "tags": tags},
                                      f"{param}.structural_tag")


def _decoded(value: Any, param: str) -> Any:
    """``value``, parsed if it is JSON text (WebLLM sends schemas as strings)."""
    if not isinstance(value, str):
        return value
    try:
        return loads(value)
    except ValueError as exc:
        name = param.rsplit(".", 1)[-1]
        raise InvalidInputError(f"`{name}` is not JSON: {exc}", param) from None


def _check(schema: Any, param: str) -> None:
    try:
        check_schema(schema)
    except SchemaError as exc:
        raise InvalidInputError(str(exc), f"{param}.{exc.path}" if exc.path else param) from None
    except RecursionError:
        raise InvalidInputError("the schema is nested too deeply", param) from None


def json_schema_grammar(schema: Any, param: str, strict: bool = True) -> Grammar:
    """A JSON Schema checked for what the compiler can enforce, as a structural tag: the backend
    turns its ``json_schema`` format into compact EBNF with the numbers bounded
    (``json_schema_ebnf``). ``strict=False`` (any JSON object) lets objects have properties the
    schema does not list."""
    _check(schema, param)
    if not strict:
        schema = {**schema, "additionalProperties": True} if isinstance(schema, dict) else schema
    return structural_tag_grammar({"type": "json_schema", "json_schema": schema}, param)


# ---- tools ----------------------------------------------------------------------------------


class FunctionDefinition(Strict):
    name: FunctionName
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ChatCompletionTool(Strict):
    type: Literal["function"]
    function: FunctionDefinition


class NamedFunction(Strict):
    name: str


class NamedToolChoice(Strict):
    type: Literal["function"]
    function: NamedFunction


ToolChoiceOption = Literal["none", "auto", "required"] | NamedToolChoice


def engine_tools(tools: list[ChatCompletionTool] | None, choice: ToolChoiceOption | None) -> tuple[
        tuple[Tool, ...], ToolChoice]:
    """The request's tools, checked (unique names, schemas the grammar can enforce), and its tool
    choice (OpenAI's default: ``auto`` with tools, ``none`` without)."""
    tools = tools or []
    seen: set[str] = set()
    out = []
    for i, tool in enumerate(tools):
        fn = tool.function
        if fn.name in seen:
            raise InvalidInputError(f"two tools are named {fn.name!r}", f"tools[{i}].function.name")
        seen.add(fn.name)
        if fn.parameters is not None:
            _check(fn.parameters, f"tools[{i}].function.parameters")
        out.append(Tool(fn.name, fn.description, fn.parameters))
    if choice is None:
        return tuple(out), "auto" if out else "none"
    if isinstance(choice, NamedToolChoice):
        if choice.function.name not in seen:
            raise InvalidInputError(f"`tool_choice` names {choice.function.name!r}, which is not in `tools`",
                                    "tool_choice.function.name")
        return tuple(out), ForcedTool(choice.function.name)
    if choice in ("required", "auto") and not out:
        raise InvalidInputError(f"`tool_choice` {choice!r} needs `tools`", "tool_choice")
    return tuple(out), choice
