"""UltraTool's metrics, computed as its official evaluation computes them (``evaluation/*.py`` at the
pinned commit; our own implementation of the same arithmetic).

* **Key-value accuracy** (awareness, selection): the gold list's steps are the keys; a prediction
  is looked up by *step number* (the step's text up to its first space), the first predicted step
  with that number wins. For a 0/1 judgement a step the model left out counts as the wrong label;
  for selection it counts as the name ``"no_good"``. *Global*: a task is right when every value
  is; *local*: the share of right values over all steps of all tasks.
* **Key-value Levenshtein** (tool usage, local level only): per gold tool step, the first
  predicted step with the same number; per gold argument, the first predicted argument of the same
  name (``\\_`` read as ``_``), scored ``1 - normalised Levenshtein distance`` of the two values as
  text (distance / length of the longer; rapidfuzz, the same numbers as the official textdistance);
  an empty gold value scores 1 only against an empty value; a missing argument scores 0. A step's
  score is the mean over its gold arguments (0 when it has none, or when the predicted ``param`` is
  not a dict); a missing step scores 0. The metric is the mean over every gold step of every task.
* **Judge scores** (planning, tool creation): the mean of each dimension's 1-10 score, divided by
  10 (so a percentage here). The score keys are the rubric's: English ones for the English set,
  Chinese ones (``准确性分数`` ... ``总分``) for the Chinese set, as ``cal_plan_res_en`` /
  ``cal_plan_res_ch`` read them. A judgment without them stops the official script with an error;
  here it is counted in ``judge_unreadable``, left out of the dimension means, and reported as a
  warning in the summary and on stderr.

The official numbers are fractions rounded to 4 places, printed in the paper as percentages with 2
decimals, and each metric's value is that fraction times 100 (``value_of``), rounded as the official
script rounds it on any subset: Levenshtein ``round(np.mean(scores), 4)`` and the judge's
``round(np.mean(scores) / 10, 4)`` round a numpy float (numpy's rounding: ``x * 10**4`` to even);
the awareness (and selection) accuracies ``round(k / n, 4)`` round a Python float (exact decimal
rounding; scikit-learn's ``accuracy_score`` returns a Python float since 1.6). On a tie the two
differ (0.76825: numpy 0.7682, Python 0.7683), and ``round(100 * k / n, 2)`` differs from both
on others. A task's metric samples are ``(sum, count)`` pairs, so the core's aggregate is the
same mean.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...core.metrics import Metric, numpy_round
from .parsing import step_number

__all__ = [
    "CREATION_DIMENSIONS",
    "CREATION_KEYS_ZH",
    "PLANNING_KEYS_ZH",
    "judge_keys",
    "METRICS",
    "PLANNING_DIMENSIONS",
    "awareness_stop",
    "awareness_values",
    "levenshtein_scores",
    "official_value",
    "selection_values",
    "similarity",
    "usage_stop",
]

# (metric name, the judge's key) per dimension, in the order the rubric asks for them; the last is
# the overall score
PLANNING_DIMENSIONS: tuple[tuple[str, str], ...] = (
    ("accuracy_score", "Accuracy Score"),
    ("completeness_score", "Completeness Score"),
    ("executability_score", "Executability Score"),
    ("syntactic_soundness_score", "Syntactic Soundness Score"),
    ("structural_rationality_score", "Structural Rationality Score"),
    ("efficiency_score", "Efficiency Score"),
    ("overall_score", "Overall Score"),
)
CREATION_DIMENSIONS: tuple[tuple[str, str], ...] = (
    ("format_compliance_score", "Format Compliance Score"),
    ("accuracy_score", "Accuracy Score"),
    ("content_reasonableness_score", "Content Reasonableness Score"),
    ("executability_score", "Executability Score"),
    ("richness_score", "Richness Score"),
    ("overall_score", "Total Score"),
)

# The Chinese rubrics' keys (``ch_prompt_plan`` / ``ch_prompt_tool``), in the same order: what the
# official ``cal_plan_res_ch`` / ``cal_tool_create_res_ch`` read from the Chinese set's judgments.
PLANNING_KEYS_ZH = ("准确性分数", "完整性分数", "可执行性分数", "语法健全性分数", "结构合理性分数", "高效性分数", "总分")
CREATION_KEYS_ZH = ("格式遵从性分数", "准确性分数", "内容合理性分数", "可执行性分数", "丰富度分数", "总分")

_JUDGE_LABELS = {name: key for name, key in (*PLANNING_DIMENSIONS, *CREATION_DIMENSIONS)}


def judge_keys(task: str, language: str = "en") -> tuple[str, ...]:
    """The score keys the official script reads from a judgment of ``task`` (planning or
    tool_creation) in ``language``'s test set, in the rubric's order."""
    if language == "zh":
        return PLANNING_KEYS_ZH if task == "planning" else CREATION_KEYS_ZH
    dims = PLANNING_DIMENSIONS if task == "planning" else CREATION_DIMENSIONS
    return tuple(k for _, k in dims)


def _python_4(num: float, den: float) -> float:
    """``round(k / n, 4)`` of a Python float (the awareness and selection accuracies), as a percent."""
    return round(round(num / den, 4) * 100, 2)


def _numpy_4(num: float, den: float) -> float:
    """``round(np.mean(scores), 4)`` (Levenshtein), as a percent: numpy's rounding."""
    return round(numpy_round(num / den, 4) * 100, 2)


def _judge_4(num: float, den: float) -> float:
    """``round(np.mean(scores) / 10, 4)`` (the judge's 1-10 scores; a sample is ``(score, 10)``), as a percent."""
    return round(numpy_round(num / (den / 10) / 10, 4) * 100, 2)


METRICS: tuple[Metric, ...] = (
    Metric("global_accuracy", "Key-value accuracy, global (every step right)", value_of=_python_4,
           description="awareness and selection: tasks whose every step's value is right"),
    Metric("local_accuracy", "Key-value accuracy, local (per step)", over="steps", value_of=_python_4,
           description="awareness and selection: right values over all gold steps"),
    Metric("local_levenshtein", "Key-value Levenshtein similarity, local (per tool step)", over="tool steps",
           value_of=_numpy_4,
           description="tool usage: 1 - normalised Levenshtein distance of the arguments, per gold tool step"),
    *(Metric(name, f"Judge: {_JUDGE_LABELS[name].replace(' Score', '')} (1-10, /10)", over="judged items",
             value_of=_judge_4, description="planning: one judgment per task; tool creation: one per created tool")
      for name in dict.fromkeys(n for n, _ in (*PLANNING_DIMENSIONS, *CREATION_DIMENSIONS))),
    Metric("judge_unreadable", "Judge answers not in the rubric's format", higher_is_better=False, kind="count",
           over="judgments", in_breakdowns=False,
           warn="{n:g} of {of:g} judge outputs could not be read (not the rubric's JSON list with the official "
                "score keys of the run's --language): left out of the judge's scores, not scored 0"),
    Metric("unparsable_answers", "Answers the official parser cannot read", higher_is_better=False, kind="count",
           in_breakdowns=False),
    Metric("official_errors", "Answers the official script stops on", higher_is_better=False, kind="count",
           in_breakdowns=False,
           warn="{n:g} of {of:g} answers stop the official script with an error (an answer [], a first answer that "
                "is not text, a number read where the steps should be, a value without a length where the gold "
                "value is empty, or an awareness label beyond int64): scored 0 here, while the official code prints no number at all for the file"),
    Metric("eval_expressions", "Answers the official eval may read differently", higher_is_better=False, kind="count",
           in_breakdowns=False,
           warn="{n:g} of {of:g} answers hold a Python expression that is not a literal (e.g. 3*2) where the parser "
                "evaluates: the official code eval()s it and may read a value (6), this project reads literals only "
                "(ast.literal_eval, a documented deviation) and scores the answer without it"),
)


def similarity(gold: str, pred: str) -> float:
    """``1 - normalised Levenshtein distance`` (distance / length of the longer string)."""
    from rapidfuzz.distance import Levenshtein  # on use, as numpy below: `evals --help` reads this module

    return 1 - Levenshtein.normalized_distance(gold, pred)


def _fix_underscore(value: Any) -> Any:
    return value.replace("\\_", "_") if isinstance(value, str) and "\\_" in value else value


def _has_length(value: Any) -> bool:
    return hasattr(value, "__len__")


def levenshtein_scores(pred: Any, gold: Sequence[Mapping[str, Any]]) -> list[float]:
    """One score per gold tool step (``[0.0]`` when there is none), as the official ``cal_param_res``."""
    import numpy as np

    if isinstance(pred, list) and pred and isinstance(pred[0], list):
        pred = pred[0]
    try:
        items = list(pred) if pred is not None else []
    except TypeError:  # a number: the official code stops with an error here; we score it as empty
        items = []
    out: list[float] = []
    for g in gold:
        key = step_number(g["step"])
        found = None
        for p in items:
            if not isinstance(p, dict) or not p or "step" not in p or "param" not in p:
                continue
            if isinstance(p["step"], str) and step_number(p["step"]) == key:
                found = p
                break
        if found is None:
            out.append(0.0)
            continue
        params = found["param"]
        scores: list[float] = []
        for g_key, g_value in (g.get("param") or {}).items():
            if not isinstance(params, dict):
                continue
            score = 0.0
            for p_key, p_value in params.items():
                if _fix_underscore(p_key) != g_key:
                    continue
                p_value = _fix_underscore(p_value)
                if _has_length(g_value) and len(g_value) == 0:
                    score = 1.0 if _has_length(p_value) and len(p_value) == 0 else 0.0
                else:
                    score = similarity(str(g_value), str(p_value))
                break
            scores.append(score)
        out.append(float(np.mean(scores)) if scores else 0.0)
    return out or [0.0]


def usage_stop(pred: Any, gold: Sequence[Mapping[str, Any]]) -> str:
    """Why the official ``cal_param_res`` stops with an error on this reading ('' when it does not):
    a reading it cannot iterate (a number), or a predicted value without a length where the gold
    value is empty (``len(p_value)``)."""
    if pred is None:
        return ""
    if isinstance(pred, list) and pred and isinstance(pred[0], list):
        pred = pred[0]
    if not hasattr(pred, "__iter__"):
        return f"TypeError: the answer reads as {type(pred).__name__} {str(pred)[:20]}, not a list of steps"
    items = list(pred)
    for g in gold:
        key = step_number(g["step"])
        found = next((p for p in items if isinstance(p, dict) and p and "step" in p and "param" in p
                      and isinstance(p["step"], str) and step_number(p["step"]) == key), None)
        if found is None or not isinstance(found["param"], dict):
            continue
        for g_key, g_value in (g.get("param") or {}).items():
            p_value = next((_fix_underscore(v) for k, v in found["param"].items() if _fix_underscore(k) == g_key), "")
            if _has_length(g_value) and len(g_value) == 0 and not _has_length(p_value):
                return (f"TypeError: step {key} gives {g_key!r} the {type(p_value).__name__} {str(p_value)[:20]} "
                        "where the gold value is empty (len() of it)")
    return ""


def awareness_values(pred: Any, gold: Sequence[Mapping[str, Any]]) -> tuple[list[int], list[int]]:
    """(predicted, gold) 0/1 values per gold step, as the official ``cal_acc_for_aware``: a step
    the model left out (or whose label is not a number) gets the wrong label."""
    predicted: list[int] = []
    golden: list[int] = []
    for g in gold:
        g_value = int(g["tool"])
        golden.append(g_value)
        key = step_number(g["step"])
        value: int | None = None
        if type(pred) is list:  # a tuple or a dict is not read at all
            for p in pred:
                try:
                    if step_number_strict(p["step"]) == key:
                        value = int(p["tool"])
                        break
                except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError):
                    continue
        predicted.append(value if value is not None else (0 if g_value == 1 else 1))
    return predicted, golden


def awareness_stop(predicted: Sequence[int]) -> str:
    """Why the official ``accuracy_score`` refuses the file's labels ('' when it does not): a label beyond
    numpy's int64 makes the array one of objects, a target type scikit-learn does not know."""
    big = next((v for v in predicted if not -(2**63) <= v < 2**63), None)
    if big is None:
        return ""
    return (f"ValueError: a label {str(big)[:20]} beyond int64: scikit-learn's accuracy_score cannot handle the "
            "file's labels (a mix of unknown and binary targets)")


def step_number_strict(step: Any) -> str:
    """``step.split(' ')[0]``, raising for a non-string as the official code does."""
    if not isinstance(step, str):
        raise TypeError("step is not a string")
    return step.split(" ")[0]


def selection_values(pred: Any, gold: Sequence[Mapping[str, Any]]) -> tuple[list[Any], list[Any]]:
    """(predicted, gold) tool names per gold step, as the official ``cal_acc_for_select``."""
    if isinstance(pred, tuple) and pred:
        pred = pred[0]
    if isinstance(pred, list) and len(pred) == 1 and isinstance(pred[0], list):
        pred = pred[0]
    try:
        items = list(pred) if pred is not None else []
    except TypeError:
        items = []
    predicted: list[Any] = []
    golden: list[Any] = []
    for g in gold:
        golden.append(g["tool"])
        key = step_number(g["step"])
        value: Any = "no_good"
        for p in items:
            try:
                if step_number_strict(p["step"]) == key:
                    value = _fix_underscore(p["tool"]) if "\\_" in str(p["tool"]) else p["tool"]
                    break
            except (KeyError, TypeError, IndexError, AttributeError):
                continue
        predicted.append(value)
    return predicted, golden


def official_value(values: Sequence[float], *, scale: float = 1.0) -> float:
    """The official printout of a mean: ``round(np.mean(values) / scale, 4)`` (numpy's rounding)."""
    import numpy as np

    return numpy_round(float(np.mean(np.asarray(values, dtype=float))) / scale, 4)
