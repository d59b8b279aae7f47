"""The evaluation harness's own cost (not a test): episodes/s with a scripted model of fixed latency.

The model is the oracle with a fixed think time per turn (``oracle:0.2`` = 200 ms, the issue's
setting; ``--latency 1.0`` is closer to a hosted model's short tool-calling turn). Everything else is
what ``evals run`` does: the MCP server on 127.0.0.1 reached over HTTP (on the run's own event loop,
or with ``--server-process`` in a child process), one MCP session per episode, traces fsync'd per
episode.

"Model alone" is what a harness that costs nothing would reach with the same tasks, turns and
concurrency: each episode takes ``turns x latency`` (turns read from its trace; FamilyTool: the KG
look-ups, then the gold call) and ``concurrency`` workers take the next task as soon as they are
free, so a run of N episodes needs at least ``ceil(N / concurrency)`` rounds. The ratio is
measured/ideal (the issue's target: >= 0.90 at concurrency 64).

CPU columns, per episode, while the episodes ran (no start-up, no summary): ``client`` is this
process (with the in-process server, the server too); ``server`` is the server's child process and
its descendants (``--server-process`` only, read from ``/proc``). Their sum is the harness's own
cost, which does not depend on the latency: with ``C`` cores, no harness layout can go faster than
``C / (cpu per episode)`` episodes/s, and a single event loop no faster than ``1 / (its cpu per
episode)`` — the ``cpu bound/s`` column (the busier process's bound).

Each row is the median of ``--repeats`` runs (the machine may be shared and noisy).

    EVALS_DATA_DIR=../shared/data python bench/bench_harness.py [--latency 0.2] [--concurrency 1 8 64] \\
        [--limit N] [--c1-limit 20] [--repeats 3] [--server-process]
"""

from __future__ import annotations

import argparse
import heapq
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import evals.core.run as pipeline  # noqa: E402
from client import eventloop  # noqa: E402
from client.mcp_session import connect  # noqa: E402
from client.runs import RunDir  # noqa: E402
from evals.core.run import RunOptions, run_benchmark  # noqa: E402

_episodes_cpu: list[tuple[float, float]] = []
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def descendants_cpu(root: int) -> float:
    """CPU seconds (user + system) of ``root``'s living descendants, from ``/proc`` (0 elsewhere)."""
    parent: dict[int, int] = {}
    used: dict[int, float] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        pid = int(entry.name)
        parent[pid] = int(fields[1])
        used[pid] = (int(fields[11]) + int(fields[12])) / _TICK
    total = 0.0
    for pid, seconds in used.items():
        p, seen = parent.get(pid), 0
        while p is not None and p != root and seen < 64:
            p, seen = parent.get(p), seen + 1
        if p == root:
            total += seconds
    return total


async def _timed_run_episodes(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
    """``run_episodes`` with its CPU time noted (the episodes only: no server start, no summary)."""
    me = os.getpid()
    cpu0, child0 = time.process_time(), descendants_cpu(me)
    try:
        return await _run_episodes(*args, **kwargs)
    finally:
        _episodes_cpu.append((time.process_time() - cpu0, descendants_cpu(me) - child0))


_run_episodes = pipeline.run_episodes
pipeline.run_episodes = _timed_run_episodes


def model_alone_wall(turns: list[int], concurrency: int, latency: float) -> float:
    """Seconds a zero-cost harness needs: ``concurrency`` workers, tasks taken in order when free."""
    free = [0.0] * min(concurrency, len(turns))
    for n in turns:
        start = heapq.heappop(free)
        heapq.heappush(free, start + n * latency)
    return max(free) if free else 0.0


async def one(concurrency: int, limit: int | None, latency: float, root: Path, server_process: bool) -> dict:
    run_path = root / f"c{concurrency}-{time.monotonic_ns()}"
    opts = RunOptions(
        benchmark="familytool-b", model=f"oracle:{latency}", limit=limit, concurrency=concurrency,
        run_dir=run_path, progress=False, server_process=server_process,
    )
    result, summary = await run_benchmark(opts)
    cpu, server_cpu = _episodes_cpu.pop()
    assert summary["completed"] == summary["tasks"], summary
    assert summary["metrics"]["tool_em"] == 100.0, summary["metrics"]
    traces = RunDir(run_path).latest_traces()
    order = sorted(traces.values(), key=lambda t: t["started_at"])
    turns = [int(t["totals"]["turns"]) for t in order]
    episodes = result.completed
    ideal_wall = model_alone_wall(turns, concurrency, latency)
    busiest = max(cpu, server_cpu) / episodes
    return {
        "episodes": episodes, "wall": result.wall_s, "rate": episodes / result.wall_s,
        "ideal": episodes / ideal_wall, "ratio": ideal_wall / result.wall_s,
        "cpu_ms": 1000 * cpu / episodes, "server_ms": 1000 * server_cpu / episodes,
        "bound": 1 / busiest if busiest else float("inf"), "turns": statistics.mean(turns),
    }


async def sdk_floor(concurrency: int, sessions: int) -> tuple[float, float]:
    """Client CPU ms per bare MCP session (connect, list tools, the task's first KG look-up and its
    gold call, close) with nothing else of the harness: no model, no traces. The server runs in a
    child process, so only the client's side is counted. Returns (ms/session, sessions/s)."""
    import asyncio

    from client.mcp_session import HTTPClientPool, list_all_tools
    from evals.benchmarks.familytool.metrics import gold_paths
    from evals.core.registry import load_benchmark
    from evals.core.server_process import serve_in_subprocess

    plugin = load_benchmark("familytool-b")
    tasks = [plugin.catalog.task(t) for t in plugin.task_ids()][:sessions]
    opts = RunOptions(benchmark="familytool-b", model="oracle", strategy="agent")
    async with serve_in_subprocess(opts) as base, HTTPClientPool() as pool:
        async def session(task) -> None:  # noqa: ANN001
            path = gold_paths(task.gold_kg)[0]
            gold = task.gold_calls[0]
            async with pool.borrow() as http, connect(f"{base}/mcp/familytool-b/{task.id}", http_client=http,
                                                      discovery_key=base) as client:
                await list_all_tools(client)
                await client.call_tool("kg_search_path", {"start": path[0][0], "path": [t[1] for t in path]})
                res = await client.call_tool(gold.name, gold.arguments)
                assert not res.is_error, res

        queue = list(reversed(tasks))

        async def worker() -> None:
            while queue:
                await session(queue.pop())

        cpu0, t0 = time.process_time(), time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
    return 1000 * cpu / len(tasks), len(tasks) / wall


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 64])
    ap.add_argument("--latency", type=float, default=0.2, help="model think time per turn, seconds (default 0.2)")
    ap.add_argument("--limit", type=int, help="tasks per run (default: all 483)")
    ap.add_argument("--c1-limit", type=int, default=20, help="tasks for concurrency 1 (0 = --limit)")
    ap.add_argument("--repeats", type=int, default=3, help="runs per concurrency; the table shows medians")
    ap.add_argument("--server-process", action="store_true", help="the server in a child process (evals run --server-process)")
    ap.add_argument("--sdk-floor", action="store_true",
                    help="also measure bare MCP sessions (the SDK's own client cost, no harness) at the largest concurrency")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for c in args.concurrency:
            limit = (args.c1_limit or args.limit) if c == 1 else args.limit
            runs = [await one(c, limit, args.latency, Path(tmp), args.server_process) for _ in range(args.repeats)]
            med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            rows.append((c, med, [r["ratio"] for r in runs]))
    layout = "server in a child process" if args.server_process else "server on the run's event loop"
    table = Table(
        title=f"harness throughput, scripted model {args.latency * 1000:.0f} ms/turn, {layout}, "
        f"{eventloop.loop_name()}, {os.cpu_count()} CPUs, median of {args.repeats}"
    )
    for col in ("concurrency", "episodes", "turns/ep", "wall s", "episodes/s", "model alone/s", "ratio", "ratios",
                "client cpu ms/ep", "server cpu ms/ep", "cpu bound/s"):
        table.add_column(col, justify="right")
    for c, r, ratios in rows:
        table.add_row(
            str(c), str(int(r["episodes"])), f"{r['turns']:.2f}", f"{r['wall']:.1f}", f"{r['rate']:.1f}",
            f"{r['ideal']:.1f}", f"{r['ratio']:.2f}", " ".join(f"{x:.2f}" for x in ratios), f"{r['cpu_ms']:.1f}",
            f"{r['server_ms']:.1f}" if args.server_process else "-", f"{r['bound']:.0f}",
        )
    Console(width=200).print(table)
    if args.sdk_floor:
        c = max(args.concurrency)
        ms, rate = await sdk_floor(c, args.limit or 483)
        print(f"bare MCP sessions (connect, list tools, 2 calls, close), concurrency {c}: "
              f"client CPU {ms:.1f} ms/session, {rate:.0f} sessions/s (server in a child process)")


if __name__ == "__main__":
    eventloop.run(main())
