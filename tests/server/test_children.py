"""``server.children``: one life for every child process. A child exits with its parent (even after
the parent's SIGKILL); stopping asks first, then SIGTERM, then SIGKILL after the one timeout; a forked
child is awaited by any number of callers at once."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from server.children import ForkedChild, stop_child, stop_children

ROOT = str(Path(__file__).resolve().parents[2])
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG and pidfds: Linux")

# a child that says it is ready once its SIGTERM handling is set, then sleeps (or reads stdin to its end)
CHILD = """
import signal, sys, time
mode = sys.argv[1]
if mode == "ignores-term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", flush=True)
if mode == "stops-at-eof":
    sys.stdin.read()
    sys.exit(0)
time.sleep(600)
"""


def _gone(pid: int, within: float = 30.0) -> bool:
    deadline = time.monotonic() + within
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def test_a_child_exits_with_its_parent_even_after_the_parents_sigkill() -> None:
    parent_code = (
        "import os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', "
        "'import os, sys, time; from server.children import exit_with_parent; "
        "exit_with_parent(int(sys.argv[1])); print(os.getpid(), flush=True); time.sleep(600)', str(os.getpid())],"
        " stdout=subprocess.PIPE, text=True)\n"
        "print(child.stdout.readline().strip(), flush=True)\n"
        "time.sleep(600)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", parent_code], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": ROOT})
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert not _gone(child, within=0.0)
        parent.kill()
        parent.wait(30)
        assert _gone(child), "the child outlived its parent's SIGKILL"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait(30)


async def _started(mode: str) -> asyncio.subprocess.Process:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", CHILD, mode, stdin=asyncio.subprocess.PIPE,
                                                stdout=asyncio.subprocess.PIPE)
    assert proc.stdout is not None
    assert await proc.stdout.readline() == b"ready\n"
    return proc


async def test_stop_asks_then_terms_then_kills_after_the_one_timeout() -> None:
    polite = await _started("stops-at-eof")
    assert polite.stdin is not None
    await stop_child(polite, polite.stdin.close, timeout=30)
    assert polite.returncode == 0  # it stopped when asked: no signal

    termed = await _started("sleeps")
    await stop_child(termed, timeout=30)
    assert termed.returncode == -signal.SIGTERM

    stubborn = await _started("ignores-term")
    await stop_child(stubborn, timeout=0.5)  # SIGTERM is ignored: SIGKILL once the timeout has passed
    assert stubborn.returncode == -signal.SIGKILL


def test_stop_all_stops_popen_and_multiprocessing_children_alike() -> None:
    popen = subprocess.Popen([sys.executable, "-c", CHILD, "ignores-term"], stdout=subprocess.PIPE, text=True)
    assert popen.stdout is not None and popen.stdout.readline() == "ready\n"
    proc = multiprocessing.get_context("spawn").Process(target=time.sleep, args=(600,))
    proc.start()
    # the timeout leaves a loaded machine time to run the TERMed child to its end (it dies of SIGTERM at
    # once when it gets a CPU); the child that ignores SIGTERM is killed only once the timeout has passed
    stop_children([popen, proc], timeout=5)
    assert popen.returncode == -signal.SIGKILL  # past the timeout
    assert proc.exitcode == -signal.SIGTERM  # at once


async def test_a_forked_child_is_awaited_by_several_callers_and_stopped() -> None:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: ready, then sleeps until it is stopped
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the test runner's handler
        os.close(r)
        os.write(w, b"x")
        time.sleep(600)
        os._exit(0)
    os.close(w)
    assert os.read(r, 1) == b"x"
    os.close(r)
    child = ForkedChild(pid)
    waiters = [asyncio.ensure_future(child.wait()) for _ in range(3)]
    await asyncio.sleep(0)
    assert not any(w.done() for w in waiters)
    await stop_child(child, timeout=30)
    assert child.returncode == -signal.SIGTERM
    async with asyncio.timeout(30):
        assert await asyncio.gather(*waiters) == [-signal.SIGTERM] * 3
    assert _gone(pid, within=0.0)
