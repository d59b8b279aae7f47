"""The evaluation harness's own cost (not a test): episodes/s with a scripted model of fixed latency.

The model is the oracle with a fixed think time per turn (``oracle:0.2`` = 200 ms, the issue's
setting; ``--latency 1.0`` is closer to a hosted model's short tool-calling turn). Everything else is
what ``evals run`` does: one MCP session per episode, traces fsync'd per episode. Layouts
(``--layouts``; each a set of rows):

* ``default``: what ``evals run`` does without layout flags: sessions over the MCP SDK's in-process
  transport (``--transport memory``) and ``--workers auto`` (one worker process per 32 concurrent
  episodes, at most one per CPU; one process up to concurrency 32); the workers start while the
  parent prepares the run directory;
* ``memory``: one process, the in-process transport to the run's own server;
* ``http``: one process; the server on the run's event loop, on 127.0.0.1, over HTTP
  (``--transport http``);
* ``workers-memory`` / ``workers-http``: ``--workers N`` (``--workers`` here, default: the CPU
  count) worker processes, each with its own server, over that transport; the parent keeps the run
  directory, progress, limits;
* ``ray``: the same N workers as Ray actors (``--executor ray``) on a local Ray head that each run
  starts (not timed: only the episodes are), over the memory transport; the actors are descendants
  of this process, so their CPU counts under ``children``, with Ray's own processes.

"Model alone" is what a harness that costs nothing would reach with the same tasks, turns and
concurrency: each episode takes ``turns x latency`` (turns read from its trace; FamilyTool: the KG
look-ups, then the gold call) and ``concurrency`` workers take the next task as soon as they are
free, so a run of N episodes needs at least ``ceil(N / concurrency)`` rounds. The ratio is
measured/ideal (the issue's target: >= 0.90 at concurrency 64).

CPU columns, per episode, while the episodes ran (no start-up, no summary): ``client`` is this
process (with the in-process server, the server too); ``children`` is this process's child
processes (the workers), read from ``/proc``. Their sum is the harness's own
cost, which does not depend on the latency: with ``C`` cores, no harness layout can go faster than
``C / (cpu per episode)`` episodes/s, and a single event loop no faster than ``1 / (its cpu per
episode)`` — the ``cpu bound/s`` column (the tighter of this process's bound and the children's,
``processes / their cpu per episode``; not counting that the machine has only so many cores).

With ``--json`` the last line is one JSON object: ``rows`` (every row: layout, concurrency, medians,
the ratio of each repeat), ``default_layout`` and ``ratio``, the default layout's median ratio at the
highest concurrency asked for (``null`` if that layout was not run).

``ratio`` covers the episodes only; ``command ratio`` is the same ideal over the whole
``run_benchmark`` call (``evals run`` less the interpreter's start-up and imports): loading the
benchmark, starting the server or workers, preparing the run directory, the episodes, scoring.

Each row is the median of ``--repeats`` runs, the repetitions interleaved across layouts (the
machine may be shared and noisy: compare rows of one run).

    EVALS_DATA_DIR=../shared/data python bench/bench_harness.py [--latency 0.2] [--concurrency 1 8 64] \\
        [--limit N] [--c1-limit 20] [--repeats 3] [--layouts memory http workers-memory] [--json]
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, cast

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import client.runner as client_runner  # noqa: E402
from client import eventloop  # noqa: E402
from client.mcp_session import connect  # noqa: E402
from client.runner import RunResult  # noqa: E402
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


async def _timed_run_episodes(*args: Any, **kwargs: Any) -> RunResult:
    """``run_episodes`` with its CPU time noted (the episodes only: no server start, no summary)."""
    me = os.getpid()
    cpu0, child0 = time.process_time(), descendants_cpu(me)
    try:
        return await _run_episodes(*args, **kwargs)
    finally:
        _episodes_cpu.append((time.process_time() - cpu0, descendants_cpu(me) - child0))


_run_episodes = client_runner.run_episodes
client_runner.run_episodes = _timed_run_episodes  # run_benchmark looks it up on client.runner when it runs


def model_alone_wall(turns: list[int], concurrency: int, latency: float) -> float:
    """Seconds a zero-cost harness needs: ``concurrency`` workers, tasks taken in order when free."""
    free = [0.0] * min(concurrency, len(turns))
    for n in turns:
        start = heapq.heappop(free)
        heapq.heappush(free, start + n * latency)
    return max(free) if free else 0.0


LAYOUTS: dict[str, dict[str, Any]] = {  # layout -> RunOptions settings
    "default": {},  # what `evals run` does without layout flags: memory, --workers auto
    "memory": {"transport": "memory", "workers": 1},
    "http": {"transport": "http", "workers": 1},
    "workers-memory": {"transport": "memory", "workers": None},  # None: --workers
    "workers-http": {"transport": "http", "workers": None},
    "ray": {"transport": "memory", "workers": None, "executor": "ray"},  # the workers as Ray actors, local head
}
DEFAULT_LAYOUT = "default"


async def one(concurrency: int, limit: int | None, latency: float, root: Path, layout: str, workers: int) -> dict[str, Any]:
    run_path = root / f"{layout}-c{concurrency}-{time.monotonic_ns()}"
    settings: dict[str, Any] = {k: (workers if v is None else v) for k, v in LAYOUTS[layout].items()}
    opts = RunOptions(
        benchmark="familytool-b", model=f"oracle:{latency}", limit=limit, concurrency=concurrency,
        run_dir=run_path, progress=False, **settings,
    )
    t0 = time.perf_counter()
    result, summary = await run_benchmark(opts)
    command_wall = time.perf_counter() - t0
    run_dir = RunDir(run_path)
    children = (run_dir.config or {})["run"]["workers"] or 1  # resolved by the run (--workers auto)
    cpu, server_cpu = _episodes_cpu.pop()
    assert summary["completed"] == summary["tasks"], summary
    assert summary["metrics"]["tool_em"] == 100.0, summary["metrics"]
    traces = run_dir.latest_traces()
    order = sorted(traces.values(), key=lambda t: t["started_at"])
    turns = [int(t["totals"]["turns"]) for t in order]
    episodes = result.completed
    ideal_wall = model_alone_wall(turns, concurrency, latency)
    bound = min(episodes / cpu if cpu else float("inf"), children * episodes / server_cpu if server_cpu else float("inf"))
    return {
        "episodes": episodes, "wall": result.wall_s, "rate": episodes / result.wall_s,
        "ideal": episodes / ideal_wall, "ratio": ideal_wall / result.wall_s,
        "command_wall": command_wall, "command_ratio": ideal_wall / command_wall,
        "cpu_ms": 1000 * cpu / episodes, "server_ms": 1000 * server_cpu / episodes,
        "bound": bound, "turns": statistics.mean(turns), "workers": children,
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
    tasks = [cast(Any, plugin).catalog.task(t) for t in plugin.task_ids()][:sessions]  # familytool's catalog
    opts = RunOptions(benchmark="familytool-b", model="oracle", strategy="agent")
    async with serve_in_subprocess(opts) as base, HTTPClientPool() as pool:
        async def session(task: Any) -> None:
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
    ap.add_argument("--layouts", nargs="+", choices=list(LAYOUTS),
                    default=None,
                    help="the layouts to measure (default: default http memory workers-memory workers-http, "
                    "and ray where Ray is installed)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2, help="N for the workers-* layouts (default: CPUs)")
    ap.add_argument("--json", action="store_true", help="print every row as one JSON object on the last line")
    ap.add_argument("--sdk-floor", action="store_true",
                    help="also measure bare MCP sessions (the SDK's own client cost, no harness) at the largest concurrency")
    args = ap.parse_args()
    if args.layouts is None:
        from evals.core.ray_executor import ray_installed

        args.layouts = ["default", "http", "memory", "workers-memory", "workers-http"] + (["ray"] if ray_installed() else [])
    layouts = list(dict.fromkeys(args.layouts))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        measured: dict[tuple[str, int], list[dict[str, Any]]] = {(layout, c): [] for layout in layouts for c in args.concurrency}
        for c in args.concurrency:  # repetitions interleaved across layouts: a load change slows them alike
            limit = (args.c1_limit or args.limit) if c == 1 else args.limit
            for _ in range(args.repeats):
                for layout in layouts:
                    measured[layout, c].append(await one(c, limit, args.latency, Path(tmp), layout, args.workers))
        for layout in layouts:
            for c in args.concurrency:
                runs = measured[layout, c]
                med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
                name = layout.replace("workers-", f"{args.workers} workers, ")
                if layout == "ray":
                    name = f"ray: {args.workers} actors, memory"
                if layout.startswith(DEFAULT_LAYOUT):
                    n = int(med["workers"])
                    name = f"{layout}: memory, {n} worker{'s' if n > 1 else ''}" if n > 1 else f"{layout}: memory, 1 process"
                rows.append({"layout": name, "concurrency": c, **med, "ratios": [r["ratio"] for r in runs],
                             "command_ratios": [r["command_ratio"] for r in runs]})
    table = Table(
        title=f"harness throughput, scripted model {args.latency * 1000:.0f} ms/turn, "
        f"{eventloop.loop_name()}, {os.cpu_count()} CPUs, median of {args.repeats}"
    )
    for col in ("layout", "concurrency", "episodes", "turns/ep", "wall s", "episodes/s", "model alone/s", "ratio",
                "ratios", "command s", "command ratio", "client cpu ms/ep", "children cpu ms/ep", "cpu bound/s"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(
            r["layout"], str(r["concurrency"]),
            str(int(r["episodes"])), f"{r['turns']:.2f}", f"{r['wall']:.1f}", f"{r['rate']:.1f}",
            f"{r['ideal']:.1f}", f"{r['ratio']:.2f}", " ".join(f"{x:.2f}" for x in r["ratios"]),
            f"{r['command_wall']:.1f}", f"{r['command_ratio']:.2f}", f"{r['cpu_ms']:.1f}",
            f"{r['server_ms']:.1f}" if r["server_ms"] else "-", f"{r['bound']:.0f}",
        )
    Console(width=200, stderr=args.json).print(table)
    floor = None
    if args.sdk_floor:
        c = max(args.concurrency)
        ms, rate = await sdk_floor(c, args.limit or 483)
        floor = {"concurrency": c, "client_cpu_ms": ms, "sessions_per_s": rate}
        print(f"bare MCP sessions (connect, list tools, 2 calls, close), concurrency {c}: "
              f"client CPU {ms:.1f} ms/session, {rate:.0f} sessions/s (server in a child process)",
              file=sys.stderr if args.json else sys.stdout)
    if args.json:
        top = max(args.concurrency)
        default = [r for r in rows if r["layout"].startswith(DEFAULT_LAYOUT + ":") and r["concurrency"] == top]
        print(json.dumps({
            "ratio": default[0]["ratio"] if default else None,
            "command_ratio": default[0]["command_ratio"] if default else None, "default_layout": DEFAULT_LAYOUT,
            "latency_s": args.latency, "workers": args.workers, "repeats": args.repeats, "cpus": os.cpu_count(), "loop": eventloop.loop_name(),
            "rows": [{k: (None if v == float("inf") else v) for k, v in r.items()} for r in rows],
            "sdk_floor": floor,
        }))


if __name__ == "__main__":
    eventloop.run(main())
