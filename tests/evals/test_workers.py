"""``evals run --workers N``: one run over N processes: the same traces and numbers, exactly-once
traces after a SIGKILL of the parent or of one worker, rate limits and budget held across workers."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_providers import FakeProviderServer, openai_chat

from client.runs import EpisodeRecorder, RunDir
from evals.benchmarks.familytool.data import load_tasks
from evals.core.run import RunOptions, run_benchmark


async def _oracle(run_traces, run: Path, workers: int, limit: int) -> tuple[dict, dict]:
    opts = RunOptions(benchmark="familytool-b", model="oracle", limit=limit, concurrency=6, run_dir=run,
                      progress=False, workers=workers, event_log=True)
    result, summary = await run_benchmark(opts)
    assert result.completed == limit and result.errored == 0 and result.stopped_reason == "done"
    traces = run_traces(run)
    assert len(traces) == limit
    return traces, summary["metrics"]


async def test_two_workers_give_the_same_traces_and_numbers_as_one(data_dir, run_traces, tmp_path):
    one, numbers = await _oracle(run_traces, tmp_path / "one", 1, 16)
    two, two_numbers = await _oracle(run_traces, tmp_path / "two", 2, 16)
    assert two == one and two_numbers == numbers and numbers["tool_em"] == 100.0
    config = json.loads((tmp_path / "two" / "config.json").read_text())
    assert config["run"]["workers"] == 2 and config["run"]["transport"] == "memory"
    events = [json.loads(line) for line in open(tmp_path / "two" / "events.jsonl")]
    # the workers' events reached the parent's event log as they happened
    assert {e["task_id"] for e in events if e.get("kind") == "tool_call"} == set(one)


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def test_a_sigkill_of_one_worker_then_of_the_parent_then_a_resume_leaves_every_task_exactly_once(
    wait_for_traces, resume_to_the_end, data_dir, tmp_path
):
    run = tmp_path / "run"
    traces = run / "traces.jsonl"
    args = [sys.executable, "-m", "evals.cli", "run", "familytool-b", "--model", "oracle:0.05", "--limit", "60",
            "--concurrency", "4", "--workers", "2", "--run-dir", str(run), "--no-progress", "--json"]
    seen = 0
    for kill in ("worker", "parent"):
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for_traces(traces, seen + 8, proc)
        zygotes = _children(proc.pid)  # the workers are forked by the run's one zygote
        assert len(zygotes) == 1, zygotes
        # itself a fork of the run's process (nothing imported or loaded twice), not a spawned interpreter
        assert Path(f"/proc/{zygotes[0]}/cmdline").read_bytes() == Path(f"/proc/{proc.pid}/cmdline").read_bytes()
        workers = _children(zygotes[0])
        assert len(workers) == 2, workers
        os.kill(workers[0] if kill == "worker" else proc.pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode != 0
        if kill == "worker":  # the run stopped like an interrupt, saying why
            assert f"worker 0 (pid {workers[0]}) exited with signal SIGKILL" in err, err[-2000:]
        else:  # the workers and the zygote saw their stdin close and stopped
            _all_gone([*workers, *zygotes], "outlived its parent")
        now = traces.read_bytes().count(b"\n")
        assert seen + 8 <= now < 60, (kill, seen, now)
        ids = [r["task_id"] for r in RunDir.open(run).iter_traces(dedupe=False)]
        assert len(ids) == len(set(ids)) == now  # no task twice, and no torn line
        seen = now
    ids = resume_to_the_end(args, run, 60)
    assert set(ids) == {t.id for t in load_tasks("b")[:60]}


def test_a_killed_zygote_leaves_the_run_to_its_workers_and_a_killed_parent_then_leaves_no_process(
    wait_for_traces, data_dir, tmp_path
):
    """The zygote is killed once its workers run: the run goes on with them to its end, exit 0, each
    task once, the zygote named in a warning; nothing outlives the run. Then the same with the parent
    SIGKILLed after its zygote: its workers (init's children now) still stop."""
    for then in ("finish", "kill the parent"):
        run = tmp_path / then.replace(" ", "-")
        args = [sys.executable, "-m", "evals.cli", "run", "familytool-b", "--model", "oracle:0.05", "--limit",
                "40", "--concurrency", "4", "--workers", "2", "--run-dir", str(run), "--no-progress", "--json"]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for_traces(run / "traces.jsonl", 4, proc)
            [zygote] = _children(proc.pid)
            workers = _children(zygote)
            assert len(workers) == 2, workers
            os.kill(zygote, signal.SIGKILL)
            if then == "kill the parent":
                _all_gone([zygote], "survived SIGKILL")
                os.kill(proc.pid, signal.SIGKILL)
            out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate(timeout=30)
        if then == "finish":
            assert proc.returncode == 0, err[-2000:]
            assert f"the worker zygote (pid {zygote}) exited with signal SIGKILL; its 2 workers go on" in err
            assert json.loads(out.strip().splitlines()[-1])["completed"] == 40
            ids = [r["task_id"] for r in RunDir.open(run).iter_traces(dedupe=False)]
            assert sorted(ids) == sorted(t.id for t in load_tasks("b")[:40])
        else:
            assert proc.returncode == -signal.SIGKILL
        _all_gone([zygote, *workers], f"outlived the run ({then})")


def _all_gone(pids: list[int], what: str) -> None:
    deadline = time.time() + 30
    while time.time() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    assert not [p for p in pids if _alive(p)], f"a process {what}"


async def test_a_worker_forked_by_the_zygote_runs_episodes_and_a_failed_load_is_named(data_dir, tmp_path):
    from client.runner import RunControl
    from evals.core.workers import WorkerError, WorkerPool

    opts = RunOptions(benchmark="familytool-b", model="oracle", strategy="agent", progress=False, workers=1)
    control = RunControl()
    pool = WorkerPool(opts, limiter=None, control=control)
    async with pool:
        [worker] = pool.workers
        assert worker.channel.name.startswith("worker 0 (pid ")
        zygote = pool._zygote
        assert zygote is not None and _children(zygote.child.pid) == [int(worker.channel.name.split()[-1][:-1])]
        task = load_tasks("b")[0]
        recorder = EpisodeRecorder(task.id, episode_id="e1")
        outcome = await pool.episode(task.id, recorder)
        assert outcome.error is None and outcome.data["calls"]
        assert recorder.totals.tool_calls >= 1  # the oracle's calls went through the worker's own tool server
        worker_pid = int(worker.channel.name.split()[-1][:-1])
        os.kill(zygote.child.pid, signal.SIGKILL)  # the zygote dies: it only starts workers; this one goes on
        async with asyncio.timeout(30):
            await zygote.reader
        assert zygote.error == f"the worker zygote (pid {zygote.child.pid}) exited with signal SIGKILL"
        again = EpisodeRecorder(task.id, episode_id="e2")
        async with asyncio.timeout(60):
            outcome = await pool.episode(task.id, again)
        assert outcome.error is None and again.totals.tool_calls >= 1 and not control.interrupted
        assert _alive(worker_pid)
    _all_gone([worker_pid], "outlived its pool (its zygote killed)")  # stopped although not the zygote's any more
    bad = RunOptions(benchmark="familytool-b", model="oracle", progress=False, workers=2,
                     benchmark_options={"no_such_option": 1})
    with pytest.raises(WorkerError, match=r"worker \d failed to start: .*no_such_option"):
        async with WorkerPool(bad, limiter=None, control=RunControl()):
            pass


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _scripted(tasks):  # noqa: ANN001, ANN202
    def model(body: dict) -> dict:
        user = body["messages"][-1]["content"]
        gold = next(t for t in tasks if t.query in user).gold_calls[0]
        return openai_chat(tool_calls=[(gold.name, gold.arguments)], usage=(400, 20))

    return model


async def test_the_rate_limit_holds_across_workers(data_dir, tmp_path):
    tasks = load_tasks("b")[:14]
    with FakeProviderServer() as server:
        server.openai.respond_with(_scripted(tasks))
        # 60 requests a minute: a burst of 10 (10 s of budget), then one a second, for the run as a whole
        opts = RunOptions(benchmark="familytool-b", model="openai:m", base_url=server.openai_base_url,
                          api_key_env="PATH", strategy="golden-kg", limit=14, concurrency=14, workers=2, rpm=60,
                          run_dir=tmp_path / "r", progress=False)
        result, summary = await run_benchmark(opts)
        times = sorted(r.time for r in server.openai.requests)
    assert result.completed == 14 and summary["metrics"]["tool_em"] == 100.0
    assert len(times) == 14
    # two limiters of their own would have let all 14 through at once; one shared one makes the
    # last four wait a second each
    assert times[-1] - times[0] >= 3.0, [round(t - times[0], 2) for t in times]
    for i, t in enumerate(times):
        assert i + 1 <= 10 + (t - times[0]) * 1.0 + 1, [round(t - times[0], 2) for t in times]


async def test_the_budget_stops_the_whole_run(data_dir, tmp_path):
    tasks = load_tasks("b")[:12]
    with FakeProviderServer() as server:
        server.openai.respond_with(_scripted(tasks))
        opts = RunOptions(benchmark="familytool-b", model="openai:m", base_url=server.openai_base_url,
                          api_key_env="PATH", strategy="golden-kg", limit=12, concurrency=2, workers=2,
                          max_budget_tokens=1000, run_dir=tmp_path / "r", progress=False)
        result, _ = await run_benchmark(opts)
        asked = len(server.openai.requests)
    # 420 tokens a response: the third reaches the budget; at most the two in flight then finish
    assert result.stopped_reason == "budget" and 3 <= result.completed <= 4 and asked == result.completed
    assert result.tokens == 420 * result.completed
    assert len(list(RunDir.open(tmp_path / "r").iter_traces(dedupe=False))) == result.completed


def test_workers_auto_is_one_per_32_concurrent_episodes_at_most_one_per_cpu(monkeypatch):
    from evals.cli import build_parser
    from evals.core import run as run_module
    from evals.core.run import resolve_workers

    monkeypatch.setattr(run_module, "usable_cpus", lambda: 4)

    def auto(**kw: object) -> int:
        return resolve_workers(RunOptions(benchmark="familytool-b", model="oracle", **kw))  # type: ignore[arg-type]

    assert [auto(concurrency=c) for c in (1, 8, 32, 33, 64, 96, 512)] == [1, 1, 1, 2, 2, 3, 4]
    assert auto(concurrency=64, server_url="http://127.0.0.1:1") == 1  # a shared server: episodes stay in this process
    assert auto(concurrency=64, workers=3) == 3  # given: taken as it is
    for bad, words in (({"workers": 0}, "at least 1"), ({"workers": 2, "server_url": "http://127.0.0.1:1"}, "--server-url goes with one worker only")):
        try:
            auto(concurrency=8, **bad)
        except ValueError as exc:
            assert words in str(exc)
        else:
            raise AssertionError(f"{bad} was accepted")
    parser = build_parser()
    assert parser.parse_args(["run", "familytool-b", "--model", "oracle"]).workers is None
    assert parser.parse_args(["run", "familytool-b", "--model", "oracle", "--workers", "auto"]).workers is None
    assert parser.parse_args(["run", "familytool-b", "--model", "oracle", "--workers", "3"]).workers == 3


async def test_workers_auto_starts_none_that_its_episodes_would_not_pay_for(monkeypatch, data_dir, tmp_path):
    """``--workers auto`` lowers what the concurrency asks for to what the episodes pay for (one
    worker per :data:`WORKER_MIN_EPISODES`), and the config records what it chose from."""
    from evals.core import run as run_module
    from evals.core.run import WORKER_MIN_EPISODES, worth_workers

    assert [worth_workers(n) for n in (0, 1, WORKER_MIN_EPISODES - 1, WORKER_MIN_EPISODES,
                                       2 * WORKER_MIN_EPISODES, 40 * WORKER_MIN_EPISODES)] == [1, 1, 1, 1, 2, 40]
    monkeypatch.setattr(run_module, "usable_cpus", lambda: 4)  # concurrency 64 alone would start 2 workers
    for limit, min_episodes, workers in ((12, 10, 1), (20, 10, 2)):
        monkeypatch.setattr(run_module, "WORKER_MIN_EPISODES", min_episodes)
        run = tmp_path / str(limit)
        opts = RunOptions(benchmark="familytool-b", model="oracle", limit=limit, concurrency=64, run_dir=run,
                          progress=False)
        result, summary = await run_benchmark(opts)
        assert result.completed == limit and summary["metrics"]["tool_em"] == 100.0
        config = json.loads((run / "config.json").read_text())["run"]
        assert config["workers"] == workers
        assert config["workers_auto"] == {"episodes": limit, "pending": limit, "concurrency": 64, "cpus": 4}
    given = RunOptions(benchmark="familytool-b", model="oracle", limit=2, run_dir=tmp_path / "given", progress=False,
                       workers=1)
    await run_benchmark(given)
    assert "workers_auto" not in json.loads((tmp_path / "given" / "config.json").read_text())["run"]


async def test_workers_auto_on_a_resume_counts_only_the_episodes_left_to_run(monkeypatch, data_dir, tmp_path):
    """A resumed run's finished episodes cost no worker: ``--workers auto`` counts the pending ones
    (read from the run folder before the workers are forked), and a fresh folder records that count."""
    from evals.core import run as run_module

    monkeypatch.setattr(run_module, "usable_cpus", lambda: 4)
    monkeypatch.setattr(run_module, "WORKER_MIN_EPISODES", 10)
    counted: list[int] = []
    worth = run_module.worth_workers
    monkeypatch.setattr(run_module, "worth_workers", lambda n: counted.append(n) or worth(n))
    run = tmp_path / "run"

    def auto(limit: int) -> RunOptions:
        return RunOptions(benchmark="familytool-b", model="oracle", limit=limit, concurrency=64, run_dir=run,
                          progress=False)

    first, _ = await run_benchmark(auto(12))
    assert first.completed == 12 and counted == [12]
    # 22 selected, 12 of them finished: 10 to run pay for one process (22 would have asked for two)
    resumed, summary = await run_benchmark(auto(22))
    assert resumed.skipped == 12 and resumed.completed == 10 and counted == [12, 10]
    assert summary["metrics"]["tool_em"] == 100.0
    # a folder whose traces came from elsewhere (no config yet): the config records what was counted
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "traces.jsonl").write_bytes((run / "traces.jsonl").read_bytes())
    (fresh / "tools.jsonl").write_bytes((run / "tools.jsonl").read_bytes())
    run = fresh
    again, _ = await run_benchmark(auto(30))
    assert again.skipped == 22 and again.completed == 8 and counted[-1] == 8
    config = json.loads((fresh / "config.json").read_text())["run"]
    assert config["workers"] == 1
    assert config["workers_auto"] == {"episodes": 30, "pending": 8, "concurrency": 64, "cpus": 4}


def test_read_traces_reads_a_run_folder_without_opening_it(tmp_path):
    """What ``--workers auto`` counts: the unfinished tasks, in the order given; a missing folder is
    not created, a torn last line is neither counted nor repaired."""
    import threading

    from client.runs import RunFileIsLink, read_traces

    def pending_tasks(path, task_ids, *, retry_errored=False):
        return read_traces(path).pending(task_ids, retry_errored=retry_errored)

    assert pending_tasks(tmp_path / "none", ["a", "b"]) == ["a", "b"] and not (tmp_path / "none").exists()
    lines = [
        {"task_id": "a", "status": "completed"},
        {"task_id": "b", "status": "errored", "error": {"retryable": False}},
        {"task_id": "c", "status": "errored", "error": {"retryable": True}},
        {"task_id": "d", "status": "completed"},
    ]
    traces = tmp_path / "run" / "traces.jsonl"
    traces.parent.mkdir()
    torn = b'{"task_id": "e", "status": "comp'
    traces.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in lines) + torn)
    tasks = ["e", "d", "c", "b", "a", "f"]
    assert pending_tasks(traces.parent, tasks) == ["e", "c", "f"]
    assert pending_tasks(traces.parent, tasks, retry_errored=True) == ["e", "c", "b", "f"]
    assert traces.read_bytes().endswith(torn) and not (traces.parent / ".lock").exists()
    # a link is refused before it is read, as the run refuses it; a FIFO is not read (it would block)
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "traces.jsonl").symlink_to(traces)
    with pytest.raises(RunFileIsLink):
        pending_tasks(linked, tasks)
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "traces.jsonl")
    got: list[list[str]] = []
    reader = threading.Thread(target=lambda: got.append(pending_tasks(fifo, tasks)), daemon=True)
    reader.start()
    reader.join(30)
    blocked = reader.is_alive()
    if blocked:  # in open(): let it go before failing
        os.close(os.open(fifo / "traces.jsonl", os.O_WRONLY | os.O_NONBLOCK))
    assert not blocked and got == [tasks]


async def test_a_process_running_other_threads_spawns_its_zygote_instead_of_forking(data_dir):
    """A fork copies only the calling thread: with another thread running, the zygote is spawned
    (it imports and loads for itself) and the workers it forks still run episodes."""
    import threading

    from client.runner import RunControl
    from evals.core.registry import load_benchmark
    from evals.core.workers import WorkerPool, Zygote

    opts = RunOptions(benchmark="familytool-b", model="oracle", strategy="agent", progress=False, workers=1)
    bench = load_benchmark(opts.benchmark, opts.benchmark_options)
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert await Zygote.fork_here(opts, bench) is None
        pool = WorkerPool(opts, limiter=None, control=RunControl())
        await pool.fork(bench)
    finally:
        release.set()
        other.join()
    async with pool:
        zygote = pool._zygote
        assert zygote is not None
        assert b"evals.core.worker_process" in Path(f"/proc/{zygote.child.pid}/cmdline").read_bytes()
        task = load_tasks("b")[0]
        outcome = await pool.episode(task.id, EpisodeRecorder(task.id, episode_id="e1"))
        assert outcome.error is None and outcome.data["calls"]
