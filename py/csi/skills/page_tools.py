"""Tools that skills call by name (``csi.list_tools()``, ``csi.invoke_tool(name, **args)``): in the
worker, functions the web page registers (``engine.tools.register``); in CPython, Python functions
registered the same way. The registry checks each spec when it is registered, each call's arguments
against the tool's ``input_schema``, and turns what the tool returns into the SDK's
``ToolOutput.contents`` (a list of strings).

A call serves a scope (the skill run's message): cancelling it (``cancel``, ``interruptGenerate()``,
a skill's time limit) ends the wait with an ``AbortError`` at once. A Python coroutine is cancelled;
a page tool is told (its ``AbortSignal`` aborts) and whatever it answers later is dropped.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from json import dumps
from typing import TYPE_CHECKING, Any

from ..core.scope import CancelWatch, cancel_reason
from ..errors import AbortError, InvalidInputError, ToolFailed
from .tool_schema import Validator, check_arguments, compile_input_schema

if TYPE_CHECKING:
    from ..core.scope import Scope

Invoker = Callable[[dict[str, Any]], Any]
"""Runs a tool on its (validated) arguments: returns its result, or an awaitable of it."""
PageCall = Callable[[str, dict[str, Any]], Awaitable[Any]]
"""Asks the page to run its tool ``name`` on ``arguments``; the page's result (a JSON value), or
``ToolFailed`` with the message of what the page's function threw."""

__all__ = ["CancelWatch", "Invoker", "PageCall", "ToolFailed", "ToolRegistry", "ToolSpec", "cancel_reason",
           "page_invoker", "parse_spec", "tool_contents"]

TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
SPEC_FIELDS = ("name", "description", "input_schema")


@dataclass(frozen=True)
class ToolSpec:
    """A tool as skills see it (pharia-skill's ``Tool``)."""

    name: str
    description: str
    input_schema: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}


@dataclass(frozen=True)
class _Entry:
    spec: ToolSpec
    invoke: Invoker
    validator: Validator


def parse_spec(spec: Any) -> tuple[ToolSpec, Validator]:
    """``spec`` (a ``ToolSpec`` or a mapping of its fields) checked, with its compiled validator."""
    if isinstance(spec, ToolSpec):
        spec = spec.to_dict()
    if not isinstance(spec, dict):
        raise InvalidInputError("a tool spec is an object: {name, description, input_schema}", "spec")
    unknown = [k for k in spec if k not in SPEC_FIELDS]
    if unknown:
        raise InvalidInputError(f"unknown field `{unknown[0]}` in a tool spec", str(unknown[0]))
    name, description = spec.get("name"), spec.get("description", "")
    if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
        raise InvalidInputError("a tool's `name` is 1-64 letters, digits, '_' or '-'", "name")
    if not isinstance(description, str):
        raise InvalidInputError("a tool's `description` must be a string", "description")
    if "input_schema" not in spec:
        raise InvalidInputError("`input_schema` is required: the JSON Schema of the tool's arguments", "input_schema")
    schema, validator = compile_input_schema(spec["input_schema"])
    return ToolSpec(name, description, schema), validator


def tool_contents(value: Any) -> list[str]:
    """What a tool returned, as ``ToolOutput.contents``: a string is one item, a list of strings is
    the list, nothing (``None``) is no item, any other JSON value is one item, its JSON text."""
    if value is None:
        return []
    items = [value] if isinstance(value, str) else list(value) if isinstance(value, list | tuple) and all(
        isinstance(v, str) for v in value) else None
    if items is None:
        try:
            items = [dumps(value, ensure_ascii=False, allow_nan=False)]
        except (TypeError, ValueError, RecursionError) as exc:
            raise ToolFailed(f"the tool returned a value that is not JSON: {exc}") from None
    for item in items:
        try:
            item.encode("utf-8")
        except UnicodeEncodeError:
            raise ToolFailed("the tool returned text with a lone UTF-16 surrogate: not Unicode text") from None
    return items


def _failure(exc: BaseException) -> ToolFailed:
    if isinstance(exc, ToolFailed):
        return exc
    message = getattr(exc, "message", None)
    return ToolFailed(message if isinstance(message, str) and message else str(exc) or type(exc).__name__)


def page_invoker(call_page: PageCall | None, name: str) -> Invoker:
    """The invoker of the page's tool ``name``: ``call_page`` asks the page (``None``: there is no page)."""

    async def invoke(arguments: dict[str, Any]) -> Any:
        if call_page is None:
            raise ToolFailed(f"tool {name!r} runs on a web page, and no page is connected")
        return await call_page(name, arguments)

    return invoke


class ToolRegistry:
    """The tools skills can call, by name; ``cancels`` (the engine) ends calls whose scope is cancelled."""

    def __init__(self, cancels: CancelWatch | None = None) -> None:
        self._cancels = cancels
        self._entries: dict[str, _Entry] = {}

    def register(self, spec: Any, invoke: Invoker) -> ToolSpec:
        """Add the tool ``spec`` describes, run by ``invoke`` (replacing one of the same name)."""
        if not callable(invoke):
            raise InvalidInputError("a tool's invoker must be callable", "invoke")
        parsed, validator = parse_spec(spec)
        self._entries[parsed.name] = _Entry(parsed, invoke, validator)
        return parsed

    def has(self, name: str) -> bool:
        """Whether a tool is registered as ``name``."""
        return name in self._entries

    def remove(self, name: Any) -> None:
        """Forget the tool ``name``."""
        if not isinstance(name, str) or name not in self._entries:
            raise InvalidInputError(f"there is no tool named {name!r}", "name")
        del self._entries[name]

    async def invoke(self, name: str, arguments: Any, scope: Scope | None = None) -> list[str]:
        """Run tool ``name`` on ``arguments`` and return its contents.

        ``InvalidInputError`` for an unknown ``name`` or arguments the tool's schema refuses
        (``param`` ``arguments.<field>``); ``ToolFailed`` when the tool fails; ``AbortError`` when
        ``scope`` is cancelled before it answers.
        """
        entry = self._entries.get(name) if isinstance(name, str) else None
        if entry is None:
            raise InvalidInputError(f"there is no tool named {name!r}", "name")
        check_arguments(entry.validator, arguments)
        watch = self._cancels if scope is not None else None
        if watch is not None and scope is not None and (reason := cancel_reason(watch, scope)) is not None:
            raise AbortError(f"the call of tool {name!r} {reason} before it started")
        try:
            out = entry.invoke(arguments)
        except Exception as exc:  # noqa: BLE001 - whatever the tool raised is its failure
            raise _failure(exc) from None
        if inspect.isawaitable(out):
            out = await self._settle(name, out, watch, scope)
        return tool_contents(out)

    async def _settle(self, name: str, awaitable: Awaitable[Any], watch: CancelWatch | None,
                      scope: Scope | None) -> Any:
        """What the tool's awaitable ends with; ``AbortError`` once ``scope`` is cancelled. As
        ``asyncio.timeout`` does, the call's own task is cancelled then (the tool sees
        ``CancelledError`` where it waits; a Python tool that swallows it delays the end). The tool
        gets no task of its own: in Pyodide each task and wait costs browser tasks, and a page
        tool's whole round trip is well under a millisecond once warm."""
        task = asyncio.current_task()
        due: list[str] = []
        waker: asyncio.Future[None] | None = None

        def on_cancel(_: asyncio.Future[None]) -> None:
            nonlocal waker
            if waker is None:
                return  # the call has ended
            reason = cancel_reason(watch, scope) if watch is not None and scope is not None else None
            if reason is None:  # an interrupt or cancel for other work
                waker = watch.next_cancel() if watch is not None else None
                if waker is not None:
                    waker.add_done_callback(on_cancel)
            elif task is not None:
                due.append(reason)
                task.cancel()

        if watch is not None and scope is not None and task is not None:
            waker = watch.next_cancel()
            waker.add_done_callback(on_cancel)
        try:
            return await awaitable
        except asyncio.CancelledError:
            if due and task is not None and task.uncancel() == 0:
                raise AbortError(f"the call of tool {name!r} {due[0]} while the tool ran") from None
            raise
        except Exception as exc:  # noqa: BLE001 - whatever the tool raised is its failure
            if due and task is not None:  # it failed while being cancelled: the cancel is what happened
                task.uncancel()
                raise AbortError(f"the call of tool {name!r} {due[0]} while the tool ran") from None
            raise _failure(exc) from None
        finally:
            ended, waker = waker, None
            if ended is not None:
                ended.cancel()

    def list(self) -> list[ToolSpec]:  # defined last: below it, `list` in an annotation would mean this method
        """Every tool, by name."""
        return [self._entries[name].spec for name in sorted(self._entries)]
