"""ToolHop: 3-7 dependent calls of real Python tools run in a sandbox (the full file when fetched, else the
100-query subset; --dataset picks one)

The benchmark's folder, low to high (each module imports only those before it):

* ``files``: its name, data files and their pinned sources;
* ``tasks``: loading both file formats into tasks and hops, each tool's code split from its
  example block, gold call strings parsed into calls;
* ``answers``: answer normalisation and ``answer_correct``;
* ``scoring``: the paper's invocation errors of each call, one trace's score (``score_trace``);
* ``metrics``: the declared metrics and one task's samples;
* ``feedback``: how a tool's sandboxed run reads to the model (returned errors, the detailed and
  minimal feedback levels);
* ``tools``: the tools (``ToolHopSpec``, ``build_spec``) and the catalog (``ToolHopCatalog``);
* ``chains``: gold call chains, explicit and derived (run in the sandbox; cached);
* ``official``: the official scripts' output files read and scored as they score them (the answer
  rule, the printed ``Result``); ``export``: the ``toolhop-official`` format that reads them;
* ``view``: an episode in ``evals view`` (each hop's gold call beside the predicted one, the answers);
* ``plugin``: the ``evals run`` plugin (the paper's modes and feedback levels, the oracle);
* ``paper_numbers.yaml``: the published numbers.

This module only declares it: it imports ``files`` and ``metrics`` (no data is read, no sandbox
is imported).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...core.data import RemoteFile
from ...core.options import Option
from ...core.plugin import BenchmarkInfo, PaperNumbers
from .files import FULL, NAME, SOURCES, STRATEGIES, SUBSET
from .metrics import METRICS

OPTIONS: tuple[Option, ...] = (
    Option("dataset", str, "auto", "the official file (full), the 100-query subset (subset), or the full file "
           "when it is present and else the subset (auto); a run records the one it used", choices=("auto", "full", "subset"),
           serve=True, aliases=(("subset100", "subset"),)),
    Option("results_file", str, "", "score this official output file (what code/evaluation_closed.py writes: one "
           "sample per line with messages and answer_correct) without the dataset, as the official scripts do; set "
           "by `evals score FILE --format toolhop-official`", metavar="FILE", run=False),
    Option("derive_chains", bool, True, "oracle: derive gold call chains for tasks without explicit ones (runs "
           "tool code in the sandbox once; cached)"),
    Option("sandbox_workers", int, 4, "sandbox worker processes that run the tools' code", serve=True,
           affects_results=False, check=lambda v: None if 1 <= v <= 64 else "must be between 1 and 64"),
    Option("unsafe_sandbox_without_namespaces", bool, False, "UNSAFE: where the kernel gives no user namespaces, "
           "run the tools' code anyway, contained only by rlimits and an audit hook (not a security boundary); "
           "without it such a host refuses to run them", serve=True, affects_results=False),
)

def needed_files(options: Mapping[str, Any], data_dir: Path) -> list[tuple[str, RemoteFile]]:
    """What the loader would read and ``data_dir`` lacks: the full file when asked for; otherwise
    nothing when the full file or the subset is there, else the subset (1.6 MB)."""
    choice = options.get("dataset", "auto")
    full, subset = data_dir.joinpath(*FULL).is_file(), data_dir.joinpath(*SUBSET).is_file()
    if choice == "full":
        return [] if full else [("toolhop", f) for f in SOURCES["toolhop"]]
    if subset or (full and choice != "subset"):
        return []
    return [("toolhop-subset", f) for f in SOURCES["toolhop-subset"]]


def _paper_setting(summary: Mapping[str, Any]) -> dict[str, Any]:
    """A run's setting in the paper's terms: the mode and the feedback level."""
    strategy = str(summary.get("strategy") or "free")
    mode, _, minimal = strategy.partition("-")
    # the 100-query subset is not the paper's 995 queries: a data set of its own, with no published rows
    subset = (summary.get("options") or {}).get("dataset") == "subset"
    return {"dataset": f"{NAME}-subset" if subset else NAME, "strategy": mode, "feedback": "minimal" if minimal else "detailed"}


INFO = BenchmarkInfo(
    name=NAME, plugin=".plugin:ToolHopBenchmark",
    strategies=STRATEGIES, options=OPTIONS, metrics=METRICS,
    data_sources=SOURCES, needed_files=needed_files,
    paper_numbers=PaperNumbers(
        _paper_setting, "answer_accuracy",
        defaults={"feedback": "detailed"},
        synonyms={"mandatory": "forced", "required": "forced"},  # the paper's other names of the forced scenario
    ),
)
BENCHMARKS = (INFO,)
