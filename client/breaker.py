"""A circuit breaker for runs: stop after errors that will repeat on every task.

Some failures are not about the task at all: a wrong API key (401/403), an unknown model or a wrong
endpoint (404), a model endpoint that stays unreachable after the retries, an exhausted quota, a
tool server that refuses connections, a context window too small for the first request. Every
remaining task would fail the same way, so running 1,000 of them only burns time (and, for partial
failures, money). :func:`repeating_error` recognises these; :class:`CircuitBreaker` counts them and
trips after ``max_consecutive`` of them with no completed episode in between.

Usage (the runner does this for every finished episode)::

    breaker = CircuitBreaker(3, hint=lambda err: "check $OPENAI_API_KEY" if err.kind == "auth" else None)
    message = breaker.record(status, error, turns=recorder.totals.turns)
    if message is not None:
        ...  # stop starting episodes; ``message`` says what failed and what to fix

Errors of other kinds (a 400 on one task's odd arguments, a tool bug, a long conversation that
overflows the context window at turn 7) neither count nor reset the streak: they are about the
task. A completed episode resets it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["CircuitBreaker", "RemoteError", "RepeatingError", "repeating_error"]


class RemoteError(dict[str, Any]):
    """The error payload (``client.runs.error_info``) of an exception raised in another process (a
    worker of ``evals run --workers``), with the class names of that exception's MRO, which the
    payload does not hold: the breaker matches a subclass of ``ModelError`` there as here. Written to
    a trace it is the plain payload."""

    def __init__(self, payload: Mapping[str, Any], mro: list[str] | None = None):
        super().__init__(payload)
        self.mro = list(mro or [])


@dataclass(frozen=True)
class RepeatingError:
    """An episode's error that will recur on every task.

    Attributes:
        kind: ``auth``, ``not_found``, ``model_unreachable``, ``quota``, ``context_window`` or
            ``tool_server_unreachable``.
        what: what failed, for people (``"authentication failed (HTTP 401)"``).
        fix: a generic fix-it hint (the caller's ``hint`` may give a more specific one).
        error_type / message: the exception's class name and text.
        provider: the failing model's provider (``"openai"``), when known.
    """

    kind: str
    what: str
    fix: str
    error_type: str
    message: str
    provider: str | None = None


def _fields(error: Any) -> tuple[str, str | None, int | None, bool | None, str, str | None, list[str]]:
    """(type name, ModelError kind, HTTP status, retryable, message, provider, class names of the MRO)."""
    if isinstance(error, BaseException):
        kind = getattr(error, "kind", None)
        status = getattr(error, "status", None)
        retryable = getattr(error, "retryable", None)
        provider = getattr(error, "provider", None)
        names = [c.__name__ for c in type(error).__mro__]
        message = str(error)
        return type(error).__name__, kind, status, retryable, message, provider, names
    if isinstance(error, Mapping):  # an error payload as in a trace (``client.runs.error_info``)
        raw_details = error.get("details")
        details: Mapping[str, Any] = raw_details if isinstance(raw_details, Mapping) else {}
        name = str(error.get("type") or "Error")
        return (
            name,
            details.get("kind"),
            details.get("status"),
            error.get("retryable"),
            str(error.get("message") or ""),
            details.get("provider"),
            (error.mro if isinstance(error, RemoteError) else None) or [name],
        )
    return type(error).__name__, None, None, None, str(error), None, [type(error).__name__]


def repeating_error(error: Any, *, turns: int | None = None) -> RepeatingError | None:
    """Classify an episode's error (an exception or a trace's error payload): will it repeat?

    Args:
        error: what the episode failed with.
        turns: model responses the episode received before failing; a context-length error before
            the first response means the fixed part of the prompt (system prompt, tools, the first
            message) does not fit, which no task will change. ``None``: unknown (not counted).

    Returns ``None`` for errors that are about the task rather than the setup.
    """
    name, kind, status, retryable, message, provider, mro = _fields(error)

    def found(kind_: str, what: str, fix: str) -> RepeatingError:
        return RepeatingError(kind_, what, fix, name, message, provider)

    if "ModelError" in mro:  # the model call failed (after the retries, if any)
        if kind == "auth":
            what = "permission denied" if status == 403 else "authentication failed"
            return found("auth", f"{what} (HTTP {status})" if status else what, "check the API key")
        if status == 404:
            return found(
                "not_found", "model or endpoint not found (HTTP 404)", "check the model name and the base URL"
            )
        if kind == "connection":
            return found(
                "model_unreachable",
                "cannot connect to the model endpoint",
                "check that the model server is running and the base URL is right",
            )
        if kind == "rate_limit" and retryable is False:
            return found(
                "quota",
                f"quota or credit exhausted (HTTP {status or 429})",
                "check the account's quota and billing",
            )
        if kind == "context_length" and turns == 0:
            return found(
                "context_window",
                "the first request does not fit the model's context window",
                "use a model (or server setting) with a larger context window",
            )
        return None
    if "ConnectError" in mro or "ConnectionRefusedError" in mro:
        return found(
            "tool_server_unreachable",
            "cannot connect to the tool server",
            "check that the MCP server is running and --server-url is right",
        )
    return None


Hint = Callable[[RepeatingError], str | None]
"""Gives a more specific fix-it line for an error (e.g. naming the API-key variable); ``None``: the generic one."""


class CircuitBreaker:
    """Trips after ``max_consecutive`` repeating errors with no completed episode in between.

    Args:
        max_consecutive: how many such errors trip it; 0 disables it.
        hint: optional, the caller's fix-it line for an error (it knows the flags and variables).
    """

    def __init__(self, max_consecutive: int, hint: Hint | None = None) -> None:
        if not isinstance(max_consecutive, int) or max_consecutive < 0:
            raise ValueError(f"max_consecutive must be an integer >= 0 (0 disables), got {max_consecutive!r}")
        self.max_consecutive = max_consecutive
        self.hint = hint
        self.streak: list[RepeatingError] = []
        self.tripped: RepeatingError | None = None

    @property
    def enabled(self) -> bool:
        """Whether it can trip at all."""
        return self.max_consecutive > 0

    def record(self, status: str, error: Any = None, *, turns: int | None = None) -> str | None:
        """Count one finished episode; returns the stop message when this one trips the breaker."""
        if not self.enabled or self.tripped is not None:
            return None
        if status == "completed":
            self.streak.clear()
            return None
        found = repeating_error(error, turns=turns)
        if found is None:
            return None
        self.streak.append(found)
        if len(self.streak) < self.max_consecutive:
            return None
        self.tripped = found
        return self.message()

    def message(self) -> str:
        """Why the breaker tripped and what to do (after it tripped)."""
        err = self.tripped
        if err is None:
            return "the circuit breaker has not tripped"
        fix = (self.hint(err) if self.hint is not None else None) or err.fix
        same = sum(1 for e in self.streak if e.kind == err.kind)
        return f"{err.what} on {same} consecutive episode(s): {fix}"
