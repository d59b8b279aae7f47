"""Latency of a ToolHop tool call through the MCP server over HTTP, and of the sandbox alone (not a test).

The server (ToolHop catalog, sandbox pool) runs in this process on 127.0.0.1 with uvicorn; the
client is the MCP SDK's streamable-HTTP client. Each call is the first gold call of a ToolHop
task (real tool code run in a sandbox child: its own PID and mount namespace, private tmpfs, no
capabilities, seccomp). "cold" = the first call of a fresh pool (starts the worker: Python start-up,
preloads, its user/mount/network namespaces and read-only root); "warm" = later calls.

    EVALS_DATA_DIR=../shared/data python bench/bench_toolhop.py [--calls 200] [--cold 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from client.mcp_session import connect, make_http_client  # noqa: E402
from evals.benchmarks.toolhop.tasks import load_tasks  # noqa: E402
from evals.benchmarks.toolhop.tools import ToolHopCatalog  # noqa: E402
from server import BenchmarkMount, ToolServer, create_app, serve_in_background  # noqa: E402
from tool_specs import StaticCatalog, ToolSpec  # noqa: E402
from tool_specs.sandbox import SandboxPool  # noqa: E402


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1] if len(values) > 1 else values[0]


def row(table: Table, label: str, secs: list[float]) -> None:
    ms = [s * 1000 for s in secs]
    table.add_row(label, str(len(ms)), f"{statistics.median(ms):.1f}", f"{pct(ms, 99):.1f}", f"{max(ms):.1f}")


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=200, help="warm calls per case")
    ap.add_argument("--cold", type=int, default=5, help="cold calls (each on a fresh pool)")
    args = ap.parse_args()
    tasks = load_tasks()
    task = next(t for t in tasks if t.gold_calls)
    call = (task.explicit_chain() or [])[0]  # a task with gold calls: its chain
    hop = task.hops[0]

    # the sandbox alone
    direct_cold, direct_warm = [], []
    for _ in range(args.cold):
        with SandboxPool(1) as pool:
            t0 = time.perf_counter()
            assert pool.run(hop.code.code, hop.function, call.arguments).ok
            direct_cold.append(time.perf_counter() - t0)
    with SandboxPool(1) as pool:
        pool.warm()
        for _ in range(args.calls):
            t0 = time.perf_counter()
            assert pool.run(hop.code.code, hop.function, call.arguments).ok
            direct_warm.append(time.perf_counter() - t0)
        containment = pool.describe()
    # the same without the kernel boundary (unsafe; only to show what the boundary costs)
    direct_unsafe: list[float] = []
    with SandboxPool(1, isolation="none", allow_unsafe=True) as pool:
        pool.warm()
        for _ in range(args.calls):
            t0 = time.perf_counter()
            assert pool.run(hop.code.code, hop.function, call.arguments).ok
            direct_unsafe.append(time.perf_counter() - t0)

    # through the MCP server over HTTP
    mcp_cold, mcp_warm = [], []
    async with make_http_client() as http:
        for i in range(args.cold + 1):
            with SandboxPool(1) as pool:
                server = ToolServer([BenchmarkMount(ToolHopCatalog("toolhop", [task], pool=pool))])
                async with serve_in_background(create_app(server, json_response=True)) as url:
                    async with connect(f"{url}/mcp/toolhop/{task.id}", http_client=http) as client:
                        await client.list_tools()
                        t0 = time.perf_counter()
                        res = await client.call_tool(call.name, call.arguments)
                        assert not res.is_error, res
                        if i:  # the first round warms the HTTP stack itself
                            mcp_cold.append(time.perf_counter() - t0)
                        if i == args.cold:
                            for _ in range(args.calls):
                                t0 = time.perf_counter()
                                res = await client.call_tool(call.name, call.arguments)
                                mcp_warm.append(time.perf_counter() - t0)
                                assert not res.is_error, res

    # baseline: the same server and client, a tool that runs nothing (the MCP/HTTP cost alone)
    noop: list[float] = []
    server = ToolServer([BenchmarkMount(StaticCatalog("noop", {"t": [ToolSpec(name="noop")]}))])
    async with make_http_client() as http, serve_in_background(create_app(server, json_response=True)) as url:
        async with connect(f"{url}/mcp/noop/t", http_client=http) as client:
            await client.call_tool("noop", {})
            for _ in range(args.calls):
                t0 = time.perf_counter()
                await client.call_tool("noop", {})
                noop.append(time.perf_counter() - t0)

    table = Table(title=f"ToolHop tool call latency ({call.name}, task {task.id}), ms")
    for col in ("case", "calls", "median", "p99", "max"):
        table.add_column(col, justify="right" if col != "case" else "left")
    row(table, "MCP over HTTP, warm worker", mcp_warm)
    row(table, "MCP over HTTP, cold (worker start)", mcp_cold)
    row(table, "MCP over HTTP, no-op tool (baseline)", noop)
    row(table, "sandbox only, warm worker", direct_warm)
    row(table, "sandbox only, warm, unsafe (no boundary)", direct_unsafe)
    row(table, "sandbox only, cold (worker start)", direct_cold)
    console = Console()
    console.print(table)
    console.print(f"containment: {containment}")


if __name__ == "__main__":
    asyncio.run(main())
