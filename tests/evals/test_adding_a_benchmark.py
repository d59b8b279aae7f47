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


def test_every_registered_plugin_string_resolves():
    """Issue 41 item 4: each entry names its plugin as a string, found in the package that declares it
    (imported only on load); its paper numbers read the YAML beside it."""
    for name, info in registry.all_benchmarks().items():
        assert isinstance(info.plugin, str) and info.package.startswith("evals.benchmarks."), name
        cls = info.plugin_class()
        for method in ("task_ids", "check", "mounts", "data_files", "prepare", "episode", "score"):
            assert callable(getattr(cls, method, None)), f"{name}: {info.plugin} lacks {method}"
        if info.paper_numbers is not None:
            assert info.paper_numbers.path == Path(__file__).resolve().parents[2].joinpath(
                *info.package.split("."), "paper_numbers.yaml"), name
            assert info.paper_numbers.path.is_file(), name


def test_the_guides_declaration_is_data_only_and_its_needed_files_come_from_its_sources(arith, tmp_path):
    """The example's ``__init__`` declares, it defines no function (no ``_load``); an entry without
    ``needed_files`` needs every file of its ``data_sources`` that the data directory lacks."""
    assert "\ndef " not in guide_files()["__init__.py"]
    info = registry.get_benchmark("arith")
    assert info.default_strategy == "agent" and info.description.startswith("arith:")
    from evals.core.data import RemoteFile
    from evals.core.plugin import BenchmarkInfo

    file = RemoteFile("arith/tasks.jsonl", "https://example.invalid/tasks.jsonl", "0" * 64, 10)
    sourced = BenchmarkInfo(name="x", plugin=".plugin:X", data_sources={"x": (file,)})
    assert sourced.missing_files({}, tmp_path) == [("x", file)]
    (tmp_path / "arith").mkdir()
    (tmp_path / "arith" / "tasks.jsonl").write_text("{}")
    assert sourced.missing_files({}, tmp_path) == []
    with pytest.raises(ValueError, match="needs the declaring package"):
        sourced.plugin_class()
    with pytest.raises(ValueError, match="is not 'module:ClassName'"):
        BenchmarkInfo(name="y", plugin="plugin.Y").plugin_class()
