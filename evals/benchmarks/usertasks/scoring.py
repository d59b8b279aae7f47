"""One task's scores from its trace: the calls against the gold calls, the answer against the gold answer.

Calls. The predicted calls (every call of the trace, in order) are paired with the gold calls by
:func:`tool_specs.matching.align_calls` (same tool only; the fewest differing arguments; ties keep
the order), first without the gold arguments that are references. Then each reference is resolved
from the result of the predicted call paired with the gold call it names (:mod:`.refs`), and every
pair is decided by the matcher cascade of ``--matcher`` (``rule``; ``response``: then the response
matcher for deterministic tools; ``llm``: then the judge). Every decision is kept in the details, with
the gold calls as resolved (a reference that did not resolve named, never the bare marker).

* ``call_exact_match`` (per task with gold calls): every gold call is matched, no other call was
  made, and (``order: ordered``) the matched calls come in the gold order;
* ``tool_accuracy`` (per gold call): a call of the gold tool was paired with it;
* ``argument_accuracy`` (per gold argument): the paired call gives the gold value (after type
  normalisation and the gold call's ``match`` rules; an omitted argument whose schema default is
  the gold value counts right; a pair the cascade accepts counts all its arguments right).

The rule matcher of a task file fills in the schema's defaults on both sides before comparing (a
call that passes ``max_count: 10`` where 10 is the default is the gold call that omits it) and
applies each gold call's per-argument ``match`` rules; a rejection names the argument that differed
and both values.

Answer: ``answer_accuracy`` (per task with a gold answer; :mod:`.answers`). A ``judge`` answer
without a judge and without a stored decision leaves the task out of the metric (the summary
counts it as missing). A task whose episode errored or never ran scores 0 on every metric it has.

State: ``state_accuracy`` (per task with ``checks``): every expectation of every check holds on the
results the harness got after the episode (:mod:`.checks`); each expectation is in the details
under ``checks`` with the value looked at and the value wanted.

Tool results: ``informative_results`` (per tool result of the trace): neither an error nor empty;
``uninformative_run`` is 1 when not one result of the run had content, and warns.

The oracle proves the data: a task the oracle played fails (``oracle_failures`` counts it, the
details say why under ``oracle``) when a gold call returned an error (``call_exact_match`` 0), a
state check failed (``state_accuracy`` 0), or the gold answer is not found in what the gold calls
returned (``answer_accuracy`` 0; for ``exact``, ``normalized`` and ``number`` answers, unless the
answer says ``derived: true``: computed, not read).

A pattern of the task file (a ``regex`` answer, a reference's ``pattern``) that runs past its time
limit scores as not matched (the reference stays unresolved); the task's details say so under
``regex_timeouts``, the ``regex_timeouts`` count puts a line in the summary's warnings, and a logged
warning names the task.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from tool_specs import RegexTimeout
from tool_specs.argument_matching import MATCH_KEY, param_matches
from tool_specs.matching import MatchDecision, Matcher, align_calls, argument_cost, decide

from ...core.context import ScoreContext
from ...core.metrics import TaskScore
from .answers import (
    DEFAULT_TOLERANCE,
    JUDGE_SYSTEM,
    judge_prompt,
    match_answer,
    normalize_text,
    numbers_in,
    parse_verdict,
)
from .checks import evaluate_checks, is_empty
from .refs import (
    UNRESOLVED,
    name_unresolved,
    name_unresolved_in_text,
    resolve_arguments,
    result_value,
    strip_references,
)
from .taskfile import Task

__all__ = ["JudgeCallMatcher", "groups_of", "predicted_calls", "score_task"]

log = logging.getLogger(__name__)


def predicted_calls(trace: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """Every tool call of a trace, in order: name, arguments (``None`` when unparsable), result value."""
    out = []
    for event in (trace or {}).get("events") or []:
        if event.get("kind") != "tool_call":
            continue
        args = event.get("arguments")
        out.append({"name": event.get("name"),
                    "arguments": dict(args) if isinstance(args, Mapping) and "parse_error" not in event else None,
                    "result": result_value(event.get("result_text"), event.get("structured")),
                    "is_error": bool(event.get("is_error"))})
    return out


def groups_of(task: Task) -> dict[str, str]:
    """The breakdowns a task belongs to: its metadata's scalar values."""
    out = {}
    for key, value in task.metadata.items():
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, str | int | float):
            out[key] = str(value)
    return out


class JudgeCallMatcher:
    """The judge as the last matcher of the cascade, asked through the scorer's context (stored decisions)."""

    name = "llm"

    def __init__(self, ctx: ScoreContext, request: str, tool_for: Callable[[str], Mapping[str, Any]]):
        self.ctx, self.request, self.tool_for = ctx, request, tool_for

    async def __call__(self, pred: Mapping[str, Any], gold: Mapping[str, Any]) -> MatchDecision | None:
        if pred.get("name") != gold.get("name") or not isinstance(pred.get("arguments"), Mapping):
            return None
        decision = await self.ctx.judge(self.request, self.tool_for(str(gold.get("name"))),
                                        {"name": gold.get("name"), "arguments": gold.get("arguments")},
                                        {"name": pred.get("name"), "arguments": pred.get("arguments")})
        if decision is None:
            return None
        verdict = "EQUIVALENT" if decision.equivalent else "DIFFERENT"
        return MatchDecision(decision.equivalent, self.name if decision.equivalent else None,
                             f"judge {decision.model} answered {verdict}")


async def _score_calls(task: Task, pred: list[dict[str, Any]], done: bool, score: TaskScore,
                       matchers: Sequence[Matcher], schema_for: Callable[[str], Mapping[str, Any] | None],
                       timeouts: list[str]) -> None:
    gold = list(task.calls or ())
    stripped = [{"name": g.name, "arguments": strip_references(g.arguments), MATCH_KEY: g.match} for g in gold]
    alignment = await align_calls(pred, stripped, cost=argument_cost(schema_for, fill_defaults=True, argument_rules=True))
    pred_of = {p.gold_index: p.pred_index for p in alignment.pairs}
    index_of = {g.id: j for j, g in enumerate(gold)}

    def result_of(call_id: str) -> Any:
        i = pred_of.get(index_of.get(call_id, -1))
        return UNRESOLVED if i is None or pred[i]["is_error"] else pred[i]["result"]

    resolved = [{"name": g.name, "arguments": resolve_arguments(g.arguments, result_of, timeouts), **({MATCH_KEY: g.match} if g.match else {})}
                for g in gold]
    for pair in alignment.pairs:
        pair.decision = await decide(pred[pair.pred_index], resolved[pair.gold_index], matchers)
        if pair.decision is not None and "unresolved reference" in pair.decision.reason:
            pair.decision = replace(pair.decision, reason=name_unresolved_in_text(pair.decision.reason))
    matched = [p for p in alignment.pairs if p.matched]
    order = [p.pred_index for p in sorted(matched, key=lambda p: p.gold_index)]
    in_order = order == sorted(order)
    exact = done and len(matched) == len(gold) and not alignment.unmatched_pred and (in_order or not task.ordered)
    score.add("call_exact_match", float(exact))
    if gold:
        score.add("tool_accuracy", len(alignment.pairs), len(gold))
    n_args = sum(len(g.arguments) for g in gold)
    if n_args:
        right = 0
        for pair in alignment.pairs:
            want = resolved[pair.gold_index]["arguments"]
            if pair.matched:
                right += len(want)
            else:
                got = pred[pair.pred_index]["arguments"]
                right += sum(param_matches(got, want, schema_for(gold[pair.gold_index].name), rules=gold[pair.gold_index].match).values())
        score.add("argument_accuracy", right, n_args)
    score.details["calls"] = {
        "predicted": [{"name": c["name"], "arguments": c["arguments"], "is_error": c["is_error"]} for c in pred],
        "gold": [{"name": g.name, "arguments": name_unresolved(g.arguments, r["arguments"])} for g, r in zip(gold, resolved, strict=True)],
        "alignment": alignment.to_dict(), "in_order": in_order, "exact": exact,
    }


async def score_task(task: Task, trace: Mapping[str, Any] | None, ctx: ScoreContext, matchers: Sequence[Matcher],
                     schema_for: Callable[[str], Mapping[str, Any] | None]) -> TaskScore:
    """One task's samples, groups and details (see the module docstring)."""
    score = TaskScore(groups=groups_of(task))
    timeouts: list[str] = []
    done = trace is not None and trace.get("status") == "completed"
    outcome = (trace or {}).get("outcome") or {}
    folder = outcome.get("episode_dir")
    task = task.in_folder(folder if isinstance(folder, str) else None)
    pred = predicted_calls(trace)
    if pred:
        score.add("informative_results", sum(1 for c in pred if not c["is_error"] and not is_empty(c["result"])), len(pred))
    if task.calls is not None:
        await _score_calls(task, pred if done else [], done, score, matchers, schema_for, timeouts)
    if task.checks:
        results = outcome.get("checks") if done else None
        found = evaluate_checks(task.checks, results if isinstance(results, list) else None, timeouts)
        score.add("state_accuracy", float(done and all(e["ok"] for e in found)))
        score.details["checks"] = found
    if task.answer is not None:
        spec = task.answer
        answer = (trace or {}).get("final_answer") if done else None
        if spec["type"] != "judge":
            try:
                ok = done and bool(match_answer(spec, answer))
            except RegexTimeout as exc:
                ok = False
                timeouts.append(str(exc))
            score.add("answer_accuracy", float(ok))
            score.details["answer"] = {"answer": answer, "spec": spec, "correct": ok}
        elif not done:
            score.add("answer_accuracy", 0.0)
            score.details["answer"] = {"answer": None, "spec": spec, "correct": False}
        else:
            decision = await ctx.ask(JUDGE_SYSTEM, judge_prompt(task.request, spec["rubric"], answer), verdict=parse_verdict)
            if decision is not None:
                score.add("answer_accuracy", float(decision.equivalent))
            score.details["answer"] = {"answer": answer, "spec": spec,
                                       "correct": None if decision is None else decision.equivalent,
                                       "judge": None if decision is None else decision.answer}
    if done and outcome.get("oracle"):
        _prove(task, pred, score)
    if timeouts:
        score.add("regex_timeouts", len(timeouts))
        score.details["regex_timeouts"] = timeouts
        for message in timeouts:
            log.warning("task %s (line %d of the task file): %s; scored as not matched", task.id, task.line, message)
    return score


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def answer_in_results(spec: Mapping[str, Any], texts: Sequence[str]) -> bool | None:
    """Is the gold answer written in these results? ``None`` where its type cannot say (a pattern, a
    judge, an answer marked ``derived``)."""
    if spec.get("derived") or spec["type"] not in ("exact", "normalized", "number"):
        return None
    if spec["type"] == "number":
        value = float(spec["value"])
        tol = float(spec.get("tolerance", DEFAULT_TOLERANCE))
        limit = tol * abs(value) if spec.get("relative") else tol
        return any(abs(x - value) <= limit for t in texts for x in numbers_in(t))
    values = spec["value"] if isinstance(spec["value"], list) else [spec["value"]]
    if spec["type"] == "exact":
        return any(str(v).strip() in t for v in values for t in texts)
    words = [f" {normalize_text(t)} " for t in texts]
    return any(f" {normalize_text(str(v))} " in w for v in values for w in words if normalize_text(str(v)))


def _prove(task: Task, pred: Sequence[Mapping[str, Any]], score: TaskScore) -> None:
    """Fail a task the oracle played where the tools cannot give the gold (see the module docstring)."""
    why = [f"gold call {i + 1} ({c['name']}) returned an error: {_text(c['result'])[:200]}"
           for i, c in enumerate(pred) if c["is_error"]]
    if why and "call_exact_match" in score.samples:
        score.add("call_exact_match", 0.0)
    why += [f"state check {e['check']} ({e['call']['name']}) failed: {e['path'] or 'the result'} {e['test']} "
            f"{json.dumps(e['want'].get(e['test']), ensure_ascii=False)}, got {_text(e['got'])[:200]}"
            for e in score.details.get("checks") or [] if not e["ok"]]
    texts = [_text(c["result"]) for c in pred if not c["is_error"]]
    if task.answer is not None and task.calls and answer_in_results(task.answer, texts) is False:
        why.append(f"the gold answer {json.dumps(task.answer.get('value'), ensure_ascii=False)} is not in what the "
                   "gold calls returned (mark the answer derived: true if it is computed, not read)")
        if "answer_accuracy" in score.samples:
            score.add("answer_accuracy", 0.0)
    if why:
        score.add("oracle_failures", 1)
        score.details["oracle"] = why
        for message in why:
            log.warning("oracle, task %s (line %d of the task file): %s", task.id, task.line, message)
