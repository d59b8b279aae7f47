"""The fast yes-check of plain schemas never accepts what jsonschema rejects, and accepts plain valid values."""

from __future__ import annotations

import itertools
from decimal import Decimal

import pytest
from jsonschema import Draft202012Validator

from server.kg_tools import NEIGHBORS_OUTPUT, SEARCH_OUTPUT
from tool_specs._fast_schema import compile_check

SCHEMAS = [
    {"type": "string", "minLength": 2, "maxLength": 4},
    {"type": "integer", "minimum": 0, "maximum": 9},
    {"type": "number", "minimum": 2**60 + 1},
    {"type": ["string", "null"]},
    {"type": "string", "enum": ["a", "b"]},
    {"type": "array", "items": {"type": "boolean"}, "minItems": 1, "maxItems": 2},
    {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"], "additionalProperties": False},
    {"type": "object", "properties": {"a": {}}, "additionalProperties": {"type": "string"}},
    {"properties": {"a": {"type": "string"}}, "required": ["a"]},  # no type: a non-object passes
    {"description": "anything", "format": "date"},  # annotations only
    SEARCH_OUTPUT,
    NEIGHBORS_OUTPUT,
]
VALUES = [
    None, True, False, 0, 1, 1.0, 1.5, -3, 2**60, 2**60 + 1, float("nan"), float("inf"), Decimal(1), "", "a", "abc",
    "abcde", "c", [], [True], [True, False, True], [1], (True,), {}, {"a": 1}, {"a": 1.0}, {"a": True}, {"a": "x"},
    {"a": 1, "b": "x"}, {"b": 2}, {"a": None, "b": "y"},
    {"start": "Bob", "path": ["mother"], "mode": "greedy", "start_found": True, "missing_relations": [],
     "paths": [[["Bob", "mother", "Alice"]]], "triples": [["Bob", "mother", "Alice"]], "note": "1 path(s) matched."},
    {"start": "Bob", "path": ["mother"], "mode": "greedy", "start_found": True, "missing_relations": [],
     "paths": [[["Bob", "mother"]]], "triples": [], "note": ""},
    {"entity": "Bob", "out": [["Bob", "mother", "Alice"]], "in": []},
    {"entity": "Bob", "out": [("Bob", "mother", "Alice")], "in": []},
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=range(len(SCHEMAS)))
def test_fast_check_never_accepts_what_jsonschema_rejects(schema: dict) -> None:
    check = compile_check(schema)
    assert check is not None, "every schema here uses only keywords the fast check handles"
    validator = Draft202012Validator(schema)
    accepted = 0
    for value in VALUES:
        errors = list(validator.iter_errors(value))
        if check(value):
            accepted += 1
            assert not errors, (value, errors[0].message)
    assert accepted  # it is a fast path for something


def test_fast_check_accepts_plain_valid_values() -> None:
    for schema, value in itertools.product(SCHEMAS, VALUES):
        valid = not list(Draft202012Validator(schema).iter_errors(value))
        plain = not isinstance(value, tuple | Decimal) and "(" not in repr(value) and value == value
        if valid and plain:
            assert compile_check(schema)(value), (schema, value)  # type: ignore[misc]


@pytest.mark.parametrize("schema", [
    {"type": "string", "pattern": "^a"}, {"$ref": "#/$defs/x"}, {"anyOf": [{"type": "string"}]},
    {"enum": [1, "a"]}, {"const": 1}, {"type": "object", "patternProperties": {"^a": {}}},
    {"type": "array", "prefixItems": [{}]}, {"items": False}, False,
])
def test_other_keywords_get_no_fast_check(schema: object) -> None:
    assert compile_check(schema) is None


def test_a_copy_with_a_new_schema_validates_against_the_new_one() -> None:
    import asyncio

    from tool_specs import ToolSpec

    spec = ToolSpec(name="t", input_schema={"type": "object", "properties": {"a": {"type": "string"}}})
    assert asyncio.run(spec.call({"a": 1})).is_error  # the validator is now cached on the spec
    copy = spec.model_copy(update={"input_schema": {"type": "object", "properties": {"a": {"type": "integer"}}}})
    assert not asyncio.run(copy.call({"a": 1})).is_error
    assert asyncio.run(copy.call({"a": "x"})).is_error


def test_results_checked_through_their_json_text_are_judged_as_by_the_walk() -> None:
    from tool_specs.results import MAX_RESULT_DEPTH, ToolResult, unsendable

    deep: dict = {}
    for _ in range(MAX_RESULT_DEPTH + 1):
        deep = {"a": deep}
    shallow: dict = {}
    for _ in range(MAX_RESULT_DEPTH - 2):
        shallow = {"a": shallow}
    cases = {
        "fine": ({"k": ["x", 1, None], "n": {"m": "é"}}, None),
        "brackets in strings only": ({"k": "[" * 300}, None),
        "surrogate in a key": ({"ok": 1, "key \udc80": 2}, "surrogate"),
        "surrogate in a string": ({"ok": ["\ud800"]}, "surrogate"),
        "too deep": (deep, "nests deeper"),
        "just deep enough": (shallow, None),
    }
    for name, (value, named) in cases.items():
        result = ToolResult.from_value(value)
        assert result.text_is_json
        problem = unsendable(result)
        assert (problem is None) == (named is None), name
        if named:
            assert problem is not None and named in problem, (name, problem)


def test_a_spec_that_has_validated_still_pickles() -> None:
    import asyncio
    import pickle

    from tool_specs import ToolSpec

    spec = ToolSpec(name="t", input_schema={"type": "object", "properties": {"a": {"type": "string"}}},
                    output_schema={"type": "object"})
    assert asyncio.run(spec.call({"a": 1})).is_error
    again = pickle.loads(pickle.dumps(spec))
    assert again == spec and asyncio.run(again.call({"a": 1})).is_error
