"""BFCL through the real MCP server: the oracle scores 100 in every served category, a scripted model
with known mistakes gets the hand-computed numbers, and an unserved category is refused (exit 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evals.benchmarks.bfcl.checker import check_calls
from evals.benchmarks.bfcl.data import load_entries
from evals.benchmarks.bfcl.files import SINGLE_TURN
from evals.benchmarks.bfcl.single_turn import gold_calls
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
    assert summary["completed"] == min(20, len(load_entries((category,)))) and m[category] == 100.0
    assert m["accuracy"] == 100.0
    assert await score_run_dir(tmp_path / "run") == summary | {"run_dir": summary["run_dir"]}


@pytest.mark.parametrize("category", ["multi_turn_composite", "nonsense"])  # refused ones: test_bfcl_memory
def test_a_category_bfcl_v4_does_not_score_is_refused_with_exit_2(bfcl_data, category):
    done = _evals("run", "bfcl", "--category", category, "--model", "oracle", timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"no BFCL v4 category {category!r}; served: simple_python," in done.stderr


# Entries whose possible answers no call can meet (BFCL's own checker agrees: the fidelity test's
# "right" response of each is the oracle's): an ArrayList of `any` whose answer holds numbers and
# booleans (BFCL reads every element of one as a string), a required parameter whose possible values
# are [] or which the answer leaves out, an answer parameter the doc does not declare.
UNREACHABLE = {"simple_java_36", "simple_java_65", "live_simple_106-63-0", "live_simple_112-68-0",
               "live_multiple_862-181-3", "live_multiple_964-207-0"}


def test_the_oracles_calls_are_right_in_every_entry_no_call_can_miss(bfcl_data):
    wrong = set()
    for entry in load_entries(SINGLE_TURN):
        calls = [(c["name"], c["arguments"]) for c in gold_calls(entry)]
        if not check_calls(entry.category, entry.functions, calls, entry.ground_truth).valid:
            wrong.add(entry.id)
    assert wrong == UNREACHABLE


async def test_live_messages_are_sent_as_bfcl_sends_them_system_and_history_included(bfcl_data, tmp_path):
    entries = {e.id: e for e in load_entries(("live_simple", "live_irrelevance"))}
    system = next(e for e in entries.values() if e.category == "live_simple" and e.messages[0]["role"] == "system")
    history = next(e for e in entries.values() if [m["role"] for m in e.messages] == ["user", "assistant", "user"])
    opts = RunOptions(benchmark="bfcl", model="oracle", run_dir=tmp_path / "run", transport="http",
                      task_ids=[system.id, history.id], progress=False,
                      benchmark_options={"category": ["live_simple", "live_irrelevance"]})
    _, summary = await run_benchmark(opts)
    assert summary["completed"] == 2 and summary["metrics"]["accuracy"] == 100.0
    for line in (tmp_path / "run" / "traces.jsonl").read_text().splitlines():
        trace = json.loads(line)
        entry = entries[trace["task_id"]]
        request = next(e for e in trace["events"] if e["kind"] == "model_request")
        assert [(m["role"], m["text"]) for m in request["messages"]] == \
            [(m["role"], m["content"]) for m in entry.messages]


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
