"""The LLM matcher: a judge model decides whether two calls are equivalent.

The rule and response matchers, the pair cascade and the alignment of call lists live below the
benchmarks, in :mod:`tool_specs.matching` (gold replay needs them too); they are re-exported here.
The judge's prompt, answer and cost go into the episode's trace and each decision is cached by
request, so a rerun or ``evals score`` never asks again. Scores are reported strict (``rule`` only)
and with the whole cascade; each decision records the matcher that made it (``None`` when nothing
matched).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tool_specs.argument_matching import normalize_arguments, normalize_value, param_matches, with_defaults
from tool_specs.matching import MATCHERS, MatchDecision, response_match, rule_match

if TYPE_CHECKING:
    from client.adapters.base import ModelAdapter
    from client.cache import ResponseCache
    from client.ratelimit import RateLimiter
    from client.retry import RetryPolicy

__all__ = [
    "MATCHERS",
    "JudgeDecision",
    "LLMJudge",
    "LLMMatcher",
    "judge_prompt",
    "normalize_arguments",
    "normalize_value",
    "param_matches",
    "parse_judgement",
    "response_match",
    "rule_match",
    "with_defaults",
]


# ---- the LLM judge -------------------------------------------------------------------------------
JUDGE_SYSTEM = (
    "You judge tool calls. Given a user's request, a tool's description and parameters, a reference "
    "call and a candidate call, decide whether the candidate does the same thing for the user as the "
    "reference: the same tool, and parameter values that mean the same (different spelling, format or "
    "an explicit default are fine; a different entity, date, amount or option is not). Answer with "
    "one word on the last line: EQUIVALENT or DIFFERENT."
)


@dataclass
class JudgeDecision:
    equivalent: bool
    answer: str
    prompt: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    cached: bool = False
    response: Any = None  # the judge's ModelResponse when it was asked now (not cached); not serialised

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "response"}


def judge_prompt(request: str, tool: Mapping[str, Any], gold: Mapping[str, Any], pred: Mapping[str, Any]) -> str:
    def dump(obj: Any) -> str:
        return json.dumps(obj, ensure_ascii=False, sort_keys=True)

    return (
        f"User request:\n{request}\n\nTool:\n{dump(tool)}\n\n"
        f"Reference call:\n{dump(gold)}\n\nCandidate call:\n{dump(pred)}\n\n"
        "Is the candidate call equivalent to the reference call? Last line: EQUIVALENT or DIFFERENT."
    )


def parse_judgement(text: str) -> bool | None:
    """EQUIVALENT -> True, DIFFERENT -> False, from the last line that says one of them; else None."""
    for line in reversed((text or "").strip().splitlines()):
        words = set(re.findall(r"[A-Z]+", line.upper()))
        if "EQUIVALENT" in words and "NOT" not in words and "DIFFERENT" not in words:
            return True
        if "DIFFERENT" in words or ("NOT" in words and "EQUIVALENT" in words):
            return False
    return None


class LLMJudge:
    """Asks ``adapter`` whether two calls are equivalent.

    The judge goes through what the model goes through, :class:`client.model.Model`: retries of
    transient failures (``retry``), the judge's own rate limiter (``limiter``) and cost accounting; on
    top of it, a cache of decisions by request (``cache``: the verdict, not the raw response); its tokens and cost are kept apart from the model's (see :mod:`evals.core.scoring`).
    """

    def __init__(
        self,
        adapter: ModelAdapter,
        cache: ResponseCache | None = None,
        *,
        max_tokens: int = 256,
        retry: RetryPolicy | None = None,
        limiter: RateLimiter | None = None,
    ):
        from client.model import Model

        self.adapter = adapter
        self.cache = cache  # the judge's decisions, the one store of them (the model call itself is not cached)
        self.max_tokens = max_tokens
        self._model = Model(adapter, limiter=limiter, retry=retry)  # built once: rate limit, retries, cost

    @property
    def model(self) -> str:
        return str(getattr(self.adapter, "name", None) or self.adapter.model)

    async def decide(
        self, request: str, tool: Mapping[str, Any], gold: Mapping[str, Any], pred: Mapping[str, Any]
    ) -> JudgeDecision:
        return await self.ask(JUDGE_SYSTEM, judge_prompt(request, tool, gold, pred))

    async def ask(
        self,
        system: str,
        prompt: str,
        *,
        verdict: Callable[[str], bool | None] = parse_judgement,
        max_tokens: int | None = None,
    ) -> JudgeDecision:
        """Ask the judge ``prompt`` under ``system`` (a benchmark's own judge prompt). ``verdict(answer)``
        reads the answer: True/False, or ``None`` when it cannot be read (then it is not cached).
        ``max_tokens`` overrides the judge's answer budget for prompts that want long answers (a rubric
        with reasons); it is part of the cache key when given."""
        from client.adapters.base import GenerateParams
        from client.messages import Message, SystemMessage, UserMessage
        model = self.model
        limit = self.max_tokens if max_tokens is None else max_tokens
        key: dict[str, Any] = {"judge": model, "system": system, "prompt": prompt}
        if max_tokens is not None:
            key["max_tokens"] = max_tokens
        if self.cache is not None:
            hit = await self.cache.get(key)
            if hit is not None:
                return JudgeDecision(**{**hit, "cached": True, "cost_usd": 0.0})
        messages: list[Message] = [SystemMessage(system), UserMessage(prompt)]

        judge = self._model
        response = await judge.generate(messages, [], "auto", GenerateParams(max_tokens=limit, temperature=0.0))
        read = verdict(response.text or "")
        decision = JudgeDecision(
            equivalent=bool(read),
            answer=response.text or "",
            prompt=prompt,
            model=model,
            input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens,
            cost_usd=judge.cost_usd(response),
            response=response,
        )
        if self.cache is not None and read is not None:
            await self.cache.put(key, decision.to_dict())
        return decision


class LLMMatcher:
    """The judge as the last matcher of a cascade (:func:`tool_specs.matching.decide`).

    ``request`` is the user's request and ``tool_for(name)`` the tool's listing (name, description,
    parameters) shown to the judge. The decision carries the judge's prompt, answer and tokens.
    """

    name = "llm"

    def __init__(self, judge: LLMJudge, request: str, tool_for: Any):
        self.judge = judge
        self.request = request
        self.tool_for = tool_for

    async def __call__(self, pred: Mapping[str, Any], gold: Mapping[str, Any]) -> MatchDecision | None:
        if pred.get("name") != gold.get("name") or not isinstance(pred.get("arguments"), Mapping):
            return None
        decision = await self.judge.decide(
            self.request, self.tool_for(str(gold.get("name"))),
            {"name": gold.get("name"), "arguments": gold.get("arguments")},
            {"name": pred.get("name"), "arguments": pred.get("arguments")},
        )
        return MatchDecision(
            decision.equivalent, self.name if decision.equivalent else None,
            f"judge {decision.model} answered {'EQUIVALENT' if decision.equivalent else 'DIFFERENT'}",
            {"judge": decision.to_dict()},
        )
