"""``evals view``: a local web app over run directories, its static export, and ``evals leaderboard``.

* :mod:`.index`: a run directory read fast (traces indexed by byte offset, scores, config);
* :mod:`.runs`: a run's summary, headline metrics and tasks table from its stored scores;
* :mod:`.transcript`: one episode turn by turn, with the benchmark's own sections;
* :mod:`.compare`: paired comparison of runs (bootstrap intervals, McNemar / bootstrap tests);
* :mod:`.leaderboard`: runs grouped by benchmark, dataset and setting, one row per model;
* :mod:`.jsonsafe`: JSON without ``NaN``; :mod:`.site`: the data of every page (damaged runs left out); :mod:`.app`: the Starlette app; :mod:`.export`: the static site;
* :mod:`.cli`: the sub-commands.

Import names from their modules (``from evals.view.site import Site``): the package exports nothing.
"""

__all__: list[str] = []
