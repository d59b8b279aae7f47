"""The kinds of file the differential fuzzer (bench/fuzz/nestools.py, issue 47) found scored differently
from eval.py, each a fixture (fixtures/fuzz/, made by make_files.py) with what the official eval.py
printed for it (expected.json, official_output.txt; command in fixtures/fuzz/README.md): the same
numbers, or refused (exit 2) / warned where eval.py stops or, for long arguments, scores 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.core.data import data_dir
from evals.core.formats import import_predictions
from evals.core.run import score_run_dir

FUZZ = Path(__file__).parent / "fixtures" / "fuzz"
EXPECTED = json.loads((FUZZ / "expected.json").read_text())
PRINTED = ["format_accuracy", *(f"{d}_{m}" for d in ("selection", "order", "param", "nested")
                                for m in ("precision", "recall", "f1")), "average_f1"]
needs_data = pytest.mark.skipif(not (Path(data_dir()) / "nestools" / "test_data.jsonl").is_file(),
                                reason="NesTools data not found")
REFUSED = {"form_feed_line_end": "not a JSON line for the official reader", "record_separator_line_end": "not a JSON line",
           "string_test_id": "names no NesTools sample"}
WARNED = {"blank_line": "blank line 2", "list_api_id": "unhashable", "no_nested": "ZeroDivisionError",
          "long_argument": "RecursionError"}


async def _summary(name: str, tmp_path: Path) -> dict:
    return await score_run_dir(import_predictions(FUZZ / f"{name}.jsonl", "nestools-official", "nestools", tmp_path / "r"))


@needs_data
@pytest.mark.parametrize("name", sorted(n for n, e in EXPECTED.items() if "printed" in e and n != "long_argument"))
async def test_the_same_numbers_as_eval_py(name, tmp_path):
    """rounding_tie: 23 of 80 well-formed, eval.py prints 28.7 (0.2875 * 100), not 28.8 (100 * 23 / 80);
    cr_line_ends: \\r ends a line for eval.py's open(); u2028_in_value: U+2028 is no line end for it;
    surrogate: a response with a lone surrogate reads as eval.py reads it (its ast.literal_eval fails)."""
    summary = await _summary(name, tmp_path)
    assert [f"{summary['metrics'][k]:.1f}" for k in PRINTED] == EXPECTED[name]["printed"]


@needs_data
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_file_eval_py_stops_on_is_refused_with_its_line(name, tmp_path):
    assert "stops" in EXPECTED[name]
    with pytest.raises(ValueError, match=REFUSED[name]):
        import_predictions(FUZZ / f"{name}.jsonl", "nestools-official", "nestools", tmp_path / "r")


@needs_data
@pytest.mark.parametrize("name", sorted(WARNED))
async def test_a_file_eval_py_stops_on_or_scores_otherwise_is_warned_about(name, tmp_path):
    summary = await _summary(name, tmp_path)
    assert any(WARNED[name] in w for w in summary["warnings"]), summary["warnings"]
    if name == "long_argument":  # eval.py's rouge raises on the 600-word argument and scores it 0: ours scores it
        ours = [f"{summary['metrics'][k]:.1f}" for k in PRINTED]
        assert ours != EXPECTED[name]["printed"] and ours[:7] == EXPECTED[name]["printed"][:7]
    else:
        assert "stops" in EXPECTED[name]
