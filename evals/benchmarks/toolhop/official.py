"""ToolHop's official output files (the ``toolhop-official`` format), scored as the official code scores them.

The official evaluation code is ``code/evaluation_closed.py`` and ``code/evaluation_open.py`` of the
dataset's Hugging Face repository (bytedance-research/ToolHop); the copy read here is GitHub
MananDesai54/llm-benchmarking at 61da0692c678e73f0c334f6399c3e9415645e729 (its first commit, with
ByteDance's licence header; docs/fidelity.md says what could not be checked). Each script runs the
model on every sample and appends the sample, with its ``messages`` and ``answer_correct``, as one
JSON line to ``--output_file``; at the end it reads that file back and prints ``Result:``. Two rules:

* **the answer rule** (``sample_process``, decided when a sample's conversation ends): when the last
  message is the assistant's and its content is not empty, ``answer_correct`` is 1 when
  ``answer.rstrip('.0').lower()`` is a substring of the content with trailing ``.``/``0`` characters
  stripped, commas removed and lower-cased; else 1 when the message before it is a tool message
  whose content matches the same way; else 0. No other case sets it. (``rstrip('.0')`` strips any
  run of ``.`` and ``0`` characters: ``"100"`` becomes ``"1"``, so ``"1"`` matches ``"100"``.)
* **the printout** (``main``): ``round((100 * total) / 995, 2)`` where ``total`` adds every line's
  ``answer_correct`` in file order; ``evaluation_closed.py`` skips a line whose value is missing or
  cannot be added, ``evaluation_open.py`` stops there. It always divides by 995, however many lines
  the file has, and counts a repeated id on each of its lines.

Here: :func:`read_output_file` reads the lines as ``f.readlines()`` does (``\\n``, ``\\r\\n``, ``\\r``),
:func:`rule` is the answer rule on one record (or the exception it raises), :func:`printout` the
closed script's ``Result`` (or the exception it stops on). The ToolHop plugin scores a file alone
(option ``results_file``): one task per line plus unreported placeholders up to 995, metrics
``official_result`` (the printout) and ``official_answer_rule`` (the rule re-applied to every line).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...core.lines import text_mode_lines

__all__ = ["FULL_SET", "OutputRecord", "printout", "read_output_file", "rule", "stop_reasons"]

FULL_SET = 995  # what both scripts divide by
REPEAT = "@"


@dataclass(frozen=True)
class OutputRecord:
    key: str  # the task key: the id as text, ``<id>@<k>`` for its k-th line
    line: int
    record: Any  # the line's JSON value, as json.loads gives it

    @property
    def recorded(self) -> Any:
        return self.record.get("answer_correct") if isinstance(self.record, dict) else None


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    return text_mode_lines(path, "the official script")  # chunked, no line past MAX_LINE_BYTES (FILE:LINE otherwise)


def read_output_file(path: Path) -> list[OutputRecord]:
    """Every line of an official output file, parsed with ``json.loads`` as the official ``main`` does;
    a line it cannot parse (a blank line included) is a ``ValueError`` naming FILE:LINE, and so is a
    line without an ``id`` (``main`` stops on both before it prints anything)."""
    if not path.is_file():
        raise FileNotFoundError(f"no official output file at {str(path)!r}")
    out: list[OutputRecord] = []
    seen: Counter[str] = Counter()
    for n, line in _lines(path):
        try:
            rec = json.loads(line)
        except RecursionError:
            raise ValueError(f"{path}:{n}: nested too deeply to read (the official script stops on it too)") from None
        except ValueError as exc:
            why = "a blank line" if not line.strip() else f"not JSON ({str(exc)[:80]})"
            raise ValueError(f"{path}:{n}: {why}: the official script stops on it too") from None
        if not isinstance(rec, dict) or "id" not in rec:
            raise ValueError(f"{path}:{n}: not an official output record (no 'id'): the official script stops on it too")
        rid = json.dumps(rec["id"], ensure_ascii=False) if not isinstance(rec["id"], str) else rec["id"]
        seen[rid] += 1
        key = rid if seen[rid] == 1 else f"{rid}{REPEAT}{seen[rid]}"
        while key in seen and key != rid:
            key += REPEAT
        seen[key] += 0
        out.append(OutputRecord(key, n, rec))
    return out


def _matches(answer: Any, content: Any) -> bool:
    return bool(answer.rstrip(".0").lower() in content.rstrip(".0").replace(",", "").lower())


def rule(record: Any) -> tuple[int | None, str | None]:
    """The official answer rule on one record: ``(1 | 0 | None, None)`` (None: it sets nothing), or
    ``(None, "<Exception>: ...")`` where the official code raises (and its script stops)."""
    try:
        if not record:
            return None, None
        messages = record["messages"]
        last = messages[-1]
        if last["role"] != "assistant" or not last["content"]:
            return None, None
        if _matches(record["answer"], last["content"]):
            return 1, None
        before = messages[-2]
        if before["role"] == "tool" and _matches(record["answer"], before["content"]):
            return 1, None
        return 0, None
    except Exception as exc:  # noqa: BLE001  (what the official code raises, as text)
        return None, f"{type(exc).__name__}: {str(exc)[:80]}"


def addable(value: Any) -> float | None:
    """A recorded ``answer_correct`` as the closed script's ``total_sum += value`` adds it (a number;
    a bool as 0/1), as a float for our sums; ``None`` where that raises (it skips the line) and where
    a float cannot hold the sum as it does (an integer of 2**53 or more, a non-finite number: warned)."""
    if isinstance(value, bool) or (isinstance(value, int) and abs(value) < 2**53):
        return float(value)
    if isinstance(value, float) and math.isfinite(value):
        return value
    return None


def printout(records: Sequence[OutputRecord]) -> float | str:
    """What ``evaluation_closed.py`` prints as ``Result`` for these lines, or the exception it stops on."""
    total: Any = 0
    for r in records:
        try:
            total += r.record["answer_correct"]
        except Exception:  # noqa: BLE001, S112  (the closed script skips the line)
            continue
    try:
        return float(round((100 * total) / FULL_SET, 2))
    except Exception as exc:  # noqa: BLE001
        return f"{type(exc).__name__}: {exc}"


def stop_reasons(path: Path, records: Sequence[OutputRecord]) -> list[str]:
    """What the official scripts do with this file that our numbers do not show, one warning each."""
    out: list[str] = []

    def where(rs: Sequence[OutputRecord]) -> str:
        shown = ", ".join(f"{path}:{r.line}" for r in rs[:5])
        return shown + (f" and {len(rs) - 5} more" if len(rs) > 5 else "")

    raised = [(r, rule(r.record)[1]) for r in records]
    if bad := [r for r, why in raised if why]:
        first = next(why for _, why in raised if why)
        out.append(f"{path}: the official answer rule raises on {len(bad)} line(s) ({first}: {where(bad)}): the official "
                   f"script stops there; here such a line counts as not correct in official_answer_rule")
    missing = [r for r in records if not isinstance(r.record, dict) or "answer_correct" not in r.record]
    if missing:
        out.append(f"{path}: {len(missing)} line(s) without answer_correct ({where(missing)}): evaluation_closed.py "
                   f"skips them in its Result, evaluation_open.py stops on them; official_result skips them")
    odd = [r for r in records if isinstance(r.record, dict) and "answer_correct" in r.record
           and isinstance(r.record["answer_correct"], int | float) and addable(r.record["answer_correct"]) is None]
    if odd:
        official = printout(records)
        out.append(f"{path}: {len(odd)} line(s) whose answer_correct is a huge integer or not finite "
                   f"({where(odd)}): evaluation_closed.py prints Result {official!r}; official_result here skips "
                   f"them, so it may differ from it")
    if len(records) > FULL_SET:
        out.append(f"{path}: {len(records)} lines, more than the {FULL_SET} queries: the official scripts still "
                   f"divide by {FULL_SET}; so do these numbers")
    return out
