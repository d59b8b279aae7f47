"""The recorder: one episode's events as they happen, and its trace record at the end."""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..messages import AssistantMessage, SystemMessage, ToolDef, ToolResultMessage, UserMessage
from .jsonutil import canonical_json, dumps_line, now_iso, to_jsonable
from .records import SCHEMA_VERSION, EpisodeOutcome, EpisodeStatus, RecordView, Totals, error_payload
from .sharing import (
    cap_value,
    same_arguments,
    share_message_arguments,
    share_response_arguments,
    unshare_response_arguments,
)

__all__ = ["EpisodeRecorder"]


_RESERVED_EVENT_KEYS = frozenset({"seq", "t", "kind", "episode_id", "task_id", "ts"})

SHARED_CONTENT_MIN = 4096
"""A tool message at least this long that repeats its tool call's result text refers to it instead."""
EVENT_LOG_MAX_STRING = 65536
"""Longer strings are elided from ``events.jsonl`` (the trace record keeps them in full)."""


_TOOLS_DIGESTS: dict[str, str] = {}
"""``tools_hash`` of a tool list by its JSON text, shared by the recorders of a process (the same
endpoint's tool list comes back in every episode): saves its canonical JSON and sha256 each time."""
_TOOLS_DIGESTS_MAX_CHARS = 8_000_000  # the texts kept, in all (then the cache starts again)
_tools_digests_chars = 0


_MESSAGE_TYPES = frozenset({SystemMessage, UserMessage, AssistantMessage, ToolResultMessage})


def _tools_digest(tools_text: str, tools: list[Any]) -> str:
    """The ``tools_hash`` of ``tools``, whose :func:`dumps_line` text is ``tools_text``."""
    global _tools_digests_chars
    digest = _TOOLS_DIGESTS.get(tools_text)
    if digest is None:
        digest = hashlib.sha256(canonical_json(tools).encode("utf-8")).hexdigest()[:16]
        if _tools_digests_chars + len(tools_text) > _TOOLS_DIGESTS_MAX_CHARS:
            _TOOLS_DIGESTS.clear()
            _tools_digests_chars = 0
        if len(tools_text) <= _TOOLS_DIGESTS_MAX_CHARS:
            _TOOLS_DIGESTS[tools_text] = digest
            _tools_digests_chars += len(tools_text)
    return digest


def _splice(head: Mapping[str, Any], key: str, raw_json: str, tail: Mapping[str, Any]) -> str:
    """``dumps_line({**head, key: value, **tail})`` where ``raw_json`` is ``dumps_line(value)``,
    without serialising ``value`` again (``head`` is never empty)."""
    line = dumps_line(head)[:-1] + ", " + json.dumps(key) + ": " + raw_json
    return line + (", " + dumps_line(tail)[1:] if tail else "}")


def _elide_long_strings(value: Any) -> Any:
    """``value`` with every string longer than :data:`EVENT_LOG_MAX_STRING` replaced by a short note."""
    if isinstance(value, str):
        if len(value) <= EVENT_LOG_MAX_STRING:
            return value
        digest = hashlib.sha256(value.encode("utf-8", errors="surrogatepass")).hexdigest()[:16]
        return {"elided_chars": len(value), "sha256_16": digest, "kept_in": "the trace record (traces.jsonl)"}
    if isinstance(value, dict):
        return {k: _elide_long_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_elide_long_strings(v) for v in value]
    return value


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
        max_value_bytes: cap on what the record keeps of one string value (``None``/0: no cap); a
            longer one is cut and marked (:mod:`client._runs.sharing`).
        tool_store: the run's store of tool lists (``RunDir.store_tools``): called with the
            ``tools_hash`` and the JSON text of each list the episode offers, which its events then
            refer to instead of holding it (:mod:`client._runs.toolstore`); ``None``: the events hold
            each list (once per change).
        tool_lists: where :meth:`record_view` finds those lists again (``RunDir.tool_lists``).
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
        max_value_bytes: int | None = None,
        tool_store: Callable[[str, str], None] | None = None,
        tool_lists: Any = None,
    ) -> None:
        self.task_id = task_id
        self._tool_store = tool_store
        self._tool_lists = tool_lists
        self.max_value_bytes = max_value_bytes or None
        self.episode_id = episode_id or uuid.uuid4().hex[:16]
        self.run_attempt = run_attempt
        self.config_hash = config_hash
        self.started_at = now_iso()
        self.totals = Totals()
        self.answer: str | None = None
        self._t0 = time.monotonic()
        self._sink = sink
        self._on_usage = on_usage
        self._event_lines: list[str] = []
        self._record_head: str | None = None  # the JSON of the last built record without its events
        self._event_kinds: list[str | None] = []  # each line's kind (None: adopted, read from the line)
        self._logged_messages: list[str] = []
        self._logged_objects: tuple[Any, ...] = ()  # the messages those texts are of
        self._logged_tools_hash: str | None = None
        self._logged_tools: tuple[Any, ...] | None = None  # the ToolDef objects the hash is of
        self._tool_results: dict[str, tuple[int, str]] = {}  # call id -> (seq, result text) of long results
        # long tool-call arguments kept once (client._runs.sharing): the calls whose tool_call event is
        # awaited (call id -> (seq of their model_response, the call)), those responses (seq -> (body as
        # given, body as recorded, calls put back)), and the model_response of each call (call id -> seq)
        self._pending_calls: dict[str, tuple[int, dict[str, Any]]] = {}
        self._shared_responses: dict[int, tuple[Mapping[str, Any], dict[str, Any], set[str]]] = {}
        self._argument_holders: dict[str, int] = {}
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

    def events_of(self, *kinds: str) -> list[dict[str, Any]]:
        """A copy of the events of these kinds recorded so far, in order (:attr:`events` filtered on
        ``kind``, without reading the others: a ``model_request`` with its tool list is long)."""
        wanted = set(kinds)
        out: list[dict[str, Any]] = []
        for line, kind in zip(self._event_lines, self._event_kinds, strict=True):
            if kind is None:  # adopted: its kind is in the line
                event = json.loads(line)
                if event.get("kind") in wanted:
                    out.append(event)
            elif kind in wanted:
                out.append(json.loads(line))
        return out

    def event(self, kind: str, **data: Any) -> None:
        """Record an event of any ``kind`` with JSON-able ``data`` (``seq``/``t``/``ts`` are reserved)."""
        clash = _RESERVED_EVENT_KEYS.intersection(data)
        if clash:
            raise ValueError(f"event data may not use the reserved key(s) {sorted(clash)} (kind {kind!r})")
        record = {"seq": len(self._event_lines), "t": round(self.elapsed_s, 6), "kind": kind, **data}
        self._append(dumps_line(record), record, kind)

    def _event_raw(
        self, kind: str, head: dict[str, Any], key: str, raw_json: str | None, tail: dict[str, Any]
    ) -> None:
        """:meth:`event` with data ``{**head, key: value, **tail}`` where ``raw_json`` is the JSON
        text of ``value`` (already serialised: not encoded twice); ``None`` leaves ``key`` out."""
        if raw_json is None:
            self.event(kind, **head, **tail)
            return
        taken = head.keys() | {key}
        twice = taken.intersection(tail)
        if twice:
            raise TypeError(f"event {kind!r} got multiple values for the key(s) {sorted(twice)}")
        clash = _RESERVED_EVENT_KEYS.intersection(taken | tail.keys())
        if clash:
            raise ValueError(f"event data may not use the reserved key(s) {sorted(clash)} (kind {kind!r})")
        first = {"seq": len(self._event_lines), "t": round(self.elapsed_s, 6), "kind": kind, **head}
        self._append(_splice(first, key, raw_json, tail), None, kind)

    def adopt_events(self, lines: Sequence[str], *, log: bool = True) -> None:
        """Add the event lines of a finished recorder of this same episode in another process (its
        :attr:`event_lines`); ``log=False`` when that process wrote them to the event log itself."""
        if self._tool_store is not None:
            lines = [self._stored_tools(line) for line in lines]
        if log:
            for line in lines:
                self._append(line, None, None)
        else:
            self._event_lines.extend(lines)
            self._event_kinds.extend([None] * len(lines))

    def _stored_tools(self, line: str) -> str:
        """An adopted ``model_request`` line with its tool list moved to the tool store."""
        if '"tools": [' not in line or '"kind": "model_request"' not in line[:120]:
            return line
        event = json.loads(line)
        tools = event.get("tools")
        if not isinstance(tools, list) or not isinstance(event.get("tools_hash"), str):
            return line
        assert self._tool_store is not None
        self._tool_store(event["tools_hash"], dumps_line(tools))
        del event["tools"]
        return dumps_line(event)

    @property
    def event_lines(self) -> list[str]:
        """The JSON lines of the events recorded so far (a copy; for :meth:`adopt_events` elsewhere)."""
        return list(self._event_lines)

    def adopt_usage(self, tokens: int, cost_usd: float) -> None:
        """Pass on a model response's usage reported by the other process (see :meth:`adopt_events`)."""
        if self._on_usage is not None:
            self._on_usage(tokens, cost_usd)

    def adopt_totals(self, totals: Mapping[str, Any], answer: str | None) -> None:
        """Take the totals and final answer of the other process's recorder (see :meth:`adopt_events`)."""
        self.totals.add(totals)
        self.answer = answer

    def _capped(self, line: str, record: dict[str, Any] | None) -> tuple[str, dict[str, Any] | None]:
        """``line`` (and its ``record``, when known) with every string past the cap cut."""
        cap = self.max_value_bytes
        if cap is not None and len(line) > cap:  # only a line this long can hold a string past the cap
            parsed = json.loads(line) if record is None else record
            capped = cap_value(parsed, cap)
            if capped is not parsed:
                return dumps_line(capped), capped
        return line, record

    def _append(self, line: str, record: dict[str, Any] | None, kind: str | None) -> None:
        line, record = self._capped(line, record)
        self._event_lines.append(line)
        self._event_kinds.append(kind)
        if self._sink is not None:
            if len(line) > EVENT_LOG_MAX_STRING:
                line = dumps_line(_elide_long_strings(json.loads(line) if record is None else record))
            self._sink(self._prefix + '"ts":"' + now_iso() + '",' + line[1:])  # an ISO time needs no escapes

    # ---- model -------------------------------------------------------------------------------

    def model_request(
        self, messages: Sequence[Any] | None = None, tools: Sequence[Any] | None = None, **data: Any
    ) -> None:
        """Record a request about to be sent.

        Only messages that differ from the previous request's are stored (``messages`` starting at
        index ``messages_from``; ``message_count`` is the full length); ``tools`` is stored when it
        changed (``tools_hash`` always; with a ``tool_store`` not even then: the store keeps it).
        :func:`request_history` rebuilds the full requests.

        A :class:`~client.messages.ToolDef` is taken as unchanged while it is the same object: when
        ``tools`` holds the very same ``ToolDef`` objects as the previous request (as an agent loop
        passes its tool list every turn), it is not serialised again. Offer a changed tool as a new
        ``ToolDef``, not by editing one in place. Other tool values (dicts …) are read every time.
        So is a message of :mod:`client.messages` at the same place as in the previous request (an
        agent loop passes its conversation so far every turn: written again, it cost a quarter of a
        multi-turn episode's recording, measured on a benchmark of four-turn episodes): put a changed message in as a new object.
        """
        payload: dict[str, Any] = {}
        if messages is not None:
            before, texts = self._logged_objects, self._logged_messages
            encoded = [texts[i] if i < len(before) and m is before[i] and type(m) in _MESSAGE_TYPES
                       else canonical_json(m) for i, m in enumerate(messages)]
            common = 0
            for old, new in zip(self._logged_messages, encoded, strict=False):
                if old != new:
                    break
                common += 1
            payload["messages_from"] = common
            payload["message_count"] = len(encoded)
            payload["messages"] = [self._shared_content(json.loads(m)) for m in encoded[common:]]
            self._logged_messages = encoded
            self._logged_objects = tuple(messages)
        tools_text: str | None = None
        if tools is not None:
            same = self._logged_tools
            if (
                same is not None
                and len(same) == len(tools)
                and all(a is b and type(a) is ToolDef for a, b in zip(same, tools, strict=True))
            ):
                digest = self._logged_tools_hash  # the same ToolDef objects: the same tools
            else:
                listed = list(tools)
                tools_text = dumps_line(listed)
                digest = _tools_digest(tools_text, listed)
                if digest == self._logged_tools_hash:
                    tools_text = None
                elif self._tool_store is not None:  # kept once per run, in its tools.jsonl
                    self._tool_store(digest, tools_text)
                    tools_text = None
                self._logged_tools_hash = digest
                self._logged_tools = tuple(listed)
            payload["tools_hash"] = digest
        self._event_raw("model_request", payload, "tools", tools_text, data)

    def _shared_content(self, message: Any) -> Any:
        """A tool message repeating its call's long result text, as a reference to the tool_call event;
        an assistant message's long tool-call arguments, as references to the model_response event."""
        if not isinstance(message, dict):
            return message
        if message.get("role") == "assistant" and self._argument_holders:
            return share_message_arguments(message, self._argument_holders)
        if message.get("role") != "tool":
            return message
        content = message.get("content")
        known = self._tool_results.get(str(message.get("tool_call_id")))
        if not isinstance(content, str) or known is None or known[1] != content:
            return message
        return {**message, "content": None, "content_from": known[0]}

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
        to_dict = getattr(response, "to_dict", None)
        body = response if isinstance(response, Mapping) else to_dict() if callable(to_dict) else None
        if body is None:  # a dataclass, a pydantic model …: its JSON form
            body = to_jsonable(response)
        if isinstance(body, Mapping):
            if latency_s is None and isinstance(body.get("latency_s"), int | float):
                latency_s = float(body["latency_s"])
            if usage is None:
                usage = body.get("usage")
        if isinstance(body, Mapping) and body.get("tool_calls"):  # long arguments: kept by the tool_call events
            seq = len(self._event_lines)
            given = body
            body, shared = share_response_arguments(given)
            if shared:
                self._shared_responses[seq] = (given, body, set())
                for call in given["tool_calls"]:
                    if isinstance(call, dict) and call.get("id") in shared:
                        self._pending_calls[call["id"]] = (seq, call)
        numbers = _usage_numbers(usage)
        totals = self.totals
        for key, value in numbers.items():
            setattr(totals, key, getattr(totals, key) + value)
        totals.turns += 1
        if cost_usd is None:
            totals.cost_known = False
        else:
            totals.cost_usd += float(cost_usd)
        self._event_raw(  # serialised once, now: later changes to the response change nothing recorded
            "model_response",
            {},
            "response",
            dumps_line(body),
            {"latency_s": latency_s, "usage": numbers or None, "cost_usd": cost_usd, **data},
        )
        if self._on_usage is not None:
            self._on_usage(
                numbers.get("input_tokens", 0) + numbers.get("output_tokens", 0), float(cost_usd or 0.0)
            )

    def model_error(self, error: Any, latency_s: float | None = None, **data: Any) -> None:
        """Record a failed model call (after the retry layer gave up, or a non-retryable failure)."""
        self.totals.model_errors += 1
        self.event("model_error", error=error_payload(error), latency_s=latency_s, **data)

    def attempt_failed(self, attempt: int, error: Any, delay: float | None = None, **data: Any) -> None:
        """Record one failed attempt of a model call; ``delay`` is the wait before the next (None: none).

        The signature matches ``client.retry.call_with_retries(on_attempt=...)``.
        """
        if delay is not None:
            self.totals.retries += 1
        self.event("attempt_failed", attempt=attempt, error=error_payload(error), delay=delay, **data)

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
        call_id = data.get("call_id")
        pending = self._pending_calls.pop(str(call_id), None) if call_id is not None else None
        if pending is not None:
            if same_arguments(pending[1], to_jsonable(arguments)):  # this event keeps them
                self._argument_holders[str(call_id)] = pending[0]  # later requests refer to the response
            else:
                self._put_back(pending[0], {str(call_id)})
        if call_id is not None and isinstance(result_text, str) and len(result_text) >= SHARED_CONTENT_MIN:
            self._tool_results[str(call_id)] = (len(self._event_lines), result_text)
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

    def _put_back(self, seq: int, call_ids: set[str]) -> None:
        """Rewrite the ``model_response`` event ``seq`` with the arguments of ``call_ids`` in it again
        (their tool_call event did not come, or records other arguments)."""
        given, shared, back = self._shared_responses[seq]
        back |= call_ids
        event = json.loads(self._event_lines[seq])
        event["response"] = unshare_response_arguments(shared, given, back)
        self._event_lines[seq] = self._capped(dumps_line(event), event)[0]
        for call_id in call_ids:
            self._argument_holders[call_id] = seq

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
        by_response: dict[int, set[str]] = {}
        for call_id, (seq, _) in self._pending_calls.items():  # calls the episode never made: put back
            by_response.setdefault(seq, set()).add(call_id)
        self._pending_calls.clear()
        for seq, ids in by_response.items():
            self._put_back(seq, ids)
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
            "finished_at": now_iso(),
            "duration_s": round(self.elapsed_s, 6),
            "config_hash": self.config_hash,
            "final_answer": answer,
            "error": None if error is None else error_payload(error),
            "totals": self.totals.to_dict(),
            "outcome": outcome.data if outcome is not None else {},
        }
        head = dumps_line(header)
        if self.max_value_bytes is not None and len(head) > self.max_value_bytes:
            head = dumps_line(cap_value(header, self.max_value_bytes))
        self._record_head = head
        return head[:-1] + ',"events":[' + ",".join(self._event_lines) + "]}"

    def record_view(self) -> Mapping[str, Any]:
        """The record :meth:`build_record` built last, as ``json.loads`` of its line would give it,
        except that ``events`` is parsed only when asked for (a reader of the outcome alone, such
        as a progress score, does not parse the whole episode)."""
        if self._record_head is None:
            raise RuntimeError("build_record has not been called")
        return RecordView(json.loads(self._record_head), self._event_lines, self._tool_lists)
