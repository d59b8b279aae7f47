"""Run a coroutine on the fastest event loop available: uvloop where it is installed.

The harness is event-loop bound at high concurrency (every MCP request is several tasks, streams
and socket callbacks); uvloop cuts the client's CPU per episode by about a tenth
(``bench/bench_harness.py``). ``EVALS_EVENT_LOOP=asyncio`` forces the standard loop.

:func:`episode_gc` tunes the garbage collector while episodes run (``client.runner.run_episodes``).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

__all__ = ["ENV", "EPISODE_GC_YOUNG", "episode_gc", "loop_name", "name_asyncio", "run"]

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
    """``asyncio.run(coro)``, on uvloop unless :func:`loop_name` says otherwise.

    The coroutine runs with sniffio's ``current_async_library_cvar`` set to ``"asyncio"``, as
    ``anyio.run`` sets it: anyio (under the MCP SDK) asks sniffio which library is running on every
    cancel scope and task group, and without the variable sniffio looks up the current task each
    time (about 3% of a worker's CPU per episode, ``bench/bench_harness.py``).
    """
    if loop_name() == "uvloop":
        import uvloop

        return uvloop.run(_as_asyncio(coro))
    return asyncio.run(_as_asyncio(coro))


async def _as_asyncio(coro: Coroutine[Any, Any, T]) -> T:
    name_asyncio()
    return await coro


def name_asyncio() -> None:
    """Tell sniffio, in the current context, that asyncio runs it (see :func:`run`); tasks started
    from this context afterwards inherit it. For code on an event loop that :func:`run` did not
    start (a Ray actor's)."""
    try:
        import sniffio
    except ImportError:  # anyio then checks for a running loop itself
        return
    sniffio.current_async_library_cvar.set("asyncio")


EPISODE_GC_YOUNG = 10_000
"""The collector's youngest-generation threshold while episodes run (Python's default: 700)."""

_gc_depth = 0
_gc_saved: tuple[int, int, int] | None = None


@contextlib.contextmanager
def episode_gc(young: int = EPISODE_GC_YOUNG) -> Iterator[None]:
    """The cyclic garbage collector tuned for running many episodes, for the ``with`` block.

    With hundreds of thousands of long-lived objects in the process (benchmark data, tool catalogs,
    compiled schemas, the SDK's models), every full collection walks all of them, and the episodes'
    short-lived objects trigger many: about 1.5 ms of CPU per episode at concurrency 64 on the
    2-core machine (``bench/bench_harness.py``). Inside the block the objects that exist when it is
    entered are frozen (:func:`gc.freeze`: kept out of every collection) and the youngest
    generation is collected every ``young`` allocations instead of 700; on exit both are undone
    (frozen objects become collectable again). Garbage is still collected inside the block, only
    less often; nothing else changes. Nested or concurrent blocks act once, at the outermost.
    """
    global _gc_depth, _gc_saved
    if _gc_depth == 0:
        _gc_saved = gc.get_threshold()
        gc.freeze()
        gc.set_threshold(max(young, _gc_saved[0]), _gc_saved[1], _gc_saved[2])
    _gc_depth += 1
    try:
        yield
    finally:
        _gc_depth -= 1
        if _gc_depth == 0 and _gc_saved is not None:
            gc.set_threshold(*_gc_saved)
            gc.unfreeze()
            _gc_saved = None
