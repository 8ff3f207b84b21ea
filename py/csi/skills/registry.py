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
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from json import dumps, loads
from typing import Any

from ..core.engine import Engine
from ..core.host import SkillHost
from ..core.scope import Scope
from ..errors import CsiError, InternalError, InvalidInputError, SkillError, SkillInterrupt, blame
from ..sdk.skill import Skill
from . import interrupts
from .engine_csi import EngineCsi
from .imports import skill_imports
from .interrupts import SkillRun, run_marked

EXAMPLES = {
    "summarize": "csi.skills.examples.summarize",
    "reply-in-language": "csi.skills.examples.reply_in_language",
    "language-sections": "csi.skills.examples.language_sections",
    "search-answer": "csi.skills.examples.search_answer",
}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")

MAX_SOURCE_CHARS = 1024 * 1024
MAX_TIME_LIMIT_MS = 24 * 3600 * 1000

# Runs a skill body (which needs a Csi) without blocking the engine's event loop.
SkillRunner = Callable[[Callable[[EngineCsi], bytes]], Awaitable[bytes]]


def load_skill_source(name: str, source: str, run: SkillRun | None = None) -> Skill[Any, Any]:
    """Execute ``source`` as a fresh module and return its one ``@skill``.

    Syntax errors, failing imports and anything else the module raises while loading come back as
    ``InvalidInputError`` (param ``source``) with the line number; so does a module still loading
    when ``run`` is due (its time limit).
    """
    filename = f"<skill {name}>"
    try:
        code = compile(source, filename, "exec")
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
    found = [v for v in vars(module).values() if isinstance(v, Skill)]
    if len(found) != 1:
        raise InvalidInputError(f"the source must define exactly one @skill; it defines {len(found)}", "source")
    return found[0]


@dataclass
class _Entry:
    skill: Skill[Any, Any] | None
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
    def _running(self, name: str, time_limit_ms: Any, scope: Scope | None) -> Iterator[tuple[SkillRun, Scope]]:
        """A ``SkillRun`` for the call under way: its deadline set, its CSI calls aborted when it
        passes (they answer at once, and the skill is interrupted where it resumes)."""
        if time_limit_ms is not None and (
                isinstance(time_limit_ms, bool) or not isinstance(time_limit_ms, int | float)
                or not 0 < time_limit_ms <= MAX_TIME_LIMIT_MS):
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
        for name, module in EXAMPLES.items():
            found = [v for v in vars(importlib.import_module(module)).values() if isinstance(v, Skill)]
            self._entries[name] = _Entry(found[0], builtin=True)
        for name, source in (await self.store.stored_skills()).items():
            try:
                await self.store.load_packages(skill_imports(source))
                self._entries[name] = _Entry(load_skill_source(name, source), builtin=False)
            except CsiError as exc:  # kept visible, so it can be fixed or removed
                self._entries[name] = _Entry(None, builtin=False, error=exc.message)
        self._loaded = True

    def _get(self, name: Any) -> Skill[Any, Any]:
        entry = self._entries.get(name) if isinstance(name, str) else None
        if entry is None:
            raise InvalidInputError(f"there is no skill named {name!r}", "name")
        if entry.skill is None:
            raise InvalidInputError(f"skill {name!r} failed to load: {entry.error}", "name")
        return entry.skill

    async def register(self, name: Any, source: Any, time_limit_ms: Any = None,
                       scope: Scope | None = None) -> dict[str, Any]:
        """Load ``source`` as skill ``name`` (replacing a registered one), store it, describe it."""
        await self._ensure_loaded()
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise InvalidInputError("a skill name is 1-64 letters, digits, '-' or '_', starting with a letter "
                                    "or digit", "name")
        if name in EXAMPLES:
            raise InvalidInputError(f"{name!r} is the name of a built-in example skill", "name")
        if not isinstance(source, str):
            raise InvalidInputError("`source` must be Python source text", "source")
        if len(source) > MAX_SOURCE_CHARS:
            raise InvalidInputError(f"`source` has {len(source)} characters; a skill's source holds at most "
                                    f"{MAX_SOURCE_CHARS}", "source")
        await self.store.load_packages(skill_imports(source))
        with self._running(name, time_limit_ms, scope) as (run, _):
            skill = load_skill_source(name, source, run)
        await self.store.store_skill(name, source)
        self._entries[name] = _Entry(skill, builtin=False)
        return {"name": name, **skill.metadata().to_dict()}

    async def list(self) -> list[dict[str, Any]]:
        """Every skill: name, description, whether it is built in, and a load error if any."""
        await self._ensure_loaded()
        return [{"name": name, "description": e.skill.description if e.skill else None,
                 "builtin": e.builtin, "error": e.error} for name, e in sorted(self._entries.items())]

    async def metadata(self, name: Any) -> dict[str, Any]:
        """Seed 001 ``metadata``: description and JSON schemas (as JSON values)."""
        await self._ensure_loaded()
        return self._get(name).metadata().to_dict()

    async def run(self, name: Any, input: Any, time_limit_ms: Any = None, scope: Scope | None = None) -> Any:
        """Seed 001 ``run`` with JSON values: the input is validated, the output returned as JSON.
        Past ``time_limit_ms`` (from when it starts) the skill is interrupted: ``SkillError``. The
        skill's CSI calls serve ``scope`` (cancelling it cancels them)."""
        await self._ensure_loaded()
        skill = self._get(name)
        try:
            data = dumps(input).encode()
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"the input is not JSON: {exc}", "input") from None
        try:
            with self._running(skill.name, time_limit_ms, scope) as (run, scoped), \
                    blame("input", only=(InvalidInputError,)):  # the input did not validate
                out = await self.runner(lambda csi: run_marked(run, lambda: skill.run(csi.scoped(scoped), data)))
        except CsiError:
            raise
        except SkillInterrupt as exc:  # due before or after the skill's own code (input, output)
            raise SkillError(f"skill {skill.name} was interrupted: {exc.reason}") from None
        except Exception as exc:  # the runner itself failed
            raise InternalError(f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}") from None
        return loads(out)

    async def remove(self, name: Any) -> None:
        """Forget a registered skill (built-in examples stay)."""
        await self._ensure_loaded()
        entry = self._entries.get(name) if isinstance(name, str) else None
        if entry is None:
            raise InvalidInputError(f"there is no skill named {name!r}", "name")
        if entry.builtin:
            raise InvalidInputError(f"{name!r} is a built-in example skill and cannot be removed", "name")
        await self.store.delete_skill(name)
        del self._entries[name]
