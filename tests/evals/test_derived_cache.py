"""The user cache of what a run derives from files (evals.core.derived_cache): used only while its
sources and the code are the same, and a damaged entry is derived again, never trusted."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evals.benchmarks.familytool import data as familytool
from evals.core.derived_cache import (
    FORMAT,
    MAGIC,
    cached_derivation,
    derived_cache_path,
    encode_entry,
    source_signature,
)
from evals.report.paper import load_paper_numbers
from tool_specs import remember_normalizations, remembered_normalizations

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("EVALS_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


class Counted:
    """A derivation that counts its calls: the lines of a file, upper-cased."""

    def __init__(self, path: Path) -> None:
        self.path, self.calls = path, 0

    def __call__(self) -> list[str]:
        self.calls += 1
        return [line.upper() for line in self.path.read_text().splitlines()]


def derive(src: Path, build: Counted, code: list[Path] | None = None) -> Any:
    return cached_derivation("lines", [src], build, code=code or [])


def test_a_second_call_reads_the_entry_instead_of_deriving(cache: Path, tmp_path: Path) -> None:
    src = tmp_path / "src.txt"
    src.write_text("a\nb\n")
    build = Counted(src)
    assert derive(src, build) == ["A", "B"]
    assert derive(src, build) == ["A", "B"]
    assert build.calls == 1
    assert derived_cache_path("lines", [src]).is_file()


def test_a_source_changed_in_place_is_derived_again_even_with_its_old_size_and_mtime(cache: Path, tmp_path: Path) -> None:
    src = tmp_path / "src.txt"
    src.write_text("a\nb\n")
    build = Counted(src)
    derive(src, build)
    st = src.stat()
    src.write_text("c\nd\n")  # same size; the old modification time put back: only the checksum differs
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert derive(src, build) == ["C", "D"]
    assert build.calls == 2
    assert derive(src, build) == ["C", "D"] and build.calls == 2  # the new entry is kept


def test_changed_code_is_derived_again(cache: Path, tmp_path: Path) -> None:
    src, code = tmp_path / "src.txt", tmp_path / "deriver.py"
    src.write_text("a\n")
    code.write_text("VERSION = 1\n")
    build = Counted(src)
    derive(src, build, [code])
    code.write_text("VERSION = 2\n")
    derive(src, build, [code])
    assert build.calls == 2


@pytest.mark.parametrize("damage", [
    lambda entry: entry.write_bytes(entry.read_bytes()[: len(entry.read_bytes()) // 2]),  # truncated
    lambda entry: entry.write_bytes(b"\x00garbage\xff" * 10),  # not marshal
    lambda entry: entry.write_bytes(b""),  # empty
    lambda entry: entry.write_bytes(MAGIC + (FORMAT + 1).to_bytes(2, "little") + entry.read_bytes()[6:]),  # another format
    lambda entry: entry.write_bytes(marshal.dumps(["not", "a", "tuple"])),  # an entry of the old format
    lambda entry: entry.write_bytes(encode_entry([("/elsewhere", 1, 2, "00")], ["FORGED"])),  # another signature
], ids=["truncated", "garbage", "empty", "other-format", "other-shape", "other-signature"])
def test_a_damaged_entry_is_ignored_derived_again_and_rewritten(cache: Path, tmp_path: Path, damage: Any) -> None:
    src = tmp_path / "src.txt"
    src.write_text("a\nb\n")
    build = Counted(src)
    derive(src, build)
    damage(derived_cache_path("lines", [src]))
    assert derive(src, build) == ["A", "B"]
    assert build.calls == 2
    assert derive(src, build) == ["A", "B"] and build.calls == 2


def test_an_entry_the_decoder_refuses_is_derived_again(cache: Path, tmp_path: Path) -> None:
    src = tmp_path / "src.txt"
    src.write_text("a\n")
    calls = []

    def decode(raw: Any) -> list[str]:
        if not (isinstance(raw, list) and all(isinstance(x, str) for x in raw)):
            raise TypeError("not a list of lines")
        return list(raw)

    def build() -> list[str]:
        calls.append(1)
        return ["A"]

    cached_derivation("lines", [src], build, decode=decode)
    entry = derived_cache_path("lines", [src])
    entry.write_bytes(encode_entry(source_signature([src]), [1, 2]))  # a valid entry of a wrong value
    assert cached_derivation("lines", [src], build, decode=decode) == ["A"]
    assert len(calls) == 2


def test_a_value_marshal_cannot_hold_or_an_unwritable_cache_goes_without(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "src.txt"
    src.write_text("a\n")
    monkeypatch.setenv("EVALS_CACHE_DIR", str(tmp_path / "cache"))
    assert cached_derivation("obj", [src], lambda: [Path("x")]) == [Path("x")]
    assert not derived_cache_path("obj", [src]).exists()
    (tmp_path / "blocked").write_text("a file where the cache directory would be")
    monkeypatch.setenv("EVALS_CACHE_DIR", str(tmp_path / "blocked"))
    assert cached_derivation("lines", [src], lambda: ["A"]) == ["A"]


def test_a_missing_source_is_the_same_error_as_reading_it(cache: Path, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        cached_derivation("lines", [tmp_path / "missing.txt"], lambda: ["A"])


def test_remember_normalizations_refuses_what_it_did_not_return() -> None:
    for bad in ([], ([], ), ([(("a",), ("s", ()))], []), ([(("a", "b"), ("s", (1,)))], [])):
        with pytest.raises(ValueError):
            remember_normalizations(bad)  # type: ignore[arg-type]
    remember_normalizations(remembered_normalizations())  # its own results go back in


def test_familytool_tasks_from_the_cache_are_the_files_tasks(data_dir: Path, cache: Path) -> None:
    path = data_dir / "familytool" / "familytool-b.jsonl"
    parsed = familytool._parse_tasks("b", path)
    first = familytool.load_tasks("b", path)
    entry = derived_cache_path("familytool-b-tasks", [path, Path(familytool.__file__)])
    assert entry.is_file()
    again = familytool.load_tasks("b", path)
    assert first == parsed and again == parsed
    assert [t.candidate_tools for t in again] == [t.candidate_tools for t in parsed]
    assert [[list(tool) for tool in t.candidate_tools] for t in again] == [[list(tool) for tool in t.candidate_tools] for t in parsed]
    entry.write_bytes(entry.read_bytes()[:1000])
    assert familytool.load_tasks("b", path) == parsed


SPECS = """
import json, sys
from evals.benchmarks.familytool.data import load_catalog
print(json.dumps([s.model_dump(exclude={"executor"}) for s in load_catalog("b").playground_tools()]))
"""


def test_familytool_tool_specs_are_the_same_from_the_cache_and_from_a_damaged_one(data_dir: Path, cache: Path) -> None:
    env = {**os.environ, "EVALS_CACHE_DIR": str(cache), "EVALS_DATA_DIR": str(data_dir), "PYTHONPATH": str(ROOT)}

    def specs() -> str:
        return subprocess.run([sys.executable, "-c", SPECS], env=env, capture_output=True, text=True,
                              check=True, timeout=120).stdout

    first = specs()
    entries = sorted((cache / "derived").glob("familytool-b-schemas-*.marshal"))
    assert len(entries) == 1
    assert specs() == first  # the normalisations from the cache
    from evals.core.derived_cache import _decode_entry

    entries[0].write_bytes(encode_entry(_decode_entry(entries[0].read_bytes())[0], (["x"], [])))
    assert specs() == first  # an entry remember_normalizations refuses: normalised again
    assert json.loads(first)[0]["input_schema"]["type"] == "object"


def test_paper_numbers_follow_their_file(cache: Path, tmp_path: Path) -> None:
    paper = tmp_path / "paper_numbers.yaml"
    table = "paper: P\ntables:\n  - table: 1\n    setting: {dataset: d}\n    rows:\n      - {model: m, metrics: {acc: %s}}\n"
    paper.write_text(table % "10.0")
    assert [r.metrics for r in load_paper_numbers(paper)] == [{"acc": 10.0}]
    assert [r.metrics for r in load_paper_numbers(paper)] == [{"acc": 10.0}]
    paper.write_text(table % "20.0")
    assert [r.metrics for r in load_paper_numbers(paper)] == [{"acc": 20.0}]


def test_read_jsonl_follows_its_file_and_keeps_every_value_exactly(cache: Path, tmp_path: Path) -> None:
    from evals.core.data import read_jsonl

    path = tmp_path / "rows.jsonl"
    rows = [{"b": 1, "a": [0.1, 1e-300, None, True]}, "text", 3]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert read_jsonl(path) == rows and read_jsonl(path) == rows
    assert list(read_jsonl(path)[0]) == ["b", "a"]  # key order kept
    path.write_text(json.dumps({"c": 2}) + "\n")
    assert read_jsonl(path) == [{"c": 2}]
    path.write_text("{not json\n")
    with pytest.raises(ValueError, match="rows.jsonl"):
        read_jsonl(path)

