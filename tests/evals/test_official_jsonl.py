"""`official_jsonl`: a JSON-lines file read as the official scripts read it (`open(path, encoding="utf-8")`,
a line per \\n, `json.loads` of each), checked against that very reading."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.core.formats import blank_lines_warning, official_jsonl, surrogate_free


def _official(path: Path) -> list:
    with open(path, encoding="utf-8") as f:  # the official readers' own loop
        return [json.loads(line) for line in f]


@pytest.mark.parametrize("body", [
    '{"a": 1}\n{"b": 2}\n', '{"a": 1}\r\n{"b": 2}', '{"a": 1}\r{"b": 2}\r', '{"a": "x\u2028y"}\n',
    '{"a": "x\x85y"}\n', '{"a": 1}   \n',
])
def test_lines_are_those_of_the_official_reader(tmp_path, body):
    path = tmp_path / "f.jsonl"
    path.write_bytes(body.encode("utf-8"))
    assert [v for _, v in official_jsonl(path).rows] == _official(path)


@pytest.mark.parametrize("body, line", [('{"a": 1}\n{"b": 2}\x0c\n', 2), ('{"a": 1}\x1e\n', 1),
                                        ('{"a": 1}\u2028\n', 1), ('\ufeff{"a": 1}\n', 1), ("[" * 3000 + "]" * 3000, 1)])
def test_a_line_the_official_reader_stops_on_is_an_error_naming_the_line(tmp_path, body, line):
    path = tmp_path / "f.jsonl"
    path.write_bytes(body.encode("utf-8"))
    with pytest.raises((ValueError, RecursionError)):
        _official(path)
    with pytest.raises(ValueError, match=rf"f.jsonl:{line}: not a JSON line for the official reader"):
        official_jsonl(path)


def test_str_splitlines_would_have_split_where_the_official_reader_does_not(tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_text('{"a": "x\u2028y", "b": "\x1d"}\n'.replace("\x1d", "\\u001d"), encoding="utf-8")
    assert len(path.read_text(encoding="utf-8").splitlines()) == 2  # the old reading: two lines, neither JSON
    assert official_jsonl(path).rows == [(1, {"a": "x\u2028y", "b": "\x1d"})]


def test_blank_lines_are_returned_to_warn_about_and_bytes_not_utf8_refused(tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_bytes(b'{"a": 1}\n\n  \n{"b": 2}\n\n')
    got = official_jsonl(path)
    assert got.blank == [2, 3, 5] and [n for n, _ in got.rows] == [1, 4]
    assert "blank lines 2, 3, 5: the official script stops at the first" in blank_lines_warning(path, got.blank)
    path.write_bytes(b'{"a": 1}\r{"b": "\xed\xa0\x80"}\n')
    with pytest.raises(ValueError, match=r"f.jsonl:2: not UTF-8"):
        official_jsonl(path)


def test_surrogate_free():
    assert surrogate_free({"a": ["x", 1, None]}) and not surrogate_free({"a": ["x\ud800"]})
    assert not surrogate_free({"\udfff": 1})


def test_metric_value_of_and_a_sample_near_the_float_maximum():
    """The value as the official script rounds it (``value_of``); samples of 1e200 (an imported judge
    score) give no standard error rather than an OverflowError (a fuzzer finding)."""
    from evals.core.metrics import Metric, TaskScore, aggregate

    def divided(n: float, d: float) -> float:
        return round(n / d * 100, 1)

    scores = [TaskScore({"m": (1.0 if i < 23 else 0.0, 1.0)}) for i in range(80)]
    assert aggregate([Metric("m", "m", digits=1)], scores)["m"].value == 28.8  # round(100 * 23 / 80, 1)
    assert aggregate([Metric("m", "m", digits=1, value_of=divided)], scores)["m"].value == 28.7  # eval.py's
    huge = aggregate([Metric("m", "m")], [TaskScore({"m": (1e200, 10.0)}), TaskScore({"m": (-1e200, 10.0)})])["m"]
    assert huge.stderr is None
