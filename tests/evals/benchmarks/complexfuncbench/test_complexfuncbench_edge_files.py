"""Result files ``print_results.py`` reads differently from a well-formed run, or stops on: each is in
``fixtures/edge/`` (issue 38) or ``fixtures/fuzz47/`` (the kinds the differential fuzzer found, issue
47), with what the official script printed for it (or the error it stopped on) in
``fixtures/edge_expected.json`` and ``fixtures/fuzz47_expected.json`` (how they were made:
``fixtures/README.md``).

Scored from the file alone (an empty data directory), the project gives the official numbers where
the official script prints some (repeated ids count on every line, ids outside the five domains
count over 1,000 and get their own per-domain numbers, a domain with more ids than its size still
divides by its size), and a warning that names the file, the records and what the official script
does; where it stops, the project's numbers come with a warning saying so, and where. The fuzzer's
kinds:

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
EDGE = FIX / "edge"
FUZZ = FIX / "fuzz47"
EXPECTED = {d.name: json.loads((FIX / f"{d.name}_expected.json").read_text()) for d in (EDGE, FUZZ)}
DOMAINS = ("Hotels", "Flights", "Car-Rental", "Attraction", "Cross")
PRINTED = sorted(n for n, v in EXPECTED["edge"].items() if "printed" in v)
STOPS = sorted(n for n, v in EXPECTED["edge"].items() if "stops" in v)
FUZZ_EQUAL = ("tie_call_accuracy.jsonl", "unicode_line_breaks.jsonl", "lone_surrogate.jsonl")
FUZZ_WARNED = ("huge_count.jsonl", "infinity_count.jsonl", "huge_float_count.jsonl")
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


def _printed(path: Path, prefix: str):
    line = next(x for x in EXPECTED[path.parent.name][path.name]["printed"] if x.startswith(prefix))
    return ast.literal_eval(line.split(": ", 1)[1])


async def _score(path: Path, tmp_path: Path) -> dict:
    run = import_predictions(path, "complexfuncbench-official", "complexfuncbench", tmp_path / "run")
    return await score_run_dir(run)


def _cli(path: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EVALS_DATA_DIR": str(tmp_path / "empty")}
    return subprocess.run([sys.executable, "-m", "evals.cli", "score", str(path), "--format", "complexfuncbench-official",
                           "--benchmark", "complexfuncbench", "--out", str(tmp_path / "run"), "--json"],
                          capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture(autouse=True)
def _no_dataset(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALS_DATA_DIR", str(tmp_path / "empty"))


def test_every_file_has_its_official_outcome():
    assert sorted(EXPECTED["edge"]) == sorted(p.name for p in EDGE.glob("*.jsonl"))
    assert set(STOPS) == set(STOP_WARNINGS) and set(PRINTED) == set(COUNT_WARNINGS)
    assert sorted(EXPECTED["fuzz47"]) == sorted(p.name for p in FUZZ.glob("*.jsonl"))
    assert sorted(FUZZ_EQUAL + FUZZ_WARNED + ("form_feed_line_end.jsonl",)) == sorted(EXPECTED["fuzz47"])


@pytest.mark.parametrize("path", [EDGE / n for n in PRINTED] + [FUZZ / n for n in FUZZ_EQUAL], ids=lambda p: p.name)
async def test_the_official_numbers_to_the_last_printed_digit(path, tmp_path):
    summary = await _score(path, tmp_path)
    m = summary["metrics"]
    assert m["success_rate"] == round(_printed(path, "Overall Success Rate"), 2)
    assert m["call_accuracy"] == round(_printed(path, "Overall Call Accuracy"), 2)
    assert m["completeness"] == round(_printed(path, "Complete Score"), 2)
    assert m["correctness"] == round(_printed(path, "Correct Score"), 2)
    success, calls = _printed(path, "Domain Success Rate"), _printed(path, "Domain Call Accuracy")
    for domain in DOMAINS:
        key = domain.lower().replace("-", "_")
        assert m[f"success_rate_{key}"] == round(success.get(domain, 0.0), 2), domain
        assert summary["breakdowns"]["domain"][domain]["success_rate"] == round(success.get(domain, 0.0), 2), domain
        assert domain in calls or path.parent == EDGE, domain  # the fuzzer's files have calls in every domain
        if domain in calls:
            assert m[f"call_accuracy_{key}"] == round(calls[domain], 2), domain
    foreign = {d for d in calls if d not in DOMAINS}
    assert set(summary.get("foreign_domains") or {}) == foreign
    for domain in foreign:
        got = summary["foreign_domains"][domain]
        assert got["success_rate"] == round(success.get(domain, 0.0), 2) and got["call_accuracy"] == round(calls[domain], 2)
    assert summary["full_set"] is True and summary["metric_stats"]["success_rate"]["samples"] == 1000
    text = "\n".join(summary["warnings"])
    if path.parent == FUZZ:  # equal, and nothing to say
        assert "print_results.py" not in text
    else:
        assert str(path) in text
        for part in COUNT_WARNINGS[path.name]:
            assert part in text, (part, text)
        assert "print_results.py stops" not in text
    if path.name == "tie_call_accuracy.jsonl":
        assert m["call_accuracy"] == 13.63 and round(100 * 109 / 800, 2) == 13.62  # the tie the other order gives


@pytest.mark.parametrize("name", STOPS)
async def test_a_file_the_official_script_stops_on_is_scored_with_a_warning(name, tmp_path):
    summary = await _score(EDGE / name, tmp_path)
    assert summary["tasks"] >= 1000 and "success_rate" in summary["metrics"]
    text = "\n".join(summary["warnings"])
    for part in STOP_WARNINGS[name]:
        assert part in text, (part, text)


def test_the_cli_prints_the_warnings_on_stderr(tmp_path):
    proc = _cli(EDGE / "no_success_turn_num.jsonl", tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "warning: " in proc.stderr and "no_success_turn_num.jsonl:3" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_count_that_is_no_number_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.jsonl"
    rec = json.loads((EDGE / "count_string.jsonl").read_text().splitlines()[0])
    rec["count_dict"]["total_call_num"] = "three"
    bad.write_text(json.dumps(rec) + "\n")
    proc = _cli(bad, tmp_path)
    said = proc.stderr.strip().splitlines()[-1]  # one line, never wrapped
    assert proc.returncode == 2 and f"{bad}:1: count_dict.total_call_num is not a number" in said
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("name", FUZZ_WARNED)
async def test_a_count_beyond_float_sums_is_warned_with_the_official_printout(name, tmp_path):
    summary = await _score(FUZZ / name, tmp_path)
    text = "\n".join(summary["warnings"])
    assert "huge integer, non-finite or not a whole number" in text
    assert f"call accuracy {_printed(FUZZ / name, 'Overall Call Accuracy')!r}" in text, text
    assert f"{FUZZ / name}:" in text


def test_no_traceback_on_a_huge_count_from_the_cli(tmp_path):
    proc = _cli(FUZZ / "huge_float_count.jsonl", tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "huge integer, non-finite" in proc.stderr


def test_a_form_feed_at_a_line_end_is_refused_where_the_official_reader_stops(tmp_path):
    assert "Extra data" in EXPECTED["fuzz47"]["form_feed_line_end.jsonl"]["stops"]
    proc = _cli(FUZZ / "form_feed_line_end.jsonl", tmp_path)
    said = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode == 2 and "form_feed_line_end.jsonl:2: not JSON" in said and "Traceback" not in proc.stderr


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
    summary = await _score(EDGE / "repeated_ids.jsonl", tmp_path)
    entry = next(a for a in summary["anomalies"] if a["kind"] == "repeated_id")
    assert entry["source"] == "import" and entry["count"] == 11
    assert entry["where"][0] == f"{EDGE / 'repeated_ids.jsonl'}:41" and len(entry["where"]) == 10
    assert "every line" in entry["counted_as"] and entry["official"] == "print_results.py counts every line"
    assert entry["message"] in summary["warnings"]
    unreported = next(a for a in summary["anomalies"] if a["kind"] == "no_prediction")
    assert unreported["count"] == 1000 - 51 and "failed" in unreported["counted_as"]
    stops = await _score(EDGE / "no_success_turn_num.jsonl", tmp_path / "stops")
    stop = next(a for a in stops["anomalies"] if a["kind"] == "official_stops")
    assert stop["where"] == [f"{EDGE / 'no_success_turn_num.jsonl'}:3"] and "prints no number" in stop["official"]
