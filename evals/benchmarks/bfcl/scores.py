"""BFCL's leaderboard scores: its grouped accuracies, computed from a run's per-category accuracies as the
pinned version's ``generate_leaderboard_csv`` (``bfcl_eval/eval_checker/eval_runner_helper.py``) computes them.

Each score is a derived metric (:mod:`evals.core.metrics`) over BFCL v4's category NAMES, computed as
BFCL computes it whatever the run holds: a category that was not run counts as 0 (``absent="zero"``), with
its entries in the pinned wheel (``ENTRIES``) where a score weights categories by entries, exactly as
``get_category_score`` counts it; the value names those categories (``missing`` in its statistics), and
``evals leaderboard``, ``evals view`` and ``evals report`` show them beside it. Where BFCL's overall table
prints "N/A" for a score with a category not run ("Non-Live AST Acc", "Non-Live Simple AST", "Irrelevance
Detection", "Web Search Acc", "Memory Acc") the score has no value (``shown_incomplete=False``), yet the
scores above it use its 0-filled value, as BFCL's do. Overall Acc, Live Acc, Multi Turn Acc and Agentic
Overall Acc are numbers in BFCL's tables whatever is missing, and so here. A run over part of a category
(``--limit``, ``--per-category``, ``--sample``, an import of part of a result file) has a subset note in its
summary: not comparable with the leaderboard (:mod:`evals.core.selection`).

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

__all__ = ["ENTRIES", "GROUPS", "OVERALL_WEIGHTS", "SCORE_METRICS", "count_weighted", "percentage_weighted", "unweighted"]

VERSION_NOTE = "BFCL v4, bfcl-eval 2026.3.23"

# BFCL's scoring categories by group, as its leaderboard code names them
NON_LIVE_SIMPLE = ("simple_python", "simple_java", "simple_javascript")
LIVE_AST = ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple")
MULTI_TURN = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")
WEB_SEARCH = ("web_search_base", "web_search_no_snippet")
MEMORY = ("memory_kv", "memory_vector", "memory_rec_sum")
OVERALL_WEIGHTS = (10, 10, 10, 30, 40)  # non-live, live, irrelevance, multi-turn, agentic

#: each scoring category's entries in the pinned wheel: what BFCL counts a category that was not run as
#: (``get_category_score``: 0 accuracy over ``len(load_dataset_entry(category))``); checked against the wheel
ENTRIES: dict[str, int] = {
    "simple_python": 400, "simple_java": 100, "simple_javascript": 50, "multiple": 200, "parallel": 200,
    "parallel_multiple": 200, "irrelevance": 240, "live_simple": 258, "live_multiple": 1053, "live_parallel": 16,
    "live_parallel_multiple": 24, "live_irrelevance": 884, "live_relevance": 16, "multi_turn_base": 200,
    "multi_turn_miss_func": 200, "multi_turn_miss_param": 200, "multi_turn_long_context": 200,
    "web_search_base": 100, "web_search_no_snippet": 100, "memory_kv": 155, "memory_vector": 155, "memory_rec_sum": 155,
}


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

# the scores BFCL's overall table prints as "N/A" while a category of theirs was not run
_NA_WHEN_MISSING = frozenset({"simple_ast", "non_live_ast", "irrelevance_detection", "web_search_summary",
                              "memory_summary"})

SCORE_METRICS: tuple[Metric, ...] = tuple(
    Metric(name, f"{label} (BFCL)", over="entries", derived_from=parts, derive=_DERIVE.get(name, unweighted),
           derive_counts=name == "live_ast", linear=True, absent="zero",
           absent_counts=tuple((p, float(ENTRIES[p])) for p in parts if p in ENTRIES),
           shown_incomplete=name not in _NA_WHEN_MISSING,
           description=f"{VERSION_NOTE}: " + _WHAT.get(name, f"the unweighted mean of {', '.join(parts)}")
           + (" (a category not run counts as 0, as in BFCL; shown only when each one was run)"
              if name in _NA_WHEN_MISSING else " (a category not run counts as 0, as in BFCL, and is named beside it)"))
    for name, label, parts in GROUPS
)
