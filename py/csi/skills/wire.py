"""The skill messages' bodies: the requests the registry takes (parsed once, by the worker's
envelope) and the replies it gives. No pharia-skill here: the worker imports this at boot."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, JsonValue, RootModel

from ..wire import Reply, Strict

Kind = Literal["skill", "message_stream"]
"""A ``@skill`` (run: one output) or a ``@message_stream`` (streamed: its events)."""

# ---- requests ------------------------------------------------------------------------------------


class SkillName(Strict):
    """``skills_metadata``, ``skills_remove``: the skill's name."""

    name: str


class SkillRegisterRequest(Strict):
    """``skills_register``: a skill's Python source, kept under ``name``."""

    name: str
    source: str
    time_limit_ms: float | None = None
    """How long the module may take to load (``None``: no limit)."""


class SkillRunRequest(Strict):
    """``skills_run``: run the skill ``name`` on ``input``."""

    name: str
    input: JsonValue = None
    time_limit_ms: float | None = None
    """How long the skill may run, from its start (``None``: no limit)."""
    namespace: str | None = None
    """The namespace it runs in: its tools are the page's and those of the namespace's MCP servers."""


class SkillStreamRequest(Strict):
    """``skills_stream``: run the ``@message_stream`` skill ``name`` on ``input``, pushing its events."""

    name: str
    input: JsonValue = None
    time_limit_ms: float | None = None
    """How long the skill may run, from its start (``None``: no limit)."""
    namespace: str | None = None
    """The namespace it runs in: its tools are the page's and those of the namespace's MCP servers."""


# ---- replies -------------------------------------------------------------------------------------


class SkillMetadata(Reply):
    """The seed's ``skill-metadata`` (schemas as JSON values), plus which kind of skill it is."""

    description: str | None
    input_schema: dict[str, JsonValue]
    output_schema: dict[str, JsonValue] | None
    """``None`` for a message stream (the SDK declares no schema for its end payload)."""
    kind: Kind


class SkillInfo(Reply):
    """``skills_register``: the skill registered, described."""

    name: str
    description: str | None
    input_schema: dict[str, JsonValue]
    output_schema: dict[str, JsonValue] | None
    kind: Kind


class SkillListing(Reply):
    """One skill of ``skills_list``: ``description`` and ``kind`` are null, ``error`` says why, when
    a stored skill no longer loads."""

    name: str
    description: str | None
    kind: Kind | None
    builtin: bool
    error: str | None


class SkillList(RootModel[list[SkillListing]]):
    """Every skill, by name."""


class SkillOutput(RootModel[JsonValue]):
    """What a ``@skill`` returned, as JSON."""


class MessageBeginEvent(Reply):
    type: Literal["message_begin"] = "message_begin"
    role: str | None


class MessageAppendEvent(Reply):
    type: Literal["message_append"] = "message_append"
    text: str


class MessageEndEvent(Reply):
    type: Literal["message_end"] = "message_end"
    payload: JsonValue
    """The skill's end payload as JSON."""


class SkillEvent(RootModel[Annotated[MessageBeginEvent | MessageAppendEvent | MessageEndEvent,
                                     Field(discriminator="type")]]):
    """One item a ``@message_stream`` skill wrote, as it wrote it."""
