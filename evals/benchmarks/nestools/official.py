"""NesTools' official evaluation, reproduced: one prediction's counts, and the run's numbers.

Written from the official code (hhan1018/NesTools @ fb617f3, ``evaluation/eval.py`` and
``evaluation/utils.py``: ``process_results_gen``, ``check_score``, ``check_string``); every rule
below is one of that code's, quirks included, and the fixture test compares with numbers the
official code printed.

**Parsing** (:func:`parse_prediction`). The text from its first ``[`` to its last ``]`` is read with
``ast.literal_eval``, else with ``json.loads``; anything else is malformed. The parsed value is
well-formed only when every item is a mapping with ``api_name``, ``api_id`` and ``parameters`` and
``parameters`` is a mapping. An empty list is well-formed.

**Which samples count** (:func:`official_numbers`). A sample whose response is ``-1`` (the model
call failed) is left out of every number. A malformed response counts: format 0, nothing predicted,
and all its gold calls, order pairs, parameters and nested parameters missed. Only samples whose
gold nesting depth is in ``target_depths`` (default 1-5, the main table's) are counted.

**Matching** (:func:`score_prediction`). Calls are identified by ``api_id`` alone (``==``: the
string ``"12"`` is not the id ``12``), never by name. The predicted calls are taken in order; each
is matched to an unused gold call with its id (the one of highest parameter score, the first on
ties, the first when all score 0), which then counts for tool selection.

* Order: the consecutive pairs of ids, gold and predicted, as multisets; correct = their
  intersection (a prediction of one call or none predicts no pair).
* Parameters: every predicted parameter counts as predicted; one that the matched gold call has
  scores (``check_score``): equal values 1; two strings the higher ROUGE-L F (:mod:`.rouge`) of the
  lowercased texts, as given and after date normalisation; two numbers equal or not; two lists of
  one length the mean of their items' scores; two dicts with as many keys the mean, over key
  positions, of the values' scores where the i-th keys agree ignoring case, ``_`` and spaces;
  anything else 0; an error on the way (an empty string in ROUGE) 0.
* Nested parameters: a gold value with ``API_call`` in it is nested. A predicted value with
  ``API_call`` in its text counts as a predicted nested parameter. A nested gold value that names
  an earlier gold call's output is right when the prediction is a string naming the output at the
  same position of the predicted call that was matched to that gold call (the last predicted call
  listing the handle in its ``responses`` mapping, values taken in order, non-strings kept as
  placeholders); other nested gold values (a list of handles, a handle inside text) must be equal.
  A right nested value also scores 1 as a parameter.
* Tree: the sample's correct, predicted and gold counts are equal for all four.

The run's numbers (:func:`official_numbers`) are P = correct / predicted (0 when nothing was
predicted), R = correct / gold, F1 = 2PR / (P + R) (0 when both are 0) per dimension, format
accuracy = well-formed / counted samples, the average of the four F1s, and tree accuracy = tree
passes / counted samples (the official script computes it but prints it only in a commented-out
line).
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from .rouge import PACKAGE_WALK_LIMIT, package_walk, rouge_l_f

__all__ = [
    "COUNT_KEYS",
    "DIMENSIONS",
    "SampleCounts",
    "check_score",
    "gold_depth",
    "normalize_date",
    "official_numbers",
    "parse_prediction",
    "score_prediction",
    "well_formed",
]

DIMENSIONS = ("api", "order", "param", "nest")
COUNT_KEYS = tuple(f"{kind}_{d}" for d in DIMENSIONS for kind in ("correct", "predict", "gold"))
_HANDLE = "API_call"


@dataclass
class SampleCounts:
    """One sample's counts, as ``process_results_gen`` returns them (``correct_param`` may be a float)."""

    depth: int
    well_formed: bool
    correct_api: int = 0
    predict_api: int = 0
    gold_api: int = 0
    correct_order: int = 0
    predict_order: int = 0
    gold_order: int = 0
    correct_param: float = 0
    predict_param: int = 0
    gold_param: int = 0
    correct_nest: int = 0
    predict_nest: int = 0
    gold_nest: int = 0
    matches: list[list[int]] = field(default_factory=list)  # [gold index, predicted index], in match order
    # where eval.py differs: why it stops on this prediction ('' when it does not), and how many matched
    # arguments it scores 0 (the rouge package's RecursionError on long texts) where we score them
    official_stop: str = ""
    long_arguments: int = 0

    @property
    def tree(self) -> bool:
        return all(
            getattr(self, f"correct_{d}") == getattr(self, f"gold_{d}") == getattr(self, f"predict_{d}")
            for d in DIMENSIONS
        )

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "tree": self.tree}


# ---------------------------------------------------------------- parsing


def parse_prediction(text: Any) -> Any:
    """The official ``check_string``: the value between the first ``[`` and the last ``]``
    (``ast.literal_eval``, else ``json.loads``), or ``-1`` when neither reads it."""
    try:
        piece = text[text.find("["): text.rfind("]") + 1]
    except Exception:
        piece = text
    try:
        return ast.literal_eval(piece)
    except Exception:
        pass
    try:
        return json.loads(piece)
    except Exception:
        return -1


def well_formed(parsed: Any) -> bool:
    """Every item has ``api_name``, ``api_id`` and ``parameters``, and ``parameters`` is a mapping."""
    if isinstance(parsed, int) and parsed == -1:
        return False
    try:
        for item in parsed:
            keys = list(item.keys())
            if "api_name" not in keys or "api_id" not in keys or "parameters" not in keys:
                return False
            if not isinstance(item["parameters"], dict):
                return False
    except Exception:
        return False
    return True


# ---------------------------------------------------------------- values


def normalize_date(text: str) -> str:
    """``2024-5-01``-style and ``May 1st, 2024``-style dates to ``YYYY-MM-DD`` (else unchanged)."""
    try:
        if re.match(r"\d{4}-\d{2}-\d{2}", text):
            return datetime.strptime(text, "%Y-%m-%d").strftime("%Y-%m-%d")
        if not re.search(r"\b[A-Za-z]+ \d+(st|nd|rd|th)?, \d{4}\b", text):
            return text
        day = re.search(r"\b(\d+)(st|nd|rd|th)?\b", text)
        if not day:
            return text
        number, suffix = int(day.group(1)), day.group(2)
        if suffix:
            allowed = {"st": (1, 21, 31), "nd": (2, 22), "rd": (3, 23)}.get(suffix)
            ok = number in allowed if allowed is not None else (4 <= number <= 20 or 24 <= number <= 30)
            if not ok:
                return text
        text = re.sub(r"(\d+)(st|nd|rd|th)", r"\1", text)
        return datetime.strptime(text, "%B %d, %Y").strftime("%Y-%m-%d")
    except ValueError:
        return text


def check_score(gold: Any, pred: Any) -> float:
    """One non-nested parameter's score (see the module docstring); may raise, like the official one."""
    if gold == pred:
        return 1
    if isinstance(gold, str) and isinstance(pred, str):
        score = rouge_l_f(pred.lower(), gold.lower())
        other = rouge_l_f(normalize_date(pred).lower(), normalize_date(gold).lower())
        return other if other > score else score
    if isinstance(gold, int | float) and isinstance(pred, int | float):
        return gold == pred  # False here (equal values returned 1 above); a bool, as the official one
    if isinstance(gold, list) and isinstance(pred, list):
        if len(gold) != len(pred):
            return 0
        total: float = 0
        for g, p in zip(gold, pred, strict=True):
            total += check_score(g, p)
        return total / len(gold)
    if isinstance(gold, dict) and isinstance(pred, dict):
        gold_keys, pred_keys = list(gold), list(pred)
        if len(gold_keys) != len(pred_keys):
            return 0
        total = 0
        for gk, pk in zip(gold_keys, pred_keys, strict=True):
            if _key_chars(gk) == _key_chars(pk):
                total += check_score(gold[gk], pred[pk])
        return total / len(pred_keys)
    return 0


def _key_chars(key: str) -> list[str]:
    return [ch for ch in key.lower() if ch not in ("_", " ")]


def _safe_score(gold: Any, pred: Any) -> float:
    try:
        return check_score(gold, pred)
    except Exception:
        return 0


def _package_fails(gold: Any, pred: Any, depth: int = 0) -> bool:
    """Whether ``check_score(gold, pred)`` in eval.py reaches a string pair the ``rouge`` package's
    recursive walk fails on (:func:`.rouge.package_walk`; each list/dict level is one frame more)."""
    if gold == pred:
        return False
    if isinstance(gold, str) and isinstance(pred, str):
        return any(package_walk(p.lower(), g.lower()) + depth > PACKAGE_WALK_LIMIT
                   for p, g in ((pred, gold), (normalize_date(pred), normalize_date(gold))))
    if isinstance(gold, list) and isinstance(pred, list) and len(gold) == len(pred):
        return any(_package_fails(g, p, depth + 1) for g, p in zip(gold, pred, strict=True))
    if isinstance(gold, dict) and isinstance(pred, dict) and len(gold) == len(pred):
        return any(_package_fails(gold[gk], pred[pk], depth + 1) for gk, pk in zip(gold, pred, strict=True)
                   if isinstance(gk, str) and isinstance(pk, str) and _key_chars(gk) == _key_chars(pk))
    return False


def _has_handle(value: Any) -> bool:
    return _HANDLE in str(value)


# ---------------------------------------------------------------- one sample


def gold_depth(gold_calls: Sequence[Mapping[str, Any]]) -> int:
    """The sample's nesting depth: 1 + the depth of the deepest call whose output a call uses
    (a handle is "used" when its text occurs in the argument's text, so ``API_call_1`` is also
    found in ``API_call_12``)."""
    depth = [1] * len(gold_calls)
    outputs: list[list[Any]] = []
    for k, call in enumerate(gold_calls):
        outputs.append(list(call.get("responses") or []))
        parents: list[int] = []
        for value in (call.get("parameters") or {}).values():
            for i, names in enumerate(outputs):
                if any(str(name) in str(value) for name in names):
                    parents.append(i)
        if parents:
            depth[k] = max(depth[i] + 1 for i in parents)
    return max(depth) if depth else 1


def _predicted_outputs(call: Mapping[str, Any]) -> list[Any]:
    responses = call.get("responses")
    if not isinstance(responses, dict):
        return []
    return [r if isinstance(r, str) else -1 for r in responses.values()]


def _last_position(lists: Sequence[Sequence[Any]], value: Any) -> tuple[int, int]:
    """(list index, position) of ``value``: the last list that holds it, its first position there."""
    found = (-1, -1)
    for i, names in enumerate(lists):
        for pos, name in enumerate(names):
            if name == value:
                found = (i, pos)
                break
    return found


def _hashable(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:  # the official code crashes on an unhashable api_id; here it matches nothing
        return ("unhashable", repr(value))
    return value


def _pairs(calls: Sequence[Mapping[str, Any]]) -> list[tuple[Any, Any]]:
    """The consecutive pairs of api ids."""
    return [(_hashable(calls[i]["api_id"]), _hashable(calls[i + 1]["api_id"])) for i in range(len(calls) - 1)]


def score_prediction(gold_calls: Sequence[Mapping[str, Any]], api_ids: Mapping[str, Any], response: Any) -> SampleCounts:
    """One sample's counts. ``gold_calls``: the sample's ``call`` list; ``api_ids``: gold api name
    -> id; ``response``: the model's raw text, or an already parsed list of calls."""
    gold = [{**c, "api_id": api_ids[c["api_name"]]} for c in gold_calls]
    parsed = parse_prediction(response) if isinstance(response, str) else response
    ok = well_formed(parsed)
    counts = SampleCounts(depth=gold_depth(gold_calls), well_formed=ok)
    counts.gold_api = len(gold)
    counts.gold_order = len(gold) - 1

    # gold nesting: a nested value that names an earlier gold output -> (call, api id, position)
    gold_outputs: list[list[Any]] = []
    nested: dict[str, Any] = {}
    unused: dict[Any, list[int]] = {}
    for k, call in enumerate(gold):
        gold_params: Mapping[str, Any] = call.get("parameters") or {}
        counts.gold_param += len(gold_params)
        gold_outputs.append(list(call.get("responses") or []))
        for value in gold_params.values():
            if _has_handle(value):
                counts.gold_nest += 1
                where, pos = _last_position(gold_outputs, str(value))
                nested[str(value)] = str(value) if where == -1 else [where, gold[where]["api_id"], pos]
        unused.setdefault(call["api_id"], []).append(k)

    if not ok:
        return counts
    pred: list[Mapping[str, Any]] = list(parsed)

    if len(pred) > 1:
        unhashable = [c["api_id"] for c in pred if _hashable(c["api_id"]) is not c["api_id"]]
        if unhashable:
            counts.official_stop = (f"TypeError: an api_id that is a {type(unhashable[0]).__name__} (unhashable) in the "
                                    "call-order pairs (Counter)")
        gold_pairs = Counter(_pairs(gold))
        pred_pairs = Counter(_pairs(pred))
        counts.gold_order = sum(gold_pairs.values())
        counts.predict_order = len(pred) - 1
        counts.correct_order = sum((gold_pairs & pred_pairs).values())

    pred_outputs: list[list[Any]] = []
    matches: list[list[int]] = []
    for r, made in enumerate(pred):
        params: Mapping[Any, Any] = made["parameters"]
        counts.predict_api += 1
        counts.predict_param += len(params)
        pred_outputs.append(_predicted_outputs(made))
        counts.predict_nest += sum(1 for v in params.values() if _has_handle(v))
        pid = _hashable(made["api_id"])
        candidates = [k for k in unused.get(pid, []) if gold[k]["api_id"] == made["api_id"]]
        if not candidates:
            continue
        counts.correct_api += 1
        best, best_nest, best_k = 0.0, 0, -1
        long_here: set[Any] = set()
        for k in candidates:
            total: float = 0
            nest_hits = 0
            candidate: Mapping[str, Any] = gold[k].get("parameters") or {}
            for name, value in params.items():
                if name not in candidate:
                    continue
                gold_value = candidate[name]
                score: float = 0
                entry = nested.get(str(gold_value))
                if entry:
                    if isinstance(entry, list):
                        if isinstance(value, str):
                            gold_call, _, gold_pos = entry
                            where, pos = _last_position(pred_outputs, value)
                            if pos == gold_pos and [gold_call, where] in matches and _has_handle(value):
                                nest_hits += 1
                                score = 1
                    elif gold_value == value:
                        nest_hits += 1
                        score = 1
                else:
                    score = _safe_score(gold_value, value)
                    if score and _package_fails(gold_value, value):
                        long_here.add(name)
                total += score
            if total > best:
                best, best_k, best_nest = total, k, nest_hits
        if best == 0:
            best_k = candidates[0]
        counts.correct_nest += best_nest
        counts.correct_param += best
        counts.long_arguments += len(long_here)
        matches.append([best_k, r])
        unused[pid].remove(best_k)
    counts.matches = matches
    return counts


# ---------------------------------------------------------------- the run


def _ratio(num: float, den: float) -> float:
    return 1.0 * num / den if den != 0 else 0


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if (p + r) != 0 else 0


def official_numbers(samples: Iterable[SampleCounts | None], target_depths: Sequence[int] = (1, 2, 3, 4, 5)) -> dict[str, Any]:
    """``eval.py``'s numbers over the samples in order (``None``: a response of ``-1``, left out).

    Keys: ``all_num``, ``correct_format``, ``P_api`` ... ``F1_nest`` (fractions, unrounded, as the
    official ``result_dict``), ``average``, ``tree_acc`` (the count) and ``tree_accuracy``."""
    totals: dict[str, float] = dict.fromkeys(COUNT_KEYS, 0)
    n = fmt = tree = 0
    for s in samples:
        if s is None or s.depth not in target_depths:
            continue
        n += 1
        fmt += s.well_formed
        tree += s.tree
        for key in COUNT_KEYS:
            kind, dim = key.split("_")
            totals[key] += getattr(s, f"{kind}_{dim}")
    out: dict[str, Any] = {"all_num": n, "correct_format": fmt / n if n else 0}
    for dim in DIMENSIONS:
        p = _ratio(totals[f"correct_{dim}"], totals[f"predict_{dim}"])
        r = _ratio(totals[f"correct_{dim}"], totals[f"gold_{dim}"])
        out[f"P_{dim}"], out[f"R_{dim}"], out[f"F1_{dim}"] = p, r, _f1(p, r)
    out["average"] = sum([out["F1_nest"], out["F1_param"], out["F1_order"], out["F1_api"]]) / 4
    out["tree_acc"] = tree
    out["tree_accuracy"] = tree / n if n else 0
    return out
