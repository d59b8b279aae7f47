"""Final-answer matching: exact, normalised, a regular expression, a number with a tolerance, or a
judge with a rubric (asked through the scorer's context, so its decisions are stored).

* ``exact``: the answer, stripped, equals a gold value (``contains``: has it as a substring);
* ``normalized``: equal after lower-casing, dropping punctuation and the articles a/an/the, and
  collapsing white space (``contains``: the normalised value appears as whole words);
* ``regex``: ``pattern`` is found in the answer (``ignore_case``), within
  :data:`~tool_specs.REGEX_TIMEOUT` seconds (else :class:`~tool_specs.RegexTimeout`; the scorer
  counts the answer as not matched and reports the task);
* ``number``: some number written in the answer is within ``tolerance`` of ``value`` (absolute,
  or a fraction of ``value`` with ``relative``; thousands separators allowed; both finite); with
  ``strict``, the answer names one number only (several different ones, "either 2, 3 or 4", fail);
* ``judge``: the judge model reads the request, the rubric and the answer and says PASS or FAIL.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Mapping
from typing import Any

from tool_specs import RegexTimeout, bounded_search, pattern_groups

__all__ = [
    "JUDGE_SYSTEM", "answer_problem", "judge_prompt", "match_answer", "normalize_answer_spec", "normalize_text",
    "numbers_in", "oracle_answer", "parse_verdict",
]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans(dict.fromkeys(string.punctuation, " "))
_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|[-+]?\.\d+")
DEFAULT_TOLERANCE = 1e-6

JUDGE_SYSTEM = (
    "You grade the final answer of an assistant. You are given the user's request, a rubric that "
    "says what a right answer must contain, and the assistant's answer. Judge only against the "
    "rubric. Answer with one word on the last line: PASS or FAIL."
)


def normalize_answer_spec(spec: Any) -> dict[str, Any]:
    """The answer spec as a mapping (a string is ``{type: normalized, value: <string>}``)."""
    if isinstance(spec, str):
        return {"type": "normalized", "value": spec}
    return dict(spec)


def normalize_text(text: str) -> str:
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCT)).split())


def numbers_in(text: str) -> list[float]:
    out = []
    for m in _NUMBER.findall(text):
        try:
            out.append(float(m.replace(",", "")))
        except ValueError:
            continue
    return out


def _values(spec: Mapping[str, Any]) -> list[str]:
    v = spec.get("value")
    return [str(x) for x in v] if isinstance(v, list) else [str(v)]


def match_answer(spec: Mapping[str, Any], answer: str | None) -> bool | None:
    """Does ``answer`` satisfy ``spec``? ``None`` for a ``judge`` spec (asked elsewhere).

    Raises:
        RegexTimeout: a ``regex`` spec's search ran past its time limit.
    """
    text = (answer or "").strip()
    kind = spec["type"]
    if kind == "exact":
        return any((v in text) if spec.get("contains") else (text == v.strip()) for v in _values(spec))
    if kind == "normalized":
        got = normalize_text(text)
        for v in _values(spec):
            want = normalize_text(v)
            if spec.get("contains") and want and f" {want} " in f" {got} ":
                return True
            if got == want:
                return True
        return False
    if kind == "regex":  # RegexTimeout: the pattern ran past its time limit
        return bounded_search(spec["pattern"], text, ignore_case=bool(spec.get("ignore_case"))) is not None
    if kind == "number":
        value = float(spec["value"])
        tol = float(spec.get("tolerance", DEFAULT_TOLERANCE))
        limit = tol * abs(value) if spec.get("relative") else tol
        found = [x for x in numbers_in(text) if math.isfinite(x)]
        if spec.get("strict"):  # one number only: a hedge naming several different ones fails
            distinct = [x for i, x in enumerate(found) if all(abs(x - y) > limit for y in found[:i])]
            return len(distinct) == 1 and abs(distinct[0] - value) <= limit
        return any(abs(x - value) <= limit for x in found)
    return None


def oracle_answer(spec: Mapping[str, Any]) -> str:
    """An answer that satisfies ``spec`` (what the oracle says)."""
    if "example" in spec:
        return str(spec["example"])
    if spec["type"] in ("exact", "normalized"):
        return _values(spec)[0]
    if spec["type"] == "number":
        return repr(float(spec["value"])) if not float(spec["value"]).is_integer() else str(int(spec["value"]))
    return ""


def _finite(value: Any) -> bool:
    """Is ``value`` a number a float holds (an integer of 400 digits is not: ``float`` overflows)?"""
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def answer_problem(spec: Mapping[str, Any]) -> tuple[str | None, str] | None:
    """What is wrong with an answer spec that the schema accepts (a bad pattern, a value or tolerance
    that is not finite, an example that fails), as ``(the field at fault or None, message)``."""
    if spec["type"] == "regex":
        try:
            pattern_groups(spec["pattern"])
        except ValueError as exc:
            return "pattern", f"bad pattern: {exc}"
    if spec["type"] == "number" and not _finite(spec["value"]):
        return "value", "value must be a finite number (within ±1.8e308)"
    if spec["type"] == "number" and not _finite(spec.get("tolerance", DEFAULT_TOLERANCE)):
        return "tolerance", "tolerance must be a finite number (within ±1.8e308)"
    try:
        if "example" in spec and spec["type"] != "judge" and not match_answer(spec, str(spec["example"])):
            return "example", f"the example {spec['example']!r} does not satisfy the answer spec itself"
    except RegexTimeout as exc:
        return "pattern", f"checking the example: {exc}"
    return None


def judge_prompt(request: str, rubric: str, answer: str | None) -> str:
    return (f"User request:\n{request}\n\nRubric:\n{rubric}\n\nAssistant's answer:\n{answer or '(no answer)'}\n\n"
            "Does the answer satisfy the rubric? Last line: PASS or FAIL.")


def parse_verdict(text: str) -> bool | None:
    """PASS -> True, FAIL -> False, from the last line that says one of them; else None."""
    for line in reversed((text or "").strip().splitlines()):
        words = set(re.findall(r"[A-Z]+", line.upper()))
        if "FAIL" in words:
            return False
        if "PASS" in words:
            return True
    return None
