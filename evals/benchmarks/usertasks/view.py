"""A task-file episode in ``evals view``: each gold call beside the predicted call paired with it, and the
gold answer beside the final answer; then each expectation of the task's state checks with the value
wanted and the value the check call gave (failed ones first), and why the oracle failed, when it did.

The pairs, decisions and resolved gold calls come from the task's scores (``details.calls``, written by
:mod:`.scoring`); a reference is shown resolved (the value the scorer compared, the reference named in
the section's note) or, when it did not resolve, named: ``<unresolved: the result of gold call "find",
at paths.0.1.2>``. Before the episode is scored the gold calls are shown with their references named.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...core.episode_view import answer_section, call_pair, calls_section, table_section, text_section
from .refs import UNRESOLVED, describe_reference, name_unresolved, references_in, resolve_arguments
from .taskfile import Task

__all__ = ["episode_sections"]

TITLE = "Gold calls and predicted calls"


def _call(c: Any) -> dict[str, Any] | None:
    return {"name": c.get("name"), "arguments": c.get("arguments")} if isinstance(c, Mapping) else None


def _references_note(task: Task) -> str | None:
    refs = [f"gold call {i + 1} ({g.name}) {where} = {describe_reference(ref)}"
            for i, g in enumerate(task.calls or ()) for where, ref in references_in(g.arguments)]
    return "References: " + "; ".join(refs) + "." if refs else None


def _pairs(task: Task, calls: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Gold beside predicted, in gold order, then the predicted calls paired with no gold call."""
    written = list(task.calls or ())
    gold = [c for c in calls.get("gold") or [] if isinstance(c, Mapping)]
    pred = list(calls.get("predicted") or [])
    alignment = calls.get("alignment") or {}
    by_gold = {p.get("gold"): p for p in alignment.get("pairs") or [] if isinstance(p, Mapping)}
    out = []
    for j, g in enumerate(gold):
        shown = {"name": g.get("name"), "arguments": name_unresolved(
            written[j].arguments if j < len(written) else None, g.get("arguments"))}
        pair = by_gold.get(j)
        i = pair.get("pred") if pair else None
        p = _call(pred[i]) if isinstance(i, int) and 0 <= i < len(pred) else None
        decision = (pair or {}).get("decision") or {}
        if pair is None:
            out.append(call_pair(shown, None, match=False, reason="no call of this tool was paired with it"))
        else:
            out.append(call_pair(shown, p, match=decision.get("matched"), matcher=decision.get("matcher"),
                                 reason=decision.get("reason")))
    for i in alignment.get("unmatched_pred") or []:
        if isinstance(i, int) and 0 <= i < len(pred):
            out.append(call_pair(None, _call(pred[i]), match=False, reason="a call no gold call asks for"))
    return out


def _answer_section(task: Task, answer: Mapping[str, Any] | None, final: Any) -> dict[str, Any] | None:
    if task.answer is None:
        return None
    spec = task.answer
    gold = spec.get("rubric") if spec.get("type") == "judge" else spec.get("value", spec.get("pattern"))
    return answer_section(gold, str(spec.get("type")), final, (answer or {}).get("correct"),
                          note=None if answer else "not scored yet")


def episode_sections(task: Task, trace: Mapping[str, Any] | None, record: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The sections of one episode (see the module docstring)."""
    details = ((record or {}).get("score") or {}).get("details") or {}
    sections = []
    if task.calls is not None:
        calls = details.get("calls")
        if isinstance(calls, Mapping):
            pairs = _pairs(task, calls)
        else:  # not scored yet: the gold calls as written, each reference named
            pairs = [call_pair({"name": g.name, "arguments": name_unresolved(g.arguments, _unresolved(g.arguments))}, None,
                               match=None, reason="not scored yet (evals score RUN_DIR)") for g in task.calls]
        order = "in the gold order" if task.ordered else "in any order"
        note = " ".join(x for x in (f"Paired by tool and arguments; the calls must come {order}.",
                                    _references_note(task)) if x)
        sections.append(calls_section(TITLE, pairs, note=note))
    final = (trace or {}).get("final_answer")
    answer = _answer_section(task, details.get("answer"), final)
    if answer is not None:
        sections.append(answer)
    if task.checks:
        sections.append(_checks_section(task, details.get("checks")))
    if details.get("oracle"):
        sections.append(text_section("Why the oracle failed", "\n".join(map(str, details["oracle"])),
                                     note="the tools cannot give the gold: fix the data, the server's settings or the task"))
    return sections


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _got(value: Any) -> str:
    """The value a check looked at (JSON), or what stood in for it (``<error> ...``, ``<no such path ...>``)."""
    return value if isinstance(value, str) and value.startswith("<") else _shown(value)


def _checks_section(task: Task, found: Any) -> dict[str, Any]:
    """Each expectation: the check call, the path, the test with the value wanted, the value got, whether it held."""
    header = ["check", "call", "path", "wanted", "got", "holds"]
    if not isinstance(found, list):
        rows = [[c["id"], f"{c['name']} {_shown(c['arguments'])}", e.get("path") or "(the result)",
                 _shown({k: v for k, v in e.items() if k != "path"}), "", None] for c in task.checks for e in c["expect"]]
        return table_section("State checks", header, rows, note="not scored yet (evals score RUN_DIR)")
    entries = sorted((e for e in found if isinstance(e, Mapping)), key=lambda e: bool(e.get("ok")))
    rows = [[e.get("check"), f"{(e.get('call') or {}).get('name')} {_shown((e.get('call') or {}).get('arguments') or {})}",
             e.get("path") or "(the result)", f"{e.get('test')} {_shown((e.get('want') or {}).get(e.get('test')))}",
             _got(e.get("got")), bool(e.get("ok"))] for e in entries]
    failed = sum(1 for e in entries if not e.get("ok"))
    return table_section("State checks", header, rows, note=f"calls the harness made after the episode; {failed} of "
                         f"{len(entries)} expectation(s) failed" if failed else "calls the harness made after the episode; "
                         "every expectation held")


def _unresolved(written: Any) -> Any:
    """``written`` with every reference made the unresolved marker (to be named)."""
    return resolve_arguments(written, lambda _cid: UNRESOLVED)
