"""UltraTool: planning, tool creation, tool-usage awareness and tool usage (English or Chinese test set,
--language; --task picks one; tool usage also live over MCP with --strategy agent)

The benchmark's folder, low to high (each module imports only those before it):

* ``files``: its name, tasks, data files and their pinned sources;
* ``prompts``: the published runs' prompts, system message and the judge's rubrics, read (as data,
  with :mod:`ast`) from the official code files fetched with the data;
* ``parsing``: the official parser of a model's answer, our implementation, quirks included;
* ``metrics``: key-value accuracy and Levenshtein, the judge's dimensions, the declared metrics;
* ``tasks``: the task files (and the two approximations built from ``test.json``), the prompts;
* ``tools``: tool usage's toolsets as live MCP tools (simulated results);
* ``view``: an episode in ``evals view`` (gold steps beside predicted, or the gold answer beside the final one);
* ``predictions``: the published runs' prediction files read into traces, record by record as the
  official loops read them (the ``ultratool-official`` format's reader);
* ``plugin``: the ``evals run`` plugin (strategies ``paper`` and ``agent``), scoring, the
  ``ultratool-official`` prediction format (its writer; its reader is ``predictions``);
* ``paper_numbers.yaml``: the paper's main table (Chinese-dataset and English-dataset rows; a run is
  compared with its ``--language``'s rows only).

This module only declares it (no data is read).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...core.data import RemoteFile
from ...core.options import Option
from ...core.plugin import BenchmarkInfo, PaperNumbers
from .files import APPROXIMATED, NAME, PROTOCOL, SOURCES, TASKS
from .metrics import METRICS

OPTIONS: tuple[Option, ...] = (
    Option("task", str, "tool_usage", "which task file to run: planning, tool_creation, tool_usage_awareness, "
           "tool_usage (the released test files), or one of the approximations built from test.json "
           "(tool_selection_approx, tool_creation_awareness_approx; not comparable with the paper)", choices=TASKS),
    Option("parser", str, "gpt", "how answers are read: the official parser as it reads the GPT runs (gpt), or as "
           "it reads open models' outputs (open: of several lists in an answer, the last [{...}] is kept)",
           choices=("gpt", "open"), scoring=True),
    Option("language", str, "en", "which test set: en (the English-dataset) or zh (the Chinese-dataset, the "
           "source the English one was translated from); prompts, rubrics and the judge's score keys follow it",
           choices=("en", "zh"), aliases=(("ch", "zh"), ("chinese", "zh"), ("english", "en")), serve=True),
    Option("distractors", int, 3, "approximations only: tools of other samples added to each toolset (seeded)",
           check=lambda v: None if 0 <= v <= 20 else "must be between 0 and 20"),
)


def needed_files(options: Mapping[str, Any], data_dir: Path) -> list[tuple[str, RemoteFile]]:
    """The test files and examples that ``data_dir`` lacks, with the official code files (the prompts'
    source) when anything else is missing too; the published predictions only on request.

    A data directory that already holds the test set (a copy made without the prompt files) serves
    and scores without them; only a ``paper`` run needs them, and its check names the fetch command. The Chinese test set
    (``--language zh``) is its own source, ``ultratool-zh``."""
    source = "ultratool-zh" if options.get("language") in ("zh", "ch", "chinese") else "ultratool"
    missing = [(source, f) for f in SOURCES[source] if not (data_dir / f.dest).is_file()]
    if all(f in PROTOCOL for _, f in missing):
        return []
    return missing


def _paper_setting(summary: Mapping[str, Any]) -> dict[str, Any]:
    """A run's setting in the paper's terms: the task (approximations keep their own names, so they
    never meet the paper's rows), the strategy, the language (a run made before the option existed
    is English): a run only ever meets its own language's rows."""
    options = summary.get("options") or {}
    language = str(options.get("language") or summary.get("language") or "en")
    return {"dataset": NAME, "task": str(options.get("task") or summary.get("task") or "tool_usage"),
            "strategy": str(summary.get("strategy") or "paper"), "language": language}


INFO = BenchmarkInfo(
    name=NAME, plugin=".plugin:UltraToolBenchmark", scorer_version=2,  # CHANGELOG.md
    strategies=("paper", "agent"), options=OPTIONS, metrics=METRICS, uses_judge=True,
    data_sources=SOURCES, needed_files=needed_files,
    paper_numbers=PaperNumbers(_paper_setting, "overall_score", separate=("language",)),
)
BENCHMARKS = (INFO,)
__all__ = ["APPROXIMATED", "BENCHMARKS", "INFO"]
