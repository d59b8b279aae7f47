"""Which set of tasks a run is of, its *dataset*: runs of different sets are never ranked, listed or
compared as one (``evals view``, ``evals leaderboard``).

A benchmark whose tasks are whatever file a run is given declares the option that names the file
(:attr:`~evals.core.plugin.BenchmarkInfo.dataset_option`). Its runs' ``config.json`` records
``"dataset": {"name": <the file's name>, "sha256": <its checksum, as in "data">}``; a run written before
that key existed gets the same identity from its ``options`` and ``data``. A benchmark without the
option has one set of tasks (its data files are pinned): its dataset is ``None``, and its runs go
together by benchmark name alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

from .plugin import BenchmarkInfo

__all__ = ["dataset_identity", "dataset_key", "dataset_label", "run_dataset"]

SHORT_SHA = 12  # hex digits of the checksum a label shows


def dataset_identity(info: BenchmarkInfo | None, options: Mapping[str, Any], data: Mapping[str, Any]) -> dict[str, Any] | None:
    """``{"name", "sha256"}`` of the file the benchmark's ``dataset_option`` names (``sha256`` None when
    ``data`` has no checksum of it); None for a benchmark without the option, or a run without the file."""
    option = info.dataset_option if info is not None else None
    value = options.get(option) if option else None
    if not value:
        return None
    name = PurePath(str(value)).name
    sha = data.get(name)
    return {"name": name, "sha256": sha if isinstance(sha, str) and sha else None}


def run_dataset(config: Mapping[str, Any]) -> dict[str, Any] | None:
    """A run's dataset from its ``config.json``: the ``dataset`` it records, else the one its benchmark's
    declared option gives (a run written before the key existed)."""
    given = config.get("dataset")
    if isinstance(given, Mapping):
        sha = given.get("sha256")
        return {"name": str(given.get("name") or "?"), "sha256": sha if isinstance(sha, str) and sha else None}
    if given is not None:  # a value of another type: not an identity (never grouped with a real one)
        return {"name": str(given)[:200], "sha256": None}
    from .registry import all_benchmarks

    try:
        info = all_benchmarks().get(str(config.get("benchmark")))
    except Exception:  # pragma: no cover - a broken benchmark folder must not hide the other runs
        info = None
    options, data = config.get("options"), config.get("data")
    return dataset_identity(info, options if isinstance(options, Mapping) else {}, data if isinstance(data, Mapping) else {})


def dataset_key(dataset: Mapping[str, Any] | None) -> str:
    """A string equal for runs of the same dataset only (``""``: a benchmark with one set of tasks)."""
    if dataset is None:
        return ""
    return f"{dataset.get('name')}\x00{dataset.get('sha256') or ''}"


def dataset_label(dataset: Mapping[str, Any] | None) -> str:
    """``family_tasks.yaml (sha256 1a2b3c4d5e6f)``; ``""`` for None."""
    if dataset is None:
        return ""
    sha = dataset.get("sha256")
    return f"{dataset.get('name')} (sha256 {sha[:SHORT_SHA]})" if isinstance(sha, str) else f"{dataset.get('name')} (no checksum)"
