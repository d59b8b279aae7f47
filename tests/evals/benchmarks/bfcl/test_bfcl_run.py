"""BFCL through the real MCP server: the oracle scores 100 in every served category, a scripted model
with known mistakes gets the hand-computed numbers, and an unserved category is refused (exit 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evals.benchmarks.bfcl.data import load_entries
from evals.benchmarks.bfcl.files import SINGLE_TURN
from evals.core.run import RunOptions, run_benchmark, score_run_dir

ROOT = Path(__file__).resolve().parents[4]


def _evals(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "evals.cli", *args], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=ROOT, check=False)


def test_the_oracle_scores_100_on_simple_python_through_the_cli_and_http(bfcl_data, tmp_path):
    done = _evals("run", "bfcl", "--category", "simple_python", "--model", "oracle", "--limit", "20",
                  "--transport", "http", "--run-dir", str(tmp_path / "run"), "--json", "--no-progress")
    assert done.returncode == 0, done.stderr[-2000:]
    metrics = json.loads(done.stdout)["metrics"]
    assert metrics["simple_python"] == 100.0 and metrics["accuracy"] == 100.0
    assert json.loads(done.stdout)["completed"] == 20


@pytest.mark.parametrize("category", [c for c in SINGLE_TURN if c != "simple_python"])
async def test_the_oracle_scores_100_in_every_served_category(bfcl_data, category, tmp_path):
    opts = RunOptions(benchmark="bfcl", model="oracle", run_dir=tmp_path / "run", limit=20, transport="http",
                      concurrency=4, progress=False, benchmark_options={"category": [category]})
    _, summary = await run_benchmark(opts)
    m = summary["metrics"]
    assert summary["completed"] == 20 and m[category] == 100.0 and m["accuracy"] == 100.0
    assert await score_run_dir(tmp_path / "run") == summary | {"run_dir": summary["run_dir"]}


@pytest.mark.parametrize("category", ["live_simple", "simple_java", "web_search", "memory"])
def test_a_category_not_served_yet_is_refused_with_exit_2(bfcl_data, category):
    done = _evals("run", "bfcl", "--category", category, "--model", "oracle", timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"BFCL category {category!r} is not served yet" in done.stderr


def _turns(query: str, calls: list[tuple[str, dict]] | None) -> dict:
    reply = ({"role": "assistant", "function_call": [{"name": n, "arguments": a} for n, a in calls]} if calls
             else {"role": "assistant", "content": "No function fits."})
    return {"messages": [{"role": "user", "content": query}, reply]}


async def test_a_scripted_model_with_known_mistakes_gets_the_hand_computed_numbers(bfcl_code_data, tmp_path):
    e = {x.id: x for x in load_entries()}
    first_irrelevant = e["irrelevance_1"].functions[0]
    script = {
        "simple_python_0": [("calculate_triangle_area", {"base": 10, "height": 5})],  # right
        "simple_python_1": [("math_factorial", {"number": "5"})],  # wrong type: wrong
        "simple_python_2": [("math_hypot", {"x": 4, "y": 5})],  # optional z left out: right
        "simple_python_3": None,  # no call: wrong
        "parallel_0": [("spotify_play", {"artist": "Maroon 5", "duration": 15}),
                       ("spotify_play", {"artist": "taylor swift", "duration": 20})],  # any order, case: right
        "parallel_1": [("calculate_em_force", {"b_field": 5, "area": 2, "d_time": 4})],  # one call short: wrong
        "irrelevance_0": None,  # no call: right
        "irrelevance_1": [(first_irrelevant["name"].replace(".", "_"),
                           dict.fromkeys(first_irrelevant["parameters"]["required"], 1))],  # a call: wrong
        "irrelevance_2": None,  # right
    }
    replay = tmp_path / "script.jsonl"
    replay.write_text("".join(json.dumps(_turns(e[t].query, c)) + "\n" for t, c in script.items()))
    opts = RunOptions(benchmark="bfcl", model=f"replay:{replay}", run_dir=tmp_path / "run", transport="http",
                      task_ids=list(script), concurrency=3, progress=False)
    _, summary = await run_benchmark(opts)
    m = summary["metrics"]
    assert summary["completed"] == 9 and m["failed_episodes"] == 0
    assert (m["simple_python"], m["parallel"], m["irrelevance"], m["accuracy"]) == (50.0, 50.0, 66.67, 55.56)
    scores = {json.loads(x)["task_id"]: json.loads(x) for x in (tmp_path / "run" / "scores.jsonl").read_text().splitlines()}
    assert scores["simple_python_1"]["score"]["details"]["verdict"]["error_type"] == "type_error:simple"
    assert scores["parallel_1"]["score"]["details"]["verdict"]["error_type"] == \
        "parallel_function_checker_no_order:wrong_count"
