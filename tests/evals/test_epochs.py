"""``evals run --epochs K``: each task K times, each trial its own trace, resumable; the summary's
``epochs`` block (mean over trials with its standard error, pass@k and pass^k, the tasks whose
outcome changed), the papers' metrics left at trial 1. With the oracle (the same outcome every
trial, also through worker processes) and a scripted model (the real openai SDK against a local
stand-in) that answers right, wrong, right."""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter

import pytest
from fake_providers import FakeProviderServer, openai_chat

from client.runs import RunDir
from evals.benchmarks.ultratool.parsing import surviving_literal
from evals.benchmarks.ultratool.tasks import build_prompt, load_records
from evals.core.data import data_dir
from evals.core.epochs import epochs_block, epochs_warning, pass_at_k, pass_hat_k, split_key, trial_keys
from evals.core.metrics import Metric, TaskScore
from evals.core.run import RunOptions, run_benchmark, score_run_dir

needs_data = pytest.mark.skipif(
    not (data_dir() / "ultratool" / "English-dataset" / "test_set" / "tool_usage_awareness.json").is_file(),
    reason="UltraTool data not found; set EVALS_DATA_DIR (e.g. to ../shared/data)")
TASK = {"task": "tool_usage_awareness"}


def _by_enumeration(outcomes: list[bool], k: int) -> tuple[float, float]:
    """pass@k and pass^k as the mean over every k-subset of the trials (what the estimators estimate)."""
    subsets = list(itertools.combinations(outcomes, k))
    return (sum(any(s) for s in subsets) / len(subsets), sum(all(s) for s in subsets) / len(subsets))


@pytest.mark.parametrize("outcomes", [[True, False, True], [False, False, True, False], [True] * 3, [False] * 5,
                                      [True, True, False, True, False]])
def test_pass_at_k_and_pass_hat_k_are_the_unbiased_estimators(outcomes):
    n, c = len(outcomes), sum(outcomes)
    for k in range(1, n + 1):
        at, hat = _by_enumeration(outcomes, k)
        assert pass_at_k(n, c, k) == pytest.approx(at) and pass_hat_k(n, c, k) == pytest.approx(hat)
    assert pass_at_k(3, 2, 2) == 1.0 and pass_hat_k(3, 2, 2) == pytest.approx(1 / 3)


def test_trial_keys_are_the_task_ids_then_numbered_trials():
    assert trial_keys(["a", "b"], 1) == ["a", "b"]
    assert trial_keys(["a", "b"], 3) == ["a", "b", "a#2", "b#2", "a#3", "b#3"]
    assert split_key("a#3", 3) == ("a", 3) and split_key("a#3", 1) == ("a#3", 1) and split_key("a", 3) == ("a", 1)
    with pytest.raises(ValueError, match="task ids hold"):
        trial_keys(["x#1"], 2)
    with pytest.raises(ValueError, match="at least 1"):
        trial_keys(["a"], 0)


@needs_data
async def test_the_oracle_over_three_epochs_then_four_resumed_in_worker_processes(tmp_path):
    opts = RunOptions(benchmark="ultratool", model="oracle", strategy="paper", run_dir=tmp_path / "r", limit=4,
                      concurrency=4, progress=False, benchmark_options=TASK, epochs=3)
    result, summary = await run_benchmark(opts)
    assert result.completed == 12 and summary["tasks"] == 4 and summary["metrics"]["global_accuracy"] == 100.0
    epochs = summary["epochs"]
    assert epochs["k"] == 3 and epochs["complete_tasks"] == 4 and epochs["changed_tasks"] == []
    assert epochs["pass_metric"] == "global_accuracy"
    assert epochs["pass_at_k"] == epochs["pass_hat_k"] == {"1": 100.0, "2": 100.0, "3": 100.0}
    assert epochs["metrics"]["global_accuracy"] == {"mean": 100.0, "stderr": 0.0, "trials": [100.0, 100.0, 100.0]}
    traces = list(RunDir.open(tmp_path / "r").iter_traces())
    assert sorted(Counter(t["task_id"] for t in traces).values()) == [1] * 12  # each trial its own trace
    # a fourth epoch later, through two worker processes: only the new trials run
    opts4 = RunOptions(benchmark="ultratool", model="oracle", strategy="paper", run_dir=tmp_path / "r", limit=4,
                       concurrency=4, progress=False, benchmark_options=TASK, epochs=4, workers=2)
    result4, summary4 = await run_benchmark(opts4)
    assert result4.skipped == 12 and result4.completed == 4 and summary4["epochs"]["k"] == 4
    assert {t["task_id"] for t in RunDir.open(tmp_path / "r").iter_traces()} >= {"0#4", "3#4"}
    assert (await score_run_dir(tmp_path / "r"))["epochs"] == summary4["epochs"]  # re-scored offline: the same


@needs_data
async def test_a_model_right_wrong_right_gives_pass_at_k_pass_hat_k_and_the_changed_tasks(tmp_path, monkeypatch):
    records = load_records("tool_usage_awareness")[:3]
    gold = {build_prompt(r): surviving_literal(r.reference) for r in records}
    asked: Counter[str] = Counter()

    def answer(body: dict) -> dict:
        prompt = body["messages"][-1]["content"]
        asked[prompt] += 1
        right = asked[prompt] % 2 == 1  # trial 1 right, trial 2 wrong, trial 3 right
        return openai_chat(gold[prompt] if right else "[]", usage=(100, 10))

    with FakeProviderServer() as server:
        server.openai.respond_with(answer)
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        opts = RunOptions(benchmark="ultratool", model="openai:scripted", strategy="paper", run_dir=tmp_path / "r",
                          limit=3, concurrency=1, progress=False, benchmark_options=TASK, epochs=3)
        _, summary = await run_benchmark(opts)
    assert set(asked.values()) == {3}
    assert summary["metrics"]["global_accuracy"] == 100.0  # the paper's metric: one trial, the first
    epochs = summary["epochs"]
    assert epochs["metrics"]["global_accuracy"]["trials"] == [100.0, 0.0, 100.0]
    assert epochs["metrics"]["global_accuracy"]["mean"] == 66.67
    assert epochs["pass_at_k"] == {"1": 66.67, "2": 100.0, "3": 100.0}
    assert epochs["pass_hat_k"] == {"1": 66.67, "2": 33.33, "3": 0.0}
    assert sorted(epochs["changed_tasks"]) == ["0", "1", "2"]
    scores = [json.loads(line)["task_id"] for line in (tmp_path / "r" / "scores.jsonl").read_text().splitlines()]
    assert sorted(scores) == ["0", "0#2", "0#3", "1", "1#2", "1#3", "2", "2#2", "2#3"]


def _tau_bench_pass_hat_k(results: list[tuple[str, int, bool]]) -> dict[int, float]:
    """pass^k as tau-bench's ``display_metrics`` computes it from its results (task, trial, passed):
    the run's number of trials is the number of distinct trials seen; each task's c is its passes
    among the results it has, over that number."""
    n = len({trial for _, trial, _ in results})
    c: dict[str, int] = {}
    for task, _, passed in results:
        c[task] = c.get(task, 0) + passed
    return {k: sum(math.comb(x, k) / math.comb(n, k) for x in c.values()) / len(c) for k in range(1, n + 1)}


def test_a_trial_with_no_trace_counts_as_failed_as_tau_bench_counts_it():
    """A run stopped part-way: task b has no third trial. tau-bench counts b over the run's 3 trials
    with the passes it has; so does the epochs block, and it says how many trials are missing."""
    def score(passed: bool) -> TaskScore:
        return TaskScore({"acc": (float(passed), 1.0)})

    outcomes = {"a": [True, True, True], "b": [True, True], "c": [False, True, True]}
    block = epochs_block((Metric("acc", "accuracy"),), {t: [score(x) for x in o] for t, o in outcomes.items()})
    assert block is not None
    tau = _tau_bench_pass_hat_k([(t, k, x) for t, o in outcomes.items() for k, x in enumerate(o)])
    assert block["pass_hat_k"] == {str(k): round(100 * v, 2) for k, v in tau.items()}
    assert block["pass_hat_k"] == {"1": 77.78, "2": 55.56, "3": 33.33}  # b: 2 of 3; left out it was 83.33 / 66.67 / 50
    assert block["missing_trials"] == 1 and block["complete_tasks"] == 2 and block["tasks"] == 3
    assert block["pass_at_k"]["1"] == 77.78
    assert "1 trial(s) of 1 task(s) have no trace" in (epochs_warning(block) or "")
    assert epochs_warning({**block, "missing_trials": 0}) is None


@needs_data
async def test_a_run_stopped_before_its_last_trials_says_so_and_counts_them_failed(tmp_path):
    opts = RunOptions(benchmark="ultratool", model="oracle", strategy="paper", run_dir=tmp_path / "r", limit=3,
                      concurrency=3, progress=False, benchmark_options=TASK, epochs=3)
    await run_benchmark(opts)
    traces = tmp_path / "r" / "traces.jsonl"
    kept = [line for line in traces.read_text().splitlines() if json.loads(line)["task_id"] != "1#3"]
    traces.write_text("\n".join(kept) + "\n")  # as if the run had stopped before trial 3 of task 1
    summary = await score_run_dir(tmp_path / "r")
    epochs = summary["epochs"]
    assert epochs["missing_trials"] == 1 and epochs["complete_tasks"] == 2
    assert epochs["pass_hat_k"] == {"1": 88.89, "2": 77.78, "3": 66.67}  # task 1: 2 passes of 3 trials
    assert any(w.startswith("epochs: 1 trial(s) of 1 task(s) have no trace") for w in summary["warnings"])
    # and the anomalies say it, with how they were counted (once, with the run's other entries kept)
    missing = [a for a in summary["anomalies"] if a["kind"] == "missing_trials"]
    assert len(missing) == 1 and missing[0]["source"] == "run" and missing[0]["count"] == 1
    assert missing[0]["counted_as"] == "failed, in pass@k and pass^k" and "tau-bench" in missing[0]["official"]
