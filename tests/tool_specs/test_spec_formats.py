"""OpenAI function tools and BFCL function docs are accepted as spec files (real files of each format)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tool_specs import SpecLoadError, detect_tool_format, load_tool_dir, load_tool_file

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "tools"


def test_openai_function_tools_file() -> None:
    specs = {s.name: s for s in load_tool_file(EXAMPLES / "openai_tools.json")}
    assert list(specs) == ["get_weather", "book_table"]
    weather = specs["get_weather"]
    assert weather.input_schema["required"] == ["city", "unit"]
    assert weather.input_schema["properties"]["unit"]["enum"] == ["celsius", "fahrenheit"]
    assert weather.annotations == {"format": "openai", "strict": True}
    ok = asyncio.run(weather.call({"city": "Paris", "unit": "celsius"}))
    bad = asyncio.run(weather.call({"city": "Paris", "unit": "kelvin"}))
    assert not ok.is_error and bad.is_error and "kelvin" in bad.text


def test_bfcl_function_docs_jsonl_with_python_type_names() -> None:
    specs = {s.name: s for s in load_tool_file(EXAMPLES / "bfcl_functions.jsonl")}
    assert list(specs) == ["math.factorial", "geometry.circle_area", "finance.loan_payment"]
    area = specs["geometry.circle_area"].input_schema
    assert area["type"] == "object" and area["properties"]["radius"]["type"] == "number"  # "float"
    assert specs["finance.loan_payment"].input_schema["properties"]["extra"]["type"] == "array"  # "tuple"
    assert all(s.annotations["format"] == "bfcl" for s in specs.values())
    assert asyncio.run(specs["math.factorial"].call({"number": "five"})).is_error


def test_the_flat_responses_form_a_bfcl_json_list_and_a_mixed_folder(tmp_path: Path) -> None:
    flat = [{"type": "function", "name": "ping", "description": "Ping.", "parameters": {"type": "object", "properties": {}}}]
    (tmp_path / "a.json").write_text(json.dumps({"tools": flat}))
    bfcl = [json.loads(line) for line in (EXAMPLES / "bfcl_functions.jsonl").read_text().splitlines()]
    (tmp_path / "b.json").write_text(json.dumps(bfcl))
    (tmp_path / "c.yaml").write_text("name: own_tool\ninput_schema: {type: object, properties: {x: {type: string}}}\n")
    assert [s.name for s in load_tool_dir(tmp_path)] == ["ping", *(f["name"] for f in bfcl), "own_tool"]
    assert detect_tool_format(flat) == "openai" and detect_tool_format(bfcl) == "bfcl"
    assert detect_tool_format({"name": "x", "input_schema": {}}) is None


def test_bad_files_name_the_file_and_the_tool(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"type": "function", "function": {"name": "x", "parameters": {}, "colour": "red"}}]))
    with pytest.raises(SpecLoadError, match=r"bad.json.*colour"):
        load_tool_file(bad)
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"name": "a", "parameters": {"type": "dict", "properties": {}}}\n{"name": \n')
    with pytest.raises(SpecLoadError, match=r"broken.jsonl.*line 2"):
        load_tool_file(broken)
    (tmp_path / "twice.jsonl").write_text('{"name": "a", "parameters": {"type": "dict", "properties": {}}}\n' * 2)
    with pytest.raises(SpecLoadError, match="used twice"):
        load_tool_file(tmp_path / "twice.jsonl")
