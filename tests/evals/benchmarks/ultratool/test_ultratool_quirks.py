"""UltraTool files the official code reads with the records before in mind, or stops on (issue 38,
items 5-12): ``fixtures/quirks.json`` scored by the official code (``expected.json``: ``quirks``,
from ``fixtures/run_official.py``) and by ``evals score --format ultratool-official``. Each case
either gives the official number or carries a warning that names the file and its lines, counts
the records and says what the official code does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evals.benchmarks.ultratool.parsing import clean_plan
from evals.core.data import data_dir
from evals.core.formats import import_predictions
from evals.core.run import score_run_dir

HERE = Path(__file__).parent / "fixtures"
CASES = json.loads((HERE / "quirks.json").read_text(encoding="utf-8"))
OFFICIAL = json.loads((HERE / "expected.json").read_text())["quirks"]
ROOT = Path(__file__).resolve().parents[4]
FOLDER = {"en": "English-dataset", "zh": "Chinese-dataset"}


@pytest.fixture(scope="module", autouse=True)
def _needs_data() -> None:
    for folder in FOLDER.values():
        if not (data_dir() / "ultratool" / folder / "test_set" / "tool_usage.json").is_file():
            pytest.skip("UltraTool's data not found; set EVALS_DATA_DIR (e.g. to ../shared/data)")


def _records(language: str, task: str) -> list[dict]:
    path = data_dir() / "ultratool" / FOLDER[language] / "test_set" / f"{task}.json"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write(case: str, root: Path) -> Path:
    """The case as the official file the official code read (the GPT layout)."""
    spec = CASES[case]
    if spec["task"] == "planning_eval":
        records = _records(spec["language"], "planning")
        lines = [{"data": {"data": records[int(r["id"])], "init output": ""}, **({"eval": r["eval"]} if "eval" in r else {})}
                 for r in spec["rows"]]
        path = root / case / "gpt-4" / "eval" / "planning_eval.json"
    else:
        records = _records(spec["language"], spec["task"])
        lines = [{"data": records[int(r["id"])], "init output": r["init output"]} for r in spec["rows"]]
        path = root / case / "gpt-4" / f"{spec['task']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return path


async def _score(case: str, tmp_path: Path) -> dict:
    run = import_predictions(_write(case, tmp_path), "ultratool-official", "ultratool", tmp_path / f"run-{case}")
    summary = await score_run_dir(run)
    assert summary["language"] == CASES[case]["language"]
    return summary


def _pct(value: float) -> float:
    return round(100 * value, 2)


@pytest.mark.parametrize("language", ["en", "zh"])
async def test_answers_stored_as_json_values_are_read_as_the_official_code_reads_them(language, tmp_path):
    """Item 5: a JSON list answer is used as it is (no `，`->`,`, no `json` deleted, null kept); a
    dict, number or null answer keeps the previous record's reading (an empty list after an
    unreadable record); the official numbers, and a warning naming the lines."""
    summary = await _score(f"json_values_{language}", tmp_path)
    assert summary["metrics"]["local_levenshtein"] == _pct(OFFICIAL[f"json_values_{language}"]["total"])
    warning = next(w for w in summary["warnings"] if "JSON dict, null or number" in w)
    assert "tool_usage.json: lines 3, 4, 5, 7 (4 records)" in warning and "3<-2" in warning
    assert any("lines 2, 8 (2 records): the answer is a JSON list" in w for w in summary["warnings"])
    aware = await _score(f"aware_json_values_{language}", tmp_path)
    want = OFFICIAL[f"aware_json_values_{language}"]["total"]
    assert [aware["metrics"]["global_accuracy"], aware["metrics"]["local_accuracy"]] == [_pct(v) for v in want]


@pytest.mark.parametrize("language", ["en", "zh"])
async def test_an_empty_answer_after_an_unreadable_one_is_read_from_the_carried_repair_text(language, tmp_path):
    """Item 6: the official parser reads the empty answer of line 3 as line 2's last repair text
    (0.8333); line 4, empty after a readable answer, stays empty. Reproduced and warned about."""
    summary = await _score(f"carried_{language}", tmp_path)
    assert summary["metrics"]["local_levenshtein"] == _pct(OFFICIAL[f"carried_{language}"]["total"])
    assert OFFICIAL[f"carried_{language}"]["per_record"][2] == 0.8333
    assert any("line 3 (1 record): the answer is empty once cleaned" in w and "3<-2" in w for w in summary["warnings"])


@pytest.mark.parametrize("language", ["en", "zh"])
async def test_repeated_records_are_warned_about_with_their_lines(language, tmp_path):
    """Item 7: the official code scores every line; the project keeps the last of a repeated record
    and says so, naming the record and its lines."""
    summary = await _score(f"repeated_{language}", tmp_path)
    assert summary["metrics"]["local_levenshtein"] != _pct(OFFICIAL[f"repeated_{language}"]["total"])
    assert summary["completed"] == 2
    assert any("1 record repeated (1 extra line: record 0: lines 1, 3)" in w and "the official code scores every line" in w
               for w in summary["warnings"])


@pytest.mark.parametrize("language", ["en", "zh"])
async def test_judge_scores_given_as_true_false_count_one_and_zero(language, tmp_path):
    """Item 8: `总分` / `Overall Score` true/false: the official np.mean counts 1/0 and goes on."""
    summary = await _score(f"judge_booleans_{language}", tmp_path)
    assert summary["metrics"]["overall_score"] == _pct(OFFICIAL[f"judge_booleans_{language}"]["total"][6])
    assert summary["metrics"]["accuracy_score"] == _pct(OFFICIAL[f"judge_booleans_{language}"]["total"][0])
    assert summary["metrics"]["judge_unreadable"] == 0
    assert any("lines 1, 2 (2 records): a score is given as true/false" in w for w in summary["warnings"])


@pytest.mark.parametrize("language", ["en", "zh"])
async def test_a_judgment_row_without_eval_is_counted_and_warned_about(language, tmp_path):
    """Item 8: the official cal_plan_res stops (KeyError) on a row without `eval`; here it is counted
    in judge_unreadable and named, not dropped in silence."""
    assert OFFICIAL[f"judge_no_eval_{language}"]["error"] == "KeyError"
    summary = await _score(f"judge_no_eval_{language}", tmp_path)
    assert summary["metrics"]["judge_unreadable"] == 1 and summary["completed"] == 2
    assert any("planning_eval.json: line 2 (1 record): no eval field" in w and "KeyError" in w for w in summary["warnings"])


@pytest.mark.parametrize("case", ["stops_empty_list", "stops_first_null", "stops_number", "stops_int_for_empty_gold"])
@pytest.mark.parametrize("language", ["en", "zh"])
async def test_answers_the_official_code_stops_on_are_warned_about(case, language, tmp_path):
    """Item 9: `[]`, a first answer null, `"5"`, an int where the gold value is empty: the official
    script stops with an error; the project scores the record 0 and names it."""
    official = OFFICIAL[f"{case}_{language}"]
    line = 1 if case == "stops_first_null" else 2
    summary = await _score(f"{case}_{language}", tmp_path)
    assert summary["metrics"]["official_errors"] == 1
    assert any(f"tool_usage.json: line {line} (1 record): the official script stops with an error" in w
               and official["error"] in w for w in summary["warnings"])
    assert any(w.startswith("official_errors: 1 of 2 answers stop the official script") for w in summary["warnings"])


@pytest.mark.parametrize("language", ["en", "zh"])
async def test_answers_official_eval_reads_differently_are_counted(language, tmp_path):
    """Item 12: `"He" + "ll"` and `3*2` are read by the official eval, not by ast.literal_eval (a
    documented deviation): the project's number differs, and the two answers are counted and named."""
    summary = await _score(f"eval_expressions_{language}", tmp_path)
    assert summary["metrics"]["local_levenshtein"] < _pct(OFFICIAL[f"eval_expressions_{language}"]["total"])
    assert summary["metrics"]["eval_expressions"] == 2
    assert any("lines 1, 2 (2 records): a repair candidate is a Python expression" in w for w in summary["warnings"])
    assert any(w.startswith("eval_expressions: 2 of 3 answers hold a Python expression") for w in summary["warnings"])


def test_planning_answers_are_cleaned_with_the_official_ascii_digit_check():
    """Item 10: a trailing paragraph starting with `１`, `①` or `²` is dropped, as the official script
    (which checks ASCII 0-9) drops it."""
    for answer, want in zip(CASES["plan_cleaning"]["answers"], OFFICIAL["plan_cleaning"]["cleaned"], strict=True):
        assert clean_plan(answer) == want


def test_an_edited_chinese_record_is_named_with_its_language_and_line(tmp_path):
    """Item 11: a Chinese file whose first record was edited: the error names the Chinese test set
    and line 1, exit 2, no traceback."""
    records = _records("zh", "tool_usage")
    rows = [{"data": {**records[0], "question": records[0]["question"] + "！"}, "init output": "[]"},
            *({"data": records[i], "init output": "[]"} for i in (1, 2))]
    path = tmp_path / "gpt-4" / "tool_usage.json"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "evals.cli", "score", str(path), "--format", "ultratool-official", "--benchmark",
         "ultratool", "--out", str(tmp_path / "run"), "--json"],
        capture_output=True, text=True, cwd=ROOT, check=False, timeout=300, env={**os.environ, "COLUMNS": "1000"},
    )
    assert proc.returncode == 2, proc.stderr
    assert f"{path}:1: this record is not in UltraTool's tool_usage test file of the Chinese test set" in proc.stderr
    assert "Traceback" not in proc.stderr
    only = tmp_path / "one" / "tool_usage.json"
    only.parent.mkdir()
    only.write_text(json.dumps(rows[0], ensure_ascii=False) + "\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "evals.cli", "score", str(only), "--format", "ultratool-official", "--benchmark",
         "ultratool", "--out", str(tmp_path / "run1"), "--json"],
        capture_output=True, text=True, cwd=ROOT, check=False, timeout=300, env={**os.environ, "COLUMNS": "1000"},
    )
    assert proc.returncode == 2 and "of the Chinese test set" in proc.stderr, proc.stderr
