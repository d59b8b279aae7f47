"""BFCL's Java and JavaScript categories with ``--strategy prompting``: the reply's text read by BFCL's own
tree-sitter readers (``default_decode_ast_prompting`` in Java / JavaScript, imported from the wheel).

* The prompting oracle over every entry of ``simple_java`` (100) and ``simple_javascript`` (50) fails exactly
  where no reply can pass: the two Java entries the FC oracle fails too (their gold mixes types in one
  list), and the three whose argument is a ``HashMap``: BFCL's Java reader keeps an object creation's
  arguments but drops its class body, so ``new HashMap<String, Object>() {{ put("limit", 50); }}`` reaches
  its checker as an empty map (``value_error:dict_key``, as ``bfcl evaluate`` says too).
* A scripted prompting model with known mistakes gets the hand-computed numbers.
* Both runs, exported and scored by ``bfcl evaluate`` itself (as a prompting model's folder), give every
  entry the verdict and error type ``evals`` gave it. BFCL's verdicts are committed
  (``fixtures/bfcl_prompting_languages.json``), made by

    EVALS_DATA_DIR=... PYTHONPATH=. python tests/evals/benchmarks/bfcl/test_bfcl_prompting_languages.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from test_bfcl_prompting_multi_turn import _export, _traces, _verdicts, bfcl_evaluate

HERE = Path(__file__).parent
FIXTURE = HERE / "fixtures" / "bfcl_prompting_languages.json"
CATEGORIES = ["simple_java", "simple_javascript"]
NO_REPLY_PASSES = {"simple_java_36": "value_error:list/tuple", "simple_java_65": "value_error:list/tuple",
                   "simple_java_1": "value_error:dict_key", "simple_java_67": "value_error:dict_key",
                   "simple_java_68": "value_error:dict_key"}
SCRIPT = {
    "simple_java_0": "[GeometryPresentation.createPresentation(controller=mapController, parent=mapArea)]",  # right
    "simple_java_2": "[FireBirdUtils.getViewSourceWithHeader(monitor=dbMonitor, view=EmployeeView, "
                     "source=\"SELECT * FROM Employee\")]",  # a wrong value
    "simple_java_3": "DB2Tablespace.resolveTablespaceReference(monitor=dbMonitor, dataSource=db2DataSource, "
                     "reference=USERSPACE1",  # not Java: BFCL's reader cannot parse it
    "simple_javascript_0": "[validateUserInput(inputField=\"userInputField\", isComplete=true)]",  # right
    "simple_javascript_1": "[getActiveDataEntries(attribute=\"data-active\", value=true)]",  # the required one left out
}


def _run(run_dir: Path, ids: list[str], model: str) -> dict[str, Any]:
    from client import eventloop
    from evals.core.run import RunOptions, run_benchmark

    opts = RunOptions(benchmark="bfcl", model=model, strategy="prompting", run_dir=run_dir, task_ids=ids,
                      progress=False, concurrency=4, benchmark_options={"category": CATEGORIES})
    _, summary = eventloop.run(run_benchmark(opts))
    return summary


def _oracle(tmp: Path) -> tuple[dict[str, Any], dict[str, str]]:
    from evals.benchmarks.bfcl.data import load_entries

    ids = [e.id for c in CATEGORIES for e in load_entries((c,))]
    summary = _run(tmp / "oracle", ids, "oracle")
    return summary, _verdicts(tmp / "oracle")


def _scripted(tmp: Path) -> tuple[dict[str, Any], dict[str, str]]:
    from evals.benchmarks.bfcl.data import load_entries

    queries = {e.id: e.query for e in load_entries(tuple(CATEGORIES))}
    (tmp / "script.jsonl").write_text("".join(json.dumps({"messages": [
        {"role": "user", "content": queries[i]}, {"role": "assistant", "content": text}]}) + "\n"
        for i, text in SCRIPT.items()))
    summary = _run(tmp / "scripted", list(SCRIPT), f"replay:{tmp / 'script.jsonl'}")
    return summary, _verdicts(tmp / "scripted")


def test_the_prompting_oracle_fails_only_where_bfcls_readers_cannot_give_the_gold(bfcl_data, tmp_path):
    summary, ours = _oracle(tmp_path)
    assert summary["completed"] == 150 and summary["metrics"]["simple_javascript"] == 100.0
    assert summary["metrics"]["simple_java"] == 95.0
    assert {i: v for i, v in ours.items() if v} == NO_REPLY_PASSES
    trace = _traces(tmp_path / "oracle")["simple_java_1"]
    assert "put(\"limit\", 50)" in trace["outcome"]["bfcl_result"]  # the gold was written; BFCL's reader drops it
    assert ours == json.loads(FIXTURE.read_text())["oracle"]


def test_a_scripted_prompting_model_gets_the_hand_computed_numbers(bfcl_data, tmp_path):
    summary, ours = _scripted(tmp_path)
    m = summary["metrics"]
    assert (m["simple_java"], m["simple_javascript"], m["accuracy"]) == (round(100 / 3, 2), 50.0, 40.0)
    assert ours == {"simple_java_0": "", "simple_java_2": "value_error:string",
                    "simple_java_3": "ast_decoder:decoder_failed", "simple_javascript_0": "",
                    "simple_javascript_1": "simple_function_checker:missing_required"}
    assert ours == json.loads(FIXTURE.read_text())["scripted"]


def test_bfcl_evaluate_gives_the_same_verdicts(bfcl_data, bfcl_python, tmp_path):
    for name, (summary, ours) in {"oracle": _oracle(tmp_path), "scripted": _scripted(tmp_path)}.items():
        (tmp_path / f"{name}-bfcl").mkdir()
        scored = bfcl_evaluate(bfcl_python, _export(tmp_path / name, tmp_path / f"{name}-result"),
                               tmp_path / f"{name}-bfcl", CATEGORIES)
        assert scored["verdicts"] == ours, name
        for category, header in scored["scores"].items():
            assert summary["metrics"][category] == round(100 * header["accuracy"], 2), (name, category)


def main() -> None:
    import tempfile

    venv = HERE.parents[3] / ".ci" / "bfcl-venv" / "bin" / "python"
    out: dict[str, Any] = {"made_by": "EVALS_DATA_DIR=... PYTHONPATH=. python "
                                      "tests/evals/benchmarks/bfcl/test_bfcl_prompting_languages.py"}
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        for name, run in (("oracle", _oracle), ("scripted", _scripted)):
            run(tmp)
            (tmp / f"{name}-bfcl").mkdir()
            out[name] = bfcl_evaluate(venv, _export(tmp / name, tmp / f"{name}-result"), tmp / f"{name}-bfcl",
                                      CATEGORIES)["verdicts"]
    FIXTURE.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    sys.exit(main())
