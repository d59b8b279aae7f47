"""Client-side rate limiting for model calls: requests per minute and tokens per minute.

One :class:`RateLimiter` per provider account, shared by every episode that runs concurrently. It is
two token buckets (requests and tokens) refilled continuously at ``limit / 60`` per second; each
bucket holds at most ``burst_seconds`` worth of budget, so a run does not fire a whole minute's
budget in its first second (providers enforce per-minute limits over shorter windows too). Usage::

    limiter = RateLimiter(requests_per_minute=500, tokens_per_minute=200_000)
    async with limiter.reserve(estimate_request_tokens(messages, tools, max_tokens)) as slot:
        response = await adapter.complete(messages, tools, "auto", GenerateParams(max_tokens=max_tokens))
        slot.record(response.usage.total_tokens)

(:class:`client.model.Model` does this for every model call.)

Waiters are served first come, first served. A reservation that is never ``record``-ed keeps its
estimate (conservative: failed requests often count against the provider's limits too). A request
larger than the token bucket is let through when the bucket is full and leaves a debt that later
requests wait for, so nothing deadlocks.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from client.messages import AssistantMessage, Message, SystemMessage, ToolDef, ToolResultMessage, UserMessage

__all__ = ["RateLimiter", "Reservation", "estimate_request_tokens"]

_EPS = 1e-9


class _Bucket:
    """A continuously refilled token bucket whose level may go negative (debt)."""

    def __init__(self, per_minute: float, burst_seconds: float, now: float) -> None:
        if per_minute <= 0:
            raise ValueError(f"a rate limit must be positive, got {per_minute} per minute")
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate * burst_seconds)
        self.level = self.capacity
        self.updated = now

    def refill(self, now: float) -> None:
        if now > self.updated:
            self.level = min(self.capacity, self.level + (now - self.updated) * self.rate)
            self.updated = now

    def wait_for(self, amount: float) -> float:
        """Seconds until ``min(amount, capacity)`` is available (0 if it is now)."""
        need = min(amount, self.capacity)
        missing = need - self.level
        return 0.0 if missing <= _EPS else missing / self.rate


@dataclass
class Reservation:
    """Budget taken by one request; call :meth:`record` with the real token count when known."""

    limiter: RateLimiter
    estimated_tokens: int
    waited_s: float = 0.0
    recorded_tokens: int | None = None

    def record(self, actual_tokens: int) -> None:
        """Correct the token bucket by ``actual - estimated`` (once; later calls are ignored)."""
        if self.recorded_tokens is not None:
            return
        self.recorded_tokens = int(actual_tokens)
        self.limiter._adjust_tokens(self.recorded_tokens - self.estimated_tokens)


class RateLimiter:
    """Requests-per-minute and tokens-per-minute limiter for many concurrent asyncio tasks.

    Args:
        requests_per_minute: ``None`` = unlimited.
        tokens_per_minute: ``None`` = unlimited.
        burst_seconds: how many seconds of budget a bucket can hold (default 10 s).
        clock / sleep: injectable for tests (a fake clock whose ``sleep`` advances time).
        name: label used in ``repr`` and stats.
    """

    def __init__(
        self,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        *,
        burst_seconds: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        name: str = "",
    ) -> None:
        if burst_seconds <= 0:
            raise ValueError(f"burst_seconds must be positive, got {burst_seconds}")
        self.name = name
        self.requests_per_minute = requests_per_minute
        self.tokens_per_minute = tokens_per_minute
        self._clock = clock
        self._sleep = sleep
        now = clock()
        self._requests = _Bucket(requests_per_minute, burst_seconds, now) if requests_per_minute else None
        self._tokens = _Bucket(tokens_per_minute, burst_seconds, now) if tokens_per_minute else None
        self._lock = asyncio.Lock()
        self.acquired = 0
        self.total_wait_s = 0.0

    def __repr__(self) -> str:
        return (
            f"RateLimiter({self.name or 'unnamed'}: rpm={self.requests_per_minute}, "
            f"tpm={self.tokens_per_minute})"
        )

    @property
    def unlimited(self) -> bool:
        """True when neither limit is set (acquiring never waits)."""
        return self._requests is None and self._tokens is None

    def _refill(self, now: float) -> None:
        for bucket in (self._requests, self._tokens):
            if bucket is not None:
                bucket.refill(now)

    def _wait_needed(self, tokens: int, now: float) -> float:
        wait = 0.0
        if self._requests is not None:
            wait = max(wait, self._requests.wait_for(1))
        if self._tokens is not None and tokens > 0:
            wait = max(wait, self._tokens.wait_for(tokens))
        return wait

    async def acquire(self, estimated_tokens: int = 0) -> Reservation:
        """Wait until one request and ``estimated_tokens`` fit the limits, then take them."""
        if estimated_tokens < 0:
            raise ValueError(f"estimated_tokens must be >= 0, got {estimated_tokens}")
        waited = 0.0
        async with self._lock:
            while True:
                now = self._clock()
                self._refill(now)
                wait = self._wait_needed(estimated_tokens, now)
                if wait <= _EPS:
                    break
                await self._sleep(wait)
                waited += wait
            if self._requests is not None:
                self._requests.level -= 1
            if self._tokens is not None:
                self._tokens.level -= estimated_tokens
            self.acquired += 1
            self.total_wait_s += waited
        return Reservation(self, estimated_tokens, waited)

    @asynccontextmanager
    async def reserve(self, estimated_tokens: int = 0) -> AsyncIterator[Reservation]:
        """``async with limiter.reserve(n) as slot: ...; slot.record(actual)``."""
        yield await self.acquire(estimated_tokens)

    def _adjust_tokens(self, delta: int) -> None:
        if self._tokens is None or delta == 0:
            return
        self._tokens.refill(self._clock())
        self._tokens.level = min(self._tokens.capacity, self._tokens.level - delta)

    def stats(self) -> dict[str, Any]:
        """Counters for progress displays and run reports."""
        return {
            "name": self.name,
            "requests_per_minute": self.requests_per_minute,
            "tokens_per_minute": self.tokens_per_minute,
            "acquired": self.acquired,
            "total_wait_s": round(self.total_wait_s, 3),
        }


def estimate_request_tokens(
    messages: list[Message], tools: list[ToolDef] | None = None, max_tokens: int | None = None
) -> int:
    """Rough token count of a request for rate limiting: ~4 characters per token, plus ``max_tokens``
    (OpenAI counts the output limit against the tokens-per-minute budget when the request arrives)."""
    chars = 0
    for m in messages:
        if isinstance(m, SystemMessage | UserMessage):
            chars += len(m.text)
        elif isinstance(m, AssistantMessage):
            chars += len(m.text or "") + len(m.reasoning or "")
            chars += sum(len(tc.name) + len(tc.raw_arguments) for tc in m.tool_calls)
        elif isinstance(m, ToolResultMessage):
            chars += len(m.content)
        chars += 16  # per-message overhead
    for tool in tools or []:
        chars += len(tool.name) + len(tool.description) + len(json.dumps(tool.input_schema))
    return chars // 4 + 1 + (max_tokens or 0)
