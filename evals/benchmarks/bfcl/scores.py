"""BFCL's leaderboard scores: its grouped accuracies, computed from a run's per-category accuracies as the
pinned version's ``generate_leaderboard_csv`` (``bfcl_eval/eval_checker/eval_runner_helper.py``) computes them.

Each score is a derived metric (:mod:`evals.core.metrics`) over BFCL v4's category NAMES, so it appears
as soon as every category it needs has a value in the run (the categories served later included), and
never otherwise: BFCL itself counts a category that was not run as 0 (shown "N/A" in some columns, not in
the overall one); such a number is not BFCL's score of the model, so it is not reported here under its
name. A run over part of a category (``--limit``, ``--sample``, an import of part of a result file) has
a subset note in its summary: not comparable with the leaderboard (:mod:`evals.core.selection`).

The formulas, quirks included:

* ``simple_ast`` ("Non-Live Simple AST"): the unweighted mean of ``simple_python``, ``simple_java``
  and ``simple_javascript`` (400, 100 and 50 entries count alike);
* ``non_live_ast`` ("Non-Live AST Acc", also "Non-Live Overall Acc"): the unweighted mean of
  ``simple_ast``, ``multiple``, ``parallel`` and ``parallel_multiple``; ``irrelevance`` is not in it;
* ``live_ast`` ("Live Acc"): the four live AST categories weighted by their entries (BFCL's
  ``calculate_weighted_accuracy``: the sum of accuracy x count over the sum of counts);
  ``live_irrelevance`` and ``live_relevance`` are not in it;
* ``irrelevance_detection`` ("Irrelevance Detection" of the overall table): the unweighted mean of
  ``irrelevance`` and ``live_irrelevance``;
* ``multi_turn_acc`` ("Multi Turn Acc"): the unweighted mean of the four multi-turn categories;
* ``web_search_summary`` and ``memory_summary``: the unweighted means of the two web-search and the
  three memory categories; ``agentic_acc`` ("Agentic Overall Acc"): the unweighted mean of those two;
* ``overall_acc`` ("Overall Acc"): non-live, live, irrelevance, multi-turn and agentic weighted
  10:10:10:30:40 (normalised to sum to 1, BFCL's ``calculate_percentage_weighted_accuracy``).
  ``live_relevance`` ("Relevance Detection") and ``format_sensitivity`` are in no score.

Every score is linear in the category accuracies, over disjoint entries: its standard error is the
delta method's from the categories' (``Metric.linear``).
"""

from __future__ import annotations

from ...core.metrics import Metric

__all__ = ["GROUPS", "OVERALL_WEIGHTS", "SCORE_METRICS", "count_weighted", "percentage_weighted", "unweighted"]

VERSION_NOTE = "BFCL v4, bfcl-eval 2026.3.23"

# BFCL's scoring categories by group, as its leaderboard code names them
NON_LIVE_SIMPLE = ("simple_python", "simple_java", "simple_javascript")
LIVE_AST = ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple")
MULTI_TURN = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")
WEB_SEARCH = ("web_search_base", "web_search_no_snippet")
MEMORY = ("memory_kv", "memory_vector", "memory_rec_sum")
OVERALL_WEIGHTS = (10, 10, 10, 30, 40)  # non-live, live, irrelevance, multi-turn, agentic


def unweighted(*fractions: float) -> float:
    """BFCL's ``calculate_unweighted_accuracy``: the plain mean, summed in order."""
    total = 0.0
    for fraction in fractions:
        total += fraction
    return total / len(fractions)


def count_weighted(*values: float) -> float:
    """BFCL's ``calculate_weighted_accuracy``: ``values`` are the fractions, then their counts."""
    half = len(values) // 2
    total_count = 0.0
    total = 0.0
    for fraction, count in zip(values[:half], values[half:], strict=True):
        total_count += count
        total += fraction * count
    return total / total_count


def percentage_weighted(*fractions: float) -> float:
    """BFCL's ``calculate_percentage_weighted_accuracy`` with the overall score's weights."""
    weight_sum = sum(OVERALL_WEIGHTS)
    total = 0.0
    for fraction, weight in zip(fractions, [w / weight_sum for w in OVERALL_WEIGHTS], strict=True):
        total += fraction * weight
    return total


#: (score, BFCL's column, the scores or categories it is computed from)
GROUPS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("simple_ast", "Non-Live Simple AST", NON_LIVE_SIMPLE),
    ("non_live_ast", "Non-Live AST Acc", ("simple_ast", "multiple", "parallel", "parallel_multiple")),
    ("live_ast", "Live Acc", LIVE_AST),
    ("irrelevance_detection", "Irrelevance Detection", ("irrelevance", "live_irrelevance")),
    ("multi_turn_acc", "Multi Turn Acc", MULTI_TURN),
    ("web_search_summary", "Web Search Acc", WEB_SEARCH),
    ("memory_summary", "Memory Acc", MEMORY),
    ("agentic_acc", "Agentic Overall Acc", ("web_search_summary", "memory_summary")),
    ("overall_acc", "Overall Acc", ("non_live_ast", "live_ast", "irrelevance_detection", "multi_turn_acc", "agentic_acc")),
)

_WHAT = {
    "live_ast": "the live AST categories' accuracies weighted by their entries",
    "overall_acc": "non-live AST, live AST, irrelevance, multi-turn and agentic accuracy weighted 10:10:10:30:40",
}
_DERIVE = {"live_ast": count_weighted, "overall_acc": percentage_weighted}

SCORE_METRICS: tuple[Metric, ...] = tuple(
    Metric(name, f"{label} (BFCL)", over="entries", derived_from=parts, derive=_DERIVE.get(name, unweighted),
           derive_counts=name == "live_ast", linear=True,
           description=f"{VERSION_NOTE}: " + _WHAT.get(name, f"the unweighted mean of {', '.join(parts)}")
           + " (reported only when each one has a value in the run)")
    for name, label, parts in GROUPS
)
