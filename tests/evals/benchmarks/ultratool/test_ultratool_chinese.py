"""UltraTool's Chinese test set (``--language zh``): the published Chinese GPT runs give the paper's
Chinese numbers through ``evals score --format ultratool-official`` (expected numbers from the
official code, ``fixtures/run_official.py``: ``published_zh``), a run records its language and
meets only its language's paper rows, and a judge output without the official score keys is
counted and warned about, never scored 0 in silence."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evals.benchmarks.ultratool.files import SOURCES
from evals.benchmarks.ultratool.metrics import PLANNING_KEYS_ZH, judge_keys
from evals.benchmarks.ultratool.parsing import parse_judge_scores
from evals.benchmarks.ultratool.prompts import creation_rubric, planning_rubric
from evals.benchmarks.ultratool.tasks import build_prompt, load_records
from evals.core.data import data_dir
from evals.core.formats import import_predictions
from evals.core.registry import get_benchmark
from evals.core.run import score_run_dir
from evals.report.paper import load_paper_numbers, paper_rows_for, published_rows_for

HERE = Path(__file__).parent / "fixtures"
EXPECTED = json.loads((HERE / "expected.json").read_text())
ROOT = Path(__file__).resolve().parents[4]
PUBLISHED_ZH = ("ultratool", "predictions", "Chinese-dataset")
MODEL = {"gpt-3.5": "GPT-3.5", "gpt-4": "GPT-4"}


@pytest.fixture(scope="module", autouse=True)
def _needs_data() -> None:
    if not (data_dir() / "ultratool" / "Chinese-dataset" / "test_set" / "planning.json").is_file():
        pytest.skip("UltraTool's Chinese data not found; set EVALS_DATA_DIR (e.g. to ../shared/data)")


def _published(model: str, name: str) -> Path:
    return data_dir().joinpath(*PUBLISHED_ZH, model, name)


def _paper(model: str, language: str) -> dict[tuple[str, str], float]:
    rows = load_paper_numbers(Path(get_benchmark("ultratool").paper_numbers.path))
    return {(r.setting["task"], m): v for r in rows if r.model == MODEL[model] and r.setting["language"] == language
            for m, v in r.metrics.items()}


@pytest.mark.parametrize("model", ["gpt-3.5", "gpt-4"])
async def test_the_published_chinese_runs_give_the_papers_chinese_numbers(model, tmp_path):
    """Usage awareness, usage and planning (from the stored Chinese judgments) equal the official
    code's output (``published_zh``) and the paper's Chinese rows, to the last digit."""
    official = EXPECTED["published_zh"][model]
    paper = _paper(model, "zh")
    for name, task in (("tool_usage.json", "tool_usage"), ("tool_usage_awareness.json", "tool_usage_awareness"),
                       ("eval/planning_eval.json", "planning")):
        run = import_predictions(_published(model, name), "ultratool-official", "ultratool", tmp_path / task)
        summary = await score_run_dir(run)
        assert summary["options"]["language"] == "zh" and summary["language"] == "zh"
        assert summary["completed"] == 1000 and summary["warnings"] == []
        for metric, value in official[task].items():
            assert summary["metrics"][metric] == round(100 * value, 2), (task, metric)
            if (task, metric) in paper:
                assert summary["metrics"][metric] == paper[(task, metric)], (task, metric)
        # shown only beside the Chinese rows of the paper
        rows = load_paper_numbers(Path(get_benchmark("ultratool").paper_numbers.path))
        mine = paper_rows_for(summary, rows)
        assert mine and all(r.setting["language"] == "zh" for r, _ in mine)
        assert {r.setting["task"] for r, same in mine if same} == {task}
        assert all(r.setting["language"] == "zh" for r in published_rows_for(summary, rows))
    assert paper[("planning", "overall_score")] == {"gpt-3.5": 69.50, "gpt-4": 76.39}[model]
    assert paper[("tool_usage", "local_levenshtein")] == {"gpt-3.5": 76.26, "gpt-4": 86.62}[model]


def test_each_language_has_its_paper_rows_and_an_english_run_never_meets_the_chinese_ones():
    rows = load_paper_numbers(Path(get_benchmark("ultratool").paper_numbers.path))
    by_language = {lang: [r for r in rows if r.setting["language"] == lang] for lang in ("en", "zh")}
    assert len(by_language["en"]) == len(by_language["zh"]) == 14 * 6
    for lang, mine in by_language.items():  # the table's check: "overall" is the mean of the nine columns
        for model in {r.model for r in mine}:
            cells = [v for r in mine if r.model == model for v in r.metrics.values()]
            overall = next(r.extra["overall"] for r in mine if r.model == model and r.setting["task"] == "planning")
            assert len(cells) == 9 and round(sum(cells) / 9, 2) == overall, (lang, model)
    old_run = {"benchmark": "ultratool", "model": "gpt-4", "strategy": "paper", "options": {"task": "planning"}}
    assert {r.setting["language"] for r, _ in paper_rows_for(old_run, rows)} == {"en"}  # made before --language


def test_the_chinese_prompts_and_rubrics_come_from_the_official_chinese_texts():
    record = load_records("tool_usage", language="zh")[0]
    assert record.language == "zh" and len(load_records("tool_usage", language="zh")) == 1000
    prompt = build_prompt(record)
    assert "让我们开始吧！" in prompt and "Let’s Begin!" not in prompt and str(record.data["question"]) in prompt
    assert "Let’s Begin!" in build_prompt(load_records("tool_usage")[0])
    assert "准确性分数" in planning_rubric("zh") and "Accuracy Score" in planning_rubric("en")
    assert "丰富度分数" in creation_rubric("zh")
    assert judge_keys("planning", "zh") == PLANNING_KEYS_ZH and judge_keys("planning", "en")[-1] == "Overall Score"
    assert {f.dest.split("/")[1] for f in SOURCES["ultratool-zh"]} == {"Chinese-dataset", "official"}


def test_a_chinese_judgment_is_unreadable_with_the_english_keys():
    zh = json.dumps([{"打分理由": "r", k: 8} for k in PLANNING_KEYS_ZH], ensure_ascii=False)
    assert parse_judge_scores(zh, judge_keys("planning", "zh")) == [8.0] * 7
    assert parse_judge_scores(zh, judge_keys("planning", "en")) is None


def test_unreadable_judge_outputs_are_counted_warned_about_and_never_scored_zero(tmp_path):
    """Three of the published Chinese judgments lose their score keys: ``evals score`` counts them in
    ``judge_unreadable``, lists a warning in the summary and prints it on stderr, and scores planning
    over the 997 readable judgments (not 0 for the three)."""
    rows = [json.loads(line) for line in _published("gpt-4", "eval/planning_eval.json").read_text().splitlines()]
    for row in rows[:3]:
        row["eval"] = [{"reason": "r", "score": 8} for _ in range(7)]
    bad = tmp_path / "gpt-4" / "eval" / "planning_eval.json"
    bad.parent.mkdir(parents=True)
    bad.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "evals.cli", "score", str(bad), "--format", "ultratool-official", "--benchmark",
         "ultratool", "--out", str(tmp_path / "run"), "--json"],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["metrics"]["judge_unreadable"] == 3
    assert summary["metric_stats"]["overall_score"]["samples"] == 997 * 10
    readable = [r["eval"][6]["总分"] for r in rows[3:]]
    assert summary["metrics"]["overall_score"] == round(100 * sum(readable) / (10 * len(readable)), 2) > 0
    assert len(summary["warnings"]) == 1 and "3 of 1000 judge outputs could not be read" in summary["warnings"][0]
    assert "warning: judge_unreadable: 3 of 1000 judge outputs could not be read" in proc.stderr


def test_a_chinese_run_fetches_the_chinese_test_set(tmp_path):
    from evals.core.fetch import needed_files

    needed = needed_files("ultratool", tmp_path, {"language": "zh"})
    assert {source for source, _ in needed} == {"ultratool-zh"}
    assert {f.dest for _, f in needed} == {f.dest for f in SOURCES["ultratool-zh"]}
    assert all(f.dest.startswith("ultratool/Chinese-dataset/") or f.dest.startswith("ultratool/official/")
               for _, f in needed)
    english = needed_files("ultratool", tmp_path, {})
    assert {source for source, _ in english} == {"ultratool"}
