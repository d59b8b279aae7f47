"""JSON conversion shared by every file of a run (and by the response cache, ``client.cache``).

Values are converted the same way everywhere: objects with ``to_dict()``, pydantic models,
dataclasses, exceptions (as :func:`error_info`), paths, dates, enums, sets, bytes … and, as a last
resort, ``repr``: a trace is never lost because of one odd value.

``json_default``, ``short_json`` and ``now_iso`` are helpers of the other ``client._runs`` modules,
not part of the public API; ``dumps_line`` is how a trace record becomes its line of ``traces.jsonl``.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import time
import traceback
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from .secrets import redact_urls

__all__ = ["canonical_json", "dumps_line", "error_info", "is_transient", "to_jsonable"]

_TRACEBACK_LIMIT = 8000


def json_default(obj: Any) -> Any:
    """``json.dumps`` fallback: ``to_dict()``, pydantic models, dataclasses, exceptions, paths, dates…"""
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    model_dump = getattr(obj, "model_dump", None)
    if callable(model_dump):
        return model_dump(mode="json")
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if isinstance(obj, BaseException):
        return error_info(obj, with_traceback=False)
    if isinstance(obj, datetime | date):
        return obj.isoformat()
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, set | frozenset):
        return sorted(obj, key=repr)
    if isinstance(obj, tuple):
        return list(obj)
    if isinstance(obj, bytes | bytearray):
        return bytes(obj).decode("utf-8", errors="backslashreplace")
    if isinstance(obj, Mapping):
        return dict(obj)
    if isinstance(obj, Sequence):
        return list(obj)
    return repr(obj)  # a trace never fails to be written because of one odd value


def dumps_line(obj: Any) -> str:
    """``obj`` as one line of JSON (non-ASCII kept), objects converted with :func:`json_default`."""
    return _LINE.encode(obj)


_LINE = json.JSONEncoder(default=json_default, ensure_ascii=False)  # json.dumps's, made once (not per line)


def to_jsonable(obj: Any) -> Any:
    """A JSON-only copy of ``obj`` (objects with ``to_dict()``, dataclasses, pydantic models… converted)."""
    return json.loads(dumps_line(obj))


def canonical_json(obj: Any) -> str:
    """Canonical JSON of ``obj``: sorted keys, no spaces, UTF-8 text; objects converted as in traces."""
    return json.dumps(obj, default=json_default, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def short_json(value: Any, limit: int = 80) -> str:
    """``value`` as JSON, cut to ``limit`` characters (for messages)."""
    text = dumps_line(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def now_iso() -> str:
    """The current UTC time, ISO-8601 with milliseconds (``datetime.now(UTC).isoformat(timespec=
    "milliseconds")``; the date and time of day are formatted once per second)."""
    seconds, micros = divmod(round(time.time() * 1_000_000), 1_000_000)
    global _iso_second
    if _iso_second[0] != seconds:
        _iso_second = (seconds, datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S"))
    return f"{_iso_second[1]}.{micros // 1000:03d}+00:00"


_iso_second: tuple[int, str] = (-1, "")


def _transport_errors() -> tuple[type[BaseException], ...]:
    """The exception classes of a connection that failed or dropped (HTTP client, streams)."""
    import anyio
    import httpx2

    return (TimeoutError, ConnectionError, httpx2.TransportError, anyio.ClosedResourceError,
            anyio.BrokenResourceError, anyio.EndOfStream)


_CONNECTION_CLOSED = -32000  # the MCP SDK's error code for a session whose connection went away


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` is a failure of the connection rather than of the request: a timeout, a
    connection refused, reset or dropped (``httpx`` ``ReadError``/``RemoteProtocolError``/
    ``ConnectError``…, a closed stream, an MCP session whose connection closed). Running the episode
    again may succeed; a single-member exception group is judged by its member."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, _transport_errors()):
        return True
    error = getattr(exc, "error", None)  # mcp's MCPError carries the JSON-RPC ErrorData
    return type(exc).__name__ in ("MCPError", "McpError") and getattr(error, "code", None) == _CONNECTION_CLOSED


def error_info(exc: BaseException, *, with_traceback: bool = True) -> dict[str, Any]:
    """JSON summary of an exception for a trace.

    ``retryable`` is the exception's own ``retryable`` attribute when it has one (``ModelError``),
    else :func:`is_transient` (a timeout, a dropped or refused connection) and false for everything
    else. ``attempts`` is the exception's ``attempts`` list (filled by ``client.retry``), ``details``
    its ``to_dict()``. Credentials in a URL the message or traceback quotes are redacted.
    """
    retryable = getattr(exc, "retryable", None)
    if not isinstance(retryable, bool):
        retryable = is_transient(exc)
    info: dict[str, Any] = {
        "type": type(exc).__name__,
        "qualified_type": f"{type(exc).__module__}.{type(exc).__qualname__}",
        "message": redact_urls(str(exc)),
        "retryable": retryable,
        "attempts": to_jsonable(list(getattr(exc, "attempts", None) or [])),
        "details": None,
    }
    to_dict = getattr(exc, "to_dict", None)
    if callable(to_dict):
        try:
            info["details"] = to_jsonable(to_dict())
        except Exception as inner:  # noqa: BLE001 - a broken to_dict must not hide the error itself
            info["details"] = {"to_dict_failed": f"{type(inner).__name__}: {inner}"}
    if with_traceback and exc.__traceback__ is not None:
        text = redact_urls("".join(traceback.format_exception(exc)))
        info["traceback"] = text if len(text) <= _TRACEBACK_LIMIT else "…" + text[-_TRACEBACK_LIMIT:]
    return info
