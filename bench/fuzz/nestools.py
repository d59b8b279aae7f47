"""NesTools: `evaluation/eval.py` (hhan1018/NesTools @ fb617f3, its own venv with rouge==1.0.1 and tqdm)
against `evals score --format nestools-official`, on generated `raw_response.jsonl` files."""

from __future__ import annotations

import copy
import random
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

from . import weird
from .checkout import prepare_official
from .official_run import served_outcome
from .outcome import Outcome

NAME = "nestools"
REPO = "hhan1018/NesTools"
COMMIT = "fb617f396d61ead9f857a48f9ea7cf12fa522450"
# eval.py's printed order: format, P/R/F1 of selection, order, parameters, nested, the average
PRINTED = ["format_accuracy", *(f"{d}_{m}" for d in ("selection", "order", "param", "nested")
                                for m in ("precision", "recall", "f1")), "average_f1"]
DIGITS = 1  # our summary's metrics are compared at eval.py's one decimal (no `run_ours`: the driver's)
# warnings that say the number is the official one (not a difference)
SAME = ("every line is scored, as eval.py scores it", "read the same here")


def prepare(work: Path) -> None:
    prepare_official(work, REPO, COMMIT, ["evaluation", "data/test_data.jsonl",
                                          "inference/build_test_prompt/test_api_ids.jsonl"], ["rouge==1.0.1", "tqdm"])


@cache
def _tasks() -> list[Any]:
    from evals.benchmarks.nestools.data import load_tasks

    return load_tasks()


def _mutate_value(rng: random.Random, v: Any) -> Any:
    r = rng.random()
    if isinstance(v, str) and r < 0.5:
        words = v.split(" ")
        if rng.random() < 0.3:
            return " ".join(words[: max(1, len(words) // 2)])
        if rng.random() < 0.2:
            return (" ".join(["word"] * rng.choice([400, 520, 700])) + " " + v)  # the rouge package's recursion
        return weird.text(rng, v)
    if r < 0.7:
        return weird.value(rng)
    return v


def _calls(rng: random.Random, task: Any) -> Any:
    calls = copy.deepcopy(task.gold_prediction())
    for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
        what = rng.randrange(10)
        if not calls:
            break
        c = rng.choice(calls)
        if not isinstance(c, dict) or not isinstance(c.get("parameters"), dict) or not isinstance(c.get("api_id"), int):
            continue
        if what == 0:
            calls.remove(c)
        elif what == 1 and len(calls) > 1:
            i, j = rng.sample(range(len(calls)), 2)
            calls[i], calls[j] = calls[j], calls[i]
        elif what == 2 and c["parameters"]:
            k = rng.choice(list(c["parameters"]))
            c["parameters"][k] = _mutate_value(rng, c["parameters"][k])
        elif what == 3:
            c["api_id"] = rng.choice([str(c["api_id"]), [c["api_id"]], {"id": c["api_id"]}, float(c["api_id"]),
                                      c["api_id"] + 1, None, True])
        elif what == 4:
            c["parameters"] = weird.value(rng)
        elif what == 5:
            calls.append(rng.choice(calls))  # the same call again (the same object: a later change applies to both)
        elif what == 6:
            c["responses"] = weird.value(rng)
        elif what == 7 and len(c) == 4:
            del c[rng.choice(["api_name", "api_id", "parameters", "responses"])]
        elif what == 8 and c["parameters"]:
            k = rng.choice(list(c["parameters"]))
            c["parameters"][weird.text(rng, k)] = c["parameters"].pop(k)
        else:
            calls.insert(rng.randrange(len(calls) + 1), weird.value(rng))
    return calls


def _response(rng: random.Random, task: Any) -> Any:
    r = rng.random()
    if r < 0.05:
        return rng.choice([-1, -1.0, "-1"])
    if r < 0.1:
        return weird.value(rng)
    calls = _calls(rng, task)
    return weird.answer_text(rng, calls, rng.randrange(6), "Here you go:\n```json\n{}\n```\nDone.", 1500)


def _test_id(rng: random.Random, task: Any) -> Any:
    r = rng.random()
    if r < 0.9:
        return task.test_id
    return rng.choice([float(task.test_id), str(task.test_id), task.test_id + 0.5, True, None, 0, 1001, [task.test_id]])


def generate(rng: random.Random, case_dir: Path) -> Path:
    tasks = _tasks()
    size = rng.choice([1, 2, 3, 4, 5, 8, 10, 16, 25, 40, 80, 125])
    chosen = [rng.choice(tasks) for _ in range(size)]
    if rng.random() < 0.2:
        chosen += rng.sample(chosen, min(len(chosen), rng.randint(1, 3)))  # repeated ids
    lines = []
    for task in chosen:
        row: dict[str, Any] = {"test_id": _test_id(rng, task), "response": _response(rng, task)}
        if rng.random() < 0.02:
            del row[rng.choice(["test_id", "response"])]
        lines.append(weird.dumps(rng, row))
    path = case_dir / "raw_response.jsonl"
    weird.write_lines(rng, path, lines)
    return path


DRIVER = Path(__file__).with_name("nestools_official.py")


def run_official(work: Path, case: Path) -> Outcome:
    with tempfile.TemporaryDirectory() as tmp:
        return served_outcome(work, DRIVER, work / "code", [str(case), str(Path(tmp) / "r.csv")],
                              lambda answer: dict(zip(PRINTED, answer["printed"], strict=True)))
