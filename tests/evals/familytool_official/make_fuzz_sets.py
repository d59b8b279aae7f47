"""Writes ``fuzz47/<name>-b/`` (issue 47): one prediction folder per kind of difference the differential
fuzzer (``python -m bench.fuzz --bench familytool``) found, each derived from ``sets/mix-b`` (deterministic):

* ``kg_by_position``: the step-1 rows in another order than the tasks (the official metric pairs
  them with the tasks by position, whatever their ids);
* ``repeated_rows``: a task on two tool-use rows (the official loop scores both);
* ``missing_kg_rows``: fewer step-1 rows than tasks (the official zip stops at the shorter list);
* ``name_not_string``: a call whose name is a number (the official code stops: ``.strip()``);
* ``parameters_not_object``: a gold tool's call with list parameters (it stops: ``.get``);
* ``kg_response_missing``: a step-1 row without ``response`` (it stops: ``KeyError``).

    python tests/evals/familytool_official/make_fuzz_sets.py
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE / "sets" / "mix-b"
OUT = HERE / "fuzz47"


def write(name: str, rows: list, kg: list) -> None:
    d = OUT / f"{name}-b"
    d.mkdir(parents=True, exist_ok=True)
    shutil.copy(SRC / "manifest.json", d / "manifest.json")
    (d / "tool_use_results.json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    (d / "kg_extraction.json").write_text(json.dumps(kg, indent=1) + "\n", encoding="utf-8")


def main() -> None:
    rows = json.loads((SRC / "tool_use_results.json").read_text())[:20]
    kg = json.loads((SRC / "kg_extraction.json").read_text())[:20]
    write("kg_by_position", rows, kg[10:] + kg[:10])
    write("repeated_rows", rows[:10] + [rows[3]] + rows[10:], kg + kg[3:4])
    write("missing_kg_rows", rows, kg[:14])
    bad = json.loads(json.dumps(rows))
    bad[2]["result"]["tool_call"].append({"name": 7, "parameters": {}})
    write("name_not_string", bad, kg)
    bad = json.loads(json.dumps(rows))
    bad[6]["result"]["tool_call"] = [{"name": "GetRide", "parameters": ["x"]}]  # KGMTUbench_66: its gold tool
    write("parameters_not_object", bad, kg)
    bad_kg = json.loads(json.dumps(kg))
    del bad_kg[5]["response"]
    write("kg_response_missing", rows, bad_kg)


if __name__ == "__main__":
    main()
