"""The circuit breaker: which errors repeat on every task, and the runner stopping on them."""

from __future__ import annotations

import asyncio
import json
from collections import Counter

import pytest

from client.adapters.errors import ModelError
from client.breaker import CircuitBreaker, RemoteError, repeating_error
from client.runner import run_episodes
from client.runs import EpisodeRecorder, RunDir, error_info

CONFIG = {"benchmark": "fake", "model": "fake:model", "strategy": "agent", "options": {}}


def ids(n: int) -> list[str]:
    return [f"t-{i:03d}" for i in range(n)]


@pytest.mark.parametrize(
    "error,turns,kind",
    [
        (ModelError("auth", "Incorrect API key", status=401), 0, "auth"),
        (ModelError("auth", "no access to this org", status=403), 2, "auth"),
        (ModelError("bad_request", "The model `x` does not exist", status=404), 0, "not_found"),
        (ModelError("connection", "Connection error. (ConnectError: refused)"), 0, "model_unreachable"),
        (
            ModelError("rate_limit", "You exceeded your current quota", status=429, retryable=False),
            0,
            "quota",
        ),
        (
            ModelError("context_length", "maximum context length is 4096 tokens", status=400),
            0,
            "context_window",
        ),
        (ConnectionRefusedError(111, "Connection refused"), None, "tool_server_unreachable"),
    ],
)
def test_errors_that_repeat_on_every_task(error, turns, kind):
    found = repeating_error(error, turns=turns)
    assert found is not None and found.kind == kind
    # the same from the error as a trace records it
    assert repeating_error(error_info(error), turns=turns).kind == kind


def test_an_error_from_another_process_is_matched_on_its_exception_classes():
    class ServerDown(ModelError):  # a subclass: its payload's type name alone says nothing
        pass

    error = ServerDown("connection", "the model server did not start")
    assert repeating_error(error_info(error), turns=0) is None  # the plain payload: the class is lost
    remote = RemoteError(error_info(error), [c.__name__ for c in type(error).__mro__])
    assert repeating_error(remote, turns=0).kind == "model_unreachable"  # a worker's error, as the parent sees it
    assert json.loads(json.dumps(remote)) == error_info(error)  # traced as the plain payload


@pytest.mark.parametrize(
    "error,turns",
    [
        (
            ModelError("context_length", "maximum context length is 4096 tokens", status=400),
            3,
        ),  # a long episode
        (ModelError("context_length", "maximum context length", status=400), None),  # unknown turn
        (ModelError("bad_request", "invalid tool arguments", status=400), 0),
        (ModelError("rate_limit", "slow down", status=429), 0),  # transient: the retries gave up this time
        (ModelError("server_error", "upstream hiccup", status=500), 0),
        (ValueError("a bug in one task's data"), 0),
    ],
)
def test_errors_about_the_task_do_not_count(error, turns):
    assert repeating_error(error, turns=turns) is None


def test_only_consecutive_repeating_errors_trip_it_and_a_completion_resets_the_streak():
    auth = ModelError("auth", "bad key", status=401)
    breaker = CircuitBreaker(3, hint=lambda err: "set $MY_KEY" if err.kind == "auth" else None)
    assert breaker.record("errored", auth, turns=0) is None
    assert breaker.record("errored", auth, turns=0) is None
    assert breaker.record("completed") is None  # streak reset
    assert breaker.record("errored", auth, turns=0) is None
    assert breaker.record("errored", ValueError("task bug"), turns=0) is None  # neither counts nor resets
    assert breaker.record("errored", auth, turns=0) is None
    message = breaker.record("errored", auth, turns=0)
    assert message == "authentication failed (HTTP 401) on 3 consecutive episode(s): set $MY_KEY"
    assert CircuitBreaker(0).record("errored", auth, turns=0) is None  # 0 disables it
    with pytest.raises(ValueError, match=">= 0"):
        CircuitBreaker(-1)


def failing_episode(fail: set[str], calls: list[str], *, sleep: float = 0.01):
    async def episode(task_id: str, rec: EpisodeRecorder) -> None:
        calls.append(task_id)
        await asyncio.sleep(sleep)
        if task_id in fail:
            raise ModelError("auth", "Incorrect API key provided", status=401, provider="openai", model="m")
        rec.model_response({"text": "ok", "usage": {"input_tokens": 10, "output_tokens": 2}}, cost_usd=0.0)
        rec.final_answer("ok")

    return episode


async def test_the_runner_stops_after_n_repeating_errors_and_resume_loses_nothing(tmp_path):
    run = RunDir(tmp_path / "run", CONFIG)
    tasks = ids(40)
    calls: list[str] = []
    # the first 5 tasks work, then the key "expires"
    broken = set(tasks[5:])
    result = await run_episodes(
        run, tasks, failing_episode(broken, calls), concurrency=4, progress=False, breaker=CircuitBreaker(3)
    )
    assert result.stopped_reason == "circuit_breaker"
    assert result.message.startswith(
        "authentication failed (HTTP 401) on 3 consecutive episode(s): check the API key"
    )
    assert (
        result.completed == 5 and 3 <= result.errored < 8
    )  # those finishing with the third are recorded too
    assert result.not_started > 20 and len(calls) < 15  # did not burn through the 35 broken tasks
    traces = run.latest_traces()
    assert len(traces) == result.completed + result.errored  # the cancelled in-flight ones left no trace
    completed = {t for t, r in traces.items() if r["status"] == "completed"}
    assert completed == set(tasks[:5])

    # resuming (key fixed): completed tasks are never run again; the 401s only with retry_errored
    calls.clear()
    again = await run_episodes(
        run, tasks, failing_episode(set(), calls), concurrency=4, progress=False, breaker=CircuitBreaker(3)
    )
    assert again.stopped_reason == "done" and again.skipped == len(traces)
    assert not set(calls) & set(traces)
    calls.clear()
    last = await run_episodes(
        run,
        tasks,
        failing_episode(set(), calls),
        concurrency=4,
        progress=False,
        retry_errored=True,
        breaker=CircuitBreaker(3),
    )
    assert last.stopped_reason == "done" and set(calls) == set(traces) - completed
    assert Counter(r["status"] for r in run.latest_traces().values()) == Counter(completed=40)


async def test_interleaved_successes_keep_the_breaker_closed(tmp_path):
    run = RunDir(tmp_path / "run", CONFIG)
    tasks = ids(12)
    calls: list[str] = []
    result = await run_episodes(
        run,
        tasks,
        failing_episode(set(tasks[1::2]), calls),
        concurrency=1,
        progress=False,
        breaker=CircuitBreaker(2),
    )
    assert (result.stopped_reason, result.completed, result.errored) == ("done", 6, 6)
