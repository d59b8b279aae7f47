"""The differential fuzzer's findings on FamilyTool prediction folders (issue 47): one folder per kind
in ``familytool_official/fuzz47/`` (``make_fuzz_sets.py``), with ``official.json``: what the official
FamilyTool code printed for it or the error it stopped on (``run_official.py``, commands in
``familytool_official/README.md``).

* step-1 rows in another order than the tasks: the official metric pairs them by position (ids
  ignored); so do we, with a warning naming the rows;
* a task on two tool-use rows, fewer step-1 rows than tasks: the official code counts otherwise;
  ours warns, naming the rows and what the official code does;
* a call name that is not a string, a gold tool's call with non-object parameters, a step-1 row
  without ``response``: the official code stops; ours warns, naming the entries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from client import eventloop
from evals.core.formats import import_predictions
from evals.core.run import score_run_dir

FUZZ = Path(__file__).parent / "familytool_official" / "fuzz47"
TOOL = (("tool_em", "ExactMatch-AllTools"), ("tool_acc", "ToolAccuracy"), ("value_acc", "ParameterAccuracy"))
KG = (("kg_em", "em"), ("kg_f1", "f1"), ("kg_no_hallucination", "no_hallucination"), ("kg_coverage", "coverage"),
      ("kg_format_error", "formaterror"))
WARNINGS = {
    "kg_by_position-b": ["20 entr(ies) whose id is not the task at their position", "pairs step-1 outputs with"],
    "repeated_rows-b": ["1 data_id(s) on more than one entry", "[3, 10]", "scores every entry"],
    "missing_kg_rows-b": ["14 step-1 outputs for 20 tasks", "scores the first 14"],
    "name_not_string-b": ["the official evaluation stops on 1 entr(ies) (entry 2 call(s) [", "not a string"],
    "parameters_not_object-b": ["the official evaluation stops on 1 entr(ies) (entry 6 call(s) [0]",
                                "parameters that are not an object"],
    "kg_response_missing-b": ["the official metric stops on 1 entr(ies) without a string 'response' (entries [5])"],
}


def _score(pred: Path, tmp_path: Path) -> dict:
    run = import_predictions(pred, "familytool-official", "familytool-b", tmp_path / "run")
    return eventloop.run(score_run_dir(run))


def test_every_folder_has_its_official_outcome_and_its_warning():
    assert sorted(p.name for p in FUZZ.iterdir()) == sorted(WARNINGS)
    for name in WARNINGS:
        official = json.loads((FUZZ / name / "official.json").read_text())
        assert ("stops" in official) == (name in ("name_not_string-b", "parameters_not_object-b", "kg_response_missing-b"))


@pytest.mark.parametrize("name", sorted(WARNINGS))
def test_warned_naming_the_rows(name, tmp_path, data_dir):
    summary = _score(FUZZ / name, tmp_path)
    text = "\n".join(summary["warnings"])
    for part in WARNINGS[name]:
        assert part in text, (part, text)


@pytest.mark.parametrize("name", ["kg_by_position-b", "missing_kg_rows-b"])
def test_the_official_numbers_where_it_pairs_by_position(name, tmp_path, data_dir):
    official = json.loads((FUZZ / name / "official.json").read_text())
    summary = _score(FUZZ / name, tmp_path)
    for block, label in (("metrics", "tool_strict"), ("nonstrict_metrics", "tool_nonstrict")):
        for ours, theirs in TOOL:
            assert summary[block][ours] == round(official[label][theirs], 2), (block, ours)
    if name == "kg_by_position-b":  # every KG number as the official positional pairing gives it
        for ours, theirs in KG:
            assert summary["metrics"][ours] == round(100 * official["kg"]["ratios"][theirs], 2), ours
