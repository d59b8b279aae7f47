"""MCP tool-call latency and throughput over stdio and streamable HTTP (not a test).

The server runs in its own process (``evals serve``), the clients here, so the numbers include
the real transport and serialisation costs. Each call is ``kg_search_path`` with a 2-hop path on
FamilyTool-b's KG. Sequential = one session calling back to back; concurrent = N sessions
calling at once (for stdio that means N server processes, one per session, as assistant clients do).

    EVALS_DATA_DIR=../shared/data python bench/bench_mcp.py [--calls 300] [--sessions 32]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from mcp import StdioServerParameters
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import free_port, wait_for_health  # noqa: E402  (bench/ is on sys.path when run as a script)
from bench_kg import pct  # noqa: E402

from client.mcp_session import connect  # noqa: E402

TASK = "KGMTUbench_0"
CALL = ("kg_search_path", {"start": "Bob", "path": ["mother", "prefer_dinnertime"]})


async def session_calls(target: str | StdioServerParameters, n: int, lat: list[float], ready: list[int], start: asyncio.Event) -> None:
    async with connect(target) as client:
        await client.call_tool(*CALL)  # warm-up: connection set up, first call served
        ready.append(1)
        await start.wait()
        for _ in range(n):
            t0 = time.perf_counter()
            res = await client.call_tool(*CALL)
            lat.append(time.perf_counter() - t0)
            assert not res.is_error, res


async def run_case(targets: list[str | StdioServerParameters], calls_per_session: int) -> dict[str, Any]:
    """Connect every session, then release them at once; time only the calls."""
    lat: list[float] = []
    ready: list[int] = []
    start = asyncio.Event()
    tasks = [asyncio.create_task(session_calls(t, calls_per_session, lat, ready, start)) for t in targets]
    while len(ready) < len(targets):
        failed = [t for t in tasks if t.done() and t.exception()]
        if failed:
            raise failed[0].exception()  # type: ignore[misc]
        await asyncio.sleep(0.02)
    t0 = time.perf_counter()
    start.set()
    await asyncio.gather(*tasks)
    wall = time.perf_counter() - t0
    return {"calls": len(lat), "p50": pct(lat, 50) * 1e3, "p99": pct(lat, 99) * 1e3, "rate": len(lat) / wall}


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=300, help="calls per sequential run")
    ap.add_argument("--sessions", type=int, default=32)
    ap.add_argument("--calls-per-session", type=int, default=30)
    args = ap.parse_args()

    port = free_port()
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, "-m", "evals.cli", "serve", "--port", str(port),
                             "--benchmarks", "familytool-b"], env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        await wait_for_health(base, tries=300)
        url = f"{base}/mcp/familytool-b/{TASK}"
        stdio = StdioServerParameters(
            command=sys.executable,
            args=["-m", "evals.cli", "serve", "--stdio", "--benchmark", "familytool-b", "--task", TASK],
            env=env,
        )
        rows = [
            ("http", "sequential", 1, await run_case([url], args.calls)),
            ("http", "concurrent", args.sessions, await run_case([url] * args.sessions, args.calls_per_session)),
            ("stdio", "sequential", 1, await run_case([stdio], args.calls)),
            ("stdio", "concurrent", args.sessions, await run_case([stdio] * args.sessions, args.calls_per_session)),
        ]
    finally:
        proc.terminate()
        proc.wait(timeout=10)

    table = Table(title=f"MCP tool call ({CALL[0]}, 2 hops), server in its own process")
    for col in ("transport", "mode", "sessions", "calls", "p50 ms", "p99 ms", "calls/s"):
        table.add_column(col, justify="right")
    for transport, mode, sessions, r in rows:
        table.add_row(transport, mode, str(sessions), str(r["calls"]), f"{r['p50']:.2f}", f"{r['p99']:.2f}", f"{r['rate']:.0f}")
    Console().print(table)
    Console().print(f"machine: {os.cpu_count()} CPUs; target: HTTP p50 <= 5 ms on loopback")


if __name__ == "__main__":
    asyncio.run(main())
