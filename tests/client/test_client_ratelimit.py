"""RateLimiter with a fake clock: requests/tokens per minute, many concurrent tasks."""

from __future__ import annotations

import asyncio

import pytest

from client.messages import ToolDef, UserMessage
from client.ratelimit import RateLimiter, estimate_request_tokens


class FakeClock:
    """Time that only moves when someone sleeps."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


def make(
    clock: FakeClock, rpm: float | None = None, tpm: float | None = None, burst: float = 10.0
) -> RateLimiter:
    return RateLimiter(rpm, tpm, burst_seconds=burst, clock=clock, sleep=clock.sleep, name="test")


async def test_requests_per_minute_with_many_concurrent_tasks() -> None:
    clock = FakeClock()
    limiter = make(clock, rpm=60, burst=5)  # 1 request/s, bursts of 5
    start = clock.now
    times: list[float] = []

    async def one() -> None:
        async with limiter.reserve():
            times.append(clock.now - start)

    await asyncio.gather(*(one() for _ in range(25)))
    assert len(times) == 25
    assert times[:5] == [0.0] * 5  # the burst
    assert times[-1] == pytest.approx(20.0)  # then 1 per second
    # never more than burst + elapsed*rate requests by any time
    for i, t in enumerate(sorted(times)):
        assert i + 1 <= 5 + t + 1e-6
    assert limiter.acquired == 25


async def test_tokens_per_minute_and_record_corrections() -> None:
    clock = FakeClock()
    limiter = make(clock, tpm=6000, burst=10)  # 100 tokens/s, bucket of 1000
    async with limiter.reserve(800) as slot:
        slot.record(200)  # used less: 600 refunded
    before = clock.now
    await limiter.acquire(1000)  # fits in the refilled bucket (1000 - 200 = 800 left, +refund) ...
    assert clock.now - before == pytest.approx(2.0)  # ... after waiting for the missing 200 tokens
    slot2 = await limiter.acquire(0)
    slot2.record(500)  # a request estimated at 0 that used 500 leaves a debt
    before = clock.now
    await limiter.acquire(100)
    assert clock.now - before == pytest.approx(6.0)  # 500 debt + 100 needed, at 100/s


async def test_request_larger_than_bucket_does_not_deadlock() -> None:
    clock = FakeClock()
    limiter = make(clock, tpm=600, burst=10)  # 10 tokens/s, bucket 100
    await limiter.acquire(5000)  # allowed when the bucket is full, leaves a debt of 4900
    before = clock.now
    await limiter.acquire(10)
    assert clock.now - before == pytest.approx(491.0)


async def test_unlimited_never_waits() -> None:
    clock = FakeClock()
    limiter = make(clock)
    assert limiter.unlimited
    started = clock.now
    await asyncio.gather(*(limiter.acquire(10_000) for _ in range(100)))
    assert clock.now == started and limiter.stats()["acquired"] == 100


async def test_fifo_order_under_contention() -> None:
    clock = FakeClock()
    limiter = make(clock, rpm=60, burst=1)
    order: list[int] = []

    async def one(i: int) -> None:
        await limiter.acquire()
        order.append(i)

    await asyncio.gather(*(one(i) for i in range(10)))
    assert order == list(range(10))


async def test_real_clock_short_window() -> None:
    limiter = RateLimiter(requests_per_minute=600, burst_seconds=0.1)  # 10/s, bucket of 1
    loop = asyncio.get_running_loop()
    start = loop.time()
    await asyncio.gather(*(limiter.acquire() for _ in range(4)))
    assert loop.time() - start >= 0.25  # 3 waits of ~0.1 s


def test_validation() -> None:
    with pytest.raises(ValueError, match="positive"):
        RateLimiter(requests_per_minute=-5)
    with pytest.raises(ValueError, match="burst_seconds"):
        RateLimiter(requests_per_minute=60, burst_seconds=0)


def test_estimate_request_tokens() -> None:
    tools = [ToolDef("t", "d" * 40, {"type": "object"})]
    small = estimate_request_tokens([UserMessage("x" * 400)], tools)
    assert 100 <= small <= 140
    assert estimate_request_tokens([UserMessage("x" * 400)], tools, max_tokens=1000) == small + 1000
