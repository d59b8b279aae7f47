"""One problem with a call's arguments (:class:`ArgumentProblem`) and the sentence a model reads about
it: ``jsonschema``'s errors mapped to problem kinds, values shown short (:mod:`tool_specs.validation`
validates; this module only words what it found)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from jsonschema.exceptions import ValidationError, best_match

from tool_specs._schema_patterns import key_matches
from tool_specs.names import suggest_names
from tool_specs.schema import describe_schema

__all__ = ["ArgumentProblem", "ProblemKind", "json_type_name", "problems_from_error", "short_repr"]

ProblemKind = Literal[
    "missing_required",
    "unknown_parameter",
    "wrong_type",
    "enum",
    "not_an_object",
    "too_large",
    "not_json",
    "other",
]

_GIVEN_LIMIT = 80


@dataclass(frozen=True)
class ArgumentProblem:
    """One thing wrong with a call's arguments.

    ``parameter`` is a JSON path such as ``label`` or ``items[2].name`` (``""`` for the whole
    argument object); ``problem`` is the kind; ``expected`` and ``given`` are short descriptions
    (``given`` is truncated, so a huge value is never echoed back); ``message`` is one sentence a
    model can act on.
    """

    parameter: str
    problem: ProblemKind
    expected: str
    given: str
    message: str

    def to_dict(self) -> dict[str, str]:
        """A JSON-ready dict (for traces)."""
        return {
            "parameter": self.parameter,
            "problem": self.problem,
            "expected": self.expected,
            "given": self.given,
            "message": self.message,
        }


def json_type_name(value: object) -> str:
    """The JSON type name of a Python value (``"string"``, ``"integer"``, ``"null"``...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


def short_repr(value: object, limit: int = _GIVEN_LIMIT) -> str:
    """A JSON rendering of ``value`` cut to at most ``limit`` characters (ending in ``…`` when cut).

    Long strings are cut *before* serialising, so a 1 MB argument costs nothing here.
    """
    if isinstance(value, str) and len(value) > limit:
        value = value[:limit]
        cut = True
    else:
        cut = False
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    if cut or len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def _given(value: object) -> str:
    """``string "5"``, ``integer 5``, ``null``: the JSON type plus a short rendering."""
    kind = json_type_name(value)
    return "null" if value is None else f"{kind} {short_repr(value)}"


def _join_path(base: str, part: str | int) -> str:
    if isinstance(part, int):
        return f"{base}[{part}]"
    return f"{base}.{part}" if base else str(part)


def _format_path(parts: Iterable[str | int]) -> str:
    path = ""
    for part in parts:
        path = _join_path(path, part)
    return path


def _subject(path: str) -> str:
    return f"Parameter '{path}'" if path else "The arguments"


def _wrong_type(path: str, expected: str, instance: object) -> ArgumentProblem:
    given = _given(instance)
    return ArgumentProblem(parameter=path, problem="wrong_type", expected=expected, given=given,
                           message=f"{_subject(path)} expected type {expected} but got {given}.")


def problems_from_error(error: ValidationError) -> list[ArgumentProblem]:
    path = _format_path(error.absolute_path)
    kind = error.validator
    instance = error.instance
    schema = error.schema if isinstance(error.schema, dict) else {}

    if kind == "required" and isinstance(instance, Mapping):
        props = schema.get("properties", {}) if isinstance(schema.get("properties"), dict) else {}
        out = []
        required = error.validator_value
        for name in required if isinstance(required, list) else []:
            if name in instance:
                continue
            expected = describe_schema(props.get(name, True))
            where = _join_path(path, name)
            type_hint = f" ({expected})" if expected != "any type" else ""
            out.append(
                ArgumentProblem(
                    parameter=where,
                    problem="missing_required",
                    expected=expected,
                    given="nothing",
                    message=f"Missing required parameter '{where}'{type_hint}.",
                )
            )
        return out

    if kind in ("additionalProperties", "unevaluatedProperties") and isinstance(instance, Mapping):
        props = schema.get("properties", {}) if isinstance(schema.get("properties"), dict) else {}
        patterns = (
            schema.get("patternProperties", {}) if isinstance(schema.get("patternProperties"), dict) else {}
        )
        valid = list(props)
        extras = [k for k in instance if k not in props and not any(key_matches(p, str(k)) is True for p in patterns)]
        out = []
        for name in extras:
            where = _join_path(path, name)
            shown = ", ".join(valid[:40]) + (f", … ({len(valid)} in all)" if len(valid) > 40 else "")
            if valid:
                message = f"Unknown parameter '{where}'; valid parameters are: {shown}."
            else:
                message = f"Unknown parameter '{where}'; {'this object' if path else 'this tool'} takes no parameters."
            close = suggest_names(str(name), valid)
            if close:
                message += " Did you mean " + " or ".join(f"'{c}'" for c in close) + "?"
            out.append(
                ArgumentProblem(
                    parameter=where,
                    problem="unknown_parameter",
                    expected="one of: " + shown if valid else "no parameters",
                    given=_given(instance[name]),
                    message=message,
                )
            )
        return out

    if kind == "type":
        return [_wrong_type(path, describe_schema({"type": error.validator_value}), instance)]

    if kind in ("enum", "const"):
        expected = describe_schema(schema if kind in schema else {kind: error.validator_value})
        return [
            ArgumentProblem(
                parameter=path,
                problem="enum",
                expected=expected,
                given=_given(instance),
                message=f"{_subject(path)} must be {expected}, but got {_given(instance)}.",
            )
        ]

    if kind in ("anyOf", "oneOf") and error.context:
        branch_errors = [e for e in error.context if not e.relative_path]
        if branch_errors and all(e.validator == "type" for e in branch_errors) and kind == "anyOf":
            return [_wrong_type(path, describe_schema({"anyOf": error.validator_value}), instance)]
        best = best_match(error.context)
        detail = _constraint_text(best) if best is not None else "none of the allowed alternatives matched"
        expected = describe_schema({kind: error.validator_value})
        return [
            ArgumentProblem(
                parameter=path,
                problem="other",
                expected=expected,
                given=_given(instance),
                message=f"{_subject(path)} must match "
                f"{'exactly one' if kind == 'oneOf' else 'one'} of the allowed forms ({expected}); "
                f"got {_given(instance)} ({detail}).",
            )
        ]

    expected = f"{kind} {short_repr(error.validator_value, 60)}"
    return [
        ArgumentProblem(
            parameter=path,
            problem="other",
            expected=expected,
            given=_given(instance),
            message=f"{_subject(path)} {_constraint_text(error)}; got {_given(instance)}.",
        )
    ]


_CONSTRAINT_WORDS = {
    "minimum": "must be at least {v}",
    "maximum": "must be at most {v}",
    "exclusiveMinimum": "must be greater than {v}",
    "exclusiveMaximum": "must be less than {v}",
    "multipleOf": "must be a multiple of {v}",
    "minLength": "must be at least {v} characters long",
    "maxLength": "must be at most {v} characters long",
    "pattern": "must match the pattern {v}",
    "minItems": "must have at least {v} items",
    "maxItems": "must have at most {v} items",
    "uniqueItems": "must not contain duplicate items",
    "minProperties": "must have at least {v} properties",
    "maxProperties": "must have at most {v} properties",
    "not": "must not match {v}",
}


def _constraint_text(error: ValidationError) -> str:
    if error.cause is not None and error.validator in ("pattern", "patternProperties"):
        return f"could not be checked: {error.message}"  # the search ran out of time (a regex from outside)
    template = _CONSTRAINT_WORDS.get(str(error.validator))
    if template:
        return template.format(v=short_repr(error.validator_value, 60))
    return f"failed the '{error.validator}' constraint ({short_repr(error.validator_value, 60)})"
