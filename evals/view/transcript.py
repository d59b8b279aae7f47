"""One episode for the viewer: its transcript turn by turn, its scores, and the benchmark's sections.

The transcript is built from the trace's events (see :mod:`client._runs.records`): the messages the
model was sent first (system, user; later requests repeat what the events already show), each model
response (text, reasoning, tool calls with their arguments and parse errors, tokens, latency), each
tool call (arguments, result, error flag, latency), failed attempts and model errors, notes, the
final answer, and any other event kind as its fields. The benchmark's own sections come from its
optional ``episode_view`` (:mod:`evals.core.episode_view`); a benchmark that is not registered, or
whose data cannot be loaded here, is shown without them (with a note saying why).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from ..core.episode_view import diff_arguments
from .index import message_text
from .runs import RunView, metric_info, task_passed

__all__ = ["BenchmarkLoader", "episode", "transcript_items"]

log = logging.getLogger(__name__)

BenchmarkLoader = Callable[[str, Mapping[str, Any]], Any]  # (name, run config) -> loaded benchmark or None
_SKIP = frozenset({"seq", "t", "kind"})


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1)


def transcript_items(trace: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The episode's events as display items, each with the model turn it belongs to."""
    items: list[dict[str, Any]] = []
    turn = 0
    for e in trace.get("events") or []:
        if not isinstance(e, Mapping):
            continue
        kind = e.get("kind")
        base = {"seq": e.get("seq"), "t": e.get("t"), "turn": turn}
        if kind == "model_request":
            for m in e.get("messages") or []:
                if isinstance(m, Mapping) and m.get("role") in ("system", "user", "developer"):
                    items.append({**base, "kind": "message", "role": m.get("role"),
                                  "text": message_text(m.get("content") if "content" in m else m.get("text"))})
        elif kind == "model_response":
            turn += 1
            r = _map(e.get("response"))
            usage = e.get("usage") or {}
            items.append({**base, "turn": turn, "kind": "response", "text": _text(r.get("text")),
                          "reasoning": _text(r.get("reasoning")), "stop_reason": r.get("stop_reason"),
                          "calls": [{"name": c.get("name"), "arguments": c.get("arguments"),
                                     "raw_arguments": c.get("raw_arguments"), "parse_error": c.get("parse_error")}
                                    for c in r.get("tool_calls") or [] if isinstance(c, Mapping)],
                          "input_tokens": usage.get("input_tokens"), "output_tokens": usage.get("output_tokens"),
                          "latency_s": e.get("latency_s"), "cost_usd": e.get("cost_usd")})
        elif kind == "tool_call":
            items.append({**base, "kind": "tool", "name": e.get("name"), "arguments": e.get("arguments"),
                          "result": e.get("result_text"), "is_error": bool(e.get("is_error")),
                          "latency_s": e.get("latency_s"), "by": e.get("by"), "parse_error": e.get("parse_error")})
        elif kind in ("model_error", "attempt_failed"):
            err = _map(e.get("error"))
            items.append({**base, "kind": "error", "what": kind, "type": err.get("type"),
                          "message": _text(err.get("message")), "delay": e.get("delay"),
                          "attempt": e.get("attempt")})
        elif kind == "final_answer":
            items.append({**base, "kind": "answer", "text": _text(e.get("text"))})
        elif kind == "note":
            data = {k: v for k, v in e.items() if k not in _SKIP and k != "message"}
            items.append({**base, "kind": "note", "text": _text(e.get("message")),
                          "data": _text(data) if data else None})
        else:
            items.append({**base, "kind": "event", "name": kind,
                          "data": _text({k: v for k, v in e.items() if k not in _SKIP})})
    return items


def _sections(view: RunView, task_id: str, trace: Mapping[str, Any] | None, record: Mapping[str, Any] | None,
              loader: BenchmarkLoader | None) -> tuple[list[dict[str, Any]], str | None]:
    if loader is None:
        return [], None
    try:
        bench = loader(view.benchmark, view.config)
    except Exception as exc:  # a benchmark whose data is missing here still shows its transcript
        return [], f"the benchmark's own view is not shown: {type(exc).__name__}: {exc}"
    hook = getattr(bench, "episode_view", None) if bench is not None else None
    if not callable(hook):
        return [], None
    try:
        sections = list(hook(task_id, trace, record))
    except Exception as exc:
        log.exception("episode_view of %s failed on %s", view.benchmark, task_id)
        return [], f"the benchmark's own view failed: {type(exc).__name__}: {exc}"
    for s in sections:
        if s.get("kind") == "calls":
            for pair in s.get("pairs") or []:
                pair.setdefault("diff", diff_arguments(pair.get("gold"), pair.get("predicted"), pair.get("same")))
    return sections, None


def episode(view: RunView, task_id: str, loader: BenchmarkLoader | None = None) -> dict[str, Any] | None:
    """Everything the episode page shows (None when the run has no such task)."""
    trace = view.index.trace(task_id)
    record = view.index.scores.get(task_id)
    if trace is None and record is None:
        return None
    trace = trace or {}
    metrics = {m.key: m for m in view.metrics()}
    samples = ((record or {}).get("score") or {}).get("samples") or {}
    scores = []
    order = {k: i for i, k in enumerate(metrics)}
    for key, sample in sorted(samples.items(), key=lambda kv: order.get(kv[0], len(order))):
        m = metrics.get(key)
        scores.append({**(metric_info(m) if m else {"key": key, "label": key, "block": key.rpartition(".")[0] or "metrics"}),
                       "sample": sample, "passed": task_passed(m, sample) if m else None})
    sections, note = _sections(view, task_id, trace or None, record, loader)
    score = (record or {}).get("score") or {}
    return {
        "run": view.id, "task_id": task_id, "benchmark": view.benchmark, "model": view.config.get("model"),
        "status": trace.get("status") or "not run", "error": trace.get("error"),
        "final_answer": _text(trace.get("final_answer")), "duration_s": trace.get("duration_s"),
        "totals": trace.get("totals") or {}, "started_at": trace.get("started_at"),
        "query": view.index.query(task_id),
        "items": transcript_items(trace),
        "scores": scores, "groups": score.get("groups") or {},
        "details": _text(score.get("details")) if score.get("details") else None,
        "judge": [{"prompt": _text(d.get("prompt")), "answer": _text(d.get("answer") or d.get("text")),
                   "fields": _text({k: v for k, v in d.items() if k not in ("prompt", "answer", "text")})}
                  for d in (record or {}).get("judge") or [] if isinstance(d, Mapping)],
        "sections": sections, "sections_note": note,
        "outcome": _text(trace.get("outcome")) if trace.get("outcome") else None,
    }
