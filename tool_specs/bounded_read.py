"""Reading a file that comes from outside with a bound on a line's length: no reader of the project
holds more than :data:`MAX_LINE_BYTES` of one line (or of one whole-JSON/YAML file).

Untrusted files: a run folder's JSON Lines files (``traces.jsonl``, ``tools.jsonl``, ``scores.jsonl``,
a replay file), a predictions file given to ``evals score --format``, and the files a user hands the
project: task files, spec files, recordings, configs. Each is read through :func:`read_lines` (a
binary file's lines), :func:`read_text_lines` (a UTF-8 file's non-blank lines) or
:func:`bounded_text` (a file parsed as one document), or through ``evals.core.lines.universal_lines``
(the official scripts' text-mode split) which keeps the same bound. A longer line is one
:class:`LineTooLong`, ``FILE:LINE: ...``, exit 2 at the CLI, never a ``MemoryError`` or gigabytes read.
(It lives in ``tool_specs``, next to :mod:`tool_specs.safe_load`, so that the server, the client and
``evals`` all read through it; a ``--kg`` triple file, read by ``kg_store`` below it, keeps the same
bound as ``kg_store.triples.MAX_LINE_BYTES``.)
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = ["MAX_LINE_BYTES", "LineTooLong", "bounded_bytes", "bounded_text", "line_at", "read_lines", "read_text_lines"]

MAX_LINE_BYTES = 64 << 20
"""The longest line (its line end included) any reader of an untrusted file takes, and the largest
file read as one document: 64 MiB. No line is read past this: a longer one is :class:`LineTooLong`.
It is 850 times the longest line of the largest run measured (docs/runs.md, "A line too long"), and
``--trace-max-value-bytes`` (1 MiB by default) keeps a trace line of ordinary episodes far below it.
Read when a file is read: a caller that needs longer lines (a run recorded with
``--trace-max-value-bytes 0`` and huge tool results) sets ``tool_specs.bounded_read.MAX_LINE_BYTES``."""

_CHUNK = 1 << 20


class LineTooLong(ValueError):
    """A line of an untrusted file (or a whole file read as one document, ``what="a whole file"``)
    is longer than :data:`MAX_LINE_BYTES`: ``FILE:LINE: ...`` (exit 2 at the CLI)."""

    def __init__(self, path: Path | str, lineno: int, limit: int, *, what: str = "a line") -> None:
        self.path, self.lineno, self.limit = path, lineno, limit
        self.problem = (f"{what} longer than {limit} bytes (tool_specs.bounded_read.MAX_LINE_BYTES); not read: no file "
                        "evals writes or reads with its default settings comes near that, so the file is damaged or "
                        "not what it seems")
        """the message without its ``FILE:LINE: `` (for an error type of the caller's that adds them itself)"""
        super().__init__(f"{path}:{lineno}: {self.problem}")


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


def bounded_bytes(path: Path | str, *, fd: int | None = None) -> bytearray:
    """The bytes of ``path``, a file read as one document (JSON, YAML, a whole predictions file),
    read in chunks and never past :data:`MAX_LINE_BYTES`: a larger file is :class:`LineTooLong`
    (``what="a whole file"``) at the line where it crosses the bound, having read one byte more
    than the bound. Opening errors (``FileNotFoundError``, ...) are the caller's to word. ``fd``: the
    file already opened (a run file opened without following links), read instead and closed."""
    limit = MAX_LINE_BYTES
    data = bytearray()
    with open(path if fd is None else fd, "rb") as f:
        while chunk := f.read(min(_CHUNK, limit + 1 - len(data))):
            data += chunk
            if len(data) > limit:
                raise LineTooLong(path, data.count(b"\n") + 1, limit, what="a whole file")
    return data


def bounded_text(path: Path | str) -> str:
    """The UTF-8 text of ``path``, read by :func:`bounded_bytes` (a file past :data:`MAX_LINE_BYTES`:
    :class:`LineTooLong`); bytes that are not UTF-8 are a ``ValueError`` ``FILE:LINE: not UTF-8 text (...)``."""
    data = bounded_bytes(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ValueError(f"{path}:{line}: not UTF-8 text ({exc.reason})") from None


def line_at(f: BinaryIO, offset: int) -> int:
    """The number of the line that starts at ``offset`` of ``f`` (its newlines before it, counted in chunks)."""
    f.seek(0)
    lines, pos = 1, 0
    while pos < offset:
        chunk = f.read(min(_CHUNK, offset - pos))
        if not chunk:
            break
        lines += chunk.count(b"\n")
        pos += len(chunk)
    return lines
