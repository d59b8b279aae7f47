"""BFCL v4 (the Berkeley Function-Calling Leaderboard) over MCP, scored as its own checker scores it.

The benchmark's folder, low to high (each module imports only those before it):

* ``files``: its name, the pinned ``bfcl-eval`` wheel its data is read from, its categories;
* ``data``: the entries and possible answers, read out of the wheel (checked against its sha256);
* ``tools``: a function doc as an MCP tool, mapped as BFCL's function-calling handlers map it;
* ``type_conversion``: Java and JavaScript values' text, read as BFCL's type converters read it;
* ``checker``: BFCL's AST checker, re-implemented rule by rule;
* ``scores``: BFCL's grouped leaderboard scores, over its category names;
* ``metrics``: each served category's accuracy, and those scores;
* ``plugin``: the ``evals run`` plugin (strategy ``fc``; the oracle);
* ``view``: an entry in ``evals view`` (possible answers beside the predicted calls);
* ``results``: BFCL's own result files (``evals score --format bfcl-official``, ``evals export``).

Served so far: the single-turn categories (``simple_python``, ``multiple``, ``parallel``,
``parallel_multiple``, ``irrelevance``, ``simple_java``, ``simple_javascript`` and the six ``live_*``
ones) and the memory categories ``memory_kv`` and ``memory_rec_sum`` (``agentic``: data and scoring;
``memory``: BFCL's backends behind MCP tools; ``memory_run``: the prerequisite conversations, then the
question); ``memory_vector``, ``web_search`` and ``format_sensitivity`` are refused for good, each with
its reason (``files.REFUSED``); the others are named and refused as "not served yet". This module only
declares it (no data is read).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core.options import Option
from ...core.plugin import BenchmarkInfo, PaperNumbers
from .files import ALL_CATEGORIES, MEMORY_SERVED, NAME, REFUSED, SERVED, SOURCES
from .metrics import METRICS


def _category_check(value: str) -> str | None:
    if value == "all" or value in SERVED or value in MEMORY_SERVED:
        return None
    if value in REFUSED:
        return f"BFCL category {value!r} is not served: {REFUSED[value]}"
    if value in ALL_CATEGORIES:
        return f"BFCL category {value!r} is not served yet (served: {', '.join(SERVED)})"
    return f"no BFCL v4 category {value!r}; served: {', '.join(SERVED)}"


OPTIONS: tuple[Option, ...] = (
    Option("category", str, None, "a BFCL v4 category to run (repeat the flag for several; default: every "
           f"served one: {', '.join(SERVED + MEMORY_SERVED)})", serve=True, multiple=True, check=_category_check, metavar="CATEGORY"),
)


def _stats() -> dict[str, Any]:
    """``evals data stats bfcl``: entries, functions and answers per served category."""
    from .data import read_category

    out: dict[str, Any] = {"tasks": 0}
    for category in SERVED:
        entries = read_category(category)
        out[category] = {"entries": len(entries), "functions": sum(len(e.functions) for e in entries),
                         "gold_calls": sum(len(e.ground_truth or ()) for e in entries)}
        out["tasks"] += len(entries)
    return out


def _paper_setting(summary: Mapping[str, Any]) -> dict[str, Any]:
    """BFCL's leaderboard rows are over every scoring category, whole: a run is of that dataset only when it
    has BFCL's overall score (every category of its formula) and is no subset of its categories' entries."""
    whole = "overall_acc" in (summary.get("metrics") or {}) and not summary.get("subset_note") \
        and not summary.get("partial")
    return {"dataset": NAME if whole else f"{NAME}-partial", "strategy": "fc"}


INFO = BenchmarkInfo(
    name=NAME, plugin=".plugin:BfclBenchmark",
    description="BFCL v4: each entry's functions served as MCP tools, the model's calls scored by BFCL's AST "
    "checker's rules (served: the single-turn categories, live, Java and JavaScript included)",
    strategies=("fc",), options=OPTIONS, metrics=METRICS,
    data_sources=SOURCES, stats=_stats,
    pass_metric="accuracy",
    paper_numbers=PaperNumbers(_paper_setting, "overall_acc"),
)
BENCHMARKS = (INFO,)
