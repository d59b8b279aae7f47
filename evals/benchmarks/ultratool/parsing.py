"""Reading a model's text answer the way UltraTool's official evaluation reads it.

The official scripts (``evaluation/utils.py`` at the pinned commit) clean the answer with a fixed
series of text rewrites, cut it to the outermost ``[...]``, and then try a cascade of repairs (add
a missing ``}``, drop a redundant one, cut an incomplete last step, turn single quotes into double
quotes...) until the text evaluates as a Python literal. This module is our own implementation of
that decision procedure, step for step, quirks included:

* ``true``/``false`` become ``True``/``False`` and ``null``/``None`` become the *strings*
  ``"null"``/``"None"`` before anything is evaluated;
* the word ``json`` is deleted everywhere (also inside values), then backticks are stripped;
* a repair that fails may leave its text behind for the next repair (the official code reuses the
  variable), which decides some of the later candidates;
* the official code ``eval``\\ s the text; we evaluate it with :func:`ast.literal_eval`, which
  accepts the same literals and nothing that could run code. On the released GPT-3.5 and GPT-4
  outputs both read every answer the same (``tests/evals/benchmarks/ultratool``).

``parse_steps(text, kind)`` gives the parsed value (or ``None`` when no candidate evaluates: the
official "bad json format", scored as an empty list). ``kind`` is ``"param"`` for tool usage (the
repairs of ``collect_pred_golden_for_param``) or ``"label"`` for awareness, selection and creation
(those of ``collect_pred_golden_for_aware``). ``multiple_lists=True`` keeps only the last
``[{...}]`` when the text holds several (the official code does this for open models, not for
the GPT runs).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from typing import Any, Literal

__all__ = ["ParseKind", "clean_plan", "parse_judge_scores", "parse_steps", "step_number", "surviving_literal"]

ParseKind = Literal["param", "label"]

_BRACES_WITH_SPACES = tuple(("}" + " " * n + "}", "}}") for n in range(1, 13))
_COMMON = (
    ("输出：", ""), ("\n", ""), ("\\_", "_"), ("true", "True"), ("false", "False"), ("null", '"null"'),
    ("None", '"None"'), ("})", "}"), ("，", ","), ('}, "step', '}, {"step'), ("# ...", ""),
)
_PARAM_ONLY = (("}{", "}, {"),)
# single quotes -> double quotes, the shared part of the rewrites of the "not good string format" repair
_QUOTES = (
    ("{'", '{"'), ("'}", '"}'), ("', '", '", "'), ("\", '", '", "'), ("', \"", '", "'), ("': '", '": "'),
    ("': \"", '": "'), ("\": '", '": "'), ("': {", '": {'), ("['", "["), ("']", "]"), (", '", ', "'),
    ("'),", ')",'),
)
_QUOTES_PARAM = (*_QUOTES, ("': ", '": '), ("', {", '", {'), ("')}", ')"}'), ('}},", {', "}}, {"))
_QUOTES_PARAM_NONE = (*_QUOTES_PARAM, ('""None""', '"None"'))
_QUOTES_LABEL = (*_QUOTES, ('""None""', '"None"'), ('"{step', '{"step'), ("')}", ')"}'))
_LAST_LIST = re.compile(r"(\[\{.*?\}\])")


class _Failed(Exception):
    pass


def _rewrite(text: str, pairs: tuple[tuple[str, str], ...]) -> str:
    for old, new in pairs:
        text = text.replace(old, new)
    return text


def _evaluate(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        raise _Failed(str(exc)) from exc


def _prepare(answer: str, kind: ParseKind, multiple_lists: bool) -> str:
    text = answer.replace("json", "").strip("`")
    text = _rewrite(text, _COMMON + (_PARAM_ONLY if kind == "param" else ()) + _BRACES_WITH_SPACES)
    if not text.startswith("["):
        start = text.find("[")
        if start != -1:
            text = text[start:]
    if not text.endswith("]"):
        end = text.rfind("]")
        if end != -1:
            text = text[: end + 1]
        elif "[" in text:
            marker, keep = ("}},", 2) if kind == "param" else ("},", 1)
            cut = text.rfind(marker)
            text = text[: cut + keep] + "]" if cut != -1 else text + "]"
    if multiple_lists and text.count("]") > 1:
        found = _LAST_LIST.findall(text)
        if found:
            text = found[-1]
        else:
            end = text.find("]")
            if end != -1:
                text = text[: end + 1]
    return text


class _Cascade:
    """The repairs in order; ``last`` is the official code's reused scratch variable."""

    def __init__(self, text: str):
        self.text = text
        self.last: str | None = None
        self.value: Any = None
        self.ok = False

    def attempt(self, make: Callable[[], str]) -> bool:
        """Build a candidate (kept in ``last`` even when it then fails to evaluate) and evaluate it."""
        if self.ok:
            return True
        candidate = make()
        self.last = candidate
        self.value = _evaluate(candidate)
        self.ok = True
        return True

    def tried(self, make: Callable[[], str]) -> bool:
        try:
            return self.attempt(make)
        except (_Failed, IndexError, TypeError):
            return False


def _reuse(cascade: _Cascade, make: Callable[[str], str]) -> Callable[[], str]:
    def build() -> str:
        if cascade.last is None:
            raise _Failed("no earlier candidate")
        return make(cascade.last)
    return build


def _param_cascade(c: _Cascade) -> None:
    t = c.text
    c.tried(lambda: t)
    if not c.tried(lambda: t[:-1] + "}" + t[-1]):  # a missing }
        c.tried(_reuse(c, lambda last: last[:-1] + "}" + last[-1]))  # a missing }}
    c.tried(lambda: t.replace('"}, {"step', '"}}, {"step'))
    c.tried(lambda: t[:-1] + '"}' + t[-1])  # a missing "}
    c.tried(lambda: t[:-1] + "]}}" + t[-1])  # a missing ]}}
    if not c.tried(lambda: t[:-2] + t[-1]):  # a redundant }
        c.tried(_reuse(c, lambda last: last[:-2] + last[-1]))  # a redundant }}
    c.tried(lambda: t.replace("}}}", "}}"))
    cut = t.rfind("}},")
    if not c.ok and cut != -1 and "[" in t and not c.tried(lambda: t[: cut + 2] + "]"):  # incomplete last step
        c.last = _rewrite(t, _QUOTES_PARAM)  # the official code leaves this text behind
    fixed = _rewrite(t, _QUOTES_PARAM_NONE)
    if not c.tried(lambda: fixed):  # not good string format; then two repairs of the quote-fixed text
        if not c.tried(lambda: fixed.replace("}}}", "}}")):
            c.tried(lambda: fixed[:-1] + "]}}" + fixed[-1])


def _label_cascade(c: _Cascade) -> None:
    t = c.text
    c.tried(lambda: t)
    if not c.tried(lambda: t[:-1] + "}" + t[-1]):  # a missing }
        c.tried(lambda: t[:-1] + '"}' + t[-1])  # a missing "}
    cut = t.rfind("},")
    if cut != -1 and "[" in t:
        c.tried(lambda: t[: cut + 1] + "]")  # the last step is incomplete: keep the ones before it
    c.tried(lambda: _rewrite(t, _QUOTES_LABEL))  # not good string format


def parse_steps(answer: Any, kind: ParseKind, *, multiple_lists: bool = False) -> Any:
    """The model's answer as the official code reads it: the evaluated value, or ``None``.

    A list whose first item is not a string is taken as already parsed; a list of strings is read
    from its first string (the official code's handling of multi-sample outputs)."""
    if isinstance(answer, list) and answer:
        if not isinstance(answer[0], str):
            return answer
        answer = answer[0]
    if not isinstance(answer, str):
        return None
    cascade = _Cascade(_prepare(answer, kind, multiple_lists))
    (_param_cascade if kind == "param" else _label_cascade)(cascade)
    return cascade.value if cascade.ok else None


def step_number(step: Any) -> str:
    """A step's key: its text up to the first space (``"1.2 Use ..."`` -> ``"1.2"``)."""
    return str(step).split(" ")[0]


_SPECIAL_TOKENS = ("<|im_end|>", "<|im_end|", "<|im_start|>", "<|im_start|")


def clean_plan(answer: Any) -> str:
    """A planning answer as the official judge script passes it on: generation tokens removed; when
    it does not start with ``1. ``, text before the first ``1. `` dropped, and a trailing paragraph
    that does not start with a digit dropped."""
    if isinstance(answer, list):
        answer = answer[0] if answer else ""
    text = str(answer or "")
    for token in _SPECIAL_TOKENS:
        text = text.replace(token, "")
    if not text.strip().startswith("1. "):
        start = text.find("1. ")
        if start != -1:
            text = text[start:]
        parts = text.split("\n\n")
        if "\n\n" in text and parts[-1] != "" and not parts[-1][0].isdigit():
            text = "\n\n".join(parts[:-1])
    return text


def parse_judge_scores(text: str, keys: tuple[str, ...]) -> list[float] | None:
    """The judge's scores in ``keys`` order, read as the official scripts read them: the answer with
    ``json`` deleted and backticks stripped is a JSON list whose i-th object holds ``keys[i]``.
    ``None`` when it is not (the official script stops with an error there)."""
    try:
        items = json.loads(text.replace("json", "").strip("`"))
        scores = [items[i][key] for i, key in enumerate(keys)]
    except (ValueError, TypeError, KeyError, IndexError):
        return None
    if not all(isinstance(s, int | float) and not isinstance(s, bool) for s in scores):
        return None
    return [float(s) for s in scores]


# what the official rewrites would change inside a written value
_TRIGGERS = tuple({old for old, _ in (*_COMMON, *_PARAM_ONLY, *_BRACES_WITH_SPACES)} | {"json", "`"})
_LONGEST = max(len(t) for t in _TRIGGERS)


def _string_literal(value: str) -> str:
    """``value`` as adjacent Python string literals (``"f" "alse"``), split so that no literal's text
    holds anything the official rewrites would change."""
    if not any(t in json.dumps(value) for t in _TRIGGERS):
        return json.dumps(value)
    pieces: list[str] = []
    current = ""
    for ch in value:
        # JSON escapes each character on its own, so the escaped tail is the tail of the escaped text;
        # no trigger is longer than _LONGEST characters
        if current and any(t in json.dumps(current[-_LONGEST:] + ch) for t in _TRIGGERS):
            pieces.append(current)
            current = ch
        else:
            current += ch
    pieces.append(current)
    return " ".join(json.dumps(p) for p in pieces)


def surviving_literal(value: Any) -> str:
    """``value`` written as a Python literal that the official parser reads back unchanged (the
    oracle's answer): JSON layout, but every string split around the words the parser rewrites
    (``true``, ``null``, ``json``, ``})``...); ``True``/``False`` as Python writes them (the parser
    rewrites only the lower-case spellings). ``None`` cannot come back: any spelling of it is read as
    a string, so it is written ``None`` and read as ``"None"`` (no gold answer holds one)."""
    if isinstance(value, str):
        return _string_literal(value)
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(surviving_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{surviving_literal(str(k))}: {surviving_literal(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {type(value).__name__} as a literal")
