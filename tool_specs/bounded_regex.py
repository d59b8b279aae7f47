"""Regular expressions from outside (a task file's answer patterns and reference patterns), run with a
time limit: a pattern that backtracks catastrophically (``^(a|aa)+$`` against forty ``a`` and a
``b``) gives up after :data:`REGEX_TIMEOUT` seconds with :class:`RegexTimeout` instead of holding the
process for hours.

The `regex <https://pypi.org/project/regex/>`_ package runs them (its ``timeout=``). A pattern must
first parse with the standard library's ``re`` (the syntax users know), and its repeat counts,
multiplied out, may come to at most :data:`MAX_PATTERN_SIZE` (``regex`` unrolls counted repeats when
it compiles: ``a{1000000000}`` would take gigabytes before any time limit applies).
"""

from __future__ import annotations

import importlib
import re
from functools import lru_cache
from typing import Any

import regex

__all__ = ["MAX_PATTERN_SIZE", "REGEX_TIMEOUT", "RegexTimeout", "bounded_search", "pattern_groups"]

#: seconds one search of a pattern from outside may take
REGEX_TIMEOUT = 1.0
#: the most pattern items a pattern may hold with its counted repeats multiplied out
MAX_PATTERN_SIZE = 50_000

_sre: Any = importlib.import_module("re._parser")  # the standard parser's tree (no public API for it)
_REPEATS = (_sre.MAX_REPEAT, _sre.MIN_REPEAT, getattr(_sre, "POSSESSIVE_REPEAT", _sre.MAX_REPEAT))


def _size(node: Any) -> int:
    """The items of a parsed pattern (or part of one), counted repeats multiplied out."""
    if isinstance(node, _sre.SubPattern):
        return sum(_item(op, av) for op, av in node.data)
    if isinstance(node, tuple | list):
        return sum(_size(x) for x in node)
    return 0


def _item(op: Any, av: Any) -> int:
    if op in _REPEATS:
        low, high, sub = av
        count: int = low + 1 if high == _sre.MAXREPEAT else high
        return max(1, count) * max(1, _size(sub))
    return 1 + _size(av)


@lru_cache(maxsize=1024)
def _checked(pattern: str) -> int:
    """The group count of ``pattern``; ``ValueError`` if ``re`` does not parse it or it is too large."""
    try:
        parsed = _sre.parse(pattern)
    except re.error as exc:
        raise ValueError(str(exc)) from None
    except RecursionError:
        raise ValueError("the pattern is nested too deeply") from None
    size = _size(parsed)
    if size > MAX_PATTERN_SIZE:
        raise ValueError(f"the pattern's repeat counts multiply out to {size} items (at most {MAX_PATTERN_SIZE})")
    return int(parsed.state.groups) - 1


class RegexTimeout(TimeoutError):
    """A search ran past its time limit; the message names the pattern."""

    def __init__(self, pattern: str, timeout: float) -> None:
        self.pattern = pattern
        self.timeout = timeout
        shown = pattern if len(pattern) <= 80 else pattern[:77] + "..."
        super().__init__(f"the pattern {shown!r} ran past its time limit ({timeout:g} s; it backtracks "
                         "too much: write it without nested repetition)")


def pattern_groups(pattern: str) -> int:
    """How many groups ``pattern`` has. Raises ``ValueError`` (with the reason) if it does not parse as
    ``re`` syntax or is larger than :data:`MAX_PATTERN_SIZE`."""
    return _checked(pattern)


def bounded_search(pattern: str, text: str, *, ignore_case: bool = False,
                   timeout: float = REGEX_TIMEOUT) -> Any:
    """``re.search(pattern, text)`` (a match object or None) within ``timeout`` seconds.

    Raises:
        RegexTimeout: the search took longer.
        ValueError: the pattern does not compile (see :func:`pattern_groups`).
    """
    _checked(pattern)
    try:
        return regex.search(pattern, text, regex.IGNORECASE if ignore_case else 0, timeout=timeout)
    except TimeoutError:
        raise RegexTimeout(pattern, timeout) from None
    except regex.error as exc:
        raise ValueError(str(exc)) from None
