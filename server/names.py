"""Prefix completion over a large sorted set of names (entity and relation names for ``completion/complete``).

A :class:`NameIndex` is a sorted list searched with :mod:`bisect`: finding the names that start with a
prefix costs two binary searches (``O(log n)``) plus the answers returned, so completing among a
million entity names takes microseconds. MCP caps a completion at 100 values; ``total`` still counts
every match.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["MAX_COMPLETIONS", "Matches", "NameIndex"]

MAX_COMPLETIONS = 100  # the most values one completion/complete answer may hold (the MCP spec's cap)
_AFTER_EVERY_CHAR = "\U0010ffff"  # sorts after any name continuing a prefix


@dataclass(frozen=True)
class Matches:
    """The first ``values`` (sorted) among the ``total`` names that start with a prefix."""

    values: list[str]
    total: int

    @property
    def has_more(self) -> bool:
        return self.total > len(self.values)


class NameIndex:
    """Sorted, distinct names with prefix search; ``add``/``discard`` keep the order (``O(n)`` each)."""

    def __init__(self, names: Iterable[str] = (), *, presorted: bool = False):
        items = list(names)
        self._names: list[str] = items if presorted else sorted(set(items))

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        i = bisect.bisect_left(self._names, name)
        return i < len(self._names) and self._names[i] == name

    def page(self, start: int, size: int) -> list[str]:
        """Names ``start`` .. ``start + size`` in sorted order (for paginated listings)."""
        return self._names[start : start + size]

    def add(self, name: str) -> None:
        i = bisect.bisect_left(self._names, name)
        if i == len(self._names) or self._names[i] != name:
            self._names.insert(i, name)

    def discard(self, name: str) -> None:
        i = bisect.bisect_left(self._names, name)
        if i < len(self._names) and self._names[i] == name:
            del self._names[i]

    def complete(self, prefix: str, limit: int = MAX_COMPLETIONS) -> Matches:
        """The names starting with ``prefix`` (case-sensitive), the first ``limit`` of them sorted.

        When nothing starts with ``prefix`` as typed, the names that start with it in lower case, upper
        case or with its first letter changed in case are offered instead (``bob`` finds ``Bob_0001``):
        a few more binary searches, no second index.
        """
        lo, hi = self._span(prefix)
        if hi > lo or not prefix:
            return Matches(self._names[lo : min(hi, lo + limit)], hi - lo)
        variants = {prefix.lower(), prefix.upper(), prefix.capitalize(), prefix[0].swapcase() + prefix[1:]} - {prefix}
        spans = {self._span(v) for v in variants}  # prefixes of one length: disjoint spans
        values = sorted(n for a, b in spans for n in self._names[a : min(b, a + limit)])
        return Matches(values[:limit], sum(b - a for a, b in spans))

    def _span(self, prefix: str) -> tuple[int, int]:
        lo = bisect.bisect_left(self._names, prefix)
        return lo, bisect.bisect_left(self._names, prefix + _AFTER_EVERY_CHAR, lo)

