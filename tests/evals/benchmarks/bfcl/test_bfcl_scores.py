"""BFCL's grouped leaderboard scores (evals/benchmarks/bfcl/scores.py) beside BFCL's own aggregation
(``generate_leaderboard_csv``, run in .ci/bfcl-venv by ``bfcl_scores_driver.py``): the same per-category
results give the same cells to the last printed digit, categories not run included (BFCL counts them as 0
over the wheel's entries, and prints some scores "N/A": those have no value here, the others name what
is missing)."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

from evals.benchmarks.bfcl.metrics import METRICS
from evals.benchmarks.bfcl.scores import ENTRIES, GROUPS, LIVE_AST, SCORE_METRICS
from evals.core.metrics import Metric, TaskScore, aggregate

DRIVER = Path(__file__).with_name("bfcl_scores_driver.py")

# BFCL v4's scoring categories, as its leaderboard code names them, with their entries in the pinned wheel
SIZES = {
    "simple_python": 400, "simple_java": 100, "simple_javascript": 50, "multiple": 200, "parallel": 200,
    "parallel_multiple": 200, "irrelevance": 240, "live_simple": 258, "live_multiple": 1053, "live_parallel": 16,
    "live_parallel_multiple": 24, "live_irrelevance": 884, "live_relevance": 16, "multi_turn_base": 200,
    "multi_turn_miss_func": 200, "multi_turn_miss_param": 200, "multi_turn_long_context": 200,
    "web_search_base": 100, "web_search_no_snippet": 100, "memory_kv": 155, "memory_vector": 155, "memory_rec_sum": 155,
}
ALL = (*(Metric(c, c, over="entries") for c in SIZES), *SCORE_METRICS)
assert ENTRIES == SIZES  # the counts BFCL gives a category not run

# our score -> (BFCL's CSV file, its column)
CELLS = {
    "overall_acc": ("data_overall", "Overall Acc"),
    "non_live_ast": ("data_overall", "Non-Live AST Acc"),
    "simple_ast": ("data_overall", "Non-Live Simple AST"),
    "live_ast": ("data_overall", "Live Acc"),
    "multi_turn_acc": ("data_overall", "Multi Turn Acc"),
    "web_search_summary": ("data_overall", "Web Search Acc"),
    "memory_summary": ("data_overall", "Memory Acc"),
    "irrelevance_detection": ("data_overall", "Irrelevance Detection"),
    "agentic_acc": ("data_agentic", "Agentic Overall Acc"),
}


def _scores(correct: dict[str, int]) -> list[TaskScore]:
    out = []
    for category, right in correct.items():
        out += [TaskScore(samples={category: (1.0 if i < right else 0.0, 1.0)}) for i in range(SIZES[category])]
    return out


def test_every_grouped_score_is_bfcls_cell(bfcl_python, tmp_path):
    rng = random.Random(39)
    runs = {f"m{k}": {c: rng.randint(0, n) for c, n in SIZES.items()} for k in range(40)}
    runs["m40"] = dict.fromkeys(SIZES, 0)
    runs["m41"] = dict(SIZES)
    for k in range(42, 72):  # categories not run: BFCL counts each as 0 over its entries
        run = {c: rng.randint(0, n) for c, n in SIZES.items()}
        runs[f"m{k}"] = {c: r for c, r in run.items() if rng.random() < 0.7}
    runs["m72"] = {c: n for c, n in SIZES.items() if not c.startswith(("web_search", "memory_vector"))}  # all served
    runs["m73"] = {"live_parallel": 3}
    table = {m: {c: {"accuracy": r / SIZES[c], "total_count": SIZES[c]} for c, r in run.items()} for m, run in runs.items()}
    path = tmp_path / "table.json"
    path.write_text(json.dumps(table))
    (tmp_path / "out").mkdir()
    done = subprocess.run([str(bfcl_python), str(DRIVER), str(path), str(tmp_path / "out")], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    theirs = json.loads(done.stdout)
    for model, run in runs.items():
        ours = aggregate(ALL, _scores(run))
        for name, (csv_file, column) in CELLS.items():
            cell = theirs[model][csv_file][column]
            if cell == "N/A":
                assert name not in ours, (model, name)
                continue
            assert f"{ours[name].value:.2f}%" == cell, (model, name)
            leaves = _leaves(name)
            assert ours[name].missing == tuple(c for c in leaves if c not in run), (model, name)
        if "non_live_ast" in ours:  # its other table prints it whatever is missing; ours only when none is
            assert theirs[model]["data_non_live"]["Non-Live Overall Acc"] == f"{ours['non_live_ast'].value:.2f}%"
        assert theirs[model]["data_live"]["Live Overall Acc"] == f"{ours['live_ast'].value:.2f}%"
        assert theirs[model]["data_multi_turn"]["Multi Turn Overall Acc"] == f"{ours['multi_turn_acc'].value:.2f}%"


def _leaves(name: str) -> list[str]:
    """The categories a grouped score is computed from, in order."""
    parts = next(p for n, _, p in GROUPS if n == name)
    return list(dict.fromkeys(c for p in parts for c in (_leaves(p) if p in {g for g, _, _ in GROUPS} else [p])))


def test_a_category_not_run_counts_as_zero_and_is_named():
    run = {c: SIZES[c] // 2 for c in SIZES}
    full = aggregate(ALL, _scores(run))
    assert all(name in full for name in CELLS) and not any(full[name].missing for name in CELLS)
    assert full["overall_acc"].stderr is not None and full["overall_acc"].stderr > 0
    # the scores cover the entries of their categories (not "0 entries")
    assert full["live_ast"].samples == sum(SIZES[c] for c in LIVE_AST) == full["live_ast"].tasks
    assert full["overall_acc"].samples == sum(n for c, n in SIZES.items() if c != "live_relevance")
    without_java = aggregate(ALL, _scores({c: r for c, r in run.items() if c != "simple_java"}))
    for name in ("simple_ast", "non_live_ast"):
        assert name not in without_java  # BFCL's overall table prints N/A
    assert without_java["overall_acc"].missing == ("simple_java",)
    java_zero = aggregate(ALL, _scores({**run, "simple_java": 0}))
    assert without_java["overall_acc"].value == java_zero["overall_acc"].value  # counted as 0, as BFCL counts it
    assert without_java["live_ast"].value == full["live_ast"].value and "agentic_acc" in without_java
    # a live category not run weighs its wheel's entries in Live Acc
    no_live_multiple = aggregate(ALL, _scores({c: r for c, r in run.items() if c != "live_multiple"}))
    right = sum(run[c] for c in LIVE_AST if c != "live_multiple")
    assert no_live_multiple["live_ast"].value == round(100 * right / sum(SIZES[c] for c in LIVE_AST), 2)
    served = aggregate(METRICS, _scores({c: SIZES[c] for c in SIZES if not c.startswith(("web_search", "memory_vector"))}))
    assert served["overall_acc"].missing == ("web_search_base", "web_search_no_snippet", "memory_vector")
    assert "web_search_summary" not in served and "memory_summary" not in served and "agentic_acc" in served
    assert served["overall_acc"].value == round(100 * (0.1 + 0.1 + 0.1 + 0.3 + 0.4 * (2 / 3) / 2), 2)


def test_the_sizes_here_are_the_pinned_wheels(bfcl_wheel):
    import zipfile

    with zipfile.ZipFile(bfcl_wheel) as archive:
        def entries(name: str) -> int:
            return sum(1 for line in archive.read(f"bfcl_eval/data/BFCL_v4_{name}.json").splitlines() if line.strip())

        for category, n in SIZES.items():
            if not category.startswith(("memory_", "web_search_")):  # one file each, shared by their backends/variants
                assert entries(category) == n, category
        assert entries("web_search") == SIZES["web_search_base"] and entries("memory") == SIZES["memory_kv"]


def test_a_run_meets_the_leaderboards_rows_only_with_the_overall_score_over_whole_categories():
    from evals.core.registry import get_benchmark

    setting = get_benchmark("bfcl").paper_numbers.setting
    assert setting({"metrics": {"overall_acc": 50.0}}) == {"dataset": "bfcl", "strategy": "fc"}
    assert setting({"metrics": {"overall_acc": 50.0}, "subset_note": "10 of 4441 tasks: not comparable"})["dataset"] \
        == "bfcl-partial"
    assert setting({"metrics": {"overall_acc": 50.0}, "partial": True})["dataset"] == "bfcl-partial"
    assert setting({"metrics": {"simple_python": 90.0}})["dataset"] == "bfcl-partial"
