"""What a scorer may use besides the trace (see :mod:`evals.core.scoring`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from .judge import JudgeDecision, LLMJudge, judge_prompt, parse_judgement

__all__ = ["ScoreContext"]


class ScoreContext:
    """What a scorer may use besides the trace: the run's config and the judge."""

    def __init__(self, config: Mapping[str, Any], judge: LLMJudge | None, stored: Mapping[str, Mapping[str, Any]]):
        self.config = config
        self._judge = judge
        self._stored = stored
        self.decisions: list[dict[str, Any]] = []
        self.missing = 0

    @property
    def can_judge(self) -> bool:
        """A judge was given, or decisions are stored: calls that no other matcher accepts go to it."""
        return self._judge is not None or bool(self._stored)

    async def judge(
        self, request: str, tool: Mapping[str, Any], gold: Mapping[str, Any], pred: Mapping[str, Any]
    ) -> JudgeDecision | None:
        """The judge's decision on ``pred`` vs ``gold`` (stored, else asked); ``None`` when there is no judge."""
        return await self._decision(
            judge_prompt(request, tool, gold, pred), lambda j: j.decide(request, tool, gold, pred)
        )

    async def ask(
        self,
        system: str,
        prompt: str,
        *,
        verdict: Callable[[str], bool | None] = parse_judgement,
        max_tokens: int | None = None,
    ) -> JudgeDecision | None:
        """The judge's answer to a benchmark's own ``prompt`` (stored, else asked; see :meth:`LLMJudge.ask`);
        ``None`` when there is no judge."""
        return await self._decision(prompt, lambda j: j.ask(system, prompt, verdict=verdict, max_tokens=max_tokens))

    async def _decision(
        self, prompt: str, asking: Callable[[LLMJudge], Awaitable[JudgeDecision]]
    ) -> JudgeDecision | None:
        """A stored decision for ``prompt`` (made by this run's judge, or any when none is given), else the
        judge's new one; every decision is kept in :attr:`decisions`."""
        hit = self._stored.get(prompt)
        if hit is not None and (self._judge is None or hit.get("model") == self._judge.model):
            record = {k: v for k, v in hit.items() if k in JudgeDecision.__dataclass_fields__ and k != "response"}
            decision = JudgeDecision(**record)
            self.decisions.append({**decision.to_dict(), "reused": True})
            return decision
        if self._judge is None:
            self.missing += 1
            return None
        decision = await asking(self._judge)
        self.decisions.append(decision.to_dict())
        return decision
