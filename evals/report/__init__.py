"""``evals report RUN_DIR [RUN_DIR ...]``: a Markdown and a self-contained HTML report of runs.

The report is built from run *summaries* (what :func:`evals.core.scoring.summarize` returns, the
object ``evals score --json`` prints), so it works for any benchmark; everything it knows of one
comes from the registry (:mod:`evals.core.registry`): metric labels, directions and kinds from the
benchmark's declared metrics, the published numbers and how a run's settings read in the papers'
terms from its :class:`~evals.core.plugin.PaperNumbers`. A benchmark that is not registered is
shown with generic labels.

* :mod:`.metrics`: the registry lookups (metric specs, blocks, order);
* :mod:`.paper`: the papers' published numbers and matching a run to their rows;
* :mod:`.tables`: the report model (sections of tables): runs, metrics with standard errors and
  what they were computed over, settings, tokens and cost (model and judge apart), breakdowns, the
  published blocks;
* :mod:`.render`: Markdown, HTML, the hop-count plot;
* :mod:`.cli`: :func:`write_report` (reads run directories, writes the files) and the subcommand.
"""

from __future__ import annotations

from .cli import (
    add_report_parser,
    cmd_report,
    default_out_dir,
    summaries_of,
    unregistered_summary,
    write_report,
)
from .metrics import MetricSpec, benchmark_info, metric_spec
from .paper import (
    PaperRow,
    describe_setting,
    in_run_setting,
    load_paper_numbers,
    normalize_model,
    paper_files,
    paper_rows_for,
    published_rows_for,
    run_setting,
    same_setting,
    setting_key,
)
from .render import hop_plot_svg, plot_file_name, render_html, render_markdown
from .tables import Section, Table, build_sections, main_metric, run_labels

__all__ = [
    "MetricSpec",
    "PaperRow",
    "Section",
    "Table",
    "add_report_parser",
    "benchmark_info",
    "build_sections",
    "cmd_report",
    "default_out_dir",
    "describe_setting",
    "hop_plot_svg",
    "in_run_setting",
    "load_paper_numbers",
    "main_metric",
    "metric_spec",
    "normalize_model",
    "paper_files",
    "paper_rows_for",
    "plot_file_name",
    "published_rows_for",
    "render_html",
    "render_markdown",
    "run_labels",
    "run_setting",
    "same_setting",
    "setting_key",
    "summaries_of",
    "unregistered_summary",
    "write_report",
]
