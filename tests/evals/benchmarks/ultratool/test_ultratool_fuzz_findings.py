"""The kinds of file the differential fuzzer (bench/fuzz/ultratool.py, issue 47) found scored differently
from UltraTool's official code, each a fixture (fixtures/fuzz/, made by make_files.py) with what the
official functions printed for it (expected.json; command in fixtures/README.md): the same numbers on any
subset (rounded as the official code rounds: numpy's rounding for means, Python's for the accuracies), or
refused (exit 2) / warned where the official code stops."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.core.data import data_dir
from evals.core.formats import import_predictions
from evals.core.metrics import numpy_round
from evals.core.run import score_run_dir

FUZZ = Path(__file__).parent / "fixtures" / "fuzz"
EXPECTED = json.loads((FUZZ / "expected.json").read_text(encoding="utf-8"))
needs_data = pytest.mark.skipif(not (Path(data_dir()) / "ultratool" / "English-dataset" / "test_set").is_dir(),
                                reason="UltraTool data not found")


def _file(case: str) -> Path:
    return next(p for p in (FUZZ / case).rglob("*.json"))


async def _summary(case: str, tmp_path: Path) -> dict:
    return await score_run_dir(import_predictions(_file(case), "ultratool-official", "ultratool", tmp_path / "r"))


@needs_data
@pytest.mark.parametrize("case", sorted(c for c, e in EXPECTED.items() if "printed" in e))
async def test_the_same_numbers_as_the_official_code(case, tmp_path):
    """planning_tie: 0.10875 is 0.1087 for numpy's rounding (10.88 for round(100 * 87 / 800, 2));
    awareness_tie: 1/160 is 0.0063 for Python's (0.62 for round(100 / 160, 2)); \\r line ends, U+2028 in a
    value, a lone surrogate in an answer (the official eval fails on it)."""
    summary = await _summary(case, tmp_path)
    for name, printed in EXPECTED[case]["printed"].items():
        assert f"{summary['metrics'][name]:.2f}" == f"{float(printed) * 100:.2f}", name


@needs_data
def test_a_control_character_at_a_line_end_is_refused_as_the_official_reader_stops(tmp_path):
    assert EXPECTED["usage_form_feed_line_end"]["stops"] == "JSONDecodeError"
    with pytest.raises(ValueError, match=r"tool_usage.json:2: not a JSON line for the official reader"):
        import_predictions(_file("usage_form_feed_line_end"), "ultratool-official", "ultratool", tmp_path / "r")


@needs_data
async def test_a_blank_line_is_warned_about_with_its_line(tmp_path):
    assert EXPECTED["usage_blank_line"]["stops"] == "JSONDecodeError"
    summary = await _summary("usage_blank_line", tmp_path)
    assert any("blank line 2: the official script stops" in w for w in summary["warnings"])


def test_numpy_round_is_numpys_rounding():
    np = pytest.importorskip("numpy")
    for x in (0.10875, 0.76825, 0.00625, 1 / 3, 0.5, 12345.67895):
        for places in (1, 2, 4):
            assert numpy_round(x, places) == float(round(np.float64(x), places))
    mean = (87 / 80) / 10  # planning_tie: np.mean(scores) / 10
    assert numpy_round(mean, 4) == 0.1087 and round(100 * 87 / 800, 2) == 10.88


@needs_data
async def test_a_stored_judgment_is_read_as_it_is_a_key_with_json_in_it_is_unreadable(tmp_path):
    """planning_json_in_key: the official cal_plan_res stops (KeyError) on a key 'Syntactjsonic Soundness
    Score'; deleting "json" first (the rule for a judge's answer text) made it readable, scored silently."""
    assert EXPECTED["planning_json_in_key"]["stops"] == "KeyError"
    summary = await _summary("planning_json_in_key", tmp_path)
    assert summary["metrics"]["judge_unreadable"] == 1
    assert any("judge outputs could not be read" in w for w in summary["warnings"])
