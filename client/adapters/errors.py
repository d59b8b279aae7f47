"""Provider-neutral errors raised by model adapters, and the mapping from SDK exceptions.

Every failure of a model call surfaces as a :class:`ModelError` whose ``kind`` and ``retryable`` tell
the retry layer (``client.retry``) what to do and the trace what happened.
"""

from __future__ import annotations

import email.utils
import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

__all__ = [
    "ERROR_KINDS",
    "AttemptRecord",
    "ErrorKind",
    "ErrorDetails",
    "ModelError",
    "sdk_error",
    "stainless_error_details",
    "is_context_length_message",
    "parse_retry_after",
]

ErrorKind = Literal[
    "rate_limit", "server_error", "timeout", "connection", "bad_request", "context_length", "auth", "other"
]
ERROR_KINDS: tuple[str, ...] = (
    "rate_limit",
    "server_error",
    "timeout",
    "connection",
    "bad_request",
    "context_length",
    "auth",
    "other",
)


@dataclass(slots=True)
class AttemptRecord:
    """One failed attempt, as recorded by ``client.retry.call_with_retries``."""

    attempt: int
    kind: str
    status: int | None
    message: str
    retryable: bool
    retry_after: float | None
    delay: float | None  # seconds slept before the next attempt; None when no retry followed
    elapsed_s: float  # seconds from the first attempt's start to this failure

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return asdict(self)


class ModelError(Exception):
    """A failed model call.

    Attributes:
        kind: one of :data:`ERROR_KINDS`.
        status: HTTP status code, when there was a response.
        retryable: whether the same request may succeed if sent again.
        retry_after: seconds the provider asked us to wait (``Retry-After`` / ``retry-after-ms``).
        provider_message: the provider's own error message (or the transport error's text).
        provider / model: which adapter failed, when known.
        request_id: the provider's request id, when it sent one.
        attempts: filled by ``call_with_retries`` with every failed attempt (this one included).
    """

    def __init__(
        self,
        kind: str,
        provider_message: str,
        *,
        status: int | None = None,
        retryable: bool | None = None,
        retry_after: float | None = None,
        provider: str | None = None,
        model: str | None = None,
        request_id: str | None = None,
        body: Any = None,
    ) -> None:
        if kind not in ERROR_KINDS:
            raise ValueError(f"unknown ModelError kind {kind!r}; expected one of {ERROR_KINDS}")
        self.kind = kind
        self.provider_message = provider_message
        self.status = status
        self.retryable = _default_retryable(kind) if retryable is None else retryable
        self.retry_after = retry_after
        self.provider = provider
        self.model = model
        self.request_id = request_id
        self.body = body
        self.attempts: list[AttemptRecord] = []
        super().__init__(self._describe())

    def _describe(self) -> str:
        who = f"{self.provider}:{self.model}: " if self.provider and self.model else ""
        status = f" (HTTP {self.status})" if self.status is not None else ""
        retry = "retryable" if self.retryable else "not retryable"
        after = f", retry after {self.retry_after:g}s" if self.retry_after is not None else ""
        return f"{who}{self.kind}{status}, {retry}{after}: {self.provider_message}"

    def __str__(self) -> str:
        text = self._describe()
        if len(self.attempts) > 1:
            text += f" (after {len(self.attempts)} attempts)"
        return text

    def __reduce__(self) -> tuple[Any, ...]:
        # Exceptions pickle through their args by default, which would lose the keyword fields.
        state = {k: v for k, v in self.__dict__.items() if k != "attempts"}
        return (_restore_model_error, (state, [a.to_dict() for a in self.attempts]))

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable summary for traces."""
        return {
            "kind": self.kind,
            "status": self.status,
            "retryable": self.retryable,
            "retry_after": self.retry_after,
            "provider_message": self.provider_message,
            "provider": self.provider,
            "model": self.model,
            "request_id": self.request_id,
            "attempts": [a.to_dict() for a in self.attempts],
        }


def _restore_model_error(state: dict[str, Any], attempts: list[dict[str, Any]]) -> ModelError:
    error = ModelError(
        state.pop("kind"),
        state.pop("provider_message"),
        **{
            k: state[k]
            for k in ("status", "retryable", "retry_after", "provider", "model", "request_id", "body")
            if k in state
        },
    )
    error.attempts = [AttemptRecord(**a) for a in attempts]
    return error


def _default_retryable(kind: str) -> bool:
    return kind in ("rate_limit", "server_error", "timeout", "connection")


# --------------------------------------------------------------------------------------------------
# Header and message parsing
# --------------------------------------------------------------------------------------------------


def parse_retry_after(headers: Mapping[str, str] | None, *, now: float | None = None) -> float | None:
    """Seconds to wait according to ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date).

    Returns ``None`` when neither header is present or parseable; never negative.
    """
    if not headers:
        return None
    lower = {k.lower(): v for k, v in headers.items()}
    ms = lower.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


_CONTEXT_PATTERNS = re.compile(
    r"context[ _-]?length|context[ _-]?window|maximum context|context size|prompt is too long"
    r"|too many (input )?tokens|input length and `?max_tokens`? exceed|exceeds? the (available )?context"
    r"|reduce the length of the (messages|prompt)|request too large|prompt too long",
    re.IGNORECASE,
)
_CONTEXT_CODES = {
    "context_length_exceeded",
    "context_window_exceeded",
    "exceed_context_size_error",  # llama.cpp server
    "model_context_window_exceeded",
    "request_too_large",
    "string_above_max_length",
}


def is_context_length_message(message: str | None, code: str | None = None) -> bool:
    """Whether an error code or message says the prompt does not fit the model's context window."""
    if code and code.lower() in _CONTEXT_CODES:
        return True
    return bool(message and _CONTEXT_PATTERNS.search(message))


def _kind_for_status(status: int) -> str:
    if status == 429:
        return "rate_limit"
    if status in (401, 403):
        return "auth"
    if status == 408:
        return "timeout"
    if status == 413:
        return "context_length"
    if status >= 500 or status == 409:
        return "server_error"
    if status in (400, 404, 405, 415, 422):
        return "bad_request"
    return "other"


def _status_error(
    *,
    status: int,
    message: str,
    code: str | None,
    headers: Mapping[str, str] | None,
    provider: str | None,
    model: str | None,
    request_id: str | None,
    body: Any,
) -> ModelError:
    kind = _kind_for_status(status)
    if status in (400, 413, 422) and is_context_length_message(message, code):
        kind = "context_length"
    retryable: bool | None = None
    if kind == "rate_limit" and (
        code in ("insufficient_quota", "billing_hard_limit_reached")
        or re.search(r"request too large", message, re.I)
    ):
        # OpenAI answers 429 when the account is out of credit, or when one request alone is larger
        # than the tokens-per-minute limit: waiting won't help either.
        retryable = False
    should_retry = (headers or {}).get("x-should-retry")
    if should_retry == "true" and kind not in ("context_length", "auth", "bad_request"):
        retryable = True
    elif should_retry == "false":
        retryable = False
    return ModelError(
        kind,
        message,
        status=status,
        retryable=retryable,
        retry_after=parse_retry_after(headers),
        provider=provider,
        model=model,
        request_id=request_id,
        body=body,
    )


def _headers_of(exc: Any) -> dict[str, str]:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return {}
    return {str(k).lower(): str(v) for k, v in headers.items()}


def _body_message(body: Any, fallback: str) -> tuple[str, str | None]:
    """(message, code) from an error body that may be ``{"error": {...}}``, ``{...}`` or text."""
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping):
            message = inner.get("message") or body.get("message") or fallback
            code = inner.get("code") or inner.get("type")
            details = inner.get("details")
            if isinstance(details, Mapping) and isinstance(details.get("error_code"), str):
                code = details["error_code"]
            return str(message), (str(code) if code is not None else None)
        if isinstance(inner, str):
            return inner, None
    if isinstance(body, str) and body.strip():
        return body.strip()[:2000], None
    return fallback, None


# --------------------------------------------------------------------------------------------------
# SDK exception mapping
# --------------------------------------------------------------------------------------------------


def _not_json_reply(exc: json.JSONDecodeError, provider: str | None, model: str | None) -> ModelError:
    """A reply whose body is not JSON although it said so (a proxy's or gateway's error page sent
    with status 200): transient, like a 502 from the same proxy, so retried and re-run on resume."""
    body = " ".join(str(exc.doc or "").split())
    shown = body if len(body) <= 200 else body[:199] + "…"
    return ModelError(
        "server_error",
        f"the API answered with a body that is not JSON ({exc.msg} at position {exc.pos}; a proxy's error "
        f"page?): {shown!r}",
        retryable=True,
        provider=provider,
        model=model,
    )


@dataclass(frozen=True, slots=True)
class ErrorDetails:
    """What a provider SDK's exception says, read by the adapter's ``error_details`` hook.

    ``kind``: ``"timeout"``, ``"connection"`` (no reply), ``"status"`` (an HTTP error reply, with
    ``status``, the provider's ``message`` and error ``code``, the reply's ``headers``, ``request_id``
    and ``body``) or ``"invalid_response"`` (a reply the SDK could not read).
    """

    kind: Literal["timeout", "connection", "status", "invalid_response"]
    message: str
    status: int | None = None
    code: str | None = None
    headers: Mapping[str, str] | None = None
    request_id: str | None = None
    body: Any = None


def sdk_error(
    exc: BaseException, details: ErrorDetails | None, *, provider: str | None = None, model: str | None = None
) -> ModelError:
    """The :class:`ModelError` for an exception raised by a model call, from what the SDK said of it
    (``details``; ``None`` when the exception is not the SDK's). The one mapping every adapter uses."""
    if isinstance(exc, ModelError):
        return exc
    if details is None:
        if isinstance(exc, json.JSONDecodeError):
            return _not_json_reply(exc, provider, model)
        return ModelError("other", f"{type(exc).__name__}: {exc}", retryable=False, provider=provider, model=model)
    if details.kind == "status":
        return _status_error(
            status=details.status if details.status is not None else 0,
            message=details.message,
            code=details.code,
            headers=details.headers,
            provider=provider,
            model=model,
            request_id=details.request_id,
            body=details.body,
        )
    if details.kind == "invalid_response":
        return ModelError(
            "server_error",
            f"invalid response from the API: {details.message}",
            retryable=True,
            provider=provider,
            model=model,
        )
    return ModelError(details.kind, details.message, provider=provider, model=model)


def stainless_error_details(
    exc: BaseException,
    sdk: Any,
    *,
    message_and_code: Callable[[Any, str, str | None], tuple[str, str | None]],
    timeout_message: Callable[[Any], str],
) -> ErrorDetails | None:
    """:class:`ErrorDetails` for an exception of an SDK with the exception classes the ``openai`` and
    ``anthropic`` SDKs share (``APITimeoutError``, ``APIConnectionError``, ``APIStatusError``,
    ``APIResponseValidationError``), given as the SDK's module ``sdk``. ``message_and_code(exc,
    message, code)`` lets the SDK's own fields win over the body's; ``timeout_message(exc)`` words a timeout."""
    if isinstance(exc, sdk.APITimeoutError):
        return ErrorDetails("timeout", timeout_message(exc))
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        detail = f"{exc.message} ({type(cause).__name__}: {cause})" if cause else exc.message
        return ErrorDetails("connection", detail)
    if isinstance(exc, sdk.APIStatusError):
        message, code = message_and_code(exc, *_body_message(exc.body, exc.message))
        return ErrorDetails(
            "status",
            message,
            status=exc.status_code,
            code=code,
            headers=_headers_of(exc),
            request_id=getattr(exc, "request_id", None),
            body=exc.body,
        )
    if isinstance(exc, sdk.APIResponseValidationError):
        return ErrorDetails("invalid_response", exc.message)
    return None
