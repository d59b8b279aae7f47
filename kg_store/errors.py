"""Exceptions raised by :mod:`kg_store`."""

from __future__ import annotations

from pathlib import Path

__all__ = ["KGError", "KGLockedError", "KGParseError"]


class KGError(Exception):
    """Any error from the knowledge-graph store: bad input, unknown entity, missing database, etc.

    The message always names the thing that is wrong (entity, relation, file and line, directory).
    """


class KGParseError(KGError):
    """A triple file (or an iterable of triples) holds an entry that is not a valid triple.

    Attributes:
        source: the file (or ``"<triples>"`` for an iterable) the bad entry came from.
        lineno: 1-based line number in the file (or 1-based index in the iterable).
    """

    def __init__(self, message: str, *, source: str | Path, lineno: int) -> None:
        super().__init__(message)
        self.source = str(source)
        self.lineno = lineno


class KGLockedError(KGError):
    """The database directory is locked by another store (another process, or another open store here)."""
