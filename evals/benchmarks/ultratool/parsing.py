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
  outputs both read every answer the same (``tests/evals/benchmarks/ultratool``); a candidate that
  is a Python expression but no literal (``3*2``) is flagged (:attr:`Reading.expression`), since
  ``eval`` may read a value from it where we read none;
* the scratch variable outlives the record: an answer that is empty once cleaned reaches the
  "missing ``}}``" repair with the *previous* record's last candidate (``carried``); a file is read
  record after record by :func:`read_file`, which also keeps the official handling of answers stored
  as JSON values rather than text (a list of steps is used as it is; a dict, ``null`` or a number
  leaves the previous record's reading in place).

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["FileReading", "ParseKind", "Reading", "clean_plan", "judge_scores_of", "parse_judge_scores", "parse_steps",
           "read_answer", "read_file", "step_number", "surviving_literal"]

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


def _is_expression(text: str) -> bool:
    """Whether ``text`` is Python that ``eval`` would run (literal or not)."""
    try:
        ast.parse(text.lstrip(" \t"), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return True


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
    """The repairs in order; ``last`` is the official code's reused scratch variable (``pred_text_``),
    which starts as the previous record's (``carried``)."""

    def __init__(self, text: str, carried: str | None = None):
        self.text = text
        self.last: str | None = carried
        self.value: Any = None
        self.ok = False
        self.expression = False  # a candidate was Python but no literal: ``eval`` may read it

    def attempt(self, make: Callable[[], str], keep: bool = True) -> bool:
        """Build a candidate (kept in ``last`` even when it then fails to evaluate, where the official
        code assigns it to its scratch variable: ``keep``) and evaluate it."""
        if self.ok:
            return True
        candidate = make()
        if keep:
            self.last = candidate
        try:
            self.value = _evaluate(candidate)
        except _Failed:
            self.expression = self.expression or _is_expression(candidate)
            raise
        self.ok = True
        return True

    def tried(self, make: Callable[[], str], keep: bool = True) -> bool:
        try:
            return self.attempt(make, keep)
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
    c.tried(lambda: t, keep=False)
    if not c.tried(lambda: t[:-1] + "}" + t[-1]):  # a missing }; for an empty t, last is still the carried text
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
        if not c.tried(lambda: fixed.replace("}}}", "}}"), keep=False):
            c.tried(lambda: fixed[:-1] + "]}}" + fixed[-1], keep=False)


def _label_cascade(c: _Cascade) -> None:
    t = c.text
    c.tried(lambda: t, keep=False)
    if not c.tried(lambda: t[:-1] + "}" + t[-1]):  # a missing }
        c.tried(lambda: t[:-1] + '"}' + t[-1])  # a missing "}
    cut = t.rfind("},")
    if cut != -1 and "[" in t:
        c.tried(lambda: t[: cut + 1] + "]")  # the last step is incomplete: keep the ones before it
    c.tried(lambda: _rewrite(t, _QUOTES_LABEL))  # not good string format


@dataclass
class Reading:
    """One text answer read by the official parser."""

    value: Any  # the evaluated value (None: no candidate evaluates, the official "bad json format")
    ok: bool
    scratch: str | None  # the official scratch variable after this record (carried to the next one)
    expression: bool  # a candidate was Python but no literal: the official ``eval`` may read it differently
    carried: bool  # the value came from the previous record's scratch variable (an empty answer)


def read_answer(answer: str, kind: ParseKind, *, multiple_lists: bool = False, carried: str | None = None) -> Reading:
    """A text answer through the official parser, the previous record's scratch variable ``carried``."""
    text = _prepare(answer, kind, multiple_lists)
    cascade = _Cascade(text, carried)
    (_param_cascade if kind == "param" else _label_cascade)(cascade)
    return Reading(cascade.value if cascade.ok else None, cascade.ok, cascade.last, cascade.expression,
                   cascade.ok and text == "" and carried is not None)


def parse_steps(answer: Any, kind: ParseKind, *, multiple_lists: bool = False, carried: str | None = None) -> Any:
    """The model's answer as the official code reads it: the evaluated value, or ``None``.

    A list whose first item is not a string is taken as already parsed; a list of strings is read
    from its first string (the official code's handling of multi-sample outputs)."""
    if isinstance(answer, list) and answer:
        if not isinstance(answer[0], str):
            return answer
        answer = answer[0]
    if not isinstance(answer, str):
        return None
    return read_answer(answer, kind, multiple_lists=multiple_lists, carried=carried).value


@dataclass
class FileReading:
    """One record of a file as the official ``collect_pred_golden_*`` loop reads it."""

    replay: dict[str, Any]  # how to read it again alone: {"answer": text, "carried": str|None} | {"value": list} | {}
    value: Any = None  # what the official code scores (None: an empty list)
    quirk: str = ""  # "previous": not text, the previous reading kept | "list": a JSON list used as it is |
    #                  "carried": an empty answer read from the previous scratch variable
    previous: int | None = None  # the index of the record whose reading is kept ("previous", "carried")
    error: str = ""  # the official loop stops here (the exception it raises and why)
    expression: bool = False
    notes: list[str] = field(default_factory=list)


def read_file(answers: Sequence[Any], kind: ParseKind, *, multiple_lists: bool = False) -> list[FileReading]:
    """A file's answers (the official ``pred_`` of each line, in file order) read as the official loop
    reads them: its ``successful_parse``, ``pred`` and scratch variables outlive each record."""
    ok: bool | None = None  # None: not yet assigned (the official code's first non-text answer stops it)
    kept: FileReading | None = None  # the reading ``pred`` holds
    kept_at: int | None = None
    scratch: str | None = None
    out: list[FileReading] = []
    for i, raw in enumerate(answers):
        answer = raw
        here: FileReading
        if isinstance(answer, list):
            if not answer:
                out.append(FileReading({}, error="IndexError: the answer is an empty list (pred_[0])"))
                continue
            if not isinstance(answer[0], str):
                kept, kept_at = FileReading({"value": answer}, answer, quirk="list"), i
                if ok is None:
                    out.append(FileReading({}, error="UnboundLocalError: the first answer is not text "
                                                      "(successful_parse is not yet assigned)"))
                    continue
                out.append(kept if ok else FileReading({}, quirk="list", previous=i - 1 if i else None))
                if not ok:
                    kept = None
                continue
            answer = answer[0]
        if isinstance(answer, str):
            reading = read_answer(answer, kind, multiple_lists=multiple_lists, carried=scratch)
            replay = {"answer": answer, "carried": scratch if reading.carried else None}
            here = FileReading(replay, reading.value, quirk="carried" if reading.carried else "",
                               previous=i - 1 if reading.carried else None, expression=reading.expression)
            ok, scratch = reading.ok, reading.scratch
            kept, kept_at = (here, i) if reading.ok else (None, None)
            out.append(here)
            continue
        if ok is None:
            out.append(FileReading({}, error="UnboundLocalError: the first answer is not text "
                                              "(successful_parse is not yet assigned)"))
            continue
        if not ok or kept is None:
            out.append(FileReading({}, quirk="previous", previous=kept_at))
            continue
        out.append(FileReading(dict(kept.replay), kept.value, quirk="previous", previous=kept_at))
    return out


def step_number(step: Any) -> str:
    """A step's key: its text up to the first space (``"1.2 Use ..."`` -> ``"1.2"``)."""
    return str(step).split(" ")[0]


_ASCII_DIGITS = frozenset("0123456789")  # the official check: `[-1][0] not in ['0', ..., '9']`
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
        if "\n\n" in text and parts[-1] != "" and parts[-1][0] not in _ASCII_DIGITS:  # not str.isdigit: "１", "①", "²"
            text = "\n\n".join(parts[:-1])
    return text


def parse_judge_scores(text: str, keys: tuple[str, ...]) -> list[float] | None:
    """The judge's scores in ``keys`` order, read as the official scripts read them: the answer with
    ``json`` deleted and backticks stripped is a JSON list whose i-th object holds ``keys[i]``, a
    number (``true``/``false`` count 1/0, as in the official ``np.mean``). ``None`` when it is not
    (the official script stops with an error there)."""
    try:
        items = json.loads(text.replace("json", "").strip("`"))
    except ValueError:
        return None
    return judge_scores_of(items, keys)


def judge_scores_of(items: Any, keys: tuple[str, ...]) -> list[float] | None:
    """The scores of an already read judgment (a stored ``eval`` field: the official ``cal_plan_res``
    reads it as it is, so a key with ``json`` in it is no score key), or ``None``."""
    try:
        scores = [items[i][key] for i, key in enumerate(keys)]
    except (ValueError, TypeError, KeyError, IndexError):
        return None
    if not all(isinstance(s, int | float) for s in scores):  # true/false: numpy's mean counts them 1/0, as here
        return None
    try:
        return [float(s) for s in scores]
    except OverflowError:  # an integer beyond a float: the official np.mean stops on it (OverflowError)
        return None


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
