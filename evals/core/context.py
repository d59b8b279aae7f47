"""What a scorer may use besides the trace (see :mod:`evals.core.scoring`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .judge import JudgeDecision, LLMJudge, judge_prompt

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
        prompt = judge_prompt(request, tool, gold, pred)
        hit = self._stored.get(prompt)
        if hit is not None and (self._judge is None or hit.get("model") == self._judge.model):
            record = {k: v for k, v in hit.items() if k in JudgeDecision.__dataclass_fields__ and k != "response"}
            decision = JudgeDecision(**record)
            self.decisions.append({**decision.to_dict(), "reused": True})
            return decision
        if self._judge is None:
            self.missing += 1
            return None
        decision = await self._judge.decide(request, tool, gold, pred)
        self.decisions.append(decision.to_dict())
        return decision
