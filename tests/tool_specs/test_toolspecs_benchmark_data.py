"""Real benchmark data: every tool normalises to valid JSON Schema, and FamilyTool's gold calls
run under the "warn" policy while "strict" reports exactly the same problems as errors.

Run with ``-s`` to see the FamilyTool summary (gold calls with schema problems, by kind).
Data comes from ``$EVALS_DATA_DIR`` (default ``<repo>/../shared/data``); tests skip when it is absent.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tool_specs import ToolSpec, find_tool, validate_arguments


def check_distinct_schemas(specs: Iterable[ToolSpec], *, every: int = 1) -> int:
    """Run the official ``check_schema`` on each distinct input/output schema (or every n-th one)."""
    distinct: dict[str, dict[str, Any]] = {}
    for spec in specs:
        for schema in (spec.input_schema, spec.output_schema):
            if schema is not None:
                distinct.setdefault(json.dumps(schema, sort_keys=True), schema)
    for schema in list(distinct.values())[::every]:
        Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object"
    return len(distinct)


@pytest.mark.parametrize("variant", ["b", "e"])
async def test_familytool_gold_calls_pass_under_warn(
    variant: str, familytool_records: Callable[[str], list[Any]]
) -> None:
    records = familytool_records(variant)
    calls_with_problems = 0  # strict validation has errors
    calls_warned = 0  # warn validation has warnings
    calls_rejected = 0  # the strict spec's call() returned an error result
    problems_by_kind: Counter[str] = Counter()
    calls_by_kind: Counter[str] = Counter()
    all_specs: list[ToolSpec] = []
    gold_calls = 0
    for record in records:
        assert record[1]["role"] == "candidate_tools" and record[3]["role"] == "tool_call"
        specs = [
            ToolSpec.from_benchmark(
                tool, validation="warn", annotations={"benchmark": f"familytool-{variant}"}
            )
            for tool in record[1]["content"]
        ]
        all_specs.extend(specs)
        for call in record[3]["content"]:
            gold_calls += 1
            spec = find_tool(specs, call["name"])
            arguments = call["parameters"]
            warn = validate_arguments(spec, arguments, policy="warn")
            strict = validate_arguments(spec, arguments, policy="strict")
            # warn never blocks a gold call, and strict reports exactly what warn reports
            assert warn.errors == [], (record[0]["content"], warn.errors)
            assert strict.errors == warn.warnings
            assert strict.warnings == []
            calls_warned += bool(warn.warnings)
            if strict.errors:
                calls_with_problems += 1
                problems_by_kind.update(p.problem for p in strict.errors)
                calls_by_kind.update({p.problem for p in strict.errors})

            # the call really runs under warn (the FamilyTool loader's policy) ...
            result = await spec.call(arguments)
            assert not result.is_error, result.text
            assert result.warnings == [p.message for p in warn.warnings]
            advertised = spec.advertised_output_schema
            if advertised is not None:
                Draft202012Validator(advertised).validate(result.structured)
            # ... and is rejected under strict exactly when strict validation has errors
            strict_result = await spec.with_changes(validation="strict").call(arguments)
            assert strict_result.is_error == bool(strict.errors)
            calls_rejected += strict_result.is_error

    assert gold_calls == len(records)  # FamilyTool has exactly one gold call per task
    distinct = check_distinct_schemas(all_specs)
    assert calls_with_problems == calls_warned == calls_rejected
    assert sum(calls_by_kind.values()) >= calls_with_problems
    assert set(problems_by_kind) <= {"missing_required", "unknown_parameter", "wrong_type", "enum", "other"}
    print(
        f"\nfamilytool-{variant}: {len(records)} gold calls, {len({s.name for s in all_specs})} distinct tools, "
        f"{distinct} distinct schemas; {calls_with_problems} gold calls have schema problems "
        f"(errors under strict, warnings under warn). Problems by kind: {dict(sorted(problems_by_kind.items()))}; "
        f"calls by kind: {dict(sorted(calls_by_kind.items()))}"
    )


def test_familytool_every_candidate_tool_normalises(familytool_records: Callable[[str], list[Any]]) -> None:
    raw_tools: dict[str, dict[str, Any]] = {}
    for variant in ("b", "e"):
        for record in familytool_records(variant):
            for tool in record[1]["content"]:
                raw_tools.setdefault(json.dumps(tool, sort_keys=True), tool)
    specs = [ToolSpec.from_benchmark(tool) for tool in raw_tools.values()]
    check_distinct_schemas(specs)
    for raw, spec in zip(raw_tools.values(), specs, strict=True):
        # nothing is lost: every raw property and required name is in the normalised schema
        props = raw["parameters"]["properties"]
        names = [p["name"] for p in props] if isinstance(props, list) else list(props)
        assert set(names) | set(raw["parameters"]["required"]) == set(spec.input_schema["properties"])
        assert spec.input_schema["required"] == raw["parameters"]["required"]
        if raw.get("response"):
            assert spec.output_schema is not None
            assert list(spec.output_schema["properties"]) == list(raw["response"])


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def test_nestools_tools_normalise(data_file: Callable[..., Path]) -> None:
    apis = [api for row in _jsonl(data_file("nestools", "test_data.jsonl")) for api in row["api"]]
    specs = [ToolSpec.from_benchmark(api) for api in apis]
    for api, spec in zip(apis, specs, strict=True):
        assert spec.name == api["api_name"]
        assert set(spec.input_schema["properties"]) == set(api["parameters"]) | set(api["required"])
        assert spec.input_schema.get("required", []) == api["required"]
    check_distinct_schemas(specs, every=25)  # the official check is slow; a sample confirms ours


def test_ultratool_tools_normalise(data_file: Callable[..., Path]) -> None:
    tools = [
        tool
        for row in _jsonl(data_file("ultratool", "English-dataset", "test.json"))
        for tool in row["tools"]
    ]
    specs = [ToolSpec.from_benchmark(tool) for tool in tools]
    assert all(spec.output_schema is not None for spec in specs)
    check_distinct_schemas(specs, every=5)


def test_complexfuncbench_and_toolhop_tools_normalise(data_file: Callable[..., Path]) -> None:
    cfb = json.loads(data_file("complexfuncbench", "All_Tools.json").read_text(encoding="utf-8"))["function"]
    specs = [ToolSpec.from_benchmark(tool) for tool in cfb]
    for raw, spec in zip(cfb, specs, strict=True):
        assert spec.normalization_notes == [], (raw["name"], spec.normalization_notes)
        assert spec.input_schema == raw["parameters"]
    toolhop = [
        tool
        for row in _jsonl(data_file("toolhop", "toolhop_subset100_localbench.jsonl"))
        for tool in row["tools"].values()
    ]
    specs += [ToolSpec.from_benchmark(tool) for tool in toolhop]
    check_distinct_schemas(specs)
