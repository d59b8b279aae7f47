"""SIGTERM to a pytest session while a fixture is starting a server leaves none running (issue 46,
item 12): the helpers that start servers put the stop in place before they wait for the server to
be ready (tests/evals/test_serve_workers.py, tests/security/test_runs_untrusted.py), and after
SIGTERM the session stops, and waits for, whatever child it still has (tests/conftest.py), so a
helper that was still waiting, or one written later without that care, leaves nothing behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

WAITING_FIXTURE = '''
import subprocess, sys, time
from pathlib import Path
import pytest

HERE = Path(__file__).parent

@pytest.fixture
def server():
    # a server that never answers, and never writes (a write to a closed pipe would end it anyway)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    (HERE / "server.pid").write_text(str(proc.pid))
    while True:  # waiting for it to be ready, before any try/finally
        time.sleep(0.05)
    yield proc

def test_uses_the_server(server):
    pass
'''


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if int(Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return out


@pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "1"]], ids=["one-process", "xdist"])
def test_sigterm_while_a_fixture_waits_for_its_server_leaves_none_running(tmp_path: Path, workers: list[str]) -> None:
    (tmp_path / "test_waiting.py").write_text(WAITING_FIXTURE)
    (tmp_path / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), str(REPO)])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "conftest", "-q", "-p", "no:cacheprovider", *workers,
         "-c", str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path), str(tmp_path / "test_waiting.py")],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    pid_file = tmp_path / "server.pid"
    server = None
    try:
        deadline = time.monotonic() + 120
        while not pid_file.exists() or not pid_file.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[0][-3000:]
            time.sleep(0.02)
        server = int(pid_file.read_text())
        for pid in [*_children(proc.pid), proc.pid]:  # as test.sh does: pytest and its xdist workers
            os.kill(pid, signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
        left_running = _alive(server)  # pytest has exited: what it started is stopped by now, not later
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate(timeout=30)
        if server is not None and _alive(server):
            os.kill(server, signal.SIGKILL)
    assert proc.returncode == 143 and "stopped by SIGTERM" in out, out[-3000:]
    assert not left_running, f"the server (pid {server}) was left running after SIGTERM:\n{out[-2000:]}"
