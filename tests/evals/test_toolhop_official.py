"""The ``toolhop-official`` import equals ToolHop's official scoring (issue 47).

Each file of ``toolhop_official/files/`` is an official output file (our own records) and
``toolhop_official/expected.json`` what the official ``code/evaluation_closed.py`` printed (``Result``)
and what its ``sample_process`` rule decided (added and divided by 995), or the error it stopped on
(how both were made: ``toolhop_official/README.md``). ``evals score FILE --format toolhop-official``
must give the same numbers where it does not warn; where the official code stops, ours refuses the
file (exit 2, FILE:LINE) or warns, naming the lines; never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evals.core.formats import import_predictions
from evals.core.run import score_run_dir

HERE = Path(__file__).resolve().parent / "toolhop_official"
FILES = HERE / "files"
EXPECTED = json.loads((HERE / "expected.json").read_text())
WARNED = {  # file -> what our warning must say
    "missing_answer_correct.jsonl": ["1 line(s) without answer_correct", "missing_answer_correct.jsonl:1"],
    "rule_index_error.jsonl": ["the official answer rule raises on 1 line(s) (IndexError", "rule_index_error.jsonl:1"],
    "infinity_recorded.jsonl": ["huge integer or not finite", "infinity_recorded.jsonl:4", "Result inf"],
    "huge_recorded.jsonl": ["huge integer or not finite", "huge_recorded.jsonl:4", "Result 1.1587150800068814e+17"],
    "more_than_995.jsonl": ["1000 lines, more than the 995 queries"],
}
STOPS = sorted(n for n, v in EXPECTED.items() if "stops" in v)
SCORED = sorted(n for n, v in EXPECTED.items() if "numbers" in v)


def test_every_file_has_its_official_outcome():
    assert sorted(EXPECTED) == sorted(p.name for p in FILES.glob("*.jsonl"))
    assert set(WARNED) <= set(SCORED)


@pytest.mark.parametrize("name", SCORED)
async def test_the_official_numbers(name, tmp_path):
    summary = await score_run_dir(import_predictions(FILES / name, "toolhop-official", "toolhop", tmp_path / "run"))
    m, official = summary["metrics"], EXPECTED[name]["numbers"]
    text = "\n".join(summary["warnings"])
    for part in WARNED.get(name, []):
        assert part in text, (part, text)
    if name not in WARNED:
        assert not summary["warnings"], text
    for key, value in official.items():
        if name in WARNED and (value.startswith("stopped") or value in ("inf", "nan") or "e+" in value):
            continue  # warned: the official number is in the warning
        assert repr(float(m[key])) == value, key
    assert summary["tasks"] == max(995, summary["completed"])


@pytest.mark.parametrize("name", STOPS)
def test_a_file_the_official_script_stops_on_is_refused_with_its_line(name, tmp_path):
    env = {**os.environ, "EVALS_DATA_DIR": str(tmp_path / "empty")}
    proc = subprocess.run([sys.executable, "-m", "evals.cli", "score", str(FILES / name), "--format", "toolhop-official",
                           "--benchmark", "toolhop", "--out", str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=300, env=env)
    said = proc.stderr.strip().splitlines()[-1]
    line = {"blank_line.jsonl": 3, "form_feed_line_end.jsonl": 2}[name]
    assert proc.returncode == 2 and f"{name}:{line}:" in said and "the official script stops on it too" in said, said
    assert "Traceback" not in proc.stderr


def test_the_answer_rule_quirks():
    from evals.benchmarks.toolhop.official import rule

    def one(answer, *msgs, alone=False):
        head = [] if alone else [{"role": "user", "content": "q"}]
        return rule({"answer": answer, "messages": head + [{"role": r, "content": c} for r, c in msgs]})

    assert one("100", ("assistant", "1")) == (1, None)  # rstrip('.0') strips every trailing 0 and .
    assert one("1,000", ("assistant", "1000")) == (0, None) and one("1000", ("assistant", "1,000")) == (1, None)
    assert one("x", ("assistant", "")) == (None, None) and one("x", ("tool", "x")) == (None, None)
    assert one("x", ("assistant", "y"), alone=True)[1] == "IndexError: list index out of range"
    assert one(5, ("assistant", "5"))[1].startswith("AttributeError")
