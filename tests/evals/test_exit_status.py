"""`evals run`'s exit status, its last stderr line and the circuit breaker, with the real SDKs against local stand-ins."""

from __future__ import annotations

import functools
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter

import pytest
from fake_providers import FakeProviderServer, anthropic_error, openai_chat, openai_error

from client.runs import RunDir
from evals.benchmarks.familytool.data import load_tasks


@functools.cache
def tasks() -> list:
    return load_tasks("b")[:12]


def _evals(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evals.cli", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def _run(fake_url: str, run_dir, *extra: str, model: str = "openai:m", limit: int = 12,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return _evals("run", "familytool-b", "--model", model, "--base-url", fake_url, "--strategy", "golden-kg",
                  "--limit", str(limit), "--concurrency", "2", "--run-dir", str(run_dir), "--no-progress", *extra,
                  env=env)


def _last_line(proc: subprocess.CompletedProcess) -> str:
    return proc.stderr.strip().splitlines()[-1]


def _gold_openai(body: dict) -> dict:
    user = body["messages"][-1]["content"]
    gold = next(t for t in tasks() if t.query in user).gold_calls[0]
    return openai_chat(tool_calls=[(gold.name, gold.arguments)], usage=(400, 20))


def _statuses(run_dir) -> Counter[str]:
    return Counter(r["status"] for r in RunDir.open(run_dir).latest_traces().values())


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_help_documents_the_exit_statuses_and_the_breaker_flag():
    out = _evals("run", "--help").stdout
    assert "exit status:" in out and "--max-consecutive-errors" in out
    for status in ("0 ", "1 ", "2 ", "3 ", "4 ", "130 "):
        assert f"\n  {status}" in out, status


def test_a_bad_key_trips_the_breaker_names_the_variable_and_resuming_loses_nothing(data_dir, tmp_path):
    run = tmp_path / "run"
    env = {"EVALS_TEST_KEY": "sk-wrong"}
    with FakeProviderServer() as fake:
        fake.openai.respond_with(lambda body: openai_error(401, "Incorrect API key provided: sk-wrong.",
                                                           code="invalid_api_key"))
        proc = _run(fake.openai_base_url, run, "--api-key-env", "EVALS_TEST_KEY", "--json", env=env)
        first_requests = len(fake.openai.requests)
        assert proc.returncode == 3, proc.stderr[-3000:]
        line = _last_line(proc)
        assert line.startswith("evals run: stopped by the circuit breaker (exit 3): 0 of 12 task(s) completed, ")
        assert "authentication failed (HTTP 401) on 3 consecutive episode(s): check the API key in $EVALS_TEST_KEY" in line
        assert "first error (task KGMTUbench_" in line and "ModelError: openai:m: auth (HTTP 401)" in line
        assert "--retry-errored" in line and line.endswith(f"run directory: {run}")
        summary = json.loads(proc.stdout.strip().splitlines()[-1])
        assert summary["first_error"]["type"] == "ModelError" and summary["errored"] >= 3
        assert first_requests < 6  # stopped after 3 (plus the one in flight), not after 12
        errored = set(RunDir.open(run).latest_traces())

        # the key is fixed: the same command runs the rest; the 401s are kept (deterministic errors) ...
        fake.openai.reset()
        fake.openai.respond_with(_gold_openai)
        again = _run(fake.openai_base_url, run, "--api-key-env", "EVALS_TEST_KEY", env=env)
        assert again.returncode == 1, again.stderr[-3000:]
        assert _last_line(again).startswith(
            f"evals run: some tasks errored (exit 1): {12 - len(errored)} of 12 task(s) completed, {len(errored)} errored, 0 not run")
        assert "rerun with --retry-errored" in _last_line(again)
        assert len(fake.openai.requests) == 12 - len(errored)
        # ... until --retry-errored, which runs only them
        fake.openai.reset()
        fake.openai.respond_with(_gold_openai)
        done = _run(fake.openai_base_url, run, "--api-key-env", "EVALS_TEST_KEY", "--retry-errored", env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "evals run:" not in done.stderr
        assert len(fake.openai.requests) == len(errored)
    assert _statuses(run) == Counter(completed=12)
    completed = [r["task_id"] for r in RunDir.open(run).iter_traces(dedupe=False) if r["status"] == "completed"]
    assert sorted(completed) == sorted(t.id for t in tasks())  # no completed task ran twice


@pytest.mark.parametrize("provider,status", [("openai", 404), ("anthropic", 401), ("anthropic", 404), ("openai", 400)])
def test_unknown_model_bad_key_and_tiny_context_trip_the_breaker_for_both_sdks(data_dir, tmp_path, provider, status):
    message = {401: "invalid x-api-key", 404: "The model `m` does not exist or you do not have access to it.",
               400: "This model's maximum context length is 512 tokens. However, you requested 2300 tokens."}[status]
    code = "context_length_exceeded" if status == 400 else "model_not_found"
    with FakeProviderServer() as fake:
        if provider == "openai":
            fake.openai.respond_with(lambda body: openai_error(status, message, code=code))
            url = fake.openai_base_url
        else:
            fake.anthropic.respond_with(lambda body: anthropic_error(status, message))
            url = fake.anthropic_base_url
        proc = _run(url, tmp_path / "run", "--max-consecutive-errors", "2", model=f"{provider}:m",
                    env={"ANTHROPIC_API_KEY": "sk-ant-wrong"})
        requests = len((fake.openai if provider == "openai" else fake.anthropic).requests)
    assert proc.returncode == 3, proc.stderr[-3000:]
    line = _last_line(proc)
    assert requests <= 4
    if status == 400:  # the first request already does not fit: no task will
        assert "the first request does not fit the model's context window on 2 consecutive episode(s)" in line
        return
    assert f"(HTTP {status}) on 2 consecutive episode(s)" in line
    if status == 404:
        assert f"check the model name '{provider}:m'" in line and url in line
    else:
        assert "check the API key in $ANTHROPIC_API_KEY" in line


def test_a_dead_endpoint_trips_the_breaker_after_the_retries(data_dir, tmp_path):
    url = f"http://127.0.0.1:{_dead_port()}/v1"
    t0 = time.monotonic()
    proc = _run(url, tmp_path / "run", "--max-attempts", "2")
    assert proc.returncode == 3, proc.stderr[-3000:]
    assert time.monotonic() - t0 < 240  # gave up after the retries, not after minutes of waiting
    line = _last_line(proc)
    assert "cannot connect to the model endpoint on 3 consecutive episode(s)" in line and url in line
    assert "--retry-errored" not in line  # connection errors are transient: a plain rerun retries them
    traces = RunDir.open(tmp_path / "run").latest_traces().values()
    assert traces and all(t["error"]["details"]["kind"] == "connection" for t in traces)
    assert all(len(t["error"]["attempts"]) == 2 for t in traces)  # the retries ran first


def test_the_breaker_can_be_switched_off(data_dir, tmp_path):
    with FakeProviderServer() as fake:
        fake.openai.respond_with(lambda body: openai_error(401, "Incorrect API key provided"))
        proc = _run(fake.openai_base_url, tmp_path / "run", "--max-consecutive-errors", "0", limit=5)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert _statuses(tmp_path / "run") == Counter(errored=5)
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["run"]["max_consecutive_errors"] == 0 and "max_consecutive_errors" not in config["options"]
    assert _evals("run", "familytool-b", "--model", "oracle", "--max-consecutive-errors", "-1").returncode == 2


def test_some_tasks_errored_exits_1_with_the_summary_and_keeps_what_finished(data_dir, tmp_path):
    failing = {t.query for t in tasks()[2:6:2]}

    def model(body: dict) -> object:
        user = body["messages"][-1]["content"]
        if any(q in user for q in failing):  # about the task, not the setup: no breaker
            return openai_error(400, "Invalid 'messages[1].content': string too long.", code="string_too_long")
        return _gold_openai(body)

    run = tmp_path / "run"
    with FakeProviderServer() as fake:
        fake.openai.respond_with(model)
        proc = _run(fake.openai_base_url, run, "--json", "--max-consecutive-errors", "1", limit=8)
        assert proc.returncode == 1, proc.stderr[-3000:]
        line = _last_line(proc)
        assert line.startswith("evals run: some tasks errored (exit 1): 6 of 8 task(s) completed, 2 errored, 0 not run; ")
        assert "first error (task KGMTUbench_" in line and "ModelError: openai:m: bad_request (HTTP 400)" in line
        assert line.endswith(f"run directory: {run}")
        summary = json.loads(proc.stdout.strip().splitlines()[-1])
        assert (summary["completed"], summary["errored"]) == (6, 2)
        assert summary["first_error"]["task_id"] in {t.id for t in tasks()[2:6:2]}
        fake.openai.reset()
        fake.openai.respond_with(model)
        again = _run(fake.openai_base_url, run, limit=8)
        assert again.returncode == 1 and len(fake.openai.requests) == 0  # nothing finished is run again
    assert _statuses(run) == Counter(completed=6, errored=2)


def test_a_budget_stop_exits_4(data_dir, tmp_path):
    with FakeProviderServer() as fake:
        fake.openai.respond_with(_gold_openai)
        proc = _run(fake.openai_base_url, tmp_path / "run", "--max-budget-tokens", "100", "--concurrency", "1")
    assert proc.returncode == 4, proc.stderr[-3000:]
    assert _last_line(proc).startswith("evals run: stopped by the budget (exit 4): 1 of 12 task(s) completed, 0 errored, 11 not run")


def test_ctrl_c_exits_130_after_a_clean_stop_and_the_run_resumes(data_dir, tmp_path):
    run = tmp_path / "run"
    args = [sys.executable, "-m", "evals.cli", "run", "familytool-b", "--model", "oracle:0.1", "--limit", "16",
            "--concurrency", "2", "--run-dir", str(run), "--no-progress"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    traces = run / "traces.jsonl"
    deadline = time.time() + 120
    while not (traces.exists() and traces.read_bytes().count(b"\n") >= 2):
        assert proc.poll() is None and time.time() < deadline, proc.stderr.read() if proc.poll() is not None else "slow"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err[-3000:]
    assert "evals run: interrupted (exit 130)" in err.strip().splitlines()[-1]
    finished = len(RunDir.open(run).latest_traces())
    done = _evals(*args[3:])
    assert done.returncode == 0, done.stderr[-3000:]
    ids = [r["task_id"] for r in RunDir.open(run).iter_traces(dedupe=False)]
    assert len(ids) == len(set(ids)) == 16 and finished < 16
