"""An advisory ``flock`` on a file in the store directory, shared (read-only) or exclusive (read-write).

Kuzu allows one read-write process or several read-only ones. Holding this lock for the lifetime of a
store turns a clash into a wait (up to a timeout) and then a clear :class:`KGLockedError` instead of an
engine I/O error, and it serialises concurrent ``KGStore.build`` calls on one directory. ``flock`` locks
belong to the open file, so two stores in one process also exclude each other.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from .errors import KGError, KGLockedError

LOCK_FILENAME = "kg.lock"
_POLL_S = 0.05


class DirLock:
    """The lock file ``<db_dir>/kg.lock``; one instance per open store."""

    def __init__(self, db_dir: Path) -> None:
        self.path = db_dir / LOCK_FILENAME
        self._fd: int | None = None
        self._exclusive = False

    def acquire(self, *, exclusive: bool, timeout: float) -> None:
        """Take the lock, polling for up to ``timeout`` seconds (0: try once).

        Raises:
            KGLockedError: another holder kept it for the whole timeout; names the holder if known.
        """
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise KGError(f"cannot create lock file {self.path}: {exc}") from exc
        flag = (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            try:
                fcntl.flock(fd, flag)
                break
            except OSError as exc:
                if not isinstance(exc, BlockingIOError):
                    os.close(fd)
                    raise KGError(
                        f"cannot lock {self.path} ({exc}); is the file system without flock support?"
                    ) from exc
                if time.monotonic() >= deadline:
                    holder = self._holder(fd)
                    os.close(fd)
                    wanted = "read-write" if exclusive else "read-only"
                    raise KGLockedError(
                        f"KG database directory {self.path.parent} is locked by {holder}; cannot open it "
                        f"{wanted} (waited {timeout:g} s). Kuzu allows one read-write process or several "
                        "read-only ones: close the other store first"
                    ) from None
                time.sleep(_POLL_S)
        self._fd = fd
        self._exclusive = exclusive
        if exclusive:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()} read-write\n".encode(), 0)

    @staticmethod
    def _holder(fd: int) -> str:
        try:
            info = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
        except OSError:
            info = ""
        return f"another store ({info})" if info else "another store (read-only)"

    def release(self) -> None:
        """Release the lock (idempotent)."""
        if self._fd is None:
            return
        try:
            if self._exclusive:
                os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            os.close(self._fd)
            self._fd = None
