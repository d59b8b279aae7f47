"""Run directories, episode traces and the recorder that writes them.

A *run* is a directory::

    <run>/
      config.json          the run's config, written once (see :class:`RunDir`)
      traces.jsonl         one JSON line per finished episode: the source of truth for resume/scoring
      events.jsonl         in-flight event log, one line per event as it happens (debugging aid)
      traces.torn.jsonl    torn tails cut from traces.jsonl after a crash (nothing is silently lost)
      events.torn.jsonl    the same for events.jsonl
      config.history.jsonl configs that re-opened the run with ``force=True`` despite a mismatch
      .lock                held (``flock``) by the one process writing to the run

Durability: every trace line is written with a single ``os.write`` on an ``O_APPEND`` descriptor and
then ``fsync``-ed, so a ``SIGKILL`` (or power loss after the fsync) leaves at most a torn *last*
line. Readers skip a torn last line and report it; the next writer repairs the file before appending
(see :meth:`RunDir.open_for_writing`). Event lines are written the same way but not fsync-ed one by
one (they survive a process crash, which is what they are for).

The runner writes traces as :meth:`RunDir.append_trace_async` does: the line is written at once (from
then on a ``SIGKILL`` cannot lose it: it is in the kernel's page cache), then the episode waits for
an ``fsync`` that runs in a worker thread and is shared by every line written meanwhile (group
commit). So the event loop never blocks on the disk, a ``SIGKILL`` still loses at most the episodes
in flight, and an episode is reported finished once its line is fsync-ed (or, if the run is
interrupted during that wait, once :meth:`RunDir.close` has fsync-ed it).

Resume: a task counts as finished when its newest trace is ``completed``, or ``errored`` with a
deterministic error (``error.retryable`` false). Tasks whose newest trace is an errored one with a
transient error (rate limit after all retries, dropped connection, timeout) are run again; pass
``retry_errored=True`` to re-run every errored task. Several records for one task may then exist;
readers keep the newest (last in the file).

A trace record (``schema_version`` 1) looks like::

    {"schema_version": 1, "task_id": "t1", "episode_id": "…", "run_attempt": 1,
     "status": "completed" | "errored", "started_at": ISO-8601, "finished_at": ISO-8601,
     "duration_s": 1.23, "config_hash": "…", "final_answer": "…" | null,
     "error": null | {"type", "qualified_type", "message", "retryable", "attempts", "details", "traceback"},
     "totals": {"input_tokens", "output_tokens", "total_tokens", "reasoning_tokens", "cache_read_tokens",
                "cache_write_tokens", "cost_usd", "cost_known", "turns", "tool_calls", "tool_errors",
                "model_errors", "retries"},
     "outcome": {...},           # EpisodeOutcome.data: whatever the strategy wants to keep
     "events": [{"seq": 0, "t": 0.01, "kind": "model_request", ...}, ...]}

Event kinds written by :class:`EpisodeRecorder`: ``model_request``, ``model_response``,
``model_error``, ``attempt_failed``, ``tool_call``, ``note``, ``final_answer``, plus any custom kind
passed to :meth:`EpisodeRecorder.event`. ``model_request`` events store only the messages that are new
since the previous request (``messages_from`` says where they start) and the tool list only when it
changed; :func:`request_history` rebuilds each request in full.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import enum
import errno
import hashlib
import json
import logging
import os
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, Literal

try:  # POSIX only; without it a run dir is not protected against two writers
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "DEFAULT_HASH_KEYS",
    "SCHEMA_VERSION",
    "EpisodeOutcome",
    "EpisodeRecorder",
    "EpisodeStatus",
    "RunConfigMismatch",
    "RunDir",
    "RunDirClosed",
    "RunLocked",
    "RunSummary",
    "TraceScan",
    "Totals",
    "canonical_json",
    "config_hash",
    "error_info",
    "package_version",
    "request_history",
    "to_jsonable",
]

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
DEFAULT_HASH_KEYS: tuple[str, ...] = ("benchmark", "model", "strategy", "options")
"""Config keys that change results by default (not concurrency, limit, output paths)."""

EpisodeStatus = Literal["completed", "errored"]

CONFIG_FILE = "config.json"
TRACES_FILE = "traces.jsonl"
EVENTS_FILE = "events.jsonl"
TRACES_TORN_FILE = "traces.torn.jsonl"
EVENTS_TORN_FILE = "events.torn.jsonl"
CONFIG_HISTORY_FILE = "config.history.jsonl"
LOCK_FILE = ".lock"

_RESERVED_EVENT_KEYS = frozenset({"seq", "t", "kind", "episode_id", "task_id", "ts"})
_TRACEBACK_LIMIT = 8000


# --------------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------------


class RunConfigMismatch(Exception):
    """An existing run directory was re-opened with a config that differs in a result-changing key.

    Attributes:
        path: the run directory.
        differences: ``{dotted_key: (value_in_run, value_now)}``.
    """

    def __init__(self, path: Path, differences: dict[str, tuple[Any, Any]]) -> None:
        self.path = path
        self.differences = differences
        parts = [
            f"{key!r} is {_short(old)} there but {_short(new)} now" for key, (old, new) in differences.items()
        ]
        super().__init__(
            f"run directory {str(path)!r} was created with a different config: {'; '.join(parts)}. "
            f"Use a new run directory, or pass force=True (--force) to reuse this one anyway."
        )


class RunLocked(Exception):
    """Another process (or another :class:`RunDir` object) is already writing to this run directory."""


class RunDirClosed(RuntimeError):
    """Trace lines could not be fsync-ed: the run directory was closed and its own fsync failed."""


# --------------------------------------------------------------------------------------------------
# JSON helpers
# --------------------------------------------------------------------------------------------------


def _json_default(obj: Any) -> Any:
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


def _dumps(obj: Any) -> str:
    return json.dumps(obj, default=_json_default, ensure_ascii=False)


def to_jsonable(obj: Any) -> Any:
    """A JSON-only copy of ``obj`` (objects with ``to_dict()``, dataclasses, pydantic models… converted)."""
    return json.loads(_dumps(obj))


def canonical_json(obj: Any) -> str:
    """Canonical JSON of ``obj``: sorted keys, no spaces, UTF-8 text; objects converted as in traces."""
    return json.dumps(obj, default=_json_default, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _short(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, default=_json_default, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def package_version() -> str:
    """The installed version of this project (``"unknown"`` when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mcp-multihop-evals")
    except PackageNotFoundError:
        return "unknown"


def config_hash(config: Mapping[str, Any], keys: Sequence[str]) -> str:
    """sha256 (hex) of the canonical JSON of ``{key: config.get(key)}`` over ``keys`` (a missing key is null)."""
    subset = {k: config.get(k) for k in sorted(set(keys))}
    return hashlib.sha256(canonical_json(subset).encode("utf-8")).hexdigest()


def _diff(old: Any, new: Any, prefix: str, out: dict[str, tuple[Any, Any]]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new), key=str):
            _diff(old.get(key), new.get(key), f"{prefix}.{key}", out)
    elif old != new:
        out[prefix] = (old, new)


def error_info(exc: BaseException, *, with_traceback: bool = True) -> dict[str, Any]:
    """JSON summary of an exception for a trace.

    ``retryable`` is the exception's own ``retryable`` attribute when it has one (``ModelError``),
    else true for ``TimeoutError``/``ConnectionError`` and false for everything else. ``attempts`` is
    the exception's ``attempts`` list (filled by ``client.retry``), ``details`` its ``to_dict()``.
    """
    retryable = getattr(exc, "retryable", None)
    if not isinstance(retryable, bool):
        retryable = isinstance(exc, TimeoutError | ConnectionError)
    info: dict[str, Any] = {
        "type": type(exc).__name__,
        "qualified_type": f"{type(exc).__module__}.{type(exc).__qualname__}",
        "message": str(exc),
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
        text = "".join(traceback.format_exception(exc))
        info["traceback"] = text if len(text) <= _TRACEBACK_LIMIT else "…" + text[-_TRACEBACK_LIMIT:]
    return info


# --------------------------------------------------------------------------------------------------
# Append-only JSONL files
# --------------------------------------------------------------------------------------------------


def _write_all(fd: int, data: bytes) -> None:
    """One ``os.write`` (regular files write everything at once); loop only on a short write."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _repair_torn_tail(path: Path, torn_path: Path) -> bytes | None:
    """Make ``path`` end with a newline again after a crash; return the bytes that were cut, if any.

    A tail that is a whole JSON object (only the newline was lost) is kept by appending ``\\n``.
    Anything else is copied to ``torn_path`` (fsync-ed) *before* it is truncated away.
    """
    try:
        f = open(path, "r+b")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return None
    with f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return None
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return None
        cut, pos = 0, size
        while pos > 0:  # find the last newline, scanning backwards in chunks
            start = max(0, pos - 65536)
            f.seek(start)
            i = f.read(pos - start).rfind(b"\n")
            if i >= 0:
                cut = start + i + 1
                break
            pos = start
        f.seek(cut)
        tail = f.read()
        with contextlib.suppress(ValueError, UnicodeDecodeError):
            if isinstance(json.loads(tail), dict):
                f.seek(0, os.SEEK_END)
                f.write(b"\n")
                f.flush()
                os.fsync(f.fileno())
                log.warning("%s: the last line lacked its newline; added it (record kept)", path)
                return None
        entry = {
            "source": path.name,
            "offset": cut,
            "length": len(tail),
            "repaired_at": _now_iso(),
            "text": tail.decode("utf-8", errors="backslashreplace"),
            "bytes_b64": base64.b64encode(tail).decode("ascii"),
        }
        fd = os.open(torn_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            _write_all(fd, (_dumps(entry) + "\n").encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        f.truncate(cut)
        f.flush()
        os.fsync(f.fileno())
    log.warning("%s: cut a torn last line of %d bytes (copy kept in %s)", path, len(tail), torn_path.name)
    return tail


@dataclass
class TraceScan:
    """Everything read from ``traces.jsonl``, in file order.

    Attributes:
        records: every well-formed record (several per task are possible; see :meth:`latest`).
        torn_tail: bytes after the last newline (an interrupted write), or ``None``.
        bad_lines: ``(line_number, first_200_chars)`` of complete lines that are not JSON objects.
    """

    records: list[dict[str, Any]] = field(default_factory=list)
    torn_tail: bytes | None = None
    bad_lines: list[tuple[int, str]] = field(default_factory=list)

    def latest(self) -> dict[str, dict[str, Any]]:
        """``{task_id: newest record}``, in order of each task's first appearance."""
        out: dict[str, dict[str, Any]] = {}
        for record in self.records:
            out[record["task_id"]] = record
        return out

    @property
    def superseded(self) -> int:
        """How many records were replaced by a newer record for the same task."""
        return len(self.records) - len({r["task_id"] for r in self.records})


def _scan_jsonl(path: Path) -> TraceScan:
    scan = TraceScan()
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return scan
    with f:
        for lineno, raw in enumerate(f, 1):
            if not raw.endswith(b"\n"):
                scan.torn_tail = raw
                break
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except ValueError:
                record = None
            if not isinstance(record, dict) or not isinstance(record.get("task_id"), str):
                scan.bad_lines.append((lineno, raw[:200].decode("utf-8", errors="replace")))
                continue
            scan.records.append(record)
    if scan.torn_tail is not None:
        log.warning(
            "%s: skipped a torn last line of %d bytes (an interrupted write; it is repaired when the run resumes)",
            path,
            len(scan.torn_tail),
        )
    for lineno, head in scan.bad_lines:
        log.warning("%s:%d: skipped a line that is not a trace record: %s", path, lineno, head[:80])
    return scan


# --------------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------------


@dataclass
class Totals:
    """Running totals of one episode (or of several, see :meth:`add`).

    ``cost_usd`` sums the cost estimates that were known; ``cost_known`` turns false as soon as one
    model response came without a cost estimate (unknown price).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True
    turns: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    model_errors: int = 0
    retries: int = 0

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def add(self, other: Totals | Mapping[str, Any]) -> None:
        """Add another episode's totals (a :class:`Totals` or its ``to_dict()`` form) to these."""
        data = other.to_dict() if isinstance(other, Totals) else other
        for f in dataclasses.fields(self):
            value = data.get(f.name)
            if f.name == "cost_known":
                self.cost_known = self.cost_known and bool(value if value is not None else True)
            elif value is not None:
                setattr(self, f.name, getattr(self, f.name) + value)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (with ``total_tokens``)."""
        data = dataclasses.asdict(self)
        data["total_tokens"] = self.total_tokens
        data["cost_usd"] = round(self.cost_usd, 10)
        return data


@dataclass
class EpisodeOutcome:
    """What an episode function returns.

    Attributes:
        final_answer: the model's final answer (default: the last :meth:`EpisodeRecorder.final_answer`).
        error: set to record the episode as ``errored`` without raising (an exception or a dict with
            at least ``type`` and ``message``); raising from the episode function does the same.
        data: anything else the strategy wants kept in the trace (``outcome`` key), e.g. the predicted
            calls or extracted KG paths the scorer reads. Must be JSON-serialisable (objects with
            ``to_dict()`` are fine).
    """

    final_answer: str | None = None
    error: BaseException | Mapping[str, Any] | None = None
    data: dict[str, Any] = field(default_factory=dict)


def _usage_numbers(usage: Any) -> dict[str, int]:
    """Token counts from a ``Usage``, its dict, or an OpenAI-style dict (prompt/completion tokens)."""
    if usage is None:
        return {}
    if not isinstance(usage, Mapping):
        usage = to_jsonable(usage)
        if not isinstance(usage, Mapping):
            return {}

    def pick(*names: str) -> int:
        for name in names:
            value = usage.get(name)
            if isinstance(value, int | float) and not isinstance(value, bool):
                return int(value)
        return 0

    return {
        "input_tokens": pick("input_tokens", "prompt_tokens"),
        "output_tokens": pick("output_tokens", "completion_tokens"),
        "reasoning_tokens": pick("reasoning_tokens"),
        "cache_read_tokens": pick("cache_read_tokens"),
        "cache_write_tokens": pick("cache_write_tokens"),
    }


class EpisodeRecorder:
    """Logs one episode's events as they happen and builds its trace record at the end.

    Created by the runner (``RunDir.new_recorder``) and handed to the episode function; can also be
    used on its own (no sink) in unit tests of an agent loop. Every argument may be plain JSON, an
    object with ``to_dict()`` (``ModelResponse``, ``Usage``, ``ModelError``, ``AttemptRecord`` …), a
    dataclass or a pydantic model: values are converted to JSON *when recorded*, so later mutation of
    a message list does not change the record.

    Args:
        task_id: the task this episode attempts.
        episode_id: unique id (default: a random hex string).
        run_attempt: 1 for a task's first episode in the run, 2 for its first re-run, …
        config_hash: the run config's hash, copied into the record.
        sink: called with each event's JSON line (no newline) as it happens (``events.jsonl``).
        on_usage: called with ``(tokens, cost_usd)`` increments after each model response (budgets,
            progress).
    """

    def __init__(
        self,
        task_id: str,
        *,
        episode_id: str | None = None,
        run_attempt: int = 1,
        config_hash: str | None = None,
        sink: Callable[[str], None] | None = None,
        on_usage: Callable[[int, float], None] | None = None,
    ) -> None:
        self.task_id = task_id
        self.episode_id = episode_id or uuid.uuid4().hex[:16]
        self.run_attempt = run_attempt
        self.config_hash = config_hash
        self.started_at = _now_iso()
        self.totals = Totals()
        self.answer: str | None = None
        self._t0 = time.monotonic()
        self._sink = sink
        self._on_usage = on_usage
        self._event_lines: list[str] = []
        self._logged_messages: list[str] = []
        self._logged_tools_hash: str | None = None
        self._prefix = (
            '{"episode_id":' + json.dumps(self.episode_id) + ',"task_id":' + json.dumps(task_id) + ","
        )

    # ---- generic -----------------------------------------------------------------------------

    @property
    def elapsed_s(self) -> float:
        """Seconds since the episode started."""
        return time.monotonic() - self._t0

    @property
    def event_count(self) -> int:
        """How many events were recorded so far."""
        return len(self._event_lines)

    @property
    def events(self) -> list[dict[str, Any]]:
        """A copy of the events recorded so far."""
        return [json.loads(line) for line in self._event_lines]

    def event(self, kind: str, **data: Any) -> None:
        """Record an event of any ``kind`` with JSON-able ``data`` (``seq``/``t``/``ts`` are reserved)."""
        clash = _RESERVED_EVENT_KEYS.intersection(data)
        if clash:
            raise ValueError(f"event data may not use the reserved key(s) {sorted(clash)} (kind {kind!r})")
        record = {"seq": len(self._event_lines), "t": round(self.elapsed_s, 6), "kind": kind, **data}
        line = _dumps(record)
        self._event_lines.append(line)
        if self._sink is not None:
            self._sink(self._prefix + '"ts":' + json.dumps(_now_iso()) + "," + line[1:])

    # ---- model -------------------------------------------------------------------------------

    def model_request(
        self, messages: Sequence[Any] | None = None, tools: Sequence[Any] | None = None, **data: Any
    ) -> None:
        """Record a request about to be sent.

        Only messages that differ from the previous request's are stored (``messages`` starting at
        index ``messages_from``; ``message_count`` is the full length); ``tools`` is stored when it
        changed (``tools_hash`` always). :func:`request_history` rebuilds the full requests.
        """
        payload: dict[str, Any] = {}
        if messages is not None:
            encoded = [canonical_json(m) for m in messages]
            common = 0
            for old, new in zip(self._logged_messages, encoded, strict=False):
                if old != new:
                    break
                common += 1
            payload["messages_from"] = common
            payload["message_count"] = len(encoded)
            payload["messages"] = [json.loads(m) for m in encoded[common:]]
            self._logged_messages = encoded
        if tools is not None:
            tools_json = [to_jsonable(t) for t in tools]
            digest = hashlib.sha256(canonical_json(tools_json).encode("utf-8")).hexdigest()[:16]
            payload["tools_hash"] = digest
            if digest != self._logged_tools_hash:
                payload["tools"] = tools_json
                self._logged_tools_hash = digest
        self.event("model_request", **payload, **data)

    def model_response(
        self,
        response: Any,
        latency_s: float | None = None,
        usage: Any = None,
        cost_usd: float | None = None,
        **data: Any,
    ) -> None:
        """Record a model response (a ``ModelResponse`` or its dict) and add its usage and cost.

        ``latency_s`` and ``usage`` default to the response's own ``latency_s`` / ``usage``;
        ``cost_usd`` ``None`` means the price is unknown (``totals.cost_known`` becomes false).
        """
        body = to_jsonable(response)
        if isinstance(body, dict):
            if latency_s is None and isinstance(body.get("latency_s"), int | float):
                latency_s = float(body["latency_s"])
            if usage is None:
                usage = body.get("usage")
        numbers = _usage_numbers(usage)
        totals = self.totals
        for key, value in numbers.items():
            setattr(totals, key, getattr(totals, key) + value)
        totals.turns += 1
        if cost_usd is None:
            totals.cost_known = False
        else:
            totals.cost_usd += float(cost_usd)
        self.event(
            "model_response",
            response=body,
            latency_s=latency_s,
            usage=numbers or None,
            cost_usd=cost_usd,
            **data,
        )
        if self._on_usage is not None:
            self._on_usage(
                numbers.get("input_tokens", 0) + numbers.get("output_tokens", 0), float(cost_usd or 0.0)
            )

    def model_error(self, error: Any, latency_s: float | None = None, **data: Any) -> None:
        """Record a failed model call (after the retry layer gave up, or a non-retryable failure)."""
        self.totals.model_errors += 1
        self.event("model_error", error=_error_payload(error), latency_s=latency_s, **data)

    def attempt_failed(self, attempt: int, error: Any, delay: float | None = None, **data: Any) -> None:
        """Record one failed attempt of a model call; ``delay`` is the wait before the next (None: none).

        The signature matches ``client.retry.call_with_retries(on_attempt=...)``.
        """
        if delay is not None:
            self.totals.retries += 1
        self.event("attempt_failed", attempt=attempt, error=_error_payload(error), delay=delay, **data)

    # ---- tools and answers -------------------------------------------------------------------

    def tool_call(
        self,
        name: str,
        arguments: Any,
        result_text: str | None,
        structured: Any = None,
        is_error: bool = False,
        latency_s: float | None = None,
        **data: Any,
    ) -> None:
        """Record one tool call with its arguments, result text, structured result and error flag."""
        self.totals.tool_calls += 1
        if is_error:
            self.totals.tool_errors += 1
        self.event(
            "tool_call",
            name=name,
            arguments=arguments,
            result_text=result_text,
            structured=structured,
            is_error=bool(is_error),
            latency_s=latency_s,
            **data,
        )

    def note(self, message: str, **data: Any) -> None:
        """Record a free-form note (a strategy decision, a warning, …)."""
        self.event("note", message=message, **data)

    def final_answer(self, text: str | None, **data: Any) -> None:
        """Record the final answer (the last one recorded goes into the trace's ``final_answer``)."""
        self.answer = text
        self.event("final_answer", text=text, **data)

    # ---- the record --------------------------------------------------------------------------

    def build_record(
        self,
        status: EpisodeStatus,
        *,
        error: BaseException | Mapping[str, Any] | None = None,
        outcome: EpisodeOutcome | None = None,
    ) -> str:
        """The finished episode's trace record as one JSON line (without the newline)."""
        answer = (
            outcome.final_answer if outcome is not None and outcome.final_answer is not None else self.answer
        )
        header = {
            "schema_version": SCHEMA_VERSION,
            "task_id": self.task_id,
            "episode_id": self.episode_id,
            "run_attempt": self.run_attempt,
            "status": status,
            "started_at": self.started_at,
            "finished_at": _now_iso(),
            "duration_s": round(self.elapsed_s, 6),
            "config_hash": self.config_hash,
            "final_answer": answer,
            "error": None if error is None else _error_payload(error),
            "totals": self.totals.to_dict(),
            "outcome": outcome.data if outcome is not None else {},
        }
        head = _dumps(header)
        return head[:-1] + ',"events":[' + ",".join(self._event_lines) + "]}"


def _error_payload(error: Any) -> Any:
    if isinstance(error, BaseException):
        return error_info(error)
    if isinstance(error, str):
        return {"type": "Error", "message": error, "retryable": False}
    return to_jsonable(error)


def request_history(trace: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Rebuild every model request of a trace in full: ``[{"messages": [...], "tools": [...], ...}]``.

    Undoes the delta encoding of ``model_request`` events (see :meth:`EpisodeRecorder.model_request`);
    other fields of each event (model, options, …) are kept as they are.
    """
    messages: list[Any] = []
    tools: list[Any] | None = None
    out: list[dict[str, Any]] = []
    for event in trace.get("events", []):
        if event.get("kind") != "model_request":
            continue
        request = {
            k: v for k, v in event.items() if k not in ("seq", "t", "kind", "messages_from", "tools_hash")
        }
        if "messages" in event:
            messages = messages[: event.get("messages_from", 0)] + list(event["messages"])
            request["messages"] = list(messages)
        if "tools" in event:
            tools = event["tools"]
        if "tools_hash" in event:
            request["tools"] = tools
        out.append(request)
    return out


# --------------------------------------------------------------------------------------------------
# Run directory
# --------------------------------------------------------------------------------------------------


@dataclass
class RunSummary:
    """Counts and totals over a run's newest record per task.

    ``totals`` sums the newest record per task; ``spent`` sums every record, superseded ones (errored
    episodes that were re-run) included: what the run actually cost.
    """

    tasks: int
    completed: int
    errored: int
    totals: Totals
    spent: Totals
    records: int
    superseded: int
    torn_tail_bytes: int
    bad_lines: int
    errors_by_type: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        data = dataclasses.asdict(self)
        data["totals"] = self.totals.to_dict()
        data["spent"] = self.spent.to_dict()
        return data


class RunDir:
    """A run directory: config, traces, in-flight events.

    Args:
        path: the directory (created with its parents when missing).
        config: the run's config (benchmark, model spec, strategy, options, concurrency, …). On first
            use it is written to ``config.json`` together with ``created_at``, ``package_version``,
            ``hash_keys`` and ``config_hash``. Re-opening a run with a config that differs in one of
            the hash keys raises :class:`RunConfigMismatch` naming the keys. ``None`` opens the run
            as it is (reading, re-scoring).
        hash_keys: the config keys that change results (default :data:`DEFAULT_HASH_KEYS`); keys
            like concurrency or limit should not be among them. When re-opening, the given keys (or
            the stored ones) are compared.
        force: re-open despite a mismatch; ``config.json`` keeps the original and the new config is
            appended to ``config.history.jsonl``; new traces carry the new ``config_hash``.
        event_log: write ``events.jsonl`` while episodes run.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        config: Mapping[str, Any] | None = None,
        *,
        hash_keys: Sequence[str] | None = None,
        force: bool = False,
        event_log: bool = True,
    ) -> None:
        self.path = Path(path)
        self.event_log = event_log
        self.path.mkdir(parents=True, exist_ok=True)
        self._lock_fd: int | None = None
        self._traces_fd: int | None = None
        self._events_fd: int | None = None
        # group commit of trace fsyncs (append_trace_async): lines written / known durable, the
        # fsync in flight, and a lock that keeps close() from closing the descriptor under it
        self._traces_written = 0
        self._traces_synced = 0
        self._sync_future: asyncio.Future[None] | None = None
        self._fd_lock = threading.Lock()
        self.config: dict[str, Any] | None = self._load_config()
        self.config_hash: str | None = (self.config or {}).get("config_hash")
        if config is not None:
            self._apply_config(dict(config), hash_keys, force)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> RunDir:
        """Open an existing run (for reading, re-scoring or resuming); raises if it is not one."""
        p = Path(path)
        if not (p / CONFIG_FILE).is_file() and not (p / TRACES_FILE).is_file():
            raise FileNotFoundError(
                f"{str(p)!r} is not a run directory (no {CONFIG_FILE} or {TRACES_FILE} in it)"
            )
        return cls(p)

    # ---- paths ---------------------------------------------------------------------------------

    @property
    def config_path(self) -> Path:
        """``config.json``."""
        return self.path / CONFIG_FILE

    @property
    def traces_path(self) -> Path:
        """``traces.jsonl``."""
        return self.path / TRACES_FILE

    @property
    def events_path(self) -> Path:
        """``events.jsonl``."""
        return self.path / EVENTS_FILE

    @property
    def torn_path(self) -> Path:
        """``traces.torn.jsonl``."""
        return self.path / TRACES_TORN_FILE

    # ---- config --------------------------------------------------------------------------------

    def _load_config(self) -> dict[str, Any] | None:
        try:
            text = self.config_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"{self.config_path}: not valid JSON ({exc}); fix or remove it") from None
        if not isinstance(data, dict):
            raise ValueError(f"{self.config_path}: expected a JSON object, got {type(data).__name__}")
        return data

    def _apply_config(self, config: dict[str, Any], hash_keys: Sequence[str] | None, force: bool) -> None:
        config = to_jsonable(config)  # tuples -> lists etc., so comparisons are about JSON values
        meta = {"created_at", "package_version", "config_hash", "hash_keys"}
        if self.config is None:
            keys = list(hash_keys) if hash_keys is not None else list(DEFAULT_HASH_KEYS)
            record = {k: v for k, v in config.items() if k not in meta}
            record.update(
                created_at=_now_iso(),
                package_version=package_version(),
                hash_keys=keys,
                config_hash=config_hash(config, keys),
            )
            if self._create_config(record):
                self.config, self.config_hash = record, record["config_hash"]
                return
            self.config = self._load_config()  # another process created it first: compare with that
            assert self.config is not None
        stored = self.config
        keys = (
            list(hash_keys) if hash_keys is not None else list(stored.get("hash_keys") or DEFAULT_HASH_KEYS)
        )
        differences: dict[str, tuple[Any, Any]] = {}
        for key in keys:
            _diff(stored.get(key), config.get(key), key, differences)
        new_hash = config_hash(config, keys)
        if not differences:
            self.config_hash = stored.get("config_hash") or new_hash
            return
        if not force:
            raise RunConfigMismatch(self.path, differences)
        log.warning("%s", RunConfigMismatch(self.path, differences).args[0].split(". Use")[0] + " (forced)")
        entry = {
            "at": _now_iso(),
            "forced": True,
            "differences": sorted(differences),
            "config_hash": new_hash,
            "config": config,
        }
        with open(self.path / CONFIG_HISTORY_FILE, "a", encoding="utf-8") as f:
            f.write(_dumps(entry) + "\n")
        self.config_hash = new_hash

    def _create_config(self, record: dict[str, Any]) -> bool:
        """Write ``config.json`` only if it does not exist (atomic create via a hard link)."""
        tmp = self.path / f".{CONFIG_FILE}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
        tmp.write_text(
            json.dumps(record, indent=2, ensure_ascii=False, default=_json_default) + "\n", encoding="utf-8"
        )
        try:
            os.link(tmp, self.config_path)
            return True
        except FileExistsError:
            return False
        except OSError as exc:  # file systems without hard links
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP):
                raise
            if self.config_path.exists():
                return False
            os.replace(tmp, self.config_path)
            return True
        finally:
            tmp.unlink(missing_ok=True)

    # ---- writing -------------------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        """Whether this object holds the run's write lock."""
        return self._traces_fd is not None

    def open_for_writing(self) -> None:
        """Take the run's write lock, repair torn last lines, open the append descriptors (idempotent).

        Raises :class:`RunLocked` when another process or ``RunDir`` object is writing to this run.
        """
        if self.is_open:
            return
        lock_fd = os.open(self.path / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        if fcntl is not None:
            try:
                fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(lock_fd, 200).decode("utf-8", errors="replace").strip() or "unknown"
                os.close(lock_fd)
                raise RunLocked(
                    f"run directory {str(self.path)!r} is being written by another process ({holder}); "
                    f"wait for it to finish or stop it first"
                ) from None
        os.ftruncate(lock_fd, 0)
        os.write(lock_fd, f"pid {os.getpid()} since {_now_iso()}\n".encode())
        self._lock_fd = lock_fd
        try:
            _repair_torn_tail(self.traces_path, self.path / TRACES_TORN_FILE)
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
            self._traces_fd = os.open(self.traces_path, flags, 0o644)
            if self.event_log:
                _repair_torn_tail(self.events_path, self.path / EVENTS_TORN_FILE)
                self._events_fd = os.open(self.events_path, flags, 0o644)
        except BaseException:
            self.close()
            raise

    def append_trace(self, record: Mapping[str, Any] | str, *, fsync: bool = True) -> None:
        """Append one finished-episode record (a dict or a JSON line) and fsync it.

        ``fsync=False`` only writes it (it survives the process, not a power loss, until the next
        fsync): for :meth:`append_trace_async`, which then waits for a shared fsync.
        """
        self.open_for_writing()
        assert self._traces_fd is not None
        line = record if isinstance(record, str) else _dumps(record)
        if "\n" in line:
            raise ValueError("a trace record must be a single line of JSON")
        _write_all(self._traces_fd, (line + "\n").encode("utf-8"))
        self._traces_written += 1
        if fsync:
            os.fsync(self._traces_fd)
            self._traces_synced = self._traces_written

    async def append_trace_async(self, record: Mapping[str, Any] | str) -> None:
        """:meth:`append_trace` for the event loop: same durability, without blocking the loop.

        The line is written before this first yields; it returns once an fsync that started after the
        write has finished. The fsync runs in a worker thread and is shared by all lines written
        while the previous one ran (group commit), so N episodes finishing together cost about two
        fsyncs, not N. Cancelling the wait does not undo the write (the line is in the file).
        """
        self.append_trace(record, fsync=False)
        await self.sync_traces()

    async def sync_traces(self) -> None:
        """Wait until every trace line written so far is fsync-ed (see :meth:`append_trace_async`)."""
        target = self._traces_written
        while self._traces_synced < target:
            if self._traces_fd is None:  # closed; close() fsync-ed unless that failed
                raise RunDirClosed(f"run directory {str(self.path)!r} was closed before its traces were fsync-ed")
            future = self._sync_future
            if future is None or future.done():
                future = self._sync_future = asyncio.ensure_future(self._fsync_traces())
            await asyncio.shield(future)

    async def _fsync_traces(self) -> None:
        covered = self._traces_written  # every line written before the fsync starts
        if await asyncio.to_thread(self._fsync_traces_fd):
            self._traces_synced = max(self._traces_synced, covered)

    def _fsync_traces_fd(self) -> bool:
        with self._fd_lock:  # close() waits for an fsync in flight instead of closing its descriptor
            if self._traces_fd is None:
                return False
            os.fsync(self._traces_fd)
            return True

    def append_event(self, line: Mapping[str, Any] | str) -> None:
        """Append one line to ``events.jsonl`` (no fsync; survives a process crash). No-op without event log."""
        if not self.event_log:
            return
        self.open_for_writing()
        if self._events_fd is None:
            return
        text = line if isinstance(line, str) else _dumps(line)
        _write_all(self._events_fd, (text + "\n").encode("utf-8"))

    def mark(self, recorder: EpisodeRecorder, kind: str, **data: Any) -> None:
        """Append a lifecycle marker (``episode_started`` / ``episode_finished`` / ``episode_cancelled``)
        for ``recorder``'s episode to ``events.jsonl``."""
        if self.event_log:
            self.append_event(
                {
                    "episode_id": recorder.episode_id,
                    "task_id": recorder.task_id,
                    "ts": _now_iso(),
                    "kind": kind,
                    **data,
                }
            )

    def new_recorder(
        self, task_id: str, *, run_attempt: int = 1, on_usage: Callable[[int, float], None] | None = None
    ) -> EpisodeRecorder:
        """A recorder whose events go to ``events.jsonl`` (when the event log is on)."""
        return EpisodeRecorder(
            task_id,
            run_attempt=run_attempt,
            config_hash=self.config_hash,
            sink=self.append_event if self.event_log else None,
            on_usage=on_usage,
        )

    def close(self) -> None:
        """fsync and close the descriptors and release the write lock (idempotent)."""
        with self._fd_lock:
            for name in ("_events_fd", "_traces_fd", "_lock_fd"):
                fd = getattr(self, name)
                if fd is None:
                    continue
                setattr(self, name, None)
                with contextlib.suppress(OSError):
                    if name != "_lock_fd":
                        os.fsync(fd)
                        if name == "_traces_fd":
                            self._traces_synced = self._traces_written
                os.close(fd)  # closing the lock descriptor releases the flock

    def __enter__(self) -> RunDir:
        self.open_for_writing()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r}, config_hash={self.config_hash!r})"

    # ---- reading -------------------------------------------------------------------------------

    def scan_traces(self) -> TraceScan:
        """Read ``traces.jsonl``: every record in file order, plus a torn tail and bad lines (logged)."""
        return _scan_jsonl(self.traces_path)

    def iter_traces(self, *, dedupe: bool = True) -> Iterator[dict[str, Any]]:
        """The trace records; with ``dedupe`` only the newest per task (in order of first appearance)."""
        scan = self.scan_traces()
        yield from (scan.latest().values() if dedupe else scan.records)

    def latest_traces(self) -> dict[str, dict[str, Any]]:
        """``{task_id: newest record}``."""
        return self.scan_traces().latest()

    def finished_task_ids(self, *, retry_errored: bool = False) -> set[str]:
        """Tasks that a resumed run skips.

        Those whose newest record is ``completed``, or ``errored`` with a deterministic error
        (``error.retryable`` false); with ``retry_errored`` only the completed ones.
        """
        done: set[str] = set()
        for task_id, record in self.latest_traces().items():
            if record.get("status") == "completed":
                done.add(task_id)
            elif not retry_errored and not (record.get("error") or {}).get("retryable", False):
                done.add(task_id)
        return done

    def summary(self) -> RunSummary:
        """Counts (completed/errored), token and cost totals over the newest record per task."""
        scan = self.scan_traces()
        latest = scan.latest()
        totals, spent = Totals(), Totals()
        for record in scan.records:
            spent.add(record.get("totals") or {})
        completed = errored = 0
        errors: dict[str, int] = {}
        for record in latest.values():
            if record.get("status") == "completed":
                completed += 1
            else:
                errored += 1
                kind = str((record.get("error") or {}).get("type", "unknown"))
                errors[kind] = errors.get(kind, 0) + 1
            totals.add(record.get("totals") or {})
        return RunSummary(
            tasks=len(latest),
            completed=completed,
            errored=errored,
            totals=totals,
            spent=spent,
            records=len(scan.records),
            superseded=scan.superseded,
            torn_tail_bytes=len(scan.torn_tail or b""),
            bad_lines=len(scan.bad_lines),
            errors_by_type=dict(sorted(errors.items())),
        )
