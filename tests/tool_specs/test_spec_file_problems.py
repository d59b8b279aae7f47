"""A mistake in a tool spec file is an error at load, every problem of every file at once (issue 26,
item 8): schemas against the JSON Schema meta-schema, MCP's tool-name rules, YAML errors, missing and
duplicate names, sandbox code that does not compile, python targets in a form that does not exist.
Unit tests of the loader, and the real ``evals serve --tools-dir`` (exit 2, one line per problem)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tool_specs import SpecLoadError, SpecLoadErrors, load_spec_dir, load_spec_file
from tool_specs.spec_checks import tool_name_problem


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    folder = tmp_path / "tools"
    folder.mkdir()
    _write(folder, "a_schemas.yaml", """\
        - name: typo_type
          input_schema:
            type: object
            properties:
              x: {type: strng}
              n: {type: integer, minimum: "one"}
        - name: ../../etc/passwd
        - name: has space
        - description: no name here
        - name: typo_type
        """)
    _write(folder, "b_yaml.yaml", "name: broken\n  description: [unclosed\n")
    _write(folder, "c_sandbox.yaml", """\
        name: sandboxed
        input_schema: {type: object, properties: {x: {type: string}}}
        executor:
          kind: sandbox
          function: f
          code: |
            def f(x):
                return x +
        """)
    _write(folder, "d_python.yaml", """\
        name: by_python
        executor: {kind: python, target: "no_colon_here"}
        """)
    _write(folder, "e_json.json", '[{"name": "json_tool", "inputSchema": {"type": "object", '
                                  '"properties": {"q": {"type": "string", "maxLength": -1}}}}]\n')
    _write(folder, "f_dup.yaml", "name: sandboxed\n")
    _write(folder, "g_loose.yaml", """\
        name: loose_tool
        parameters:
          properties:
            when: {type: datetimez}
        """)
    return folder


EXPECTED = [  # (file:line, what the line says)
    ("a_schemas.yaml:6", "input_schema.properties.n.minimum: 'one' is not of type 'number'"),
    ("a_schemas.yaml:5", "input_schema.properties.x.type: 'strng' is not one of ['array', 'boolean', 'integer'"),
    ("a_schemas.yaml:7", "tool name '../../etc/passwd' has the character(s) '/'"),
    ("a_schemas.yaml:8", "tool name 'has space' has the character(s) ' '"),
    ("a_schemas.yaml:9", "tool #3: tool has no 'name'"),
    ("a_schemas.yaml:10", "tool name 'typo_type' is used twice in this file (tools #0 and #4)"),
    ("b_yaml.yaml:2", "invalid YAML at line 2, column 14"),
    ("c_sandbox.yaml:8", "sandbox code does not compile at its line 2: invalid syntax"),
    ("d_python.yaml:2", "python executor target must be 'module:function'"),
    ("e_json.json:1", "inputSchema.properties.q.maxLength: -1 is less than the minimum of 0"),
    ("f_dup.yaml", "tool name 'sandboxed' is defined in both"),
    ("g_loose.yaml", 'unknown type "datetimez"'),
]


def test_every_problem_of_every_file_is_reported_at_once(broken: Path) -> None:
    with pytest.raises(SpecLoadErrors) as info:
        load_spec_dir(broken)
    lines = str(info.value).splitlines()
    assert lines[0] == f"{len(EXPECTED)} problems in 7 tool spec file(s):", lines
    assert len(info.value.problems) == len(EXPECTED)
    for (where, what), line in zip(EXPECTED, lines[1:], strict=True):
        assert line.startswith(str(broken / where)) and what in line, (where, what, line)
    assert "'path/file.py:function'" in lines[9]  # the rejected target names both forms


def test_a_single_problem_is_one_spec_load_error_as_before(tmp_path: Path) -> None:
    path = _write(tmp_path, "one.yaml", "name: ok\ninput_schema: {type: object, properties: {a: {type: strng}}}\n")
    with pytest.raises(SpecLoadError, match=r"one.yaml:2: tool #0 \('ok'\): input_schema.properties.a.type"):
        load_spec_file(path)


def test_valid_schemas_loose_forms_and_good_names_still_load(tmp_path: Path) -> None:
    path = _write(tmp_path, "good.yaml", """\
        - name: Search.v2_find-items
          input_schema:
            $schema: https://json-schema.org/draft/2020-12/schema
            type: object
            properties: {q: {type: string, minLength: 1}, n: {type: integer, minimum: 1}}
            required: [q]
        - name: legacy
          parameters:
            properties: {city: {type: str}, days: {type: int}}
        """)
    specs = load_spec_file(path)
    assert [s.name for s in specs] == ["Search.v2_find-items", "legacy"]
    assert specs[1].input_schema["properties"]["city"]["type"] == "string"
    assert load_spec_dir(Path(__file__).resolve().parents[2] / "tool_specs" / "examples")  # the examples load


@pytest.mark.parametrize("name", ["", "a" * 129, "has space", "../../etc/passwd", "tool/name", "tööl", "a:b"])
def test_names_outside_mcp_rules_are_refused(name: str) -> None:
    assert tool_name_problem(name) is not None


@pytest.mark.parametrize("name", ["a", "a" * 128, "get_weather", "Search.v2", "x-y_z.0"])
def test_names_inside_mcp_rules_are_accepted(name: str) -> None:
    assert tool_name_problem(name) is None


def test_evals_serve_tools_dir_exits_2_with_every_problem_and_no_traceback(broken: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "evals.cli", "serve", "--tools-dir", str(broken), "--port", "0"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    lines = proc.stderr.strip().splitlines()
    assert lines[0] == f"evals serve: error: {len(EXPECTED)} problems in 7 tool spec file(s):", lines
    for (where, what), line in zip(EXPECTED, lines[1:], strict=True):
        assert line.startswith(str(broken / where)) and what in line, (where, what, line)


# ---------------------------------------------------------------- issue 36: $ref, and the same rules for every source


@pytest.mark.parametrize("ref", ["http://127.0.0.1:19199/s.json", "file:///etc/passwd", "other.json#/x", "//host/x"])
def test_a_non_local_ref_is_refused_by_normalisation_wherever_the_schema_comes_from(ref: str) -> None:
    from tool_specs import SchemaNormalizationError, normalize_output_schema, normalize_schema

    schema = {"type": "object", "properties": {"a": {"anyOf": [{"type": "null"}, {"$ref": ref}]}}}
    with pytest.raises(SchemaNormalizationError, match=r"input schema at properties\.a\.anyOf\.1: \$ref .* points outside"):
        normalize_schema(schema)
    with pytest.raises(SchemaNormalizationError, match="output schema .* only local references"):
        normalize_output_schema(schema)


def test_local_refs_and_ref_shaped_data_are_kept() -> None:
    from tool_specs import ToolSpec

    schema = {"type": "object", "$defs": {"n": {"type": "integer"}},
              "properties": {"a": {"$ref": "#/$defs/n"}, "b": {"enum": [{"$ref": "http://x/"}]},
                             "$ref": {"type": "string", "default": {"$ref": "file:///etc/passwd"}}}}
    spec = ToolSpec(name="t", input_schema=schema)
    assert spec.input_schema["properties"]["a"] == {"$ref": "#/$defs/n"}
    assert not spec.input_validator[0].is_valid({"a": "one"}) and spec.input_validator[0].is_valid({"a": 1})


def test_a_spec_file_with_a_file_ref_is_refused_with_its_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "tools.yaml", """\
        - name: reader
          output_schema:
            type: object
            properties:
              content: {$ref: "file:///etc/passwd"}
        """)
    with pytest.raises(SpecLoadError, match=rf"^{path}:5: tool #0 \('reader'\): output_schema\.properties\.content\.\$ref: "
                                            r"\$ref 'file:///etc/passwd' points outside the schema"):
        load_spec_file(path)


def test_listed_tool_problems_apply_the_spec_file_rules() -> None:
    from tool_specs import listed_tool_problems

    assert listed_tool_problems("fine.name-1", {"type": "object"}, None) == []
    problems = listed_tool_problems("a/b", {"type": "object", "properties": {"x": {"type": "strng"}}},
                                    {"type": "object", "properties": {"y": {"$ref": "http://127.0.0.1/"}}})
    assert len(problems) == 3
    assert "'/'" in problems[0]
    assert problems[1].startswith("inputSchema.properties.x.type: ") and "(not a valid JSON Schema)" in problems[1]
    assert problems[2].startswith("outputSchema.properties.y.$ref: $ref 'http://127.0.0.1/' points outside")
    many = listed_tool_problems("ok", {"type": "object", "properties": {f"p{i}": {"type": "strng"} for i in range(50)}}, None)
    assert len(many) == 6 and many[-1] == "inputSchema: 45 more problem(s)"
