"""A small Pharia-Kernel-like host for skill components, on wasmtime-py's component model.

WASI 0.2 comes from wasmtime (``Linker.add_wasip2``); the CSI interfaces (``pharia:skill/*``) are
defined from Python functions, looked up by interface and function name. A CSI function the test does
not provide is still defined (the component cannot be instantiated otherwise) and traps when called.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wasmtime import Engine, Store, WasiConfig
from wasmtime.component import (
    Component,
    ComponentInstanceType,
    FuncType,
    Instance,
    Linker,
    Record,
    ResourceAny,
    ResourceHost,
    ResourceType,
    Variant,
)

PACKAGE = "pharia:skill/"
_resource_ids = itertools.count(1)

CsiFunctions = Mapping[str, Mapping[str, Callable[..., Any]]]  # interface -> function name -> implementation


def record(**fields: Any) -> Record:
    """A WIT record value; a field's WIT name is kebab-case, so pass ``finish_reason`` for ``finish-reason``."""
    value = Record()
    for name, field_value in fields.items():
        setattr(value, name.replace("_", "-"), field_value)
    return value


def interface_name(qualified: str) -> str:
    """``pharia:skill/inference@0.3.11`` -> ``inference``."""
    return qualified.removeprefix(PACKAGE).split("@")[0]


class CsiNotProvided(Exception):
    """The skill called a CSI function this test's host does not implement."""


@dataclass
class HostResources:
    """Host-side state behind the resources the component holds handles to (rep -> object), and the
    host type id of each resource the CSI declares (by its WIT name, e.g. ``chat-stream``)."""

    type_ids: dict[str, int] = field(default_factory=dict)
    objects: dict[int, Any] = field(default_factory=dict)
    next_rep: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def own(self, obj: Any, resource: str) -> ResourceHost:
        rep = next(self.next_rep)
        self.objects[rep] = obj
        return ResourceHost.own(rep, self.type_ids[resource])

    def drop(self, _store: Any, rep: int) -> None:
        self.objects.pop(rep, None)

    def get(self, store: Any, handle: ResourceAny | ResourceHost) -> Any:
        """The object behind a handle a host function received. Every borrow a host function gets must go
        through here: turning it into a host handle is what releases it (wasmtime fails the call otherwise)."""
        host = handle if isinstance(handle, ResourceHost) else handle.to_host(store)
        return self.objects[host.rep]


class SkillComponent:
    """A skill component compiled by wasmtime: the names it imports and exports, and a way to run it."""

    def __init__(self, wasm: Path) -> None:
        self.engine = Engine()
        self.component = Component.from_file(self.engine, wasm)
        ty = self.component.type
        self._imports = ty.imports(self.engine)
        self.imports = sorted(self._imports)
        self.exports = sorted(ty.exports(self.engine))

    def instantiate(self, csi: Callable[[HostResources], CsiFunctions]) -> tuple[Store, Instance, HostResources]:
        """Link WASI and the CSI functions ``csi(resources)`` returns (``[interface][function]``, e.g.
        ``["inference"]["chat"]``), then instantiate. Every resource the CSI interfaces declare is defined."""
        linker = Linker(self.engine)
        linker.add_wasip2()
        resources = HostResources()
        functions = csi(resources)
        with linker.root() as root:
            for qualified, extern in self._imports.items():
                if not qualified.startswith(PACKAGE):
                    continue
                iface = interface_name(qualified)
                provided = functions.get(iface, {})
                items = extern.ty
                assert isinstance(items, ComponentInstanceType)
                with root.add_instance(qualified) as inst:
                    for name, item in items.exports(self.engine).items():
                        ty = item.ty
                        if isinstance(ty, ResourceType):
                            resources.type_ids[name] = next(_resource_ids)
                            inst.add_resource(name, ResourceType.host(resources.type_ids[name]), resources.drop)
                        elif isinstance(ty, FuncType):
                            inst.add_func(name, provided.get(name) or _missing(f"{iface}#{name}"))
        unknown = set(functions) - {interface_name(q) for q in self._imports if q.startswith(PACKAGE)}
        assert not unknown, f"the component imports no CSI interface named {sorted(unknown)}"
        store = Store(self.engine)
        store.set_wasi(WasiConfig())
        return store, linker.instantiate(store, self.component), resources

    @staticmethod
    def call(store: Store, instance: Instance, interface: str, function: str, *args: Any) -> Any:
        """Call an exported function of an exported interface (by its full name)."""
        index = instance.get_export_index(store, interface)
        assert index is not None, f"no export {interface}"
        func_index = instance.get_export_index(store, function, index)
        assert func_index is not None, f"{interface} exports no {function}"
        func = instance.get_func(store, func_index)
        assert func is not None
        result = func(store, *args)
        func.post_return(store)
        return result


def _missing(name: str) -> Callable[..., Any]:
    def trap(_store: Any, *_args: Any) -> Any:
        raise CsiNotProvided(f"{name} is not provided by this test host")

    return trap


@dataclass
class ScriptedChat:
    """``inference`` functions that answer every chat, streamed or not, with ``reply``; the requests the
    skill sent are kept in ``requests`` (``model``, ``messages`` as (role, content), ``max_tokens``)."""

    reply: str
    requests: list[dict[str, Any]] = field(default_factory=list)

    def functions(self, resources: HostResources) -> dict[str, Callable[..., Any]]:
        """The ``inference`` functions: ``chat``, and the ``chat-stream`` resource's constructor and ``next``."""
        return {
            "chat": self._chat,
            "[constructor]chat-stream": lambda _store, init: resources.own(self._events(init), "chat-stream"),
            "[method]chat-stream.next": lambda store, handle: next(resources.get(store, handle), None),
        }

    def _keep(self, request: Any) -> None:
        self.requests.append({"model": request.model,
                              "messages": [(m.role, m.content) for m in request.messages],
                              "max_tokens": getattr(request.params, "max-tokens")})

    def _usage(self) -> Record:
        return record(prompt=7, completion=len(self.reply.split()))

    def _chat(self, _store: Any, requests: list[Any]) -> list[Record]:
        out = []
        for request in requests:
            self._keep(request)
            out.append(record(message=record(role="assistant", content=self.reply), finish_reason="stop",
                              logprobs=[], usage=self._usage()))
        return out

    def _events(self, init: Any) -> Any:
        self._keep(init)
        yield Variant("message-begin", "assistant")
        for piece in _pieces(self.reply):
            yield Variant("message-append", record(content=piece, logprobs=[]))
        yield Variant("message-end", "stop")
        yield Variant("usage", self._usage())


def _pieces(text: str) -> list[str]:
    """``text`` cut after each space, the way a tokenizer streams it."""
    words = text.split(" ")
    return [w + " " for w in words[:-1]] + [words[-1]]


@dataclass
class StreamRecorder:
    """The host side of ``streaming-output``: what a streaming skill writes, as ("begin", role),
    ("append", text) and ("end", payload bytes or None), in order."""

    items: list[tuple[str, Any]] = field(default_factory=list)
    resources: HostResources = field(default_factory=HostResources)

    def functions(self, resources: HostResources) -> dict[str, Callable[..., Any]]:
        self.resources = resources
        return {"[method]stream-output.write": self._write}

    def _write(self, store: Any, handle: Any, item: Any) -> None:
        self.resources.get(store, handle)  # releases the borrow of the output
        # message-item's cases have payloads of distinct Python types, so wasmtime-py lifts it untagged
        if isinstance(item, Record):
            self.items.append(("begin", vars(item)["role"]))
        elif isinstance(item, str):
            self.items.append(("append", item))
        else:
            self.items.append(("end", item))
