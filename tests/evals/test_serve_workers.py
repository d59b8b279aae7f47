"""``evals serve --workers 2`` over real HTTP: sessions stay on the process that made them, the session
cap holds across processes, a killed worker's sessions get a clear error while the others go on, and
SIGTERM leaves no process behind."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from client.mcp_session import HTTPClientPool, connect
from server.worker_routing import WORKER_HEADER

TASK = "KGMTUbench_0"
CALL = ("kg_neighbors", {"entity": "Bob"})
START_TIMEOUT_S = 600.0  # a loaded machine: two processes each load the benchmark


class Served:
    def __init__(self, proc: subprocess.Popen[str], url: str, pids: list[int]):
        self.proc, self.url, self.pids = proc, url, pids
        self.log: list[str] = []


def _start(*extra: str) -> Served:
    proc = subprocess.Popen(
        [sys.executable, "-m", "evals.cli", "serve", "--port", "0", "--benchmarks", "familytool-b", "--workers", "2", *extra],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env={**os.environ, "COLUMNS": "500"},
    )
    try:  # the stop is in place before the wait: SIGTERM (pytest.exit) while it starts leaves no process behind
        return _wait_started(proc)
    except BaseException:
        _stop(Served(proc, "", []))
        raise


def _wait_started(proc: subprocess.Popen[str]) -> Served:
    assert proc.stderr is not None
    deadline = time.monotonic() + START_TIMEOUT_S
    lines: list[str] = []
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
        found = re.search(r"MCP server on (\S+) .*2 worker processes, pids (\d+), (\d+)", line)
        if found:
            served = Served(proc, found.group(1), [int(found.group(2)), int(found.group(3))])
            served.log = lines
            while time.monotonic() < deadline:  # announced before the workers listen, as one process does
                try:
                    httpx2.get(served.url + "/health", timeout=5)
                    return served
                except httpx2.HTTPError:
                    time.sleep(0.1)
    raise AssertionError(f"evals serve --workers 2 did not start: {''.join(lines)[-2000:]}")


def _stop(served: Served) -> None:
    if served.proc.poll() is None:
        served.proc.send_signal(signal.SIGTERM)
        try:
            served.proc.wait(60)
        except subprocess.TimeoutExpired:
            served.proc.kill()
            for pid in served.pids:
                _kill_quietly(pid)
            raise


def _kill_quietly(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    s = _start("--max-sessions", "64", "--max-sessions-per-endpoint", "64")
    try:
        yield s
    finally:
        _stop(s)


def _recorder(seen: dict[str, set[str]]) -> Any:
    """An httpx event hook: which process (the response's worker header) served each session's requests."""

    async def hook(response: httpx2.Response) -> None:
        named = response.request.url.params.get("session")
        sid = named or response.request.headers.get("mcp-session-id") or response.headers.get("mcp-session-id")
        if sid:
            seen[sid].add(response.headers[WORKER_HEADER])

    return hook


async def test_named_sessions_stay_on_the_process_that_made_them(served: Served) -> None:
    seen: dict[str, set[str]] = defaultdict(set)
    names = [uuid.uuid4().hex for _ in range(40)]
    async with HTTPClientPool() as pool:

        async def episode(name: str) -> None:
            async with pool.borrow() as http:
                http.event_hooks["response"] = [_recorder(seen)]
                async with connect(f"{served.url}/mcp/familytool-b/{TASK}?session={name}", http_client=http,
                                   discovery_key=served.url) as c:
                    for _ in range(4):
                        result = await c.call_tool(*CALL)
                        assert not result.is_error, result.content

        await asyncio.wait_for(asyncio.gather(*(episode(n) for n in names)), 300)
    assert set(seen) == set(names)
    assert all(len(workers) == 1 for workers in seen.values()), {k: v for k, v in seen.items() if len(v) > 1}
    assert {w for ws in seen.values() for w in ws} == {"0", "1"}  # both processes served sessions


async def test_handshake_sessions_stay_on_their_process_when_one_connection_carries_them(served: Served) -> None:
    created: dict[str, set[str]] = defaultdict(set)
    async with contextlib.AsyncExitStack() as stack:
        clients = []
        for _ in range(12):  # each on connections of its own: the kernel spreads them between the processes
            http = await stack.enter_async_context(httpx2.AsyncClient(event_hooks={"response": [_recorder(created)]},
                                                                      timeout=60))
            clients.append(await stack.enter_async_context(
                Client(streamable_http_client(f"{served.url}/mcp/familytool-b/{TASK}", http_client=http), mode="legacy")))
        for c in clients:
            for _ in range(3):
                assert not (await asyncio.wait_for(c.call_tool(*CALL), 60)).is_error
        assert len(created) == 12 and all(len(w) == 1 for w in created.values()), created
        assert {w for ws in created.values() for w in ws} == {"0", "1"}
        # now one connection carries every session's requests in turn: it is handed between the processes
        served_by: dict[str, set[str]] = defaultdict(set)
        async with httpx2.AsyncClient(limits=httpx2.Limits(max_connections=1), timeout=60,
                                      event_hooks={"response": [_recorder(served_by)]}) as one:
            for round_ in range(2):
                for sid in created:
                    r = await one.post(f"{served.url}/mcp/familytool-b/{TASK}",
                                       json={"jsonrpc": "2.0", "id": round_, "method": "tools/list"},
                                       headers={"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25",
                                                "accept": "application/json, text/event-stream"})
                    assert r.status_code == 200 and "kg_neighbors" in r.text
    assert served_by == created


async def test_the_session_cap_holds_across_processes(served: Served) -> None:
    names = [uuid.uuid4().hex for _ in range(100)]
    async with HTTPClientPool() as pool:

        async def call(name: str) -> bool:
            async with pool.borrow() as http, connect(f"{served.url}/mcp/familytool-b/{TASK}?session={name}",
                                                      http_client=http, discovery_key=served.url) as c:
                try:
                    return not (await asyncio.wait_for(c.call_tool(*CALL), 60)).is_error
                except MCPError as exc:
                    assert "is closed" in str(exc)
                    return False

        for name in names:  # each opens a named session
            assert await call(name)
        alive = [name for name in names if await call(name)]
    # --max-sessions 64 in total, not 64 per process: two processes would otherwise keep all 100
    assert 0 < len(alive) <= 64


async def test_a_killed_worker_fails_its_sessions_clearly_and_the_others_go_on() -> None:
    served = _start()
    try:
        by_worker: dict[str, str] = {}
        async with httpx2.AsyncClient(timeout=60) as http:
            for _ in range(64):
                name = uuid.uuid4().hex
                r = await http.get(f"{served.url}/health?session={name}")
                by_worker.setdefault(r.headers[WORKER_HEADER], name)
                if len(by_worker) == 2:
                    break
        assert set(by_worker) == {"0", "1"}
        url = f"{served.url}/mcp/familytool-b/{TASK}?session="
        async with HTTPClientPool() as pool:
            for name in by_worker.values():
                async with pool.borrow() as http, connect(url + name, http_client=http) as c:
                    assert not (await c.call_tool(*CALL)).is_error
        os.kill(served.pids[0], signal.SIGKILL)
        assert _gone(served.pids[0], 30)
        async with httpx2.AsyncClient(timeout=60) as http:
            r = await http.post(url + by_worker["0"], json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                headers={"accept": "application/json, text/event-stream"})
        assert r.status_code == 503
        assert "held by server process 0 of 2, which has exited" in r.json()["error"]["message"]
        async with HTTPClientPool() as pool:
            async with pool.borrow() as http, connect(url + by_worker["1"], http_client=http) as c:
                for _ in range(3):
                    assert not (await asyncio.wait_for(c.call_tool(*CALL), 60)).is_error
        assert served.proc.poll() is None  # the server goes on with one process
    finally:
        _stop(served)
    assert served.proc.returncode == 0
    assert all(_gone(pid, 30) for pid in served.pids)
    assert served.proc.stderr is not None
    rest = served.proc.stderr.read()
    assert f"worker process 0 (pid {served.pids[0]}) exited" in rest


def test_workers_are_refused_where_one_process_must_hold_the_state() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "evals.cli", "serve", "--port", "0", "--benchmarks", "familytool-b", "--allow-writes",
         "--workers", "2"], capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2 and "--workers 2" in proc.stderr and "Traceback" not in proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "evals.cli", "serve", "--port", "0", "--max-sessions", "1", "--workers", "2"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2 and "--max-sessions 1 cannot be shared by 2 worker processes" in proc.stderr
