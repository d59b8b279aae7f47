"""Triples: the record type, parsing of triple files, and canonical checksums."""

from __future__ import annotations

import ast
import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from .errors import KGError, KGParseError

__all__ = ["Triple", "parse_triple_file", "coerce_triples", "triples_checksum"]


class Triple(NamedTuple):
    """One fact ``head -relation-> tail``. Sorts lexicographically by (head, relation, tail)."""

    head: str
    relation: str
    tail: str


def _check_parts(value: object) -> Triple:
    """Validate one candidate triple; raise ``ValueError`` with a reason if it is not one."""
    if isinstance(value, tuple | list) and len(value) == 3:  # fast path for well-formed input
        h, r, t = value
        if type(h) is str and type(r) is str and type(t) is str and h.strip() and r.strip() and t.strip():
            return value if isinstance(value, Triple) else Triple(h, r, t)
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise ValueError(f"expected a list of 3 strings [head, relation, tail], got {type(value).__name__}")
    if len(value) != 3:
        raise ValueError(f"expected 3 items [head, relation, tail], got {len(value)}")
    for label, part in zip(("head", "relation", "tail"), value, strict=True):
        if not isinstance(part, str):
            raise ValueError(f"{label} must be a string, got {type(part).__name__} {part!r}")
        if not part.strip():
            raise ValueError(f"{label} is empty")
    return Triple(*value)


def parse_triple_file(path: str | Path) -> list[Triple]:
    """Parse a KG triple file: one Python-style list ``['Bob', 'mother', 'Alice']`` per line.

    Blank lines and lines starting with ``#`` are skipped. Triples are returned in file order,
    duplicates included (the store keeps one copy of each).

    Raises:
        KGError: the file does not exist or cannot be read / decoded as UTF-8.
        KGParseError: a line is not a triple of three non-empty strings; the message names the file
            and the 1-based line number and quotes the line.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise KGError(f"triple file not found: {p}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise KGError(f"cannot read triple file {p}: {exc}") from exc
    triples: list[Triple] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            value = ast.literal_eval(line)
        except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError) as exc:
            reason = exc.msg if isinstance(exc, SyntaxError) else str(exc)
            raise KGParseError(
                f"{p}:{lineno}: not a Python-style triple ({reason}); line: {line[:200]!r}",
                source=p,
                lineno=lineno,
            ) from None
        try:
            triples.append(_check_parts(value))
        except ValueError as exc:
            raise KGParseError(
                f"{p}:{lineno}: {exc}; line: {line[:200]!r}", source=p, lineno=lineno
            ) from None
    return triples


def coerce_triples(triples: Iterable[Sequence[str]], source: str = "<triples>") -> list[Triple]:
    """Validate an iterable of ``(head, relation, tail)`` sequences and return them as :class:`Triple`.

    Raises:
        KGParseError: an item is not three non-empty strings (``lineno`` is the 1-based item index).
    """
    out: list[Triple] = []
    for index, item in enumerate(triples, start=1):
        try:
            out.append(_check_parts(item))
        except ValueError as exc:
            raise KGParseError(
                f"{source} item {index}: {exc}: {item!r}", source=source, lineno=index
            ) from None
    return out


def triples_checksum(triples: Iterable[Sequence[str]]) -> str:
    """SHA-256 of the canonical content of a triple set.

    The canonical content is the compact JSON array (UTF-8, no ASCII escaping) of the distinct
    triples, sorted, each as ``[head, relation, tail]``. Order and duplicates in the input do not
    change the checksum.
    """
    canonical = sorted({tuple(t) for t in triples})
    text = json.dumps(canonical, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _require_str(value: object, label: str) -> str:
    """Return ``value`` if it is a non-empty string, else raise :class:`KGError` naming ``label``."""
    if not isinstance(value, str):
        raise KGError(f"{label} must be a string, got {type(value).__name__} {value!r}")
    if not value.strip():
        raise KGError(f"{label} must not be empty")
    return value
