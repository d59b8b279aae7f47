"""Load: N concurrent MCP sessions over HTTP calling tools for M minutes (not a test).

The server runs in its own process (``evals serve``, default limits), the clients here, as ``evals
run`` drives it: one HTTP client pool, each session named in its URL (``?session=<id>``) and bound
to one task endpoint; every ``--calls-per-session`` calls a worker closes its session and opens a
new one on the next task (an episode's worth of calls), so sessions churn as in a real run. Each call
is ``kg_search_path`` with a 2-hop path on FamilyTool-b's KG.

Reported: calls per second, p50/p99 latency, the server's CPU time per call (less sensitive to other
load on the machine than the rates), errors (exceptions and error results; must be 0), the
server's resident memory at the start, its peak and at the end (must not grow without bound), and
its open file descriptors before the load and after the clients are gone (must be back where they
started).

    EVALS_DATA_DIR=../shared/data python bench/bench_load.py [--sessions 32] [--minutes 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import cpu_s, free_port, wait_for_health  # noqa: E402  (bench/ is on sys.path when run as a script)
from bench_kg import pct  # noqa: E402
from bench_mcp import CALL  # noqa: E402

from client.mcp_session import HTTPClientPool, connect  # noqa: E402

TASKS = [f"KGMTUbench_{i}" for i in range(50)]


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


class Load:
    def __init__(self, base: str, pool: HTTPClientPool, calls_per_session: int, deadline: float):
        self.base, self.pool, self.calls_per_session, self.deadline = base, pool, calls_per_session, deadline
        self.lat: list[float] = []
        self.errors: list[str] = []
        self.sessions = 0

    async def worker(self, index: int) -> None:
        n = index
        while time.monotonic() < self.deadline:
            task = TASKS[n % len(TASKS)]
            n += 1
            url = f"{self.base}/mcp/familytool-b/{task}?session={uuid.uuid4().hex}"
            try:
                async with self.pool.borrow() as http, connect(url, http_client=http, discovery_key=self.base) as c:
                    self.sessions += 1
                    for _ in range(self.calls_per_session):
                        if time.monotonic() >= self.deadline:
                            break
                        t0 = time.perf_counter()
                        res = await c.call_tool(*CALL)
                        self.lat.append(time.perf_counter() - t0)
                        if res.is_error:
                            self.errors.append(f"error result: {res.content[0]}")
            except Exception as exc:  # counted, and the worker goes on with a new session
                self.errors.append(f"{type(exc).__name__}: {exc}")


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=32, help="concurrent sessions (default 32)")
    ap.add_argument("--minutes", type=float, default=2.0, help="how long the load lasts (default 2)")
    ap.add_argument("--calls-per-session", type=int, default=20, help="calls before a session is replaced (default 20)")
    args = ap.parse_args()

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "evals.cli", "serve", "--port", str(port),
                             "--benchmarks", "familytool-b"], env=dict(os.environ))
    base = f"http://127.0.0.1:{port}"
    try:
        await wait_for_health(base, tries=600)
        await asyncio.sleep(0.5)  # the health check's connection is closed
        fds_before = open_fds(proc.pid)
        async with HTTPClientPool() as pool:  # warm-up: the KG opened, first calls served
            async with pool.borrow() as http, connect(f"{base}/mcp/familytool-b/{TASKS[0]}", http_client=http) as c:
                for _ in range(20):
                    await c.call_tool(*CALL)
        await asyncio.sleep(0.5)
        rss_start = rss_mib(proc.pid)
        rss_peak = rss_start

        cpu_start = cpu_s(proc.pid)
        t0 = time.monotonic()
        load = Load(base, HTTPClientPool(), args.calls_per_session, t0 + args.minutes * 60)
        async with load.pool:
            workers = [asyncio.create_task(load.worker(i)) for i in range(args.sessions)]
            while not all(w.done() for w in workers):
                await asyncio.sleep(1.0)
                rss_peak = max(rss_peak, rss_mib(proc.pid))
            await asyncio.gather(*workers)
            wall = time.monotonic() - t0
            server_cpu = cpu_s(proc.pid) - cpu_start
            fds_loaded = open_fds(proc.pid)
        await asyncio.sleep(1.0)  # the server sees the clients' connections close
        rss_end = rss_mib(proc.pid)
        fds_after = open_fds(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=15)

    lat = load.lat
    table = Table(title=f"Load: {args.sessions} concurrent MCP sessions over HTTP for {args.minutes:g} min "
                        f"({CALL[0]}, 2 hops; server in its own process)")
    for col in ("sessions", "sessions opened", "calls", "calls/s", "p50 ms", "p99 ms", "server CPU ms/call", "errors",
                "RSS start/peak/end MiB", "fds before/loaded/after"):
        table.add_column(col, justify="right")
    table.add_row(
        str(args.sessions), str(load.sessions), str(len(lat)), f"{len(lat) / wall:.0f}",
        f"{pct(lat, 50) * 1e3:.1f}" if lat else "-", f"{pct(lat, 99) * 1e3:.1f}" if lat else "-",
        f"{server_cpu / len(lat) * 1e3:.2f}" if lat else "-", str(len(load.errors)), f"{rss_start:.0f} / {rss_peak:.0f} / {rss_end:.0f}",
        f"{fds_before} / {fds_loaded} / {fds_after}",
    )
    console = Console(width=max(Console().width, 150))
    console.print(table)
    for line in sorted(set(load.errors))[:5]:
        console.print(f"[red]error:[/] {line}", markup=True, highlight=False)
    ok = not load.errors and fds_after <= fds_before
    console.print(f"machine: {os.cpu_count()} CPUs; {'clean' if ok else 'NOT clean'}: errors must be 0 and the "
                  "fds after the load back to those before it")
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    asyncio.run(main())
