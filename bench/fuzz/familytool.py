"""FamilyTool: prediction folders in the `familytool-official` format against the official metric code.

The official code: GitHub yxzwang/FamilyTool at c3c5fc7e2496df3db4ffa045f0dbf34114c27802 (the commit
tests/evals/familytool_official/README.md names, with its one-line Python 3.11 fix), in a venv of its
own with numpy and tqdm, driven by `tests/evals/familytool_official/run_official.py` (it imports the
official modules unchanged and replays the folder's `result.tool_call` lists; golden rows in the tool
rows' order, as the export writes `golden.jsonl`). Ours: `evals score DIR --format familytool-official
--benchmark familytool-b|-e`. Each case is one of the committed hand-made sets
(`tests/evals/familytool_official/sets/`) mutated at random: repeated, dropped and reordered rows, KG
rows with other ids, fewer or more KG rows, every JSON value type where a value goes, calls and rows
missing the keys the official code reads, Unicode and control characters in values.
"""

from __future__ import annotations

import copy
import json
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

from .checkout import prepare_official
from .ours import evals_score
from .outcome import Outcome

NAME = "familytool"
REPO = "yxzwang/FamilyTool"
COMMIT = "c3c5fc7e2496df3db4ffa045f0dbf34114c27802"
ROOT = Path(__file__).resolve().parents[2]
SETS = ROOT / "tests" / "evals" / "familytool_official" / "sets"
DATA = Path("/work/shared/data")
TOOL = (("tool_em", "ExactMatch-AllTools"), ("tool_acc", "ToolAccuracy"), ("value_acc", "ParameterAccuracy"))
KG = (("kg_em", "em"), ("kg_f1", "f1"), ("kg_no_hallucination", "no_hallucination"), ("kg_coverage", "coverage"),
      ("kg_format_error", "formaterror"))


def prepare(work: Path) -> None:
    code = prepare_official(work, REPO, COMMIT, ["pipeline", "resources/UnifiedToolHub/benchmark",
                                                 "resources/UnifiedToolHub/models", "resources/UnifiedToolHub/run.py"],
                            ["numpy", "tqdm"])
    p = code / "pipeline" / "KG_extraction_post_process_make_intermediate_json.py"
    lines = p.read_text(encoding="utf-8").split("\n")
    line = lines[513].rstrip()  # a nested-quote f-string that needs Python 3.12 (see the README above)
    if line.startswith('    print(f"KG extraction metrics saving to {f"'):
        lines[513] = line.replace('print(f"', "print(f'", 1)[:-2] + "')"
        p.write_text("\n".join(lines), encoding="utf-8")


def _value(rng: random.Random) -> Any:
    return rng.choice([None, True, False, 0, 1, -1, 5.0, 1e308, 2**70, "", " x ", "5", "a\u2028b", "\x0c", "\ud800",
                       "😀", [], [1, "a"], {}, {"k": [None]}, "Alice", "dinnertime_0001"])


def _mutate_call(rng: random.Random, call: Any) -> Any:
    if not isinstance(call, dict):
        return call
    call = copy.deepcopy(call)
    r = rng.random()
    params = call.get("parameters")
    if r < 0.3 and isinstance(params, dict) and params:
        params[rng.choice(list(params))] = _value(rng)
    elif r < 0.4 and isinstance(params, dict):
        params[rng.choice(["extra", "x\u2028", " k "])] = _value(rng)
    elif r < 0.45:
        call.pop(rng.choice(["name", "parameters"]))
    elif r < 0.5:
        call["parameters"] = rng.choice([None, [], "x", 3])
    elif r < 0.55:
        call["name"] = rng.choice([" " + str(call.get("name")), str(call.get("name")).upper(), 3, None])
    return call


def generate(rng: random.Random, case_dir: Path) -> Path:
    src = rng.choice(sorted(p for p in SETS.iterdir() if p.is_dir()))
    out = case_dir / "pred"
    out.mkdir()
    shutil.copy(src / "manifest.json", out / "manifest.json")
    rows = json.loads((src / "tool_use_results.json").read_text(encoding="utf-8"))
    kg = json.loads((src / "kg_extraction.json").read_text(encoding="utf-8")) if (src / "kg_extraction.json").is_file() else None
    odd = rng.choice([0.0, 0.05, 0.2])
    if rng.random() < 0.5:
        rows = rows[: rng.randint(1, len(rows))]
        if kg is not None:
            kg = kg[: len(rows)]
    for row in rows:
        calls = row["result"]["tool_call"]
        row["result"]["tool_call"] = [_mutate_call(rng, c) if rng.random() < 0.3 else c for c in calls]
        if rng.random() < odd:
            row["result"]["tool_call"].append(rng.choice([{"name": "x", "parameters": {}}, "call", None, {}]))
        if rng.random() < odd / 3:
            row.pop(rng.choice(["result", "golden_answer"]), None)
    if rng.random() < 0.15 and rows:  # a repeated task
        k = rng.randrange(len(rows))
        rows.insert(rng.randrange(len(rows) + 1), copy.deepcopy(rows[k]))
    if kg is not None:
        r = rng.random()
        if r < 0.1:
            kg = kg[: rng.randrange(len(kg) + 1)]  # missing KG rows
        elif r < 0.2:
            rng.shuffle(kg)  # paired by position, not by id
        elif r < 0.25:
            kg = kg + kg[:2]
        elif r < 0.3 and kg:
            kg[rng.randrange(len(kg))]["id"] = rng.choice([None, "nope", 7])
        for row in kg:
            if rng.random() < odd / 2:
                if rng.random() < 0.5:
                    row.pop("response", None)
                else:
                    row["response"] = _value(rng)
        if len(kg) < len(rows) and rng.random() < 0.5:
            pass
        # keep golden order = tool rows' order (what the export writes), so the two sides see one task list
        (out / "kg_extraction.json").write_text(json.dumps(kg, ensure_ascii=rng.random() < 0.5), encoding="utf-8", errors="surrogatepass")
    (out / "tool_use_results.json").write_text(json.dumps(rows, ensure_ascii=rng.random() < 0.5), encoding="utf-8", errors="surrogatepass")
    return out


def run_official(work: Path, case: Path) -> Outcome:
    driver = ROOT / "tests" / "evals" / "familytool_official" / "run_official.py"
    try:
        p = subprocess.run([str(work / "venv" / "bin" / "python"), str(driver), str(work / "code"), str(case), str(DATA)],
                           capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return Outcome(stopped=True, note="timed out")
    if p.returncode != 0:
        return Outcome(stopped=True, note=(p.stderr.strip().splitlines() or [""])[-1][:200])
    got = json.loads(p.stdout)
    numbers: dict[str, str] = {}
    for block, label in (("metrics", "tool_strict"), ("nonstrict_metrics", "tool_nonstrict")):
        for ours, theirs in TOOL:
            numbers[f"{block}.{ours}"] = repr(round(float(got[label][theirs]), 2))
    if "kg" in got:
        for ours, theirs in KG:
            numbers[f"metrics.{ours}"] = repr(round(100 * float(got["kg"]["ratios"][theirs]), 2))
    return Outcome(numbers=numbers)


def run_ours(case: Path) -> Outcome:
    bench = json.loads((case / "manifest.json").read_text())["benchmark"]
    got = evals_score(["score", str(case), "--format", "familytool-official", "--benchmark", bench,
                       "--json", "--out", "run"], {"EVALS_DATA_DIR": str(DATA)})
    summary = got.summary or {}
    numbers = {f"{block}.{k}": repr(float(v)) for block in ("metrics", "nonstrict_metrics")
               for k, v in (summary.get(block) or {}).items() if isinstance(v, int | float)}
    return got.outcome(numbers)
