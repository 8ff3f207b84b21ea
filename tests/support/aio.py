"""Running coroutines from synchronous tests."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any


def run_async(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine to completion in a thread of its own: once a browser test has started
    Playwright's sync API, this thread's event loop belongs to Playwright."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()
