"""The multi-turn checker's replay of entries, done in a holder process as one operation.

:mod:`.multi_turn_checker` hands a holder process (:mod:`.backend_host`) entries' decoded turns
and ground truths in one ``replay`` operation (the entries that concurrent scorings asked for); this module runs it there, turn by turn, as BFCL's
``multi_turn_checker`` does (the rules are in :mod:`.multi_turn_checker`'s docstring), and answers the
verdict. One operation instead of one round trip per call: a scoring no longer waits on the
other process for every call.

The work is a sequence of *units* (:func:`units`): loading the entry's two sets of instances, each
call of either side, each turn's state comparison. The holder process marks each unit as it starts
(``mark``, into memory shared with the client), so that the client holds every unit to its own
deadline, as when each call was a request of its own. A unit the client stopped (past its
deadline, or the process died) or refused beforehand (past a bound: :func:`.backend_calls.precheck_text`)
is not run again: ``fixed`` gives its result, and the operation is sent anew to a fresh process,
where the units before it rebuild the state it had (BFCL's backends are deterministic).

This module imports no MCP code (the holders' zygote imports it before forking).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .backend_calls import _bounded, bounded_differences, execute_text, fresh_instances, method_table

__all__ = ["CALL", "DIFF", "MAKE", "replay", "replay_one", "units"]

MAKE, CALL, DIFF = "make", "call", "diff"


def units(decoded: Sequence[Sequence[Sequence[str]]], truth: Sequence[Sequence[str]]) -> list[tuple[str, str]]:
    """The units of an entry's replay in the order they run, each ``(kind, call text)`` (the text
    ``""`` but for calls): a replay that stops at a failing turn runs a prefix of them."""
    out = [(MAKE, "")]
    for index, gold in enumerate(truth):
        out.extend((CALL, text) for step in decoded[index] for text in step)
        out.extend((CALL, text) for text in gold)
        if gold and decoded[index]:
            out.append((DIFF, ""))
    return out


def _failed(error_type: str, error: str, turn: int, details: Mapping[str, Any] | None = None) -> dict[str, Any]:
    return {"valid": False, "error_type": error_type, "error": error, "turn": turn, "details": dict(details or {})}


def replay(op: Mapping[str, Any], mark: Callable[[int], None]) -> dict[str, Any]:
    """The ``replay`` operation: its ``entries`` replayed one after the other (:func:`replay_one`), their
    units numbered on from one entry to the next; ``{"answers": [...]}``, one per entry."""
    answers, base = [], 0
    for one in op["entries"]:
        answers.append(replay_one(one, lambda unit, base=base: mark(base + unit)))  # type: ignore[misc]
        base += len(units(one["turns"], one["truth"]))
    return {"answers": answers}


def replay_one(op: Mapping[str, Any], mark: Callable[[int], None]) -> dict[str, Any]:
    """One entry's replay: ``{"verdict": ...}`` (the fields of a ``MultiTurnVerdict``), or
    ``{"load_error": ...}`` when the entry's backends cannot be made. ``op`` holds the entry's
    ``classes``, ``config`` and ``long_context`` (as :func:`.backend_calls.make_op`), its decoded
    ``turns``, its ground ``truth`` and the ``fixed`` results by unit number; ``mark(n)`` is called as
    unit ``n`` starts."""
    fixed = {int(k): str(v) for k, v in (op.get("fixed") or {}).items()}
    decoded: list[list[list[str]]] = op["turns"]
    truth: list[list[str]] = op["truth"]
    count = 0

    def start() -> int:
        nonlocal count
        mark(count)
        count += 1
        return count - 1

    start()
    try:  # the gold's from a copy, taken first; the model's from the config itself, decoded from the message
        gold = fresh_instances(op["classes"], op["config"], long_context=bool(op.get("long_context")))
        model = fresh_instances(op["classes"], op["config"], long_context=bool(op.get("long_context")),
                                copy_config=False)
    except Exception as exc:  # noqa: BLE001 - said to the client as the entry's error
        return {"load_error": f"{type(exc).__name__}: {exc}"}
    tables = {id(model): method_table(model), id(gold): method_table(gold)}

    def run(instances: dict[str, Any], text: str) -> str:
        unit = start()
        return fixed[unit] if unit in fixed else execute_text(instances, text, tables[id(instances)], bounded=False)

    so_far: list[str] = []
    for index, gold_calls in enumerate(truth):
        for step in decoded[index]:
            so_far.extend(run(model, c) for c in step)
        gold_results = [run(gold, c) for c in gold_calls]
        if not gold_calls:
            continue
        if not decoded[index]:
            return {"verdict": _failed("multi_turn:empty_turn_model_response",
                                       f"Model response list is empty for turn {index}", index)}
        start()
        difference = bounded_differences(model, gold)
        if difference is not None:
            return {"verdict": _failed(
                "multi_turn:instance_state_mismatch",
                f"Model instance for {difference['class']} does not match the state with ground truth instance.",
                index, difference)}
        left = list(so_far)
        missing = []
        for result in gold_results:
            if result in left:
                left.remove(result)
            else:
                missing.append(result)
        if missing:
            return {"verdict": _failed(
                "multi_turn:execution_response_mismatch",
                f"Model response execution results so far does not contain all the ground truth response "
                f"execution results for turn {index}.", index, {"missing_items": [_bounded(m) for m in missing]})}
    return {"verdict": {"valid": True}}
