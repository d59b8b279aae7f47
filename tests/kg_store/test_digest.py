"""The one file digest (kg_store.digest): the bytes' SHA-256, read once per version of a file."""

from __future__ import annotations

import builtins
import hashlib
import os
import time
from pathlib import Path
from typing import Any

import pytest

from kg_store import digest
from kg_store.digest import RACY_NS, file_sha256


@pytest.fixture
def opens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files :func:`file_sha256` opens (it reads only what it opens)."""
    seen: list[str] = []

    def counted(path: Any, *args: Any, **kw: Any) -> Any:
        seen.append(str(path))
        return builtins.open(path, *args, **kw)

    monkeypatch.setattr(digest, "open", counted, raising=False)
    monkeypatch.setattr(digest, "_remembered", {})
    return seen


def _later(monkeypatch: pytest.MonkeyPatch, ns: int) -> None:
    real = time.time_ns
    monkeypatch.setattr(time, "time_ns", lambda: real() + ns)


def test_the_digest_is_the_sha256_of_the_bytes(tmp_path: Path) -> None:
    f = tmp_path / "a.bin"
    f.write_bytes(b"x" * 3_000_000)  # more than one chunk
    assert file_sha256(f) == file_sha256(str(f)) == hashlib.sha256(b"x" * 3_000_000).hexdigest()


def test_a_settled_file_is_read_once(tmp_path: Path, opens: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "a.txt"
    f.write_text("abc")
    _later(monkeypatch, RACY_NS)  # its status changed two seconds ago
    assert file_sha256(f) == file_sha256(f) == hashlib.sha256(b"abc").hexdigest()
    assert opens == [str(f)]


def test_a_file_changed_within_the_racy_window_is_read_every_time(tmp_path: Path, opens: list[str]) -> None:
    f = tmp_path / "a.txt"
    f.write_text("abc")
    file_sha256(f)
    file_sha256(f)
    assert opens == [str(f), str(f)]  # the kernel's clock could leave a second change unseen: not remembered


def test_bytes_changed_in_place_with_size_and_mtime_put_back_are_read_again(tmp_path: Path) -> None:
    """Issue 46 item 3's change: same inode, size and mtime; only the ctime (the kernel's) moves."""
    f = tmp_path / "a.txt"
    f.write_text("abc")
    first = file_sha256(f)
    st = f.stat()
    with open(f, "r+b") as fh:
        fh.write(b"xyz")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert f.stat().st_size == st.st_size and f.stat().st_mtime_ns == st.st_mtime_ns
    assert file_sha256(f) == hashlib.sha256(b"xyz").hexdigest() != first


def test_a_missing_file_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        file_sha256(tmp_path / "none")
