"""``evals leaderboard DIR``: every run under a directory, grouped by benchmark, dataset and setting, one row per model.

A run's *dataset* is the set of tasks it ran (:mod:`evals.core.dataset`: for a benchmark defined by a file,
the file's name and sha256; runs of two files are never ranked together). Its *setting* is what decides
which published numbers it is shown beside (:func:`evals.report.paper.setting_key`: the strategy and the
settings the papers vary, such as a KG search mode or whether tool feedback is given); for a benchmark
without published numbers it is its strategy. Within a group each model has one row: its newest run (the
others are counted in ``runs``). Rows are sorted by the benchmark's main metric, best first. Values are
those of the stored scores (``scores.jsonl``), with their standard errors; the cost of a model without a
price is ``None`` (``cost_known`` false), written ``unknown``. The columns are the run's headline metrics
(:meth:`.runs.RunView.headline`: those its benchmark declares, e.g. an official leaderboard's columns). A
derived value that counts parts not run as 0, as its official code does, names them (``missing``: marked
``*`` in the table with a line under it, a ``<key>_missing`` column in the CSV).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

from ..core.dataset import dataset_key, dataset_label
from ..report.paper import setting_key
from .jsonsafe import dumps_finite
from .runs import RunView

__all__ = ["leaderboard_groups", "render_leaderboard"]


def _setting_label(key: Sequence[str]) -> str:
    rest = [k for k in key[2:] if not k.endswith("=")]
    return " · ".join([key[1] or "?"] + rest)


UNKNOWN_COST = "unknown"


def leaderboard_groups(views: Sequence[RunView]) -> list[dict[str, Any]]:
    """Groups ``{"benchmark", "dataset", "setting", "metrics": [...], "rows": [...]}``; each row a model's
    newest run."""
    groups: dict[tuple[str, ...], list[tuple[RunView, dict[str, Any]]]] = {}
    for v in views:
        s = v.summary()
        if not s.get("scored"):
            continue
        key = setting_key(s)
        groups.setdefault((key[0], dataset_key(s.get("dataset")), *key[1:]), []).append((v, s))
    out = []
    for gkey in sorted(groups):
        members = groups[gkey]
        key = (gkey[0], *gkey[2:])
        by_model: dict[str, list[tuple[RunView, dict[str, Any]]]] = {}
        for v, s in members:
            by_model.setdefault(str(s.get("model")), []).append((v, s))
        rows: list[dict[str, Any]] = []
        heads: list[dict[str, Any]] = []
        for model, runs in by_model.items():
            runs.sort(key=lambda p: str(p[1].get("created_at") or ""), reverse=True)
            v, s = runs[0]
            head = v.headline(s)
            if len(head) > len(heads):
                heads = head
            totals = (s.get("totals") or {}).get("model") or {}
            known = totals.get("cost_known") is not False and totals.get("cost_usd") is not None
            rows.append({"model": model, "strategy": s.get("strategy"), "runs": len(runs), "tasks": s.get("tasks"),
                         "errored": s.get("errored"), "created_at": s.get("created_at"), "run_dir": s.get("run_dir"),
                         "cost_usd": totals.get("cost_usd") if known else None, "cost_known": known,
                         "metrics": {h["key"]: _metric(h) for h in head}})
        if heads:
            main = heads[0]
            sign = -1 if main.get("higher_is_better", True) else 1
            rows.sort(key=lambda r: sign * float((r["metrics"].get(main["key"]) or {}).get("value") or 0))
        dataset = members[0][1].get("dataset")
        out.append({"benchmark": key[0], "dataset": dataset, "dataset_label": dataset_label(dataset),
                    "setting": _setting_label(key),
                    "metrics": [{"key": h["key"], "label": h["label"], "higher_is_better": h["higher_is_better"]}
                                for h in heads], "rows": rows})
    return out


def _metric(head: dict[str, Any]) -> dict[str, Any]:
    """A row's cell data: value, standard error and, for a derived value that counts parts not run as 0, those parts."""
    out = {"value": head.get("value"), "stderr": head.get("stderr")}
    return out | {"missing": list(head["missing"])} if head.get("missing") else out


def _cell(m: dict[str, Any] | None) -> str:
    if not m or m.get("value") is None:
        return "–"
    se = m.get("stderr")
    text = f"{m['value']:.2f} ± {se:.2f}" if isinstance(se, int | float) else f"{m['value']:.2f}"
    return text + " *" if m.get("missing") else text


def _missing_notes(g: dict[str, Any]) -> list[str]:
    """``* label: not run, counted as 0: a, b (model, ...)``: one line per metric and set of missing parts."""
    found: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for r in g["rows"]:
        for m in g["metrics"]:
            missing = tuple((r["metrics"].get(m["key"]) or {}).get("missing") or ())
            if missing:
                found.setdefault((m["label"], missing), []).append(str(r["model"]))
    return [f"* {label}: not run, counted as 0 as the official code counts them: {', '.join(parts)} ({', '.join(models)})"
            for (label, parts), models in found.items()]


def _cost(r: dict[str, Any], digits: int) -> str:
    return UNKNOWN_COST if r.get("cost_usd") is None else f"{r['cost_usd']:.{digits}f}"


def _title(g: dict[str, Any]) -> str:
    """``benchmark · dataset · setting`` (no dataset part for a benchmark with one set of tasks)."""
    return " · ".join(p for p in (str(g["benchmark"]), g.get("dataset_label") or "", str(g["setting"])) if p)


def _flat(groups: Sequence[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    keys = list(dict.fromkeys(m["key"] for g in groups for m in g["metrics"]))
    with_missing = {k for g in groups for r in g["rows"] for k in keys if (r["metrics"].get(k) or {}).get("missing")}
    header = ["benchmark", "setting", "rank", "model", "runs", "tasks", "errored"]
    for k in keys:
        header += [k, f"{k}_stderr"] + ([f"{k}_missing"] if k in with_missing else [])
    header += ["cost_usd", "created_at", "run_dir", "dataset", "dataset_sha256"]
    rows = []
    for g in groups:
        for rank, r in enumerate(g["rows"], 1):
            row = [g["benchmark"], g["setting"], str(rank), r["model"], str(r["runs"]), str(r["tasks"]), str(r["errored"])]
            for k in keys:
                m = r["metrics"].get(k) or {}
                row += ["" if m.get("value") is None else str(m["value"]), "" if m.get("stderr") is None else str(m["stderr"])]
                row += [" ".join(m.get("missing") or ())] if k in with_missing else []
            ds = g.get("dataset") or {}
            row += [_cost(r, 6), str(r["created_at"] or ""), str(r["run_dir"]), str(ds.get("name") or ""),
                    str(ds.get("sha256") or "")]
            rows.append(row)
    return header, rows


def render_leaderboard(groups: Sequence[dict[str, Any]], fmt: str, *, damaged: Sequence[dict[str, str]] = ()) -> str:
    """``table`` (aligned text, a block per group), ``csv`` (one row per model and group) or ``json``
    (with the ``damaged`` runs left out, and no ``NaN``: valid JSON whatever the runs held)."""
    if fmt == "json":
        return dumps_finite({"groups": list(groups), "damaged": list(damaged)}, indent=2, sort_keys=True, default=str) + "\n"
    if fmt == "csv":
        header, rows = _flat(groups)
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
        return buf.getvalue()
    if not groups:
        return "no scored runs found\n"
    lines: list[str] = []
    for g in groups:
        header = ["#", "model", *(m["label"] + (" ↑" if m["higher_is_better"] else " ↓") for m in g["metrics"]),
                  "tasks", "runs", "cost (USD)"]
        body = [[str(i), r["model"], *(_cell(r["metrics"].get(m["key"])) for m in g["metrics"]), str(r["tasks"]),
                 str(r["runs"]), _cost(r, 4)]
                for i, r in enumerate(g["rows"], 1)]
        widths = [max(len(x) for x in col) for col in zip(header, *body, strict=True)]
        lines.append(_title(g))
        lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip())
        lines.append("  ".join("-" * w for w in widths))
        lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in body]
        lines += _missing_notes(g)
        lines.append("")
    return "\n".join(lines)
