"""Result files ``print_results.py`` reads differently from a well-formed run, or stops on (issue 38):
each is in ``fixtures/edge/`` and what the official script printed for it (or the error it stopped
on) in ``fixtures/edge_expected.json`` (how it was made: ``fixtures/README.md``).

Scored from the file alone (an empty data directory), the project gives the official numbers where
the official script prints some (repeated ids count on every line, ids outside the five domains
count over 1,000 and get their own per-domain numbers, a domain with more ids than its size still
divides by its size), and a warning that names the file, the records and what the official script
does; where it stops, the project's numbers come with a warning saying so, and where."""

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
EDGE = FIX / "edge"
EXPECTED = json.loads((FIX / "edge_expected.json").read_text())
DOMAINS = ("Hotels", "Flights", "Car-Rental", "Attraction", "Cross")
PRINTED = sorted(n for n, v in EXPECTED.items() if "printed" in v)
STOPS = sorted(n for n, v in EXPECTED.items() if "stops" in v)
# per file the official script stops on: what our warning must say (the error, and where)
STOP_WARNINGS = {
    "blank_line.jsonl": ["print_results.py stops on 1 blank line", "blank_line.jsonl:7"],
    "count_string.jsonl": ["print_results.py stops on 1 record(s) (TypeError: count_dict.correct_call_num is a string",
                           "count_string.jsonl:6", "(TypeError: count_dict.total_call_num is a string",
                           "count_string.jsonl:8", "read as the number"],
    "empty.jsonl": ["no records: print_results.py stops on this file (ZeroDivisionError"],
    "no_success_turn_num.jsonl": ["print_results.py stops on 1 record(s) (KeyError: count_dict has no 'success_turn_num'",
                                  "no_success_turn_num.jsonl:3"],
    "resp_eval_empty.jsonl": ["print_results.py stops on 1 record(s) (KeyError/TypeError: resp_eval has no complete.score",
                              "resp_eval_empty.jsonl:4"],
    "zero_gold_calls.jsonl": ["all 12 records' gold-call counts", "stops on this file (ZeroDivisionError"],
}
# what each file's warnings must say besides (the records counted, what the official script does)
COUNT_WARNINGS = {
    "repeated_ids.jsonl": ["10 id(s) on more than one line (11 further line(s)", "repeated_ids.jsonl:1 and",
                           "print_results.py counts every line; so do these numbers"],
    "foreign_ids.jsonl": ["7 record(s) with ids outside the five domains (NoDash: 1, Restaurants: 4, Trains: 2",
                          "foreign_ids.jsonl:31", "still divided by 1,000"],
    "oversize_domain.jsonl": ["Hotels has 162 records, more than its 150 samples", "divides its success rate by 150"],
}


def _printed(name: str, prefix: str):
    line = next(x for x in EXPECTED[name]["printed"] if x.startswith(prefix))
    return ast.literal_eval(line.split(": ", 1)[1])


async def _score(name: str, tmp_path: Path) -> dict:
    run = import_predictions(EDGE / name, "complexfuncbench-official", "complexfuncbench", tmp_path / "run")
    return await score_run_dir(run)


@pytest.fixture(autouse=True)
def _no_dataset(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALS_DATA_DIR", str(tmp_path / "empty"))


def test_every_edge_file_has_its_official_outcome():
    assert sorted(EXPECTED) == sorted(p.name for p in EDGE.glob("*.jsonl"))
    assert set(STOPS) == set(STOP_WARNINGS) and set(PRINTED) == set(COUNT_WARNINGS)


@pytest.mark.parametrize("name", PRINTED)
async def test_the_official_numbers_of_a_file_it_reads_differently(name, tmp_path):
    summary = await _score(name, tmp_path)
    m = summary["metrics"]
    assert m["success_rate"] == round(_printed(name, "Overall Success Rate"), 2)
    assert m["call_accuracy"] == round(_printed(name, "Overall Call Accuracy"), 2)
    assert m["completeness"] == round(_printed(name, "Complete Score"), 2)
    assert m["correctness"] == round(_printed(name, "Correct Score"), 2)
    success, calls = _printed(name, "Domain Success Rate"), _printed(name, "Domain Call Accuracy")
    for domain in DOMAINS:
        key = domain.lower().replace("-", "_")
        assert m[f"success_rate_{key}"] == round(success.get(domain, 0.0), 2), domain
        assert summary["breakdowns"]["domain"][domain]["success_rate"] == round(success.get(domain, 0.0), 2), domain
        if domain in calls:
            assert m[f"call_accuracy_{key}"] == round(calls[domain], 2), domain
    foreign = {d for d in calls if d not in DOMAINS}
    assert set(summary.get("foreign_domains") or {}) == foreign
    for domain in foreign:
        got = summary["foreign_domains"][domain]
        assert got["success_rate"] == round(success.get(domain, 0.0), 2) and got["call_accuracy"] == round(calls[domain], 2)
    assert summary["full_set"] is True and summary["metric_stats"]["success_rate"]["samples"] == 1000
    text = "\n".join(summary["warnings"])
    assert str(EDGE / name) in text
    for part in COUNT_WARNINGS[name]:
        assert part in text, (part, text)
    assert "print_results.py stops" not in text


@pytest.mark.parametrize("name", STOPS)
async def test_a_file_the_official_script_stops_on_is_scored_with_a_warning(name, tmp_path):
    summary = await _score(name, tmp_path)
    assert summary["tasks"] >= 1000 and "success_rate" in summary["metrics"]
    text = "\n".join(summary["warnings"])
    for part in STOP_WARNINGS[name]:
        assert part in text, (part, text)


def test_the_cli_prints_the_warnings_on_stderr(tmp_path):
    env = {**os.environ, "EVALS_DATA_DIR": str(tmp_path / "empty")}
    proc = subprocess.run([sys.executable, "-m", "evals.cli", "score", str(EDGE / "no_success_turn_num.jsonl"),
                           "--format", "complexfuncbench-official", "--benchmark", "complexfuncbench",
                           "--out", str(tmp_path / "run"), "--json"], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "warning: " in proc.stderr and "no_success_turn_num.jsonl:3" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_count_that_is_no_number_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.jsonl"
    rec = json.loads((EDGE / "count_string.jsonl").read_text().splitlines()[0])
    rec["count_dict"]["total_call_num"] = "three"
    bad.write_text(json.dumps(rec) + "\n")
    env = {**os.environ, "EVALS_DATA_DIR": str(tmp_path / "empty")}
    proc = subprocess.run([sys.executable, "-m", "evals.cli", "score", str(bad), "--format", "complexfuncbench-official",
                           "--benchmark", "complexfuncbench", "--out", str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=300, env=env)
    said = proc.stderr.strip().splitlines()[-1]  # one line, never wrapped
    assert proc.returncode == 2 and f"{bad}:1: count_dict.total_call_num is not a number" in said
    assert "Traceback" not in proc.stderr


async def test_with_the_dataset_a_repeated_id_keeps_its_last_line_and_says_what_print_results_gives(tmp_path, monkeypatch):
    """With the dataset in the data directory the tasks are its samples (one per id): a repeated id
    keeps its last line, and the warning says so and gives print_results.py's overall success."""
    root = tmp_path / "data" / "complexfuncbench"
    root.mkdir(parents=True)
    (root / "ComplexFuncBench.jsonl").write_text((FIX / "samples.jsonl").read_text())  # a stand-in for the set
    monkeypatch.setenv("EVALS_DATA_DIR", str(tmp_path / "data"))
    lines = (FIX / "official_result.jsonl").read_text().splitlines()
    success = next(n for n, line in enumerate(lines) if json.loads(line)["message"] == "Success.")
    src = tmp_path / "result.jsonl"
    src.write_text("\n".join([*lines, lines[success]]) + "\n")
    summary = await score_run_dir(import_predictions(src, "complexfuncbench-official", "complexfuncbench", tmp_path / "run"))
    assert summary["tasks"] == 8 and summary["metrics"]["success_rate"] == 37.5  # 3 of the 8 samples
    [warning] = summary["warnings"]
    assert "1 id(s) on more than one line (1 further line(s)" in warning
    assert "print_results.py counts every line; its overall success would be 0.40" in warning  # 4 / 1,000
    assert "these numbers keep the last line of each id" in warning


async def test_an_import_with_a_repeated_id_lists_it_in_the_anomalies_with_its_lines_and_both_countings(tmp_path):
    """The summary's ``anomalies`` entry of a repeated id: its kind, the further lines (``FILE:LINE``),
    how this project counted them and what print_results.py does; the plain warning stays beside it."""
    summary = await _score("repeated_ids.jsonl", tmp_path)
    entry = next(a for a in summary["anomalies"] if a["kind"] == "repeated_id")
    assert entry["source"] == "import" and entry["count"] == 11
    assert entry["where"][0] == f"{EDGE / 'repeated_ids.jsonl'}:41" and len(entry["where"]) == 10
    assert "every line" in entry["counted_as"] and entry["official"] == "print_results.py counts every line"
    assert entry["message"] in summary["warnings"]
    unreported = next(a for a in summary["anomalies"] if a["kind"] == "no_prediction")
    assert unreported["count"] == 1000 - 51 and "failed" in unreported["counted_as"]
    stops = await _score("no_success_turn_num.jsonl", tmp_path / "stops")
    stop = next(a for a in stops["anomalies"] if a["kind"] == "official_stops")
    assert stop["where"] == [f"{EDGE / 'no_success_turn_num.jsonl'}:3"] and "prints no number" in stop["official"]
