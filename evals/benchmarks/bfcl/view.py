"""A BFCL single-turn entry in ``evals view``: each possible answer (gold: every parameter's allowed
values) beside the call the model made for it, with the AST checker's decision on that pair and its
verdict on the entry.

Pairing is a viewer's reading of the checker's: in the parallel categories an answer takes the first
call not yet taken that the checker accepts for it (as BFCL matches them, in any order); elsewhere, and
for what is left, answers and calls are paired in order. An irrelevance entry has no gold call: every
call made is one too many. A reply without a call shows its text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core.episode_view import call_pair, calls_section, table_section, text_section
from .checker import Verdict, check_calls, param_ok
from .data import BfclEntry
from .files import language, served_name

__all__ = ["MATCHER", "episode_sections"]

MATCHER = "BFCL's AST checker"


def _gold(answer: Mapping[str, Any], underscore_to_dot: bool = True) -> dict[str, Any]:
    name, options = next(iter(answer.items()))
    return {"name": served_name(str(name)) if underscore_to_dot else str(name), "arguments": dict(options)}


def _argument_decisions(entry: BfclEntry, arguments: Mapping[str, Any], answer: Mapping[str, Any]) -> dict[str, bool]:
    """Per argument, the checker's decision (a gold value lists the allowed values, so equality says
    nothing): a given argument by its parameter rule, a left-out one right when ``""`` is allowed."""
    name, options = next(iter(answer.items()))
    doc = next((d for d in entry.functions if d.get("name") == name), None)
    if doc is None:
        return {}
    lang = language(entry.category)
    given = {k: param_ok(doc, options, k, v, lang).valid for k, v in arguments.items()}
    return given | {k: "" in v for k, v in options.items() if k not in arguments and isinstance(v, list)}


def _pair_verdict(entry: BfclEntry, call: tuple[str, Any], answer: Mapping[str, Any],
                  underscore_to_dot: bool = True) -> Verdict:
    """The checker's decision on one call against one answer (its ``multiple`` rule: the answer's doc)."""
    return check_calls("multiple", entry.functions, [call], [answer], underscore_to_dot=underscore_to_dot)


def episode_sections(entry: BfclEntry, calls: list[tuple[str, Any]], verdict: Verdict,
                     trace: Mapping[str, Any] | None, *, underscore_to_dot: bool = True) -> list[dict[str, Any]]:
    """``underscore_to_dot``: the model's (a prompting model keeps ``.`` in the expected names)."""
    shown = [{"name": n, "arguments": a if isinstance(a, dict) else {"(not JSON)": a}} for n, a in calls]
    why = verdict.error_type + (f": {verdict.error}" if verdict.error else "")
    entry_note = f"{MATCHER}: the entry is right" if verdict.valid else f"{MATCHER}: the entry is wrong ({why})"
    answers = list(entry.ground_truth or ())
    pairs = []
    if not answers:
        pairs = [call_pair(None, p, match=False, matcher=MATCHER, reason="a call where no function fits")
                 for p in shown]
        if not pairs:
            return [table_section("Gold and predicted calls", ["gold", "predicted", "verdict"],
                                  [["no call (no offered function fits)", "no call", "right"]], note=entry_note),
                    *_reply(trace)]
    else:
        taken: dict[int, int] = {}  # answer -> call
        if "parallel" in entry.category:
            for a, answer in enumerate(answers):
                for c, call in enumerate(calls):
                    if c not in taken.values() and isinstance(call[1], dict) and _pair_verdict(entry, call, answer, underscore_to_dot).valid:
                        taken[a] = c
                        break
        rest = iter(c for c in range(len(calls)) if c not in taken.values())
        for a in range(len(answers)):
            if a not in taken:
                taken[a] = next(rest, -1)
        for a, answer in enumerate(answers):
            c = taken[a]
            if c < 0:
                pairs.append(call_pair(_gold(answer, underscore_to_dot), None, match=False, matcher=MATCHER, reason="no call made for it"))
                continue
            v = _pair_verdict(entry, calls[c], answer, underscore_to_dot) if isinstance(calls[c][1], dict) else \
                Verdict(False, "ast_decoder:decoder_failed", "arguments are not JSON")
            same = _argument_decisions(entry, calls[c][1], answer) if isinstance(calls[c][1], dict) else None
            pairs.append(call_pair(_gold(answer, underscore_to_dot), shown[c], match=v.valid, matcher=MATCHER, same=same,
                                   reason="accepted" if v.valid else v.error_type + (f": {v.error}" if v.error else "")))
        pairs += [call_pair(None, shown[c], match=False, matcher=MATCHER, reason="a call too many")
                  for c in rest]
    sections = [calls_section("Possible answers (gold) and predicted calls", pairs,
                              note=entry_note + ". Gold arguments list each parameter's allowed values "
                              "(\"\" : it may be left out).")]
    if not calls:
        sections += _reply(trace)
    return sections


def _reply(trace: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    text = (trace or {}).get("final_answer")
    return [text_section("The reply (no call)", str(text))] if text else []
