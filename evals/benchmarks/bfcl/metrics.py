"""BFCL's metrics: each served category's accuracy, as BFCL reports it (right entries / entries), and
BFCL's grouped leaderboard scores over them (:mod:`.scores`: each one once every category it needs is in the run)."""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

from ...core.metrics import Metric, TaskScore
from .files import FORMAT_SENSITIVITY, MEMORY_SERVED, MEMORY_VECTOR, MULTI_TURN, SERVED, WEB_SEARCH
from .scores import SCORE_METRICS

if TYPE_CHECKING:
    from .agentic import AgenticVerdict
    from .checker import Verdict

__all__ = ["COLUMNS", "COLUMN_OF", "FORMAT_CONFIGS", "METRICS", "bfcl_percent", "config_metric", "task_score"]

#: each category's column in BFCL's tables (``bfcl_eval/constants/column_headers.py``)
COLUMN_OF = {
    "simple_python": "Python Simple AST", "simple_java": "Java Simple AST", "simple_javascript": "JavaScript Simple AST",
    "multiple": "Non-Live Multiple AST", "parallel": "Non-Live Parallel AST",
    "parallel_multiple": "Non-Live Parallel Multiple AST", "irrelevance": "Non-Live Irrelevance Detection",
    "live_simple": "Live Simple AST", "live_multiple": "Live Multiple AST", "live_parallel": "Live Parallel AST",
    "live_parallel_multiple": "Live Parallel Multiple AST", "live_irrelevance": "Live Irrelevance Detection",
    "live_relevance": "Relevance Detection", "multi_turn_base": "Multi Turn Base",
    "multi_turn_miss_func": "Multi Turn Miss Func", "multi_turn_miss_param": "Multi Turn Miss Param",
    "multi_turn_long_context": "Multi Turn Long Context", "web_search_base": "Web Search Base",
    "web_search_no_snippet": "Web Search No Snippet", "memory_kv": "Memory KV", "memory_vector": "Memory Vector",
    "memory_rec_sum": "Memory Recursive Summarization",
}

#: the columns of BFCL's overall table (``data_overall.csv``), in its order, as metric keys: what the runs list,
#: the leaderboard and the report show first (the per-category accuracies of the Python simple, Java and
#: JavaScript parts and of the two irrelevance categories are in BFCL's other tables)
COLUMNS: tuple[str, ...] = (
    "overall_acc", "non_live_ast", "simple_ast", "multiple", "parallel", "parallel_multiple",
    "live_ast", "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple",
    "multi_turn_acc", "multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context",
    "web_search_summary", "web_search_base", "web_search_no_snippet",
    "memory_summary", "memory_kv", "memory_vector", "memory_rec_sum",
    "live_relevance", "irrelevance_detection", "format_sensitivity_max_delta", "format_sensitivity_std",
)



#: BFCL's format_sensitivity configurations in its order (``get_all_format_sensitivity_configs`` of the pinned wheel,
#: checked against it by a test): the columns of its ``data_format_sensitivity.csv``, "Config <configuration>"
FORMAT_CONFIGS: tuple[str, ...] = (
    *(f"ret_fmt={ret}&tool_call_tag={tag}&func_doc_fmt={doc}&prompt_fmt=plaintext&style=classic"
      for ret in ("python", "json", "verbose_xml", "concise_xml") for tag in ("True", "False")
      for doc in ("python", "xml", "json")),
    "ret_fmt=python&tool_call_tag=False&func_doc_fmt=json&prompt_fmt=markdown&style=classic",
    "ret_fmt=python&tool_call_tag=False&func_doc_fmt=json&prompt_fmt=plaintext&style=experimental",
)


def config_metric(config: str) -> str:
    """The metric of one format_sensitivity configuration's accuracy."""
    return f"{FORMAT_SENSITIVITY}:{config}"


def _max_delta(*fractions: float) -> float:
    """BFCL's ``accuracy_max_delta`` before its ``round(x * 100, 2)``: over the configurations run (0 for one)."""
    return max(fractions) - min(fractions) if len(fractions) > 1 else 0.0


def _std(*fractions: float) -> float:
    """BFCL's ``accuracy_std`` before its ``round(x * 100, 2)``: the sample standard deviation of the configurations'
    accuracies (``statistics.stdev``; 0 for one configuration)."""
    return statistics.stdev(fractions) if len(fractions) > 1 else 0.0


def bfcl_percent(right: float, entries: float) -> float:
    """A category's accuracy as BFCL prints it: ``correct_count / total_count``, then ``"{:.2f}%"`` of it times 100
    (divided first: 23 of 160 is 14.37%, where ``round(100 * 23 / 160, 2)`` gives 14.38)."""
    return round(right / entries * 100, 2)


METRICS: tuple[Metric, ...] = (
    *(Metric(c, f"{COLUMN_OF[c]} (BFCL)", over="entries", value_of=bfcl_percent,
             description=f"BFCL v4 {c}: entries whose calls the {'multi-turn' if c in MULTI_TURN else 'AST'} checker "
             "accepts, over the category's entries")
      for c in SERVED),
    *(Metric(c, f"{COLUMN_OF[c]} (BFCL)", over="entries", value_of=bfcl_percent,
             description=f"BFCL v4 {c}: entries whose final reply holds an accepted answer (BFCL's agentic_checker), "
             "over the category's entries")
      for c in (*MEMORY_SERVED, MEMORY_VECTOR, *WEB_SEARCH)),
    Metric(FORMAT_SENSITIVITY, f"{FORMAT_SENSITIVITY} accuracy", over="entries", value_of=bfcl_percent,
           description="BFCL v4 format_sensitivity (prompting only): entries, each under one of BFCL's 26 prompt "
           "configurations, whose decoded calls the AST checker accepts, over the category's entries"),
    *(Metric(config_metric(c), f"Config {c}", over="entries", value_of=bfcl_percent, in_breakdowns=False,
             description=f"BFCL v4 format_sensitivity under the configuration {c}: its entries whose decoded calls "
             "the AST checker accepts, over its entries (a cell of BFCL's data_format_sensitivity.csv)")
      for c in FORMAT_CONFIGS),
    *(Metric(name, f"Format Sensitivity {label} (BFCL)", over="entries", derived_from=tuple(map(config_metric,
             FORMAT_CONFIGS)), derive=derive, absent="skip", higher_is_better=False, in_breakdowns=False,
             description=f"BFCL v4 format_sensitivity's accuracy_{what} (percentage points): {text} of the "
             "configurations' accuracies, over the configurations run (0.0 when one was), rounded to 2 decimals "
             "as BFCL's format_sensitivity_runner rounds it; no value when format_sensitivity was not run "
             "(BFCL's CSV: N/A)")
      for name, label, what, derive, text in (
          ("format_sensitivity_max_delta", "Max Delta", "max_delta", _max_delta, "the highest minus the lowest"),
          ("format_sensitivity_std", "Standard Deviation", "std", _std, "the sample standard deviation"))),
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


def task_score(category: str, verdict: Verdict | AgenticVerdict, *, errored: bool, entry_id: str = "") -> TaskScore:
    """One entry's samples: its category's accuracy (and a format_sensitivity entry's configuration's, the middle
    part of its id ``base:CONFIG:original``) and the run's accuracy (and whether it failed)."""
    right = (float(verdict.valid), 1.0)
    samples = {category: right}  # made at once, not added one by one: one call per entry (8,691 of a folder)
    if category == FORMAT_SENSITIVITY and entry_id.count(":") == 2:
        samples[config_metric(entry_id.split(":")[1])] = right
    samples["accuracy"] = right
    samples["failed_episodes"] = (float(errored), 1.0)
    return TaskScore(samples, {"category": category}, {"verdict": verdict.to_dict()})
