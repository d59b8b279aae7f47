"""``evals view``: a local web app over run directories, its static export, and ``evals leaderboard``.

* :mod:`.index`: a run directory read fast (traces indexed by byte offset, scores, config);
* :mod:`.runs`: a run's summary, headline metrics and tasks table from its stored scores;
* :mod:`.transcript`: one episode turn by turn, with the benchmark's own sections;
* :mod:`.compare`: paired comparison of runs (bootstrap intervals, McNemar / bootstrap tests);
* :mod:`.leaderboard`: runs grouped by benchmark, dataset and setting, one row per model;
* :mod:`.jsonsafe`: JSON without ``NaN``; :mod:`.site`: the data of every page (damaged runs left out); :mod:`.app`: the Starlette app; :mod:`.export`: the static site;
* :mod:`.cli`: the sub-commands.
"""

from __future__ import annotations

from typing import Any

from ..lazy import lazy_attribute

# each public name -> the module that defines it; a module is imported on the first use of one of its names
_MODULE_OF = {
    "CompareError": "compare",
    "NotFound": "site",
    "RunIndex": "index",
    "RunView": "runs",
    "Site": "site",
    "TraceEntry": "index",
    "add_leaderboard_parser": "cli",
    "add_view_parser": "cli",
    "cmd_leaderboard": "cli",
    "cmd_view": "cli",
    "check_run_ids": "compare",
    "dumps_finite": "jsonsafe",
    "compare_runs": "compare",
    "episode": "transcript",
    "export_site": "export",
    "find_run_dirs": "index",
    "is_run_dir": "index",
    "leaderboard": "leaderboard",
    "mcnemar_exact": "compare",
    "paired_bootstrap": "compare",
    "render_leaderboard": "leaderboard",
    "static_name": "export",
    "transcript_items": "transcript",
}

__all__ = [
    "CompareError",
    "NotFound",
    "RunIndex",
    "RunView",
    "Site",
    "TraceEntry",
    "add_leaderboard_parser",
    "add_view_parser",
    "cmd_leaderboard",
    "cmd_view",
    "check_run_ids",
    "dumps_finite",
    "compare_runs",
    "episode",
    "export_site",
    "find_run_dirs",
    "is_run_dir",
    "leaderboard",
    "mcnemar_exact",
    "paired_bootstrap",
    "render_leaderboard",
    "static_name",
    "transcript_items",
]


def __getattr__(name: str) -> Any:
    """A public name, from its module imported now (``evals --help`` registers the sub-commands without
    loading the web app, numpy or scipy)."""
    return lazy_attribute(__name__, _MODULE_OF, name)
