"""Reading a run's files line by line, with a bound on a line's length.

A run folder is untrusted input: it is copied around, and a recording can be crafted. Every reader
of a run's JSON Lines files (``traces.jsonl``, ``tools.jsonl``, a replay file, and the JSON Lines data
files read through :func:`~client.runs.iter_jsonl`) reads them through :func:`read_lines`, which
reads no line past :data:`MAX_LINE_BYTES`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = ["MAX_LINE_BYTES", "LineTooLong", "line_at", "read_lines", "read_text_lines"]

MAX_LINE_BYTES = 64 << 20
"""The longest line (newline included) a reader of a run's files (``traces.jsonl``, ``tools.jsonl``,
a replay file, a JSON Lines data file) takes: 64 MiB. A run folder is untrusted input (it is copied
around; a recording can be crafted), so no line is read past this: a longer one is
:class:`LineTooLong`, never a ``MemoryError`` or gigabytes read. It is 850 times the longest line
of the largest run measured (docs/runs.md, "A line too long"), and ``--trace-max-value-bytes`` (1 MiB
by default) keeps a trace line of ordinary episodes far below it. Read when a file is read: a caller that
needs longer lines (a run recorded with ``--trace-max-value-bytes 0`` and huge tool results) sets
``client._runs.lines.MAX_LINE_BYTES``."""


class LineTooLong(ValueError):
    """A line of a run's file is longer than :data:`MAX_LINE_BYTES`: ``FILE:LINE: ...`` (exit 2 at the CLI)."""

    def __init__(self, path: Path | str, lineno: int, limit: int) -> None:
        self.path, self.lineno, self.limit = path, lineno, limit
        super().__init__(
            f"{path}:{lineno}: a line longer than {limit} bytes (client._runs.lines.MAX_LINE_BYTES); "
            "no trace, tool list or recording evals writes with its default settings comes near that: "
            "the file is damaged or was not written by evals"
        )


def read_lines(f: BinaryIO, path: Path | str, *, first: int = 1) -> Iterator[tuple[int, bytes]]:
    """``(line number, raw line)`` of the binary file ``f`` from where it stands, counting from
    ``first``; the last one lacks its newline when the file does not end with one. A line longer than
    :data:`MAX_LINE_BYTES` raises :class:`LineTooLong` once that many bytes of it were read."""
    limit = MAX_LINE_BYTES
    lineno = first
    while raw := f.readline(limit + 1):
        if len(raw) > limit:
            raise LineTooLong(path, lineno, limit)
        yield lineno, raw
        lineno += 1


def read_text_lines(path: Path | str, *, label: str = "") -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of each non-blank line of the UTF-8 file ``path``, read as
    :func:`read_lines` reads (a line past :data:`MAX_LINE_BYTES`: :class:`LineTooLong`); a line that
    is not UTF-8 is a :class:`ValueError` ``LABELPATH:LINE: not UTF-8 text (...)``; ``label`` goes
    before the path in both (e.g. ``"replay file "``)."""
    with open(path, "rb") as f:
        for n, raw in read_lines(f, f"{label}{path}"):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(f"{label}{path}:{n}: not UTF-8 text ({exc.reason})") from None
            if line.strip():
                yield n, line


def line_at(f: BinaryIO, offset: int) -> int:
    """The number of the line that starts at ``offset`` of ``f`` (its newlines before it, counted in chunks)."""
    f.seek(0)
    lines, pos = 1, 0
    while pos < offset:
        chunk = f.read(min(1 << 20, offset - pos))
        if not chunk:
            break
        lines += chunk.count(b"\n")
        pos += len(chunk)
    return lines
