"""Regression: ``evals score`` on recorded runs reproduces every stored number.

Each directory under ``runs/`` is an ``evals run`` directory made by ``make_fixture.py`` (config.json
and gzipped traces) with ``expected.json``, the ``evals score --json`` summary of the code it was
made with (see README.md). The current code re-scores a copy and must give the same
``tasks``/``completed``/``errored`` (exactly), the same ``first_error`` task, class and
retryability, and the same ``metrics``, ``strict_metrics``, ``breakdowns`` and ``matchers``:
every number stored there (a float to 1e-9, an int exactly), found by a recursive walk of the
stored value, so keys the current code adds do not matter but none stored may go missing. Paths
(``run_dir``), the options layout (``options``) and the first error's message are not compared.
"""

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

from evals.core.scoring import SUMMARY_SCHEMA

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
RUNS = sorted(p for p in (HERE / "runs").iterdir() if (p / "expected.json").is_file()) if (HERE / "runs").is_dir() else []

# top-level keys of the summary that are compared; everything inside them is walked
COMPARED = ("tasks", "completed", "errored", "metrics", "strict_metrics", "nonstrict_metrics", "project_metrics",
            "project_strict_metrics", "agent_kg_metrics", "breakdowns", "matchers")
FIRST_ERROR_KEYS = ("task_id", "type", "retryable")


def compare(stored: Any, current: Any, where: str, problems: list[str]) -> None:
    """Append to ``problems`` every place where ``current`` does not reproduce ``stored``."""
    if isinstance(stored, dict):
        if not isinstance(current, dict):
            problems.append(f"{where}: stored an object, now {current!r}")
            return
        for key, value in stored.items():
            if key not in current:
                problems.append(f"{where}.{key}: missing (stored {value!r})")
            else:
                compare(value, current[key], f"{where}.{key}", problems)
    elif isinstance(stored, list):
        if not isinstance(current, list) or len(current) != len(stored):
            problems.append(f"{where}: stored {stored!r}, now {current!r}")
            return
        for i, (s, c) in enumerate(zip(stored, current, strict=True)):
            compare(s, c, f"{where}[{i}]", problems)
    elif isinstance(stored, bool) or stored is None or isinstance(stored, str):
        if current != stored or type(current) is not type(stored):
            problems.append(f"{where}: stored {stored!r}, now {current!r}")
    elif isinstance(stored, int):  # counts: exactly
        if type(current) is not int or current != stored:
            problems.append(f"{where}: stored {stored!r}, now {current!r}")
    elif isinstance(stored, float):
        if isinstance(current, bool) or not isinstance(current, int | float) or current != pytest.approx(stored, abs=1e-9):
            problems.append(f"{where}: stored {stored!r}, now {current!r}")
    else:  # pragma: no cover - JSON has no other types
        problems.append(f"{where}: unexpected stored value {stored!r}")


def summary_problems(stored: dict[str, Any], current: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    for key in COMPARED:
        if key in stored:
            if key not in current:
                problems.append(f"{key}: missing (stored {stored[key]!r})")
            else:
                compare(stored[key], current[key], key, problems)
    first = stored.get("first_error")
    now = current.get("first_error")
    if (first is None) != (now is None):
        problems.append(f"first_error: stored {first!r}, now {now!r}")
    elif first is not None:
        compare({k: first[k] for k in FIRST_ERROR_KEYS if k in first}, now, "first_error", problems)
    return problems


@pytest.fixture(scope="module")
def score_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An empty cache of its own (no derived ToolHop chains from other tests), the ToolHop subset."""
    env = dict(os.environ)
    env.update(EVALS_CACHE_DIR=str(tmp_path_factory.mktemp("rescore-cache")), EVALS_TOOLHOP="subset",
               PYTHONPATH=os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
    return env


def _rescore(run: Path, tmp_path: Path, env: dict[str, str]) -> dict[str, Any]:
    work = tmp_path / run.name
    work.mkdir()
    shutil.copy(run / "config.json", work / "config.json")
    (work / "traces.jsonl").write_bytes(gzip.decompress((run / "traces.jsonl.gz").read_bytes()))
    if (run / "scores.jsonl.gz").is_file():  # stored judge decisions, reused by evals score
        (work / "scores.jsonl").write_bytes(gzip.decompress((run / "scores.jsonl.gz").read_bytes()))
    proc = subprocess.run([sys.executable, "-m", "evals.cli", "score", str(work), "--json"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"evals score {run.name} exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_fixture_is_there():
    names = {p.name for p in RUNS}
    assert len(RUNS) >= 8, names
    for run in RUNS:
        assert {p.name for p in run.iterdir()} >= {"config.json", "traces.jsonl.gz", "expected.json"}, run.name


def test_the_fixture_covers_what_it_claims():
    """Mistakes, the judge, errored episodes and the ToolHop oracle's scored subset are all in it."""
    exp = {p.name: json.loads((p / "expected.json").read_text()) for p in RUNS}
    assert {e["benchmark"] for e in exp.values()} == {"familytool-b", "familytool-e", "toolhop"}
    assert any(e["errored"] for e in exp.values() if e["benchmark"].startswith("familytool"))
    assert any(e["errored"] for e in exp.values() if e["benchmark"] == "toolhop")
    assert any(e.get("matchers", {}).get("llm") for e in exp.values())
    assert any(e.get("matchers", {}).get("response") for e in exp.values())
    oracle = [e for e in exp.values() if e["model"] == "oracle"]
    assert oracle and all(e["metrics"]["scored_tasks"] < e["tasks"] for e in oracle)
    for name, e in exp.items():
        if e["model"] != "oracle":  # every model run makes mistakes
            m = e["metrics"]
            assert 0 < m.get("tool_em", m.get("answer_accuracy")) < 100, name


@pytest.mark.parametrize("run", RUNS, ids=[p.name for p in RUNS])
def test_rescore_reproduces_the_stored_summary(run, tmp_path, score_env, data_dir):
    stored = json.loads((run / "expected.json").read_text())
    if stored["benchmark"] == "toolhop" and not (data_dir / "toolhop" / "toolhop_subset100_localbench.jsonl").is_file():
        pytest.skip(f"ToolHop subset not found under {data_dir}")
    current = _rescore(run, tmp_path, score_env)
    problems = summary_problems(stored, current)
    assert not problems, f"{run.name}: {len(problems)} difference(s):\n" + "\n".join(problems[:60])
    # and it is a summary of the published schema's version (evals/core/summary.schema.json)
    jsonschema.Draft202012Validator(json.loads(SUMMARY_SCHEMA.read_text())).validate(current)


def test_compare_reports_every_difference():
    stored = {"tasks": 3, "metrics": {"a": 50.0, "b": 1}, "breakdowns": {"hops": {"2": {"tasks": 2}}},
              "first_error": {"task_id": "x", "type": "ModelError", "message": "m", "retryable": False}}
    same = {**stored, "metrics": {"a": 50.0 + 1e-12, "b": 1, "new": 7}, "extra": 1,
            "first_error": {**stored["first_error"], "message": "other"}}
    assert summary_problems(stored, same) == []
    bad = {"tasks": 3.0, "metrics": {"a": 50.01}, "breakdowns": {"hops": {}}, "first_error": None}
    assert summary_problems(stored, bad) == [
        "tasks: stored 3, now 3.0", "metrics.a: stored 50.0, now 50.01", "metrics.b: missing (stored 1)",
        "breakdowns.hops.2: missing (stored {'tasks': 2})",
        "first_error: stored {'task_id': 'x', 'type': 'ModelError', 'message': 'm', 'retryable': False}, now None",
    ]
