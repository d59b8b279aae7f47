"""What a trace keeps of a long value: each tool-call argument once, and no value past a cap.

**Once.** A model's tool call reaches the recorder four times: in the provider's raw reply, as the
adapter's parsed ``arguments`` and ``raw_arguments`` string, as the ``tool_call`` event's arguments
(which scorers read), and again in the assistant message of every later request. When
``raw_arguments`` is long (:data:`SHARED_MIN` characters or more) the ``tool_call`` event alone keeps
it: the ``model_response`` event's call says ``"arguments_in": "tool_call"`` (its copy in the raw reply
becomes ``{"same_as": "tool_calls[i]"}``; ``"raw_form"`` says how the raw text is rebuilt: JSON with
or without spaces, ASCII or not) and a later request's assistant message says ``"arguments_from":
<seq of the model_response event>``. :func:`call_arguments` and
:func:`~client.runs.request_history` put the arguments back. Where no ``tool_call`` event with the
very same arguments follows (the tool was not called), or the raw text is not the JSON of the parsed
value in one of four spellings, the ``model_response`` event keeps them as they were. The agent's
outcome (what scorers read) lists each call's ``arguments``, and its ``raw_arguments`` only where that text is not just their JSON
(:func:`outcome_raw_arguments`): so a long argument is in a trace twice, in its ``tool_call`` event and
in the outcome, never more.

**Cap.** With a cap of N bytes (``evals run --trace-max-value-bytes N``, recorded in the run's config;
0: none), a string longer than N bytes in UTF-8 keeps its first N bytes followed by a note
``…[cut by --trace-max-value-bytes N: the value had C characters (B bytes)]``: the cut is marked and
the original length kept. It applies to every event, the outcome and the final answer of a record
(not to what the model or the tool saw: only to what the trace keeps of it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["CUT_NOTE", "call_arguments", "outcome_raw_arguments"]

SHARED_MIN = 4096
"""Tool-call argument strings at least this long are kept once per trace (see the module docstring)."""
CUT_NOTE = "…[cut by --trace-max-value-bytes {cap}: the value had {chars} characters ({size} bytes)]"
"""Appended to what is kept of a string that was cut."""


def _cut(text: str, cap: int) -> str:
    if len(text) * 4 <= cap:  # at most 4 bytes a character: short enough without encoding it
        return text
    data = text.encode("utf-8", errors="surrogatepass")
    if len(data) <= cap:
        return text
    kept = data[:cap].decode("utf-8", errors="ignore")  # a character cut in half is dropped
    return kept + CUT_NOTE.format(cap=cap, chars=len(text), size=len(data))


def cap_value(value: Any, cap: int | None) -> Any:
    """``value`` (JSON-like) with every string longer than ``cap`` bytes cut (see the module
    docstring); ``value`` itself when nothing is cut (containers are copied only where needed)."""
    if not cap:
        return value
    if isinstance(value, str):
        return _cut(value, cap)
    if isinstance(value, dict | list):
        pairs = value.items() if isinstance(value, dict) else enumerate(value)
        copy: Any = None
        for key, item in pairs:
            new = cap_value(item, cap)
            if new is not item:
                if copy is None:
                    copy = dict(value) if isinstance(value, dict) else list(value)
                copy[key] = new
        return value if copy is None else copy
    return value


def _long_calls(calls: Any) -> list[tuple[int, dict[str, Any]]]:
    if not isinstance(calls, list):
        return []
    return [(i, c) for i, c in enumerate(calls)
            if isinstance(c, dict) and isinstance(c.get("raw_arguments"), str) and len(c["raw_arguments"]) >= SHARED_MIN
            and isinstance(c.get("id"), str)]


def _replace_copies(value: Any, copies: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        where = copies.get(value) if len(value) >= SHARED_MIN else None
        return value if where is None else {"same_as": where}
    if isinstance(value, dict):
        return {k: _replace_copies(v, copies) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_copies(v, copies) for v in value]
    return value


def outcome_raw_arguments(call: Any) -> str | None:
    """The ``raw_arguments`` an episode's outcome lists for a model tool call (a ``ToolCall``): the
    string, except that a long one which is just the JSON text of the parsed ``arguments`` (listed
    beside it) is ``None``, so the outcome does not hold the argument twice."""
    raw: str = call.raw_arguments
    if len(raw) >= SHARED_MIN and call.arguments is not None:
        if _raw_form({"raw_arguments": raw, "arguments": call.arguments}) in _RAW_FORMS:
            return None
    return raw


_RAW_FORMS: dict[str, dict[str, Any]] = {
    "json": {"ensure_ascii": False},
    "json_compact": {"ensure_ascii": False, "separators": (",", ":")},
    "json_ascii": {},
    "json_ascii_compact": {"separators": (",", ":")},
}
"""How ``raw_arguments`` may be written from the parsed arguments (``json.dumps`` options), by name."""


def _raw_form(call: Mapping[str, Any]) -> str | None:
    """How a call's ``raw_arguments`` can be rebuilt from what its ``tool_call`` event records:
    ``"raw"`` (unparsed: the event records the string), the name of a :data:`_RAW_FORMS` entry, or
    ``None`` (it cannot: the text has other spacing or key order)."""
    raw, arguments = call["raw_arguments"], call.get("arguments")
    if arguments is None:
        return "raw"
    for name, options in _RAW_FORMS.items():
        try:
            if json.dumps(arguments, **options) == raw:
                return name
        except (TypeError, ValueError, RecursionError):
            return None
    return None


def same_arguments(call: Mapping[str, Any], arguments: Any) -> bool:
    """Whether a ``tool_call`` event's ``arguments`` (JSON) are what its model tool call (``call``, as
    the model sent it) records there: the parsed arguments, or the raw string when they did not parse."""
    if call.get("arguments") is None:
        return isinstance(arguments, str) and arguments == call.get("raw_arguments")
    return bool(arguments == call.get("arguments"))


def share_response_arguments(body: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A ``model_response`` body whose long tool-call arguments are left to the ``tool_call`` events
    (``arguments`` and ``raw_arguments`` null, ``"arguments_in": "tool_call"`` and ``"raw_form"``, how the
    raw text is rebuilt; a copy in the raw reply becomes ``{"same_as": "tool_calls[i]"}``), and the ids
    of those calls. ``body`` is not changed; the recorder puts a call back
    (:func:`unshare_response_arguments`) when no matching ``tool_call`` event follows."""
    long_calls = [(i, c, form) for i, c in _long_calls(body.get("tool_calls")) if (form := _raw_form(c)) is not None]
    if not long_calls:
        return dict(body), []
    out = dict(body)
    calls = list(out["tool_calls"])
    copies: dict[str, str] = {}
    for i, call, form in long_calls:
        calls[i] = {**call, "arguments": None, "raw_arguments": None, "arguments_in": "tool_call", "raw_form": form}
        copies.setdefault(call["raw_arguments"], f"tool_calls[{i}]")
    out["tool_calls"] = calls
    if "raw" in out:
        out["raw"] = _replace_copies(out["raw"], copies)
    return out, [c["id"] for _, c, _ in long_calls]


def unshare_response_arguments(shared: Mapping[str, Any], original: Mapping[str, Any], ids: set[str]) -> dict[str, Any]:
    """``shared`` (from :func:`share_response_arguments`) with the calls ``ids`` as in ``original``."""
    out = dict(shared)
    calls = list(out["tool_calls"])
    keep: dict[str, str] = {}
    for i, call in enumerate(original["tool_calls"]):
        if isinstance(call, Mapping) and call.get("id") in ids:
            calls[i] = call
        elif isinstance(calls[i], Mapping) and calls[i].get("arguments_in") == "tool_call":
            keep[call["raw_arguments"]] = f"tool_calls[{i}]"
    out["tool_calls"] = calls
    if "raw" in original:
        out["raw"] = _replace_copies(original["raw"], keep)
    return out


def share_message_arguments(message: Any, holders: Mapping[str, int]) -> Any:
    """A request's assistant message whose long tool-call arguments refer to the event that holds
    them (``holders``: call id -> the seq of its ``tool_call`` or ``model_response`` event)."""
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return message
    long_calls = [(i, c) for i, c in _long_calls(message.get("tool_calls")) if c["id"] in holders]
    if not long_calls:
        return message
    calls = list(message["tool_calls"])
    for i, call in long_calls:
        calls[i] = {**call, "arguments": None, "raw_arguments": None, "arguments_from": holders[call["id"]]}
    return {**message, "tool_calls": calls}


def call_arguments(call: Mapping[str, Any], events: Mapping[Any, Mapping[str, Any]]) -> tuple[Any, Any]:
    """``(arguments, raw_arguments)`` of a model tool call as recorded in a ``model_response`` event's
    ``tool_calls`` or a request's assistant message, following the references this module writes
    (``events``: seq -> ``model_response`` event, and ``("call", id)`` -> the ``tool_call`` event of
    that call id)."""
    call_id = call.get("id")
    if "arguments_from" in call:
        holder = events.get(call["arguments_from"])
        if holder is None:
            raise ValueError(f"a message refers to event {call['arguments_from']!r}, which the trace lacks")
        source = next((c for c in (holder.get("response") or {}).get("tool_calls") or []
                       if isinstance(c, Mapping) and c.get("id") == call_id), {})
        return call_arguments(source, events)
    if call.get("arguments_in") == "tool_call":
        event = events.get(("call", call_id))
        if event is None:
            raise ValueError(f"a model_response refers to the tool_call event of call {call_id!r}, which the trace lacks")
        arguments, form = event.get("arguments"), call.get("raw_form")
        if form not in _RAW_FORMS:  # "raw": the arguments did not parse; the event has the text
            return None, arguments
        return arguments, json.dumps(arguments, **_RAW_FORMS[str(form)])
    return call.get("arguments"), call.get("raw_arguments")


def resolve_message_arguments(message: Any, events: Mapping[Any, Mapping[str, Any]]) -> Any:
    """Undo :func:`share_message_arguments` (``events`` as for :func:`call_arguments`)."""
    if not isinstance(message, Mapping) or not isinstance(message.get("tool_calls"), list):
        return message
    if not any(isinstance(c, Mapping) and "arguments_from" in c for c in message["tool_calls"]):
        return message
    calls = []
    for call in message["tool_calls"]:
        if isinstance(call, Mapping) and "arguments_from" in call:
            arguments, raw = call_arguments(call, events)
            call = {k: v for k, v in call.items() if k != "arguments_from"} | {"arguments": arguments,
                                                                                 "raw_arguments": raw}
        calls.append(call)
    return {**message, "tool_calls": calls}
