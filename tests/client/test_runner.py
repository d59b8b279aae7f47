"""The episode runner: resume, crashes, interrupts, errors, budgets, concurrency — on real run dirs."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from client.adapters.errors import AttemptRecord, ModelError
from client.runner import Budget, RunControl, run_episodes
from client.runs import EpisodeOutcome, EpisodeRecorder, RunDir, RunLocked

REPO = Path(__file__).resolve().parents[2]
CONFIG = {"benchmark": "fake", "model": "fake:model", "strategy": "agent", "options": {}}


def task_ids(n: int) -> list[str]:
    return [f"t-{i:03d}" for i in range(n)]


def index(task_id: str) -> int:
    return int(task_id.split("-")[1])


def fake_episode(
    *,
    sleep: float = 0.0,
    tokens: int = 15,
    calls: list[str] | None = None,
    fail: Callable[[str], None] | None = None,
):
    """An episode that logs a request, a response with ``tokens`` tokens, a tool call and an answer."""

    async def episode(task_id: str, rec: EpisodeRecorder) -> EpisodeOutcome:
        if calls is not None:
            calls.append(task_id)
        rec.model_request([{"role": "user", "text": f"solve {task_id}"}], [{"name": "lookup"}])
        await asyncio.sleep(sleep / 2)
        rec.model_response(
            {"text": None, "usage": {"input_tokens": tokens - tokens // 3, "output_tokens": tokens // 3}},
            latency_s=sleep / 2,
            cost_usd=tokens * 1e-6,
        )
        rec.tool_call("lookup", {"q": task_id}, f"result for {task_id}", {"id": index(task_id)}, False, 0.001)
        if fail is not None:
            fail(task_id)
        await asyncio.sleep(sleep / 2)
        rec.final_answer(f"answer {task_id}")
        return EpisodeOutcome(data={"index": index(task_id)})

    return episode


def completed_counts(run: RunDir) -> Counter[str]:
    return Counter(r["task_id"] for r in run.scan_traces().records if r["status"] == "completed")


def events(run: RunDir) -> list[dict]:
    return [json.loads(line) for line in run.events_path.read_text().splitlines()]


# ---- resume -----------------------------------------------------------------------------------


async def test_run_then_resume_skips_everything(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run", CONFIG)
    result = await run_episodes(run, task_ids(20), fake_episode(), concurrency=4, progress=False)
    assert (result.completed, result.errored, result.skipped, result.stopped_reason) == (20, 0, 0, "done")
    assert result.tokens == 20 * 15 and result.cost_usd == pytest.approx(20 * 15e-6)
    assert not run.is_open  # the lock is released after the call

    calls: list[str] = []
    again = await run_episodes(
        RunDir(tmp_path / "run", CONFIG), task_ids(20), fake_episode(calls=calls), progress=False
    )
    assert (again.completed, again.skipped, again.not_started, calls) == (0, 20, 0, [])
    records = run.scan_traces().records
    assert Counter(r["task_id"] for r in records) == Counter(task_ids(20))
    trace = run.latest_traces()["t-007"]
    assert trace["status"] == "completed" and trace["final_answer"] == "answer t-007"
    assert trace["outcome"] == {"index": 7} and trace["totals"]["total_tokens"] == 15
    assert [e["kind"] for e in trace["events"]] == [
        "model_request",
        "model_response",
        "tool_call",
        "final_answer",
    ]
    assert trace["config_hash"] == run.config_hash and trace["run_attempt"] == 1
    markers = Counter(e["kind"] for e in events(run) if e["kind"].startswith("episode_"))
    assert markers == {"episode_started": 20, "episode_finished": 20}

    more = await run_episodes(
        run, task_ids(25), fake_episode(calls=calls), progress=False
    )  # a larger --limit
    assert (more.completed, more.skipped, sorted(calls)) == (5, 20, task_ids(25)[20:])


async def test_duplicate_task_ids_and_bad_concurrency_are_rejected(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run", CONFIG)
    with pytest.raises(ValueError, match="appear more than once: 't-001'"):
        await run_episodes(run, ["t-000", "t-001", "t-001"], fake_episode(), progress=False)
    with pytest.raises(ValueError, match="concurrency must be a positive integer"):
        await run_episodes(run, task_ids(2), fake_episode(), concurrency=0, progress=False)


async def test_concurrency_bound_is_honoured(tmp_path: Path) -> None:
    in_flight = peak = started = 0
    first_five = asyncio.Barrier(5)  # the first five wait for each other: 5 in flight on any machine

    async def episode(task_id: str, rec: EpisodeRecorder) -> None:
        nonlocal in_flight, peak, started
        in_flight += 1
        started += 1
        peak = max(peak, in_flight)
        if started <= 5:
            await first_five.wait()
        await asyncio.sleep(0.01)
        in_flight -= 1

    result = await run_episodes(
        RunDir(tmp_path / "run"), task_ids(30), episode, concurrency=5, progress=False
    )
    assert peak == result.max_in_flight == 5 and result.completed == 30


async def test_a_second_writer_is_refused(tmp_path: Path) -> None:
    started = asyncio.Event()

    async def slow(task_id: str, rec: EpisodeRecorder) -> None:
        started.set()
        await asyncio.sleep(0.2)

    first = asyncio.create_task(run_episodes(RunDir(tmp_path / "run"), task_ids(2), slow, progress=False))
    await started.wait()
    with pytest.raises(RunLocked):
        await run_episodes(RunDir(tmp_path / "run"), task_ids(2), slow, progress=False)
    assert (await first).completed == 2


# ---- errors -----------------------------------------------------------------------------------


async def test_errors_are_recorded_and_retry_errored_reruns_only_them(tmp_path: Path) -> None:
    def fail(task_id: str) -> None:
        i = index(task_id)
        if i % 4 == 0:
            raise ValueError(f"bad input in {task_id}")
        if i == 5:
            err = ModelError("rate_limit", "slow down", status=429)
            err.attempts = [
                AttemptRecord(n, "rate_limit", 429, "slow down", True, None, 1.0, n) for n in (1, 2)
            ]
            raise err

    async def episode_with_outcome_error(task_id: str, rec: EpisodeRecorder) -> EpisodeOutcome | None:
        if task_id == "t-006":
            return EpisodeOutcome(
                error={"type": "ContextLength", "message": "prompt too long", "retryable": False}
            )
        if task_id == "t-007":
            return "oops"  # type: ignore[return-value]
        return await fake_episode(fail=fail)(task_id, rec)

    run = RunDir(tmp_path / "run", CONFIG)
    result = await run_episodes(run, task_ids(12), episode_with_outcome_error, concurrency=3, progress=False)
    errored_ids = {"t-000", "t-004", "t-008", "t-005", "t-006", "t-007"}
    assert (result.completed, result.errored, result.stopped_reason) == (6, 6, "done")
    latest = run.latest_traces()
    assert {t for t, r in latest.items() if r["status"] == "errored"} == errored_ids
    err = latest["t-004"]["error"]
    assert (
        err["type"] == "ValueError" and err["message"] == "bad input in t-004" and err["retryable"] is False
    )
    assert "Traceback" in err["traceback"] and latest["t-004"]["totals"]["tool_calls"] == 1  # events kept
    err = latest["t-005"]["error"]
    assert (
        err["type"] == "ModelError"
        and err["retryable"] is True
        and [a["attempt"] for a in err["attempts"]] == [1, 2]
    )
    assert err["details"]["status"] == 429
    assert latest["t-006"]["error"]["type"] == "ContextLength"
    assert "expected EpisodeOutcome or None" in latest["t-007"]["error"]["message"]

    # A plain resume re-runs only the transient failure (t-005) ...
    calls: list[str] = []
    again = await run_episodes(run, task_ids(12), fake_episode(calls=calls), progress=False)
    assert (calls, again.completed, again.skipped) == (["t-005"], 1, 11)
    # ... and retry_errored re-runs exactly the rest of the errored ones; the newest record wins.
    calls.clear()
    again = await run_episodes(
        run, task_ids(12), fake_episode(calls=calls), retry_errored=True, progress=False
    )
    assert sorted(calls) == sorted(errored_ids - {"t-005"}) and again.completed == 5
    latest = run.latest_traces()
    assert all(r["status"] == "completed" for r in latest.values()) and len(latest) == 12
    assert latest["t-004"]["run_attempt"] == 2 and latest["t-005"]["run_attempt"] == 2
    assert run.summary().superseded == 6 and len(run.scan_traces().records) == 18


async def test_a_stray_cancelled_error_from_the_episode_is_an_error_not_a_stop(tmp_path: Path) -> None:
    async def episode(task_id: str, rec: EpisodeRecorder) -> None:
        if task_id == "t-001":
            raise asyncio.CancelledError("leaked from a cancel scope")

    run = RunDir(tmp_path / "run")
    result = await run_episodes(run, task_ids(3), episode, progress=False)
    assert (result.completed, result.errored, result.stopped_reason) == (2, 1, "done")
    assert run.latest_traces()["t-001"]["error"]["type"] == "CancelledError"


# ---- budget -----------------------------------------------------------------------------------


async def test_budget_stops_new_episodes_and_resume_continues(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run", CONFIG)
    result = await run_episodes(
        run,
        task_ids(20),
        fake_episode(sleep=0.01, tokens=100),
        concurrency=2,
        budget=Budget(max_tokens=500),
        progress=False,
    )
    assert result.stopped_reason == "budget" and "max_tokens 500" in (result.message or "")
    # The 5th response reaches the cap; the other episode in flight finishes and is recorded too.
    assert 5 <= result.completed <= 6 and result.tokens == 100 * result.completed
    assert result.not_started == 20 - result.completed and result.cancelled == 0
    assert len(completed_counts(run)) == result.completed

    rest = await run_episodes(run, task_ids(20), fake_episode(tokens=100), progress=False)
    assert rest.stopped_reason == "done" and rest.completed == 20 - result.completed
    assert completed_counts(run) == Counter(task_ids(20))

    cost_run = RunDir(tmp_path / "cost")
    by_cost = await run_episodes(
        cost_run,
        task_ids(20),
        fake_episode(tokens=1000),
        concurrency=1,
        budget=Budget(max_cost_usd=0.003),
        progress=False,
    )
    assert (
        by_cost.stopped_reason == "budget"
        and by_cost.completed == 3
        and "cost budget" in (by_cost.message or "")
    )
    with pytest.raises(ValueError, match="max_tokens must be a positive"):
        Budget(max_tokens=0)


# ---- interrupts -------------------------------------------------------------------------------


async def wait_for_traces(run: RunDir, n: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while len(run.scan_traces().records) < n:
        assert time.monotonic() < deadline, f"fewer than {n} traces after {timeout}s"
        await asyncio.sleep(0.005)


async def test_interrupt_cancels_in_flight_without_traces_and_resume_completes(tmp_path: Path) -> None:
    started: list[str] = []

    async def episode(task_id: str, rec: EpisodeRecorder) -> None:
        rec.note("started")
        started.append(task_id)
        await asyncio.sleep(0.0 if index(task_id) < 3 else 30)

    run = RunDir(tmp_path / "run", CONFIG)
    control = RunControl()
    running = asyncio.create_task(
        run_episodes(run, task_ids(10), episode, concurrency=4, control=control, progress=False)
    )
    await wait_for_traces(run, 3)
    deadline = time.monotonic() + 120
    while len(started) < 7:  # the three quick ones and four in flight (however slow the machine)
        assert time.monotonic() < deadline, f"only {started} started after 120 s"
        await asyncio.sleep(0.005)
    control.interrupt("test says stop")
    result = await asyncio.wait_for(running, 120)  # a bound for a hang, not a speed check
    assert (result.stopped_reason, result.message) == ("interrupted", "test says stop")
    assert (result.completed, result.cancelled, result.not_started) == (3, 4, 3) and result.remaining == 7
    assert set(run.latest_traces()) == {"t-000", "t-001", "t-002"}
    cancelled = [e for e in events(run) if e["kind"] == "episode_cancelled"]
    assert sorted(e["task_id"] for e in cancelled) == ["t-003", "t-004", "t-005", "t-006"]
    partial = [e for e in events(run) if e["kind"] == "note" and e["task_id"] == "t-003"]
    assert len(partial) == 1 and cancelled[0]["events"] == 1  # the partial record is kept for debugging

    done = await run_episodes(run, task_ids(10), fake_episode(), progress=False)
    assert (done.completed, done.skipped) == (7, 3)
    assert Counter(r["task_id"] for r in run.scan_traces().records) == Counter(task_ids(10))


async def test_cancelling_the_caller_cleans_up_and_reraises(tmp_path: Path) -> None:
    async def episode(task_id: str, rec: EpisodeRecorder) -> None:
        await asyncio.sleep(0 if index(task_id) == 0 else 30)

    run = RunDir(tmp_path / "run")
    running = asyncio.create_task(run_episodes(run, task_ids(5), episode, concurrency=2, progress=False))
    await wait_for_traces(run, 1)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert set(run.latest_traces()) == {"t-000"} and not run.is_open
    run.open_for_writing()  # the lock was released
    run.close()


async def test_an_episode_that_swallows_cancellation_gets_no_trace(tmp_path: Path) -> None:
    started: list[str] = []

    async def stubborn(task_id: str, rec: EpisodeRecorder) -> EpisodeOutcome:
        started.append(task_id)
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            pass  # returns a (partial) outcome instead of stopping
        return EpisodeOutcome(final_answer="partial")

    run = RunDir(tmp_path / "run")
    control = RunControl()
    running = asyncio.create_task(run_episodes(run, task_ids(2), stubborn, control=control, progress=False))
    while len(started) < 2:  # both in flight, however slow the machine
        await asyncio.sleep(0.005)
    control.interrupt()
    result = await running
    assert result.cancelled == 2 and run.scan_traces().records == []


# ---- progress and score -----------------------------------------------------------------------


async def test_progress_bar_and_running_score(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def score(trace: dict) -> float | None:
        i = trace["outcome"]["index"]
        return None if i == 0 else float(i % 2)

    run = RunDir(tmp_path / "run")
    first = await run_episodes(run, task_ids(5), fake_episode(), score_fn=score, progress=True)
    assert first.score == pytest.approx(0.5)  # indexes 1..4 -> 1, 0, 1, 0
    second = await run_episodes(run, task_ids(8), fake_episode(), score_fn=score, progress=True)
    assert second.score == pytest.approx(4 / 7)  # skipped tasks count too: 1..7 -> 1,0,1,0,1,0,1
    err = capsys.readouterr().err
    assert "8/8" in err and "score 0.571" in err
    assert "stopped_reason=done" in second.describe() and "score 0.5714" in second.describe()

    def broken(trace: dict) -> float:
        raise KeyError("nope")

    third = await run_episodes(
        RunDir(tmp_path / "other"), task_ids(3), fake_episode(), score_fn=broken, progress=False
    )
    assert third.completed == 3 and third.score is None


# ---- crashes and signals (subprocesses) -------------------------------------------------------

SCRIPT = """
import asyncio, sys
from client.runner import run_episodes
from client.runs import EpisodeOutcome, RunDir

run_path, n, sleep_s, concurrency = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])

async def episode(task_id, rec):
    rec.model_request([{"role": "user", "text": "solve " + task_id}], [{"name": "lookup"}])
    await asyncio.sleep(sleep_s / 2)
    rec.model_response({"text": None, "usage": {"input_tokens": 10, "output_tokens": 5}}, sleep_s / 2, None, 1e-5)
    rec.tool_call("lookup", {"q": task_id}, "result " * 300, None, False, 0.001)
    await asyncio.sleep(sleep_s / 2)
    rec.final_answer("answer " + task_id)
    return EpisodeOutcome(data={"index": int(task_id.split("-")[1])})

async def main():
    run = RunDir(run_path, {"benchmark": "fake", "model": "fake:model", "strategy": "agent", "options": {}})
    ids = ["t-%03d" % i for i in range(n)]
    result = await run_episodes(run, ids, episode, concurrency=concurrency, progress=False, handle_signals=True)
    print("stopped_reason=" + result.stopped_reason, result.describe(), flush=True)

asyncio.run(main())
"""


def start_script(
    tmp_path: Path, run_path: Path, n: int, sleep_s: float, concurrency: int
) -> subprocess.Popen[str]:
    script = tmp_path / "run_fake.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen(
        [sys.executable, str(script), str(run_path), str(n), str(sleep_s), str(concurrency)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_lines(path: Path, n: int, proc: subprocess.Popen[str], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists() or path.read_bytes().count(b"\n") < n:
        if proc.poll() is not None:
            pytest.fail(
                f"the script exited early ({proc.returncode}): {proc.stderr.read() if proc.stderr else ''}"
            )
        assert time.monotonic() < deadline, f"fewer than {n} lines in {path} after {timeout}s"
        time.sleep(0.005)


def wait_for_marks(path: Path, kind: str, n: int, proc: subprocess.Popen[str], timeout: float = 15.0) -> None:
    needle = f'"kind": "{kind}"'.encode()
    compact = f'"kind":"{kind}"'.encode()
    deadline = time.monotonic() + timeout
    while not path.exists() or (path.read_bytes().count(needle) + path.read_bytes().count(compact)) < n:
        if proc.poll() is not None:
            pytest.fail(f"the script exited early ({proc.returncode})")
        assert time.monotonic() < deadline, f"fewer than {n} {kind} marks in {path} after {timeout}s"
        time.sleep(0.005)


async def test_sigkill_mid_run_then_resume_loses_nothing(tmp_path: Path) -> None:
    run_path = tmp_path / "run"
    proc = start_script(tmp_path, run_path, n=50, sleep_s=0.05, concurrency=8)
    wait_for_lines(run_path / "traces.jsonl", 10, proc)
    proc.kill()  # SIGKILL: no clean-up at all
    proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL

    traces = run_path / "traces.jsonl"
    before = traces.read_bytes()
    finished_before = before.count(b"\n")
    assert 10 <= finished_before < 50
    # Episodes in flight at the kill left their partial events (started, never finished).
    marks = [
        json.loads(line)
        for line in (run_path / "events.jsonl").read_bytes().splitlines()
        if line.endswith(b"}")
    ]
    started = {m["episode_id"] for m in marks if m["kind"] == "episode_started"}
    finished = {m["episode_id"] for m in marks if m["kind"] == "episode_finished"}
    assert started - finished
    # Should the kill have torn the last line, or (as here, deterministically) a write was torn:
    # the reader skips the torn tail, and resuming repairs it and keeps a copy.
    torn = b'{"schema_version": 1, "task_id": "t-049", "status": "compl'
    if before.endswith(b"\n"):
        with open(traces, "ab") as f:
            f.write(torn)
    run = RunDir(run_path)
    assert run.scan_traces().torn_tail is not None

    result = await run_episodes(run, task_ids(50), fake_episode(sleep=0.001), concurrency=8, progress=False)
    assert result.skipped == finished_before and result.completed == 50 - finished_before
    assert completed_counts(run) == Counter(task_ids(50))  # every task exactly once, none missing
    scan = run.scan_traces()
    assert scan.torn_tail is None and scan.bad_lines == [] and len(scan.records) == 50
    kept = [json.loads(line) for line in run.torn_path.read_text().splitlines()]
    assert len(kept) == 1 and kept[0]["text"].startswith('{"schema_version": 1')


async def test_sigint_stops_cleanly_and_the_run_resumes(tmp_path: Path) -> None:
    run_path = tmp_path / "run"
    proc = start_script(tmp_path, run_path, n=40, sleep_s=0.3, concurrency=4)
    wait_for_lines(run_path / "traces.jsonl", 4, proc)
    # Interrupt while the second wave runs (not while the first one's trace fsync is in flight).
    wait_for_marks(run_path / "events.jsonl", "episode_started", 8, proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "stopped_reason=interrupted" in out and "received SIGINT" in out and "remaining" in out

    run = RunDir(run_path)
    finished = set(run.latest_traces())
    assert 4 <= len(finished) < 40
    cancelled = {e["task_id"] for e in events(run) if e["kind"] == "episode_cancelled"}
    assert cancelled and not cancelled & finished  # cancelled episodes left no trace

    result = await run_episodes(run, task_ids(40), fake_episode(), concurrency=8, progress=False)
    assert (result.skipped, result.completed) == (len(finished), 40 - len(finished))
    assert completed_counts(run) == Counter(task_ids(40))


def test_sole_exception_unwraps_single_member_groups_only():
    from client.runner import sole_exception

    inner = ValueError("the real error")
    assert sole_exception(ExceptionGroup("outer", [ExceptionGroup("inner", [inner])])) is inner
    several = ExceptionGroup("two", [ValueError("a"), KeyError("b")])
    assert sole_exception(several) is several
    assert sole_exception(inner) is inner


def test_the_progress_bar_shows_the_runs_tally(tmp_path: Path) -> None:
    """One tally (issue 45): the runner counts into ``RunProgress.tally`` and the bar draws those counts."""
    import io

    from rich.console import Console

    from client.progress import RunProgress

    out = io.StringIO()
    bar = RunProgress(3, console=Console(file=out, width=200, force_terminal=False))
    bar.start()
    bar.tally.tokens, bar.tally.cost_usd, bar.tally.errored, bar.tally.in_flight = 1500, 0.25, 1, 2
    bar.episode_finished(score=1.0)
    bar.stop()
    assert "1/3" in out.getvalue() and "1.5k tok · $0.2500 · score 1.000 · 1 err · 2 running" in out.getvalue()


async def test_a_run_with_the_bar_drawn_counts_into_its_tally(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run", CONFIG)
    result = await run_episodes(run, task_ids(6), fake_episode(), concurrency=3, progress=True)
    assert (result.completed, result.errored, result.cancelled) == (6, 0, 0)
    assert 1 <= result.max_in_flight <= 3 and result.tokens == 6 * 15
