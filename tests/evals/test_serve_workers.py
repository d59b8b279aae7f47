"""``evals serve --workers 2`` over real HTTP: sessions stay on the process that made them, the session
cap holds across processes, a killed worker's sessions get a clear error while the others go on, and
SIGTERM leaves no process behind."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from client.mcp_session import HTTPClientPool, connect
from client.runs import is_transient
from server.worker_routing import WORKER_HEADER

TASK = "KGMTUbench_0"
CALL = ("kg_neighbors", {"entity": "Bob"})
START_TIMEOUT_S = 600.0  # a loaded machine: two processes each load the benchmark


class Served:
    def __init__(self, proc: subprocess.Popen[str], url: str, pids: list[int], log: list[str]):
        self.proc, self.url, self.pids, self.log = proc, url, pids, log  # log: stderr's lines, read by a thread

    def wait_for(self, pattern: str, within: float = 240.0) -> re.Match[str]:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            exited = self.proc.poll() is not None
            time.sleep(0.1)
            for line in list(self.log):
                found = re.search(pattern, line)
                if found:
                    return found
            if exited:
                break
        raise AssertionError(f"no {pattern!r} in: {''.join(self.log)[-3000:]}")


def _start(*extra: str) -> Served:
    proc = subprocess.Popen(
        [sys.executable, "-m", "evals.cli", "serve", "--port", "0", "--benchmarks", "familytool-b", "--workers", "2",
         "--worker-header", *extra],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env={**os.environ, "COLUMNS": "500"},
    )
    try:  # the stop is in place before the wait: SIGTERM (pytest.exit) while it starts leaves no process behind
        return _wait_started(proc)
    except BaseException:
        _stop(Served(proc, "", [], []))
        raise


def _wait_started(proc: subprocess.Popen[str]) -> Served:
    assert proc.stderr is not None
    log: list[str] = []
    threading.Thread(target=lambda: log.extend(iter(proc.stderr.readline, "")), daemon=True).start()  # type: ignore[union-attr]
    served = Served(proc, "", [], log)
    try:
        found = served.wait_for(r"MCP server on (\S+) .*2 worker processes, pids (\d+), (\d+)", START_TIMEOUT_S)
    except AssertionError:
        proc.kill()
        raise
    served.url, served.pids = found.group(1), [int(found.group(2)), int(found.group(3))]
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:  # announced before the workers listen, as one process does
        try:
            httpx2.get(served.url + "/health", timeout=5)
            return served
        except httpx2.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("evals serve --workers 2 did not answer /health")


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


async def _one_name_per_worker(served: Served) -> dict[str, str]:
    """A fresh session name owned by each process (the debug header says which served it)."""
    by_worker: dict[str, str] = {}
    async with httpx2.AsyncClient(timeout=60) as http:
        for _ in range(200):
            name = uuid.uuid4().hex
            r = await http.get(f"{served.url}/health?session={name}")
            by_worker.setdefault(r.headers[WORKER_HEADER], name)
            if len(by_worker) == 2:
                return by_worker
    raise AssertionError(f"names of one process only: {by_worker}")


async def _call(url: str) -> Any:
    async with HTTPClientPool() as pool, pool.borrow() as http, connect(url, http_client=http) as c:
        return await asyncio.wait_for(c.call_tool(*CALL), 60)


def _request(path: str, name: str, *, extra: str = "", body: bytes = b"", close: bool = False) -> bytes:
    head = (f"POST {path}?session={name} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            f"accept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\n{extra}"
            f"content-length: {len(body)}\r\n" + ("connection: close\r\n" if close else "") + "\r\n")
    return head.encode() + body


def _tool_call(id_: int) -> bytes:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {}}
    return json.dumps({"jsonrpc": "2.0", "id": id_, "method": "tools/call",
                       "params": {"name": CALL[0], "arguments": CALL[1], "_meta": meta}}).encode()


def _port(served: Served) -> int:
    return int(served.url.rsplit(":", 1)[1])


async def test_a_killed_worker_is_restarted_and_only_its_begun_sessions_are_lost() -> None:
    """Issue 46 item 7: a dead process refused 1/N of all new sessions for good ("state is lost" for names
    never seen), and `evals run` recorded those episodes as not transient."""
    served = _start()
    new_pid = None
    try:
        by_worker = await _one_name_per_worker(served)
        url = f"{served.url}/mcp/familytool-b/{TASK}?session="
        for name in by_worker.values():
            assert not (await _call(url + name)).is_error
        os.kill(served.pids[0], signal.SIGKILL)
        assert _gone(served.pids[0], 30)
        new_pid = int(served.wait_for(r"worker process 0 restarted \(pid (\d+)\)").group(1))
        with pytest.raises(BaseException) as raised:  # the session begun on the dead process: its state is gone
            await _call(url + by_worker["0"])
        lost = raised.value
        while isinstance(lost, BaseExceptionGroup) and len(lost.exceptions) == 1:
            lost = lost.exceptions[0]
        assert isinstance(lost, MCPError) and "state is lost" in str(lost), repr(lost)
        assert is_transient(raised.value)  # `evals run` runs the episode again on resume
        fresh = await _one_name_per_worker(served)  # names the restarted process owns, never seen: new sessions
        assert not (await _call(url + fresh["0"])).is_error
        assert not (await _call(url + by_worker["1"])).is_error  # the other process's session went on
        assert served.proc.poll() is None
    finally:
        _stop(served)
    assert served.proc.returncode == 0
    assert all(_gone(pid, 30) for pid in [*served.pids, new_pid] if pid)
    assert any(f"worker process 0 (pid {served.pids[0]}) exited" in line for line in served.log)


async def test_a_stuck_worker_blocks_no_other_process_and_is_restarted() -> None:
    """Issue 46 item 1: hand-overs to a process that does not drain its socket blocked the sending
    process too (a blocking ``send_fds`` in its event loop). A stopped process stands for a stuck one."""
    served = _start("--worker-stuck-timeout", "20")
    flood: list[socket.socket] = []
    try:
        by_worker = await _one_name_per_worker(served)
        os.kill(served.pids[0], signal.SIGSTOP)  # alive, answers nothing
        pad = "x-pad: " + "a" * 60000 + "\r\n"  # each hand-over carries ~60 KB: the socket fills in a few
        for _ in range(24):  # about half land on process 1, which hands them to the stopped one
            sock = socket.create_connection(("127.0.0.1", _port(served)))
            sock.sendall(_request("/health", by_worker["0"], extra=pad))
            flood.append(sock)
        answered = None
        deadline = time.monotonic() + 120  # a hang bound: today's process 1 never answers again
        while answered is None and time.monotonic() < deadline:
            probe = socket.create_connection(("127.0.0.1", _port(served)))
            probe.settimeout(5)  # a connection the kernel gave the stopped process is never answered: try another
            try:
                probe.sendall(f"GET /health?session={by_worker['1']} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n".encode())
                answered = probe.recv(65536)
            except (TimeoutError, ConnectionResetError):  # reset: the stopped process was killed as stuck meanwhile
                pass
            finally:
                probe.close()
        assert answered is not None and answered.startswith(b"HTTP/1.1 200"), answered
        assert f"{WORKER_HEADER}: 1".encode() in answered
        # the supervisor sees the stopped process miss its heartbeat: killed, restarted
        served.wait_for(r"worker process 0 \(pid \d+\) has not answered for \d+ s \(stuck\): stopped")
        served.wait_for(r"worker process 0 restarted \(pid \d+\)")
        for sock in flood:  # every flooded connection ends (a 503, or closed with the stopped process): none hangs
            sock.settimeout(60)
            with contextlib.suppress(ConnectionError):
                while sock.recv(65536):
                    pass
        fresh = await _one_name_per_worker(served)
        assert not (await _call(f"{served.url}/mcp/familytool-b/{TASK}?session={fresh['0']}")).is_error
    finally:
        for sock in flood:
            sock.close()
        with contextlib.suppress(ProcessLookupError):
            os.kill(served.pids[0], signal.SIGCONT)
        _stop(served)
    assert served.proc.returncode == 0


async def test_the_router_and_the_server_read_a_session_alike(served: Served) -> None:
    """Issue 46 item 8: a session named so that the router missed it (``%73ession=``), or a request pipelined
    behind another session's, was served where it landed: one name, a second state on another process."""
    by_worker = await _one_name_per_worker(served)
    for _ in range(12):  # new connections: the kernel spreads them between the processes
        async with httpx2.AsyncClient(timeout=60) as one:
            r = await one.get(f"{served.url}/health?%73ession={by_worker['0']}")
        assert r.headers[WORKER_HEADER] == "0"
    path = f"/mcp/familytool-b/{TASK}"
    for first, second in (("0", "1"), ("1", "0")):
        with socket.create_connection(("127.0.0.1", _port(served))) as sock:
            sock.settimeout(60)
            call = f"mcp-method: tools/call\r\nmcp-name: {CALL[0]}\r\n"
            sock.sendall(_request(path, by_worker[first], extra=call, body=_tool_call(1))
                         + _request(path, by_worker[second], extra=call, body=_tool_call(2), close=True))
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        text = answer.decode()
        assert text.count("HTTP/1.1 ") == 2, text
        assert "held by another server process" in text, text  # the second was refused, not given a second state


async def test_no_process_index_on_responses_unless_asked(tmp_path: Path) -> None:
    """Issue 46 item 8: every response said which process served it (and so which holds a session)."""
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from server import HTTPLimits
    from server.worker_routing import Router, reuseport_socket, serve_routed

    app = Starlette(routes=[Route("/", lambda _: PlainTextResponse("ok"))])
    for asked in (False, True):
        sock = reuseport_socket("127.0.0.1", 0)
        sock.listen(16)
        ready, stop = asyncio.Event(), asyncio.Event()
        task = asyncio.create_task(serve_routed(app, sock, Router(0, 1, b"k" * 16, tmp_path),
                                                limits=HTTPLimits(), on_ready=ready.set, stop=stop, worker_header_on=asked))
        try:
            await asyncio.wait_for(ready.wait(), 60)
            async with httpx2.AsyncClient(timeout=60) as http:
                r = await http.get(f"http://127.0.0.1:{sock.getsockname()[1]}/?session=abc")
            assert r.text == "ok" and (WORKER_HEADER in r.headers) is asked
        finally:
            stop.set()
            await asyncio.wait_for(task, 60)
            sock.close()


def test_the_worker_header_is_refused_off_loopback() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "evals.cli", "serve", "--host", "0.0.0.0", "--token", "t", "--port", "0",
         "--workers", "2", "--worker-header"], capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2 and "--worker-header" in proc.stderr and "loopback" in proc.stderr


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


def _episodes(run_dir: Path) -> dict[str, str]:
    """Each task's newest trace status in a run directory."""
    newest: dict[str, str] = {}
    traces = run_dir / "traces.jsonl"
    for line in traces.read_text().splitlines() if traces.exists() else []:
        record = json.loads(line)
        newest[record["task_id"]] = record["status"]
    return newest


def test_killing_a_worker_mid_run_loses_no_episode_after_a_resume(tmp_path: Path) -> None:
    """Issue 46 item 7: episodes of a killed process's sessions were recorded as not transient, so a resume kept
    them errored. Now they are transient (or go to the restarted process): a rerun completes every one."""
    served = _start()
    run = [sys.executable, "-m", "evals.cli", "run", "familytool-b", "--model", "oracle:0", "--limit", "40",
           "--concurrency", "2", "--server-url", served.url, "--run-dir", str(tmp_path / "run")]
    try:
        first = subprocess.Popen(run, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _episodes(tmp_path / "run") and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(served.pids[0], signal.SIGKILL)  # mid-run: episodes in flight on it, more to come
        _, err = first.communicate(timeout=START_TIMEOUT_S)
        assert first.returncode in (0, 1), err
        traces = [json.loads(line) for line in (tmp_path / "run" / "traces.jsonl").read_text().splitlines()]
        assert all(t["error"]["retryable"] for t in traces if t["status"] == "errored"), traces  # transient: rerun
        served.wait_for(r"worker process 0 restarted")
        again = subprocess.run(run, capture_output=True, text=True, timeout=START_TIMEOUT_S)
        assert again.returncode == 0, again.stderr[-3000:]
    finally:
        _stop(served)
    episodes = _episodes(tmp_path / "run")
    assert len(episodes) == 40 and set(episodes.values()) == {"completed"}, episodes


def test_serve_is_one_process_unless_asked() -> None:
    """Issue 45 item 1: `evals serve` with no flags is one process (what an assistant client needs)."""
    import argparse

    from evals.cli_parts.serve import build_serve_parser

    parser = argparse.ArgumentParser()
    build_serve_parser(parser)
    assert parser.parse_args([]).workers == 1
    assert parser.parse_args(["--workers", "auto"]).workers is None  # auto: one per CPU
    assert parser.parse_args(["--workers", "3"]).workers == 3
