"""Where a BFCL multi-turn oracle episode's CPU goes in the run's process, piece by piece (not a test).

Runs the first ``--per-category`` entries of each of ``--categories`` as ``evals run`` runs them in one
process (memory transport, one worker, ``--concurrency``, scoring included) with a timer around each
piece of the live episode path: this process's CPU (``time.process_time``) from a piece's start to its
end, summed over the run, per episode. At concurrency 1 a piece's time is its own (an awaited piece at
a higher concurrency also counts the other episodes' work done meanwhile); nested pieces are counted in
their parents too. The cyclic collector's passes are timed by ``gc.callbacks``; ``os.fsync`` by the
CPU of the thread that runs it. The holder processes' CPU is not in this table: ``bench_bfcl_isolation.py``
reads it.

    EVALS_DATA_DIR=... PYTHONPATH=. python bench/bench_bfcl_episode_pieces.py [--per-category 25] [--concurrency 1]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import functools
import gc
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CATEGORIES = ["multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context"]

_cpu: dict[str, float] = collections.defaultdict(float)
_calls: collections.Counter[str] = collections.Counter()


def _count(label: str, seconds: float) -> None:
    _cpu[label] += seconds
    _calls[label] += 1


def _timed(owner: Any, name: str, label: str) -> None:
    """Time ``owner.name`` (a function, a coroutine function or an async context manager's opener)."""
    f = getattr(owner, name)
    if asyncio.iscoroutinefunction(f):
        @functools.wraps(f)
        async def timed_async(*a: Any, **k: Any) -> Any:
            c = time.process_time()
            try:
                return await f(*a, **k)
            finally:
                _count(label, time.process_time() - c)
        setattr(owner, name, timed_async)
        return

    @functools.wraps(f)
    def timed(*a: Any, **k: Any) -> Any:
        c = time.process_time()
        try:
            return f(*a, **k)
        finally:
            _count(label, time.process_time() - c)
    setattr(owner, name, timed)


def _timed_session(owner: Any, name: str) -> None:
    """Time an async context manager's opening and closing apart."""
    f: Callable[..., Any] = getattr(owner, name)

    @contextlib.asynccontextmanager
    async def timed(*a: Any, **k: Any) -> AsyncIterator[Any]:
        c = time.process_time()
        cm = f(*a, **k)
        value = await cm.__aenter__()
        _count("MCP session: open", time.process_time() - c)
        try:
            yield value
        finally:
            c = time.process_time()
            await cm.__aexit__(None, None, None)
            _count("MCP session: close", time.process_time() - c)
    setattr(owner, name, timed)


def _instrument() -> None:
    import mcp.client.client as sdk_client

    import client.agent as agent
    import client.runner as runner
    import evals.benchmarks.bfcl.backend_host as host
    import evals.core.transport as transport
    import server.core as server_core
    from client._runs import recorder, rundir
    from evals.benchmarks.bfcl import multi_turn_episode

    _timed(multi_turn_episode, "run_multi_turn", "the episode (run_multi_turn)")
    _timed(sdk_client.Client, "call_tool", "tool call: the SDK's call_tool (all below it)")
    _timed(server_core.ToolServer, "call", "tool call: the server's call (validation, executor)")
    _timed(host.Holder, "arequest", "tool call: the holder's round trip (this side)")
    _timed(sdk_client.Client, "list_tools", "MCP session: list_tools")
    _timed_session(transport.MemorySessions, "session")
    _timed(server_core.ToolServer, "mcp_server", "MCP session: a low-level server made")
    _timed(sdk_client.Client, "__aenter__", "MCP session: the SDK client entered")
    _timed(host._Zygote, "spawn", "holder: a process forked (this side)")
    _timed(agent, "model_step", "model step (oracle, Model, recorder)")
    _timed(recorder.EpisodeRecorder, "model_request", "recorder: model_request")
    _timed(recorder.EpisodeRecorder, "model_response", "recorder: model_response")
    _timed(recorder.EpisodeRecorder, "tool_call", "recorder: tool_call")
    _timed(recorder.EpisodeRecorder, "build_record", "trace: build_record")
    _timed(rundir.RunDir, "append_trace", "trace: append_trace")
    _timed(rundir.RunDir, "sync_traces", "trace: sync_traces (awaits the fsync thread)")
    _timed(runner._Runner, "score", "progress score (the verdict, this side)")

    fsync = os.fsync

    def timed_fsync(fd: Any) -> None:
        c = time.thread_time()
        try:
            fsync(fd)
        finally:
            _count("trace: os.fsync (its thread's CPU)", time.thread_time() - c)
    os.fsync = timed_fsync

    started: list[float] = []

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started.append(time.process_time())
        elif started:
            _count(f"cyclic collector: generation {info['generation']}", time.process_time() - started.pop())
    gc.callbacks.append(on_gc)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-category", type=int, default=25, help="entries per category (default 25)")
    ap.add_argument("--concurrency", type=int, default=1, help="episodes in flight (default 1: each piece its own)")
    ap.add_argument("--categories", nargs="+", default=CATEGORIES)
    args = ap.parse_args()
    c0 = time.process_time()
    from evals.core.run import RunOptions, run_benchmark

    _instrument()
    imported = time.process_time() - c0
    with tempfile.TemporaryDirectory() as tmp:
        opts = RunOptions(benchmark="bfcl", model="oracle", run_dir=Path(tmp) / "run", transport="memory",
                          concurrency=args.concurrency, workers=1, progress=False,
                          benchmark_options={"category": args.categories, "limit_per_category": args.per_category})
        c = time.process_time()
        _, summary = asyncio.run(run_benchmark(opts))
        run = time.process_time() - c
    episodes = int(summary["completed"])
    print(f"{episodes} episodes ({', '.join(args.categories)}; concurrency {args.concurrency}): importing the run's "
          f"code {imported * 1000:.0f} ms, the run {run * 1000:.0f} ms of this process's CPU, "
          f"{run / episodes * 1000:.2f} ms an episode\n")
    print("| piece | CPU ms per episode | times per episode | CPU µs each |")
    print("|---|---:|---:|---:|")
    for label, seconds in sorted(_cpu.items(), key=lambda kv: -kv[1]):
        n = _calls[label]
        print(f"| {label} | {seconds / episodes * 1000:.2f} | {n / episodes:.1f} | {seconds / n * 1e6:.0f} |")


if __name__ == "__main__":
    main()
