"""What the differential fuzzer's ``bfcl`` target (bench/fuzz/bfcl.py) found, each case minimized: a result
folder that ``bfcl evaluate`` stops on is refused or warned by ``evals score``, never scored in silence; one it
reads gets its verdicts.

BFCL reads a result file with ``open(path).readlines()`` and ``json.loads`` of each line, and writes each wrong
entry (its result and what it decodes to) into its score file as UTF-8 text. So:

* a blank line, or a form feed at a line's end, stops it (``json.loads``); ``str.splitlines`` read both as line
  ends (the blank line was skipped in silence) and split a line at a raw U+2028 or NEL inside a string, which
  BFCL reads as part of the value (ours refused the file);
* a lone surrogate in a wrong entry's result (``"\\ud800"`` in the JSON, or in the JSON text of its arguments)
  stops it writing its score file (``UnicodeEncodeError``): no number at all;
* a multi-turn step whose JSON text is nested too deep to decode is skipped by BFCL's runner (its decoding
  raises); ours ended in a ``RecursionError`` traceback;
* an integer beyond a float's range given for a float parameter stops BFCL's checker (``float()`` of it:
  ``OverflowError``); ours ended in the same traceback;
* a prompting model's Python tuple (``sizes=()``) is a tuple to BFCL's checker: not an ``array``
  (``type_error:simple``), a list for a ``tuple`` parameter; ours saw the list the trace's JSON keeps (right);
* a category's accuracy is ``correct_count / total_count`` printed as ``"{:.2f}%"`` of it times 100: on a subset
  of 160 entries (or 320, 480, 640, 800, 960) that differs from ``round(100 * k / n, 2)`` on ties (23 of 160:
  BFCL 14.37%, ours was 14.38%).

BFCL's answers are committed (``fixtures/bfcl_fuzz_findings.json``), made by

    EVALS_DATA_DIR=... PYTHONPATH=. python tests/evals/benchmarks/bfcl/test_bfcl_fuzz_findings.py

(``bfcl evaluate`` through ``bfcl_evaluate_driver.py`` in .ci/bfcl-venv), and checked again against BFCL itself
where that venv is made.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
DRIVER = HERE / "bfcl_evaluate_driver.py"
FIXTURE = HERE / "fixtures" / "bfcl_fuzz_findings.json"
MODEL = "gpt-4o-2024-11-20-FC"  # arguments as JSON text
DEEP = "[" * 1100 + "1" + "]" * 1100


def _line(entry_id: str, result: Any, ascii_only: bool = True) -> str:
    return json.dumps({"id": entry_id, "result": result}, ensure_ascii=ascii_only)


def _call(name: str, arguments: str) -> list[dict[str, str]]:
    return [{name: arguments}]


RIGHT_0 = _line("simple_python_0", _call("calculate_triangle_area", '{"base": 10, "height": 5, "unit": "units"}'))
RIGHT_1 = _line("simple_python_1", _call("math_factorial", '{"number": 5}'))
MULTI_TURN_STEPS = [  # multi_turn_base_0's ground truth, one step per turn
    [("cd", {"folder": "document"}), ("mkdir", {"dir_name": "temp"}), ("mv", {"source": "final_report.pdf",
                                                                              "destination": "temp"})],
    [("cd", {"folder": "temp"}), ("grep", {"file_name": "final_report.pdf", "pattern": "budget analysis"})],
    [("sort", {"file_name": "final_report.pdf"})],
    [("cd", {"folder": ".."}), ("mv", {"source": "previous_report.pdf", "destination": "temp"}),
     ("cd", {"folder": "temp"}), ("diff", {"file_name1": "final_report.pdf", "file_name2": "previous_report.pdf"})],
]


def _multi_turn(deep_first: bool) -> str:
    turns = [[[{name: json.dumps(args)} for name, args in step]] for step in MULTI_TURN_STEPS]
    if deep_first:  # a step before the right one whose JSON text is too deep to decode: BFCL skips it
        turns[0].insert(0, [{"cd": '{"folder": ' + DEEP + "}"}])
    return _line("multi_turn_base_0", turns)


# case -> {file under the model folder: its bytes}
CASES: dict[str, dict[str, bytes]] = {
    "surrogate_in_a_wrong_entry": {"non_live/BFCL_v4_simple_python_result.json": (
        RIGHT_0 + "\n" + _line("simple_python_1", _call("math_factorial", '{"number": "\\ud800"}')) + "\n").encode()},
    "surrogate_in_a_right_entry_and_text": {"non_live/BFCL_v4_irrelevance_result.json": (
        _line("irrelevance_0", "I cannot \ud800 help") + "\n").encode()},
    "blank_line": {"non_live/BFCL_v4_simple_python_result.json": (RIGHT_0 + "\n\n" + RIGHT_1 + "\n").encode()},
    "form_feed_at_a_line_end": {"non_live/BFCL_v4_simple_python_result.json": (RIGHT_0 + "\x0c\n" + RIGHT_1 + "\n").encode()},
    "line_breaks_inside_strings": {
        "non_live/BFCL_v4_simple_python_result.json": (RIGHT_0 + "\r\n" + _line(
            "simple_python_1", _call("math_factorial", '{"number": 5, "x": "a\u2028b\x85c"}'), False) + "\r").encode(),
        "non_live/BFCL_v4_irrelevance_result.json": (_line("irrelevance_0", "No\u2028call\x85here\x1e.", False)
                                                     + "\n").encode()},
    "multi_turn_step_too_deep": {"multi_turn/BFCL_v4_multi_turn_base_result.json": (
        _multi_turn(True) + "\n").encode()},
    "integer_beyond_a_float": {"non_live/BFCL_v4_simple_python_result.json": (RIGHT_0 + "\n" + _line(
        "simple_python_14", _call("calculate_derivative", '{"function": "3x**2 + 2x - 1", "x_value": 1' + "0" * 400
                                  + "}")) + "\n").encode()},
    "python_tuples": {  # a prompting model (the folder below is Qwen/Qwen3-8B's): (a, b) is a tuple to BFCL's checker
        "live/BFCL_v4_live_multiple_result.json": (_line(  # an array given as (): type_error:simple
            "live_multiple_55-22-2", "[inventory_management(product_id='iPhone 12', sizes=(), color='white')]")
            + "\n").encode(),
        "non_live/BFCL_v4_simple_python_result.json": (_line(  # a tuple parameter given as (a, b): right
            "simple_python_83", "[calculate_distance(coord1=(33.4484, -112.074), coord2=(34.0522, -118.2437), "
            "unit='miles')]") + "\n").encode()},
    "rounding_tie_23_of_160": {},  # made by _tie (it needs the wheel)
}


def _tie() -> dict[str, bytes]:
    """The first 160 simple_python entries, the first 23 right: BFCL prints 23 / 160 as 14.37% (divided first);
    ``round(100 * 23 / 160, 2)`` is 14.38."""
    from evals.benchmarks.bfcl.data import load_entries
    from evals.benchmarks.bfcl.single_turn import gold_calls

    lines = []
    for n, entry in enumerate(load_entries(("simple_python",))[:160]):
        result: Any = [{c["name"]: json.dumps(c["arguments"])} for c in gold_calls(entry)] if n < 23 else "No call."
        lines.append(_line(entry.id, result))
    return {"non_live/BFCL_v4_simple_python_result.json": "".join(line + "\n" for line in lines).encode()}


def _model(case: str) -> str:
    return "Qwen/Qwen3-8B" if case == "python_tuples" else MODEL


def _folder(root: Path, case: str) -> Path:
    folder = root / "result" / _model(case).replace("/", "_")
    for name, data in (_tie() if case == "rounding_tie_23_of_160" else CASES[case]).items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return folder


def bfcl_outcome(python: Path, folder: Path, tmp: Path, model: str = MODEL) -> dict[str, Any]:
    """What ``bfcl evaluate`` makes of the folder: ``{"stops": exception name}`` or ``{"verdicts", "accuracy"}``."""
    categories = sorted(p.name.removeprefix("BFCL_v4_").removesuffix("_result.json") for p in folder.rglob("*.json"))
    env = {"BFCL_PROJECT_ROOT": str(tmp), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([str(python), str(DRIVER), str(folder.parent), str(tmp / "score"), model, *categories],
                          capture_output=True, text=True, timeout=600, check=False, env=env)
    if done.returncode != 0:
        return {"stops": done.stderr.strip().splitlines()[-1].split(":")[0]}
    theirs = json.loads(done.stdout)
    return {"verdicts": theirs["verdicts"],
            "accuracy": {c: f"{h['accuracy'] * 100:.2f}" for c, h in sorted(theirs["scores"].items())}}


def _ours(folder: Path, out: Path) -> dict[str, Any]:
    """``evals score`` of the folder: ``{"refused": message}`` or its verdicts, accuracies and warnings."""
    from client import eventloop
    from evals.core.formats import import_predictions
    from evals.core.run import score_run_dir

    try:
        run = import_predictions(folder, "bfcl-official", "bfcl", out)
    except ValueError as exc:
        return {"refused": str(exc)}
    summary = eventloop.run(score_run_dir(run))
    scores = [json.loads(line) for line in (run / "scores.jsonl").read_text(encoding="utf-8").split("\n") if line]
    verdicts = {s["task_id"]: s["score"]["details"]["verdict"].get("error_type") or "" for s in scores}
    return {"verdicts": verdicts, "metrics": summary["metrics"], "warnings": summary.get("warnings") or []}


def _check(case: str, theirs: dict[str, Any], ours: dict[str, Any], folder: Path) -> None:
    if "stops" in theirs:  # refused with FILE:LINE, or warned naming the line
        said = ours.get("refused") or " ".join(ours["warnings"])
        assert "bfcl evaluate stops" in said or "stops there" in said, (case, said)
        assert f"{folder}/" in said and ".json:" in said, said
        return
    assert "refused" not in ours, ours
    assert ours["verdicts"] == theirs["verdicts"], case
    for category, accuracy in theirs["accuracy"].items():
        assert f"{ours['metrics'][category]:.2f}" == accuracy, (case, category)


@pytest.mark.parametrize("case", list(CASES))
def test_bfcls_own_outcome_is_committed_and_ours_agrees(bfcl_data, case, tmp_path):
    folder = _folder(tmp_path, case)
    _check(case, json.loads(FIXTURE.read_text())[case], _ours(folder, tmp_path / "run"), folder)


@pytest.mark.parametrize("case", list(CASES))
def test_bfcl_evaluate_gives_the_committed_outcome(bfcl_data, bfcl_python, case, tmp_path):
    folder = _folder(tmp_path, case)
    assert bfcl_outcome(bfcl_python, folder, tmp_path, _model(case)) == json.loads(FIXTURE.read_text())[case]


def test_the_findings_are_the_kinds_the_docstring_names():
    committed = json.loads(FIXTURE.read_text())
    assert committed["surrogate_in_a_wrong_entry"] == {"stops": "UnicodeEncodeError"}
    assert committed["blank_line"]["stops"] == committed["form_feed_at_a_line_end"]["stops"] == "json.decoder.JSONDecodeError"
    assert "stops" not in committed["line_breaks_inside_strings"] and "stops" not in committed["multi_turn_step_too_deep"]
    assert committed["multi_turn_step_too_deep"]["verdicts"] == {"multi_turn_base_0": ""}  # the deep step skipped
    assert committed["rounding_tie_23_of_160"]["accuracy"] == {"simple_python": "14.37"}
    assert committed["integer_beyond_a_float"] == {"stops": "OverflowError"}
    assert committed["python_tuples"]["verdicts"] == {"live_multiple_55-22-2": "type_error:simple", "simple_python_83": ""}


def main() -> None:
    """Writes the fixture: BFCL's outcome on every case (the module docstring)."""
    venv = HERE.parents[3] / ".ci" / "bfcl-venv" / "bin" / "python"
    answers = {}
    for case in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            answers[case] = bfcl_outcome(venv, _folder(Path(tmp), case), Path(tmp), _model(case))
    FIXTURE.write_text(json.dumps(answers, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()


@pytest.fixture
def fuzz_children() -> Any:
    from bench.fuzz import ours

    yield
    for server in ours._CHILDREN.values():  # the serving processes this test started
        if server.proc is not None:
            server.proc.kill()
            server.proc.wait()
    ours._CHILDREN.clear()


def test_the_fuzz_target_writes_bfcl_folders_that_both_sides_score_alike(bfcl_data, bfcl_python, fuzz_children, tmp_path):
    import random

    from bench.fuzz import bfcl as target
    from bench.fuzz.outcome import compare

    rng = random.Random("9:bfcl")  # two small folders (2 and 16 lines)
    verdicts, scored = 0, 0
    for k in range(6):
        case = target.generate(rng, tmp_path / str(k))
        model = (case.parents[1] / "model.txt").read_text()
        assert model in target.MODELS and case.name == model.replace("/", "_") and case.parent.name == "result"
        files = list(case.rglob("*.json"))
        assert files and all(case in f.parents and f.name.startswith("BFCL_v4_") for f in files)
        official, ours = target.run_official(tmp_path, case), target.run_ours(case)
        assert compare(official, ours) == "equal", (official.note, ours.note)
        if not official.stopped:
            verdicts += sum(len(json.loads(v)) for k, v in ours.numbers.items() if k.startswith("verdicts "))
            assert ours.numbers["data_overall:Overall Acc"].endswith("%")
            scored += 1
            if scored == 2:
                break
    assert scored == 2 and verdicts > 10
