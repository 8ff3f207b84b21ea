"""The page's tools, over worker/page_tools.js: each call is posted to the page as ``tool_call``
and its promise settles from the page's ``tool_result``."""

from __future__ import annotations

import asyncio
import itertools
from json import dumps, loads
from typing import Any

from pyodide.ffi import JsException

from ...errors import ToolFailed


class PyodidePageTools:
    """A ``PageCall`` over the worker's ``PageTools`` (which keeps the calls the page has not answered)."""

    def __init__(self, tools: Any) -> None:
        self._js = tools
        self._ids = itertools.count(1)

    async def __call__(self, name: str, arguments: dict[str, Any]) -> Any:
        call = next(self._ids)
        promise = self._js.call(call, name, dumps(arguments, allow_nan=False))  # ASCII: lone surrogates cross too
        try:
            text = await promise
        except JsException as exc:
            raise ToolFailed(str(exc.message)) from None
        except asyncio.CancelledError:
            self._js.cancel(call)  # the page's AbortSignal aborts; its answer will be dropped
            raise
        return loads(text)
