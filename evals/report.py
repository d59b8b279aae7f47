"""``evals report RUN_DIR [RUN_DIR ...]``: a Markdown and a self-contained HTML report of runs.

The report is built from run *summaries* (the dicts :func:`evals.pipeline.summarize` returns, the
same object ``evals score --json`` prints), so it works for any benchmark: whatever metric keys and
breakdowns a summary carries are shown. Runs are grouped by benchmark and set side by side, one
column per run (``model · strategy``):

* the runs (counts, the run's settings), the metric tables (the full matcher cascade and, where the
  summary has them, the rule-only ``strict_metrics``), the matcher counts;
* one table per breakdown (``hops``, ``speaker``, ``tool``, ``domain``, ...);
* a plot of the benchmark's main metric by hop count, one line per run (inline SVG in the HTML; an
  ``.svg`` file next to the Markdown);
* the papers' published numbers (``evals/paper_numbers/*.yaml``, each row with its source table
  number) in blocks of their own, one per dataset and setting the runs were made in: every model's
  row of that setting, whatever the runs' models, and each run lined up under the row of its model
  (same columns) when the papers have one (:func:`published_rows_for`);
* per run, the papers' rows for the same model in other settings, for reference.

A paper row is of a run's *setting* (:func:`in_run_setting`; :func:`same_setting` when the model is
the run's too) when the strategy agrees (the run's ``mode``
option where it has one; ``forced`` and ``mandatory`` are one) and none of the setting keys the run
states disagrees. A run states them in its summary's ``options`` under the names in
:data:`OPTION_NAMES` (FamilyTool: ``kg_search: retrieval`` for the paper's Relation Retrieval,
``kg_model`` for its cross-LLM table; ToolHop: ``feedback``); a key a run does not state takes
:data:`DEFAULT_SETTING`. The run's model name (:func:`normalize_model`, the files' ``model_aliases``)
only decides where a run is lined up, never whether the published block is shown.

Rendering takes summary dicts (:func:`render_markdown`, :func:`render_html`); :func:`write_report`
reads the run directories and writes the files; :func:`add_report_parser` adds the subcommand.
"""

from __future__ import annotations

import argparse
import dataclasses
import html
import io
import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = [
    "METRICS",
    "PaperRow",
    "add_report_parser",
    "hop_plot_svg",
    "load_paper_numbers",
    "main_metric",
    "normalize_model",
    "paper_rows_for",
    "published_rows_for",
    "render_html",
    "render_markdown",
    "write_report",
]

PAPER_NUMBERS_DIR = Path(__file__).resolve().parent / "paper_numbers"

# ---- metrics ------------------------------------------------------------------------------------
# key -> (label, higher is better); the order is the order of the tables. Unknown keys are shown too,
# after these, with their key as label.
METRICS: dict[str, tuple[str, bool]] = {
    "tool_em": ("Tool use EM", True),
    "tool_acc": ("Tool Acc.", True),
    "value_acc": ("Value Acc.", True),
    "kg_em": ("KG extraction EM", True),
    "kg_f1": ("KG extraction F1", True),
    "kg_no_hallucination": ("KG No-Hallucination", True),
    "kg_coverage": ("KG Coverage", True),
    "kg_format_error": ("KG Format Error", False),
    "answer_accuracy": ("Answer accuracy", True),
    "tool_hallucination": ("Tool hallucination", False),
    "param_hallucination": ("Parameter hallucination", False),
    "param_omission": ("Parameter omission", False),
    "query_error_rate": ("Query error rate", False),
    "instance_error_rate": ("Instance error rate", False),
    "tasks_with_gold_chain": ("Tasks with a gold chain, count", True),
}
COUNT_METRICS = frozenset({"tasks_with_gold_chain"})  # counts, not percentages: never "best"

# the metric plotted by hop count, by benchmark family (the name up to its first "-")
MAIN_METRIC = {"familytool": "tool_em", "toolhop": "answer_accuracy"}

# ---- paper settings ---------------------------------------------------------------------------------
# setting key of a paper row -> option names a run summary may state it under
OPTION_NAMES: dict[str, tuple[str, ...]] = {
    "strategy": ("mode",),  # ToolHop: "forced-minimal" runs mode "forced" with feedback "minimal"
    "path_extraction": ("kg_search", "path_extraction"),
    "kg_model": ("kg_model",),
    "feedback": ("feedback",),
    "kg_values": ("kg_values",),
}
# what a run that does not state a setting key is taken to have run with
DEFAULT_SETTING = {"path_extraction": "greedy", "feedback": "detailed", "kg_values": "placeholders"}
VALUE_SYNONYMS = {"mandatory": "forced", "required": "forced", "gs": "greedy", "rr": "retrieval"}
PROVIDER_PREFIXES = frozenset({"openai", "anthropic", "vllm", "oracle"})
DASH = "–"


def _canon(value: Any) -> str:
    s = str(value).strip().lower()
    return VALUE_SYNONYMS.get(s, s)


def normalize_model(name: str) -> str:
    """``"openai:gpt-4o"`` -> ``"gpt-4o"``, ``"vllm:Qwen/Qwen2.5-7B-Instruct"`` -> ``"qwen2.5-7b-instruct"``.

    Drops a provider prefix, then any organisation or directory part, and lowercases.
    """
    s = str(name).strip()
    head, sep, rest = s.partition(":")
    if sep and head.strip().lower() in _providers():
        s = rest.strip()
    s = s.rstrip("/").rsplit("/", 1)[-1]
    return s.lower()


def _providers() -> frozenset[str]:
    try:
        from client.adapters import known_prefixes

        return PROVIDER_PREFIXES | frozenset(known_prefixes())
    except Exception:  # pragma: no cover - the report works without the client package
        return PROVIDER_PREFIXES


def main_metric(benchmark: str, summaries: Iterable[Mapping[str, Any]] = ()) -> str | None:
    """The metric plotted by hop count: the benchmark's main one, else the first one the hop breakdowns have."""
    family = str(benchmark).split("-", 1)[0].lower()
    if family in MAIN_METRIC:
        return MAIN_METRIC[family]
    for s in summaries:
        for row in ((s.get("breakdowns") or {}).get("hops") or {}).values():
            for key, value in row.items():
                if key != "tasks" and isinstance(value, int | float) and not isinstance(value, bool):
                    return key
    return None


# ---- paper numbers ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PaperRow:
    """One published result: a model, in a setting, from a numbered table of a paper."""

    paper: str
    citation: str
    table: int | None
    caption: str
    model: str
    setting: dict[str, Any]
    metrics: dict[str, float]
    label: str | None = None  # a short name for a table the source gives no number
    aliases: frozenset[str] = frozenset()
    extra: dict[str, float] = field(default_factory=dict)
    note: str | None = None
    aggregate: bool = False
    kg_model_aliases: frozenset[str] = frozenset()  # names of the step-1 model of a cross-LLM row
    tables: tuple[int | None, ...] = ()  # after merging: every table the same numbers appear in

    @property
    def source(self) -> str:
        nums = [t for t in (self.tables or (self.table,)) if t is not None]
        if not nums:
            return f"{self.paper} {self.label or 'table'}"
        word = "Table" if len(nums) == 1 else "Tables"
        return f"{self.paper} {word} {', '.join(str(n) for n in nums)}"

    def matches_model(self, model: str) -> bool:
        return not self.aggregate and normalize_model(model) in self.aliases

    def to_dict(self) -> dict[str, Any]:
        return {
            "paper": self.paper, "table": self.table, "tables": list(self.tables or (self.table,)),
            "caption": self.caption, "model": self.model, "setting": self.setting,
            "metrics": self.metrics, "extra": self.extra, "note": self.note,
        }


def load_paper_numbers(directory: str | Path | None = None) -> list[PaperRow]:
    """Every row of every ``*.yaml`` paper-numbers file, flattened (table setting + row setting)."""
    import yaml

    rows: list[PaperRow] = []
    for path in sorted(Path(directory or PAPER_NUMBERS_DIR).glob("*.yaml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        aliases: dict[str, set[str]] = {}
        for name, names in (doc.get("model_aliases") or {}).items():
            aliases.setdefault(str(name).lower(), set()).update(normalize_model(n) for n in names or ())
        for table in doc.get("tables") or ():
            base = dict(table.get("setting") or {})
            for r in table.get("rows") or ():
                model = str(r["model"])
                setting = {**base, **(r.get("setting") or {})}
                if "kg_model" in setting and str(setting["kg_model"]).lower() == model.lower():
                    del setting["kg_model"]  # the same LLM in both steps: the plain setting
                rows.append(PaperRow(
                    paper=str(doc.get("paper") or path.stem),
                    citation=str(doc.get("citation") or ""),
                    table=table.get("table"),
                    caption=str(table.get("caption") or ""),
                    label=table.get("label"),
                    model=model,
                    setting=setting,
                    metrics={k: float(v) for k, v in (r.get("metrics") or {}).items()},
                    aliases=_names(model, aliases),
                    extra={k: float(v) for k, v in (r.get("extra") or {}).items()},
                    note=r.get("note") or table.get("note"),
                    aggregate=bool(r.get("aggregate", False)),
                    kg_model_aliases=_names(setting.get("kg_model"), aliases),
                    tables=(table.get("table"),),
                ))
    return rows


def _names(model: Any, aliases: Mapping[str, set[str]]) -> frozenset[str]:
    if model is None:
        return frozenset()
    return frozenset({normalize_model(str(model))} | aliases.get(str(model).lower(), set()))


def _run_setting(summary: Mapping[str, Any], key: str) -> Any:
    options = summary.get("options") or {}
    for name in OPTION_NAMES.get(key, (key,)):
        if options.get(name) is not None:
            return options[name]
    return None


def same_setting(row: PaperRow, summary: Mapping[str, Any]) -> bool:
    """Whether a paper row was obtained the way this run was (see the module docstring)."""
    strategy = _run_setting(summary, "strategy") or summary.get("strategy")
    if row.setting.get("strategy") is None or strategy is None:
        return False
    if _canon(row.setting["strategy"]) != _canon(strategy):
        return False
    run_kg_model = _run_setting(summary, "kg_model")
    if "kg_model" in row.setting:
        if run_kg_model is None or normalize_model(run_kg_model) not in row.kg_model_aliases:
            return False
    elif run_kg_model is not None and normalize_model(run_kg_model) != normalize_model(str(summary.get("model", ""))):
        return False
    for key in ("path_extraction", "feedback", "kg_values"):
        if key not in row.setting:
            continue
        ran = _run_setting(summary, key)
        ran = DEFAULT_SETTING.get(key) if ran is None else ran
        if ran is not None and _canon(ran) != _canon(row.setting[key]):
            return False
    return True


def paper_rows_for(summary: Mapping[str, Any], rows: Sequence[PaperRow]) -> list[tuple[PaperRow, bool]]:
    """The paper rows for this run's model and dataset, merged across tables, same setting first.

    Returns ``(row, same_setting)`` pairs; rows that repeat numbers of another table (same model,
    setting and values) are merged into one whose ``tables`` name both.
    """
    model = str(summary.get("model") or "")
    dataset = summary.get("benchmark")
    merged = _merge([r for r in rows if r.setting.get("dataset") == dataset and r.matches_model(model)])
    pairs = [(r, same_setting(r, summary)) for r in merged]
    pairs.sort(key=lambda p: (not p[1], _first_table(p[0])))
    return pairs


def _run_kg_model(summary: Mapping[str, Any]) -> str | None:
    """The run's step-1 model, normalised; None when it is the run's own model or not stated."""
    kg_model = _run_setting(summary, "kg_model")
    if kg_model is None or normalize_model(kg_model) == normalize_model(str(summary.get("model") or "")):
        return None
    return normalize_model(kg_model)


def in_run_setting(row: PaperRow, summary: Mapping[str, Any]) -> bool:
    """Whether a paper row, of *any* model, was obtained in this run's setting (dataset aside).

    As :func:`same_setting`, but model-blind: a run whose step 1 is another model (``kg_model``)
    takes the cross-LLM rows of that step-1 model, and the plain rows of the step-1 model itself
    (the same LLM in both steps).
    """
    strategy = _run_setting(summary, "strategy") or summary.get("strategy")
    if row.setting.get("strategy") is None or strategy is None:
        return False
    if _canon(row.setting["strategy"]) != _canon(strategy):
        return False
    kg_model = _run_kg_model(summary)
    if "kg_model" in row.setting:
        if kg_model is None or kg_model not in row.kg_model_aliases:
            return False
    elif kg_model is not None and kg_model not in row.aliases:
        return False
    for key in ("path_extraction", "feedback", "kg_values"):
        if key not in row.setting:
            continue
        ran = _run_setting(summary, key)
        ran = DEFAULT_SETTING.get(key) if ran is None else ran
        if ran is not None and _canon(ran) != _canon(row.setting[key]):
            return False
    return True


def published_rows_for(summary: Mapping[str, Any], rows: Sequence[PaperRow]) -> list[PaperRow]:
    """Every paper row of this run's dataset and setting, whatever its model (averages too).

    Rows that repeat numbers of another table are merged as in :func:`paper_rows_for`; ordered by
    their first table, then as the paper-numbers files list them.
    """
    dataset = summary.get("benchmark")
    merged = _merge([r for r in rows if r.setting.get("dataset") == dataset and in_run_setting(r, summary)])
    return sorted(merged, key=_first_table)


def setting_key(summary: Mapping[str, Any]) -> tuple[str, ...]:
    """What decides :func:`published_rows_for`: runs with the same key are shown with the same rows."""
    key = [str(summary.get("benchmark")), _canon(_run_setting(summary, "strategy") or summary.get("strategy") or "")]
    for name in ("path_extraction", "feedback", "kg_values"):
        ran = _run_setting(summary, name)
        ran = DEFAULT_SETTING.get(name) if ran is None else ran
        key.append(_canon(ran) if ran is not None else "")
    key.append(_run_kg_model(summary) or "")
    return tuple(key)


def _merge(mine: Sequence[PaperRow]) -> list[PaperRow]:
    """Rows of the same model and setting whose numbers repeat another table's, merged into one."""
    merged: list[PaperRow] = []
    for r in mine:
        for i, m in enumerate(merged):
            if m.model.lower() == r.model.lower() and m.setting == r.setting and _repeats(m.metrics, r.metrics) \
                    and _compatible(m.extra, r.extra):
                merged[i] = dataclasses.replace(
                    m, metrics={**m.metrics, **r.metrics}, extra={**m.extra, **r.extra}, note=m.note or r.note,
                    tables=tuple(dict.fromkeys(m.tables + r.tables)),
                )
                break
        else:
            merged.append(r)
    return merged


def _first_table(row: PaperRow) -> int:
    return min((t for t in row.tables if t is not None), default=10**6)


def _compatible(a: Mapping[str, float], b: Mapping[str, float]) -> bool:
    return all(a[k] == b[k] for k in a.keys() & b.keys())


def _repeats(a: Mapping[str, float], b: Mapping[str, float]) -> bool:
    """Two rows report the same measurement: they share a metric, and every shared one is equal."""
    return bool(a.keys() & b.keys()) and _compatible(a, b)


def describe_setting(setting: Mapping[str, Any]) -> str:
    parts = [str(setting["strategy"])] if setting.get("strategy") else ["strategy not stated"]
    parts += [f"{k}={v}" for k, v in setting.items() if k not in ("dataset", "strategy")]
    return " · ".join(parts)


# ---- the report model: sections of tables, rendered as Markdown or HTML -----------------------------
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


def _fmt(value: Any) -> str:
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


def _label(key: str) -> str:
    label, higher = METRICS.get(key, (key, True))
    arrow = "" if key in COUNT_METRICS or key not in METRICS else (" ↑" if higher else " ↓")
    return f"{label}{arrow}" if label == key else f"{label}{arrow} ({key})"


def _metric_order(keys: Iterable[str]) -> list[str]:
    seen = list(dict.fromkeys(keys))
    return [k for k in METRICS if k in seen] + [k for k in seen if k not in METRICS]


def _key_order(keys: Iterable[str]) -> list[str]:
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


def _best_cells(rows: list[list[Any]], keys: list[str], first: int) -> set[tuple[int, int]]:
    """Cells holding the best value of their row (only with two runs or more, known percentages)."""
    out: set[tuple[int, int]] = set()
    for i, (key, row) in enumerate(zip(keys, rows, strict=True)):
        if key not in METRICS or key in COUNT_METRICS:
            continue
        vals = [(j, v) for j, v in enumerate(row[first:], start=first) if isinstance(v, int | float) and not isinstance(v, bool)]
        if len(vals) < 2 or len({v for _, v in vals}) < 2:
            continue
        best = (max if METRICS[key][1] else min)(v for _, v in vals)
        out |= {(i, j) for j, v in vals if v == best}
    return out


def _metric_table(title: str, summaries: Sequence[Mapping[str, Any]], labels: list[str], field_name: str,
                  note: str | None) -> Table | None:
    dicts = [s.get(field_name) or {} for s in summaries]
    keys = _metric_order(k for d in dicts for k in d)
    if not keys:
        return None
    raw = [[d.get(k) for d in dicts] for k in keys]
    bold = {(i, j + 1) for i, j in _best_cells(raw, keys, 0)}
    rows = [[_label(k)] + [_fmt(v) for v in r] for k, r in zip(keys, raw, strict=True)]
    return Table(title, ["metric"] + labels, rows, note=note, bold=bold)


def _runs_table(summaries: Sequence[Mapping[str, Any]], labels: list[str]) -> Table:
    fields = [("model", "model"), ("strategy", "strategy"), ("run directory", "run_dir"),
              ("tasks", "tasks"), ("completed", "completed"), ("errored", "errored")]
    rows = [[name] + [_fmt(s.get(key)) for s in summaries] for name, key in fields]
    return Table("Runs", ["run"] + labels, rows)


def _options_table(summaries: Sequence[Mapping[str, Any]], labels: list[str]) -> Table | None:
    opts = [s.get("options") or {} for s in summaries]
    keys = list(dict.fromkeys(k for o in opts for k in o))
    if not keys:
        return None
    rows = [[k] + [_fmt(o.get(k)) if not isinstance(o.get(k), float) else repr(o[k]) for o in opts] for k in keys]
    differ = {(i, j) for i, r in enumerate(rows) if len(set(r[1:])) > 1 for j in range(1, len(r))}
    return Table("Settings", ["option"] + labels, rows, note="Options the runs were made with; cells in bold differ between runs." if differ else None, bold=differ,
                 bold_means="differ")


def _matchers_table(summaries: Sequence[Mapping[str, Any]], labels: list[str]) -> Table | None:
    ms = [s.get("matchers") or {} for s in summaries]
    keys = list(dict.fromkeys(k for m in ms for k in m))
    if not keys:
        return None
    rows = [[k] + [_fmt(m.get(k)) for m in ms] for k in keys]
    return Table("Matchers", ["matcher"] + labels, rows, note="How many predicted calls each matcher of the cascade accepted.")


def _breakdown_tables(summaries: Sequence[Mapping[str, Any]], labels: list[str]) -> list[Table]:
    bds = [s.get("breakdowns") or {} for s in summaries]
    names = list(dict.fromkeys(n for b in bds for n in b))
    names.sort(key=lambda n: (n != "hops",))
    tables = []
    for name in names:
        per_run = [b.get(name) or {} for b in bds]
        keys = _key_order(k for d in per_run for k in d)
        metrics = _metric_order(m for d in per_run for row in d.values() for m in row if m != "tasks")
        counts = [[(d.get(k) or {}).get("tasks") for d in per_run] for k in keys]
        one_count = all(len({c for c in row if c is not None}) <= 1 for row in counts)
        multi = len(summaries) > 1
        header = [name] + (["tasks"] if one_count else [f"tasks · {lab}" for lab in labels])
        for m in metrics:
            header += [f"{_label(m)} · {lab}" for lab in labels] if multi else [_label(m)]
        rows: list[list[str]] = []
        bold: set[tuple[int, int]] = set()
        for i, k in enumerate(keys):
            cnt = counts[i]
            row = [k] + ([_fmt(next((c for c in cnt if c is not None), None))] if one_count else [_fmt(c) for c in cnt])
            for m in metrics:
                vals = [(d.get(k) or {}).get(m) for d in per_run]
                start = len(row)
                bold |= {(i, start + j) for _, j in _best_cells([vals], [m], 0)}
                row += [_fmt(v) for v in vals]
            rows.append(row)
        tables.append(Table(f"By {name}", header, rows, note="Percent of the tasks in each group." if metrics else None, bold=bold))
    return tables


def _group_key(row: PaperRow) -> tuple[tuple[str, str], ...]:
    """Rows of one published block that go in one table: the same setting, dataset and step-1 model aside."""
    return tuple(sorted((k, str(v)) for k, v in row.setting.items() if k not in ("dataset", "kg_model")))


def _sources(rows: Sequence[PaperRow]) -> str:
    """``"FamilyTool Tables 3, 6"``: the papers and table numbers the rows come from."""
    out = []
    for paper in dict.fromkeys(r.paper for r in rows):
        nums = sorted({t for r in rows if r.paper == paper for t in (r.tables or (r.table,)) if t is not None})
        labels = list(dict.fromkeys(r.label for r in rows if r.paper == paper and r.table is None and r.label))
        parts = ([("Table " if len(nums) == 1 else "Tables ") + ", ".join(map(str, nums))] if nums else []) + labels
        out.append(f"{paper} {' · '.join(parts) or 'table'}")
    return "; ".join(out)


def _captions(rows: Sequence[PaperRow], all_rows: Sequence[PaperRow]) -> list[str]:
    """``"FamilyTool Table 3: <caption>"`` for each table the rows come from, in table order."""
    wanted = {(r.paper, t) for r in rows for t in (r.tables or (r.table,))}
    labels = {(r.paper, r.label) for r in rows if r.table is None}
    out: dict[str, None] = {}
    for r in sorted(all_rows, key=_first_table):
        if r.table is not None and (r.paper, r.table) in wanted:
            out[f"{r.paper} Table {r.table}: {r.caption}"] = None
        elif r.table is None and (r.paper, r.label) in labels:
            out[f"{r.paper} {r.label or 'table'}: {r.caption}"] = None
    return list(out)


def _block_setting(summary: Mapping[str, Any], rows: Sequence[PaperRow]) -> str:
    """The setting the rows share (dataset and step aside), else the run's strategy."""
    if not rows:
        return f"strategy {summary.get('strategy') or DASH}"
    common = {k: v for k, v in rows[0].setting.items()
              if k not in ("dataset", "step", "kg_model") and all(r.setting.get(k) == v for r in rows)}
    kg_model = _run_setting(summary, "kg_model") if _run_kg_model(summary) else None
    return describe_setting({**common, **({"kg_model": kg_model} if kg_model else {})})


def _published_section(runs: Sequence[Mapping[str, Any]], labels: Sequence[str], paper_rows: Sequence[PaperRow]) -> Section:
    """The papers' rows of these runs' dataset and setting (every model), each run beside its model's row.

    ``runs`` share a :func:`setting_key`. One table per group of rows (:func:`_group_key`: FamilyTool's
    KG extraction and tool use steps), with the source table numbers in the first column.
    """
    first = runs[0]
    bench = str(first.get("benchmark"))
    rows = published_rows_for(first, paper_rows)
    sec = Section(f"Published numbers: {bench} · {_block_setting(first, rows)}")
    who = ", ".join(f"`{lab}`" for lab in labels)
    if not rows:
        offered = sorted({str(r.setting["strategy"]) for r in paper_rows
                          if r.setting.get("dataset") == bench and r.setting.get("strategy")})
        sec.text.append(f"The papers publish no numbers for {bench} in the setting of {who}"
                        + (f"; their settings for {bench} are the strategies {', '.join(offered)}." if offered
                           else f"; evals/paper_numbers/ has no rows for {bench}."))
        return sec
    groups: dict[tuple[tuple[str, str], ...], list[PaperRow]] = {}
    for r in rows:
        groups.setdefault(_group_key(r), []).append(r)
    lined: set[int] = set()
    for grows in groups.values():
        keys = _metric_order(k for r in grows for k in r.metrics)
        header = ["source", "model"] + [_label(k) for k in keys]
        body: list[list[str]] = []
        self_rows: set[int] = set()
        for r in grows:
            body.append([r.source, r.model] + [_fmt(r.metrics.get(k)) for k in keys])
            for i, run in enumerate(runs):
                if r.matches_model(str(run.get("model") or "")):
                    lined.add(i)
                    self_rows.add(len(body))
                    body.append([f"this run: {labels[i]}", str(run.get("model"))]
                                + [_fmt((run.get("metrics") or {}).get(k)) for k in keys])
        title = f"Published numbers ({_sources(grows)}), {bench} · {describe_setting(dict(_group_key(grows[0])))}"
        note = ("As published" + ("; rows in bold are this report's runs (their metrics), each under the row of its model. "
                                  if self_rows else ". ") + " ".join(f"{c}." for c in _captions(grows, paper_rows)))
        sec.tables.append(Table(title, header, body, note=note, bold={(i, j) for i in self_rows for j in range(len(header))},
                                self_rows=self_rows))
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
    sec = Section(f"Published numbers for the model of {label} in other settings")
    keys = _metric_order(list((summary.get("metrics") or {}).keys()) + [k for r, _ in pairs for k in r.metrics])
    header = ["source", "model", "setting"] + [_label(k) for k in keys]
    rows = [["this run", str(summary.get("model")), str(summary.get("strategy") or DASH)]
            + [_fmt((summary.get("metrics") or {}).get(k)) for k in keys]]
    for r, _ in pairs:
        rows.append([r.source, r.model, describe_setting(r.setting)] + [_fmt(r.metrics.get(k)) for k in keys])
    notes = _captions([r for r, _ in pairs], paper_rows)
    sec.tables.append(Table(f"{label}: the papers' numbers for the same model on {summary.get('benchmark')}, other settings",
                            header, rows, note="Not comparable to the run as they stand: another strategy or setting. "
                            + " ".join(f"{n}." for n in notes),
                            bold={(0, j) for j in range(len(header))}, self_rows={0}))
    extra = [(r, k, v) for r, _ in pairs for k, v in r.extra.items()]
    if extra:
        sec.text.append("Other published values: " + "; ".join(f"{r.source} {r.model} ({describe_setting(r.setting)}): {k} = {v:.2f}" for r, k, v in extra) + ".")
    return sec


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
        for t in (
            _metric_table("Metrics", runs, labels, "metrics", "Percent over all tasks of the run (a task without a completed episode counts as wrong); ↑ higher is better, ↓ lower is better; the best value of a row is in bold."),
            _metric_table("Strict metrics", runs, labels, "strict_metrics", "The same metrics with the rule matcher only (no response or LLM matcher)."),
            _matchers_table(runs, labels),
            _options_table(runs, labels),
        ):
            if t is not None:
                sec.tables.append(t)
        metric = main_metric(bench, runs)
        if metric and _hop_series(runs, metric):
            sec.plot = bench
        sec.tables.extend(_breakdown_tables(runs, labels))
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


# ---- plots ----------------------------------------------------------------------------------------------
def _hop_series(runs: Sequence[Mapping[str, Any]], metric: str) -> list[tuple[int, list[tuple[str, float]]]]:
    """Per run (by index), its (hop, value) points for ``metric``; runs without any are left out."""
    out = []
    for i, s in enumerate(runs):
        hops = (s.get("breakdowns") or {}).get("hops") or {}
        pts = [(k, float(hops[k][metric])) for k in _key_order(hops)
               if isinstance((hops[k] or {}).get(metric), int | float)]
        if pts:
            out.append((i, pts))
    return out


def hop_plot_svg(runs: Sequence[Mapping[str, Any]], benchmark: str | None = None) -> str | None:
    """An SVG line plot of the main metric by hop count, one line per run; None without hop data.

    Uses matplotlib's object API (no pyplot, no global backend) and writes text as text, so the SVG
    is small and can be inlined in HTML. Returns None as well when matplotlib is not installed.
    """
    benchmark = benchmark or str(runs[0].get("benchmark") if runs else "")
    metric = main_metric(benchmark, runs)
    series = _hop_series(runs, metric) if metric else []
    if not series:
        return None
    try:
        import matplotlib
        from matplotlib.figure import Figure
    except ImportError:
        return None
    labels = run_labels(runs)
    xs = _key_order(k for _, pts in series for k, _ in pts)
    counts: dict[str, set[int]] = {}
    for i, _ in series:
        for k, row in ((runs[i].get("breakdowns") or {}).get("hops") or {}).items():
            if isinstance((row or {}).get("tasks"), int):
                counts.setdefault(k, set()).add(row["tasks"])
    ticks = [f"{x}\n(n={next(iter(counts[x]))})" if len(counts.get(x, ())) == 1 else x for x in xs]
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": f"report-{benchmark}",
                                "font.size": 9}):
        fig = Figure(figsize=(7.0, 3.8), layout="constrained")
        ax = fig.subplots()
        markers = "osD^vP*Xh<>"
        for n, (i, pts) in enumerate(series):
            ax.plot([xs.index(k) for k, _ in pts], [v for _, v in pts], marker=markers[n % len(markers)],
                    linewidth=1.6, label=labels[i])
        ax.set_xticks(range(len(xs)), ticks)
        ax.set_xlabel("hops")
        ax.set_ylabel(f"{METRICS.get(metric, (metric,))[0]} (%)")
        ax.set_ylim(-3, 103)
        ax.set_yticks(range(0, 101, 20))
        ax.grid(axis="y", alpha=0.3)
        ax.set_title(f"{benchmark}: {METRICS.get(metric, (metric,))[0]} by hop count")
        ax.legend(loc="best", fontsize=8, frameon=False)
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    svg = buf.getvalue()
    return svg[svg.index("<svg"):]  # drop the XML prolog and DOCTYPE: the SVG is inlined


def plot_file_name(benchmark: str) -> str:
    return "hops-" + re.sub(r"[^A-Za-z0-9._-]+", "_", benchmark) + ".svg"


# ---- Markdown --------------------------------------------------------------------------------------------
def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_table(t: Table) -> list[str]:
    out = [f"**{t.title}**", ""]
    out.append("| " + " | ".join(_md_cell(h) for h in t.header) + " |")
    out.append("|" + "|".join([":--"] + ["--:"] * (len(t.header) - 1)) + "|")
    for i, row in enumerate(t.rows):
        cells = [f"**{_md_cell(c)}**" if (i, j) in t.bold and c != DASH else _md_cell(c) for j, c in enumerate(row)]
        out.append("| " + " | ".join(cells) + " |")
    if t.note:
        out += ["", f"_{t.note}_"]
    return out + [""]


def render_markdown(summaries: Sequence[Mapping[str, Any]], paper_rows: Sequence[PaperRow] = (), *,
                    plot_files: Mapping[str, str] | None = None, generated_at: str | None = None) -> str:
    """The report as plain Markdown; ``plot_files`` maps a benchmark to its plot's file name (linked)."""
    lines = ["# Evaluation report", "",
             f"{len(summaries)} run(s), generated {generated_at or _now()} by `evals report`.", ""]
    for sec in build_sections(summaries, paper_rows):
        lines += [f"## {sec.title}", ""]
        for t in sec.tables:
            if t.title.startswith("By ") and sec.plot and plot_files and sec.plot in plot_files:
                lines += [f"![{sec.title}: accuracy by hop count]({plot_files[sec.plot]})", ""]
                sec.plot = None
            lines += _md_table(t)
        if sec.plot and plot_files and sec.plot in plot_files:
            lines += [f"![{sec.title}: accuracy by hop count]({plot_files[sec.plot]})", ""]
        for sub in sec.subsections:
            lines += [f"### {sub.title}", ""]
            for t in sub.tables:
                lines += _md_table(t)
            lines += [x for p in sub.text for x in (p, "")]
    lines += _md_sources(_shown_papers(summaries, paper_rows))
    return "\n".join(lines).rstrip() + "\n"


def _shown_papers(summaries: Sequence[Mapping[str, Any]], paper_rows: Sequence[PaperRow]) -> list[tuple[str, str]]:
    """(paper, citation) of the papers the report quotes."""
    return sorted({(r.paper, r.citation) for s in summaries
                   for r in [*published_rows_for(s, paper_rows), *(p for p, _ in paper_rows_for(s, paper_rows))]})


def _md_sources(cites: Sequence[tuple[str, str]]) -> list[str]:
    if not cites:
        return []
    return ["## Sources of the published numbers", ""] + [f"- {p}: {c}" for p, c in cites] + [
        "", "_Transcribed in evals/paper_numbers/*.yaml with the number of each table._", ""]


# ---- HTML ------------------------------------------------------------------------------------------------
_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;max-width:1200px;padding:0 1rem;color:#1b1f24}
h1{font-size:1.6rem}h2{font-size:1.3rem;border-bottom:1px solid #d0d7de;padding-bottom:.3rem;margin-top:2.2rem}
h3{font-size:1.05rem;margin-top:1.6rem}
table{border-collapse:collapse;margin:.4rem 0 .3rem;font-size:.85rem}
caption{text-align:left;font-weight:600;padding:.2rem 0}
th,td{border:1px solid #d0d7de;padding:.25rem .55rem;text-align:right;vertical-align:top}
th{background:#f6f8fa}th:first-child,td:first-child{text-align:left}
td.best{font-weight:700;background:#eef7ee}td.differ{font-weight:700}tr.self td{background:#fff8e1;font-weight:600}
p.note{color:#57606a;font-size:.8rem;margin:.1rem 0 1rem;max-width:60rem}
.wrap{overflow-x:auto}figure{margin:1rem 0}figure svg{max-width:100%;height:auto}
code{background:#f6f8fa;padding:0 .2rem}
"""


def _html_table(t: Table) -> str:
    e = html.escape
    head = "".join(f"<th>{e(h)}</th>" for h in t.header)
    body = []
    for i, row in enumerate(t.rows):
        mine = i in t.self_rows
        cls = ' class="self"' if mine else ""
        cells = "".join(
            f'<td class="{t.bold_means}">{e(c)}</td>' if (i, j) in t.bold and not mine and c != DASH else f"<td>{e(c)}</td>"
            for j, c in enumerate(row)
        )
        body.append(f"<tr{cls}>{cells}</tr>")
    note = f'<p class="note">{e(t.note)}</p>' if t.note else ""
    return (f'<div class="wrap"><table><caption>{e(t.title)}</caption><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>{note}")


def render_html(summaries: Sequence[Mapping[str, Any]], paper_rows: Sequence[PaperRow] = (), *,
                plots: Mapping[str, str | None] | None = None, generated_at: str | None = None) -> str:
    """The report as one self-contained HTML page (inline CSS and SVG, no external files).

    ``plots`` maps a benchmark to its SVG text; when None the plots are drawn here.
    """
    e = html.escape
    sections = build_sections(summaries, paper_rows)
    if plots is None:
        plots = {}
        for sec in sections:
            if sec.plot:
                plots[sec.plot] = hop_plot_svg([s for s in summaries if str(s.get("benchmark")) == sec.plot], sec.plot)
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             "<title>Evaluation report</title>", f"<style>{_CSS}</style></head><body>",
             "<h1>Evaluation report</h1>",
             f"<p>{len(summaries)} run(s), generated {e(generated_at or _now())} by <code>evals report</code>.</p>"]
    if len(sections) > 1:
        parts.append("<ul>" + "".join(f'<li><a href="#{_anchor(s.title)}">{e(s.title)}</a></li>' for s in sections) + "</ul>")
    for sec in sections:
        parts.append(f'<h2 id="{_anchor(sec.title)}">{e(sec.title)}</h2>')
        for t in sec.tables:
            if t.title.startswith("By ") and sec.plot:
                parts.append(_html_plot(sec, plots))
                sec.plot = None
            parts.append(_html_table(t))
        if sec.plot:
            parts.append(_html_plot(sec, plots))
        for sub in sec.subsections:
            parts.append(f"<h3>{e(sub.title)}</h3>")
            parts += [_html_table(t) for t in sub.tables]
            parts += [f"<p>{_html_inline(p)}</p>" for p in sub.text]
    cites = _shown_papers(summaries, paper_rows)
    if cites:
        parts.append("<h2>Sources of the published numbers</h2><ul>"
                     + "".join(f"<li>{e(p)}: {e(c)}</li>" for p, c in cites)
                     + "</ul><p class=\"note\">Transcribed in evals/paper_numbers/*.yaml with the number of each table.</p>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _html_plot(sec: Section, plots: Mapping[str, str | None]) -> str:
    svg = plots.get(sec.plot or "")
    if not svg:
        return '<p class="note">No plot: matplotlib is not installed.</p>'
    return f'<figure role="img" aria-label="{html.escape(sec.title)}: accuracy by hop count">{svg}</figure>'


def _html_inline(text: str) -> str:
    """Escape, then render `code` spans."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def _anchor(title: str) -> str:
    return "b-" + re.sub(r"[^A-Za-z0-9_-]+", "-", title)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")


# ---- files and the command line -------------------------------------------------------------------------
def default_out_dir(run_dirs: Sequence[str | Path]) -> Path:
    """One run: ``<run>/report``; several: ``reports/<UTC timestamp>``."""
    if len(run_dirs) == 1:
        return Path(run_dirs[0]) / "report"
    return Path("reports") / datetime.now(UTC).strftime("%Y%m%d-%H%M%S")


def summaries_of(run_dirs: Sequence[str | Path]) -> list[dict[str, Any]]:
    """:func:`evals.pipeline.summarize` of each run directory (raises naming the bad one)."""
    from client.runs import RunDir

    from .pipeline import summarize

    out = []
    for d in run_dirs:
        try:
            out.append(summarize(RunDir.open(d)))
        except (FileNotFoundError, ValueError, KeyError) as exc:
            raise ValueError(f"{d}: {exc}") from exc
    return out


def write_report(run_dirs: Sequence[str | Path], out_dir: str | Path | None = None, *,
                 summaries: Sequence[Mapping[str, Any]] | None = None,
                 paper_rows: Sequence[PaperRow] | None = None) -> dict[str, Any]:
    """Summarise the runs and write ``report.md``, ``report.html``, one ``hops-*.svg`` per plotted
    benchmark and ``report.json`` (the summaries and their paper rows) into ``out_dir``.

    Returns ``{"out_dir", "markdown", "html", "json", "plots": [...]}`` (paths as strings).
    """
    if not run_dirs and not summaries:
        raise ValueError("no run directories given")
    sums = list(summaries) if summaries is not None else summaries_of(run_dirs)
    rows = load_paper_numbers() if paper_rows is None else list(paper_rows)
    out = Path(out_dir) if out_dir else default_out_dir(run_dirs)
    out.mkdir(parents=True, exist_ok=True)
    when = _now()

    svgs: dict[str, str | None] = {}
    for sec in build_sections(sums, rows):
        if sec.plot:
            svgs[sec.plot] = hop_plot_svg([s for s in sums if str(s.get("benchmark")) == sec.plot], sec.plot)
    plot_files: dict[str, str] = {}
    for bench, svg in svgs.items():
        if svg:
            name = plot_file_name(bench)
            (out / name).write_text('<?xml version="1.0" encoding="utf-8" standalone="no"?>\n' + svg, encoding="utf-8")
            plot_files[bench] = name

    md = out / "report.md"
    md.write_text(render_markdown(sums, rows, plot_files=plot_files, generated_at=when), encoding="utf-8")
    page = out / "report.html"
    page.write_text(render_html(sums, rows, plots=svgs, generated_at=when), encoding="utf-8")
    data = out / "report.json"
    data.write_text(json.dumps({
        "generated_at": when,
        "runs": [{**s, "paper": [{**r.to_dict(), "same_setting": same} for r, same in paper_rows_for(s, rows)],
                  "published": [{**r.to_dict(), "aggregate": r.aggregate, "model_matches": r.matches_model(str(s.get("model") or ""))}
                                for r in published_rows_for(s, rows)]}
                 for s in sums],
    }, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    return {"out_dir": str(out), "markdown": str(md), "html": str(page), "json": str(data),
            "plots": [str(out / n) for n in plot_files.values()]}


def cmd_report(args: argparse.Namespace) -> int:
    try:
        paths = write_report(args.run_dirs, args.out)
    except ValueError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    human = sys.stderr if args.json else sys.stdout
    for key in ("markdown", "html", "json"):
        human.write(f"{paths[key]}\n")
    for p in paths["plots"]:
        human.write(f"{p}\n")
    human.flush()
    if args.json:
        sys.stdout.write(json.dumps(paths, sort_keys=True) + "\n")
        sys.stdout.flush()
    return 0


def add_report_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``report`` to an ``argparse`` subparsers object (``evals report RUN_DIR ...``)."""
    p = subparsers.add_parser(
        "report",
        help="write a Markdown and a self-contained HTML report of one or more runs, with the papers' numbers",
        description="Write report.md, report.html (self-contained), report.json and hops-*.svg plots for the "
                    "given run directories: metric tables with the runs side by side, breakdowns, accuracy by "
                    "hop count, and the papers' published numbers for the same models.",
    )
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories (as written by evals run)")
    p.add_argument("--out", metavar="DIR",
                   help="output directory (default: RUN_DIR/report for one run, reports/<timestamp> for several)")
    p.add_argument("--json", action="store_true", help="print one JSON object with the written paths as the last line")
    p.set_defaults(func=cmd_report)
    return p
