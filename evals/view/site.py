"""The viewer's data: the runs it was given, and one JSON object per page (served by :mod:`.app`,
written to files by :mod:`.export`).

Paths of the data, the same in both:

* ``runs``: the runs list;
* ``run/<id>``: a run's summary, metrics, breakdowns, published numbers and plot;
* ``run/<id>/tasks``: its tasks table;
* ``run/<id>/episode/<task id>``: one episode;
* ``compare/<id>,<id>[,...]``: a comparison (the first run is the baseline);
* ``leaderboard``: the leaderboard of every run shown.
"""

from __future__ import annotations

import base64
import re
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..report.metrics import MAIN_BLOCK, metric_blocks
from .compare import check_run_ids, compare_runs
from .index import CONFIG_FILE, SCORES_FILE, TRACES_FILE, RunIndex, find_run_dirs
from .leaderboard import leaderboard_groups
from .runs import RunView, metric_info, metrics_of
from .transcript import episode

__all__ = ["NotFound", "Site", "load_view_benchmark"]


class NotFound(LookupError):
    """No such run, task or page."""


_BENCHES: dict[tuple[str, str], Any] = {}
_BENCH_LOCK = threading.Lock()


def load_view_benchmark(name: str, config: Mapping[str, Any]) -> Any:
    """The run's benchmark, loaded with the run's options (once per name and options); None when no
    benchmark of that name is registered."""
    import json

    from ..core.registry import all_benchmarks, load_benchmark, own_options

    if name not in all_benchmarks():
        return None
    opts = own_options(name, config.get("options") or {})
    key = (name, json.dumps(opts, sort_keys=True, default=str))
    with _BENCH_LOCK:
        if key not in _BENCHES:
            _BENCHES[key] = load_benchmark(name, opts)
        return _BENCHES[key]


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "run"


def _stamp(path: Path) -> tuple[tuple[int, int] | None, ...]:
    """What changes when a run's files do (to look at a damaged run again only then)."""
    out: list[tuple[int, int] | None] = []
    for name in (CONFIG_FILE, TRACES_FILE, SCORES_FILE):
        try:
            st = (path / name).stat()
        except OSError:
            out.append(None)
        else:
            out.append((st.st_mtime_ns, st.st_size))
    return tuple(out)


def _reason(exc: BaseException) -> str:
    """Why a run is damaged, in one line (a file's own errors name FILE:LINE already)."""
    text = str(exc) if isinstance(exc, ValueError | OSError) else f"{type(exc).__name__}: {exc}"
    return " ".join(text.split())[:500]


class Site:
    """The runs found under the given paths (each a run directory or a directory holding runs).

    A *damaged* run (a ``config.json`` that is not a JSON object, a ``scores.jsonl`` line that is not a
    scores record or holds ``NaN``, files the summary cannot be computed from) is left out of every
    page and listed in :attr:`damaged` with the reason; it is read again when its files change."""

    def __init__(self, paths: Sequence[str | Path], *, load_benchmarks: bool = True):
        self.roots = [Path(p) for p in paths]
        for p in self.roots:
            if not p.is_dir():
                raise FileNotFoundError(f"{p}: no such directory")
        self.views: dict[str, RunView] = {}
        self._by_path: dict[Path, str] = {}
        self._damaged: dict[Path, tuple[tuple[Any, ...], str, str]] = {}  # resolved -> (stamp, run_dir, reason)
        self.loader = load_view_benchmark if load_benchmarks else None
        self._lock = threading.Lock()
        self._run_pages: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {}
        self.discover()
        if not self.views and not self._damaged:
            raise FileNotFoundError(f"no run directories found under {', '.join(map(str, self.roots))}")

    @property
    def damaged(self) -> list[dict[str, str]]:
        """The damaged runs: ``{"run_dir", "reason"}`` each, in path order."""
        return [{"run_dir": d, "reason": r} for _, d, r in sorted(self._damaged.values(), key=lambda x: x[1])]

    def discover(self) -> None:
        """Add the runs that appeared under the roots since the last look (and the damaged ones whose
        files changed, when they now read)."""
        for root in self.roots:
            for d in find_run_dirs(root):
                key = d.resolve()
                if key in self._by_path:
                    continue
                stamp = _stamp(d)
                known = self._damaged.get(key)
                if known is not None and known[0] == stamp:
                    continue
                base = _slug(d.name)
                rid, n = base, 2
                while rid in self.views:
                    rid, n = f"{base}-{n}", n + 1
                try:
                    view = RunView(rid, RunIndex.open(d))
                    view.listing()  # what every page is computed from: a run it fails on is damaged
                except Exception as exc:  # whatever a run's files hold, the other runs are shown
                    self._damaged[key] = (stamp, str(d), _reason(exc))
                    continue
                self._damaged.pop(key, None)
                self.views[rid] = view
                self._by_path[key] = rid

    def mark_damaged(self, run_id: str, exc: BaseException) -> None:
        """Leave a run out from now on (until its files change), with the reason."""
        v = self.views.pop(run_id, None)
        if v is None:
            return
        key = v.path.resolve()
        self._by_path.pop(key, None)
        self._run_pages.pop(run_id, None)
        self._damaged[key] = (_stamp(v.path), str(v.path), _reason(exc))

    def refresh(self) -> None:
        with self._lock:
            self.discover()
            for rid, v in list(self.views.items()):
                try:
                    v.index.refresh()
                    v.listing()
                except Exception as exc:  # damaged since the last look: the other runs are still shown
                    self.mark_damaged(rid, exc)

    def view(self, run_id: str) -> RunView:
        v = self.views.get(run_id)
        if v is None:
            raise NotFound(f"no run {run_id!r}")
        return v

    # ---- pages ----------------------------------------------------------------------------------------
    def runs(self) -> dict[str, Any]:
        rows = [v.listing() for v in self.views.values()]
        rows.sort(key=lambda r: (str(r.get("benchmark")), str(r.get("dataset_label")), str(r.get("created_at") or "")))
        return {"runs": rows, "damaged": self.damaged}

    def run(self, run_id: str) -> dict[str, Any]:
        v = self.view(run_id)
        key = v._key()
        cached = self._run_pages.get(run_id)
        if cached is not None and cached[0] == key:
            return cached[1]
        page = self._run_page(v)
        self._run_pages[run_id] = (key, page)
        return page

    def _run_page(self, v: RunView) -> dict[str, Any]:
        s = v.summary()
        metrics = v.metrics()
        stats = s.get("metric_stats") or {}
        blocks = []
        for block in metric_blocks(v.benchmark, [s]):
            rows = [{**metric_info(m), **stats[m.key]} for m in metrics if m.block == block and m.key in stats]
            if rows:
                blocks.append({"block": block, "rows": rows})
        main = {m.name: metric_info(m) for m in metrics_of(v.benchmark, []) if m.block == MAIN_BLOCK} or {
            m.name: metric_info(m) for m in metrics if m.block == MAIN_BLOCK}
        return {**s, "headline": v.headline(s), "blocks": blocks, "breakdown_metrics": main,
                "paper": self._paper(s), "plot": self._plot(s), "config": v.config}

    @staticmethod
    def _paper(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The papers' published rows of the run's dataset and setting (every model's)."""
        from ..report.paper import load_paper_numbers, published_rows_for

        try:
            rows = published_rows_for(summary, load_paper_numbers())
        except Exception:  # a broken paper-numbers file must not take the run page down
            return []
        model = str(summary.get("model") or "")
        return [{"source": r.source, "model": r.model, "metrics": r.metrics, "same_model": r.matches_model(model),
                 "caption": r.caption, "note": r.note} for r in rows]

    @staticmethod
    def _plot(summary: Mapping[str, Any]) -> str | None:
        """The report's plot of the main metric by hop count, as a data URI (an image, never markup)."""
        from ..report.render import hop_plot_svg

        if not (summary.get("breakdowns") or {}).get("hops"):
            return None
        try:
            svg = hop_plot_svg([summary], str(summary.get("benchmark")))
        except Exception:
            return None
        if not svg:
            return None
        return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")

    def tasks(self, run_id: str) -> dict[str, Any]:
        return self.view(run_id).task_rows()

    def episode(self, run_id: str, task_id: str) -> dict[str, Any]:
        data = episode(self.view(run_id), task_id, self.loader)
        if data is None:
            raise NotFound(f"run {run_id!r} has no task {task_id!r}")
        return data

    def compare(self, run_ids: Sequence[str]) -> dict[str, Any]:
        check_run_ids(run_ids)  # bounded before the runs are looked up
        return compare_runs([self.view(r) for r in run_ids])

    def leaderboard(self) -> dict[str, Any]:
        return {"groups": leaderboard_groups(list(self.views.values())), "damaged": self.damaged}

    def page(self, path: str) -> dict[str, Any]:
        """The data of one path (see the module docstring)."""
        parts = path.strip("/").split("/")
        if parts == ["runs"]:
            return self.runs()
        if parts == ["leaderboard"]:
            return self.leaderboard()
        if len(parts) == 2 and parts[0] == "compare":
            return self.compare([p for p in parts[1].split(",") if p])
        if len(parts) >= 2 and parts[0] == "run":
            if len(parts) == 2:
                return self.run(parts[1])
            if len(parts) == 3 and parts[2] == "tasks":
                return self.tasks(parts[1])
            if len(parts) >= 4 and parts[2] == "episode":
                return self.episode(parts[1], "/".join(parts[3:]))
        raise NotFound(f"no page {path[:200]!r}")
