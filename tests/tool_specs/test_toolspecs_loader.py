"""Spec files: the accepted layouts, every error naming its file, and the shipped examples."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tool_specs import (
    PythonExecutor,
    SimulatedExecutor,
    SpecLoadError,
    ToolSpec,
    load_spec_dir,
    load_spec_file,
)
from tool_specs.examples import EXAMPLES_DIR


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_yaml_single_tool(tmp_path: Path) -> None:
    path = write(
        tmp_path / "one.yaml",
        """
        name: cancel_alarm
        description: Cancel an alarm.
        parameters:
          properties:
            label: {type: str}
          required: [label]
        output_schema:
          status: {type: str}
        validation: warn
        annotations: {source: test}
        """,
    )
    [spec] = load_spec_file(path)
    assert spec.name == "cancel_alarm"
    assert spec.input_schema == {
        "type": "object",
        "properties": {"label": {"type": "string"}},
        "required": ["label"],
    }
    assert spec.output_schema == {"type": "object", "properties": {"status": {"type": "string"}}}
    assert spec.validation == "warn"
    assert spec.annotations == {"source": "test"}
    assert isinstance(spec.executor, SimulatedExecutor)


def test_json_list_of_tools(tmp_path: Path) -> None:
    tools = [
        {"name": "a", "input_schema": {"type": "object", "properties": {}}},
        {"name": "b", "arguments": None},
    ]
    path = tmp_path / "two.json"
    path.write_text(json.dumps(tools), encoding="utf-8")
    assert [s.name for s in load_spec_file(path)] == ["a", "b"]


def test_tools_key_layout(tmp_path: Path) -> None:
    path = write(tmp_path / "t.yml", "tools:\n  - name: a\n  - name: b\n    executor: simulated\n")
    assert [s.name for s in load_spec_file(path)] == ["a", "b"]
    write(tmp_path / "bad.yml", "tools: [{name: a}]\nversion: 2\n")
    with pytest.raises(SpecLoadError, match=r"bad\.yml: .*may hold nothing else.*version"):
        load_spec_file(tmp_path / "bad.yml")


def test_dir_sorted_by_file_name_ignores_other_files(tmp_path: Path) -> None:
    write(tmp_path / "b.yaml", "name: from_b\n")
    write(tmp_path / "a.json", '[{"name": "from_a"}]')
    write(tmp_path / "c.yml", "- name: from_c\n")
    write(tmp_path / "notes.txt", "name: ignored\n")
    write(tmp_path / "README.md", "# docs\n")
    write(tmp_path / ".hidden.yaml", "name: hidden\n")
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub" / "d.yaml", "name: nested\n")
    assert [s.name for s in load_spec_dir(tmp_path)] == ["from_a", "from_b", "from_c"]


def test_duplicate_names_across_files_name_both_files(tmp_path: Path) -> None:
    first = write(tmp_path / "a.yaml", "name: dup\n")
    second = write(tmp_path / "b.json", '{"name": "dup"}')
    with pytest.raises(SpecLoadError) as info:
        load_spec_dir(tmp_path)
    message = str(info.value)
    assert str(first) in message and str(second) in message and "'dup'" in message


def test_duplicate_names_in_one_file(tmp_path: Path) -> None:
    path = write(tmp_path / "d.yaml", "- name: x\n- name: y\n- name: x\n")
    with pytest.raises(SpecLoadError, match=r"d\.yaml:3: tool #2 \('x'\): .*used twice.*#0 and #2"):
        load_spec_file(path)


def test_bad_yaml_names_the_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path / "broken.yaml", "name: a\ndescription: [unclosed\n")
    with pytest.raises(SpecLoadError) as info:
        load_spec_file(path)
    assert str(path) in str(info.value)
    assert "invalid YAML at line" in str(info.value)
    assert info.value.path == path


def test_bad_json_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "broken.json", '[{"name": "a",}]')
    with pytest.raises(SpecLoadError, match=r"broken\.json:1: invalid JSON at line 1"):
        load_spec_file(path)


def test_missing_name_names_file_and_index(tmp_path: Path) -> None:
    path = write(tmp_path / "nameless.yaml", "- name: ok\n- description: no name here\n")
    with pytest.raises(SpecLoadError) as info:
        load_spec_file(path)
    assert str(info.value).startswith(f"{path}:2: tool #1: tool has no 'name'")
    assert info.value.tool_index == 1


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("", "file is empty"),
        ("just a string\n", "got str"),
        ("- 42\n", r"tool #0: a tool must be a mapping"),
        ("name: [1]\n", "'name' must be a string"),
        ("name: ''\n", "the tool name is empty"),
        ("name: t\ncolour: red\n", r"tool #0 \('t'\): unknown key\(s\) 'colour'"),
        ("name: t\nparameters: {}\ninput_schema: {}\n", "give only one of input_schema, parameters"),
        ("name: t\ninput_schema: {type: string}\n", "root must describe an object"),
        ("name: t\nvalidation: lenient\n", r"validation: Input should be 'strict' or 'warn'"),
        ("name: t\nannotations: [1]\n", "'annotations' must be a mapping"),
    ],
)
def test_entry_errors_name_the_file(tmp_path: Path, text: str, pattern: str) -> None:
    path = write(tmp_path / "spec.yaml", text)
    with pytest.raises(SpecLoadError, match=pattern) as info:
        load_spec_file(path)
    assert str(info.value).startswith(str(path))


def test_unknown_executor_kind(tmp_path: Path) -> None:
    path = write(tmp_path / "exec.yaml", "name: t\nexecutor: {kind: quantum}\n")
    with pytest.raises(SpecLoadError) as info:
        load_spec_file(path)
    message = str(info.value)
    assert message.startswith(f"{path}:2: tool #0 ('t'): bad executor: unknown executor kind 'quantum'")
    assert "known kinds:" in message and "python" in message and "simulated" in message


def test_bad_python_target_fails_at_load_time(tmp_path: Path) -> None:
    path = write(
        tmp_path / "py.yaml", "name: t\nexecutor: {kind: python, target: 'no_such_pkg_xyz.mod:run'}\n"
    )
    with pytest.raises(SpecLoadError) as info:
        load_spec_file(path)
    message = str(info.value)
    assert str(path) in message and "no_such_pkg_xyz.mod:run" in message
    missing_attr = write(
        tmp_path / "py2.yaml",
        "name: t\nexecutor: {kind: python, target: 'tool_specs.examples.unit_converter:nope'}\n",
    )
    with pytest.raises(
        SpecLoadError, match=r"py2\.yaml:2: tool #0 \('t'\): bad executor: .*has no attribute 'nope'"
    ):
        load_spec_file(missing_attr)


async def test_python_file_target_next_to_the_spec_file(tmp_path: Path) -> None:
    write(tmp_path / "helpers.py", "def area(w, h):\n    return {'area': w * h}\n")
    path = write(
        tmp_path / "geo.yaml",
        """
        name: area
        input_schema:
          type: object
          properties: {w: {type: number}, h: {type: number}}
          required: [w, h]
        executor: {kind: python, target: "helpers.py:area", timeout_s: 5}
        """,
    )
    [spec] = load_spec_file(path)
    assert isinstance(spec.executor, PythonExecutor)
    result = await spec.call({"w": 2, "h": 3.5})
    assert result.structured == {"area": 7.0}


def test_not_a_directory_or_file(tmp_path: Path) -> None:
    with pytest.raises(SpecLoadError, match="not a directory"):
        load_spec_dir(tmp_path / "missing")
    with pytest.raises(SpecLoadError, match="no such file"):
        load_spec_file(tmp_path / "missing.yaml")
    write(tmp_path / "x.toml", "name = 'a'\n")
    with pytest.raises(SpecLoadError, match="unsupported file type"):
        load_spec_file(tmp_path / "x.toml")


# ----------------------------------------------------------------------------- shipped examples

EXAMPLE_CALLS: dict[str, dict[str, Any]] = {
    "book_table": {"restaurant": "Chez Nous", "date": "2025-06-01", "time": "19:30", "party_size": 4},
    "search_flights": {"origin": "SFO", "destination": "JFK", "departure_date": "2025-06-01"},
    "get_weather": {"city": "Lisbon"},
    "convert_units": {"value": 212, "from_unit": "F", "to_unit": "C"},
}


def test_example_dir_loads() -> None:
    specs = load_spec_dir(EXAMPLES_DIR)
    assert [s.name for s in specs] == ["book_table", "search_flights", "get_weather", "convert_units"]
    for spec in specs:
        Draft202012Validator.check_schema(spec.input_schema)
        spec.to_mcp_tool()
    by_name = {s.name: s for s in specs}
    assert by_name["get_weather"].validation == "warn"
    assert isinstance(by_name["convert_units"].executor, PythonExecutor)
    assert by_name["search_flights"].normalization_notes  # it is written in loose benchmark style


@pytest.mark.parametrize("name", list(EXAMPLE_CALLS))
async def test_each_example_tool_can_be_called(name: str) -> None:
    spec: ToolSpec = {s.name: s for s in load_spec_dir(EXAMPLES_DIR)}[name]
    result = await spec.call(EXAMPLE_CALLS[name])
    assert not result.is_error, result.text
    assert result.structured is not None
    schema = spec.advertised_output_schema
    if schema is not None:
        Draft202012Validator(schema).validate(result.structured)


async def test_unit_converter_really_computes() -> None:
    spec = {s.name: s for s in load_spec_dir(EXAMPLES_DIR)}["convert_units"]
    result = await spec.call({"value": 212, "from_unit": "F", "to_unit": "C"})
    assert result.structured == {
        "value": 100.0,
        "unit": "C",
        "dimension": "temperature",
        "expression": "212 F = 100 C",
    }
    miles = await spec.call({"value": 5, "from_unit": "km", "to_unit": "mi", "precision": 3})
    assert miles.structured is not None and miles.structured["value"] == 3.107
    bad = await spec.call({"value": 1, "from_unit": "kg", "to_unit": "km"})
    assert (
        bad.is_error
        and bad.text == "convert_units failed: ValueError: cannot convert mass ('kg') to length ('km')"
    )
