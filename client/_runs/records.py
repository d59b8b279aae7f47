"""The trace record: one JSON line per finished episode in ``traces.jsonl``.

A record (``schema_version`` 2) looks like::

    {"schema_version": 2, "task_id": "t1", "episode_id": "…", "run_attempt": 1,
     "status": "completed" | "errored", "started_at": ISO-8601, "finished_at": ISO-8601,
     "duration_s": 1.23, "config_hash": "…", "final_answer": "…" | null,
     "error": null | {"type", "qualified_type", "message", "retryable", "attempts", "details", "traceback"},
     "totals": {"input_tokens", "output_tokens", "total_tokens", "reasoning_tokens", "cache_read_tokens",
                "cache_write_tokens", "cost_usd", "cost_known", "turns", "tool_calls", "tool_errors",
                "model_errors", "retries"},
     "outcome": {...},           # EpisodeOutcome.data: whatever the strategy wants to keep
     "events": [{"seq": 0, "t": 0.01, "kind": "model_request", ...}, ...]}

Event kinds written by :class:`~client.runs.EpisodeRecorder`: ``model_request``,
``model_response``, ``model_error``, ``attempt_failed``, ``tool_call``, ``note``, ``final_answer``,
plus any custom kind. ``model_request`` events store only the messages that are new since the
previous request (``messages_from`` says where they start) and the tool list only when it changed
(in a run directory not even then: the run's ``tools.jsonl`` holds each list once, by its ``tools_hash``);
a tool message whose (long) content is the ``result_text`` of the episode's ``tool_call`` event
is stored once, there: the message has ``"content": null, "content_from": <that event's seq>``.
:func:`request_history` rebuilds each request in full.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .jsonutil import error_info, to_jsonable
from .sharing import resolve_message_arguments

__all__ = ["SCHEMA_VERSION", "EpisodeOutcome", "EpisodeStatus", "Totals", "request_history"]

SCHEMA_VERSION = 2
"""2: a ``model_request`` event may refer to the run's ``tools.jsonl`` for its tool list (by its
``tools_hash``) instead of holding it (:mod:`client._runs.toolstore`). 1: the list in the trace."""

EpisodeStatus = Literal["completed", "errored"]


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
        data = dict(vars(self))  # every field is a number or a bool: no deep copy needed
        data["total_tokens"] = self.total_tokens
        data["cost_usd"] = round(self.cost_usd, 10)
        return data


@dataclass
class EpisodeOutcome:
    """What an episode function returns.

    Attributes:
        final_answer: the model's final answer (default: the last
            :meth:`~client.runs.EpisodeRecorder.final_answer`).
        error: set to record the episode as ``errored`` without raising (an exception or a dict with
            at least ``type`` and ``message``); raising from the episode function does the same.
        data: anything else the strategy wants kept in the trace (``outcome`` key), e.g. the predicted
            calls or extracted KG paths the scorer reads. Must be JSON-serialisable (objects with
            ``to_dict()`` are fine).
    """

    final_answer: str | None = None
    error: BaseException | Mapping[str, Any] | None = None
    data: dict[str, Any] = field(default_factory=dict)


class RecordView(Mapping[str, Any]):
    """A trace record's fields, with ``events`` parsed from its JSON lines on first access (and the
    tool lists they refer to put back from ``tools``, see :mod:`client._runs.toolstore`)."""

    def __init__(self, head: dict[str, Any], event_lines: Sequence[str] = (), tools: Any = None):
        self._head = head
        self._event_lines = list(event_lines)
        self._tools = tools
        self._events: list[Any] | None = None

    def _load_events(self) -> list[Any]:
        from .toolstore import resolve_tools

        events = [json.loads(line) for line in self._event_lines]
        resolve_tools(events, self._tools)
        return events

    def __getitem__(self, key: str) -> Any:
        if key != "events":
            return self._head[key]
        if self._events is None:
            self._events = self._load_events()
        return self._events

    def __iter__(self) -> Iterator[str]:
        yield from self._head
        yield "events"

    def __len__(self) -> int:
        return len(self._head) + 1

    def __contains__(self, key: object) -> bool:
        return key == "events" or key in self._head

    def __repr__(self) -> str:
        return f"<trace record {self._head.get('task_id')!r} (events read on access)>"

    def to_dict(self) -> dict[str, Any]:
        """The record as a plain dict (what ``json.dumps`` of a trace writes)."""
        return {**self._head, "events": self["events"]}


def error_payload(error: Any) -> Any:
    """The ``error`` of a record or event: :func:`~client.runs.error_info` of an exception,
    a minimal non-retryable error for a string, else ``error`` as JSON (package-internal)."""
    if isinstance(error, BaseException):
        return error_info(error)
    if isinstance(error, str):
        return {"type": "Error", "message": error, "retryable": False}
    return to_jsonable(error)


def request_history(trace: Mapping[str, Any], tool_lists: Any = None) -> list[dict[str, Any]]:
    """Rebuild every model request of a trace in full: ``[{"messages": [...], "tools": [...], ...}]``.

    Undoes the delta encoding of ``model_request`` events (see
    :meth:`~client.runs.EpisodeRecorder.model_request`) and the references to long tool results and
    tool-call arguments kept once (:mod:`client._runs.sharing`); other fields of each event (model,
    options, …) are kept as they are. A trace read through :class:`~client.runs.RunDir` has its tool
    lists already; one parsed from ``traces.jsonl`` by hand takes them from ``tool_lists`` (the run's
    ``RunDir.tool_lists``, or ``{tools_hash: [tool, ...]}``), else a request whose list is in the
    run's ``tools.jsonl`` has ``"tools": None``.
    """
    messages: list[Any] = []
    tools: list[Any] | None = None
    out: list[dict[str, Any]] = []
    events = trace.get("events", [])
    if tool_lists is not None:
        from .toolstore import resolve_tools

        events = [dict(e) if isinstance(e, Mapping) else e for e in events]
        resolve_tools(events, tool_lists)
    by_seq = {e.get("seq"): e for e in events if e.get("kind") == "tool_call"}
    holders: dict[Any, Any] = {e.get("seq"): e for e in events if e.get("kind") == "model_response"}
    holders.update({("call", e.get("call_id")): e for e in events if e.get("kind") == "tool_call"})
    for event in events:
        if event.get("kind") != "model_request":
            continue
        request = {
            k: v for k, v in event.items() if k not in ("seq", "t", "kind", "messages_from", "tools_hash", "tools_missing")
        }
        if "messages" in event:
            new = [resolve_message_arguments(_resolve_content(m, by_seq), holders) for m in event["messages"]]
            messages = messages[: event.get("messages_from", 0)] + new
            request["messages"] = list(messages)
        if "tools" in event:
            tools = event["tools"]
        if "tools_hash" in event:
            request["tools"] = tools
        out.append(request)
    return out


def _resolve_content(message: Any, tool_calls: Mapping[Any, Mapping[str, Any]]) -> Any:
    """A stored message with its ``content_from`` reference replaced by the tool call's result text."""
    if not isinstance(message, Mapping) or "content_from" not in message:
        return message
    source = tool_calls.get(message["content_from"])
    if source is None:
        raise ValueError(f"a message refers to tool_call event {message['content_from']!r}, which the trace lacks")
    out = {k: v for k, v in message.items() if k != "content_from"}
    out["content"] = source.get("result_text")
    return out
