"""NesTools: 2-6 nested calls per task (later calls take earlier outputs), served as tools answered with
handles; the paper's one-shot prompt or a live agent; the official metrics

The benchmark's folder, low to high (each module imports only those before it):

* ``files``: its name, data files and their pinned sources;
* ``rouge``: the ROUGE-L F the official scorer compares string arguments with;
* ``official``: the official evaluation, reproduced (parsing, matching, counts, the run's numbers);
* ``metrics``: the declared metrics and one task's samples;
* ``data``: the samples as tasks, and each task's offered tools (gold plus distractors);
* ``tools``: the tools as MCP tools answered with handles, and the catalog;
* ``plugin``: the ``evals run`` plugin (``oneshot``, the paper's prompt; ``agent``, live calls);
* ``export``: the official prediction format (``evals export`` / ``evals score --format``);
* ``paper_numbers.yaml``: the published numbers.

This module only declares it (no data is read).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core.options import Option
from ...core.plugin import BenchmarkInfo, PaperNumbers
from .files import NAME, SOURCES, STRATEGIES
from .metrics import METRICS

OPTIONS: tuple[Option, ...] = (
    Option("distractors", int, 5, "distractor tools offered per gold tool, drawn from the other samples' tools "
           "(the paper retrieves 5 per gold tool from a pool that is not published; 0: the gold tools only)",
           serve=True, check=lambda v: None if 0 <= v <= 20 else "must be between 0 and 20"),
    Option("seed", int, 0, "seed of the distractor draw and of the tool order", serve=True),
)


def _stats() -> dict[str, Any]:
    """``evals data stats nestools``: samples, calls, nesting and depth from the data."""
    from collections import Counter

    from .data import load_tasks
    from .official import gold_depth

    tasks = load_tasks()
    nested = [t for t in tasks if any("API_call" in str(v) for c in t.calls for v in c["parameters"].values())]
    return {
        "samples": len(tasks),
        "gold_calls": sum(len(t.calls) for t in tasks),
        "samples_with_a_nested_argument": len(nested),
        "distinct_tools": len({a.api_id for t in tasks for a in t.gold_apis}),
        "calls_per_sample": dict(sorted(Counter(len(t.calls) for t in tasks).items())),
        "nesting_depth": dict(sorted(Counter(gold_depth(t.calls) for t in tasks).items())),
    }


def _paper_setting(summary: Mapping[str, Any]) -> dict[str, Any]:
    return {"dataset": NAME, "strategy": str(summary.get("strategy") or "oneshot")}


INFO = BenchmarkInfo(
    name=NAME, plugin=".plugin:NesToolsBenchmark", scorer_version=2,  # CHANGELOG.md
    strategies=STRATEGIES, options=OPTIONS, metrics=METRICS,
    data_sources=SOURCES, stats=_stats,
    pass_metric="tree_accuracy",  # a task passes when its whole call tree is right (--epochs: pass@k, pass^k)
    paper_numbers=PaperNumbers(_paper_setting, "average_f1"),
)
BENCHMARKS = (INFO,)
