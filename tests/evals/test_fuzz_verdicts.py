"""The differential fuzzer's verdicts (``bench/fuzz``, issue 47; docs/fidelity.md): how the official code's
outcome and ours compare, what our side makes of an ``evals`` call, and the one long-lived child process
that runs ``evals score`` for every target (a real one here, on two committed fixture files)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.fuzz import ours
from bench.fuzz.ours import Result, evals_score
from bench.fuzz.outcome import Outcome, compare

CFB = Path(__file__).resolve().parent / "benchmarks" / "complexfuncbench" / "fixtures" / "fuzz47"


def test_the_verdict_of_two_outcomes():
    official = Outcome(numbers={"a": "1.0", "b": "2.0"})
    assert compare(official, Outcome(numbers={"a": "1.0", "b": "2.0", "extra": "3"})) == "equal"
    assert compare(Outcome(stopped=True), Outcome(stopped=True)) == "equal"
    assert compare(official, Outcome(numbers={"a": "1.0", "b": "2.1"})) == "silent"
    assert compare(official, Outcome(numbers={"a": "1.0", "b": "2.1"}, warned=True)) == "loud"
    assert compare(official, Outcome(stopped=True)) == "loud"  # ours refused a file the official code reads
    assert compare(Outcome(stopped=True), Outcome(numbers={"a": "1.0"})) == "silent"
    assert compare(Outcome(stopped=True), Outcome(numbers={"a": "1.0"}, warned=True)) == "loud"
    assert compare(official, Outcome(numbers={"a": "1.0", "b": "2.0"}, crashed=True)) == "crashed"


def test_what_our_side_makes_of_an_evals_call():
    summary = {"metrics": {}, "warnings": ["every line is scored, as eval.py scores it"]}
    assert Result(None, "", "", None, "Traceback ...\nValueError: x").outcome({}).crashed
    assert Result(1, "", "error", None).outcome({}).crashed
    assert Result(0, "{}", "Traceback (most recent call last):\n  ...", {}).outcome({}).crashed
    assert Result(0, "", "", None).outcome({}).crashed  # exit 0 without a summary
    refused = Result(2, "", "error: f.jsonl:2: not JSON", None).outcome({})
    assert refused.stopped and not refused.crashed and "f.jsonl:2" in refused.note
    assert Result(0, "{}", "", summary).outcome({"m": "1"}).warned
    same = Result(0, "{}", "", summary).outcome({"m": "1"}, same=("as eval.py scores it",))
    assert not same.warned and same.numbers == {"m": "1"}


@pytest.fixture
def children():
    yield ours._CHILDREN
    for server in ours._CHILDREN.values():  # the serving processes this test started
        if server.proc is not None:
            server.proc.kill()
            server.proc.wait()
    ours._CHILDREN.clear()


def test_evals_score_runs_in_one_long_lived_child_per_environment(children, tmp_path):
    env = {"EVALS_DATA_DIR": str(tmp_path / "empty")}
    argv = ["score", "--format", "complexfuncbench-official", "--benchmark", "complexfuncbench", "--json", "--out", "run"]
    tie = evals_score([argv[0], str(CFB / "tie_call_accuracy.jsonl"), *argv[1:]], env)
    assert tie.rc == 0 and tie.summary is not None, tie.stderr[-2000:]
    assert tie.summary["metrics"]["call_accuracy"] == 13.63  # print_results.py's number (the fixture's test)
    [child] = children.values()
    assert child.proc is not None
    pid = child.proc.pid
    refused = evals_score([argv[0], str(CFB / "form_feed_line_end.jsonl"), *argv[1:]], env).outcome({})
    assert refused.stopped and "form_feed_line_end.jsonl:2: not JSON" in refused.note
    assert list(children.values()) == [child] and child.proc is not None and child.proc.pid == pid  # the same process
    assert not (Path.cwd() / "run").exists()  # a relative --out lands in the child's scratch folder
