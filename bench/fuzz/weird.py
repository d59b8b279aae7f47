"""Unusual values and file layouts shared by the benchmark modules of the fuzzer.

`value` draws a JSON value of any type (deep nesting, huge and non-finite numbers, strings with
Unicode line breaks, control characters and lone surrogates); `text` a string with such characters;
`write_lines` writes JSON lines with the oddities a reader meets: blank lines, `\\r\\n` and `\\r`
line ends, a form feed / record separator / U+2028 / NEL at a line end, a byte-order mark, no final
line end, bytes that are not UTF-8.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

__all__ = ["ODD_CHARS", "answer_text", "dumps", "text", "value", "write_lines"]

ODD_CHARS = ["\u2028", "\u2029", "\x85", "\x0c", "\x1c", "\x1d", "\x1e", "\x0b", "\r", "\t", "\x00", "\ufeff",
             "\ud800", "\udfff", "\udc80", "\u00e9", "\u4e2d", "\U0001f600", "\\", '"', "'", "\\_", "json", "null",
             "true", "}", "]", "[", "{", "，", "."]


def text(rng: random.Random, base: str = "") -> str:
    """``base`` with a few odd characters put in (or a short odd string)."""
    out = list(base or rng.choice(["x", "abc def", "2024-05-01", "May 1st, 2024", "API_call_0", ""]))
    for _ in range(rng.randint(1, 3)):
        out.insert(rng.randint(0, len(out)), rng.choice(ODD_CHARS))
    return "".join(out)


def value(rng: random.Random, depth: int = 0) -> Any:
    """A JSON value of any type, sometimes odd."""
    kind = rng.randrange(14)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, 1, -1, 5, 10, 2**63, -(2**70), 10**30])
    if kind == 3:
        return rng.choice([0.5, -1.0, 1e308, 1e-320, 7.25, float("inf"), float("-inf"), float("nan")])
    if kind == 4:
        return text(rng)
    if kind == 5:
        return "x" * rng.choice([0, 1, 300]) + " word" * rng.choice([0, 5, 600])
    if kind == 6 and depth < 3:
        return [value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if kind == 7 and depth < 3:
        return {text(rng, "k") if rng.random() < 0.3 else rng.choice(["a", "step", "param", "tool"]): value(rng, depth + 1)
                for _ in range(rng.randint(0, 3))}
    if kind == 8:
        deep: Any = rng.choice([1, "x", None])
        for _ in range(rng.choice([50, 200, 1200])):
            deep = [deep] if rng.random() < 0.5 else {"a": deep}
        return deep
    if kind == 9:
        return int("9" * rng.choice([20, 400, 4300]))
    return rng.choice(["", " ", "0", "1", "-1", "None", "[]", "{}", "[{}]"])


def dumps(rng: random.Random, obj: Any) -> str:
    """One JSON line for ``obj`` (escaped non-ASCII at random; a huge int can make json.dumps fail: then
    its text is written by hand)."""
    try:
        text = json.dumps(obj, ensure_ascii=rng.random() < 0.5)
        if any("\ud800" <= ch <= "\udfff" for ch in text) and rng.random() < 0.9:
            text = json.dumps(obj)  # mostly escaped (\ud800 in the JSON); else raw, bytes that are not UTF-8
        return text
    except (ValueError, RecursionError):
        return "[" * 1200 + "1" + "]" * 1200  # too deep to write: a line as deep


def answer_text(rng: random.Random, obj: Any, style: int, fence: str, deep: int) -> str:
    """``obj`` written as a model's answer: style 0 a Python literal, any other JSON (escaped non-ASCII at
    random); then 2 inside ``fence`` (its ``{}``), 3 cut anywhere, 4 with odd characters; too deep to
    write: ``deep`` brackets."""
    try:
        body = repr(obj) if style == 0 else json.dumps(obj, ensure_ascii=rng.random() < 0.5)
    except (ValueError, RecursionError):
        body = "[" * deep + "]" * deep
    if style == 2:
        body = fence.format(body)
    elif style == 3:
        body = body[: rng.randrange(len(body) + 1)]
    elif style == 4:
        body = text(rng, body)
    return body


def write_lines(rng: random.Random, path: Path, lines: list[str], odd: float = 0.3) -> None:
    """Write ``lines`` as a JSON-lines file; with probability ``odd`` one or more layout oddities."""
    lines = list(lines)
    ends = ["\n"] * len(lines)
    head = ""
    last_end = True
    if rng.random() < odd:
        for _ in range(rng.randint(1, 2)):
            what = rng.randrange(9)
            i = rng.randrange(len(lines)) if lines else 0
            if what == 0:
                lines.insert(i, rng.choice(["", " ", "\t", "  "]))
                ends.insert(i, "\n")
            elif what == 1 and lines:
                ends = ["\r\n"] * len(lines)
            elif what == 2 and lines:
                ends[i] = "\r"
            elif what == 3 and lines:
                lines[i] += rng.choice(["\x0c", "\x1e", "\x1c", "\u2028", "\x85", "\x0b", " ", "\t"])
            elif what == 4:
                head = "\ufeff"
            elif what == 5:
                last_end = False
            elif what == 6 and lines:
                lines.append("")
                ends.append("\n")
            elif what == 7 and lines:  # a line split by a Unicode line break inside a value (valid JSON)
                lines[i] = lines[i].replace(", ", ",\u2028", 1)
            elif what == 8 and lines:
                lines[i] = lines[i].replace(", ", ",\x0c ", 1)
    body = head + "".join(line + end for line, end in zip(lines, ends, strict=True))
    if not last_end and body.endswith("\n"):
        body = body[:-1]
    data = body.encode("utf-8", errors="surrogatepass")  # a raw lone surrogate: bytes that are not UTF-8
    if rng.random() < odd * 0.05:
        data = data[: len(data) // 2] + b"\xff" + data[len(data) // 2:]
    path.write_bytes(data)
