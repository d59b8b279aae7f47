"""docs/adding-a-benchmark.md is true: its two files, copied into a new folder, are a benchmark that
the registry finds, `evals run NAME --help` describes, the oracle scores 100 on through the real
server, and `evals score` re-scores; nothing else in the project changes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import evals.benchmarks
from evals import cli
from evals.core import fetch, registry
from evals.core.run import RunOptions, run_benchmark, score_run_dir

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "adding-a-benchmark.md"


def guide_files() -> dict[str, str]:
    """The guide's code blocks that start with ``# file: NAME``."""
    blocks = re.findall(r"```python\n(# file: (\S+)\n.*?)```", GUIDE.read_text(), re.S)
    return {name: code for code, name in blocks}


@pytest.fixture
def arith(tmp_path, monkeypatch):
    root = tmp_path / "extra_benchmarks"
    folder = root / "arith"
    folder.mkdir(parents=True)
    files = guide_files()
    assert set(files) == {"__init__.py", "plugin.py"}
    for name, code in files.items():
        (folder / name).write_text(code)
    monkeypatch.setattr(evals.benchmarks, "__path__", [*evals.benchmarks.__path__, str(root)])
    registry.all_benchmarks.cache_clear()
    fetch.sources.cache_clear()
    yield
    registry.all_benchmarks.cache_clear()
    fetch.sources.cache_clear()


def test_the_guides_example_is_a_working_benchmark(arith, tmp_path, capsys):
    assert "arith" in registry.all_benchmarks()
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["run", "arith", "--help"])
    shown = capsys.readouterr().out
    assert "arith options" in shown and "--tasks" in shown and "--kg-search" not in shown


async def test_the_oracle_scores_100_and_evals_score_agrees(arith, tmp_path):
    opts = RunOptions(benchmark="arith", model="oracle", run_dir=tmp_path / "run", progress=False,
                      benchmark_options={"tasks": 4})
    result, summary = await run_benchmark(opts)
    assert summary["completed"] == 4
    assert summary["metrics"] == {"answer_accuracy": 100.0, "call_recall": 100.0}
    assert summary["metric_stats"]["call_recall"]["samples"] == 8  # two gold calls per task
    assert set(summary["breakdowns"]["c"]) == {"3", "4", "5", "6"}
    again = await score_run_dir(tmp_path / "run")
    assert again["metrics"] == summary["metrics"] and again["options"]["tasks"] == 4
