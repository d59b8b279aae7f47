"""One client must not slow everyone's sandboxed calls (issue 26, item 2; issue 36, item 10): a
benchmark, not a test.

The real server (uvicorn on 127.0.0.1, streamable HTTP) serves one ToolHop task and, on the same
sandbox pool, a hostile endpoint whose tool spins until the sandbox stops it at its 5 s wall-clock
limit (what the issue's ToolHop tool with a hostile argument did). A hostile client (an HTTP client
of its own, with a bearer token of its own: another client than the victim, as another program or
machine would be) runs ``--hostile`` loops calling it back to back, in one of two attacks:

* ``sessions``: each loop keeps one MCP session (``?session=hostile-N``);
* ``new-sessions``: each loop opens a new session for every call (a session's first call: the gate
  knows nothing of the session, only of its client).

One victim session calls the task's first gold call every ``--pause`` seconds. The victim's latency
is measured with the pool's queue first come first served (``fifo``: what the pool did before) and
fair (the default now): idle (no attack) and under attack, after ``--warmup`` seconds of attack;
in fair mode also a victim that opens a new session for every call (as every ``evals run`` episode
does; see tool_specs/fair_queue.py).

    EVALS_DATA_DIR=../shared/data python bench/bench_fairness.py [--workers 4] [--hostile 12] [--calls 10] \
        [--attacks sessions,new-sessions]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from client.mcp_session import connect, make_http_client  # noqa: E402
from evals.benchmarks.toolhop.tasks import load_tasks  # noqa: E402
from evals.benchmarks.toolhop.tools import ToolHopCatalog  # noqa: E402
from server import BenchmarkMount, ToolServer, create_app, serve_in_background  # noqa: E402
from tool_specs import StaticCatalog, ToolSpec  # noqa: E402
from tool_specs.sandbox import SandboxExecutor, SandboxLimits, SandboxPool  # noqa: E402

SPIN = "def spin():\n    while True:\n        pass\n"


def pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


async def hostile_session(url: str, http: object, stop: asyncio.Event, done: list[int]) -> None:
    async with connect(url, http_client=http) as client:  # type: ignore[arg-type]
        while not stop.is_set():
            await client.call_tool("spin", {})
            done.append(1)


async def hostile_new_sessions(url: str, http: object, stop: asyncio.Event, done: list[int]) -> None:
    """The new-session attack: every call from a session of its own."""
    i = 0
    while not stop.is_set():
        async with connect(f"{url}-{i}", http_client=http) as client:  # type: ignore[arg-type]
            await client.call_tool("spin", {})
        done.append(1)
        i += 1


async def timed_call(client: object, name: str, arguments: dict[str, object]) -> float:
    t0 = time.perf_counter()
    res = await client.call_tool(name, arguments)  # type: ignore[attr-defined]
    took = time.perf_counter() - t0
    assert not res.is_error, res
    return took


# the victim names itself as `evals run` does (one unguessable name per run: transport.py): without a
# token the server counts a client name only when it cannot be guessed (server/core.py _client_of)
VICTIM = f"evals-run-{uuid.uuid4().hex}"


async def victim_calls(url: str, http: object, name: str, arguments: dict[str, object], n: int, pause: float) -> list[float]:
    out = []
    async with connect(url, http_client=http, client_name=VICTIM) as client:  # type: ignore[arg-type]
        await client.list_tools()
        for _ in range(n):
            out.append(await timed_call(client, name, arguments))
            await asyncio.sleep(pause)
    return out


async def fresh_victim_calls(url: str, http: object, name: str, arguments: dict[str, object], n: int,
                             pause: float) -> list[float]:
    """Each call from a session of its own (its first call: the gate knows nothing of it)."""
    out = []
    for i in range(n):
        async with connect(f"{url}-fresh-{i}", http_client=http, client_name=VICTIM) as client:  # type: ignore[arg-type]
            await client.list_tools()
            out.append(await timed_call(client, name, arguments))
        await asyncio.sleep(pause)
    return out


async def scenario(fair: bool, attack: str, args: argparse.Namespace, task: object,
                   call: object) -> dict[str, list[float] | int | float]:
    with SandboxPool(args.workers, limits=SandboxLimits(), fair=fair) as pool:
        pool.warm()
        spin = ToolSpec(name="spin", description="Spins until stopped.", input_schema={"type": "object"},
                        executor=SandboxExecutor(SPIN, "spin", pool=pool))
        server = ToolServer([BenchmarkMount(ToolHopCatalog("toolhop", [task], pool=pool)),  # type: ignore[list-item]
                             BenchmarkMount(StaticCatalog("hostile", {"t": [spin]}))])
        victim_url = f"/mcp/toolhop/{task.id}?session=victim"  # type: ignore[attr-defined]
        async with make_http_client(timeout=300) as http, make_http_client(timeout=300, token="hostile") as evil, \
                serve_in_background(create_app(server, json_response=True), log_level="critical") as base:
            idle = await victim_calls(base + victim_url, http, call.name, call.arguments, args.calls, args.pause)  # type: ignore[attr-defined]
            stop, done = asyncio.Event(), list[int]()
            loop = hostile_new_sessions if attack == "new-sessions" else hostile_session
            attackers = [asyncio.create_task(loop(f"{base}/mcp/hostile/t?session=hostile-{i}", evil, stop, done))
                         for i in range(args.hostile)]
            await asyncio.sleep(args.warmup)
            load = os.getloadavg()[0]
            attacked = await victim_calls(base + victim_url, http, call.name, call.arguments, args.calls, args.pause)  # type: ignore[attr-defined]
            fresh = []
            if fair and args.fresh:
                fresh = await fresh_victim_calls(base + victim_url, http, call.name, call.arguments, args.calls, args.pause)  # type: ignore[attr-defined]
            stop.set()
            for t in attackers:
                t.cancel()
            for t in attackers:
                with contextlib.suppress(BaseException):
                    await t
    return {"idle": idle, "attacked": attacked, "attacked, new session per call": fresh, "hostile_calls": len(done),
            "load": round(load, 1)}


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=4, help="sandbox workers (ToolHop's --sandbox-workers default: 4)")
    ap.add_argument("--hostile", type=int, default=12, help="hostile sessions")
    ap.add_argument("--calls", type=int, default=10, help="victim calls per phase")
    ap.add_argument("--pause", type=float, default=0.5, help="seconds between the victim's calls")
    ap.add_argument("--warmup", type=float, default=6.0, help="seconds of attack before the victim's calls")
    ap.add_argument("--modes", default="fifo,fair", help="comma-separated: fifo (the queue before), fair (now)")
    ap.add_argument("--attacks", default="sessions,new-sessions",
                    help="comma-separated: sessions (one session per hostile loop), new-sessions (a new one per call)")
    ap.add_argument("--fresh", action=argparse.BooleanOptionalAction, default=True,
                    help="fair mode: also a victim that opens a new session for every call (the worst case)")
    args = ap.parse_args()
    task = next(t for t in load_tasks() if t.gold_calls)
    call = (task.explicit_chain() or [])[0]  # a task with gold calls: its chain
    table = Table(title=f"victim's ToolHop call ({call.name}) with {args.hostile} hostile loops calling a 5 s tool, "
                        f"{args.workers} workers; seconds")
    for col in ("queue", "attack", "phase", "calls", "median", "p90", "max", "hostile calls done", "load (1 min)"):
        table.add_column(col, justify="left" if col in ("queue", "attack", "phase") else "right")
    for attack in args.attacks.split(","):
        if attack not in ("sessions", "new-sessions"):
            ap.error(f"--attacks: unknown attack {attack!r}; use sessions or new-sessions")
        for mode in args.modes.split(","):
            got = await scenario(mode == "fair", attack, args, task, call)
            for phase in ("idle", "attacked", "attacked, new session per call"):
                secs = got[phase]
                assert isinstance(secs, list)
                if not secs:
                    continue
                table.add_row(mode, attack, phase, str(len(secs)), f"{statistics.median(secs):.3f}",
                              f"{pct(secs, 90):.3f}", f"{max(secs):.3f}",
                              str(got["hostile_calls"]) if phase == "attacked" else "",
                              str(got["load"]) if phase == "attacked" else "")
    console = Console()
    console.print(table)
    console.print(f"machine: {os.cpu_count()} CPUs, load average now {os.getloadavg()}")


if __name__ == "__main__":
    asyncio.run(main())
