"""What a run's summary must say beside its numbers, so that they never mislead.

* a run over part of the benchmark (``--limit``, ``--task-ids``, ``--sample``, or a data set
  smaller than the paper's): "N of M tasks: not comparable";
* a partial run (stopped before every selected task ran): its numbers are over the tasks that ran;
* a run in which no task completed: no metrics at all (not a table of zeros);
* a run whose setting has no published numbers: the strategy that reproduces the papers' setting;
* a derived metric that counts parts not run as 0 (as its official code does): those parts.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = ["no_metrics", "paper_hint", "print_summary", "print_warnings", "summary_notes", "summary_table"]


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
    for key, st in (summary.get("metric_stats") or {}).items():
        if isinstance(st, Mapping) and st.get("missing"):
            notes.append(f"{key}: not run, counted as 0 as the official code counts them: {', '.join(st['missing'])}")
    try:
        hint = paper_hint(summary)
    except (OSError, ValueError, KeyError):  # a broken paper-numbers file must not hide the summary
        hint = None
    if hint:
        notes.append(hint)
    return notes


def summary_table(summary: Mapping[str, Any]) -> Table:
    """The summary of a run as a table: counts, then every metric with its standard error (none when no
    task completed; :func:`print_summary` says why, and what makes the numbers not comparable)."""
    partial = " · partial" if summary.get("partial") else ""
    table = Table(title=f"{summary.get('benchmark')} · {summary.get('model')} · {summary.get('strategy')}{partial}",
                  )
    table.add_column("")
    table.add_column("value", justify="right")
    table.add_column("± s.e.", justify="right")
    table.add_column("over", justify="right")
    for key in ("tasks", "completed", "errored"):
        table.add_row(key, str(summary[key]), "", "")
    if summary.get("partial") and not no_metrics(summary):
        table.add_row("metrics over (tasks that ran)", str(summary.get("tasks_ran")), "", "")
    stats = summary.get("metric_stats") or {}
    for key, value in ({} if no_metrics(summary) else summary["metrics"]).items():
        st = stats.get(key) or {}
        se = st.get("stderr")
        over = ""
        if "tasks" in st:
            n = st["samples"] if st.get("over", "tasks") != "tasks" else st["tasks"]
            over = f"{n:g} {st.get('over', 'tasks')}"
        if isinstance(value, float):  # with the decimals the metric is rounded to (the official script's)
            digits = int(st.get("digits", 2))
            table.add_row(f"{key} (%)", f"{value:.{digits}f}", "" if se is None else f"{se:.{max(digits, 2)}f}", over)
        else:
            table.add_row(key, str(value), "", over)
    judge = (summary.get("totals") or {}).get("judge") or {}
    if judge.get("decisions") or judge.get("missing"):
        from ..core.scoring import cost_text

        table.add_row("judge decisions (asked now)", f"{judge['decisions']} ({judge['asked']})", "", "")
        table.add_row("judge cost USD", cost_text(judge), "", "")
        if judge.get("missing"):
            table.add_row("[yellow]judge decisions missing[/] (pass --judge)", str(judge["missing"]), "", "")
    return table


def print_summary(out: Console, summary: Mapping[str, Any], table: Table | None = None) -> None:
    """The summary table (``table``, else :func:`summary_table`'s), then the lines saying what makes its
    numbers not comparable with a paper's, or why there are none (:func:`summary_notes`)."""
    out.print(table if table is not None else summary_table(summary))
    for line in summary_notes(summary):
        out.print(line, markup=False, highlight=False, soft_wrap=True)


def print_warnings(summary: dict[str, Any]) -> None:
    """The summary's warnings (counts that must not pass unnoticed, e.g. unreadable judge outputs;
    what an import found), one plain line each on stderr."""
    for line in summary.get("warnings") or ():
        print(f"warning: {line}", file=sys.stderr, flush=True)
