"""Validate tool-call arguments against a tool's input schema, with messages a model can act on.

Validation is done by ``jsonschema`` (draft 2020-12); this module only maps its errors to
:class:`ArgumentProblem` records and writes one plain sentence per problem. Two policies:

* ``"strict"``: every problem is an error; the call must not run.
* ``"warn"``: schema violations (missing required, unknown parameter, wrong type, enum and other
  constraint failures) are warnings and the call still runs. Arguments that are not a JSON object,
  are not JSON, or exceed the size limits are always errors.

References are resolved within the schema only: every validator uses a registry that retrieves
nothing (:data:`tool_specs._schema_refs.NO_RETRIEVAL`), so a ``$ref`` to a URL or a file is an error,
never a request.

Unknown parameters are reported even when the schema does not say ``additionalProperties: false``
(benchmark schemas never do, but a model must learn that it invented a parameter): object schemas
with ``properties`` and no ``additionalProperties``/``patternProperties``/``unevaluatedProperties``
are validated as if closed. ``format`` is an annotation only (never asserted).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from tool_specs._fast_schema import Check, compile_check
from tool_specs._problems import (
    ArgumentProblem,
    ProblemKind,
    _given,
    _join_path,
    _subject,
    json_type_name,
    problems_from_error,
    short_repr,
)
from tool_specs._schema_patterns import BoundedValidator
from tool_specs._schema_refs import NO_RETRIEVAL, nonlocal_ref_message, nonlocal_refs
from tool_specs.protocols import Policy, ToolLike
from tool_specs.schema import _META_VALIDATOR, is_normalized_json

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_STRING_BYTES",
    "DEFAULT_MAX_TOTAL_BYTES",
    "ArgumentProblem",
    "Policy",
    "ProblemKind",
    "ValidationOutcome",
    "check_schema",
    "compiled_validator",
    "prepared_validator",
    "format_problems",
    "json_type_name",
    "schema_validator",
    "short_repr",
    "validate_arguments",
]

DEFAULT_MAX_STRING_BYTES = 64 * 1024
DEFAULT_MAX_TOTAL_BYTES = 512 * 1024
DEFAULT_MAX_DEPTH = 64
_ALWAYS_ERRORS: frozenset[str] = frozenset({"not_an_object", "too_large", "not_json"})


@dataclass
class ValidationOutcome:
    """The result of :func:`validate_arguments`: ``errors`` block the call, ``warnings`` do not."""

    errors: list[ArgumentProblem] = field(default_factory=list)
    warnings: list[ArgumentProblem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when there are no errors (warnings allowed)."""
        return not self.errors

    @property
    def problems(self) -> list[ArgumentProblem]:
        """Errors and warnings together."""
        return [*self.errors, *self.warnings]


# ---------------------------------------------------------------- size limits


def _check_size(
    arguments: object, max_string_bytes: int, max_total_bytes: int, max_depth: int
) -> list[ArgumentProblem]:
    """Walk the arguments once, without serialising them whole, and report what is too big."""
    problems: list[ArgumentProblem] = []
    total = 0
    stack: list[tuple[object, str, int]] = [(arguments, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        if depth > max_depth:
            return [
                ArgumentProblem(
                    parameter=path,
                    problem="too_large",
                    expected=f"at most {max_depth} levels of nesting",
                    given=f"more than {max_depth} levels",
                    message=f"{_subject(path)} is nested more than {max_depth} levels deep; "
                    "send a flatter value.",
                )
            ]
        if isinstance(value, str):
            size = len(value.encode("utf-8", "surrogatepass"))
            total += size + 2
            if size > max_string_bytes:
                problems.append(
                    ArgumentProblem(
                        parameter=path,
                        problem="too_large",
                        expected=f"a string of at most {max_string_bytes} bytes",
                        given=f"a string of {size} bytes",
                        message=f"{_subject(path)} is too large: a string of {size} bytes, but the limit is "
                        f"{max_string_bytes} bytes per string.",
                    )
                )
        elif isinstance(value, Mapping):
            total += 2
            for key, item in value.items():
                key_text = str(key)
                key_size = len(key_text.encode("utf-8", "surrogatepass"))
                total += key_size + 4
                child = _join_path(path, key_text if key_size <= 200 else key_text[:60] + "…")
                if key_size > max_string_bytes:
                    problems.append(
                        ArgumentProblem(
                            parameter=child,
                            problem="too_large",
                            expected=f"a parameter name of at most {max_string_bytes} bytes",
                            given=f"a name of {key_size} bytes",
                            message=f"A parameter name of {key_size} bytes is too large; the limit is "
                            f"{max_string_bytes} bytes.",
                        )
                    )
                    continue
                stack.append((item, child, depth + 1))
        elif isinstance(value, list | tuple):
            total += 2
            for index, item in enumerate(value):
                total += 1
                stack.append((item, _join_path(path, index), depth + 1))
        else:
            total += 24
        if total > max_total_bytes and not problems:
            problems.append(
                ArgumentProblem(
                    parameter="",
                    problem="too_large",
                    expected=f"arguments of at most {max_total_bytes} bytes in total",
                    given=f"more than {max_total_bytes} bytes",
                    message=f"The arguments are too large: more than {max_total_bytes} bytes in total "
                    f"(the limit is {max_total_bytes} bytes).",
                )
            )
            break
    return problems


def _check_json(arguments: object) -> ArgumentProblem | None:
    try:
        json.dumps(arguments, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        return ArgumentProblem(
            parameter="",
            problem="not_json",
            expected="JSON values only",
            given=type(arguments).__name__,
            message=f"The arguments are not valid JSON ({str(exc)[:120]}).",
        )
    return None


# ---------------------------------------------------------------- schema validation


def _close_objects(schema: Any, depth: int = 0) -> Any:
    """Copy of ``schema`` in which open object schemas with ``properties`` reject unknown keys.

    Only follows ``properties``, ``items`` and ``prefixItems`` (not combinators, where closing one
    branch would break composition).
    """
    if not isinstance(schema, dict) or depth > 64:
        return schema
    out = dict(schema)
    props = out.get("properties")
    if isinstance(props, dict):
        out["properties"] = {k: _close_objects(v, depth + 1) for k, v in props.items()}
        if not any(k in out for k in ("additionalProperties", "patternProperties", "unevaluatedProperties")):
            out["additionalProperties"] = False
    if isinstance(out.get("items"), dict):
        out["items"] = _close_objects(out["items"], depth + 1)
    if isinstance(out.get("prefixItems"), list):
        out["prefixItems"] = [_close_objects(s, depth + 1) for s in out["prefixItems"]]
    return out


def check_schema(schema: Any) -> None:
    """``Draft202012Validator.check_schema``, about 4x faster for draft 2020-12 schemas.

    Checks against the flattened meta-schema that schema normalisation uses (it accepts exactly
    what the official one accepts for schemas that do not extend the meta-schema); a schema that
    names another ``$schema`` gets the official check.

    Raises:
        jsonschema.SchemaError: the first problem found, as ``check_schema`` raises it.
    """
    if isinstance(schema, dict) and schema.get("$schema", _DRAFT_2020_12) not in (_DRAFT_2020_12, _DRAFT_2020_12 + "#"):
        Draft202012Validator.check_schema(schema)
        return
    for error in _META_VALIDATOR.iter_errors(schema):
        raise SchemaError.create_from(error)


_DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"


@lru_cache(maxsize=4096)
def _compiled(schema_json: str) -> Draft202012Validator:
    schema = json.loads(schema_json)
    if not is_normalized_json(schema_json):  # normalisation checked it already
        check_schema(schema)
        for where, ref in nonlocal_refs(schema):
            raise SchemaError(nonlocal_ref_message(str(where[-1]), ref))
    return BoundedValidator(_close_objects(schema), registry=NO_RETRIEVAL)  # type: ignore[no-any-return]


@lru_cache(maxsize=4096)
def _plain(schema_json: str) -> Draft202012Validator:
    return BoundedValidator(json.loads(schema_json), registry=NO_RETRIEVAL)  # type: ignore[no-any-return]


def schema_validator(schema: Mapping[str, Any] | bool) -> Draft202012Validator:
    """A cached plain validator for a valid schema (no meta-schema check, objects left open)."""
    return _plain(json.dumps(schema, ensure_ascii=False))


@lru_cache(maxsize=4096)
def _prepared(schema_json: str, closed: bool) -> tuple[Draft202012Validator, Check | None]:
    validator = _compiled(schema_json) if closed else _plain(schema_json)
    return validator, compile_check(validator.schema)


def prepared_validator(schema: Mapping[str, Any] | bool, *, closed: bool) -> tuple[Draft202012Validator, Check | None]:
    """The cached validator of ``schema`` (:func:`compiled_validator` when ``closed``, else
    :func:`schema_validator`) and its fast yes-check (``None`` when the schema uses keywords the
    fast check does not handle): when the check passes jsonschema would find no error, when it fails
    jsonschema finds the errors."""
    return _prepared(json.dumps(schema, ensure_ascii=False), closed)


def compiled_validator(schema: Mapping[str, Any]) -> Draft202012Validator:
    """The (cached) validator used for ``schema``: checked against the meta-schema, objects closed.

    Raises:
        jsonschema.SchemaError: ``schema`` is not valid JSON Schema (normalise it first), or it has a
            ``$ref`` that is not local (nothing is ever fetched).
    """
    return _compiled(json.dumps(schema, ensure_ascii=False))


def _schema_of(spec_or_schema: ToolLike | Mapping[str, Any]) -> tuple[Mapping[str, Any], Policy | None]:
    schema = getattr(spec_or_schema, "input_schema", None)
    if schema is not None:
        return schema, getattr(spec_or_schema, "validation", None)
    if isinstance(spec_or_schema, Mapping):
        return spec_or_schema, None
    raise TypeError(f"expected a ToolSpec or a JSON Schema mapping, got {type(spec_or_schema).__name__}")


def validate_arguments(
    spec_or_schema: ToolLike | Mapping[str, Any],
    arguments: object,
    *,
    policy: Policy | None = None,
    max_string_bytes: int = DEFAULT_MAX_STRING_BYTES,
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> ValidationOutcome:
    """Check a call's arguments against a tool's input schema.

    Order: size limits first (any string over ``max_string_bytes``, the whole over
    ``max_total_bytes``, nesting over ``max_depth``), then JSON-ness, then that the arguments are an
    object, then the schema. The first three are always errors and stop validation; schema problems
    are errors under ``policy="strict"`` and warnings under ``"warn"``. ``policy`` defaults to the
    spec's ``validation`` field when a :class:`ToolSpec` is given, else ``"strict"``.

    ``spec_or_schema`` is a :class:`ToolSpec` or an already-normalised JSON Schema (see
    :func:`tool_specs.normalize_schema`).

    Raises:
        jsonschema.SchemaError: a raw schema that is not valid JSON Schema.
    """
    schema, spec_policy = _schema_of(spec_or_schema)
    effective: Policy = policy or spec_policy or "strict"
    if effective not in ("strict", "warn"):
        raise ValueError(f"unknown validation policy {effective!r}; use 'strict' or 'warn'")

    size_problems = _check_size(arguments, max_string_bytes, max_total_bytes, max_depth)
    if size_problems:
        return ValidationOutcome(errors=size_problems)
    not_json = _check_json(arguments)
    if not_json is not None:
        return ValidationOutcome(errors=[not_json])
    if not isinstance(arguments, Mapping):
        given = _given(arguments)
        return ValidationOutcome(
            errors=[
                ArgumentProblem(
                    parameter="",
                    problem="not_an_object",
                    expected="object",
                    given=given,
                    message=f"The arguments must be a JSON object mapping parameter names to values, "
                    f"but got {given}.",
                )
            ]
        )

    prepared = getattr(spec_or_schema, "input_validator", None)  # a ToolSpec's, prepared once
    validator, fast = prepared if isinstance(prepared, tuple) else prepared_validator(schema, closed=True)
    instance = arguments if type(arguments) is dict else dict(arguments)
    if fast is not None and fast(instance):  # the common case: valid, and known so in microseconds
        return ValidationOutcome()
    problems: list[ArgumentProblem] = []
    seen: set[tuple[str, str, str]] = set()
    for error in validator.iter_errors(instance):
        for problem in problems_from_error(error):
            key = (problem.parameter, problem.problem, problem.message)
            if key not in seen:
                seen.add(key)
                problems.append(problem)
    order = {"missing_required": 0, "unknown_parameter": 1, "wrong_type": 2, "enum": 3, "other": 4}
    problems.sort(key=lambda p: (order.get(p.problem, 9), p.parameter))
    if effective == "strict":
        return ValidationOutcome(errors=problems)
    return ValidationOutcome(
        errors=[p for p in problems if p.problem in _ALWAYS_ERRORS],
        warnings=[p for p in problems if p.problem not in _ALWAYS_ERRORS],
    )


def format_problems(outcome: ValidationOutcome, tool_name: str | None = None) -> str:
    """The model-facing text for a rejected call: a heading naming the tool, one line per error,
    and a closing instruction. Warnings are listed only when there are no errors."""
    problems = outcome.errors or outcome.warnings
    target = f"tool '{tool_name}'" if tool_name else "the tool"
    if not problems:
        return f"The arguments for {target} are valid."
    label = "Invalid arguments" if outcome.errors else "Warnings about the arguments"
    count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
    lines = [f"{label} for {target} ({count}):"]
    lines.extend(f"- {p.message}" for p in problems)
    if outcome.errors:
        lines.append(f"Fix the arguments and call {target} again.")
    return "\n".join(lines)
