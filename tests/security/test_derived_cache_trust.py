"""The derived-data cache (evals.core.derived_cache) is the user's own and is read within bounds
(issue 46, items 4 and 5): an entry another user owns or may write is not used, however valid its
(public) signature; a damaged entry, a link, a FIFO or a folder where an entry would be is derived
again with a warning, never read without bound, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evals.core.derived_cache import cached_derivation, derived_cache_path, encode_entry, source_signature

ROOT = Path(__file__).resolve().parents[2]
NOBODY = 65534


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("EVALS_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _scores(src: Path) -> list[int]:
    return cached_derivation("scores", [src], lambda: [0, 0, 0])


def _forge(src: Path) -> Path:
    """An entry with the right (public) signature and a forged value, as another user could write it."""
    _scores(src)
    entry = derived_cache_path("scores", [src])
    entry.write_bytes(encode_entry(source_signature([src]), [100, 100, 100]))
    return entry


def test_an_entry_others_may_write_is_not_used(cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "gold.txt"
    src.write_text("gold\n")
    entry = _forge(src)
    os.chmod(entry, 0o666)
    assert _scores(src) == [0, 0, 0]
    assert "writable by other users" in capsys.readouterr().err
    assert _scores(src) == [0, 0, 0]  # rewritten as the user's own: used again


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_an_entry_or_folder_another_user_owns_is_not_used(cache: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "gold.txt"
    src.write_text("gold\n")
    entry = _forge(src)
    os.chown(entry, NOBODY, NOBODY)
    os.chmod(entry, 0o644)
    assert _scores(src) == [0, 0, 0]
    assert "owned by another user" in capsys.readouterr().err
    _forge(src)
    os.chown(entry.parent, NOBODY, NOBODY)  # the whole folder another user's: nothing in it is read
    assert _scores(src) == [0, 0, 0]
    assert f"{entry.parent}: owned by another user" in capsys.readouterr().err


def test_a_derived_folder_others_may_write_is_made_private(cache: Path, tmp_path: Path) -> None:
    src = tmp_path / "gold.txt"
    src.write_text("gold\n")
    entry = _forge(src)
    os.chmod(entry.parent, 0o777)
    assert _scores(src) == [100, 100, 100]  # the user's own entry in the user's own folder: used
    assert entry.parent.stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("kind", ["link-to-dev-zero", "fifo", "folder", "old-marshal-bomb"])
def test_an_entry_that_is_no_regular_file_or_a_bomb_is_derived_again(kind: str, cache: Path, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "gold.txt"
    src.write_text("gold\n")
    _scores(src)
    entry = derived_cache_path("scores", [src])
    entry.unlink()
    if kind == "link-to-dev-zero":
        entry.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(entry)  # nobody writes it: reading it would wait for ever
    elif kind == "folder":
        entry.mkdir()
    else:
        entry.write_bytes(b"[\xff\xff\xff\x7f")  # marshal: a list of 2**31-1 items (16 GB of pointers)
    assert _scores(src) == [0, 0, 0]
    assert "derived again" in capsys.readouterr().err


FLIPS = """
import random, resource, sys
from pathlib import Path
from evals.core.derived_cache import cached_derivation, derived_cache_path

src = Path(sys.argv[1])
value = [{"id": f"task-{i}", "calls": [("tool", i, float(i) / 3, None, True)], "tags": {"a", "b"}} for i in range(200)]
built = []
changed = 0

def build():
    built.append(1)
    return value

assert cached_derivation("flips", [src], build) == value
entry = derived_cache_path("flips", [src])
good = entry.read_bytes()
with open("/proc/self/status") as f:
    vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
limit = vm + 256 * 2**20  # room for this size of file many times over; not for a 16 GB list
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
rng = random.Random(46)
bombs = [b"[\\xff\\xff\\xff\\x7f", b"(\\xff\\xff\\xff\\x7f", b"{" * 100000, good[:60] + b"[\\xff\\xff\\xff\\x7f"]
for i in range(int(sys.argv[2])):
    data = bytearray(good)
    for _ in range(rng.choice((1, 1, 2, 8))):
        data[rng.randrange(len(data))] = rng.randrange(256)
    if i < len(bombs):
        data = bytearray(bombs[i])
    changed += data != good
    entry.write_bytes(bytes(data))
    assert cached_derivation("flips", [src], build) == value, i
print("ok", len(built) - 1, changed)
"""


def test_random_byte_flips_never_raise_nor_allocate_beyond_the_file(tmp_path: Path) -> None:
    src = tmp_path / "source.txt"
    src.write_text("the source\n")
    env = {**os.environ, "EVALS_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", FLIPS, str(src), "1500"], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out: Any = done.stdout.split()
    assert out[0] == "ok" and int(out[1]) == int(out[2]) > 1450  # every damaged entry derived again, none trusted
    assert done.stderr.count("warning:") == 1  # once per entry
