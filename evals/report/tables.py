"""The report model: one :class:`Section` per benchmark, of :class:`Table` s, rendered by :mod:`.render`.

Runs are grouped by benchmark and set side by side, one column per run (``model · strategy``):

* the runs (counts, what the summary adds), the metric blocks (``metrics`` first, then the
  benchmark's other blocks), each value with its standard error and what it was computed over
  (the summary's ``metric_stats``), the settings, the model's and the judge's tokens and cost apart;
* one table per breakdown (``hops`` first);
* the papers' published numbers of each run's setting (every model's row, the run lined up under
  its model's), and, per run, the papers' rows for its model in other settings.

Labels, directions and order come from the benchmark's declared metrics (:mod:`.metrics`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .metrics import MAIN_BLOCK, metric_blocks, metric_order, metric_spec, paper_numbers_of
from .paper import (
    DATASET,
    STRATEGY,
    PaperRow,
    block_setting,
    describe_setting,
    first_table,
    model_keys_of,
    paper_rows_for,
    published_rows_for,
    setting_key,
)

__all__ = [
    "DASH", "Section", "Table", "build_sections", "caveat_kinds", "caveat_lines", "hop_series", "key_order", "main_metric", "not_comparable", "run_labels",
]

DASH = "–"
HOPS = "hops"  # the breakdown plotted and listed first
RUN_FIELDS = ("model", "strategy", "run_dir", "tasks", "completed", "errored")
NOT_RUN_FIELDS = frozenset({"benchmark"})  # the section's title


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list[str]]
    note: str | None = None
    bold: set[tuple[int, int]] = field(default_factory=set)  # (row, column) cells to emphasise
    bold_means: str = "best"  # the HTML class of those cells: "best" (value of the row) or "differ"
    self_rows: set[int] = field(default_factory=set)  # rows of a run among published rows (HTML class "self")


@dataclass
class Section:
    title: str
    tables: list[Table] = field(default_factory=list)
    plot: str | None = None  # key into the plots mapping (the benchmark)
    subsections: list[Section] = field(default_factory=list)
    text: list[str] = field(default_factory=list)


# ---- cells -------------------------------------------------------------------------------------------
def fmt(value: Any) -> str:
    if value is None:
        return DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Mapping | list | tuple):
        return json.dumps(value, sort_keys=True)
    return str(value)


def _with_stderr(value: Any, stats: Mapping[str, Any] | None) -> str:
    """``"48.00 ± 3.10"``: a value with its standard error where the summary has one, and the parts a derived
    value counted as 0 because they were not run (``missing``), as its official code counts them."""
    stats = stats or {}
    se = stats.get("stderr")
    if stats.get("value", value) != value:  # the statistics of another value (a hand-edited summary)
        se = None
    digits = stats.get("digits", 2)  # the decimals the official script prints (one, for some)
    if not isinstance(digits, int) or isinstance(digits, bool):
        digits = 2
    missing = stats.get("missing") if stats.get("value", value) == value else None
    note = f" (not run, counted as 0: {', '.join(map(str, missing))})" if isinstance(missing, list) and missing else ""
    if isinstance(value, float) and isinstance(se, int | float) and not isinstance(se, bool):
        return f"{value:.{digits}f} ± {se:.{digits + (digits < 2)}f}{note}"
    if isinstance(value, float):
        return f"{value:.{digits}f}{note}"
    return fmt(value) + note


def _over(stats: Mapping[str, Any] | None) -> str | None:
    """What a value was computed over: ``"10 tasks"``, ``"31 gold parameters (10 tasks)"``."""
    if not stats or "tasks" not in stats:
        return None
    over = str(stats.get("over") or "tasks")
    tasks = stats["tasks"]
    if over == "tasks":
        return f"{tasks} tasks"
    return f"{float(stats.get('samples') or 0):g} {over} ({tasks} tasks)"


def _stats_key(block: str, key: str) -> str:
    return key if block == MAIN_BLOCK else f"{block}.{key}"


def key_order(keys: Iterable[str]) -> list[str]:
    """Breakdown keys: numbers numerically ("2" before "10"), then the rest alphabetically."""
    def sort_key(k: str) -> tuple[int, float, str]:
        try:
            return (0, float(k), k)
        except ValueError:
            return (1, 0.0, k.lower())
    return sorted(dict.fromkeys(keys), key=sort_key)


def run_labels(summaries: Sequence[Mapping[str, Any]]) -> list[str]:
    """``model · strategy`` per run; repeated labels get their run directory's name."""
    base = [f"{s.get('model') or '?'} · {s.get('strategy') or '?'}" for s in summaries]
    labels = [f"{lab} ({Path(str(summaries[i].get('run_dir') or i)).name})" if base.count(lab) > 1 else lab
              for i, lab in enumerate(base)]
    if len(set(labels)) < len(labels):  # still repeated: number them
        labels = [f"{lab} [{i + 1}]" for i, lab in enumerate(labels)]
    return labels


def main_metric(benchmark: str, summaries: Iterable[Mapping[str, Any]] = ()) -> str | None:
    """The metric plotted by hop count: the benchmark's main one (its published numbers'), else the
    first declared percentage the hop breakdowns have, else the first number they have."""
    pn = paper_numbers_of(benchmark)
    if pn is not None:
        return pn.main_metric
    found = [key for s in summaries for row in ((s.get("breakdowns") or {}).get(HOPS) or {}).values()
             for key, value in row.items()
             if key != "tasks" and isinstance(value, int | float) and not isinstance(value, bool)]
    for key in metric_order(benchmark, found):
        if metric_spec(benchmark, key).percent:
            return key
    return found[0] if found else None


def _best_cells(benchmark: str, rows: list[list[Any]], keys: list[str], first: int,
                block: str = MAIN_BLOCK) -> set[tuple[int, int]]:
    """Cells holding the best value of their row (only with two runs or more, declared percentages)."""
    out: set[tuple[int, int]] = set()
    for i, (key, row) in enumerate(zip(keys, rows, strict=True)):
        spec = metric_spec(benchmark, key, block)
        if not spec.declared or not spec.percent:
            continue
        vals = [(j, v) for j, v in enumerate(row[first:], start=first) if isinstance(v, int | float) and not isinstance(v, bool)]
        if len(vals) < 2 or len({v for _, v in vals}) < 2:
            continue
        best = (max if spec.higher_is_better else min)(v for _, v in vals)
        out |= {(i, j) for j, v in vals if v == best}
    return out


# ---- the runs' own tables --------------------------------------------------------------------------------
def _block_title(block: str) -> str:
    return block.replace("_", " ").capitalize()


def _metric_table(bench: str, block: str, summaries: Sequence[Mapping[str, Any]], labels: list[str]) -> Table | None:
    dicts = [s.get(block) or {} for s in summaries]
    keys = metric_order(bench, (k for d in dicts for k in d), block)
    if not keys:
        return None
    stats = [[(s.get("metric_stats") or {}).get(_stats_key(block, k)) for s in summaries] for k in keys]
    raw = [[d.get(k) for d in dicts] for k in keys]
    bold = {(i, j + 1) for i, j in _best_cells(bench, raw, keys, 0, block)}
    specs = [metric_spec(bench, k, block) for k in keys]
    rows = [[spec.title()] + [_with_stderr(v, st) for v, st in zip(r, srow, strict=True)]
            for spec, r, srow in zip(specs, raw, stats, strict=True)]
    header = ["metric"] + labels
    has_stats = any(st for srow in stats for st in srow)
    if has_stats:
        header.append("over")
        for row, srow in zip(rows, stats, strict=True):
            overs = [_over(st) for st in srow]
            shown = [o for o in overs if o is not None]
            row.append(DASH if not shown else shown[0] if len(set(shown)) == 1 and len(shown) == len(overs)
                       else " / ".join(o or DASH for o in overs))
    percent = any(spec.percent for spec in specs)
    notes = []
    if percent:
        notes.append("Percentages" + (" ± their standard error" if has_stats else "")
                     + "; ↑ higher is better, ↓ lower is better; the best value of a row is in bold")
    if has_stats:
        notes.append("over: what each value was computed over (one sample per task unless another unit is "
                     "named; runs separated by /)")
    if block == MAIN_BLOCK:
        notes.append("a task without a completed episode counts as wrong where the benchmark scores it")
    return Table("Metrics" if block == MAIN_BLOCK else _block_title(block), header, rows,
                 note=("; ".join(notes) + ".") if notes else None, bold=bold)


def _runs_table(summaries: Sequence[Mapping[str, Any]], labels: list[str]) -> Table:
    names = {"run_dir": "run directory"}
    extra = [k for k in dict.fromkeys(k for s in summaries for k in s)
             if k not in RUN_FIELDS and k not in NOT_RUN_FIELDS and isinstance(_first_value(summaries, k), str | int | float | bool)]
    rows = [[names.get(key, key)] + [fmt(s.get(key)) for s in summaries] for key in (*RUN_FIELDS, *extra)]
    return Table("Runs", ["run"] + labels, rows)


def _first_value(summaries: Sequence[Mapping[str, Any]], key: str) -> Any:
    """The first value of ``key`` that is not None among the summaries."""
    return next((s[key] for s in summaries if s.get(key) is not None), None)


def _options_table(summaries: Sequence[Mapping[str, Any]], labels: list[str]) -> Table | None:
    opts = [s.get("options") or {} for s in summaries]
    keys = list(dict.fromkeys(k for o in opts for k in o))
    if not keys:
        return None
    rows = [[k] + [fmt(o.get(k)) if not isinstance(o.get(k), float) else repr(o[k]) for o in opts] for k in keys]
    differ = {(i, j) for i, r in enumerate(rows) if len(set(r[1:])) > 1 for j in range(1, len(r))}
    return Table("Settings", ["option"] + labels, rows,
                 note="Options the runs were made with; cells in bold differ between runs." if differ else None,
                 bold=differ, bold_means="differ")


_COST_ROWS = (
    ("model", "turns", "model turns"),
    ("model", "input_tokens", "model input tokens"),
    ("model", "output_tokens", "model output tokens"),
    ("model", "cost_usd", "model cost (USD)"),
    ("judge", "decisions", "judge decisions"),
    ("judge", "asked", "judge decisions asked now"),
    ("judge", "missing", "judge decisions missing"),
    ("judge", "input_tokens", "judge input tokens"),
    ("judge", "output_tokens", "judge output tokens"),
    ("judge", "cost_usd", "judge cost (USD)"),
)


def _cost_cell(key: str, value: Any, part: Mapping[str, Any]) -> str:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return DASH
    if key == "cost_usd":
        from ..core.scoring import cost_text

        return cost_text(part)
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _cost_table(summaries: Sequence[Mapping[str, Any]], labels: list[str]) -> Table | None:
    totals = [s.get("totals") or {} for s in summaries]
    rows = []
    for part, key, name in _COST_ROWS:
        values = [(t.get(part) or {}).get(key) for t in totals]
        if any(v is not None for v in values):
            rows.append([name] + [_cost_cell(key, v, t.get(part) or {}) for v, t in zip(values, totals, strict=True)])
    if not rows:
        return None
    return Table("Tokens and cost", ["", *labels], rows,
                 note="The model's own calls, and apart from them the judge's (the LLM matcher, asked while scoring; "
                      "decisions stored by an earlier scoring are reused at no cost).")


def _breakdown_tables(bench: str, summaries: Sequence[Mapping[str, Any]], labels: list[str]) -> list[Table]:
    bds = [s.get("breakdowns") or {} for s in summaries]
    names = list(dict.fromkeys(n for b in bds for n in b))
    names.sort(key=lambda n: (n != HOPS,))
    tables = []
    for name in names:
        per_run = [b.get(name) or {} for b in bds]
        keys = key_order(k for d in per_run for k in d)
        metrics = metric_order(bench, (m for d in per_run for row in d.values() for m in row if m != "tasks"))
        counts = [[(d.get(k) or {}).get("tasks") for d in per_run] for k in keys]
        one_count = all(len({c for c in row if c is not None}) <= 1 for row in counts)
        multi = len(summaries) > 1
        header = [name] + (["tasks"] if one_count else [f"tasks · {lab}" for lab in labels])
        for m in metrics:
            title = metric_spec(bench, m).title()
            header += [f"{title} · {lab}" for lab in labels] if multi else [title]
        rows: list[list[str]] = []
        bold: set[tuple[int, int]] = set()
        for i, k in enumerate(keys):
            cnt = counts[i]
            row = [k] + ([fmt(next((c for c in cnt if c is not None), None))] if one_count else [fmt(c) for c in cnt])
            for m in metrics:
                vals = [(d.get(k) or {}).get(m) for d in per_run]
                start = len(row)
                bold |= {(i, start + j) for _, j in _best_cells(bench, [vals], [m], 0)}
                row += [fmt(v) for v in vals]
            rows.append(row)
        tables.append(Table(f"By {name}", header, rows, note="Percent of the tasks in each group." if metrics else None, bold=bold))
    return tables


# ---- the published numbers -------------------------------------------------------------------------------
def not_comparable(run: Mapping[str, Any]) -> str | None:
    """``"N of M tasks: not comparable"`` for a run over part of its benchmark (or of the tasks it
    selected: a partial run); None for a run over every task."""
    notes = []
    if run.get("partial"):
        notes.append(f"partial: {run.get('tasks_ran')} of {run.get('tasks')} tasks ran: not comparable")
    total = run.get("benchmark_tasks")
    n = run.get("tasks")
    if isinstance(total, int) and isinstance(n, int) and n < total:
        notes.append(f"{n} of {total} tasks: not comparable")
    if run.get("full_set") is False or (run.get("dataset_note") and not notes):
        notes.append(str(run.get("dataset_note") or "not the paper's full set: not comparable"))
    return "; ".join(notes) or None



def caveat_lines(run: Mapping[str, Any]) -> list[str]:
    """One line per entry of the run's ``anomalies`` (:mod:`evals.core.anomalies`): what was unusual,
    how many records, how it was counted, what the official code does, where."""
    out = []
    for a in run.get("anomalies") or []:
        if not isinstance(a, Mapping):
            continue
        parts = [f"{a.get('kind') or 'warning'} ({a.get('source') or '?'}"
                 + (f", {a['count']} affected" if isinstance(a.get("count"), int) else "") + f"): {a.get('message') or ''}"]
        if a.get("counted_as"):
            parts.append(f"counted as: {a['counted_as']}")
        if a.get("official"):
            parts.append(f"official code: {a['official']}")
        where = [str(w) for w in a.get("where") or []]
        if where:
            more = a["count"] - len(where) if isinstance(a.get("count"), int) and a["count"] > len(where) else 0
            parts.append("at: " + ", ".join(where) + (f" and {more} more" if more else ""))
        out.append(" ".join("; ".join(parts).split()))
    return out


def caveat_kinds(run: Mapping[str, Any]) -> str:
    """``" [caveats: repeated_id, not_run]"`` for a run with anomalies, else ``""``."""
    kinds = list(dict.fromkeys(str(a.get("kind") or "warning") for a in run.get("anomalies") or [] if isinstance(a, Mapping)))
    return f" [caveats: {', '.join(kinds)}]" if kinds else ""


def _caveats_section(runs: Sequence[Mapping[str, Any]], labels: Sequence[str]) -> Section | None:
    """``Caveats``: each run's anomalies, one paragraph each; None when no run has any."""
    text = [f"`{lab}`: {line}" for run, lab in zip(runs, labels, strict=True) for line in caveat_lines(run)]
    if not text:
        return None
    return Section("Caveats", text=["What was unusual in these runs and imports, and how it was counted "
                                    "(the summary's anomalies):", *text])


def _group_key(row: PaperRow, model_keys: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """Rows of one published block that go in one table: the same setting, dataset and model keys aside."""
    return tuple(sorted((k, str(v)) for k, v in row.setting.items() if k != DATASET and k not in model_keys))


def _sources(rows: Sequence[PaperRow]) -> str:
    """``"Paper Tables 3, 6"``: the papers and table numbers the rows come from."""
    out = []
    for paper in dict.fromkeys(r.paper for r in rows):
        nums = sorted({t for r in rows if r.paper == paper for t in (r.tables or (r.table,)) if t is not None})
        labels = list(dict.fromkeys(r.label for r in rows if r.paper == paper and r.table is None and r.label))
        parts = ([("Table " if len(nums) == 1 else "Tables ") + ", ".join(map(str, nums))] if nums else []) + labels
        out.append(f"{paper} {' · '.join(parts) or 'table'}")
    return "; ".join(out)


def _captions(rows: Sequence[PaperRow], all_rows: Sequence[PaperRow]) -> list[str]:
    """``"Paper Table 3: <caption>"`` for each table the rows come from, in table order."""
    wanted = {(r.paper, t) for r in rows for t in (r.tables or (r.table,))}
    labels = {(r.paper, r.label) for r in rows if r.table is None}
    out: dict[str, None] = {}
    for r in sorted(all_rows, key=first_table):
        if r.table is not None and (r.paper, r.table) in wanted:
            out[f"{r.paper} Table {r.table}: {r.caption}"] = None
        elif r.table is None and (r.paper, r.label) in labels:
            out[f"{r.paper} {r.label or 'table'}: {r.caption}"] = None
    return list(out)


def _run_cell(run: Mapping[str, Any], key: str) -> str:
    return _with_stderr((run.get(MAIN_BLOCK) or {}).get(key), (run.get("metric_stats") or {}).get(key))


def _published_section(runs: Sequence[Mapping[str, Any]], labels: Sequence[str], paper_rows: Sequence[PaperRow]) -> Section:
    """The papers' rows of these runs' dataset and setting (every model), each run beside its model's row.

    ``runs`` share a :func:`~.paper.setting_key`. One table per group of rows (:func:`_group_key`,
    e.g. the steps of a two-step method), with the source table numbers in the first column.
    """
    first = runs[0]
    bench = str(first.get("benchmark"))
    rows = published_rows_for(first, paper_rows)
    sec = Section(f"Published numbers: {bench} · {block_setting(first, rows)}")
    who = ", ".join(f"`{lab}`" for lab in labels)
    if not rows:
        offered = sorted({str(r.setting[STRATEGY]) for r in paper_rows
                          if r.setting.get(DATASET) == bench and r.setting.get(STRATEGY)})
        sec.text.append(f"The papers publish no numbers for {bench} in the setting of {who}"
                        + (f"; their settings for {bench} are the strategies {', '.join(offered)}." if offered
                           else f"; no published numbers are recorded for {bench}."))
        return sec
    model_keys = model_keys_of(first)
    groups: dict[tuple[tuple[str, str], ...], list[PaperRow]] = {}
    for r in rows:
        groups.setdefault(_group_key(r, model_keys), []).append(r)
    lined: set[int] = set()
    for gkey, grows in groups.items():
        keys = metric_order(bench, (k for r in grows for k in r.metrics))
        header = ["source", "model"] + [metric_spec(bench, k).title() for k in keys]
        body: list[list[str]] = []
        self_rows: set[int] = set()
        for r in grows:
            body.append([r.source, r.model] + [fmt(r.metrics.get(k)) for k in keys])
            for i, run in enumerate(runs):
                if r.matches_model(str(run.get("model") or "")):
                    lined.add(i)
                    why = not_comparable(run)
                    if why is None:  # in bold only when it is comparable
                        self_rows.add(len(body))
                    body.append([f"this run: {labels[i]}" + (f" ({why})" if why else "") + caveat_kinds(run),
                                 str(run.get("model"))]
                                + [_run_cell(run, k) for k in keys])
        title = f"Published numbers ({_sources(grows)}), {bench} · {describe_setting(dict(gkey))}"
        note = ("As published" + ("; rows in bold are this report's runs (their metrics), each under the row of its model. "
                                  if self_rows else ". ") + " ".join(f"{c}." for c in _captions(grows, paper_rows)))
        sec.tables.append(Table(title, header, body, note=note, bold={(i, j) for i in self_rows for j in range(len(header))},
                                self_rows=self_rows))
    for i in sorted(lined):  # never a run's number beside a paper's row without its caveats
        sec.text += [f"Caveat of `{labels[i]}`: {line}" for line in caveat_lines(runs[i])]
    alone = [lab for i, lab in enumerate(labels) if i not in lined]
    if alone:
        sec.text.append(f"No published row of this setting is for the model of {', '.join(f'`{a}`' for a in alone)}: "
                        "the papers' rows are shown for reference, without the run beside them.")
    extra = [(r, k, v) for r in rows for k, v in r.extra.items()]
    if extra:
        sec.text.append("Other published values: " + "; ".join(f"{r.source} {r.model}: {k} = {v:.2f}" for r, k, v in extra) + ".")
    return sec


def _other_settings_section(summary: Mapping[str, Any], label: str, paper_rows: Sequence[PaperRow]) -> Section | None:
    """The papers' rows for this run's model and dataset in *other* settings; None when there are none."""
    pairs = [(r, same) for r, same in paper_rows_for(summary, paper_rows) if not same]
    if not pairs:
        return None
    bench = str(summary.get("benchmark"))
    sec = Section(f"Published numbers for the model of {label} in other settings")
    keys = metric_order(bench, list((summary.get(MAIN_BLOCK) or {}).keys()) + [k for r, _ in pairs for k in r.metrics])
    header = ["source", "model", "setting"] + [metric_spec(bench, k).title() for k in keys]
    why = not_comparable(summary)
    rows = [["this run" + (f" ({why})" if why else "") + caveat_kinds(summary), str(summary.get("model")),
             str(summary.get(STRATEGY) or DASH)]
            + [_run_cell(summary, k) for k in keys]]
    for r, _ in pairs:
        rows.append([r.source, r.model, describe_setting(r.setting)] + [fmt(r.metrics.get(k)) for k in keys])
    notes = _captions([r for r, _ in pairs], paper_rows)
    sec.tables.append(Table(f"{label}: the papers' numbers for the same model on {bench}, other settings",
                            header, rows, note="Not comparable to the run as they stand: another strategy or setting. "
                            + " ".join(f"{n}." for n in notes),
                            bold={(0, j) for j in range(len(header))}, self_rows={0}))
    sec.text += [f"Caveat of `{label}`: {line}" for line in caveat_lines(summary)]
    extra = [(r, k, v) for r, _ in pairs for k, v in r.extra.items()]
    if extra:
        sec.text.append("Other published values: " + "; ".join(
            f"{r.source} {r.model} ({describe_setting(r.setting)}): {k} = {v:.2f}" for r, k, v in extra) + ".")
    return sec


# ---- sections --------------------------------------------------------------------------------------------
def hop_series(runs: Sequence[Mapping[str, Any]], metric: str) -> list[tuple[int, list[tuple[str, float]]]]:
    """Per run (by index), its (hop, value) points for ``metric``; runs without any are left out."""
    out = []
    for i, s in enumerate(runs):
        hops = (s.get("breakdowns") or {}).get(HOPS) or {}
        pts = [(k, float(hops[k][metric])) for k in key_order(hops)
               if isinstance((hops[k] or {}).get(metric), int | float)]
        if pts:
            out.append((i, pts))
    return out


def build_sections(summaries: Sequence[Mapping[str, Any]], paper_rows: Sequence[PaperRow] = ()) -> list[Section]:
    """One section per benchmark, its runs side by side."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for s in summaries:
        groups.setdefault(str(s.get("benchmark") or "unknown benchmark"), []).append(s)
    sections = []
    for bench, runs in groups.items():
        labels = run_labels(runs)
        sec = Section(bench)
        sec.tables.append(_runs_table(runs, labels))
        for block in metric_blocks(bench, runs):
            t = _metric_table(bench, block, runs, labels)
            if t is not None:
                sec.tables.append(t)
        for t in (_options_table(runs, labels), _cost_table(runs, labels)):
            if t is not None:
                sec.tables.append(t)
        metric = main_metric(bench, runs)
        if metric and hop_series(runs, metric):
            sec.plot = bench
        sec.tables.extend(_breakdown_tables(bench, runs, labels))
        caveats = _caveats_section(runs, labels)
        if caveats is not None:
            sec.subsections.append(caveats)
        blocks: dict[tuple[str, ...], list[int]] = {}
        for i, s in enumerate(runs):
            blocks.setdefault(setting_key(s), []).append(i)
        for idx in blocks.values():
            sec.subsections.append(_published_section([runs[i] for i in idx], [labels[i] for i in idx], paper_rows))
        for s, lab in zip(runs, labels, strict=True):
            other = _other_settings_section(s, lab, paper_rows)
            if other is not None:
                sec.subsections.append(other)
        sections.append(sec)
    return sections
