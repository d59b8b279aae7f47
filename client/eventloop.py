"""Run a coroutine on the fastest event loop available: uvloop where it is installed.

The harness is event-loop bound at high concurrency (every MCP request is several tasks, streams
and socket callbacks); uvloop cuts the client's CPU per episode by about a tenth
(``bench/bench_harness.py``). ``EVALS_EVENT_LOOP=asyncio`` forces the standard loop.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["ENV", "loop_name", "run"]

T = TypeVar("T")

ENV = "EVALS_EVENT_LOOP"


def loop_name() -> str:
    """``"uvloop"`` or ``"asyncio"``: the loop :func:`run` will use."""
    choice = os.environ.get(ENV, "auto").strip().lower() or "auto"
    if choice not in ("auto", "uvloop", "asyncio"):
        raise ValueError(f"{ENV} must be auto, uvloop or asyncio, not {choice!r}")
    if choice == "asyncio":
        return "asyncio"
    try:
        import uvloop  # noqa: F401
    except ImportError:
        if choice == "uvloop":
            raise RuntimeError(f"{ENV}=uvloop but uvloop is not installed (pip install uvloop)") from None
        return "asyncio"
    return "uvloop"


def run(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)``, on uvloop unless :func:`loop_name` says otherwise."""
    if loop_name() == "uvloop":
        import uvloop

        return uvloop.run(coro)
    return asyncio.run(coro)
