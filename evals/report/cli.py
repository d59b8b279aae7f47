"""``evals report RUN_DIR [RUN_DIR ...]``: summarise run directories and write the report files."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .metrics import benchmark_info, metrics_from_samples
from .paper import PaperRow, load_paper_numbers, paper_rows_for, published_rows_for
from .render import hop_plot_svg, now, plot_file_name, render_html, render_markdown
from .tables import build_sections

if TYPE_CHECKING:
    from client.runs import RunDir

__all__ = ["add_report_parser", "cmd_report", "report_arguments", "default_out_dir", "summaries_of", "write_report"]


def default_out_dir(run_dirs: Sequence[str | Path]) -> Path:
    """One run: ``<run>/report``; several: ``reports/<UTC timestamp>``."""
    if len(run_dirs) == 1:
        return Path(run_dirs[0]) / "report"
    return Path("reports") / datetime.now(UTC).strftime("%Y%m%d-%H%M%S")


def summaries_of(run_dirs: Sequence[str | Path]) -> list[dict[str, Any]]:
    """Each run directory's summary (raises ``ValueError`` naming the bad one).

    A run of a registered benchmark is re-scored (:func:`evals.core.run.score_run_dir`: stored judge
    decisions are reused, none is asked); one whose benchmark is not registered is summarised from
    its traces and stored ``scores.jsonl`` with generic labels (:func:`unregistered_summary`).
    """
    from client import eventloop
    from client.runs import RunDir

    from ..core.options import OptionError
    from ..core.run import score_run_dir

    out = []
    for d in run_dirs:
        try:
            run_dir = RunDir.open(d)
            name = (run_dir.config or {}).get("benchmark")
            if name is not None and benchmark_info(name) is None:
                out.append(unregistered_summary(run_dir))
            else:
                out.append(eventloop.run(score_run_dir(d)))
        except (FileNotFoundError, ValueError, KeyError, OptionError) as exc:
            raise ValueError(f"{d}: {exc}") from exc
    return out


def unregistered_summary(run_dir: RunDir) -> dict[str, Any]:
    """A summary of a run whose benchmark is not registered: counts and tokens from the traces, each
    sample key of ``scores.jsonl`` aggregated (a percentage where every sample is a part of a whole,
    else a count), the judge's stored decisions counted apart."""
    from ..core.metrics import TaskScore
    from ..core.scoring import build_summary, read_scores

    traces = run_dir.latest_traces()
    scores: list[TaskScore] = []
    task_ids = list(traces)
    judge = {"decisions": 0, "asked": 0, "missing": 0, "input_tokens": 0.0, "output_tokens": 0.0, "cost_usd": 0.0}
    for record in read_scores(run_dir):
        scores.append(TaskScore.from_dict(record.get("score") or {}))
        if str(record.get("task_id")) not in task_ids:
            task_ids.append(str(record.get("task_id")))
        for d in record.get("judge") or []:
            judge["decisions"] += 1
            for key in ("input_tokens", "output_tokens", "cost_usd"):
                judge[key] += float(d.get(key) or 0)
    metrics = metrics_from_samples(scores)
    summary = build_summary(run_dir, traces, task_ids, metrics, scores, judge)
    summary["note"] = ("benchmark not registered: metrics aggregated from the stored scores.jsonl, without labels"
                       if scores else "benchmark not registered and no stored scores.jsonl: no metrics")
    return summary


def write_report(run_dirs: Sequence[str | Path], out_dir: str | Path | None = None, *,
                 summaries: Sequence[Mapping[str, Any]] | None = None,
                 paper_rows: Sequence[PaperRow] | None = None) -> dict[str, Any]:
    """Summarise the runs and write ``report.md``, ``report.html``, one ``hops-*.svg`` per plotted
    benchmark and ``report.json`` (the summaries and their paper rows) into ``out_dir``.

    Returns ``{"out_dir", "markdown", "html", "json", "plots": [...]}`` (paths as strings).
    """
    if not run_dirs and not summaries:
        raise ValueError("no run directories given")
    from client.runs import redact_secrets, refuse_link, write_run_text

    # a key or token in a run's settings (a config.json written before secrets were refused) is not copied
    sums = [redact_secrets(s) for s in (summaries if summaries is not None else summaries_of(run_dirs))]
    rows = load_paper_numbers() if paper_rows is None else list(paper_rows)
    out = Path(out_dir) if out_dir else default_out_dir(run_dirs)
    refuse_link(out)
    out.mkdir(parents=True, exist_ok=True)
    when = now()

    svgs: dict[str, str | None] = {}
    for sec in build_sections(sums, rows):
        if sec.plot:
            svgs[sec.plot] = hop_plot_svg([s for s in sums if str(s.get("benchmark")) == sec.plot], sec.plot)
    plot_files: dict[str, str] = {}
    for bench, svg in svgs.items():
        if svg:
            name = plot_file_name(bench)
            write_run_text(out / name, '<?xml version="1.0" encoding="utf-8" standalone="no"?>\n' + svg)
            plot_files[bench] = name

    md = out / "report.md"
    write_run_text(md, render_markdown(sums, rows, plot_files=plot_files, generated_at=when))
    page = out / "report.html"
    write_run_text(page, render_html(sums, rows, plots=svgs, generated_at=when))
    data = out / "report.json"
    write_run_text(data, json.dumps({
        "generated_at": when,
        "runs": [{**s, "paper": [{**r.to_dict(), "same_setting": same} for r, same in paper_rows_for(s, rows)],
                  "published": [{**r.to_dict(), "aggregate": r.aggregate, "model_matches": r.matches_model(str(s.get("model") or ""))}
                                for r in published_rows_for(s, rows)]}
                 for s in sums],
    }, indent=2, sort_keys=True, default=str) + "\n")
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
    p: argparse.ArgumentParser = subparsers.add_parser(
        "report",
        help="write a Markdown and a self-contained HTML report of one or more runs, with the papers' numbers",
    )
    report_arguments(p)
    return p


def report_arguments(p: argparse.ArgumentParser) -> None:
    """``evals report``'s description and arguments on parser ``p``."""
    p.description = (
        "Write report.md, report.html (self-contained), report.json and hops-*.svg plots for the "
        "given run directories: metric tables (with standard errors) with the runs side by side, "
        "tokens and cost (model and judge apart), breakdowns, accuracy by hop count, and the papers' "
        "published numbers of the runs' settings.")
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories (as written by evals run)")
    p.add_argument("--out", metavar="DIR",
                   help="output directory (default: RUN_DIR/report for one run, reports/<timestamp> for several)")
    p.add_argument("--json", action="store_true", help="print one JSON object with the written paths as the last line")
    p.set_defaults(func=cmd_report)
