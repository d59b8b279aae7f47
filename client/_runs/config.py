"""A run's ``config.json``: written once, compared on every re-open.

The first :class:`~client.runs.RunDir` given a config writes it with ``created_at``,
``package_version``, ``hash_keys`` and ``config_hash`` (created atomically, so two processes starting
the same run agree on one file). Later opens compare the hash keys' values with the stored ones and
raise :class:`RunConfigMismatch` naming every difference; ``force=True`` (Python API only) reuses
the run anyway, logging the new config to ``config.history.jsonl``.

``read_config``, ``create_config`` and ``settle_config`` are helpers of ``RunDir``, not part of the
public API.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tool_specs.bounded_read import bounded_bytes

from .jsonl import disk_full
from .jsonutil import canonical_json, dumps_line, json_default, now_iso, short_json, to_jsonable
from .nofollow import open_run_file, write_run_text
from .secrets import redact_secrets

__all__ = ["DEFAULT_HASH_KEYS", "RunConfigMismatch", "config_hash", "package_version"]

log = logging.getLogger(__name__)

DEFAULT_HASH_KEYS: tuple[str, ...] = ("benchmark", "model", "strategy", "options")
"""Config keys that change results by default (not concurrency, limit, output paths)."""

CONFIG_FILE = "config.json"
CONFIG_HISTORY_FILE = "config.history.jsonl"
_META_KEYS = frozenset({"created_at", "package_version", "config_hash", "hash_keys"})


class RunConfigMismatch(Exception):
    """An existing run directory was re-opened with a config that differs in a result-changing key.

    Attributes:
        path: the run directory.
        differences: ``{dotted_key: (value_in_run, value_now)}``.
    """

    def __init__(self, path: Path, differences: dict[str, tuple[Any, Any]]) -> None:
        self.path = path
        self.differences = differences
        super().__init__(
            f"{self.describe()}. To resume this run, rerun with the settings it was created with; "
            f"to run with the new settings, use another run directory (--run-dir)."
        )

    def describe(self) -> str:
        """The mismatch itself, without the advice: which keys differ, with both values."""
        parts = [
            f"{key!r} is {short_json(old)} there but {short_json(new)} now"
            for key, (old, new) in self.differences.items()
        ]
        return f"run directory {str(self.path)!r} was created with a different config: {'; '.join(parts)}"


def package_version() -> str:
    """The installed version of this project (``"unknown"`` when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mcp-multihop-evals")
    except PackageNotFoundError:
        return "unknown"


def config_hash(config: Mapping[str, Any], keys: Sequence[str]) -> str:
    """sha256 (hex) of the canonical JSON of ``{key: config.get(key)}`` over ``keys`` (a missing key is null)."""
    subset = {k: config.get(k) for k in sorted(set(keys))}
    return hashlib.sha256(canonical_json(subset).encode("utf-8")).hexdigest()


def _diff(old: Any, new: Any, prefix: str, out: dict[str, tuple[Any, Any]]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new), key=str):
            _diff(old.get(key), new.get(key), f"{prefix}.{key}", out)
    elif old != new:
        out[prefix] = (old, new)


def read_config(run_path: Path) -> dict[str, Any] | None:
    """The run's ``config.json``, or ``None`` when there is none; ``ValueError`` when it is not a JSON object."""
    path = run_path / CONFIG_FILE
    try:
        raw = bounded_bytes(path, fd=open_run_file(path, os.O_RDONLY))  # untrusted: past MAX_LINE_BYTES, LineTooLong
    except FileNotFoundError:
        return None
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc}); fix or remove it") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


def create_config(run_path: Path, record: Mapping[str, Any]) -> bool:
    """Write ``config.json`` only if it does not exist (atomic create via a hard link); whether it did."""
    path = run_path / CONFIG_FILE
    tmp = run_path / f".{CONFIG_FILE}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    text = json.dumps(record, indent=2, ensure_ascii=False, default=json_default) + "\n"
    try:
        write_run_text(tmp, text)
    except OSError as exc:  # a full disk: no half-written temporary file is left behind
        tmp.unlink(missing_ok=True)
        raise disk_full(exc, path) from exc
    try:
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    except OSError as exc:  # file systems without hard links
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise disk_full(exc, path) from exc
        if path.exists():
            return False
        os.replace(tmp, path)
        return True
    finally:
        tmp.unlink(missing_ok=True)


def settle_config(
    run_path: Path,
    stored: dict[str, Any] | None,
    config: Mapping[str, Any],
    hash_keys: Sequence[str] | None,
    force: bool,
) -> tuple[dict[str, Any], str]:
    """Reconcile ``config`` with the run's stored config (``None``: none yet, create it).

    Returns the run's config (as in ``config.json``) and the hash the run's new traces carry. Raises
    :class:`RunConfigMismatch` when a hash key differs, unless ``force``.
    """
    # tuples -> lists etc., so comparisons are about JSON values; a key, token or password is never
    # written (nor hashed: a run resumed with another key is the same run)
    config = redact_secrets(to_jsonable(dict(config)))
    if stored is None:
        keys = list(hash_keys) if hash_keys is not None else list(DEFAULT_HASH_KEYS)
        record = {k: v for k, v in config.items() if k not in _META_KEYS}
        record.update(
            created_at=now_iso(),
            package_version=package_version(),
            hash_keys=keys,
            config_hash=config_hash(config, keys),
        )
        if create_config(run_path, record):
            return record, record["config_hash"]
        stored = read_config(run_path)  # another process created it first: compare with that
        assert stored is not None
    keys = list(hash_keys) if hash_keys is not None else list(stored.get("hash_keys") or DEFAULT_HASH_KEYS)
    differences: dict[str, tuple[Any, Any]] = {}
    for key in keys:
        _diff(stored.get(key), config.get(key), key, differences)
    new_hash = config_hash(config, keys)
    if not differences:
        return stored, stored.get("config_hash") or new_hash
    mismatch = RunConfigMismatch(run_path, differences)
    if not force:
        raise mismatch
    log.warning("%s (forced)", mismatch.describe())
    entry = {
        "at": now_iso(),
        "forced": True,
        "differences": sorted(differences),
        "config_hash": new_hash,
        "config": config,
    }
    fd = open_run_file(run_path / CONFIG_HISTORY_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    with os.fdopen(fd, "a", encoding="utf-8") as f:
        f.write(dumps_line(entry) + "\n")
    return stored, new_hash
