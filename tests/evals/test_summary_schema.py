"""The summary's published JSON Schema (``evals/core/summary.schema.json``, version 2), the old block
names kept readable for one version, and offline re-scoring with scoring-only options (``evals score
RUN --scoring project``: FamilyTool's other reading of the same traces, no model called)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from evals.core.registry import all_benchmarks, scoring_options
from evals.core.scoring import SUMMARY_SCHEMA, SUMMARY_SCHEMA_VERSION

REPO = Path(__file__).resolve().parents[2]
RUNS = REPO / "tests" / "evals" / "regression" / "runs"
SCHEMA = json.loads(SUMMARY_SCHEMA.read_text())


def _validate(summary: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator(SCHEMA).validate(summary)


def _copy(name: str, tmp_path: Path) -> Path:
    src, work = RUNS / name, tmp_path / name
    work.mkdir()
    shutil.copy(src / "config.json", work / "config.json")
    (work / "traces.jsonl").write_bytes(gzip.decompress((src / "traces.jsonl.gz").read_bytes()))
    if (src / "scores.jsonl.gz").is_file():
        (work / "scores.jsonl").write_bytes(gzip.decompress((src / "scores.jsonl.gz").read_bytes()))
    return work


def _score(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, EVALS_CACHE_DIR=str(tmp_path / "cache"))
    return subprocess.run([sys.executable, "-m", "evals.cli", "score", *args, "--json"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


def _summary(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_schema_is_a_valid_json_schema_of_this_version():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["properties"]["schema_version"] == {"const": SUMMARY_SCHEMA_VERSION} == {"const": 2}
    with pytest.raises(jsonschema.ValidationError):  # it can fail: a version-1 summary has no schema_version
        _validate({k: v for k, v in _minimal().items() if k != "schema_version"})
    with pytest.raises(jsonschema.ValidationError):
        _validate({**_minimal(), "metrics": {"tool_em": "40.0"}})
    _validate(_minimal())


def _minimal() -> dict[str, Any]:
    return {"schema_version": 2, "run_dir": "r", "benchmark": "b", "model": "m", "strategy": "s", "tasks": 1,
            "completed": 1, "errored": 0, "first_error": None, "metrics": {"a": 1.0}, "metric_stats": {},
            "breakdowns": {}, "warnings": [], "options": {}, "totals": {"model": {}, "judge": {}},
            "deprecated_blocks": {}}


def test_rescoring_with_a_scoring_option_changes_the_reading_not_the_run(tmp_path):
    """A FamilyTool run scored officially is re-scored with ``--scoring project`` (and back) from its
    traces and stored judge decisions: the project blocks appear, the old name ``strict_metrics``
    repeats ``project_strict_metrics`` (listed in ``deprecated_blocks``), the run's config is left
    as it was, and every summary validates against the schema."""
    run = _copy("familytool-b_kgetool_judge", tmp_path)  # recorded with --scoring project
    stored = json.loads((RUNS / "familytool-b_kgetool_judge" / "expected.json").read_text())
    config = (run / "config.json").read_text()
    official = _summary(_score(tmp_path, str(run), "--scoring", "official"))
    assert official["rescored_with"] == {"scoring": "official"} and official["options"]["scoring"] == "official"
    assert "project_metrics" not in official and "strict_metrics" not in official
    assert official["deprecated_blocks"] == {} and official["metrics"] == stored["metrics"]
    project = _summary(_score(tmp_path, str(run)))  # the run's own option again
    assert "rescored_with" not in project
    assert project["project_strict_metrics"] == stored["project_strict_metrics"]
    assert project["strict_metrics"] == project["project_strict_metrics"]
    assert project["deprecated_blocks"] == {"strict_metrics": "project_strict_metrics"}
    assert (run / "config.json").read_text() == config
    for summary in (official, project):
        assert summary["schema_version"] == 2
        _validate(summary)
    # a run made with the official scoring gets the project's reading without a rerun
    agent = _copy("familytool-b_agent", tmp_path)
    again = _summary(_score(tmp_path, str(agent), "--scoring", "project"))
    assert again["project_metrics"] and again["rescored_with"] == {"scoring": "project"}
    _validate(again)


def test_a_scoring_option_the_runs_benchmark_does_not_declare_is_refused(tmp_path):
    run = _copy("toolhop_direct", tmp_path)
    proc = _score(tmp_path, str(run), "--scoring", "project")
    assert proc.returncode == 2 and "--scoring: not a scoring option of toolhop" in proc.stderr
    assert "Traceback" not in proc.stderr
    bad = _score(tmp_path, str(run), "--scoring", "nonsense")
    assert bad.returncode == 2 and "must be one of" in bad.stderr


def test_scoring_options_are_declared_once_and_change_no_episode():
    names = {o.name for o in scoring_options()}
    assert {"scoring", "parser"} <= names
    for info in all_benchmarks().values():
        for option in info.options:
            assert not (option.scoring and option.serve), (info.name, option.name)  # served tools never depend on it
