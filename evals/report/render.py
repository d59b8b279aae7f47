"""Rendering the report model (:mod:`.tables`): Markdown, one self-contained HTML page, SVG plots."""

from __future__ import annotations

import html
import io
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from .metrics import metric_spec
from .paper import PaperRow, paper_rows_for, published_rows_for
from .tables import DASH, Section, Table, build_sections, hop_series, key_order, main_metric, run_labels

__all__ = ["hop_plot_svg", "now", "plot_file_name", "render_html", "render_markdown"]

DEFAULT_FILES = "each benchmark's paper_numbers.yaml"


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")


# ---- plots ----------------------------------------------------------------------------------------------
def hop_plot_svg(runs: Sequence[Mapping[str, Any]], benchmark: str | None = None) -> str | None:
    """An SVG line plot of the main metric by hop count, one line per run; None without hop data.

    Uses matplotlib's object API (no pyplot, no global backend) and writes text as text, so the SVG
    is small and can be inlined in HTML. Returns None as well when matplotlib is not installed.
    """
    benchmark = benchmark or str(runs[0].get("benchmark") if runs else "")
    metric = main_metric(benchmark, runs)
    series = hop_series(runs, metric) if metric else []
    if not series or metric is None:
        return None
    try:
        import matplotlib
        from matplotlib.figure import Figure
    except ImportError:
        return None
    label = metric_spec(benchmark, metric).label
    labels = run_labels(runs)
    xs = key_order(k for _, pts in series for k, _ in pts)
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
        ax.set_ylabel(f"{label} (%)")
        ax.set_ylim(-3, 103)
        ax.set_yticks(range(0, 101, 20))
        ax.grid(axis="y", alpha=0.3)
        ax.set_title(f"{benchmark}: {label} by hop count")
        ax.legend(loc="best", fontsize=8, frameon=False)
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    svg = buf.getvalue()
    return svg[svg.index("<svg"):]  # drop the XML prolog and DOCTYPE: the SVG is inlined


def plot_file_name(benchmark: str) -> str:
    return "hops-" + re.sub(r"[^A-Za-z0-9._-]+", "_", benchmark) + ".svg"


def _shown_papers(summaries: Sequence[Mapping[str, Any]], paper_rows: Sequence[PaperRow]) -> list[tuple[str, str, str]]:
    """(paper, citation, file) of the papers the report quotes."""
    return sorted({(r.paper, r.citation, r.file or "") for s in summaries
                   for r in [*published_rows_for(s, paper_rows), *(p for p, _ in paper_rows_for(s, paper_rows))]})


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
             f"{len(summaries)} run(s), generated {generated_at or now()} by `evals report`.", ""]
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


def _md_sources(cites: Sequence[tuple[str, str, str]]) -> list[str]:
    if not cites:
        return []
    files = ", ".join(f"`{f}`" for f in dict.fromkeys(f for _, _, f in cites if f))
    return ["## Sources of the published numbers", ""] + [f"- {p}: {c}" for p, c, _ in cites] + [
        "", f"_Transcribed in {files or DEFAULT_FILES} with the number of each table._", ""]


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
             f"<p>{len(summaries)} run(s), generated {e(generated_at or now())} by <code>evals report</code>.</p>"]
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
        files = ", ".join(f"<code>{e(f)}</code>" for f in dict.fromkeys(f for _, _, f in cites if f))
        parts.append("<h2>Sources of the published numbers</h2><ul>"
                     + "".join(f"<li>{e(p)}: {e(c)}</li>" for p, c, _ in cites)
                     + f"</ul><p class=\"note\">Transcribed in {files or DEFAULT_FILES} "
                       "with the number of each table.</p>")
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
