"""BFCL's metrics: each served category's accuracy, as BFCL reports it (right entries / entries), and
BFCL's grouped leaderboard scores over them (:mod:`.scores`: each one once every category it needs is in the run)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.metrics import Metric, TaskScore
from .files import FORMAT_SENSITIVITY, MEMORY_SERVED, MULTI_TURN, SERVED
from .scores import SCORE_METRICS

if TYPE_CHECKING:
    from .agentic import AgenticVerdict
    from .checker import Verdict

__all__ = ["METRICS", "task_score"]

METRICS: tuple[Metric, ...] = (
    *(Metric(c, f"{c} accuracy", over="entries",
             description=f"BFCL v4 {c}: entries whose calls the {'multi-turn' if c in MULTI_TURN else 'AST'} checker "
             "accepts, over the category's entries")
      for c in SERVED),
    *(Metric(c, f"{c} accuracy", over="entries",
             description=f"BFCL v4 {c}: entries whose final reply holds an accepted answer (BFCL's agentic_checker), "
             "over the category's entries")
      for c in MEMORY_SERVED),
    Metric(FORMAT_SENSITIVITY, f"{FORMAT_SENSITIVITY} accuracy", over="entries",
           description="BFCL v4 format_sensitivity (prompting only): entries, each under one of BFCL's 26 prompt "
           "configurations, whose decoded calls the AST checker accepts, over the category's entries"),
    *SCORE_METRICS,
    Metric("accuracy", "Accuracy over the run's entries", over="entries",
           description="right entries over all the run's entries, whatever their category (not BFCL's weighted "
           "overall score)"),
    Metric("failed_episodes", "Episodes that failed", kind="count", higher_is_better=False, in_breakdowns=False,
           warn="{n:g} of {of:g} episodes failed (scored as BFCL scores an inference error: a text without a call)",
           warn_counted_as="a reply with no call: wrong in the AST categories, right in irrelevance; "
           "multi-turn: wrong (inference_error)",
           warn_official="BFCL records the error text as the model's result; it decodes to no call"),
)


def task_score(category: str, verdict: Verdict | AgenticVerdict, *, errored: bool) -> TaskScore:
    """One entry's samples: its category's accuracy and the run's accuracy (and whether it failed)."""
    score = TaskScore(groups={"category": category})
    score.add(category, float(verdict.valid))
    score.add("accuracy", float(verdict.valid))
    score.add("failed_episodes", float(errored))
    score.details["verdict"] = verdict.to_dict()
    return score
