"""Schema normalisation: every loose form the benchmarks use ends as valid draft 2020-12 JSON Schema."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tool_specs import SchemaNormalizationError, ToolSpec, normalize_output_schema, normalize_schema


def norm(raw: Any, **kw: Any) -> tuple[dict[str, Any], list[str]]:
    schema, notes = normalize_schema(raw, **kw)
    Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"
    # idempotent: normalising the result changes nothing and says nothing
    again, again_notes = normalize_schema(schema)
    assert again == schema
    assert again_notes == []
    return schema, notes


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("float", "number"),
        ("int", "integer"),
        ("Dict", "object"),
        ("dict", "object"),
        ("str", "string"),
        ("bool", "boolean"),
        ("list", "array"),
        ("tuple", "array"),
        ("String", "string"),
    ],
)
def test_python_type_names_map_to_json_schema(given: str, expected: str) -> None:
    schema, notes = norm({"type": "object", "properties": {"p": {"type": given, "description": "d"}}})
    assert schema["properties"]["p"] == {"type": expected, "description": "d"}
    assert any("'p'" in n and given in n and expected in n for n in notes)


@pytest.mark.parametrize("name", ["integer", "string", "array", "boolean", "number", "object", "null"])
def test_json_schema_type_names_are_unchanged(name: str) -> None:
    raw = {"type": "object", "properties": {"p": {"type": name}}, "required": ["p"]}
    schema, notes = norm(raw)
    assert schema == raw
    assert notes == []


def test_unknown_type_name_drops_the_constraint_and_keeps_the_original() -> None:
    schema, notes = norm({"type": "object", "properties": {"when": {"type": "datetime", "description": "x"}}})
    assert schema["properties"]["when"] == {"description": "x", "x-original-type": "datetime"}
    assert any("unknown type" in n and "datetime" in n for n in notes)


def test_generic_and_union_type_names() -> None:
    schema, _ = norm(
        {
            "type": "object",
            "properties": {
                "a": {"type": "List[str]"},
                "b": {"type": "Optional[int]"},
                "c": {"type": "str | None"},
                "d": {"type": ["str", "int"]},
            },
        }
    )
    props = schema["properties"]
    assert props["a"] == {"type": "array", "x-original-type": "List[str]"}
    assert props["b"] == {"type": ["integer", "null"], "x-original-type": "Optional[int]"}
    assert props["c"] == {"type": ["string", "null"], "x-original-type": "str | None"}
    assert props["d"] == {"type": ["string", "integer"]}


def test_typeless_properties_with_only_a_default_are_kept_as_any_value() -> None:
    raw = {"type": "object", "properties": {"artist": {"default": "dontcare"}}, "required": []}
    schema, notes = norm(raw)
    assert schema["properties"]["artist"] == {"default": "dontcare"}
    assert notes == []
    validator = Draft202012Validator(schema)
    for value in ("x", 3, None, [1], {"a": 1}):
        assert validator.is_valid({"artist": value})


def test_properties_given_as_a_list_become_an_object() -> None:
    raw = {
        "properties": [
            {"name": "name_store", "description": "The store."},
            {"name": "size_pizza", "description": "Size.", "type": "str"},
            {"name": "count", "type": "int", "required": True},
        ],
        "required": [],
    }
    schema, notes = norm(raw)
    assert list(schema["properties"]) == ["name_store", "size_pizza", "count"]
    assert schema["properties"]["name_store"] == {"description": "The store."}
    assert schema["properties"]["size_pizza"] == {"description": "Size.", "type": "string"}
    assert schema["properties"]["count"] == {"type": "integer"}
    assert schema["required"] == ["count"]
    assert any("list of 3 named entries" in n for n in notes)
    assert any("no type; set it to 'object'" in n for n in notes)


def test_real_familytool_order_pizza_list_properties(familytool_tool: Any) -> None:
    raw = familytool_tool("order_pizza")
    assert isinstance(raw["parameters"]["properties"], list)
    spec = ToolSpec.from_benchmark(raw)
    Draft202012Validator.check_schema(spec.input_schema)
    names = [p["name"] for p in raw["parameters"]["properties"]]
    assert list(spec.input_schema["properties"]) == names
    for entry in raw["parameters"]["properties"]:
        assert spec.input_schema["properties"][entry["name"]]["description"] == entry["description"]
    assert spec.output_schema is None  # order_pizza has no response
    assert spec.normalization_notes


def test_required_names_missing_from_properties_are_added() -> None:
    raw = {"type": "object", "properties": {"artist": {"default": "dontcare"}}, "required": ["song_name"]}
    schema, notes = norm(raw)
    assert list(schema["properties"]) == ["artist", "song_name"]
    added = schema["properties"]["song_name"]
    assert "type" not in added
    assert "not given" in added["description"]
    assert schema["required"] == ["song_name"]
    assert any("'song_name'" in n and "missing from 'properties'" in n for n in notes)


def test_real_familytool_tool_with_required_missing_from_properties(familytool_tool: Any) -> None:
    raw = familytool_tool("PlaySong")
    assert "song_name" not in raw["parameters"]["properties"]
    spec = ToolSpec.from_benchmark(raw)
    assert "song_name" in spec.input_schema["properties"]
    assert spec.input_schema["required"] == ["song_name"]
    # the response map becomes an output object schema with the same fields
    assert spec.output_schema is not None
    assert list(spec.output_schema["properties"]) == list(raw["response"])


def test_real_familytool_dict_and_float_types(familytool_tool: Any) -> None:
    spec = ToolSpec.from_benchmark(familytool_tool("update_contact_information"))
    info = spec.input_schema["properties"]["new_information"]
    assert info["type"] == "object"
    assert info["properties"]["new_email"]["type"] == "string"
    amount = ToolSpec.from_benchmark(familytool_tool("transfer_funds")).input_schema["properties"]["amount"]
    assert amount["type"] == "number"


def test_response_field_map_becomes_an_output_schema() -> None:
    schema, notes = normalize_output_schema(
        {"update_status": {"type": "string", "description": "d"}, "when": {}}
    )
    assert schema == {
        "type": "object",
        "properties": {"update_status": {"type": "string", "description": "d"}, "when": {}},
    }
    assert notes
    Draft202012Validator.check_schema(schema)


def test_output_schema_edge_cases() -> None:
    assert normalize_output_schema(None) == (None, [])
    assert normalize_output_schema({}) == (None, [])
    wrapped, notes = normalize_output_schema({"type": "string"})
    assert wrapped == {"type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"]}
    assert any("wrapped" in n for n in notes)
    ultra = {"type": "object", "properties": {"status": {"type": "boolean", "description": "ok?"}}}
    assert normalize_output_schema(ultra) == (ultra, [])
    # a field literally called "type" is still a field map entry, not a type name
    typed, _ = normalize_output_schema({"type": {}, "id": {}})
    assert typed == {"type": "object", "properties": {"type": {}, "id": {}}}


def test_nestools_form_bare_parameter_map_with_top_level_required() -> None:
    raw = {
        "api_name": "scan_isbn",
        "api_description": "Scan the ISBN of a book.",
        "parameters": {"isbn": {"type": "str", "description": "the ISBN"}, "type": {"type": "int"}},
        "required": ["isbn"],
        "responses": {"book_details": {"type": "str"}, "availability": {"type": "bool"}},
    }
    spec = ToolSpec.from_benchmark(raw)
    assert spec.name == "scan_isbn"
    assert spec.description == "Scan the ISBN of a book."
    assert spec.input_schema == {
        "type": "object",
        "properties": {"isbn": {"type": "string", "description": "the ISBN"}, "type": {"type": "integer"}},
        "required": ["isbn"],
    }
    assert spec.output_schema == {
        "type": "object",
        "properties": {"book_details": {"type": "string"}, "availability": {"type": "boolean"}},
    }
    assert any("bare map" in n for n in spec.normalization_notes)


def test_ultratool_form_arguments_and_results() -> None:
    raw = {
        "name": "file_write",
        "description": "Write a file.",
        "arguments": {
            "type": "object",
            "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
        },
        "results": {"type": "object", "properties": {"status": {"type": "boolean"}}},
    }
    spec = ToolSpec.from_benchmark(raw)
    assert spec.input_schema == raw["arguments"]
    assert spec.output_schema == raw["results"]
    assert spec.normalization_notes == []


def test_complexfuncbench_form_is_already_valid_and_unchanged() -> None:
    params = {
        "type": "object",
        "properties": {
            "vehicle_id": {"type": "string", "description": "Vehicle ID."},
            "sort_by": {"type": "string", "enum": ["price", "distance"]},
        },
        "required": ["vehicle_id"],
    }
    spec = ToolSpec.from_benchmark(
        {"name": "Get_Hotel_Reviews(Tips)", "description": "d", "parameters": params}
    )
    assert spec.input_schema == params
    assert spec.normalization_notes == []


def test_openai_function_wrapper_is_unwrapped() -> None:
    raw = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}
    assert ToolSpec.from_benchmark(raw).name == "f"


def test_invalid_keyword_values_are_moved_not_dropped() -> None:
    schema, notes = norm({"type": "object", "properties": {"d": {"type": "string", "pattern": "[unclosed"}}})
    assert schema["properties"]["d"] == {"type": "string", "x-invalid-pattern": "[unclosed"}
    assert any("x-invalid-pattern" in n for n in notes)


def test_bad_required_and_enum_forms() -> None:
    schema, notes = norm({"type": "object", "properties": {"a": {"enum": "only"}}, "required": "a"})
    assert schema["required"] == ["a"]
    assert schema["properties"]["a"]["enum"] == ["only"]
    schema, _ = norm({"type": "object", "properties": {}, "required": [1, 2]})
    assert schema["x-invalid-required"] == [1, 2]
    assert "required" not in schema
    schema, notes = norm({"type": "object", "properties": {"a": {}}, "required": ["a", "a"]})
    assert schema["required"] == ["a"]
    assert any("duplicate" in n for n in notes)


def test_property_level_required_flag_moves_to_parent() -> None:
    schema, notes = norm(
        {
            "type": "object",
            "properties": {"a": {"type": "string", "required": True}, "b": {"required": False}},
        }
    )
    assert schema["required"] == ["a"]
    assert schema["properties"] == {"a": {"type": "string"}, "b": {}}
    assert any("property-level 'required: true'" in n for n in notes)


def test_nested_schemas_are_normalised_too() -> None:
    schema, _ = norm(
        {
            "type": "object",
            "properties": {
                "items": {"type": "list", "items": {"type": "Dict", "properties": {"n": {"type": "float"}}}},
                "either": {"anyOf": [{"type": "int"}, {"type": "str"}]},
                "pair": {"type": "tuple", "items": [{"type": "int"}, {"type": "str"}]},
            },
        }
    )
    props = schema["properties"]
    assert props["items"]["items"] == {"type": "object", "properties": {"n": {"type": "number"}}}
    assert props["either"]["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert props["pair"] == {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]}


def test_none_and_empty_inputs_mean_no_parameters() -> None:
    schema, notes = norm(None)
    assert schema == {"type": "object", "properties": {}}
    assert notes
    schema, notes = norm({})
    assert schema == {"type": "object", "properties": {}}


def test_extra_required_names_are_merged() -> None:
    schema, notes = norm({"a": {"type": "str"}}, required=["a", "b"])
    assert schema["required"] == ["a", "b"]
    assert "b" in schema["properties"]


def test_non_object_root_is_an_error() -> None:
    with pytest.raises(SchemaNormalizationError, match="root must describe an object"):
        normalize_schema({"type": "string"})
    with pytest.raises(SchemaNormalizationError, match="must be an object"):
        normalize_schema("not a schema")


def test_property_list_entry_without_a_name_is_an_error() -> None:
    with pytest.raises(SchemaNormalizationError, match="entry #1 .* has no 'name'"):
        normalize_schema({"properties": [{"name": "a"}, {"description": "nameless"}]})
    with pytest.raises(SchemaNormalizationError, match="names 'a' twice"):
        normalize_schema({"properties": [{"name": "a"}, {"name": "a"}]})


def test_normalize_returns_independent_copies() -> None:
    raw = {"type": "object", "properties": {"a": {"type": "int"}}}
    first, _ = normalize_schema(raw)
    first["properties"]["a"]["type"] = "mutated"
    second, _ = normalize_schema(raw)
    assert second["properties"]["a"]["type"] == "integer"
    assert raw["properties"]["a"]["type"] == "int"
