"""BFCL backend calls: does one slow call hold the other sessions of a server process? (not a test)

Per row, one HTTP server process (the project's app on 127.0.0.1, as ``evals serve`` runs it; a
child of the bench, so the probes never share its event loop) serves ``multi_turn_base_15`` (GorillaFileSystem + MathAPI). Session ``slow`` makes one
call past a bound or a deadline; meanwhile other sessions probe the server, one probe after the
other: ``GET /health`` and a tool call (``pwd``) of session ``other``. Rows:

* ``idle``: no slow call (the probes' own latency);
* ``in the event loop``: the call run as BFCL's backends ran before issue 46 (the method called in
  the server's event loop: ``square_root(2, precision=P)``, a few seconds of ``Decimal.sqrt`` in C);
* ``past its bound``: the same call through the holder processes with the bound in place (refused
  before BFCL's code sees it);
* ``past its deadline``: the bound lifted for the bench, so only the deadline (``--deadline``)
  stops the call (its process is killed; the session's state is rebuilt on its next call).

Columns: the slow call's own time; each probe's median and max latency (ms) while the slow call
runs; the share answered within 1 s. A second table is the per-call cost of the holder process:
the same call (``pwd``) run in this process vs through a holder process (a socket round trip),
median of ``--calls`` calls, wall and this process's CPU.

A third table (with ``--before DIR``, a checkout of other code, or ``--compare-ref REF``, a commit
checked out for the bench): the first ``--episodes`` oracle episodes of each of ``--categories``
(default ``multi_turn_base``) with their scoring, run as ``evals run`` runs them in one process, by
that code and by this tree: wall, this process's CPU, the holder processes' CPU (the zygote and its
children, read once they have all ended: the sessions' and the scorings' holders) and the harness
CPU per episode (both summed),
medians of ``--repeats`` interleaved runs; given two sizes (``--episodes 5 25``), also the CPU of one
more episode (the start-up costs left out). ``--episodes-only`` prints only that table.

    EVALS_DATA_DIR=... python bench/bench_bfcl_isolation.py [--precision 1000000] [--deadline 2] [--calls 300] \\
        [--before /tmp/main-checkout | --compare-ref main] [--episodes 5 25 --repeats 3] \\
        [--categories multi_turn_base multi_turn_miss_func ...] [--episodes-only]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

_CODE = sys.argv[sys.argv.index("--code") + 1] if "--code" in sys.argv else str(Path(__file__).resolve().parents[1])
sys.path.insert(0, _CODE)

ENTRY = "multi_turn_base_15"


def _entry() -> Any:
    from evals.benchmarks.bfcl.multi_turn import read_multi_turn

    return next(e for e in read_multi_turn("multi_turn_base") if e.id == ENTRY)


def _in_loop_catalog() -> Any:
    """The entry's tools as they ran before issue 46: the method called in the server's event loop."""
    from evals.benchmarks.bfcl.backend_calls import ERROR_PREFIX, call_text, execute_text
    from evals.benchmarks.bfcl.tools import to_schema
    from tool_specs import StaticCatalog, ToolResult, ToolSpec

    entry = _entry()

    def tool(doc: dict[str, Any]) -> ToolSpec:
        name = str(doc["name"])

        async def run(spec: Any, arguments: dict[str, Any], ctx: Any) -> ToolResult:
            held = ctx.state.setdefault("in_loop", {})
            if "i" not in held:
                held["i"] = entry.instances()
            text = execute_text(held["i"], call_text(name, arguments), bounded=False)
            return ToolResult(text=text, is_error=text.startswith(ERROR_PREFIX))

        return ToolSpec(name=name, description="", input_schema=to_schema(doc.get("parameters") or {}), executor=run,
                        validation="warn")

    return StaticCatalog("bfcl", {ENTRY: [tool(d) for d in entry.all_functions()]})


def _holder_catalog() -> Any:
    from evals.benchmarks.bfcl.kinds import BfclCatalog
    from evals.benchmarks.bfcl.multi_turn_episode import MultiTurnKind

    return BfclCatalog([MultiTurnKind(("multi_turn_base",))])


async def _serve(mode: str, deadline: float) -> None:
    """The server of one scenario (a child process of the bench): serves until killed."""
    from evals.benchmarks.bfcl import backend_calls, backend_host
    from server import BenchmarkMount, ToolServer, create_app, serve_in_background

    backend_host.CALL_DEADLINE_S = deadline
    if mode == "deadline":
        backend_calls.MAX_PRECISION = 10**9  # only the deadline stops the slow call
    catalog = _in_loop_catalog() if mode == "in-loop" else _holder_catalog()
    async with serve_in_background(create_app(ToolServer([BenchmarkMount(catalog=catalog)]), json_response=True)) as url:
        print(url, flush=True)
        await asyncio.Event().wait()


async def _scenario(mode: str, precision: int, deadline: float, probes_for: float) -> dict[str, Any]:
    """One row: a server process in ``mode``, the slow call from one client, probes from another."""
    import subprocess

    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    proc = subprocess.Popen([sys.executable, __file__, "--serve", mode, "--deadline", str(deadline)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = (await asyncio.to_thread(proc.stdout.readline)).strip()
        endpoint = f"{url}/mcp/bfcl/{ENTRY}"
        async with httpx2.AsyncClient(timeout=300) as http, httpx2.AsyncClient(timeout=300) as probe_http, \
                Client(streamable_http_client(f"{endpoint}?session=slow", http_client=http)) as slow, \
                Client(streamable_http_client(f"{endpoint}?session=other", http_client=probe_http)) as other:
            await slow.call_tool("pwd", {})  # both sessions warm (instances made, processes forked)
            await other.call_tool("pwd", {})
            started = time.perf_counter()
            call = asyncio.ensure_future(slow.call_tool("square_root", {"number": 2, "precision": precision})
                                         if precision else asyncio.sleep(probes_for))
            health, tool = [], []
            await asyncio.sleep(0.2)  # the slow call has reached the server
            while (not call.done() or time.perf_counter() - started < 2.0) and time.perf_counter() - started < probes_for:
                t = time.perf_counter()
                await probe_http.get(f"{url}/health")
                health.append(time.perf_counter() - t)
                t = time.perf_counter()
                await other.call_tool("pwd", {})
                tool.append(time.perf_counter() - t)
            result = await call
            took = time.perf_counter() - started
    finally:
        proc.kill()
        proc.wait()
    text = "" if not precision else str(cast(Any, result).content[0].text)[:100]  # the square root's text
    return {"took": took, "health": health, "tool": tool, "result": text}


def _ms(xs: list[float]) -> str:
    return f"{statistics.median(xs) * 1000:.1f} / {max(xs) * 1000:.0f}" if xs else "no probe answered"


def _within(xs: list[float]) -> str:
    return f"{sum(x <= 1.0 for x in xs)}/{len(xs)}" if xs else "0/0"


async def _isolation(args: argparse.Namespace) -> None:
    p, d = args.precision, args.deadline
    rows = [("idle", await _scenario("bound", 0, d, 2.0)),
            (f"in the event loop (precision={p}, as before issue 46)", await _scenario("in-loop", p, d, 300)),
            (f"past its bound (precision={p})", await _scenario("bound", p, d, 300)),
            (f"past its deadline ({d:g} s; bound lifted)", await _scenario("deadline", p, d, 300))]
    print("\n| slow call of session `slow` | its time | /health median / max ms | other session's call median / max ms "
          "| /health within 1 s | call within 1 s |")
    print("|---|---|---|---|---|---|")
    for name, r in rows:
        print(f"| {name} | {r['took']:.2f} s | {_ms(r['health'])} | {_ms(r['tool'])} | {_within(r['health'])} "
              f"| {_within(r['tool'])} |")
    for name, r in rows:
        if r["result"]:
            print(f"  {name}: {r['result']}")


def _overhead(args: argparse.Namespace) -> None:
    from evals.benchmarks.bfcl.backend_calls import execute_text, make_op, method_table
    from evals.benchmarks.bfcl.backend_host import Holder

    entry = _entry()
    instances = entry.instances()
    table = method_table(instances)
    holder = Holder()
    holder.request(dict(make_op(entry.involved_classes, entry.initial_config), key="i"), log=True)
    rows = []
    ways: list[tuple[str, Callable[[], object]]] = [
        ("in this process", lambda: execute_text(instances, "pwd()", table)),
        ("through a holder process", lambda: holder.request({"op": "call", "key": "i", "text": "pwd()"}))]
    for name, run in ways:
        walls, cpus = [], []
        for _ in range(args.calls):
            w, c = time.perf_counter(), time.process_time()
            run()
            walls.append(time.perf_counter() - w)
            cpus.append(time.process_time() - c)
        rows.append((name, statistics.median(walls), statistics.fmean(cpus)))
    holder.close()
    print(f"\n| one BFCL call (`pwd`), {args.calls} calls | wall median µs | this process's CPU mean µs |")
    print("|---|---|---|")
    for name, wall, cpu in rows:
        print(f"| {name} | {wall * 1e6:.0f} | {cpu * 1e6:.0f} |")


def _episodes_once(categories: list[str], per_category: int, run_dir: Path) -> dict[str, float]:
    """``evals run bfcl --category C... --limit-per-category N --model oracle`` in this process (memory
    transport, one worker, concurrency 4, scoring included): wall and CPU, this process's (importing the
    run's code, then the run's event loop from its start to its close) and the backend holders' (the zygote and its holder
    processes, read once every one has ended: a process's CPU counts in its parent's only once it has
    been reaped) when the code has them."""
    t, c = time.perf_counter(), time.process_time()  # importing the run's code counted: code that imports
    from evals.core.run import RunOptions, run_benchmark  # the MCP SDK lazily pays for it inside the run

    opts = RunOptions(benchmark="bfcl", model="oracle", run_dir=run_dir, transport="memory", concurrency=4,
                      workers=1, progress=False,
                      benchmark_options={"category": categories, "limit_per_category": per_category})
    _, summary = asyncio.run(run_benchmark(opts))
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    try:
        from evals.benchmarks.bfcl.backend_host import host_cpu_seconds
    except ImportError:  # the code before issue 46: no holder processes
        host = 0.0
    else:
        host = _ended_holders_cpu(host_cpu_seconds)
    assert summary["completed"] == per_category * len(categories), summary
    assert all(summary["metrics"][c] == 100.0 for c in categories), summary
    return {"wall": wall, "cpu": cpu, "host": host, "episodes": summary["completed"]}


def _ended_holders_cpu(host_cpu_seconds: Any) -> float:
    """The zygote's CPU and its children's once no holder process is left: the scorings' holders are
    ended, the sessions' (ended by their holders' finalizers) collected, and the zygote's children
    waited for (up to 10 s; a warning if some are still there)."""
    import gc
    import os

    from evals.benchmarks.bfcl import backend_host, multi_turn_checker

    scoring = getattr(getattr(multi_turn_checker, "_holders", None), "holder", None)
    batchers = list(getattr(multi_turn_checker, "_batchers", {}).values())
    for holder in [scoring, *(b.holder for b in batchers)]:
        if holder is not None:
            holder.close()  # the scorings' holders ended too: their CPU counts
    gc.collect()  # the sessions' holders ended (their processes reaped by the zygote)
    proc = backend_host._zygote.proc
    left: list[str] = []
    for _ in range(200):
        if proc is None:
            break
        left = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with contextlib.suppress(OSError, IndexError):
                    if int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1]) == proc.pid:
                        left.append(entry)
        if not left:
            break
        time.sleep(0.05)
    if left:
        print(f"warning: {len(left)} holder process(es) still running; their CPU is not counted", file=sys.stderr)
    return float(host_cpu_seconds())


def _episodes(args: argparse.Namespace, other: tuple[str, str]) -> None:
    """The episode CPU table: ``other`` (a name and a checkout) and this tree, ``--repeats`` runs each,
    interleaved, each in a fresh interpreter; per size of ``--episodes`` (with two sizes, the harness CPU
    of one more episode: the difference of the two sizes' medians, the fixed start-up costs left out)."""
    import json
    import os
    import subprocess
    import tempfile

    totals: dict[str, list[tuple[float, float]]] = {other[0]: [], "this tree": []}  # (episodes, CPU s) per size
    for size in args.episodes:
        rows: dict[str, list[dict[str, float]]] = {other[0]: [], "this tree": []}
        for _ in range(args.repeats):
            for name, code in (other, ("this tree", _CODE)):
                with tempfile.TemporaryDirectory() as tmp:
                    out = subprocess.run([sys.executable, __file__, "--code", code, "--episodes-once", str(size),
                                          "--categories", *args.categories, "--run-dir", str(Path(tmp) / "run")],
                                         capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": code})
                rows[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(f"\n| {', '.join(args.categories)}: the first {size} of each, oracle episodes + scoring | wall s "
              "| this process's CPU s | holders' CPU s | harness CPU per episode ms |")
        print("|---|---|---|---|---|")
        per = {}
        for name, runs in rows.items():
            med = {k: statistics.median(r[k] for r in runs) for k in ("wall", "cpu", "host")}
            per[name] = statistics.median((r["cpu"] + r["host"]) / r["episodes"] for r in runs) * 1000
            totals[name].append((runs[0]["episodes"], statistics.median(r["cpu"] + r["host"] for r in runs)))
            print(f"| {name} | {med['wall']:.2f} | {med['cpu']:.2f} | {med['host']:.2f} | {per[name]:.1f} |")
        print(f"(medians of {args.repeats} interleaved runs; harness CPU per episode, this tree over {other[0]}: "
              f"{per['this tree'] / per[other[0]]:.2f})")
    if len(args.episodes) == 2:
        marginal = {name: (t[1][1] - t[0][1]) / (t[1][0] - t[0][0]) * 1000 for name, t in totals.items()}
        print(f"\nharness CPU of one more episode (from {args.episodes[0]} to {args.episodes[1]} of each): "
              + ", ".join(f"{name} {ms:.1f} ms" for name, ms in marginal.items())
              + f"; this tree over {other[0]}: {marginal['this tree'] / marginal[other[0]]:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--precision", type=int, default=1_000_000, help="square_root's precision (default 1000000: seconds)")
    ap.add_argument("--deadline", type=float, default=2.0, help="the holder's call deadline for the bench, s (default 2)")
    ap.add_argument("--calls", type=int, default=300, help="calls per row of the overhead table")
    ap.add_argument("--before", help="a checkout of other code (before issue 46): adds the episode CPU table")
    ap.add_argument("--compare-ref", metavar="REF", help="a git commit, checked out for the bench: adds the episode CPU table")
    ap.add_argument("--episodes", type=int, nargs="+", default=[40],
                    help="episodes per category per run of the episode CPU table (two sizes: also one more episode's CPU)")
    ap.add_argument("--categories", nargs="+", default=["multi_turn_base"], help="multi-turn categories of that table")
    ap.add_argument("--episodes-only", action="store_true", help="only the episode CPU table")
    ap.add_argument("--repeats", type=int, default=3, help="runs per row of the episode CPU table (medians)")
    ap.add_argument("--serve", choices=["in-loop", "bound", "deadline"], help=argparse.SUPPRESS)  # a row's server
    ap.add_argument("--code", help=argparse.SUPPRESS)  # the tree a child runs
    ap.add_argument("--episodes-once", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--run-dir", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        asyncio.run(_serve(args.serve, args.deadline))
        return
    if args.episodes_once:
        import json

        print(json.dumps(_episodes_once(args.categories, args.episodes_once, args.run_dir)))
        return
    if args.before:
        _episodes(args, ("before", args.before))
    elif args.compare_ref:
        from _common import ref_worktree  # bench/ is on sys.path when run as a script

        with ref_worktree(args.compare_ref) as checkout:
            _episodes(args, (args.compare_ref, str(checkout)))
    if args.episodes_only:
        return
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_isolation(args))
        _overhead(args)


if __name__ == "__main__":
    main()
