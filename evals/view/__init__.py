"""``evals view``: a local web app over run directories, its static export, and ``evals leaderboard``.

* :mod:`.index`: a run directory read fast (traces indexed by byte offset, scores, config);
* :mod:`.runs`: a run's summary, headline metrics and tasks table from its stored scores;
* :mod:`.transcript`: one episode turn by turn, with the benchmark's own sections;
* :mod:`.compare`: paired comparison of runs (bootstrap intervals, McNemar / bootstrap tests);
* :mod:`.leaderboard`: runs grouped by benchmark and setting, one row per model;
* :mod:`.site`: the data of every page; :mod:`.app`: the Starlette app; :mod:`.export`: the static site;
* :mod:`.cli`: the sub-commands.
"""

from .cli import add_leaderboard_parser, add_view_parser, cmd_leaderboard, cmd_view
from .compare import CompareError, compare_runs, mcnemar_exact, paired_bootstrap
from .export import export_site, static_name
from .index import RunIndex, TraceEntry, find_run_dirs, is_run_dir
from .leaderboard import leaderboard, render_leaderboard
from .runs import RunView
from .site import NotFound, Site
from .transcript import episode, transcript_items

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
