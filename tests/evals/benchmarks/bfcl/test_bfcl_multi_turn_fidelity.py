"""Our multi-turn checker beside BFCL's own (``multi_turn_checker`` with its backends, run in
.ci/bfcl-venv by ``bfcl_official_driver.py``): entries of every multi-turn category, each with
crafted per-turn call lists (right; the calls one response each; a text reply and an undecodable
response beside the right calls; a turn left empty; a call dropped (a state or a response-only
mistake, whichever the call is); a harmless call repeated; a wrong argument value; an argument name
Python cannot take; a function no backend has; a turn too few; a failed episode), must get the same
verdict, error type, differing attributes and number of missing results, and each category the
same accuracy. The entries are a sample (the first of each file) to keep the run short."""

from __future__ import annotations

import copy
import json
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from official_checker import run_official

from evals.benchmarks.bfcl.files import MULTI_TURN
from evals.benchmarks.bfcl.multi_turn import MultiTurnEntry, gold_steps, read_multi_turn
from evals.benchmarks.bfcl.multi_turn_checker import check_multi_turn

PER_CATEGORY = 20
Turns = list[list[list[dict[str, Any]]]]  # per turn, the model's responses with calls


def _variants(entry: MultiTurnEntry) -> Iterator[tuple[str, Turns | None, list[Any] | None]]:
    """(variant, our recorded turns, the same as BFCL's model result: steps of [name, JSON] or text)."""
    gold = gold_steps(entry)

    def both(turns: Turns, texts: dict[int, str] | None = None) -> tuple[Turns, list[Any]]:
        theirs: list[Any] = []
        for index, turn in enumerate(turns):
            steps: list[Any] = [[[c["name"], json.dumps(c["arguments"]) if c["arguments"] is not None else "{not json"]
                                 for c in step] for step in turn]
            if texts and index in texts:
                steps.append(texts[index])  # a text reply ends the turn: no calls, dropped by both
            theirs.append(steps)
        return turns, theirs

    right: Turns = [[list(t)] if t else [] for t in gold]
    yield "right", *both(right, dict.fromkeys(range(len(gold)), "Done."))
    yield "one_call_per_response", *both([[[c] for c in t] for t in gold])
    undecodable = copy.deepcopy(right)
    undecodable[0].insert(0, [{"name": "ls", "arguments": None}])
    yield "undecodable_response_first", *both(undecodable)
    busy = [index for index, t in enumerate(gold) if t]
    last = busy[-1]
    empty = copy.deepcopy(right)
    empty[last] = []
    yield "turn_left_empty", *both(empty)
    for index in busy[:2]:
        dropped = copy.deepcopy(right)
        dropped[index][0].pop()
        if not dropped[index][0]:
            dropped[index] = []
        yield f"last_call_dropped_t{index}", *both(dropped)
    repeated = copy.deepcopy(right)
    repeated[busy[0]][0].append(copy.deepcopy(gold[busy[0]][0]))
    yield "first_call_repeated", *both(repeated)
    wrong = copy.deepcopy(right)
    for call in wrong[busy[0]][0]:
        key = next((k for k, v in call["arguments"].items() if isinstance(v, str | int) and not isinstance(v, bool)), None)
        if key is not None:
            value = call["arguments"][key]
            call["arguments"][key] = value + "_x" if isinstance(value, str) else value + 7
            break
    yield "wrong_argument_value", *both(wrong)
    odd = copy.deepcopy(right)
    odd[busy[0]][0][0]["arguments"]["not-a-name"] = 1
    yield "argument_name_python_cannot_take", *both(odd)
    unknown = copy.deepcopy(right)
    unknown[busy[0]][0].insert(0, {"name": "no_such_function", "arguments": {}})
    yield "unknown_function_too", *both(unknown)
    yield "a_turn_too_few", *both(right[:-1])
    yield "failed_episode", None, None


def _ours(entry: MultiTurnEntry, turns: Turns | None) -> dict[str, Any]:
    v = check_multi_turn(entry, turns)
    out: dict[str, Any] = {"valid": v.valid, "error_type": v.error_type}
    if "differences" in v.details:
        out["attributes"] = sorted(v.details["differences"])
    if "missing_items" in v.details:
        out["missing"] = len(v.details["missing_items"])
    return out


def test_every_multi_turn_verdict_is_bfcls(bfcl_code_data, bfcl_python, tmp_path):
    if subprocess.run([str(bfcl_python), "-c", "import mpmath, tenacity"], capture_output=True, timeout=60,
                      check=False).returncode != 0:
        why = f"{bfcl_python.parent.parent} lacks mpmath and tenacity: rerun scripts/bfcl_env.sh"
        pytest.fail(why) if os.environ.get("EVALS_REQUIRE_BFCL") == "1" else pytest.skip(why)
    cases, ours, kinds = [], {}, set()
    for category in MULTI_TURN:
        for entry in read_multi_turn(category)[:PER_CATEGORY]:
            for variant, turns, result in _variants(entry):
                case_id = f"{entry.id}#{variant}"
                cases.append({"id": case_id, "category": category, "multi_turn": True,
                              "entry": {"id": entry.id, "initial_config": entry.initial_config,
                                        "involved_classes": list(entry.involved_classes)},
                              "ground_truth": [list(t) for t in entry.ground_truth], "result": result})
                ours[case_id] = _ours(entry, turns)
                kinds.add(ours[case_id]["error_type"])
    theirs = run_official(bfcl_python, {"cases": cases}, tmp_path)
    assert set(theirs["verdicts"]) == set(ours)
    differ = {k: (ours[k], v) for k, v in theirs["verdicts"].items() if ours[k] != v}
    assert not differ, f"{len(differ)} of {len(ours)} verdicts differ, e.g. {list(differ.items())[:6]}"
    for category, accuracy in theirs["accuracy"].items():
        mine = [ours[c["id"]]["valid"] for c in cases if c["category"] == category]
        assert sum(mine) / len(mine) == accuracy, category
    # the crafted lists reach every verdict kind of the checker and its runner
    assert kinds >= {"", "multi_turn:instance_state_mismatch", "multi_turn:execution_response_mismatch",
                     "multi_turn:empty_turn_model_response", "multi_turn:force_terminated",
                     "multi_turn:inference_error"}, kinds
