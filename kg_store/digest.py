"""The one file digest of the project: the SHA-256 of a file's bytes, remembered per process while
the file is the same version.

Every file the project checks or keys by its bytes goes through :func:`file_sha256`: a triple file
(is the KG database up to date), a downloaded data file, a pinned package a benchmark reads, the
data files a run's config records, the sources of a derived-cache entry. (It lives here, in the lowest package,
so that every package may use it.)

A version of a file is ``(device, inode, size, mtime_ns, ctime_ns)``, as ``fstat`` gives them for the
open file before and after its bytes are read (a file that changes while it is read is not
remembered). The ctime is the kernel's own: writing the file or setting its mtime back
(``os.utime``) moves it to now, so bytes changed in place with the old size and modification time
put back are another version (issue 46 item 3), read again. A file whose ctime is less than
:data:`RACY_NS` old is not remembered: the kernel's file clock advances in ticks, so a second change
within the tick of the first could leave every field as it was (git calls such index entries
"racy"); two seconds also cover file systems that keep times to two seconds.

A digest says which bytes the file held when they were read, not what a later read of the path
gets: code is imported only from the very bytes that were checked (a benchmark's pinned wheel keeps
them in memory), never from the path after a check.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

__all__ = ["RACY_NS", "file_sha256"]

RACY_NS = 2_000_000_000
"""A file whose status changed less than this long ago (nanoseconds) is read every time."""

_MAX_REMEMBERED = 4096  # versions; then the memo starts again (a process hashes a few dozen files)
_CHUNK = 1 << 20
_remembered: dict[tuple[int, ...], str] = {}


def _version(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def file_sha256(path: str | Path) -> str:
    """The SHA-256 (hex) of the bytes of the file at ``path`` (links followed), read once per
    version of the file and process (see the module docs).

    Raises:
        OSError: the file cannot be read (``FileNotFoundError`` when it does not exist).
    """
    known = _remembered.get(_version(os.stat(path)))
    if known is not None:
        return known
    h = hashlib.sha256()
    with open(path, "rb") as f:
        before = _version(os.fstat(f.fileno()))
        while chunk := f.read(_CHUNK):
            h.update(chunk)
        after = _version(os.fstat(f.fileno()))
    digest = h.hexdigest()
    if before == after and time.time_ns() - before[4] >= RACY_NS:
        if len(_remembered) >= _MAX_REMEMBERED:
            _remembered.clear()
        _remembered[before] = digest
    return digest
