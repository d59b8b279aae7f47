"""Our default FamilyTool scoring equals the official code's numbers, to the last digit.

Each set under ``familytool_official/sets/`` is a hand-made prediction folder in the
``familytool-official`` format with ``official.json``: what the official FamilyTool code printed for
it (see that folder's README for the commands). Here the folder goes through ``evals score --format
familytool-official`` (the core's import, then the benchmark's scorer) and every official number
must come out equal: the tool-use metrics strict and non-strict (the official values are already
percentages), the KG metrics (official ratios), and per task the extraction string of the official
post-processing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from client import eventloop
from client.runs import RunDir
from evals.core.formats import export_run, import_predictions
from evals.core.run import score_run_dir
from evals.core.scoring import read_scores

SETS = sorted(p for p in (Path(__file__).parent / "familytool_official" / "sets").iterdir() if p.is_dir())
TOOL = (("tool_em", "ExactMatch-AllTools"), ("tool_acc", "ToolAccuracy"), ("value_acc", "ParameterAccuracy"))
KG = (("kg_em", "em"), ("kg_f1", "f1"), ("kg_no_hallucination", "no_hallucination"), ("kg_coverage", "coverage"),
      ("kg_format_error", "formaterror"))


def _raw(records: list[dict[str, Any]], key: str) -> tuple[float, float]:
    num = den = 0.0
    for r in records:  # summed in task order, as the aggregation does
        sample = r["score"]["samples"].get(key)
        if sample is not None:
            num += sample[0]
            den += sample[1]
    return num, den


def _score(pred_dir: Path, tmp_path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    manifest = json.loads((pred_dir / "manifest.json").read_text())
    run = import_predictions(pred_dir, "familytool-official", manifest["benchmark"], tmp_path / "run")
    summary = eventloop.run(score_run_dir(run))
    return summary, read_scores(RunDir.open(run))


@pytest.mark.parametrize("pred_dir", SETS, ids=[p.name for p in SETS])
def test_equals_official_code(pred_dir: Path, tmp_path: Path, data_dir: Path) -> None:
    official = json.loads((pred_dir / "official.json").read_text())
    summary, records = _score(pred_dir, tmp_path)
    assert summary["tasks"] == official["tasks"] == len(records)
    for block, label in (("metrics", "tool_strict"), ("nonstrict_metrics", "tool_nonstrict")):
        for ours, theirs in TOOL:
            num, den = _raw(records, ours if block == "metrics" else f"{block}.{ours}")
            assert 100.0 * num / den == official[label][theirs], (block, ours)
            assert summary[block][ours] == round(official[label][theirs], 2)
    if "kg" not in official:
        assert "kg_em" not in summary["metrics"]
        return
    for ours, theirs in KG:
        num, den = _raw(records, ours)
        assert num == official["kg"]["counts"][theirs], ours
        assert num / den == official["kg"]["ratios"][theirs], ours
        assert summary["metrics"][ours] == round(100 * official["kg"]["ratios"][theirs], 2)
    assert [r["score"]["details"]["official_extraction"] for r in records] == official["kg"]["extracted"]


def test_export_round_trip(tmp_path: Path, data_dir: Path) -> None:
    """Exporting an imported set writes the same predictions back (what the official code reads)."""
    src = next(p for p in SETS if p.name == "mix-b")
    manifest = json.loads((src / "manifest.json").read_text())
    run = import_predictions(src, "familytool-official", manifest["benchmark"], tmp_path / "run")
    files = {f.name: f for f in export_run(run, "familytool-official", tmp_path / "out")}
    assert set(files) == {"golden.jsonl", "tool_use_results.json", "kg_extraction.json", "manifest.json"}
    before = json.loads((src / "tool_use_results.json").read_text())
    after = json.loads(files["tool_use_results.json"].read_text())
    assert [(r["data_id"], r["result"]["tool_call"]) for r in after] == [(r["data_id"], r["result"]["tool_call"]) for r in before]
    assert [r["response"] for r in json.loads(files["kg_extraction.json"].read_text())] == \
        [r["response"] for r in json.loads((src / "kg_extraction.json").read_text())]
    golden_ids = [json.loads(line)[0]["content"] for line in files["golden.jsonl"].read_text().splitlines()]
    assert golden_ids == [r["data_id"] for r in before]


def test_unknown_format_and_task_are_clear_errors(tmp_path: Path, data_dir: Path) -> None:
    src = next(p for p in SETS if p.name == "tool_calls-b")
    with pytest.raises(ValueError, match="has no prediction format 'nope'.*familytool-official"):
        import_predictions(src, "nope", "familytool-b", tmp_path / "a")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "tool_use_results.json").write_text(json.dumps([{"data_id": "no-such-task", "result": {"tool_call": []}}]))
    with pytest.raises(ValueError, match="no-such-task"):
        import_predictions(bad, "familytool-official", "familytool-b", tmp_path / "b")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evals.cli", *args], capture_output=True, text=True, timeout=300)


def test_cli_scores_external_predictions_and_exports_them(tmp_path: Path, data_dir: Path) -> None:
    """``evals score DIR --format ... --benchmark ...`` makes a scored run directory; ``evals export``
    writes it back; misuse is a usage error (exit 2) that names the flag."""
    src = next(p for p in SETS if p.name == "kg_links-e")
    official = json.loads((src / "official.json").read_text())
    proc = _cli("score", str(src), "--format", "familytool-official", "--benchmark", "familytool-e",
                "--out", str(tmp_path / "run"), "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["strategy"] == "kgetool" and summary["model"] == "fixture:kg_links"
    assert summary["totals"]["model"]["cost_known"] is False  # the external run's cost: unknown, not 0
    assert summary["metrics"]["kg_f1"] == round(100 * official["kg"]["ratios"]["f1"], 2)
    assert json.loads((tmp_path / "run" / "config.json").read_text())["imported"]["format"] == "familytool-official"
    proc = _cli("export", str(tmp_path / "run"), "--format", "familytool-official", "-o", str(tmp_path / "out"), "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(json.loads(proc.stdout.strip().splitlines()[-1])["files"]) == 4
    bad = _cli("score", str(src), "--benchmark", "familytool-e")
    assert bad.returncode == 2 and "--format" in bad.stderr
