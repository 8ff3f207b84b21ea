"""Skills registered from Python source at run time, kept by a ``SkillStore`` (IndexedDB in the
browser), plus the example skills that ship in ``csi.skills.examples``."""

from __future__ import annotations

import asyncio
import importlib
import itertools
import linecache
import re
import sys
import time
import traceback
import types
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from json import dumps, loads
from typing import TYPE_CHECKING, Any, TypeVar

from ..core.engine import Engine
from ..core.host import SkillHost
from ..core.scope import Scope
from ..errors import CsiError, InternalError, InvalidInputError, SkillError, SkillInterrupt, blame
from ..mcp.namespaces import check_namespace
from . import interrupts
from .imports import skill_imports
from .interrupts import SkillRun, run_marked
from .wire import (
    SkillEvent,
    SkillInfo,
    SkillList,
    SkillListing,
    SkillMetadata,
    SkillName,
    SkillOutput,
    SkillRegisterRequest,
    SkillRunRequest,
    SkillStreamRequest,
)

if TYPE_CHECKING:  # pharia-skill is loaded on first use (the worker fetches it then)
    from .engine_csi import EngineCsi
    from .loaded import LoadedSkill

T = TypeVar("T")

EXAMPLES = {
    "summarize": "csi.skills.examples.summarize",
    "reply-in-language": "csi.skills.examples.reply_in_language",
    "language-sections": "csi.skills.examples.language_sections",
    "search-answer": "csi.skills.examples.search_answer",
    "stream-answer": "csi.skills.examples.stream_answer",
}
_WRONG_KIND = {
    "skill": "skill {name} is a @message_stream skill: stream it (engine.skills.stream)",
    "message_stream": "skill {name} is a @skill, not a @message_stream skill: run it (engine.skills.run)",
}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")

MAX_SOURCE_CHARS = 1024 * 1024
MAX_TIME_LIMIT_MS = 24 * 3600 * 1000

# Runs a skill body (which needs a Csi) without blocking the engine's event loop.
SkillRunner = Callable[[Callable[["EngineCsi"], Any]], Awaitable[Any]]


def load_skill_source(name: str, source: str, run: SkillRun | None = None) -> LoadedSkill:
    """Execute ``source`` as a fresh module and return its one ``@skill`` or ``@message_stream``.

    Syntax errors, failing imports and anything else the module raises while loading come back as
    ``InvalidInputError`` (param ``source``) with the line number; so does a module still loading
    when ``run`` is due (its time limit).
    """
    filename = f"<skill {name}>"
    try:
        code = compile(source, filename, "exec", dont_inherit=True)  # not our __future__ imports
    except SyntaxError as exc:
        raise InvalidInputError(f"line {exc.lineno}: SyntaxError: {exc.msg}", "source") from None
    module_name = f"csi_user_skill_{re.sub(r'[^A-Za-z0-9_]', '_', name)}"
    module = types.ModuleType(module_name)
    module.__file__ = filename
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    previous = sys.modules.get(module_name)
    sys.modules[module_name] = module  # pydantic resolves the module's annotations through here
    try:
        if run is None:
            exec(code, module.__dict__)
        else:
            run_marked(run, lambda: exec(code, module.__dict__))
    except BaseException as exc:  # noqa: BLE001 - whatever the module raised, or its interruption
        if previous is not None:
            sys.modules[module_name] = previous
        else:
            del sys.modules[module_name]
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
        where = f"line {frames[-1].lineno}: " if frames else ""
        if isinstance(exc, SkillInterrupt):
            raise InvalidInputError(f"{where}the module was interrupted while loading: {exc.reason}",
                                    "source") from None
        raise InvalidInputError(f"{where}{type(exc).__name__}: {exc}", "source") from None
    from .loaded import find_skill  # noqa: PLC0415

    found = find_skill(module)
    if found is None:
        raise InvalidInputError("the source must define one function decorated with pharia_skill's @skill or "
                                "@message_stream; it defines none", "source")
    return found


@dataclass
class _Entry:
    skill: LoadedSkill | None
    builtin: bool
    error: str | None = None


class SkillRegistry:
    """Register, list, describe, run and remove skills; registrations outlive the page."""

    def __init__(self, store: SkillHost, runner: SkillRunner, engine: Engine) -> None:
        self.store = store
        self.runner = runner
        self.engine = engine
        self._entries: dict[str, _Entry] = {}
        self._loaded = False
        self._run_ids = itertools.count()

    @contextmanager
    def _running(self, name: str, time_limit_ms: float | None,
                 scope: Scope | None) -> Iterator[tuple[SkillRun, Scope]]:
        """A ``SkillRun`` for the call under way: its deadline set, its CSI calls aborted when it
        passes (they answer at once, and the skill is interrupted where it resumes)."""
        if time_limit_ms is not None and not 0 < time_limit_ms <= MAX_TIME_LIMIT_MS:
            raise InvalidInputError(f"`time_limit_ms` must be a number of milliseconds from 0 (excluded) to "
                                    f"{MAX_TIME_LIMIT_MS} (a day), or null for no limit", "time_limit_ms")
        given = scope or Scope()
        own = given.request_id is None  # outside the worker's envelope: an id of our own, for its CSI calls too
        request_id = f"skill-run-{next(self._run_ids)}" if given.request_id is None else given.request_id
        epoch = self.engine.interrupt_epoch if given.epoch is None else given.epoch
        scope = Scope(request_id, epoch, given.progress)
        limit_s = None if time_limit_ms is None else float(time_limit_ms) / 1000
        run = SkillRun(request_id, name, self.engine, epoch,
                       None if limit_s is None else time.monotonic() + limit_s, limit_s,
                       interrupts.page_interrupts())
        timer = None if limit_s is None else asyncio.get_running_loop().call_later(
            limit_s, self.engine.abort, request_id)
        try:
            yield run, scope
        finally:
            if timer is not None:
                timer.cancel()
            if own:
                self.engine.forget(request_id)

    async def _ensure_loaded(self) -> None:
        if self._loaded:
            return
        await self.store.load_packages(["pharia_skill"])
        from .loaded import find_skill  # noqa: PLC0415 - needs pharia-skill, loaded just now

        for name, module in EXAMPLES.items():
            self._entries[name] = _Entry(find_skill(importlib.import_module(module)), builtin=True)
        for name, source in (await self.store.stored_skills()).items():
            try:
                await self.store.load_packages(skill_imports(source))
                self._entries[name] = _Entry(load_skill_source(name, source), builtin=False)
            except CsiError as exc:  # kept visible, so it can be fixed or removed
                self._entries[name] = _Entry(None, builtin=False, error=exc.message)
        self._loaded = True

    def _get(self, name: str, kind: str | None = None) -> LoadedSkill:
        """The skill ``name`` (of this ``kind``, when given); ``InvalidInputError`` on ``name`` otherwise."""
        entry = self._entries.get(name)
        if entry is None:
            raise InvalidInputError(f"there is no skill named {name!r}", "name")
        if entry.skill is None:
            raise InvalidInputError(f"skill {name!r} failed to load: {entry.error}", "name")
        if kind is not None and entry.skill.kind != kind:
            raise InvalidInputError(_WRONG_KIND[kind].format(name=repr(name)), "name")
        return entry.skill

    async def register(self, r: SkillRegisterRequest, scope: Scope | None = None) -> SkillInfo:
        """Load ``r.source`` as skill ``r.name`` (replacing a registered one), store it, describe it."""
        await self._ensure_loaded()
        name, source = r.name, r.source
        if not _NAME.fullmatch(name):
            raise InvalidInputError("a skill name is 1-64 letters, digits, '-' or '_', starting with a letter "
                                    "or digit", "name")
        if name in EXAMPLES:
            raise InvalidInputError(f"{name!r} is the name of a built-in example skill", "name")
        if len(source) > MAX_SOURCE_CHARS:
            raise InvalidInputError(f"`source` has {len(source)} characters; a skill's source holds at most "
                                    f"{MAX_SOURCE_CHARS}", "source")
        await self.store.load_packages(skill_imports(source))
        with self._running(name, r.time_limit_ms, scope) as (run, _):
            skill = load_skill_source(name, source, run)
        await self.store.store_skill(name, source)
        self._entries[name] = _Entry(skill, builtin=False)
        return SkillInfo.model_validate({"name": name, **skill.metadata()})

    async def list(self) -> SkillList:
        """Every skill: name, description, whether it is built in, and a load error if any."""
        await self._ensure_loaded()
        return SkillList([SkillListing(name=name, description=e.skill.description if e.skill else None,
                                       kind=e.skill.kind if e.skill else None, builtin=e.builtin, error=e.error)
                          for name, e in sorted(self._entries.items())])

    async def metadata(self, r: SkillName) -> SkillMetadata:
        """The pharia:skill handler's ``metadata``: description and JSON schemas (as JSON values)."""
        await self._ensure_loaded()
        return SkillMetadata.model_validate(self._get(r.name).metadata())

    async def _call(self, skill: LoadedSkill, time_limit_ms: float | None, scope: Scope | None,
                    body: Callable[[EngineCsi], T], namespace: str | None = None) -> T:
        """Run ``body`` (the skill, given its CSI, whose tools are ``namespace``'s) under the call's
        time limit and scope; the streams it left open are closed when it ends. Errors come out typed."""
        if namespace is not None:
            check_namespace(namespace)
        try:
            with self._running(skill.name, time_limit_ms, scope) as (run, scoped), \
                    blame("input", only=(InvalidInputError,)):  # the input did not validate

                def marked(csi: EngineCsi) -> T:
                    own = csi.scoped(scoped, namespace)
                    try:
                        return run_marked(run, lambda: body(own))
                    finally:
                        own.close_streams()

                result: T = await self.runner(marked)
                return result
        except CsiError:
            raise
        except SkillInterrupt as exc:  # due before or after the skill's own code (input, output)
            raise SkillError(f"skill {skill.name} was interrupted: {exc.reason}") from None
        except Exception as exc:  # the runner itself failed
            raise InternalError(f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}") from None

    async def run(self, r: SkillRunRequest, scope: Scope | None = None) -> SkillOutput:
        """The pharia:skill handler's ``run`` with JSON values: the input is validated, the output returned as JSON.
        Past ``r.time_limit_ms`` (from when it starts) the skill is interrupted: ``SkillError``. The
        skill's CSI calls serve ``scope`` (cancelling it cancels them)."""
        await self._ensure_loaded()
        skill = self._get(r.name, "skill")
        data = dumps(r.input).encode()
        return SkillOutput(loads(await self._call(skill, r.time_limit_ms, scope, lambda csi: skill.run(csi, data),
                                                  r.namespace)))

    async def stream(self, r: SkillStreamRequest, scope: Scope | None = None) -> AsyncIterator[SkillEvent]:
        """Run a ``@message_stream`` skill: its ``message_begin`` / ``message_append`` /
        ``message_end`` events, each as the skill writes it. Errors (bad input, the skill raising,
        its time limit, a cancel) end the stream."""
        await self._ensure_loaded()
        skill = self._get(r.name, "message_stream")
        data = dumps(r.input).encode()
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[SkillEvent | None] = asyncio.Queue()

        def emit(event: SkillEvent) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, event)

        task = asyncio.ensure_future(self._call(skill, r.time_limit_ms, scope,
                                                lambda csi: skill.stream(csi, data, emit), r.namespace))
        task.add_done_callback(lambda _: loop.call_soon_threadsafe(queue.put_nowait, None))
        return self._events(queue, task, scope)

    async def _events(self, queue: asyncio.Queue[SkillEvent | None], task: asyncio.Future[None],
                      scope: Scope | None) -> AsyncIterator[SkillEvent]:
        try:
            while (event := await queue.get()) is not None:
                yield event
            task.result()
        finally:
            if not task.done():  # the reader went away: the skill's calls end, then the skill
                if scope is not None and scope.request_id is not None:
                    self.engine.abort(scope.request_id)
                task.cancel()

    async def remove(self, r: SkillName) -> None:
        """Forget a registered skill (built-in examples stay)."""
        await self._ensure_loaded()
        name = r.name
        entry = self._entries.get(name)
        if entry is None:
            raise InvalidInputError(f"there is no skill named {name!r}", "name")
        if entry.builtin:
            raise InvalidInputError(f"{name!r} is a built-in example skill and cannot be removed", "name")
        await self.store.delete_skill(name)
        del self._entries[name]
