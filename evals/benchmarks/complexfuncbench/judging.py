"""The official LLM judgements, asked through the core's judge (:class:`evals.core.judge.LLMJudge`).

* ``llm_compare``: is a predicted call equivalent to its gold call (the official ``compare`` prompts;
  asked while the episode runs, by the replay server). The answer is read as the official code reads
  it (``decode_json(...)["is_equal"]``); an unreadable answer is no match.
* completeness and correctness of the final answer, 0 to 2 (the official ``response`` prompts;
  asked when scoring): completeness sees the query and the answer, correctness the gold conversation
  without its last turn and the answer. An empty answer scores -2 and an unreadable judgement -1
  (the official code's markers, left out of the averages); an unreadable judgement is asked again,
  up to ten times, as the official code does.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ...core.judge import JudgeDecision, LLMJudge
from .prompts import Template, decode_json, read_prompt_file

__all__ = ["ATTEMPTS", "CallJudge", "response_eval"]

ATTEMPTS = 10  # the official retry count of the response judgements


def _parts(path: Path, system: str, user: str) -> tuple[str, Template]:
    found = read_prompt_file(path)
    s, u = found.get(system), found.get(user)
    if not isinstance(s, str) or not isinstance(u, Template):
        raise ValueError(f"{path} lacks the official prompts {system!r} (text) and {user!r} (template)")
    return s, u


def _is_equal(answer: str) -> bool | None:
    out = decode_json(answer)
    if not isinstance(out, dict) or "is_equal" not in out:
        return None
    return bool(out["is_equal"])


def _score(answer: str) -> int | None:
    out = decode_json(answer)
    if not isinstance(out, dict) or out.get("score") not in (0, 1, 2):
        return None
    return int(out["score"])


class CallJudge:
    """The official LLM-based call comparison, by ``judge`` (an :class:`LLMJudge`)."""

    def __init__(self, judge: LLMJudge, compare_prompts: Path):
        self.judge = judge
        self.system, self.user = _parts(compare_prompts, "system_prompt", "user_prompt")

    async def __call__(self, functions: list[dict[str, Any]], history: list[dict[str, Any]], pred: dict[str, Any],
                       gold: dict[str, Any]) -> tuple[bool | None, dict[str, Any]]:
        prompt = self.user.fill(
            functions=json.dumps(functions, ensure_ascii=False), history=json.dumps(history, ensure_ascii=False),
            function_call_1=json.dumps(pred, ensure_ascii=False), function_call_2=json.dumps(gold, ensure_ascii=False),
        )
        decision = await self.judge.ask(self.system, prompt, verdict=_is_equal)
        verdict = _is_equal(decision.answer)
        return verdict, {"judge": decision.model, "answer": decision.answer, "is_equal": verdict,
                         "input_tokens": decision.input_tokens, "output_tokens": decision.output_tokens,
                         "cost_usd": decision.cost_usd}


Ask = Callable[[str, str, Callable[[str], bool | None]], Awaitable[JudgeDecision | None]]


async def _judged(ask: Ask, system: str, prompt: str) -> tuple[int | None, str | None, bool]:
    """(score, reason, asked) after up to ATTEMPTS tries; asked is False when there was no judge."""
    for _ in range(ATTEMPTS):
        decision = await ask(system, prompt, lambda a: _score(a) is not None)
        if decision is None:
            return None, None, False
        score = _score(decision.answer)
        if score is not None:
            reason = decode_json(decision.answer).get("reason")
            return score, reason if isinstance(reason, str) else None, True
    return None, None, True


async def response_eval(ask: Ask, response_prompts: Path, query: str, gold_history: list[dict[str, Any]],
                        answer: str) -> dict[str, Any] | None:
    """The official ``resp_eval`` record (``{"complete": {"score", "reason"}, "correct": {...}}``);
    ``None`` when there is no judge to ask."""
    if answer == "":
        failed = {"score": -2, "reason": "Do not generate response successfully."}
        return {"complete": dict(failed), "correct": dict(failed)}
    c_sys, c_user = _parts(response_prompts, "complete_system_prompt", "complete_user_prompt")
    k_sys, k_user = _parts(response_prompts, "correct_system_prompt", "correct_user_prompt")
    complete, c_reason, asked = await _judged(ask, c_sys, c_user.fill(query=query, gen_response=answer))
    if not asked:
        return None
    correct, k_reason, _ = await _judged(ask, k_sys, k_user.fill(history=json.dumps(gold_history, ensure_ascii=False),
                                                                 gen_response=answer))
    return {
        "complete": {"score": complete, "reason": c_reason} if complete is not None
        else {"score": -1, "reason": "Completeness Eval failed."},
        "correct": {"score": correct, "reason": k_reason} if correct is not None
        else {"score": -1, "reason": "Correctness Eval failed."},
    }
