"""The differential fuzzer's findings on ComplexFuncBench result files (issue 47), one file per kind in
``fixtures/fuzz47/`` with what the official ``print_results.py`` printed for it (or stopped on) in
``fixtures/fuzz47_expected.json`` (``fixtures/README.md`` says how both were made).

* an exact rounding tie on a partial file: the official script divides first (``109 / 800 * 100`` is
  13.625000000000002, so 13.63 at two decimals; ``100 * 109 / 800`` is the tie 13.625, 13.62);
* line breaks: the official reader splits at ``\\n``, ``\\r\\n`` and ``\\r`` only (U+2028, U+0085, a form
  feed inside a value are part of the line); a form feed at a line's end stops it (ours refuses);
* counts beyond the float range, non-finite, or whose squares overflow: the official script adds them
  as Python numbers; ours never ends in a traceback and warns, giving the official printout;
* a lone surrogate in a value: read as the official reader reads it."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evals.core.formats import import_predictions
from evals.core.run import score_run_dir

FIX = Path(__file__).resolve().parent / "fixtures"
FUZZ = FIX / "fuzz47"
EXPECTED = json.loads((FIX / "fuzz47_expected.json").read_text())
DOMAINS = ("Hotels", "Flights", "Car-Rental", "Attraction", "Cross")
EQUAL = ("tie_call_accuracy.jsonl", "unicode_line_breaks.jsonl", "lone_surrogate.jsonl")
WARNED = ("huge_count.jsonl", "infinity_count.jsonl", "huge_float_count.jsonl")


def _printed(name: str, prefix: str):
    line = next(x for x in EXPECTED[name]["printed"] if x.startswith(prefix))
    return ast.literal_eval(line.split(": ", 1)[1])


@pytest.fixture(autouse=True)
def _no_dataset(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALS_DATA_DIR", str(tmp_path / "empty"))


def test_every_file_has_its_official_outcome():
    assert sorted(EXPECTED) == sorted(p.name for p in FUZZ.glob("*.jsonl"))
    assert sorted(EQUAL + WARNED + ("form_feed_line_end.jsonl",)) == sorted(EXPECTED)


@pytest.mark.parametrize("name", EQUAL)
async def test_the_official_numbers_to_the_last_printed_digit(name, tmp_path):
    summary = await score_run_dir(import_predictions(FUZZ / name, "complexfuncbench-official", "complexfuncbench",
                                                     tmp_path / "run"))
    m = summary["metrics"]
    assert m["success_rate"] == round(_printed(name, "Overall Success Rate"), 2)
    assert m["call_accuracy"] == round(_printed(name, "Overall Call Accuracy"), 2)
    assert m["completeness"] == round(_printed(name, "Complete Score"), 2)
    assert m["correctness"] == round(_printed(name, "Correct Score"), 2)
    success, calls = _printed(name, "Domain Success Rate"), _printed(name, "Domain Call Accuracy")
    for domain in DOMAINS:
        key = domain.lower().replace("-", "_")
        assert m[f"success_rate_{key}"] == round(success.get(domain, 0.0), 2), domain
        assert m[f"call_accuracy_{key}"] == round(calls[domain], 2), domain
    assert not any("print_results.py" in w for w in summary["warnings"])
    if name == "tie_call_accuracy.jsonl":
        assert m["call_accuracy"] == 13.63 and round(100 * 109 / 800, 2) == 13.62  # the tie the other order gives


def _cli(path: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EVALS_DATA_DIR": str(tmp_path / "empty")}
    return subprocess.run([sys.executable, "-m", "evals.cli", "score", str(path), "--format", "complexfuncbench-official",
                           "--benchmark", "complexfuncbench", "--out", str(tmp_path / "run"), "--json"],
                          capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.parametrize("name", WARNED)
async def test_a_count_beyond_float_sums_is_warned_with_the_official_printout(name, tmp_path):
    summary = await score_run_dir(import_predictions(FUZZ / name, "complexfuncbench-official", "complexfuncbench",
                                                     tmp_path / "run"))
    text = "\n".join(summary["warnings"])
    assert "huge integer, non-finite or not a whole number" in text
    assert f"call accuracy {_printed(name, 'Overall Call Accuracy')!r}" in text, text
    assert f"{FUZZ / name}:" in text


def test_no_traceback_on_a_huge_count_from_the_cli(tmp_path):
    proc = _cli(FUZZ / "huge_float_count.jsonl", tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "huge integer, non-finite" in proc.stderr


def test_a_form_feed_at_a_line_end_is_refused_where_the_official_reader_stops(tmp_path):
    assert "Extra data" in EXPECTED["form_feed_line_end.jsonl"]["stops"]
    proc = _cli(FUZZ / "form_feed_line_end.jsonl", tmp_path)
    said = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode == 2 and "form_feed_line_end.jsonl:2: not JSON" in said and "Traceback" not in proc.stderr
