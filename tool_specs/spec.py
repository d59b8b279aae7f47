"""``ToolSpec``: what a tool is (name, description, input/output schema, executor, validation policy)."""

from __future__ import annotations

import copy
import functools
import unicodedata
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from jsonschema import Draft202012Validator
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tool_specs._fast_schema import Check
from tool_specs.executors import SimulatedExecutor, resolve_executor
from tool_specs.protocols import Executor
from tool_specs.results import CallContext, ToolResult
from tool_specs.schema import normalize_output_schema, normalize_schema
from tool_specs.validation import format_problems, prepared_validator, short_repr, validate_arguments

if TYPE_CHECKING:
    import mcp.types

__all__ = ["INPUT_SCHEMA_KEYS", "MAX_NAME_LENGTH", "OUTPUT_SCHEMA_KEYS", "ToolSpec"]

MAX_NAME_LENGTH = 128
#: Keys under which benchmarks put the input schema, in order of preference.
INPUT_SCHEMA_KEYS = ("input_schema", "inputSchema", "parameters", "arguments")
#: Keys under which benchmarks put the output description, in order of preference.
OUTPUT_SCHEMA_KEYS = ("output_schema", "outputSchema", "response", "responses", "results")
_NAME_KEYS = ("name", "api_name")
_DESCRIPTION_KEYS = ("description", "api_description")
_MAX_ERROR_TEXT = 2000
_CACHED = ("advertised_output_schema", "input_validator", "output_validator")  # ToolSpec's cached properties


class ToolSpec(BaseModel):
    """One tool: what the model sees (name, description, schemas) and how calls are answered.

    It satisfies :class:`~tool_specs.protocols.ToolLike`, the view executors, validation and
    matching are written against (so that they need not import this module).

    Construction normalises ``input_schema`` and ``output_schema`` with
    :func:`~tool_specs.normalize_schema` / :func:`~tool_specs.normalize_output_schema` (idempotent;
    notes about what changed are appended to ``normalization_notes``), so
    ``ToolSpec(name=..., input_schema=loose)`` always ends with valid draft 2020-12 JSON Schema.
    ``executor`` may also be given as a spec-file executor config (``"simulated"``,
    ``{"kind": "python", "target": "mod:func"}``). The model is frozen: use
    ``ToolSpec(**{**spec.model_dump(), ...})`` or :meth:`with_changes` to derive a variant
    (``model_copy(update=...)`` skips normalisation).

    ``validation`` is the argument policy: ``"strict"`` (any schema violation is an error) or
    ``"warn"`` (schema violations become warnings and the call still runs).
    ``annotations`` is free metadata (source benchmark, original fields); it is not sent to clients.
    ``title`` and ``hints`` are what clients are shown: a human-readable name and the MCP tool
    annotations (``readOnlyHint``, ``destructiveHint``, ``idempotentHint``, ``openWorldHint``).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True, extra="forbid")

    name: str
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    output_schema: dict[str, Any] | None = None
    executor: Executor = Field(default_factory=SimulatedExecutor)
    validation: Literal["strict", "warn"] = "strict"
    annotations: dict[str, Any] = Field(default_factory=dict)
    title: str | None = None
    hints: dict[str, bool] | None = None
    normalization_notes: list[str] = Field(default_factory=list)


    @model_validator(mode="before")
    @classmethod
    def _normalise(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        notes = list(data.get("normalization_notes") or [])
        schema, input_notes = normalize_schema(data.get("input_schema"))
        data["input_schema"] = schema
        notes.extend(input_notes)
        output, output_notes = normalize_output_schema(data.get("output_schema"))
        data["output_schema"] = output
        notes.extend(f"output: {note}" for note in output_notes)
        data["normalization_notes"] = notes
        if data.get("description") is None:
            data["description"] = ""
        executor = data.get("executor")
        if executor is None or isinstance(executor, str | Mapping):
            data["executor"] = resolve_executor(executor)
        return data

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not value or not value.strip():
            raise ValueError("tool name must not be empty")
        if len(value) > MAX_NAME_LENGTH:
            raise ValueError(f"tool name is {len(value)} characters long; the limit is {MAX_NAME_LENGTH}")
        if value != value.strip():
            raise ValueError(f"tool name {value!r} has leading or trailing whitespace")
        bad = [ch for ch in value if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")]
        if bad:
            raise ValueError(f"tool name {value!r} contains control character(s) {''.join(bad)!r}")
        return value

    @field_validator("executor")
    @classmethod
    def _check_executor(cls, value: Any) -> Any:
        if not callable(value):
            raise ValueError(f"executor must be callable, got {type(value).__name__}")
        return value

    # ------------------------------------------------------------------ construction helpers

    @classmethod
    def from_benchmark(cls, raw: Mapping[str, Any], **overrides: Any) -> ToolSpec:
        """Build a spec from a benchmark's tool dict, in any of the common dialects.

        Accepts ``name``/``api_name``, ``description``/``api_description``, the input schema under
        ``input_schema``/``inputSchema``/``parameters``/``arguments`` (a top-level ``required``
        list, as some benchmarks write it, is merged in), and the output under
        ``output_schema``/``outputSchema``/``response``/``responses``/``results``. An OpenAI-style
        ``{"type": "function", "function": {...}}`` wrapper is unwrapped. Other keys are kept in
        ``annotations["source_fields"]``. Keyword ``overrides`` (``executor``, ``validation``,
        ``annotations`` (merged), ``description``...) win over the raw dict.

        Raises:
            pydantic.ValidationError: no usable name, or a schema that cannot be normalised.
        """
        if not isinstance(raw, Mapping):
            raise TypeError(f"a benchmark tool must be a mapping, got {type(raw).__name__}")
        if raw.get("type") == "function" and isinstance(raw.get("function"), Mapping):
            raw = raw["function"]
        rest = dict(raw)
        name = _pop_first(rest, _NAME_KEYS)
        description = _pop_first(rest, _DESCRIPTION_KEYS)
        input_raw = _pop_first(rest, INPUT_SCHEMA_KEYS)
        top_required = rest.pop("required", None)
        output_raw = _pop_first(rest, OUTPUT_SCHEMA_KEYS)
        notes: list[str] = []
        if top_required is not None:
            if isinstance(top_required, str):
                top_required = [top_required]
            if isinstance(top_required, list) and all(isinstance(r, str) for r in top_required):
                input_schema, notes = normalize_schema(input_raw, required=top_required)
            else:
                rest["required"] = top_required
                input_schema, notes = normalize_schema(input_raw)
        else:
            input_schema = input_raw
        annotations: dict[str, Any] = {}
        if rest:
            annotations["source_fields"] = copy.deepcopy(rest)
        annotations.update(overrides.pop("annotations", None) or {})
        fields: dict[str, Any] = {
            "name": name,
            "description": description or "",
            "input_schema": input_schema,
            "output_schema": output_raw,
            "annotations": annotations,
            "normalization_notes": notes,
        }
        fields.update(overrides)
        return cls(**fields)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (for traces and run configs): the executor appears as its
        spec-file config (``executor.config()``) when it has one, else as its ``repr``."""
        config = getattr(self.executor, "config", None)
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": copy.deepcopy(self.input_schema),
            "output_schema": copy.deepcopy(self.output_schema),
            "executor": config() if callable(config) else repr(self.executor),
            "validation": self.validation,
            "annotations": copy.deepcopy(self.annotations),
            "normalization_notes": list(self.normalization_notes),
        }

    def with_changes(self, **changes: Any) -> ToolSpec:
        """A validated copy with some fields replaced (schemas are normalised again)."""
        data = {name: getattr(self, name) for name in type(self).model_fields}
        data.update(changes)
        return type(self)(**data)

    # ------------------------------------------------------------------ MCP views

    # Per-spec caches are cached properties (kept in the instance's ``__dict__``): a pydantic private
    # attribute is read through ``__getattr__``, which cost more per call than what it caches.

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> ToolSpec:
        """pydantic's copy, without the per-spec caches (they may describe the fields ``update`` replaces)."""
        copied = super().model_copy(update=update, deep=deep)
        for name in _CACHED:
            copied.__dict__.pop(name, None)
        return copied

    def __getstate__(self) -> dict[Any, Any]:
        """pydantic's pickled state, without the per-spec caches (validators do not pickle; they are
        made again on first use)."""
        state = super().__getstate__()
        state["__dict__"] = {k: v for k, v in state["__dict__"].items() if k not in _CACHED}
        return state

    @functools.cached_property
    def advertised_output_schema(self) -> dict[str, Any] | None:
        """The output schema clients see: the executor's ``output_schema_for(spec)`` when it defines
        one (the simulated executor's envelope), else ``output_schema``."""
        hook = getattr(self.executor, "output_schema_for", None)
        advertised: dict[str, Any] | None = hook(self) if callable(hook) else self.output_schema
        return advertised

    @functools.cached_property
    def input_validator(self) -> tuple[Draft202012Validator, Check | None]:
        """The validator of the arguments (objects closed) and its fast yes-check, prepared on first use
        (see :func:`~tool_specs.validation.prepared_validator`); the model is frozen, so they stay right."""
        return prepared_validator(self.input_schema, closed=True)

    @functools.cached_property
    def output_validator(self) -> tuple[Draft202012Validator, Check | None] | None:
        """The validator of structured results against :attr:`advertised_output_schema` and its fast
        yes-check (``None``: no output schema), prepared on first use."""
        schema = self.advertised_output_schema
        return None if schema is None else prepared_validator(schema, closed=False)

    def to_mcp_tool(self) -> mcp.types.Tool:
        """The MCP ``Tool`` listing entry (``annotations`` are not exported; ``title`` and ``hints`` are)."""
        import mcp.types  # on use: what only serves MCP (importing the SDK's models costs ~0.5 s)

        shown = None
        if self.title is not None or self.hints:
            shown = mcp.types.ToolAnnotations.model_validate({"title": self.title, **(self.hints or {})})
        return mcp.types.Tool(
            name=self.name,
            title=self.title,
            annotations=shown,
            description=self.description or None,
            input_schema=copy.deepcopy(self.input_schema),
            output_schema=copy.deepcopy(self.advertised_output_schema),
        )

    # ------------------------------------------------------------------ calling

    async def call(self, arguments: object, ctx: CallContext | None = None) -> ToolResult:
        """Validate ``arguments`` and run the executor. Never raises (except on cancellation).

        Rejected arguments give an error result whose text lists the problems (see
        :func:`~tool_specs.format_problems`); under the ``"warn"`` policy schema problems are
        attached as ``warnings`` and the call runs. An exception from the executor becomes
        ``ToolResult(is_error=True, text="<tool> failed: <ExcType>: <msg>")``. A structured result
        that does not match the advertised output schema (or a missing one) is an error too,
        because MCP clients reject such results.
        """
        ctx = ctx if ctx is not None else CallContext()
        try:
            outcome = validate_arguments(self, arguments, policy=self.validation)
        except Exception as exc:  # a broken schema must not crash the server
            return ToolResult.error(
                f"{self.name} failed: could not validate arguments: {type(exc).__name__}: {exc}"
            )
        warnings = [p.message for p in outcome.warnings]
        if not outcome.ok:
            return ToolResult.error(format_problems(outcome, self.name), warnings=warnings)
        if not isinstance(arguments, Mapping):  # validation accepts only JSON objects; this narrows the type
            return ToolResult.error(f"{self.name} failed: arguments must be a JSON object", warnings=warnings)
        try:
            raw = await self.executor(self, _copy_json(arguments), ctx)
            result = ToolResult.from_value(raw)
        except Exception as exc:
            message = str(exc)
            if len(message) > _MAX_ERROR_TEXT:
                message = message[:_MAX_ERROR_TEXT] + "…"
            return ToolResult.error(f"{self.name} failed: {type(exc).__name__}: {message}", warnings=warnings)
        if not result.is_error:
            problem = self._output_problem(result)
            if problem:
                return ToolResult.error(f"{self.name} failed: {problem}", warnings=warnings)
        if warnings:
            result = ToolResult(
                is_error=result.is_error,
                text=result.text,
                structured=result.structured,
                warnings=[*warnings, *result.warnings],
            )
        return result

    def _output_problem(self, result: ToolResult) -> str | None:
        prepared = self.output_validator
        if prepared is None:
            return None
        if result.structured is None:
            return "it returned no structured result, but the tool declares an output schema"
        validator, fast = prepared
        if fast is not None and fast(result.structured):
            return None
        error = next(iter(validator.iter_errors(result.structured)), None)
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        return (
            f"its result does not match the tool's output schema at {where}: "
            f"{error.validator} {short_repr(error.validator_value, 60)}; got {short_repr(error.instance)}"
        )


def _copy_json(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of validated arguments for the executor (which may change its copy): plain dicts,
    lists and immutable scalars are copied directly, ``copy.deepcopy`` does the rest (several times
    slower: it keeps a memo of every object)."""
    out: dict[str, Any] = {}
    for key, value in arguments.items():
        kind = type(value)
        if kind is str or kind is int or kind is float or kind is bool or value is None:
            out[key] = value
        elif kind is list and all(type(v) is str for v in value):
            out[key] = list(value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _pop_first(data: dict[str, Any], keys: tuple[str, ...]) -> Any:
    """Pop the first present key of ``keys``; the others stay (and end up in source_fields)."""
    for key in keys:
        if key in data:
            return data.pop(key)
    return None
