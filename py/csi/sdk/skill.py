"""``@skill``: a typed function ``(csi, input) -> output`` becomes a seed-001 skill handler.

The handler's ``run`` takes JSON bytes and returns JSON bytes; ``metadata`` gives the docstring and
the JSON schemas of the input and output types. A decorated function can still be called directly,
``my_skill(csi, Input(...))``, which is how skills are tested with pytest.
"""

from __future__ import annotations

import inspect
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast, get_type_hints

from pydantic import BaseModel, TypeAdapter, ValidationError

from ..errors import InvalidInputError, SkillError, SkillInterrupt
from ..wire import field_path
from .csi import Csi

In = TypeVar("In", bound=BaseModel)
Out = TypeVar("Out")


@dataclass(frozen=True)
class SkillMetadata:
    """What a skill says about itself (seed 001 ``skill-metadata``; schemas as JSON values)."""

    description: str | None
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"description": self.description, "input_schema": self.input_schema,
                "output_schema": self.output_schema}


class Skill(Generic[In, Out]):
    """A skill: the decorated function plus the seed's ``run`` and ``metadata``."""

    def __init__(self, func: Callable[[Csi, In], Out]) -> None:
        params = list(inspect.signature(func).parameters.values())
        if len(params) != 2:
            raise TypeError(f"a skill takes exactly two arguments (csi, input); {func.__name__} takes {len(params)}")
        hints = get_type_hints(func)
        input_type = hints.get(params[1].name)
        if not (isinstance(input_type, type) and issubclass(input_type, BaseModel)):
            raise TypeError(f"the input of skill {func.__name__} must be annotated with a pydantic model")
        if "return" not in hints:
            raise TypeError(f"skill {func.__name__} needs a return type annotation")
        self.func = func
        self.name = func.__name__
        # get_type_hints only yields a runtime type; it is the annotation of func's input, i.e. In
        self.input_type: type[In] = cast("type[In]", input_type)
        self.output_type: Any = hints["return"]
        self._output = TypeAdapter(self.output_type)
        self.__doc__ = func.__doc__
        self.__wrapped__ = func

    def __call__(self, csi: Csi, input: In) -> Out:
        return self.func(csi, input)

    @property
    def description(self) -> str | None:
        """The skill function's docstring."""
        return inspect.getdoc(self.func)

    def metadata(self) -> SkillMetadata:
        """The docstring and the JSON schemas of the input and output types."""
        return SkillMetadata(self.description, self.input_type.model_json_schema(), self._output.json_schema())

    def run(self, csi: Csi, input: bytes | str) -> bytes:
        """Validate the JSON ``input``, run the skill, return its output as JSON bytes.

        Raises ``InvalidInputError`` (naming the field) when the input does not validate and
        ``SkillError`` (an ``InternalError``) with the traceback when the skill raises.
        """
        try:
            validated = self.input_type.model_validate_json(input)
        except ValidationError as exc:
            raise _invalid_input(exc) from None
        try:
            result = self.func(csi, validated)
            return self._output.dump_json(result)
        except SkillInterrupt as exc:  # raised by the runner, in the skill's code (skills.interrupts)
            raise SkillError(f"skill {self.name} was interrupted: {exc.reason}") from None
        except BaseException as exc:  # noqa: BLE001 - the skill's own, whatever it raised
            tb = traceback.format_exc()
            raise SkillError(f"skill {self.name} raised {type(exc).__name__}: {exc}\n{tb}") from None


def _invalid_input(exc: ValidationError) -> InvalidInputError:
    errors = exc.errors()
    first = errors[0]
    path = field_path(tuple(first["loc"]))
    lines = [f"`{field_path(tuple(e['loc'])) or '(input)'}`: {e['msg']}" for e in errors]
    return InvalidInputError("the input does not validate: " + "; ".join(lines), path or None)


def skill(func: Callable[[Csi, In], Out]) -> Skill[In, Out]:
    """Make ``func(csi: Csi, input: InputModel) -> Output`` a skill."""
    return Skill(func)
