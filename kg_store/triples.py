"""Triples: the record type, parsing of triple files, and canonical checksums.

A triple file has one Python-style list ``['head', 'relation', 'tail']`` per line. Nearly every line of
a real file is that list of plain single-quoted strings; such lines are read by one regular
expression over the whole file (in C, no Python object per line), and only the other lines go through
:func:`ast.literal_eval`. Both give the same triples and the same errors.

The canonical form of a triple set (what the checksum covers and what the store bulk-loads) is its
distinct *rows*, sorted: one CSV record ``"head","tail","relation"`` per triple (fields in double
quotes, a double quote inside doubled), which is what the engine's ``COPY FROM`` reads.
"""

from __future__ import annotations

import ast
import contextlib
import gc
import hashlib
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from operator import itemgetter
from pathlib import Path
from typing import NamedTuple

from .errors import KGError, KGParseError

__all__ = ["CanonicalTriples", "Triple", "canonical_triples", "coerce_triples", "parse_triple_file",
           "read_triple_file", "triples_checksum"]

# A field of the fast path: a single-quoted string without quotes, backslashes, control characters
# or line breaks of any kind (what ``str.splitlines`` splits at), not starting with white space, so
# its value is its text and it is not blank. Anything else takes the ``ast.literal_eval`` path.
_PLAIN = r"[^'\"\\\x00-\x1f\x7f\x85\u2028\u2029]"
_FIELD = rf"[ \t]*'((?![\s]){_PLAIN}+)'[ \t]*"
_TRIPLE_LINE = rf"[ \t]*\[{_FIELD},{_FIELD},{_FIELD}\][ \t]*\r?"
_FAST_LINE = re.compile(_TRIPLE_LINE)
_FAST_LINES = re.compile(rf"^{_TRIPLE_LINE}$", re.M)
# a blank line or a comment, with its line feed (comment text: no line break of any kind)
_SKIPPED_LINE = re.compile(r"^[ \t]*(?:#[^\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]*)?\r?\n", re.M)
_CHUNK = 100_000  # rows per write when hashing or writing the canonical rows
_SLICE_CHARS = 4_000_000  # characters of a triple file matched at a time

MAX_LINE_BYTES = 64 << 20
"""The longest line (its line feed included) of a triple file read: 64 MiB, the bound
``tool_specs.bounded_read.MAX_LINE_BYTES`` puts on every other file a user hands the project (a test
keeps the two equal; ``kg_store`` is below ``tool_specs`` and cannot import it). Read when a file is
read: a caller that needs longer lines sets ``kg_store.triples.MAX_LINE_BYTES``."""


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


def _read_text(p: Path) -> str:
    """The UTF-8 text of the triple file ``p``, read in chunks of at most :data:`MAX_LINE_BYTES` (a
    file below the bound in one), none of its lines read past the bound (the file is untrusted): a
    longer line is a :class:`KGParseError` ``FILE:LINE: a line longer than ...`` raised once that
    many bytes of it were read."""
    limit = MAX_LINE_BYTES
    chunks: list[bytes] = []
    since = 0  # bytes read since the last line feed
    try:
        with p.open("rb", buffering=0) as f:
            # a line within one chunk is no longer than the bound: only a line across chunks is checked
            step = min(limit, max(os.fstat(f.fileno()).st_size, 1 << 16) + 1)
            while chunk := f.read(step):
                first = chunk.find(b"\n")
                if (since + len(chunk) if first < 0 else since + first + 1) > limit:
                    lineno = sum(c.count(b"\n") for c in chunks) + 1
                    raise KGParseError(f"{p}:{lineno}: a line longer than {limit} bytes (kg_store.triples.MAX_LINE_BYTES); "
                                       "not read: the file is damaged or not a triple file", source=p, lineno=lineno)
                since = since + len(chunk) if first < 0 else len(chunk) - chunk.rfind(b"\n") - 1
                chunks.append(chunk)
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        del chunks
        text = data.decode("utf-8")
        # line ends as text mode reads them (``read_text`` before the bound): "\r\n" and a lone "\r" are "\n"
        return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
    except FileNotFoundError:
        raise KGError(f"triple file not found: {p}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise KGError(f"cannot read triple file {p}: {exc}") from exc


def _parse_lines(p: Path, text: str) -> Iterator[Triple]:
    """The triples of ``text`` (the content of ``p``) line by line, in file order."""
    fast = _FAST_LINE.fullmatch
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if (m := fast(raw)) is not None:
            yield Triple(*m.groups())
            continue
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
            yield _check_parts(value)
        except ValueError as exc:
            raise KGParseError(
                f"{p}:{lineno}: {exc}; line: {line[:200]!r}", source=p, lineno=lineno
            ) from None


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
    return list(_parse_lines(p, _read_text(p)))


@dataclass
class CanonicalTriples:
    """A triple set in canonical form: its distinct CSV rows ``"head","tail","relation"``, sorted."""

    rows: list[str]
    multiline: bool = False
    """Some field holds a line break (the engine must read the CSV serially)."""
    entities: list[str] = field(default_factory=list)
    """The distinct heads and tails, in any order (what the engine loads as its entities)."""

    @cached_property
    def checksum(self) -> str:
        """SHA-256 of the rows, each followed by a line feed (UTF-8); computed once."""
        h = hashlib.sha256()
        for i in range(0, len(self.rows), _CHUNK):
            h.update(("\n".join(self.rows[i : i + _CHUNK]) + "\n").encode("utf-8"))
        return h.hexdigest()

    def triples(self) -> list[Triple]:
        """The triples, in the order of the rows (for small sets: a Python loop per row)."""
        import csv

        return [Triple(h, r, t) for h, t, r in csv.reader(self.rows)]

    def write_csv(self, path: Path) -> None:
        """Write the rows as a CSV file with the header ``from,to,relation``."""
        _write_lines(path, "from,to,relation", self.rows)

    def write_entities_csv(self, path: Path) -> None:
        """Write :attr:`entities` as a CSV file with the header ``name``."""
        _write_lines(path, "name", [_quote(name) for name in self.entities])


def _write_lines(path: Path, header: str, lines: list[str]) -> None:
    with path.open("w", encoding="utf-8", newline="") as f:
        f.write(header + "\n")
        for i in range(0, len(lines), _CHUNK):
            f.write("\n".join(lines[i : i + _CHUNK]) + "\n")


def _quote(field: str) -> str:
    return '"' + field.replace('"', '""') + '"'


def canonical_triples(triples: Iterable[Sequence[str]]) -> CanonicalTriples:
    """The canonical form of already valid triples (see :func:`coerce_triples`)."""
    rows: set[str] = set()
    names: set[str] = set()
    for h, r, t in triples:
        rows.add(f"{_quote(h)},{_quote(t)},{_quote(r)}")
        names.add(h)
        names.add(t)
    return CanonicalTriples(sorted(rows), multiline=any("\n" in row or "\r" in row for row in rows),
                            entities=list(names))


def read_triple_file(path: str | Path) -> CanonicalTriples:
    """Parse a triple file (see :func:`parse_triple_file`, same errors) straight into canonical form.

    When every line is a plain ``['head', 'relation', 'tail']`` (or blank, or a comment), the rows
    come from one regular-expression pass over the whole text (a second after removing blank and
    comment lines, if any); otherwise each line is parsed on its own.
    """
    p = Path(path)
    with gc_paused():  # a million tuples in a row: the collector would walk them again and again
        return _read_fast(p, _read_text(p))


def _read_fast(p: Path, text: str) -> CanonicalTriples:
    parsed = _fast_rows(text)
    if parsed is None and _SKIPPED_LINE.search(text) is not None:
        text = _SKIPPED_LINE.sub("", text)  # blank lines or comments: only then a copy of the text
        parsed = _fast_rows(text)
    del text
    if parsed is None:
        return canonical_triples(_parse_lines(p, _read_text(p)))
    rows, names = parsed
    return CanonicalTriples(sorted(rows), entities=list(names))


def _fast_rows(text: str) -> tuple[set[str], set[str]] | None:
    """The distinct CSV rows and entity names of ``text`` if every line is a plain triple, else None.

    The text is matched a slice of lines at a time, so that only one slice's matches are held."""
    rows: set[str] = set()
    names: set[str] = set()
    matched, pos, size = 0, 0, len(text)
    while pos < size:
        end = text.find("\n", pos + _SLICE_CHARS)
        end = size if end < 0 else end + 1
        found = _FAST_LINES.findall(text, pos, end)
        matched += len(found)
        # the fast path's fields hold no quote: each is its own CSV field in double quotes
        rows |= {f'"{h}","{t}","{r}"' for h, r, t in found}
        names.update(map(itemgetter(0), found))
        names.update(map(itemgetter(2), found))
        pos = end
    return (rows, names) if matched == _line_count(text) else None


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off inside (it would walk a million new tuples again and again)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _line_count(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


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
    """SHA-256 of the canonical content of a triple set (:attr:`CanonicalTriples.checksum`).

    The canonical content is the distinct triples as CSV rows ``"head","tail","relation"`` (fields in
    double quotes, inner double quotes doubled), sorted, each followed by a line feed, in UTF-8.
    Order and duplicates in the input do not change the checksum.
    """
    return canonical_triples(triples).checksum


def _require_str(value: object, label: str) -> str:
    """Return ``value`` if it is a non-empty string, else raise :class:`KGError` naming ``label``."""
    if not isinstance(value, str):
        raise KGError(f"{label} must be a string, got {type(value).__name__} {value!r}")
    if not value.strip():
        raise KGError(f"{label} must not be empty")
    return value
