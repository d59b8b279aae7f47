"""The task file: the published schema, every problem at once with FILE:LINE, and the answer matchers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from evals.benchmarks.usertasks.answers import match_answer, normalize_answer_spec
from evals.benchmarks.usertasks.refs import UNRESOLVED, resolve_arguments
from evals.benchmarks.usertasks.taskfile import SCHEMA_PATH, TaskFileError, load_task_file
from evals.cli import main

EXAMPLES = Path(__file__).resolve().parents[4] / "docs" / "examples"


def test_the_schema_is_valid_and_the_examples_follow_it() -> None:
    Draft202012Validator.check_schema(json.loads(SCHEMA_PATH.read_text()))
    family = load_task_file(EXAMPLES / "family" / "family_tasks.yaml")
    time = load_task_file(EXAMPLES / "time" / "time_tasks.jsonl")
    assert len(family) == len(time) == 10
    f09 = next(t for t in family if t.id == "f09")
    assert f09.system and f09.user_text.startswith("Send him") and [m["role"] for m in f09.history] == ["user", "assistant"]
    assert next(t for t in time if t.id == "t09").ordered is False


BAD_JSONL = [
    '{"id": "a", "query": "q", "answer": "x"}',
    '{"id": "a", "query": "again", "answer": "x"}',  # the same id
    '{"id": "b", "query": "q", "calls": [{"name": "f", "argumentz": {}}]}',  # unknown key
    '{"id": "c", "query": "q", "messages": [{"role": "user", "content": "q"}], "answer": "x"}',  # both
    '{"id": "d", "query": "q"}',  # neither calls nor answer
    '{"id": "e", "query": "q", "calls": [{"name": "f", "arguments": {"x": {"$from": "later"}}}, {"id": "later", "name": "g"}]}',
    '{"id": "f", "query": "q", "answer": {"type": "regex", "pattern": "("}}',  # no example, bad pattern
    '{"id": "g", "query": "q", "answer": {"type": "number", "value": "ten"}}',
    '{"id": "h h", "query": "q", "answer": "x"}',  # not a usable id
    '{"id": "i", "query": "q", "tools": ["f"], "calls": [{"name": "g"}]}',  # gold tool not offered
    "{not json",
    '{"id": "j", "query": "q", "answer": {"type": "exact", "value": "10:00", "example": "at 9"}}',
]


def test_every_problem_of_a_jsonl_file_is_reported_at_once_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(BAD_JSONL) + "\n")
    with pytest.raises(TaskFileError) as err:
        load_task_file(path)
    lines = {int(p.split(":")[1]) for p in err.value.problems}
    assert lines == set(range(2, len(BAD_JSONL) + 1)), err.value.problems
    text = str(err.value)
    for expected in ("used twice", "argumentz", "exactly one of 'query' and 'messages'", "give the gold 'calls'",
                     "not an earlier call", "'example' is a required property", "not of type 'number'",
                     "does not match", "not among the task's tools", "invalid JSON", "does not satisfy"):
        assert expected in text, expected


def test_yaml_problems_point_at_the_line_of_the_bad_value(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("tasks:\n  - id: ok\n    query: q\n    answer: x\n  - id: two\n    query: q\n"
                    "    calls:\n      - name: f\n        arguments: [1]\n    order: sideways\n")
    with pytest.raises(TaskFileError) as err:
        load_task_file(path)
    assert sorted(p.split(": task")[0] for p in err.value.problems) == [f"{path}:10", f"{path}:9"]
    path.write_text("- id: a\n  query: [unclosed\n")
    with pytest.raises(TaskFileError, match=r"bad.yaml:3: invalid YAML"):
        load_task_file(path)


def test_a_bad_task_file_exits_2_with_one_error_block_and_no_traceback(tmp_path: Path, capsys) -> None:
    folder = tmp_path / ("a-long-folder-name-" * 6)  # the FILE:LINE lines are not wrapped at the console's width
    folder.mkdir()
    path = folder / "bad.jsonl"
    path.write_text("\n".join(BAD_JSONL[:3]) + "\n")
    assert main(["run", "taskfile", "--tasks", str(path), "--model", "oracle", "--run-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"{path}:2: task 'a'" in err and f"{path}:3: task 'b'" in err
    assert not (tmp_path / "r").exists()
    assert main(["run", "taskfile", "--model", "oracle", "--run-dir", str(tmp_path / "r")]) == 2
    assert "needs --tasks FILE" in capsys.readouterr().err


@pytest.mark.parametrize(("spec", "answer", "ok"), [
    ("Lena", "lena.", True),
    ("Lena", "It is Lena.", False),
    ({"type": "normalized", "value": "the Lena", "contains": True}, "Her mother is Lena, I think", True),
    ({"type": "normalized", "value": "Len", "contains": True}, "Lena", False),
    ({"type": "exact", "value": ["13:00", "1 pm"]}, " 1 pm ", True),
    ({"type": "exact", "value": "13:00", "contains": True}, "at 13:00 in Tokyo", True),
    ({"type": "regex", "pattern": "^OK", "ignore_case": True, "example": "ok"}, "ok then", True),
    ({"type": "number", "value": 3.5, "tolerance": 0.01}, "about 3.5 hours", True),
    ({"type": "number", "value": 1000}, "1,000 people", True),
    ({"type": "number", "value": 100, "tolerance": 0.05, "relative": True}, "104", True),
    ({"type": "number", "value": 100, "tolerance": 0.05, "relative": True}, "106", False),
    ({"type": "number", "value": 2}, None, False),
])
def test_answer_matching(spec: object, answer: str | None, ok: bool) -> None:
    assert match_answer(normalize_answer_spec(spec), answer) is ok


def test_references_resolve_paths_and_patterns() -> None:
    result = {"paths": [[["Maya", "mother", "Lena"], ["Lena", "phone", "phone_0001"]]], "datetime": "2026-01-01T09:05:00+09:00"}
    args = {"phone": {"$from": "0", "path": "paths.0.1.2"}, "time": {"$from": "0", "path": "datetime", "pattern": r"T(\d\d:\d\d)"},
            "nested": [{"$from": "0", "path": "paths.9"}], "plain": 3}
    got = resolve_arguments(args, lambda cid: result if cid == "0" else UNRESOLVED)
    assert got == {"phone": "phone_0001", "time": "09:05", "nested": [UNRESOLVED], "plain": 3}
    assert resolve_arguments(args, lambda cid: UNRESOLVED)["phone"] == UNRESOLVED
