"""Reading an imported predictions file's lines as the official scripts split them, with a bound.

A predictions or result file given to ``evals score --format`` is untrusted input. The official
scripts read it in text mode (``open(path)``: lines end at ``\\n``, ``\\r\\n`` and ``\\r``, Python's
universal newlines); :func:`universal_lines` splits it the same way, reading it in chunks and no line
past ``tool_specs.bounded_read.MAX_LINE_BYTES`` (every untrusted file's bound, read at call time): a longer
one is :class:`~tool_specs.bounded_read.LineTooLong`, ``FILE:LINE: ...`` (exit 2 at the CLI). A whole-JSON
predictions file is read by ``tool_specs.bounded_read.bounded_text``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from tool_specs import bounded_read as _bounded
from tool_specs.bounded_read import LineTooLong

__all__ = ["text_mode_lines", "universal_lines"]

_CHUNK = 1 << 20
_LINE_END = re.compile(rb"\r\n|\r|\n")


def universal_lines(path: Path) -> Iterator[tuple[int, bytes, bytes]]:
    """``(line number, line, its line end)`` of ``path``, split where text-mode ``open()`` splits
    (``\\n``, ``\\r\\n``, ``\\r``; the last line's end is ``b""`` when the file does not end with one).
    A line longer than ``MAX_LINE_BYTES`` (its line end included) is :class:`LineTooLong`,
    raised before more than that and one chunk of it is held."""
    limit = _bounded.MAX_LINE_BYTES
    n = 1
    buf = bytearray()
    resume = 0  # where in ``buf`` to look for the next line end (what is before it was searched)
    with open(path, "rb") as f:
        while True:
            chunk = f.read(_CHUNK)
            eof = not chunk
            buf += chunk
            start, pos = 0, resume
            plain = b"\r" not in buf  # then each line ends at a \n: found by bytes.find (the regex costs more)
            while True:
                if plain:
                    begin = buf.find(b"\n", pos)
                    if begin < 0:
                        pos = len(buf)  # searched to its end
                        break
                    end = begin + 1
                else:
                    found = _LINE_END.search(buf, pos)
                    if found is None:
                        pos = len(buf)
                        break
                    begin, end = found.span()
                    del found  # a match holds the buffer: it must go before ``buf`` is resized
                if end == len(buf) and buf[begin] == 0x0D and not eof:
                    pos = begin
                    break  # a \r at the chunk's end: a \n may follow in the next chunk
                if end - start > limit:
                    raise LineTooLong(path, n, limit)
                yield n, bytes(buf[start:begin]), bytes(buf[begin:end])
                n += 1
                start = pos = end
            del buf[:start]
            resume = pos - start
            if len(buf) > limit:
                raise LineTooLong(path, n, limit)
            if eof:
                if buf:
                    yield n, bytes(buf), b""
                return


def text_mode_lines(path: Path, reader: str) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of ``path`` as ``for line in open(path, encoding="utf-8")`` gives them
    (each line end turned into ``\\n``), read by :func:`universal_lines`; a line that is not UTF-8 is a
    ``ValueError`` ``FILE:LINE: not UTF-8 text (READER stops on it too)``."""
    for n, raw, end in universal_lines(path):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}:{n}: not UTF-8 text ({reader} stops on it too): {exc.reason}") from None
        yield n, line + ("\n" if end else "")
