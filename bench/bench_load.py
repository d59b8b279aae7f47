"""Load: N concurrent MCP sessions over HTTP calling tools for M minutes (not a test).

The server runs in its own process (``evals serve``, default limits), the clients here, as ``evals
run`` drives it: one HTTP client pool, each session named in its URL (``?session=<id>``) and bound
to one task endpoint; every ``--calls-per-session`` calls a worker closes its session and opens a
new one on the next task (an episode's worth of calls), so sessions churn as in a real run. Each call
is ``kg_search_path`` with a 2-hop path on FamilyTool-b's KG.

Reported: calls per second (and its ratio to the first ``--workers``), p50/p99 latency, the server's CPU time per call (less sensitive to other
load on the machine than the rates), errors (exceptions and error results; must be 0), the
server's resident memory at the start, its peak and at the end (must not grow without bound), and
its open file descriptors before the load and after the clients are gone (must be back where they
started).

    EVALS_DATA_DIR=../shared/data python bench/bench_load.py [--sessions 32] [--minutes 2]
        [--workers 1 2 --repeats 3] [--client-processes 2]

``--workers 1 2`` measures ``evals serve --workers 1`` and ``--workers 2`` in one run (interleaved,
each against its own server), the server's CPU and memory summed over its processes, and reports
calls/s of each as a ratio to the first.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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

    async def lean_worker(self, index: int) -> None:
        """:meth:`worker`'s calls as bare HTTP/1.1 requests on one kept-alive connection (what the MCP SDK's
        client sends for a ``tools/call``, JSON answers), so that the load costs a fraction of the server's CPU."""
        host, port = self.base.removeprefix("http://").rsplit(":", 1)
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": CALL[0], "arguments": CALL[1], "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "bench_load", "version": "0"},
                "io.modelcontextprotocol/clientCapabilities": {}}}}).encode()
        n = index
        reader = writer = None
        while time.monotonic() < self.deadline:
            task = TASKS[n % len(TASKS)]
            n += 1
            head = (f"POST /mcp/familytool-b/{task}?session={uuid.uuid4().hex} HTTP/1.1\r\nhost: {host}:{port}\r\n"
                    "accept: application/json, text/event-stream\r\ncontent-type: application/json\r\n"
                    f"mcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\nmcp-name: {CALL[0]}\r\n"
                    f"content-length: {len(body)}\r\n\r\n").encode() + body
            self.sessions += 1
            try:
                for _ in range(self.calls_per_session):
                    if time.monotonic() >= self.deadline:
                        break
                    if writer is None:
                        reader, writer = await asyncio.open_connection(host, int(port))
                    assert reader is not None
                    t0 = time.perf_counter()
                    writer.write(head)
                    status = await reader.readuntil(b"\r\n\r\n")
                    size = int(status.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                    answer = await reader.readexactly(size)
                    self.lat.append(time.perf_counter() - t0)
                    if not status.startswith(b"HTTP/1.1 200") or b'"isError":true' in answer:
                        self.errors.append(f"error: {status.splitlines()[0]!r} {answer[:200]!r}")
            except Exception as exc:  # counted; a new connection for the next session
                self.errors.append(f"{type(exc).__name__}: {exc}")
                if writer is not None:
                    writer.close()
                reader = writer = None
        if writer is not None:
            writer.close()


def tree_pids(pid: int) -> list[int]:
    """``pid`` and its descendants (``evals serve --workers N``: the supervisor and its worker processes)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in os.listdir(f"/proc/{p}/task"):
            with open(f"/proc/{p}/task/{task}/children") as f:
                todo.extend(int(c) for c in f.read().split())
    return out


def tree(fn: Callable[[int], float], pids: list[int]) -> float:
    return sum(fn(p) for p in pids)


@dataclass
class Row:
    workers: int
    sessions: int = 0
    calls: int = 0
    wall: float = 0.0
    server_cpu: float = 0.0
    client_cpu: float = 0.0
    lat: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    rss: tuple[float, float, float] = (0.0, 0.0, 0.0)
    fds: tuple[int, int, int] = (0, 0, 0)


def _client_process(base: str, sessions: range, calls_per_session: int, deadline: float, lean: bool, out: Any) -> None:
    async def run() -> None:
        load = Load(base, HTTPClientPool(), calls_per_session, deadline)
        cpu = time.process_time()
        async with load.pool:
            await asyncio.gather(*((load.lean_worker if lean else load.worker)(i) for i in sessions))
        out.send((load.lat, load.errors, load.sessions, time.process_time() - cpu))

    asyncio.events._set_running_loop(None)  # forked from the parent's running loop
    asyncio.run(run())


async def measure(workers: int, args: argparse.Namespace) -> Row:
    """One load run against ``evals serve --workers N`` (its own server, started and stopped here)."""
    for _ in range(5):  # another process may take the free port first: then our server exits, and we try again
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "evals.cli", "serve", "--port", str(port), "--workers", str(workers),
                                 "--benchmarks", "familytool-b", *(["--json-response"] if args.lean_load else [])],
                                env=dict(os.environ))
        base = f"http://127.0.0.1:{port}"
        await wait_for_health(base, tries=6000)
        await asyncio.sleep(1.0)
        if proc.poll() is None:
            break
    row = Row(workers)
    try:
        while len(pids := tree_pids(proc.pid)) < (workers + 1 if workers > 1 else 1):
            await asyncio.sleep(0.1)
        async with HTTPClientPool() as pool:  # warm-up: the KG opened, first calls served, in every process
            for i in range(8 * workers):
                url = f"{base}/mcp/familytool-b/{TASKS[i % len(TASKS)]}?session=warm{i}"
                async with pool.borrow() as http, connect(url, http_client=http, discovery_key=base) as warm:
                    for _ in range(5):
                        await warm.call_tool(*CALL)
        await asyncio.sleep(1.0)  # the warm-up's connections are closed (the workers' links to each other stay)
        fds_before = int(tree(open_fds, pids))
        rss_start = rss_peak = tree(rss_mib, pids)
        cpu_start = tree(cpu_s, pids)
        t0 = time.monotonic()
        deadline = t0 + args.minutes * 60
        ctx = multiprocessing.get_context("fork")
        clients = []
        for k in range(args.client_processes):
            ours, theirs = ctx.Pipe(duplex=False)
            p = ctx.Process(target=_client_process,
                            args=(base, range(k, args.sessions, args.client_processes), args.calls_per_session, deadline,
                                  args.lean_load, theirs))
            p.start()
            clients.append((p, ours))
        while any(p.is_alive() for p, _ in clients) and not all(c.poll() for _, c in clients):
            await asyncio.sleep(1.0)
            rss_peak = max(rss_peak, tree(rss_mib, pids))
        for p, c in clients:
            lat, errors, sessions, client_cpu = c.recv()
            p.join()
            row.client_cpu += client_cpu
            row.lat += lat
            row.errors += errors
            row.sessions += sessions
        row.wall = time.monotonic() - t0
        row.server_cpu = tree(cpu_s, pids) - cpu_start
        fds_loaded = int(tree(open_fds, pids))
        await asyncio.sleep(1.0)  # the server sees the clients' connections close
        row.rss = (rss_start, rss_peak, tree(rss_mib, pids))
        row.fds = (fds_before, fds_loaded, int(tree(open_fds, pids)))
        row.calls = len(row.lat)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return row


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=32, help="concurrent sessions (default 32)")
    ap.add_argument("--minutes", type=float, default=2.0, help="how long the load lasts, per run (default 2)")
    ap.add_argument("--calls-per-session", type=int, default=20, help="calls before a session is replaced (default 20)")
    ap.add_argument("--workers", type=int, nargs="+", default=[1],
                    help="`evals serve --workers` values to measure, interleaved, each against its own server "
                    "(default 1); calls/s is reported as a ratio to the first")
    ap.add_argument("--repeats", type=int, default=1, help="rounds over --workers (default 1); the median is reported")
    ap.add_argument("--client-processes", type=int, default=1,
                    help="processes the sessions are spread over (the load's own CPU: default 1)")
    ap.add_argument("--lean-load", action="store_true",
                    help="send the calls as bare HTTP requests (what the SDK's client sends; JSON answers, the server "
                    "started with --json-response) instead of through the MCP SDK's client, whose CPU per call is "
                    "above the server's: on a machine with few cores the load would otherwise take the cores the "
                    "server's processes need")
    args = ap.parse_args()

    runs: dict[int, list[Row]] = {w: [] for w in args.workers}
    for _ in range(args.repeats):
        for w in args.workers:
            runs[w].append(await measure(w, args))
            print(f"workers {w}: {runs[w][-1].calls / runs[w][-1].wall:.0f} calls/s (load {open('/proc/loadavg').read().split()[0]})",
                  flush=True)

    def rate(r: Row) -> float:
        return r.calls / r.wall

    table = Table(title=f"Load: {args.sessions} concurrent MCP sessions over HTTP for {args.minutes:g} min"
                        f"{' (lean load)' if args.lean_load else ''} "
                        f"({CALL[0]}, 2 hops; server in its own processes; median of {args.repeats})")
    for col in ("workers", "sessions opened", "calls", "calls/s", "vs first", "p50 ms", "p99 ms", "server CPU ms/call",
                "load's CPU ms/call", "errors", "RSS start/peak/end MiB", "fds before/loaded/after"):
        table.add_column(col, justify="right")
    base_rate = statistics.median(rate(r) for r in runs[args.workers[0]])
    ok = True
    for w, rows in runs.items():
        row = sorted(rows, key=rate)[len(rows) // 2]
        lat = row.lat
        table.add_row(
            str(w), str(row.sessions), str(row.calls), f"{rate(row):.0f}", f"{rate(row) / base_rate:.2f}",
            f"{pct(lat, 50) * 1e3:.1f}" if lat else "-", f"{pct(lat, 99) * 1e3:.1f}" if lat else "-",
            f"{row.server_cpu / len(lat) * 1e3:.2f}" if lat else "-", f"{row.client_cpu / len(lat) * 1e3:.2f}" if lat else "-",
            str(sum(len(r.errors) for r in rows)),
            " / ".join(f"{x:.0f}" for x in row.rss), " / ".join(map(str, row.fds)),
        )
        ok = ok and all(not r.errors and r.fds[2] <= r.fds[0] for r in rows)
    console = Console(width=max(Console().width, 150))
    console.print(table)
    for line in sorted({e for rows in runs.values() for r in rows for e in r.errors})[:5]:
        console.print(f"[red]error:[/] {line}", markup=True, highlight=False)
    console.print(f"machine: {os.cpu_count()} CPUs, load {open('/proc/loadavg').read().split()[0]} at the end; "
                  f"{'clean' if ok else 'NOT clean'}: errors must be 0 and the fds after the load back to those before it")
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    asyncio.run(main())
