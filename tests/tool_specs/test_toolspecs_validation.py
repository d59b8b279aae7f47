"""Argument validation: problem kinds, model-facing messages, size limits and the two policies."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tool_specs import ArgumentProblem, ToolSpec, format_problems, validate_arguments

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "label": {"type": "string"},
        "count": {"type": "integer", "minimum": 1},
        "color": {"type": "string", "enum": ["red", "green"]},
        "size": {"type": "number"},
        "items": {
            "type": "array",
            "items": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        },
        "days": {"type": "array", "items": {"type": "string"}},
        "either": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
    },
    "required": ["label"],
}


def only(outcome: Any) -> ArgumentProblem:
    assert len(outcome.errors) == 1, outcome
    return outcome.errors[0]


def test_valid_arguments_pass() -> None:
    outcome = validate_arguments(SCHEMA, {"label": "x", "count": 2, "items": [{"name": "a"}]})
    assert outcome.ok
    assert outcome.errors == [] and outcome.warnings == []


def test_missing_required() -> None:
    problem = only(validate_arguments(SCHEMA, {"count": 2}))
    assert problem.problem == "missing_required"
    assert problem.parameter == "label"
    assert problem.expected == "string"
    assert problem.message == "Missing required parameter 'label' (string)."


def test_unknown_parameter_lists_valid_ones_and_suggests() -> None:
    problem = only(validate_arguments(SCHEMA, {"label": "x", "colour": "red"}))
    assert problem.problem == "unknown_parameter"
    assert problem.parameter == "colour"
    assert problem.given == 'string "red"'
    assert problem.message.startswith(
        "Unknown parameter 'colour'; valid parameters are: label, count, color, size, items, days, either."
    )
    assert "Did you mean 'color'?" in problem.message


def test_unknown_parameter_on_a_tool_without_parameters() -> None:
    problem = only(validate_arguments({"type": "object", "properties": {}}, {"city": "Paris"}))
    assert problem.message == "Unknown parameter 'city'; this tool takes no parameters."


def test_explicit_additional_properties_true_allows_extra_keys() -> None:
    schema = {"type": "object", "properties": {"a": {}}, "additionalProperties": True}
    assert validate_arguments(schema, {"a": 1, "b": 2}).ok


def test_wrong_type_message_names_parameter_expected_and_given() -> None:
    problem = only(validate_arguments(SCHEMA, {"label": "x", "count": "5"}))
    assert problem.problem == "wrong_type"
    assert (problem.parameter, problem.expected, problem.given) == ("count", "integer", 'string "5"')
    assert problem.message == "Parameter 'count' expected type integer but got string \"5\"."


def test_wrong_type_for_a_union() -> None:
    problem = only(validate_arguments(SCHEMA, {"label": "x", "either": "no"}))
    assert problem.problem == "wrong_type"
    assert problem.expected == "integer or boolean"


def test_enum_violation() -> None:
    problem = only(validate_arguments(SCHEMA, {"label": "x", "color": "blue"}))
    assert problem.problem == "enum"
    assert problem.expected == 'one of "red", "green"'
    assert problem.message == 'Parameter \'color\' must be one of "red", "green", but got string "blue".'


def test_other_constraint_violation() -> None:
    problem = only(validate_arguments(SCHEMA, {"label": "x", "count": 0}))
    assert problem.problem == "other"
    assert problem.parameter == "count"
    assert problem.message == "Parameter 'count' must be at least 1; got integer 0."


def test_nested_paths() -> None:
    outcome = validate_arguments(
        SCHEMA, {"label": "x", "items": [{"name": "a"}, {"name": "b"}, {"nam": "c"}]}
    )
    kinds = {(p.parameter, p.problem) for p in outcome.errors}
    assert kinds == {("items[2].name", "missing_required"), ("items[2].nam", "unknown_parameter")}
    wrong = only(validate_arguments(SCHEMA, {"label": "x", "days": ["mon", 3]}))
    assert wrong.parameter == "days[1]"
    assert wrong.message == "Parameter 'days[1]' expected type string but got integer 3."


def test_several_problems_are_all_reported_in_a_stable_order() -> None:
    outcome = validate_arguments(SCHEMA, {"colour": "red", "count": "5"})
    assert [p.problem for p in outcome.errors] == ["missing_required", "unknown_parameter", "wrong_type"]


def test_one_megabyte_string_is_too_large_and_never_echoed() -> None:
    huge = "A" * (1024 * 1024)
    problem = only(validate_arguments(SCHEMA, {"label": huge}))
    assert problem.problem == "too_large"
    assert problem.parameter == "label"
    assert str(len(huge)) in problem.message
    assert "AAAAAAAAAA" not in problem.message
    assert "AAAAAAAAAA" not in problem.given
    assert len(problem.message) < 200


def test_string_limit_counts_utf8_bytes() -> None:
    text = "é" * 40  # 80 bytes
    assert validate_arguments(SCHEMA, {"label": text}, max_string_bytes=80).ok
    assert only(validate_arguments(SCHEMA, {"label": text + "é"}, max_string_bytes=80)).problem == "too_large"


def test_total_size_limit() -> None:
    args = {"label": "x", "days": ["d" * 60_000 for _ in range(10)]}
    problem = only(validate_arguments(SCHEMA, args))
    assert problem.problem == "too_large"
    assert problem.parameter == ""
    assert "524288 bytes" in problem.message


def test_too_deep_nesting_is_too_large() -> None:
    value: Any = "leaf"
    for _ in range(200):
        value = [value]
    problem = only(validate_arguments(SCHEMA, {"label": "x", "days": value}))
    assert problem.problem == "too_large"
    assert "nested more than 64 levels" in problem.message


def test_size_is_checked_before_objectness() -> None:
    assert only(validate_arguments(SCHEMA, "A" * 100_000)).problem == "too_large"


@pytest.mark.parametrize(
    ("arguments", "given"),
    [([1, 2], "array [1, 2]"), ("label=x", 'string "label=x"'), (None, "null"), (7, "integer 7")],
)
@pytest.mark.parametrize("policy", ["strict", "warn"])
def test_non_object_arguments_are_always_errors(arguments: object, given: str, policy: Any) -> None:
    problem = only(validate_arguments(SCHEMA, arguments, policy=policy))
    assert problem.problem == "not_an_object"
    assert problem.parameter == ""
    assert problem.given == given
    assert given in problem.message


def test_non_json_arguments_are_errors() -> None:
    problem = only(validate_arguments(SCHEMA, {"label": float("nan")}, policy="warn"))
    assert problem.problem == "not_json"


def test_given_is_truncated() -> None:
    problem = only(validate_arguments(SCHEMA, {"label": "x", "count": "9" * 5000}))
    assert len(problem.given) <= len("string ") + 80
    assert problem.given.endswith("…")
    assert len(problem.message) < 200


def test_strict_and_warn_report_the_same_schema_problems() -> None:
    args = {"colour": "red", "count": "5"}
    strict = validate_arguments(SCHEMA, args, policy="strict")
    warn = validate_arguments(SCHEMA, args, policy="warn")
    assert not strict.ok and warn.ok
    assert warn.errors == []
    assert warn.warnings == strict.errors
    assert strict.warnings == []
    assert warn.problems == strict.problems


@pytest.mark.parametrize("arguments", [{"label": "A" * 70_000}, ["a"]])
def test_warn_policy_still_rejects_size_and_shape(arguments: object) -> None:
    outcome = validate_arguments(SCHEMA, arguments, policy="warn")
    assert not outcome.ok
    assert outcome.warnings == []


def test_policy_defaults_to_the_specs_validation_field() -> None:
    warn_spec = ToolSpec(name="t", input_schema=SCHEMA, validation="warn")
    assert validate_arguments(warn_spec, {}).ok
    assert not validate_arguments(warn_spec, {}, policy="strict").ok
    assert not validate_arguments(ToolSpec(name="t", input_schema=SCHEMA), {}).ok
    with pytest.raises(ValueError, match="unknown validation policy"):
        validate_arguments(SCHEMA, {}, policy="lenient")  # type: ignore[arg-type]


def test_format_is_an_annotation_only() -> None:
    schema = {"type": "object", "properties": {"email": {"type": "string", "format": "email"}}}
    assert validate_arguments(schema, {"email": "not an email"}).ok


def test_format_problems_text() -> None:
    outcome = validate_arguments(SCHEMA, {"count": "5"})
    text = format_problems(outcome, "book_table")
    lines = text.splitlines()
    assert lines[0] == "Invalid arguments for tool 'book_table' (2 problems):"
    assert lines[1] == "- Missing required parameter 'label' (string)."
    assert lines[2] == "- Parameter 'count' expected type integer but got string \"5\"."
    assert lines[-1] == "Fix the arguments and call tool 'book_table' again."
    assert (
        format_problems(validate_arguments(SCHEMA, {"label": "x"}), "t")
        == "The arguments for tool 't' are valid."
    )


def test_problem_to_dict_is_json_ready() -> None:
    problem = only(validate_arguments(SCHEMA, {}))
    assert json.loads(json.dumps(problem.to_dict()))["problem"] == "missing_required"


def test_a_normalised_schema_is_not_checked_against_the_meta_schema_twice(monkeypatch) -> None:  # noqa: ANN001
    """Normalisation already checks a schema against the meta-schema; compiling the validator of its
    result does not check again, while any other schema is still checked (and an invalid one refused)."""
    from jsonschema import SchemaError

    from tool_specs import compiled_validator, normalize_schema, validation

    checked: list[Any] = []
    real_check = validation.check_schema

    def counting(schema: Any) -> None:
        checked.append(schema)
        real_check(schema)

    monkeypatch.setattr(validation, "check_schema", counting)
    normalised, _ = normalize_schema({"type": "object", "properties": {"q": {"type": "string", "maxLength": 7}}})
    assert not compiled_validator(normalised).is_valid({"q": "far too long"})
    assert checked == []  # the normalised schema was compiled without a second check
    raw = {"type": "object", "properties": {"q": {"type": "string", "maxLength": 8}}, "x-not-normalised": 1}
    assert compiled_validator(raw).is_valid({"q": "short"})
    assert checked == [raw]
    with pytest.raises(SchemaError):
        compiled_validator({"type": "object", "properties": {"q": {"type": "string", "maxLength": -1}}})

