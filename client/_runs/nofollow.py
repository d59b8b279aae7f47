"""A run directory's files are opened without following symbolic links.

A run directory may come from elsewhere (copied, unpacked, shared). A ``traces.jsonl`` (or any other
file the run writes) that is a symbolic link would have a resumed run append to, or truncate, the
file it points at. Every file a run writes or appends to in its directory is opened with
``O_NOFOLLOW`` (:func:`open_run_file`, :func:`write_run_text`), and :func:`check_run_dir` refuses a
run directory that is itself a link or holds a link in place of one of its files before anything is
written. A link is refused with :class:`RunFileIsLink` (a ``ValueError``: ``evals`` exits 2 with its
one-line message); its target is never opened for writing.

An export (``evals export``, ``evals view --export``) writes into a folder the user names, which may
hold links too: :func:`fresh_output` has it write into a fresh private folder beside it, then moves
what was written into place (:func:`install_tree`): a file replaces whatever had its name (a link is
replaced, its target untouched), a link where a folder is needed is refused.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["RunFileIsLink", "check_run_dir", "fresh_output", "install_tree", "open_run_file", "refuse_link",
           "write_run_text"]

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)

_RUN_FILE = re.compile(
    r"^(?:config\.json|config\.history\.jsonl|traces(?:\.torn|\.kept-.*)?\.jsonl|events(?:\.torn)?\.jsonl|tools(?:\.torn)?\.jsonl"
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


def _open_dir(name: str, dir_fd: int, shown: Path) -> int:
    """The folder ``name`` in ``dir_fd``, not through a link (:class:`RunFileIsLink` if it is one)."""
    try:
        return os.open(name, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK) and os.path.islink(shown):
            raise RunFileIsLink(shown) from None
        raise


def _merge(src: Path, dest_fd: int, dest: Path) -> None:
    for entry in os.scandir(src):
        if entry.is_dir(follow_symlinks=False):
            try:
                os.mkdir(entry.name, stat.S_IMODE(entry.stat(follow_symlinks=False).st_mode), dir_fd=dest_fd)
            except FileExistsError:
                pass
            sub = _open_dir(entry.name, dest_fd, dest / entry.name)
            try:
                _merge(Path(entry.path), sub, dest / entry.name)
            finally:
                os.close(sub)
        else:  # rename(2) replaces the name itself: a link there is replaced, never written through
            os.replace(entry.path, entry.name, dst_dir_fd=dest_fd)


def install_tree(src: Path | str, dest: Path | str) -> None:
    """Move every entry of the folder ``src`` into the folder ``dest`` (merged: a file replaces the entry
    of its name, a folder is entered), never following a link inside ``dest`` (:class:`RunFileIsLink`
    where a folder is a link)."""
    fd = os.open(dest, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)  # the folder named (links above it are the user's)
    try:
        _merge(Path(src), fd, Path(dest))
    finally:
        os.close(fd)


@contextmanager
def fresh_output(out: Path | str) -> Iterator[Path]:
    """Yield a path to write ``out`` at (a file or a folder) in a fresh private folder beside ``out``;
    when the block ends without an error, move what was written into place (:func:`install_tree`).
    ``out`` that is a link is :class:`RunFileIsLink`; the fresh folder is removed in any case."""
    out = Path(out)
    refuse_link(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.tmp-"))
    try:
        yield fresh / out.name
        install_tree(fresh, out.parent)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)
