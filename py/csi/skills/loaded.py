"""A skill as pharia-skill's decorators leave it in its module: ``@skill`` puts a ``SkillHandler``
class in the module's globals, ``@message_stream`` a ``MessageStream`` class (what componentize-py
exports to Pharia Kernel). Their ``run`` methods close over the skill function and its input model;
csi-web calls that function with its own ``Csi`` (and, for a stream, its own ``MessageWriter``),
exactly as the Kernel's handler does with its WIT-backed ones."""

from __future__ import annotations

import json
import traceback
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pharia_skill import Csi, MessageWriter
from pharia_skill.message_stream.writer import MessageAppend, MessageBegin, MessageEnd, MessageItem
from pydantic import BaseModel, ValidationError

from ..errors import InvalidInputError, SkillError, SkillInterrupt
from ..wire import field_path
from .wire import Kind, MessageAppendEvent, MessageBeginEvent, MessageEndEvent, SkillEvent

Emit = Callable[[SkillEvent], None]


def _closure(function: Any) -> dict[str, Any]:
    code, cells = function.__code__, function.__closure__ or ()
    return {name: cell.cell_contents for name, cell in zip(code.co_freevars, cells, strict=True)}


@dataclass
class LoadedSkill:
    """One skill of a module: what it is, its function and input model, its metadata."""

    kind: Kind
    func: Callable[..., Any]
    input_model: type[BaseModel]
    description: str | None
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    """``None`` for a message stream (the SDK declares no schema for its end payload)."""

    @property
    def name(self) -> str:
        return str(self.func.__name__)

    def metadata(self) -> dict[str, Any]:
        """The seed's ``skill-metadata`` (schemas as JSON values), plus which kind of skill it is."""
        return {"description": self.description, "input_schema": self.input_schema,
                "output_schema": self.output_schema, "kind": self.kind}

    def validate(self, data: bytes | str) -> BaseModel:
        """The input, validated as the handler does; ``InvalidInputError`` names the field."""
        try:
            return self.input_model.model_validate_json(data)
        except ValidationError as exc:
            errors = exc.errors()
            lines = [f"`{field_path(tuple(e['loc'])) or '(input)'}`: {e['msg']}" for e in errors]
            raise InvalidInputError("the input does not validate: " + "; ".join(lines),
                                    field_path(tuple(errors[0]["loc"])) or None) from None

    def run(self, csi: Csi, data: bytes | str) -> bytes:
        """A ``@skill``: its output as JSON bytes, as the Kernel's handler gives it."""
        validated = self.validate(data)
        with _skill_errors(self.name):
            result = self.func(csi, validated)
            out = bytes(result.model_dump_json().encode())
        return out

    def stream(self, csi: Csi, data: bytes | str, emit: Emit) -> None:
        """A ``@message_stream``: each item the skill writes goes to ``emit`` as it is written."""
        validated = self.validate(data)
        with _skill_errors(self.name):
            self.func(csi, EventWriter(emit), validated)


@contextmanager
def _skill_errors(name: str) -> Iterator[None]:
    """Whatever the skill raises becomes ``SkillError`` with its traceback (the handler's
    ``Error_Internal``), a CSI call's typed error it let through included (its name and message are
    in the message); an interruption stays one (the runner reports it)."""
    try:
        yield
    except SkillInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - the skill's own, whatever it raised
        text = "".join(traceback.format_exception(exc))
        raise SkillError(f"skill {name} raised {type(exc).__name__}: {exc}\n{text}") from None


class EventWriter(MessageWriter[Any]):
    """The SDK's ``MessageWriter`` whose items go to the page as ``message_begin`` /
    ``message_append`` / ``message_end`` events (the payload as JSON)."""

    def __init__(self, emit: Emit) -> None:
        self._emit = emit

    def write(self, item: MessageItem[Any]) -> None:
        match item:
            case MessageBegin(role=role):
                self._emit(SkillEvent(MessageBeginEvent(role=role)))
            case MessageAppend(text=text):
                self._emit(SkillEvent(MessageAppendEvent(text=text)))
            case MessageEnd(payload=payload):
                data = None if payload is None else json.loads(payload.model_dump_json())
                self._emit(SkillEvent(MessageEndEvent(payload=data)))
            case _:
                raise TypeError(f"a message writer takes MessageBegin, MessageAppend or MessageEnd, not {item!r}")


def find_skill(module: types.ModuleType) -> LoadedSkill | None:
    """The skill the SDK's decorator registered in ``module``, if any."""
    found = vars(module)
    handler: Any = found.get("SkillHandler")
    stream: Any = found.get("MessageStream")
    if isinstance(handler, type) and hasattr(handler, "metadata"):
        run = _closure(vars(handler)["run"])
        meta = _closure(vars(handler)["metadata"])["metadata"]
        return LoadedSkill("skill", run["func"], run["input_model"], meta.description,
                           json.loads(meta.input_schema), json.loads(meta.output_schema))
    if isinstance(stream, type):
        run = _closure(vars(stream)["run"])
        model: type[BaseModel] = run["input_model"]
        return LoadedSkill("message_stream", run["func"], model, run["func"].__doc__,
                           model.model_json_schema(), None)
    return None
