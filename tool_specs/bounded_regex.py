"""Regular expressions from outside (a task file's answer patterns and reference patterns), run with a
time limit: a pattern that backtracks catastrophically (``^(a|aa)+$`` against forty ``a`` and a
``b``) gives up after :data:`REGEX_TIMEOUT` seconds with :class:`RegexTimeout` instead of holding the
process for hours.

The `regex <https://pypi.org/project/regex/>`_ package runs them (its ``timeout=``; its default
syntax is the standard library's ``re``).
"""

from __future__ import annotations

from typing import Any

import regex

__all__ = ["REGEX_TIMEOUT", "RegexTimeout", "bounded_search", "pattern_groups"]

#: seconds one search of a pattern from outside may take
REGEX_TIMEOUT = 1.0


class RegexTimeout(TimeoutError):
    """A search ran past its time limit; the message names the pattern."""

    def __init__(self, pattern: str, timeout: float) -> None:
        self.pattern = pattern
        self.timeout = timeout
        shown = pattern if len(pattern) <= 80 else pattern[:77] + "..."
        super().__init__(f"the pattern {shown!r} ran past its time limit ({timeout:g} s; it backtracks "
                         "too much: write it without nested repetition)")


def pattern_groups(pattern: str) -> int:
    """How many groups ``pattern`` has. Raises ``ValueError`` (with the reason) if it does not compile."""
    try:
        return int(regex.compile(pattern).groups)
    except regex.error as exc:
        raise ValueError(str(exc)) from None


def bounded_search(pattern: str, text: str, *, ignore_case: bool = False,
                   timeout: float = REGEX_TIMEOUT) -> Any:
    """``re.search(pattern, text)`` (a match object or None) within ``timeout`` seconds.

    Raises:
        RegexTimeout: the search took longer.
        ValueError: the pattern does not compile.
    """
    try:
        return regex.search(pattern, text, regex.IGNORECASE if ignore_case else 0, timeout=timeout)
    except TimeoutError:
        raise RegexTimeout(pattern, timeout) from None
    except regex.error as exc:
        raise ValueError(str(exc)) from None
