"""A run directory's files are opened without following symbolic links.

A run directory may come from elsewhere (copied, unpacked, shared). A ``traces.jsonl`` (or any other
file the run writes) that is a symbolic link would have a resumed run append to, or truncate, the
file it points at. Every file a run writes or appends to in its directory is opened with
``O_NOFOLLOW`` (:func:`open_run_file`, :func:`write_run_text`), and :func:`check_run_dir` refuses a
run directory that is itself a link or holds a link in place of one of its files before anything is
written. A link is refused with :class:`RunFileIsLink` (a ``ValueError``: ``evals`` exits 2 with its
one-line message); its target is never opened for writing.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

__all__ = ["RunFileIsLink", "check_run_dir", "open_run_file", "refuse_link", "write_run_text"]

_RUN_FILE = re.compile(
    r"^(?:config\.json|config\.history\.jsonl|traces(?:\.torn|\.kept-.*)?\.jsonl|events(?:\.torn)?\.jsonl"
    r"|scores\.jsonl|report|judge_cache\.sqlite(?:-journal|-wal|-shm)?|\.lock|report\.(?:md|html|json)|hops-.*\.svg"
    r"|\.config\.json\..*\.tmp)$"
)
"""The names of the files a run (and ``evals score`` / ``evals report`` in it) writes."""


class RunFileIsLink(ValueError):
    """A file of a run directory (or the directory itself) is a symbolic link: refused, nothing written."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        try:
            target = f" (to {os.readlink(path)!r})"
        except OSError:
            target = ""
        super().__init__(
            f"{str(path)!r} is a symbolic link{target}: a run never writes through a link; "
            "replace it with the file itself (or remove it) and run again"
        )


def refuse_link(path: Path | str) -> None:
    """Raise :class:`RunFileIsLink` when ``path`` is a symbolic link (a missing path is fine)."""
    if os.path.islink(path):
        raise RunFileIsLink(path)


def check_run_dir(path: Path) -> None:
    """Refuse a run directory that is a symbolic link, or that holds one under the name of a run file."""
    refuse_link(path)
    try:
        entries = list(os.scandir(path))
    except FileNotFoundError:
        return
    for entry in entries:
        if _RUN_FILE.match(entry.name) and entry.is_symlink():
            raise RunFileIsLink(entry.path)


def open_run_file(path: Path | str, flags: int, mode: int = 0o644) -> int:
    """``os.open`` with ``O_NOFOLLOW`` (and ``O_CLOEXEC``); a link is :class:`RunFileIsLink`."""
    try:
        return os.open(path, flags | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), mode)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK) and os.path.islink(path):
            raise RunFileIsLink(path) from None
        raise


def write_run_text(path: Path | str, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path``, truncating it, without following a link there."""
    fd = open_run_file(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
