"""Where benchmark data lives, and clear errors when it is not there.

The data directory is ``$EVALS_DATA_DIR`` when set; otherwise ``../shared/data`` beside the checkout
when that directory exists (the same rule ``./run.sh`` and ``.venv/bin/evals`` follow, wherever they
are started from); otherwise a per-user cache directory (``$XDG_CACHE_HOME/mcp-multihop-evals/data``,
default ``~/.cache/...``).  The project never
ships benchmark files: ``evals serve`` and ``evals run`` download the missing ones on first use
(:mod:`evals.fetch`); ``.ci/run`` and the tests point ``EVALS_DATA_DIR`` at ``../shared/data``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .derived_cache import CACHE_ENV, cache_dir, cached_derivation

__all__ = [
    "CACHE_ENV", "DATA_ENV", "DataNotFound", "RemoteFile", "cache_dir", "data_dir", "data_file", "read_jsonl",
    "shared_data_dir",
]

DATA_ENV = "EVALS_DATA_DIR"


class DataNotFound(FileNotFoundError):
    """A benchmark file is missing; the message says where it was looked for and how to fix it."""


def shared_data_dir() -> Path:
    """``../shared/data`` beside the checkout this package is in (it may not exist)."""
    return Path(__file__).resolve().parents[3] / "shared" / "data"


def data_dir() -> Path:
    """The benchmark data directory: ``$EVALS_DATA_DIR``, else ``../shared/data`` beside the
    checkout when it exists, else the user cache."""
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV]).expanduser()
    shared = shared_data_dir()
    if shared.is_dir():
        return shared
    return cache_dir() / "data"


def data_file(*parts: str) -> Path:
    """Path of a data file, raising :class:`DataNotFound` with a fix-it message if absent."""
    root = data_dir()
    path = root.joinpath(*parts)
    if not path.is_file():
        where = f"${DATA_ENV}={os.environ[DATA_ENV]}" if os.environ.get(DATA_ENV) else f"the default {root}"
        raise DataNotFound(
            f"benchmark file {'/'.join(parts)!r} not found under {where} (looked for {path}). "
            f"Point {DATA_ENV} at a directory holding the benchmark data (e.g. ../shared/data), or download "
            f"it: `evals data fetch SOURCE` (`evals data fetch --help` lists the sources)."
        )
    return path


@dataclass(frozen=True)
class RemoteFile:
    """One pinned file: where it goes under the data dir and where it comes from."""

    dest: str  # relative to the data dir
    url: str
    sha256: str
    size: int
    pinned_path: str | None = None  # the part of ``url`` a ``url_prefix`` keeps (default: after the commit)

    def mirror_url(self, prefix: str) -> str:
        tail = self.pinned_path if self.pinned_path is not None else self.url.split("/", 6)[6]
        return prefix.rstrip("/") + "/" + tail


def read_jsonl(path: Path) -> list[Any]:
    """The JSON values of ``path``'s non-blank lines; a line that is not JSON is a :class:`ValueError`
    naming the file and the line. Read from the user cache while the file is the same
    (:mod:`~evals.core.derived_cache`: marshal reads a data file's values about three times faster)."""
    from client._runs import jsonl  # on use: `evals --help` imports this module

    return cached_derivation(f"jsonl-{path.stem}", [path], lambda: [value for _, value in jsonl.iter_jsonl(path)],
                             code=[__file__, jsonl.__file__])
