"""Where benchmark data lives, and clear errors when it is not there.

The data directory is ``$EVALS_DATA_DIR`` when set, otherwise a per-user cache directory
(``$XDG_CACHE_HOME/mcp-multihop-evals/data``, default ``~/.cache/...``).  The project never
ships benchmark files: ``evals serve`` and ``evals run`` download the missing ones on first use
(:mod:`evals.fetch`); ``.ci/run`` and the tests point ``EVALS_DATA_DIR`` at ``../shared/data``.
"""

from __future__ import annotations

import os
from pathlib import Path

DATA_ENV = "EVALS_DATA_DIR"
CACHE_ENV = "EVALS_CACHE_DIR"


class DataNotFound(FileNotFoundError):
    """A benchmark file is missing; the message says where it was looked for and how to fix it."""


def cache_dir() -> Path:
    """Root of the project's per-user cache (KG databases, downloads)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "mcp-multihop-evals"


def data_dir() -> Path:
    """The benchmark data directory (``$EVALS_DATA_DIR`` or the user cache)."""
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV]).expanduser()
    return cache_dir() / "data"


def data_file(*parts: str) -> Path:
    """Path of a data file, raising :class:`DataNotFound` with a fix-it message if absent."""
    root = data_dir()
    path = root.joinpath(*parts)
    if not path.is_file():
        where = f"${DATA_ENV}={os.environ[DATA_ENV]}" if os.environ.get(DATA_ENV) else f"the default {root}"
        fetch = f", or download it: `evals data fetch {parts[0]}`" if parts[0] in ("familytool", "toolhop") else ""
        raise DataNotFound(
            f"benchmark file {'/'.join(parts)!r} not found under {where} (looked for {path}). "
            f"Point {DATA_ENV} at a directory holding the benchmark data (e.g. ../shared/data){fetch}."
        )
    return path
