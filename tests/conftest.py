"""Shared fixtures: the benchmark data directory and a private cache for KG databases."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import threading
import time
from collections.abc import Generator, Mapping
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


def _data_dir() -> Path:
    env = os.environ.get("EVALS_DATA_DIR")
    return Path(env) if env else REPO.parent / "shared" / "data"


# Make every test (and every subprocess it starts) read the same data and write KG caches to a
# throw-away directory, never to the user's cache.
os.environ.setdefault("EVALS_DATA_DIR", str(_data_dir()))


_stopped_by_sigterm = False


def _stop_on_sigterm(signum: int, frame: FrameType | None) -> None:
    """SIGTERM (``timeout``, a CI job cancelled, test.sh stopped): end the session as pytest ends one
    (fixtures torn down, servers they started stopped), with one line and exit status 143."""
    global _stopped_by_sigterm
    _stopped_by_sigterm = True
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM kills at once
    pytest.exit("stopped by SIGTERM", returncode=128 + signal.SIGTERM)


def _children() -> list[int]:
    """The processes this one started that still run (from /proc; none elsewhere)."""
    me, found = os.getpid(), []
    try:
        entries = list(os.scandir("/proc"))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == me and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def _stop_children(grace_s: float = 30.0) -> None:
    """After SIGTERM: a server a helper started and had not yet handed to its fixture's teardown (it
    was still waiting for it to be ready) is stopped too, SIGTERM first (it stops its own workers)."""
    pids = _children()
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while pids and time.monotonic() < deadline:
        for pid in list(pids):
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(pid, os.WNOHANG)[0] == 0:
                    continue
            pids.remove(pid)
        time.sleep(0.05)
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _stopped_by_sigterm:
        _stop_children()


def pytest_configure(config: pytest.Config) -> None:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _stop_on_sigterm)


_DATA_WORDS = re.compile(r"\b(data|EVALS_DATA_DIR|subset|KG files|papers|wheel)\b", re.I)
_MISSING_WORDS = re.compile(r"not found|absent|not in the|\bno\b", re.I)


def missing_data_reason(reason: str) -> bool:
    """A skip that says benchmark data (a data file, the papers' texts, BFCL's wheel) is missing."""
    return bool(_DATA_WORDS.search(reason) and _MISSING_WORDS.search(reason))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> pytest.TestReport:
    """``EVALS_REQUIRE_DATA=1`` (``.ci/run`` sets it): a test skipped because data is missing fails
    instead, naming what is missing: in CI every data set is present, so a skip there hides a test."""
    report: pytest.TestReport = yield
    if report.skipped and os.environ.get("EVALS_REQUIRE_DATA") == "1" and isinstance(report.longrepr, tuple):
        reason = str(report.longrepr[2])
        if missing_data_reason(reason):
            report.outcome = "failed"
            report.longrepr = f"EVALS_REQUIRE_DATA=1: data missing where CI must have it: {reason}"
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    """Ours again after each set-up: a fixture may install its own SIGTERM handler (``ray.init``
    installs one that raises ``SystemExit`` inside whatever test runs: a failure, and the session
    would go on)."""
    try:
        return (yield)
    finally:
        if signal.getsignal(signal.SIGTERM) not in (_stop_on_sigterm, signal.SIG_DFL):
            signal.signal(signal.SIGTERM, _stop_on_sigterm)


@pytest.fixture(scope="session", autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    os.environ["EVALS_CACHE_DIR"] = str(tmp_path_factory.mktemp("evals-cache"))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    d = _data_dir()
    if not (d / "familytool" / "familytool-b.jsonl").is_file():
        pytest.skip(f"benchmark data not found under {d}; set EVALS_DATA_DIR (e.g. to ../shared/data)")
    return d


TIMING_KEYS = frozenset({"episode_id", "started_at", "finished_at", "duration_s", "t", "latency_s"})


def _without_timing(value: object) -> object:
    if isinstance(value, Mapping):  # a trace read from a run is a Mapping whose events are read on access
        return {k: _without_timing(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [_without_timing(v) for v in value]
    return value


@pytest.fixture
def run_traces():  # noqa: ANN201
    """``run_traces(run_dir)``: every trace of a run by task id, without what differs between any two
    runs of the same tasks (episode ids, clock times, durations, latencies): what must be equal
    whatever the layout (transport, workers, executor)."""
    from client.runs import RunDir

    def read(run: Path) -> dict[str, object]:
        return {r["task_id"]: _without_timing(r) for r in RunDir.open(run).iter_traces(dedupe=False)}

    return read


@pytest.fixture
def wait_for_traces():  # noqa: ANN201
    """``wait_for_traces(traces_path, n, proc, timeout=120)``: wait until a run's ``traces.jsonl``
    has ``n`` lines, while the ``evals run`` process ``proc`` runs; fail if it exits first (or after
    ``timeout`` seconds, a safety net)."""
    import time

    def wait(traces: Path, n: int, proc: Any, timeout: float = 120) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline and proc.poll() is None:
            if traces.exists() and traces.read_bytes().count(b"\n") >= n:
                return
            time.sleep(0.02)
        err = proc.stderr.read()[-3000:] if proc.poll() is not None and proc.stderr is not None else ""
        raise AssertionError(f"fewer than {n} traces before the deadline (exit status {proc.poll()}) {err}")

    return wait


@pytest.fixture
def resume_to_the_end():  # noqa: ANN201
    """``resume_to_the_end(args, run_path, n, timeout=300)``: run the ``evals run`` command ``args`` (a
    resume) to its end (``timeout``: a safety net) and check that it exits 0, that its summary has all ``n`` tasks completed at tool_em 100,
    and that the traces hold each task exactly once; returns the traced task ids."""
    import json
    import subprocess

    from client.runs import RunDir

    def resume(args: list[str], run: Path, n: int, timeout: float = 300) -> list[str]:
        done = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, done.stderr[-3000:]
        summary = json.loads(done.stdout.strip().splitlines()[-1])
        assert summary["completed"] == n and summary["metrics"]["tool_em"] == 100.0
        ids = [r["task_id"] for r in RunDir.open(run).iter_traces(dedupe=False)]
        assert len(ids) == len(set(ids)) == n
        return ids

    return resume
