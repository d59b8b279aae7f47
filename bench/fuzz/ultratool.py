"""UltraTool: the official `evaluation/` functions (JoeYing1019/UltraTool @ 9f3793c, its own venv with
numpy, scikit-learn, jiwer 3.0.3, textdistance 4.6.1; called by `ultratool_official.py`) against
`evals score --format ultratool-official`, on generated prediction files. The numbers computed without
a model: tool usage (Levenshtein), tool-usage awareness (global, local) and planning from stored
judge outputs (`eval/planning_eval.json`); tool creation needs the judge and is not fuzzed."""

from __future__ import annotations

import copy
import json
import math
import random
from functools import cache
from pathlib import Path
from typing import Any

from . import weird
from .checkout import prepare_official
from .official_run import served_outcome
from .outcome import Outcome

NAME = "ultratool"
REPO = "JoeYing1019/UltraTool"
COMMIT = "9f3793c3f9396b840631833ef76fe4f20c057c39"
DRIVER = Path(__file__).with_name("ultratool_official.py")
FOLDERS = {"en": "English-dataset", "zh": "Chinese-dataset"}
PLAN_KEYS = {"en": ("Accuracy Score", "Completeness Score", "Executability Score", "Syntactic Soundness Score",
                    "Structural Rationality Score", "Efficiency Score", "Overall Score"),
             "zh": ("准确性分数", "完整性分数", "可执行性分数", "语法健全性分数", "结构合理性分数", "高效性分数", "总分")}
DIGITS = 2  # our summary's metrics are compared at two decimals (no `run_ours`: the driver's)
# warnings that say the number is the official one (not a difference)
SAME = ("and so is it scored here", "as the official code does", "and so is it read here",
         "as the official code's np.mean counts it")


def prepare(work: Path) -> None:
    prepare_official(work, REPO, COMMIT, ["evaluation"], ["numpy", "scikit-learn", "jiwer==3.0.3", "textdistance==4.6.1"])


@cache
def _records(language: str, task: str) -> list[dict[str, Any]]:
    from evals.core.data import data_file

    path = data_file("ultratool", FOLDERS[language], "test_set", f"{task}.json")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _edit(rng: random.Random, v: Any) -> Any:
    if isinstance(v, str) and rng.random() < 0.6:
        return rng.choice([v[: len(v) // 2], v + "x", v.upper(), "", weird.text(rng, v), v.replace("_", "\\_")])
    return weird.value(rng) if rng.random() < 0.5 else v


def _steps(rng: random.Random, reference: list[dict[str, Any]], task: str) -> list[Any]:
    steps: list[Any] = copy.deepcopy(reference)
    for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
        if not steps:
            break
        s = rng.choice(steps)
        what = rng.randrange(8)
        if not isinstance(s, dict):
            continue
        if what == 0:
            steps.remove(s)
        elif what == 1:
            rng.shuffle(steps)
        elif what == 2 and task == "tool_usage" and isinstance(s.get("param"), dict) and s["param"]:
            k = rng.choice(list(s["param"]))
            s["param"][k] = _edit(rng, s["param"][k])
        elif what == 2:
            s["tool"] = rng.choice(["0", "1", 0, 1, "yes", None, 2]) if task != "tool_usage" else _edit(rng, s.get("tool"))
        elif what == 3:
            s["step"] = _edit(rng, s.get("step"))
        elif what == 4:
            s[rng.choice(["param", "tool", "step"])] = weird.value(rng)
        elif what == 5:
            steps.append(s)  # the same step again
        elif what == 6:
            steps.insert(rng.randrange(len(steps) + 1), weird.value(rng))
        else:
            s.pop(rng.choice(["param", "tool", "step"]), None)
    return steps


def _answer(rng: random.Random, record: dict[str, Any], task: str) -> Any:
    r = rng.random()
    if r < 0.06:
        return weird.value(rng)  # not text: a JSON value where the answer goes
    steps = _steps(rng, record["reference"], task)
    if r < 0.1:
        return steps  # a JSON list of steps
    style = rng.randrange(7)
    body = weird.answer_text(rng, steps, style, "```json\n{}\n```", 300)
    if style == 5:
        body = "输出：" + body.replace(", ", "，", 1) + "\n\nDone."
    return body


def _judgment(rng: random.Random, language: str) -> Any:
    keys = PLAN_KEYS[language]
    if rng.random() < 0.05:
        return weird.value(rng)
    out: list[Any] = []
    for key in keys:
        score: Any = rng.randint(1, 10)
        r = rng.random()
        if r < 0.1:
            score = rng.choice([7.5, 8.25, True, False, 0, 10, 9.999])
        elif r < 0.13:
            score = weird.value(rng)
        out.append({key: score} if rng.random() > 0.02 else {weird.text(rng, key): score})
    if rng.random() < 0.05:
        out = out[: rng.randrange(len(out))]
    return out


def generate(rng: random.Random, case_dir: Path) -> Path:
    language = "zh" if rng.random() < 0.2 else "en"
    task = rng.choice(["tool_usage", "tool_usage", "tool_usage_awareness", "tool_usage_awareness", "planning_eval"])
    records = _records(language, "planning" if task == "planning_eval" else task)
    size = rng.choice([1, 2, 3, 5, 8, 16, 20, 40, 80, 160, 400])
    chosen = [rng.choice(records) for _ in range(size)]
    if rng.random() < 0.1:
        chosen += rng.sample(chosen, min(len(chosen), 2))  # repeated records
    gpt = task == "planning_eval" or rng.random() < 0.8
    model = "gpt-4" if gpt else "m"
    lines = []
    for record in chosen:
        if task == "planning_eval":
            row: dict[str, Any] = {"data": {"data": record, "init output": "1. step"}, "eval": _judgment(rng, language)}
            if rng.random() < 0.02:
                del row["eval"]
        elif gpt:
            row = {"data": record, "init output": _answer(rng, record, task)}
        else:
            row = {"question": record, "total output": {"init output": [_answer(rng, record, task)]}}
        lines.append(weird.dumps(rng, row))
    folder = case_dir / model / ("eval" if task == "planning_eval" else "")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{task}.json"
    weird.write_lines(rng, path, lines, odd=0.2)
    (case_dir / "case.json").write_text(json.dumps({"task": task, "language": language, "layout": "gpt" if gpt else "other"}))
    return path


def _case(case: Path) -> dict[str, str]:
    root = case.parent.parent if case.parent.name == "eval" else case.parent
    case_info: dict[str, str] = json.loads((root.parent / "case.json").read_text())
    return case_info


def _percent(text: str) -> str:
    try:
        x = float(text)
    except ValueError:
        return text
    return f"{x * 100:.2f}" if math.isfinite(x) else text


def run_official(work: Path, case: Path) -> Outcome:
    meta = _case(case)
    return served_outcome(work, DRIVER, work / "code" / "evaluation",
                          [meta["task"], meta["language"], meta["layout"], str(case)],
                          lambda answer: {k: _percent(v) for k, v in answer["numbers"].items()})
