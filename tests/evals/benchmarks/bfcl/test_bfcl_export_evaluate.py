"""``evals export --format bfcl --model-name NAME`` gives a folder ``bfcl evaluate`` takes as it is (BFCL's own
runner and model registry, run in .ci/bfcl-venv by ``bfcl_evaluate_driver.py``), and every number BFCL prints of
it is ours: each category's accuracy, every cell of its overall table (Overall Acc with the categories not run
counted as 0, and the cells it prints "N/A"), its cost and latency columns from the token counts and latencies
each line carries. Also: ``--limit-per-category``, the export's refusals, and ``evals leaderboard`` on the run.

The run: the oracle over the first 3 entries of every served category, then (a model with known mistakes)
a few traces changed before scoring: calls dropped, an episode failed; each model response given token
counts and a latency, as a priced model's would have.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evals.benchmarks.bfcl.files import MEMORY_SERVED, SERVED
from evals.benchmarks.bfcl.metrics import COLUMN_OF

ROOT = Path(__file__).resolve().parents[4]
DRIVER = Path(__file__).with_name("bfcl_evaluate_driver.py")
MODEL = "gpt-4o-2024-11-20-FC"  # BFCL's OpenAI FC handler (arguments as JSON text); $2.5 / $10 per million tokens
PER_CATEGORY = 3

# our score -> BFCL's overall table's column (a category's: its label's column, which BFCL's CSV must have)
OVERALL_CELLS = {
    "overall_acc": "Overall Acc", "non_live_ast": "Non-Live AST Acc", "simple_ast": "Non-Live Simple AST",
    "live_ast": "Live Acc", "multi_turn_acc": "Multi Turn Acc", "web_search_summary": "Web Search Acc",
    "memory_summary": "Memory Acc", "irrelevance_detection": "Irrelevance Detection",
    **{c: COLUMN_OF[c] for c in ("multiple", "parallel", "parallel_multiple", "live_simple", "live_multiple",
                                 "live_parallel", "live_parallel_multiple", "multi_turn_base", "multi_turn_miss_func",
                                 "multi_turn_miss_param", "multi_turn_long_context", "memory_kv", "memory_rec_sum",
                                 "live_relevance")},
}
# the traces changed: (task, what the "model" did instead of the gold)
MISTAKES = {
    "simple_python_0": "no call", "multiple_1": "no call", "live_multiple_2-1-0": "no call",
    "live_simple_0-0-0": "no call", "live_relevance_1-1-0": "no call", "irrelevance_0": "a call",
    "live_irrelevance_2-0-2": "a call", "multi_turn_base_1": "failed", "memory_kv_0-customer-0": "wrong answer",
}


def _evals(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "evals.cli", *args], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=ROOT, check=False)


def _mistake(trace: dict[str, Any], what: str) -> None:
    outcome = trace["outcome"]
    if what == "no call":
        outcome["calls"] = []
        trace["final_answer"] = "I cannot help with that."
    elif what == "a call":
        outcome["calls"] = [{"name": "anything", "arguments": {}, "turn": 0}]
    elif what == "failed":
        trace.update(status="errored", error={"type": "APIError", "message": "the model failed", "retryable": False})
    else:
        trace["final_answer"] = "no idea"


def _usage(trace: dict[str, Any], k: int) -> list[tuple[int, int, float]]:
    """Give each model response token counts and a latency; returns them."""
    given = []
    for j, event in enumerate(e for e in trace["events"] if e.get("kind") == "model_response"):
        numbers = (1000 + 7 * k + j, 50 + k, round(0.25 + 0.01 * ((3 * k + j) % 17), 3))
        event["usage"] = {**(event.get("usage") or {}), "input_tokens": numbers[0], "output_tokens": numbers[1]}
        event["latency_s"] = numbers[2]
        given.append(numbers)
    return given


@pytest.fixture(scope="module")
def scored_run(_bfcl_data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], list]:
    from client import eventloop
    from evals.core.data import DATA_ENV
    from evals.core.run import RunOptions, run_benchmark

    root = tmp_path_factory.mktemp("bfcl-export")
    run = root / "run"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(DATA_ENV, str(_bfcl_data_root))
        opts = RunOptions(benchmark="bfcl", model="oracle", run_dir=run, transport="http", progress=False,
                          concurrency=4, benchmark_options={"limit_per_category": PER_CATEGORY})
        eventloop.run(run_benchmark(opts))
        traces = [json.loads(line) for line in (run / "traces.jsonl").read_text().splitlines()]
        given = []
        assert set(MISTAKES) <= {t["task_id"] for t in traces}
        for k, trace in enumerate(traces):
            if trace["task_id"] in MISTAKES:
                _mistake(trace, MISTAKES[trace["task_id"]])
            given += _usage(trace, k)
        (run / "traces.jsonl").write_text("".join(json.dumps(t) + "\n" for t in traces))
        done = _evals("score", str(run), "--json", timeout=600)
        assert done.returncode in (0, 1), done.stderr[-3000:]
        summary = json.loads(done.stdout.strip().splitlines()[-1])
    return run, summary, given


def test_limit_per_category_takes_the_first_entries_of_each(scored_run):
    run, summary, _ = scored_run
    ids = [json.loads(line)["task_id"] for line in (run / "traces.jsonl").read_text().splitlines()]
    categories = SERVED + MEMORY_SERVED
    assert len(ids) == PER_CATEGORY * len(categories)
    assert "simple_python_2" in ids and "simple_python_3" not in ids and "multi_turn_long_context_2" in ids
    assert "--limit-per-category" in summary["subset_note"] and summary["benchmark_tasks"] > len(ids)
    for category in categories:
        assert summary["metric_stats"][category]["tasks"] == PER_CATEGORY


def test_bfcl_evaluate_takes_the_export_and_prints_our_numbers(scored_run, bfcl_data, bfcl_python, tmp_path):
    from evals.core.formats import export_run

    run, summary, given = scored_run
    written = export_run(run, "bfcl", tmp_path / "result", model_name=MODEL)
    assert {p.relative_to(tmp_path / "result").parts[0] for p in written} == {MODEL}
    env = {**os.environ, "BFCL_PROJECT_ROOT": str(tmp_path / "bfcl-root")}
    (tmp_path / "bfcl-root").mkdir()
    done = subprocess.run([str(bfcl_python), str(DRIVER), str(tmp_path / "result"), str(tmp_path / "score"), MODEL],
                          capture_output=True, text=True, timeout=600, check=False, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    theirs = json.loads(done.stdout)
    stats = summary["metric_stats"]
    for category, header in theirs["scores"].items():
        assert f"{100 * header['accuracy']:.2f}" == f"{stats[category]['value']:.2f}", category
        assert header["total_count"] == stats[category]["samples"] == PER_CATEGORY
    assert set(theirs["scores"]) == set(SERVED + MEMORY_SERVED)
    overall = theirs["csv"]["data_overall"]
    for name, column in OVERALL_CELLS.items():
        if overall[column] == "N/A":
            assert name not in stats, name
        else:
            assert overall[column] == f"{stats[name]['value']:.2f}%", (name, overall[column])
    assert all(stats[c]["value"] < 100 for c in ("simple_python", "live_ast", "live_relevance", "irrelevance_detection",
                                                  "multi_turn_acc", "memory_kv"))
    assert overall["Overall Acc"] != "100.00%" and stats["overall_acc"]["missing"] == [
        "web_search_base", "web_search_no_snippet", "memory_vector"]
    assert theirs["csv"]["data_agentic"]["Agentic Overall Acc"] == f"{stats['agentic_acc']['value']:.2f}%"
    # its cost and latency columns, from the lines' token counts and latencies
    tokens_in, tokens_out = sum(g[0] for g in given), sum(g[1] for g in given)
    latencies = [g[2] for g in given]
    assert overall["Total Cost ($)"] == str(round(tokens_in * 2.5 / 1e6 + tokens_out * 10 / 1e6, 2))
    assert overall["Latency Mean (s)"] == str(round(statistics.mean(latencies), 2))
    assert overall["Latency Standard Deviation (s)"] == str(round(statistics.stdev(latencies), 2))
    assert not math.isnan(float(overall["Latency 95th Percentile (s)"]))


def test_the_export_names_a_bfcl_model_or_refuses(scored_run, bfcl_data, tmp_path):
    run, _, _ = scored_run
    done = _evals("export", str(run), "--format", "bfcl", "--model-name", "gpt-4o-2024-11-20-fc", "--out",
                  str(tmp_path / "x"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "not a BFCL model" in done.stderr and "gpt-4o-2024-11-20-FC" in done.stderr  # the closest names
    assert not (tmp_path / "x").exists()
    done = _evals("export", str(run), "--format", "bfcl", "--out", str(tmp_path / "y"))
    assert done.returncode == 0 and "no BFCL model" in done.stderr and "--model-name" in done.stderr
    assert (tmp_path / "y" / "oracle").is_dir()


def test_each_line_carries_the_token_counts_and_latencies_as_bfcl_records_them(scored_run, bfcl_data, tmp_path):
    from evals.core.formats import export_run

    run, _, _ = scored_run
    traces = {t["task_id"]: t for t in map(json.loads, (run / "traces.jsonl").read_text().splitlines())}
    written = export_run(run, "bfcl", tmp_path / "result", model_name=MODEL)
    lines = {r["id"]: r for p in written for r in map(json.loads, p.read_text().splitlines())}

    def responses(task_id: str) -> list[dict[str, Any]]:
        return [e for e in traces[task_id]["events"] if e.get("kind") == "model_response"]

    single = lines["simple_python_1"]
    assert single["input_token_count"] == sum(e["usage"]["input_tokens"] for e in responses("simple_python_1"))
    assert single["latency"] == sum(e["latency_s"] for e in responses("simple_python_1"))
    multi = lines["multi_turn_base_0"]  # per user turn, one number per model response
    assert len(multi["latency"]) == len(multi["result"])
    assert [x for turn in multi["output_token_count"] for x in turn] == \
        [e["usage"]["output_tokens"] for e in responses("multi_turn_base_0")]
    memory = lines["memory_kv_1-customer-1"]
    assert len(memory["latency"]) == 1 and memory["latency"][0] == [e["latency_s"] for e in responses(memory["id"])]


def test_the_leaderboard_shows_bfcls_columns_and_what_was_not_run(scored_run, bfcl_data):
    run, summary, _ = scored_run
    done = _evals("leaderboard", str(run.parent), "--format", "json")
    assert done.returncode == 0, done.stderr[-2000:]
    group = json.loads(done.stdout)["groups"][0]
    keys = [m["key"] for m in group["metrics"]]
    assert keys[:4] == ["overall_acc", "non_live_ast", "simple_ast", "multiple"]
    assert "simple_python" not in keys and "accuracy" not in keys  # BFCL's columns, not one per category
    cell = group["rows"][0]["metrics"]["overall_acc"]
    assert cell["value"] == summary["metrics"]["overall_acc"]
    assert cell["missing"] == ["web_search_base", "web_search_no_snippet", "memory_vector"]
    table = _evals("leaderboard", str(run.parent)).stdout
    assert "Overall Acc (BFCL)" in table and "not run, counted as 0" in table and "memory_vector" in table


def test_a_prompting_run_is_exported_as_the_models_text(scored_run, bfcl_data, tmp_path):
    from client.runs import RunDir
    from evals.core.formats import export_run

    run, _, _ = scored_run
    config = json.loads((run / "config.json").read_text())
    prompting = tmp_path / "prompting"
    prompting.mkdir()
    (prompting / "config.json").write_text(json.dumps({**config, "strategy": "prompting"}))
    traces = [json.loads(line) for line in (run / "traces.jsonl").read_text().splitlines()]
    for trace in traces:  # what a prompting model said: its calls written as text
        for j, event in enumerate(e for e in trace["events"] if e.get("kind") == "model_response"):
            event["response"]["text"] = f"[{trace['task_id']}_text_{j}()]"
    (prompting / "traces.jsonl").write_text("".join(json.dumps(t) + "\n" for t in traces))
    assert RunDir.open(prompting).config["strategy"] == "prompting"
    written = export_run(prompting, "bfcl", tmp_path / "result", model_name="gpt-4o-2024-11-20")
    lines = {r["id"]: r for p in written for r in map(json.loads, p.read_text().splitlines())}
    assert lines["simple_python_1"]["result"] == "[simple_python_1_text_0()]"
    steps = lines["multi_turn_base_0"]["result"]
    assert steps[0][0] == "[multi_turn_base_0_text_0()]" and all(isinstance(s, str) for t in steps for s in t)
    assert lines["multi_turn_base_1"]["result"].startswith("Error during inference")  # the failed episode
    assert lines["memory_kv_1-customer-1"]["result"][0][0] == "[memory_kv_1-customer-1_text_0()]"


def test_the_report_lists_bfcls_columns_first(scored_run, bfcl_data, tmp_path):
    run, _, _ = scored_run
    done = _evals("report", str(run), "--out", str(tmp_path / "report"), timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    text = (tmp_path / "report" / "report.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ") and "(BFCL)" in line]
    assert rows[0].startswith("| Overall Acc (BFCL)") and "not run, counted as 0: web_search_base" in rows[0]
    assert rows[1].startswith("| Non-Live AST Acc (BFCL)") and "| 9 entries (9 tasks) |" in rows[2]  # simple AST
