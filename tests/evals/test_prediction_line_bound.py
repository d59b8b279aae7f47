"""A predictions file given to ``evals score --format`` has no line past the bound (tool_specs.bounded_read.MAX_LINE_BYTES):
every reader kind refuses a longer one with FILE:LINE (exit 2, one ``error:`` line) and reads one exactly at it."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.cli import main
from evals.core.formats import official_jsonl
from evals.core.lines import universal_lines
from tool_specs import bounded_read as run_lines
from tool_specs.bounded_read import LineTooLong

BOUND = 16 << 10  # above the config.json the command writes and reads back (the bound is every file's)


@pytest.fixture(autouse=True)
def _small_bound(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(run_lines, "MAX_LINE_BYTES", BOUND)
    monkeypatch.setattr("evals.core.lines._CHUNK", 100)  # lines cross chunks
    monkeypatch.setattr("tool_specs.bounded_read._CHUNK", 100)
    monkeypatch.setenv("EVALS_DATA_DIR", str(tmp_path / "empty"))


def _json_line(size: int, end: str = "\n") -> str:
    """A JSON object line of exactly ``size`` bytes, its line end included."""
    head = '{"id": "x", "pad": "'
    return head + "a" * (size - len(head) - 2 - len(end)) + '"}' + end


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"])
def test_a_line_at_the_bound_is_read_and_one_past_it_refused(tmp_path: Path, end: str) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes((_json_line(10, end) + _json_line(BOUND, end)).encode())
    assert [n for n, _line, _end in universal_lines(path)] == [1, 2]
    assert [n for n, _value in official_jsonl(path).rows] == [1, 2]
    path.write_bytes((_json_line(10, end) + _json_line(BOUND + 1, end)).encode())
    with pytest.raises(LineTooLong, match=rf"f.jsonl:2: a line longer than {BOUND} bytes"):
        official_jsonl(path)
    path.write_bytes((_json_line(10, end) + "a" * 50 * BOUND).encode())  # no line end at all: refused early
    with pytest.raises(LineTooLong, match=r"f.jsonl:2: "):
        list(universal_lines(path))


@pytest.mark.parametrize(("fmt", "bench", "name"), [
    ("ultratool-official", "ultratool", "tool_usage.json"),  # official_jsonl (BFCL's, NesTools' reader too)
    ("toolhop-official", "toolhop", "output.jsonl"),
    ("complexfuncbench-official", "complexfuncbench", "result.jsonl"),
])
def test_evals_score_refuses_a_line_past_the_bound(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   fmt: str, bench: str, name: str) -> None:
    path = tmp_path / "model" / name
    path.parent.mkdir()
    path.write_text(_json_line(BOUND + 1) + _json_line(40), encoding="utf-8")  # the readers check lines as they read
    code = main(["score", str(path), "--format", fmt, "--benchmark", bench, "--out", str(tmp_path / "run")])
    said = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(said) == 1 and said[0].startswith("error:"), said
    assert f"{name}:1: a line longer than {BOUND} bytes" in said[0]


def test_a_whole_json_predictions_file_past_the_bound_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                  data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALS_DATA_DIR", str(data_dir))  # familytool's reader needs the benchmark's tasks
    path = tmp_path / "model" / "tool_use_results.json"
    path.parent.mkdir()
    argv = ["score", str(path), "--format", "familytool-official", "--benchmark", "familytool-e", "--out"]
    path.write_text("[\n" + " " * (BOUND - 4) + "\n]", encoding="utf-8")  # exactly the bound: read (an empty list)
    assert main([*argv, str(tmp_path / "run0")]) == 0
    capsys.readouterr()
    path.write_text("[\n" + " " * (BOUND - 3) + "\n]", encoding="utf-8")
    code = main([*argv, str(tmp_path / "run1")])
    said = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(said) == 1 and said[0].startswith("error:"), said
    assert f"tool_use_results.json:3: a whole file longer than {BOUND} bytes" in said[0]
