"""Retry policy and call_with_retries, with an injected sleep (no real waiting)."""

from __future__ import annotations

import random

import pytest

from client.adapters.errors import ModelError, parse_retry_after
from client.retry import RetryPolicy, call_with_retries


class FakeSleep:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def failing_then(result: str, *errors: ModelError):
    """An async fn that raises the given errors in turn, then returns ``result``."""
    queue = list(errors)
    calls = {"n": 0}

    async def fn() -> str:
        calls["n"] += 1
        if queue:
            raise queue.pop(0)
        return result

    return fn, calls


def test_backoff_is_exponential_and_capped() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=5.0, jitter=False)
    assert [policy.backoff(n) for n in range(1, 6)] == [1.0, 2.0, 4.0, 5.0, 5.0]


def test_full_jitter_stays_within_the_cap() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=8.0, rng=random.Random(7))
    for n in range(1, 8):
        cap = min(8.0, 2 ** (n - 1))
        samples = [policy.backoff(n) for _ in range(200)]
        assert all(0.0 <= s <= cap for s in samples)
        assert max(samples) > cap * 0.8  # really spread over the range


async def test_retries_retryable_errors_then_succeeds() -> None:
    sleep = FakeSleep()
    fn, calls = failing_then(
        "ok",
        ModelError("rate_limit", "slow down", status=429),
        ModelError("server_error", "boom", status=500),
        ModelError("server_error", "overloaded", status=529),
        ModelError("timeout", "timed out"),
        ModelError("connection", "reset"),
    )
    seen: list[tuple[int, str, float | None]] = []
    policy = RetryPolicy(max_attempts=6, base_delay=0.5, max_delay=2.0, rng=random.Random(1))
    result = await call_with_retries(
        fn, policy, on_attempt=lambda n, e, d: seen.append((n, e.kind, d)), sleep=sleep
    )
    assert result == "ok"
    assert calls["n"] == 6
    assert [s[:2] for s in seen] == [
        (1, "rate_limit"),
        (2, "server_error"),
        (3, "server_error"),
        (4, "timeout"),
        (5, "connection"),
    ]
    assert sleep.delays == [s[2] for s in seen]
    assert all(0 <= d <= 2.0 for d in sleep.delays)


async def test_retry_after_is_a_lower_bound_on_the_delay() -> None:
    sleep = FakeSleep()
    fn, _ = failing_then("ok", ModelError("rate_limit", "slow", status=429, retry_after=7.5))
    policy = RetryPolicy(base_delay=0.01, max_delay=0.02)
    assert await call_with_retries(fn, policy, sleep=sleep) == "ok"
    assert sleep.delays == [7.5]


async def test_backoff_wins_when_larger_than_retry_after() -> None:
    sleep = FakeSleep()
    fn, _ = failing_then("ok", ModelError("rate_limit", "slow", status=429, retry_after=0.1))
    policy = RetryPolicy(base_delay=3.0, jitter=False)
    await call_with_retries(fn, policy, sleep=sleep)
    assert sleep.delays == [3.0]


@pytest.mark.parametrize(
    "error",
    [
        ModelError("bad_request", "invalid", status=400),
        ModelError("context_length", "too long", status=400),
        ModelError("auth", "bad key", status=401),
        ModelError("rate_limit", "insufficient_quota", status=429, retryable=False),
    ],
)
async def test_deterministic_failures_are_not_retried(error: ModelError) -> None:
    sleep = FakeSleep()
    fn, calls = failing_then("never", error)
    records: list[tuple[int, float | None]] = []
    with pytest.raises(ModelError) as info:
        await call_with_retries(
            fn, RetryPolicy(), sleep=sleep, on_attempt=lambda n, e, d: records.append((n, d))
        )
    assert info.value is error
    assert calls["n"] == 1 and sleep.delays == []
    assert records == [(1, None)]
    assert len(error.attempts) == 1 and error.attempts[0].delay is None


async def test_gives_up_after_max_attempts_with_history_attached() -> None:
    sleep = FakeSleep()
    errors = [ModelError("server_error", f"boom {i}", status=503) for i in range(5)]
    fn, calls = failing_then("never", *errors)
    with pytest.raises(ModelError) as info:
        await call_with_retries(fn, RetryPolicy(max_attempts=3, base_delay=0.01), sleep=sleep)
    assert calls["n"] == 3
    assert info.value is errors[2]
    history = info.value.attempts
    assert [a.attempt for a in history] == [1, 2, 3]
    assert [a.message for a in history] == ["boom 0", "boom 1", "boom 2"]
    assert history[-1].delay is None and all(a.delay is not None for a in history[:-1])
    assert "after 3 attempts" in str(info.value)
    assert info.value.to_dict()["attempts"][0]["status"] == 503


async def test_too_long_retry_after_gives_up() -> None:
    sleep = FakeSleep()
    fn, calls = failing_then("never", ModelError("rate_limit", "daily quota", status=429, retry_after=3600))
    with pytest.raises(ModelError):
        await call_with_retries(fn, RetryPolicy(max_retry_after=300), sleep=sleep)
    assert calls["n"] == 1 and sleep.delays == []


async def test_async_on_attempt_and_non_model_errors_propagate() -> None:
    seen: list[int] = []

    async def record(n: int, error: ModelError, delay: float | None) -> None:
        seen.append(n)

    fn, _ = failing_then("ok", ModelError("timeout", "slow"))
    assert (
        await call_with_retries(fn, RetryPolicy(base_delay=0), on_attempt=record, sleep=FakeSleep()) == "ok"
    )
    assert seen == [1]

    async def buggy() -> None:
        raise KeyError("bug")

    with pytest.raises(KeyError):
        await call_with_retries(buggy, RetryPolicy(), sleep=FakeSleep())


def test_policy_validation() -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        RetryPolicy(max_attempts=0)
    assert RetryPolicy.no_retries().max_attempts == 1


def test_parse_retry_after_variants() -> None:
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"retry-after": "0.25"}) == 0.25
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after(
        {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, now=1445412470.0
    ) == pytest.approx(10.0)
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, now=1445412490.0) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
    assert parse_retry_after(None) is None


def test_model_error_rejects_unknown_kind() -> None:
    with pytest.raises(ValueError, match="unknown ModelError kind"):
        ModelError("weird", "x")


def test_model_error_pickles_with_its_fields() -> None:
    import pickle

    error = ModelError("rate_limit", "slow", status=429, retry_after=1.5, provider="openai", model="m")
    error.attempts = []
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.kind, copy.status, copy.retry_after, copy.retryable, copy.provider) == (
        "rate_limit",
        429,
        1.5,
        True,
        "openai",
    )
    assert str(copy) == str(error)
