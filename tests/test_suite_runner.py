"""test.sh and the pytest session it runs: failed tests are named (issue 26, item 10); a quick mode
runs a few-minute subset that still touches every package, and SIGTERM stops a run cleanly, whether
it reaches pytest or test.sh (issue 37, item 9)."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TEST_SH = REPO / "test.sh"
QUICK = REPO / "tests" / "quick.txt"
PACKAGES = ("kg_store", "tool_specs", "server", "client", "evals", "security")


def _wait_for(path: Path, proc: subprocess.Popen[str], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out, _ = proc.communicate(timeout=30)
            raise AssertionError(f"{path.name} never appeared (exit status {proc.returncode}): {out[-3000:]}")
        time.sleep(0.05)


def test_every_pytest_run_of_test_sh_names_failed_tests() -> None:
    runs = [line for line in TEST_SH.read_text().splitlines() if re.search(r"\brun_pytest\s+-", line)]
    assert len(runs) >= 2, runs  # the whole suite, and the KG/server tests on the second engine
    for line in runs:
        assert re.search(r"\s-r\w*f", line), f"test.sh runs pytest without -rf (failed tests unnamed): {line.strip()}"


def quick_entries() -> list[str]:
    return [line.split("#")[0].strip() for line in QUICK.read_text().splitlines() if line.split("#")[0].strip()]


def test_the_quick_list_names_existing_tests_of_every_package() -> None:
    entries = quick_entries()
    assert entries and len(entries) == len(set(entries))
    for entry in entries:
        assert (REPO / entry.split("::")[0]).is_file(), f"tests/quick.txt: {entry}: no such test file"
    covered = {Path(e).parts[1] for e in entries if len(Path(e).parts) > 2}
    assert set(PACKAGES) <= covered, f"tests/quick.txt covers no test of {sorted(set(PACKAGES) - covered)}"
    assert any(len(Path(e.split('::')[0]).parts) == 2 for e in entries)  # and the repository-wide tests


def _fake_checkout(tmp_path: Path, pytest_body: str) -> Path:
    """A copy of test.sh, scripts/env.sh and tests/quick.txt beside a fake ``.venv`` whose python, ruff
    and mypy log their arguments (python runs ``pytest_body`` for ``-m pytest``): test.sh itself runs,
    nothing is installed and no test runs."""
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    (root / "tests").mkdir()
    shutil.copy(TEST_SH, root / "test.sh")
    shutil.copy(REPO / "scripts" / "env.sh", root / "scripts" / "env.sh")
    shutil.copy(QUICK, root / "tests" / "quick.txt")
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    bin_dir = root / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    extras = re.search(r'setup_venv "([^"]*)"', TEST_SH.read_text())
    assert extras is not None
    digest = hashlib.sha256((root / "pyproject.toml").read_bytes()).hexdigest()
    (root / ".venv" / ".installed").write_text(f"{digest} {extras.group(1)}\n")
    for tool in ("ruff", "mypy"):
        (bin_dir / tool).write_text(f'#!/bin/sh\necho "{tool} $*" >> "$CALLS"\n')
    (bin_dir / "python").write_text(f'#!/bin/bash\necho "python $*" >> "$CALLS"\n{pytest_body}\n')
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    return root


def test_test_sh_quick_runs_the_quick_list_once_after_lint(tmp_path: Path) -> None:
    root = _fake_checkout(tmp_path, "exit 0")
    calls = tmp_path / "calls"
    done = subprocess.run(["bash", str(root / "test.sh"), "--quick"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "CALLS": str(calls)})
    assert done.returncode == 0, done.stdout + done.stderr
    lines = calls.read_text().splitlines()
    assert lines[0].startswith("ruff check") and lines[1].startswith("mypy")
    pytest_runs = [line.split() for line in lines if line.startswith("python -m pytest")]
    assert len(pytest_runs) == 1  # no second engine pass in quick mode
    assert "--quick" not in pytest_runs[0] and pytest_runs[0][-len(quick_entries()):] == quick_entries()
    assert re.search(r"\s-r\w*f", " ".join(pytest_runs[0]))
    assert re.search(r"== pytest.*\(\d+ min \d+ s so far\)", done.stdout), done.stdout  # a sign of life, with the time


def test_sigterm_to_test_sh_stops_the_pytest_it_runs(tmp_path: Path) -> None:
    """Without forwarding, bash dies at SIGTERM and leaves pytest running on its own."""
    got = tmp_path / "pytest-got-term"
    started = tmp_path / "pytest-started"
    body = (f'if [ "$1" = "-m" ]; then trap \'touch "{got}"; exit 143\' TERM; touch "{started}"; '
            'for _ in $(seq 600); do sleep 0.1; done; fi')
    root = _fake_checkout(tmp_path, body)
    proc = subprocess.Popen(["bash", str(root / "test.sh"), "tests/x"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, "CALLS": str(tmp_path / "calls")},
                            start_new_session=True)
    try:
        _wait_for(started, proc)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 143, out
        assert got.exists(), f"pytest did not get SIGTERM: {out}"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate(timeout=30)


SLOW_TESTS = '''
import signal, sys, time
from pathlib import Path
import pytest

HERE = Path(__file__).parent

@pytest.fixture(scope="module")
def head():
    # as ray.init() does in the process that calls it
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(signum))
    yield
    (HERE / "torn-down").touch()

def test_a(head):
    (HERE / "a-started").touch()
    time.sleep(120)

def test_b(head):
    (HERE / "b-started").touch()
    time.sleep(120)
'''


@pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "1"]], ids=["one-process", "xdist"])
def test_sigterm_stops_a_pytest_session_cleanly(tmp_path: Path, workers: list[str]) -> None:
    """SIGTERM to pytest (this repository's conftest loaded) while a fixture holds Ray's handler: the
    session ends at once, fixtures torn down, one line, exit 143; no traceback, no failed test, no
    further test."""
    (tmp_path / "test_slow.py").write_text(SLOW_TESTS)
    (tmp_path / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), str(REPO)])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "conftest", "-q", "-rf", "-p", "no:cacheprovider", *workers,
         "-c", str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path), str(tmp_path / "test_slow.py")],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        _wait_for(tmp_path / "a-started", proc)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate(timeout=30)
    assert proc.returncode == 143, out
    assert "stopped by SIGTERM" in out, out
    for noise in ("Traceback", "pluggy", "SystemExit", "FAILED", "failed"):
        assert noise not in out, f"{noise!r} in:\n{out}"
    assert not (tmp_path / "b-started").exists(), out
    if "no:xdist" in workers:  # an xdist worker is stopped by its controller (test.sh signals the workers too)
        assert (tmp_path / "torn-down").exists(), out


@pytest.mark.parametrize("reason, is_data", [
    ("UltraTool data not found; set EVALS_DATA_DIR (e.g. to ../shared/data)", True),
    ("ToolHop subset not found at /x/toolhop/subset.json", True),
    ("ComplexFuncBench data is not in the data directory", True),
    ("no BFCL wheel in the data directory", True),
    ("/work/shared/papers/familytool.txt not found", True),
    ("FamilyTool KG files ['familykg-b.txt'] not found in /d; set EVALS_DATA_DIR to the data directory", True),
    ("mcp-server-time is not installed beside this interpreter (the dev extra installs it)", False),
    ("this host has no IPv6 loopback", False),
    ("npm tools not installed (.ci/run: npm install --prefix .ci)", False),
])
def test_which_skips_say_data_is_missing(reason: str, is_data: bool, request: pytest.FixtureRequest) -> None:
    rules = request.config.pluginmanager.get_plugin(str(REPO / "tests" / "conftest.py"))
    assert rules is not None
    assert rules.missing_data_reason(reason) is is_data


def test_a_data_skip_fails_when_ci_requires_the_data(tmp_path: Path) -> None:
    """Issue 45, item 8: with EVALS_REQUIRE_DATA=1 (.ci/run) a test that would skip for missing data fails."""
    test = "tests/evals/test_epochs.py"
    env = {**os.environ, "EVALS_DATA_DIR": str(tmp_path)}
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", test, "-k", "oracle_over_three_epochs"]
    skipped = subprocess.run(base, cwd=REPO, env={**env, "EVALS_REQUIRE_DATA": "0"}, capture_output=True, text=True,
                             timeout=300)
    assert skipped.returncode == 0 and "skipped" in skipped.stdout, skipped.stdout[-2000:]
    failed = subprocess.run(base, cwd=REPO, env={**env, "EVALS_REQUIRE_DATA": "1"}, capture_output=True, text=True,
                            timeout=300)
    assert failed.returncode == 1 and "data missing where CI must have it" in failed.stdout, failed.stdout[-2000:]
