"""NesTools' metrics equal the official evaluation's, to the last digit: hand-made prediction files
(fixtures/, one rule each and a mix) scored by our code, directly and through ``evals score
--format nestools-official``, against the numbers the official eval.py printed for them
(fixtures/README.md has the commands)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.benchmarks.nestools.data import load_tasks
from evals.benchmarks.nestools.official import (
    check_score,
    normalize_date,
    official_numbers,
    parse_prediction,
    score_prediction,
    well_formed,
)
from evals.benchmarks.nestools.rouge import rouge_l_f
from evals.core.data import data_dir
from evals.core.formats import import_predictions
from evals.core.run import score_run_dir

FIXTURES = Path(__file__).parent / "fixtures"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())
DATA = Path(data_dir()) / "nestools" / "test_data.jsonl"
needs_data = pytest.mark.skipif(not DATA.is_file(), reason=f"NesTools data not found at {DATA}")
# eval.py's printed order: format, then P/R/F1 of selection, order, parameters, nested, then the average
PRINTED = ["format_accuracy", *(f"{d}_{m}" for d in ("selection", "order", "param", "nested")
                                for m in ("precision", "recall", "f1")), "average_f1"]
OFFICIAL_KEYS = ["correct_format", *(f"{m}_{d}" for d in ("api", "order", "param", "nest") for m in ("P", "R", "F1"))]


@pytest.fixture(scope="module")
def tasks():
    return {t.test_id: t for t in load_tasks()}


def _ours(tasks, name: str) -> dict:
    samples = []
    for line in (FIXTURES / f"{name}.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["response"] == -1:
            samples.append(None)
            continue
        task = tasks[record["test_id"]]
        samples.append(score_prediction(task.calls, task.api_ids, record["response"]))
    return official_numbers(samples)


@needs_data
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_numbers_equal_the_official_code_to_the_last_digit(tasks, name):
    expected = EXPECTED[name]
    ours = _ours(tasks, name)
    assert ours["all_num"] == expected["all_num"] and ours["tree_acc"] == expected["tree_acc"]
    for key in OFFICIAL_KEYS:
        assert ours[key] == expected[key], key  # exact float equality
    printed = [f"{ours[k] * 100:.1f}" for k in OFFICIAL_KEYS] + [f"{ours['average'] * 100:.1f}"]
    assert printed == expected["printed"]


@needs_data
@pytest.mark.parametrize("name", ["mix", "wrong_value", "failed_sample"])
async def test_evals_score_of_the_official_format_shows_the_official_numbers(name, tmp_path):
    run = import_predictions(FIXTURES / f"{name}.jsonl", "nestools-official", "nestools", tmp_path / "run")
    summary = await score_run_dir(run)
    expected = EXPECTED[name]
    assert [summary["metrics"][k] for k in PRINTED] == [float(v) for v in expected["printed"]]
    assert summary["metrics"]["tree_accuracy"] == round(100 * expected["tree_acc"] / expected["all_num"], 1)
    assert summary["metrics"]["scored_tasks"] == expected["all_num"]
    assert summary["metrics"]["failed_tasks"] == 10 - expected["all_num"]


@needs_data
async def test_a_file_that_repeats_test_ids_is_scored_line_by_line_as_eval_py_and_warned_about(tmp_path, capsys):
    """``repeated_ids.jsonl``: the mix file with a rerun appended (the official inference appends, so
    ids repeat; one rerun line is -1, one answers an id that was -1). Every line counts, as eval.py
    counts it (fixtures/official_output_repeated_ids.txt); the import warns about the repeated ids."""
    expected = EXPECTED["repeated_ids"]
    run = import_predictions(FIXTURES / "repeated_ids.jsonl", "nestools-official", "nestools", tmp_path / "run")
    summary = await score_run_dir(run)
    assert [summary["metrics"][k] for k in PRINTED] == [float(v) for v in expected["printed"]]
    assert summary["metrics"]["scored_tasks"] == expected["all_num"] == 15  # lines, as all_num
    assert summary["metrics"]["tree_accuracy"] == round(100 * expected["tree_acc"] / expected["all_num"], 1)
    assert summary["completed"] == 10 and summary["metrics"]["failed_tasks"] == 0
    # the unrounded ratios: the same sums, added per task rather than in file order (1e-12)
    stats = summary["metric_stats"]
    for ours, theirs in (("param_precision", "P_param"), ("param_recall", "R_param"), ("selection_recall", "R_api")):
        assert abs(stats[ours]["value"] - round(100 * expected[theirs], 1)) < 1e-9
    [warning] = summary["warnings"]
    assert "6 test_id(s) appear on more than one line (7 extra line(s)" in warning and "every line is scored" in warning
    # keeping the last line of each id (the old reading) gives other numbers
    last = {}
    for line in (FIXTURES / "repeated_ids.jsonl").read_text().splitlines():
        last[json.loads(line)["test_id"]] = line
    (tmp_path / "last.jsonl").write_text("".join(v + "\n" for v in last.values()))
    other = await score_run_dir(import_predictions(tmp_path / "last.jsonl", "nestools-official", "nestools",
                                                   tmp_path / "last"))
    assert [other["metrics"][k] for k in PRINTED] != [float(v) for v in expected["printed"]]
    assert other["warnings"] == []


def test_parsing_is_as_lenient_as_the_official_code_and_no_more():
    calls = [{"api_name": "a", "api_id": 1, "parameters": {"x": True}}]
    assert parse_prediction("Sure:\n```json\n" + json.dumps(calls) + "\n```") == calls  # json.loads
    assert parse_prediction(f"{calls!r} and that is all") == calls  # ast.literal_eval
    assert parse_prediction("no list here") == -1 and parse_prediction("[1, 2") == -1
    assert well_formed([]) and well_formed(calls)
    assert not well_formed([{"api_name": "a", "parameters": {}}])  # no api_id
    assert not well_formed([{"api_name": "a", "api_id": 1, "parameters": []}])  # parameters not a mapping
    assert not well_formed(["a"]) and not well_formed(-1)


def test_value_rules():
    assert check_score("API", "API") == 1
    assert check_score(3, 3.0) == 1 and check_score(3, 4) is False and check_score(3, "3") == 0
    assert check_score([1, 2], [1, 3]) == 0.5 and check_score([1, 2], [1]) == 0
    assert check_score({"a_b": 1, "c": 2}, {"A B": 1, "d": 2}) == 0.5  # keys by position, case, "_" and " "
    assert normalize_date("August 15th, 2023") == "2023-08-15" and normalize_date("August 15st, 2023") == "August 15st, 2023"
    assert check_score("2023-08-15", "August 15th, 2023") == pytest.approx(1, abs=1e-8)
    with pytest.raises(ValueError):
        check_score("x", "")  # an empty prediction: the official ROUGE raises, the argument scores 0


def test_rouge_l_counts_distinct_words_and_the_union_of_sentence_lcs():
    def f(p: float, r: float) -> float:
        return 2.0 * ((p * r) / (p + r + 1e-8))

    assert rouge_l_f("a b c", "a b d") == f(2 / 3, 2 / 3)
    assert rouge_l_f("a a b", "a b") == f(1.0, 1.0)  # distinct words: m = n = 2
    # two candidate sentences each share one word with the reference: the union counts both
    assert rouge_l_f("x a. y b", "a b") == f(2 / 4, 2 / 2)
    with pytest.raises(ValueError):
        rouge_l_f("...", "a")
