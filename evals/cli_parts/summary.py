"""What a run's summary must say beside its numbers, so that they never mislead.

* a run over part of the benchmark (``--limit``, ``--task-ids``, ``--sample``, or a data set
  smaller than the paper's): "N of M tasks: not comparable";
* a partial run (stopped before every selected task ran): its numbers are over the tasks that ran;
* a run in which no task completed: no metrics at all (not a table of zeros);
* a run whose setting has no published numbers: the strategy that reproduces the papers' setting.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

__all__ = ["no_metrics", "paper_hint", "summary_notes"]


def no_metrics(summary: Mapping[str, Any]) -> bool:
    """True when no task completed: the metrics would be zeros that measure nothing."""
    return not summary.get("completed")


def paper_hint(summary: Mapping[str, Any]) -> str | None:
    """When the papers publish numbers for the run's data set but none in its setting: which
    strategies they used (``--strategy``). None otherwise."""
    from ..report.paper import DATASET, STRATEGY, load_paper_numbers, published_rows_for, run_setting

    setting = run_setting(summary)
    if not setting:
        return None
    rows = load_paper_numbers()
    if published_rows_for(summary, rows):
        return None
    counts = Counter(str(r.setting[STRATEGY]) for r in rows
                     if r.setting.get(DATASET) == setting.get(DATASET) and r.setting.get(STRATEGY))
    offered = [s for s, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]  # the most published first
    if not offered:
        return None
    bench = summary.get("benchmark")
    return (f"the papers publish no {bench} numbers for strategy {summary.get('strategy')!r} in this setting; "
            f"their numbers are for --strategy {' or '.join(offered)} (e.g. `evals run {bench} --strategy "
            f"{offered[0]} ...`; `evals report RUN_DIR` sets a run beside them)")


def summary_notes(summary: Mapping[str, Any]) -> list[str]:
    """The lines printed under a run's summary table."""
    notes = []
    if no_metrics(summary):
        ran = int(summary.get("errored") or 0)
        return [f"no task completed ({ran} errored, {int(summary.get('tasks') or 0) - ran} not run): "
                "no metrics to show"]
    from ..report.tables import not_comparable

    note = not_comparable(summary)
    if note:
        notes.append(f"not comparable with the papers' numbers: {note}")
    try:
        hint = paper_hint(summary)
    except (OSError, ValueError, KeyError):  # a broken paper-numbers file must not hide the summary
        hint = None
    if hint:
        notes.append(hint)
    return notes
