"""Retries with exponential backoff and full jitter for model calls.

Only :class:`~client.adapters.errors.ModelError` with ``retryable=True`` is retried (rate limits,
5xx including Anthropic's 529, timeouts, dropped connections). Deterministic failures (bad request,
context length, auth) fail at once. The delay before retry *n* is ``max(retry_after, backoff(n))``
where ``backoff(n)`` is drawn uniformly from ``[0, min(max_delay, base_delay * 2**(n-1))]``
("full jitter"), so a server's ``Retry-After`` is always honoured.

Usage::

    policy = RetryPolicy(max_attempts=6)  # client.model.Model does this for every model call
    response = await call_with_retries(
        lambda: adapter.complete(messages, tools), policy,
        on_attempt=lambda n, err, delay: trace.model_attempt_failed(n, err, delay),
    )
"""

from __future__ import annotations

import asyncio
import inspect
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from client.adapters.errors import AttemptRecord, ModelError

__all__ = ["AttemptCallback", "RetryPolicy", "call_with_retries"]

T = TypeVar("T")

AttemptCallback = Callable[[int, ModelError, float | None], Any]
"""``on_attempt(attempt_no, error, delay)``: called after every failed attempt (1-based ``attempt_no``);
``delay`` is the sleep before the next attempt, or ``None`` when no retry follows. May be async."""


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry.

    Attributes:
        max_attempts: total attempts including the first (1 = no retries).
        base_delay: backoff cap for the first retry, in seconds; doubles per retry.
        max_delay: upper bound of the exponential backoff.
        jitter: ``True`` = full jitter (uniform in ``[0, cap]``); ``False`` = always the cap.
        max_retry_after: if a server asks for a longer wait than this, give up instead of waiting
            (e.g. a daily quota); ``None`` = always wait.
        rng: random source for the jitter (inject a seeded ``random.Random`` in tests).
    """

    max_attempts: int = 6
    base_delay: float = 1.0
    max_delay: float = 60.0
    jitter: bool = True
    max_retry_after: float | None = 300.0
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts}")
        if self.base_delay < 0 or self.max_delay < 0:
            raise ValueError(
                f"delays must be >= 0, got base_delay={self.base_delay}, max_delay={self.max_delay}"
            )

    @classmethod
    def no_retries(cls) -> RetryPolicy:
        """A policy that makes exactly one attempt."""
        return cls(max_attempts=1)

    def backoff(self, retry_no: int) -> float:
        """Backoff before retry ``retry_no`` (1 = the first retry), without ``retry_after``."""
        cap = min(self.max_delay, self.base_delay * (2 ** max(0, retry_no - 1)))
        return self.rng.uniform(0.0, cap) if self.jitter else cap

    def delay_for(self, retry_no: int, error: ModelError) -> float:
        """Seconds to wait before retry ``retry_no`` after ``error``: ``max(retry_after, backoff)``."""
        backoff = self.backoff(retry_no)
        if error.retry_after is not None:
            return max(error.retry_after, backoff)
        return backoff

    def should_retry(self, attempt_no: int, error: ModelError) -> bool:
        """Whether to retry after failed attempt ``attempt_no`` (1-based)."""
        if not error.retryable or attempt_no >= self.max_attempts:
            return False
        if self.max_retry_after is not None and error.retry_after is not None:
            return error.retry_after <= self.max_retry_after
        return True


async def call_with_retries(
    fn: Callable[[], Awaitable[T]],
    policy: RetryPolicy | None = None,
    *,
    on_attempt: AttemptCallback | None = None,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """Await ``fn()`` until it succeeds, retrying retryable :class:`ModelError` per ``policy``.

    Returns ``fn``'s result. On final failure re-raises the last ``ModelError`` with ``error.attempts``
    holding an :class:`AttemptRecord` for every failed attempt. Exceptions that are not ``ModelError``
    (bugs, cancellation) propagate at once, untouched.
    """
    policy = policy or RetryPolicy()
    history: list[AttemptRecord] = []
    started = clock()
    attempt = 0
    while True:
        attempt += 1
        try:
            return await fn()
        except ModelError as error:
            retry = policy.should_retry(attempt, error)
            delay = policy.delay_for(attempt, error) if retry else None
            history.append(
                AttemptRecord(
                    attempt=attempt,
                    kind=error.kind,
                    status=error.status,
                    message=error.provider_message,
                    retryable=error.retryable,
                    retry_after=error.retry_after,
                    delay=delay,
                    elapsed_s=clock() - started,
                )
            )
            if on_attempt is not None:
                result = on_attempt(attempt, error, delay)
                if inspect.isawaitable(result):
                    await result
            if delay is None:
                error.attempts = list(history)
                raise
            await sleep(delay)
