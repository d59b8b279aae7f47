"""A task file or a spec file that is wrong deep inside is one line naming FILE:LINE, never a
traceback (issue 46, item 13): an integer of 401 digits where a task file wants a number (``float``
overflows), a problem deep in the schema of an OpenAI-tools JSON file or a BFCL JSON Lines file (no
line was given), a schema nested past the 64 levels normalisation takes (line 1 was given)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.cli import main
from tool_specs import SpecLoadError, load_tool_file

TEN_TO_THE_400 = "1" + "0" * 400


@pytest.mark.parametrize("answer", [f"{{type: number, value: {TEN_TO_THE_400}}}",
                                    f"{{type: number, value: 5, tolerance: {TEN_TO_THE_400}}}"], ids=["value", "tolerance"])
def test_an_integer_past_float_in_a_task_file_is_a_file_line_error(answer: str, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(f"- id: a\n  query: q\n  answer: x\n- id: b\n  query: q\n  answer: {answer}\n")
    capsys.readouterr()
    assert main(["run", "taskfile", "--tasks", str(path), "--model", "oracle", "--run-dir", str(tmp_path / "r"),
                 "--no-progress"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"{path}:6: task 'b': answer." in err and "must be a finite number" in err
    assert "Traceback" not in err and not (tmp_path / "r").exists()


def _nested(depth: int, leaf: dict[str, object]) -> dict[str, object]:
    schema = leaf
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


def _problem_line(path: Path) -> int | None:
    with pytest.raises(SpecLoadError) as caught:
        load_tool_file(path)
    assert str(caught.value).startswith(f"{path}:{caught.value.line}: tool #")
    return caught.value.line


def test_a_problem_deep_in_an_openai_tools_file_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    tools = [{"type": "function", "function": {"name": "t", "description": "d",
                                                "parameters": {"type": "object", "properties": {"x": _nested(5, {"type": "strin"})}}}}]
    path.write_text(json.dumps(tools, indent=1))
    line = _problem_line(path)
    assert line is not None and '"type": "strin"' in path.read_text().splitlines()[line - 1]


def test_a_schema_nested_too_deep_names_the_line_of_its_schema(tmp_path: Path) -> None:
    openai = tmp_path / "tools.json"
    openai.write_text(json.dumps([{"type": "function", "function": {"name": "t", "description": "d",
                                   "parameters": {"type": "object", "properties": {"x": _nested(65, {"type": "string"})}}}}],
                                 indent=1))
    line = _problem_line(openai)
    assert line is not None and '"parameters"' in openai.read_text().splitlines()[line - 1]
    own = tmp_path / "t.yaml"
    own.write_text("name: t\ndescription: d\ninput_schema:\n  type: object\n  properties:\n    x: "
                   + json.dumps(_nested(65, {"type": "string"})) + "\n")
    assert _problem_line(own) == 3


def test_a_bad_function_in_a_bfcl_json_lines_file_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "funcs.jsonl"
    good = {"name": "f", "description": "d", "parameters": {"type": "dict", "properties": {"x": {"type": "integer"}}}}
    bad = {"name": "g", "description": "d", "parameters": {"type": "dict", "properties": {"x": _nested(65, {"type": "string"})}}}
    path.write_text(json.dumps(good) + "\n\n" + json.dumps(bad) + "\n")
    assert _problem_line(path) == 3


@pytest.mark.parametrize("suffix", ["yaml", "jsonl"])
def test_an_integer_of_more_digits_than_python_reads_is_a_file_line_error(suffix: str, tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / f"t.{suffix}"
    digits = "1" + "0" * 5000
    if suffix == "yaml":
        path.write_text(f"- id: a\n  query: q\n  answer: x\n- id: b\n  query: q\n  answer: {{type: number, value: {digits}}}\n")
    else:
        path.write_text(json.dumps({"id": "a", "query": "q", "answer": "x"}) + "\n"
                        + '{"id": "b", "query": "q", "answer": {"type": "number", "value": ' + digits + "}}\n")
    capsys.readouterr()
    assert main(["run", "taskfile", "--tasks", str(path), "--model", "oracle", "--run-dir", str(tmp_path / "r"),
                 "--no-progress"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"{path}:{6 if suffix == 'yaml' else 2}: an integer of 5001 digits" in err, err[-500:]
    assert "Traceback" not in err and not (tmp_path / "r").exists()
