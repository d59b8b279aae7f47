"""ToolSpec: construction, names, MCP conversion, and call() never raising."""

from __future__ import annotations

import json
from typing import Any

import mcp.types
import pytest
from jsonschema import Draft202012Validator
from pydantic import ValidationError

from tool_specs import CallContext, PythonExecutor, SimulatedExecutor, ToolResult, ToolSpec

LOOSE = {
    "properties": {"vibrate": {"type": "int", "default": 0}, "label": {"default": ""}},
    "required": ["time"],
}


def test_loose_schema_is_normalised_on_construction() -> None:
    spec = ToolSpec(name="set_alarm", input_schema=LOOSE)
    Draft202012Validator.check_schema(spec.input_schema)
    assert spec.input_schema["type"] == "object"
    assert spec.input_schema["properties"]["vibrate"] == {"type": "integer", "default": 0}
    assert "time" in spec.input_schema["properties"]
    assert len(spec.normalization_notes) == 3
    # re-validating the dumped model neither changes the schema nor repeats notes
    again = ToolSpec(**spec.model_dump())
    assert again.input_schema == spec.input_schema
    assert again.normalization_notes == spec.normalization_notes


def test_defaults() -> None:
    spec = ToolSpec(name="noop")
    assert spec.description == ""
    assert spec.input_schema == {"type": "object", "properties": {}}
    assert spec.output_schema is None
    assert isinstance(spec.executor, SimulatedExecutor)
    assert spec.validation == "strict"
    assert spec.annotations == {}
    assert ToolSpec(name="n", description=None).description == ""  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "name", ["Get_Hotel_Reviews(Tips)", "date of journey", "sss", "a.b-c", "x" * 128, "日本語"]
)
def test_permissive_names(name: str) -> None:
    assert ToolSpec(name=name).name == name


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "empty"),
        ("   ", "empty"),
        (" lead", "whitespace"),
        ("tab\there", "control"),
        ("nl\n", "whitespace"),
        ("x" * 129, "limit"),
        ("bell\x07", "control"),
    ],
)
def test_bad_names_are_rejected(name: str, reason: str) -> None:
    with pytest.raises(ValidationError, match=reason):
        ToolSpec(name=name)


def test_unknown_fields_and_bad_policy_are_rejected() -> None:
    with pytest.raises(ValidationError):
        ToolSpec(name="t", colour="red")  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        ToolSpec(name="t", validation="lenient")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="root must describe an object"):
        ToolSpec(name="t", input_schema={"type": "string"})


def test_executor_config_forms() -> None:
    spec = ToolSpec(
        name="c", executor={"kind": "python", "target": "tool_specs.examples.unit_converter:convert"}
    )
    assert isinstance(spec.executor, PythonExecutor)
    assert isinstance(ToolSpec(name="s", executor="simulated").executor, SimulatedExecutor)
    with pytest.raises(ValidationError, match="unknown executor kind"):
        ToolSpec(name="s", executor="bogus")


def test_with_changes_and_frozen() -> None:
    spec = ToolSpec(name="t", input_schema=LOOSE)
    warn = spec.with_changes(validation="warn")
    assert warn.validation == "warn" and spec.validation == "strict"
    assert warn.input_schema == spec.input_schema
    with pytest.raises(ValidationError):
        spec.name = "other"  # type: ignore[misc]


def test_from_benchmark_keeps_unknown_fields_and_applies_overrides() -> None:
    raw = {"name": "t", "description": "d", "parameters": LOOSE, "category": "alarm", "response": {"ok": {}}}
    spec = ToolSpec.from_benchmark(raw, validation="warn", annotations={"benchmark": "familytool-b"})
    assert spec.validation == "warn"
    assert spec.annotations == {"source_fields": {"category": "alarm"}, "benchmark": "familytool-b"}
    assert spec.output_schema == {"type": "object", "properties": {"ok": {}}}
    assert raw["parameters"] is LOOSE and "type" not in LOOSE  # the raw dict is not modified


def test_to_mcp_tool() -> None:
    spec = ToolSpec(
        name="book",
        description="Book it.",
        input_schema=LOOSE,
        output_schema={"id": {"type": "str"}},
        annotations={"secret": "gold"},
    )
    tool = spec.to_mcp_tool()
    assert isinstance(tool, mcp.types.Tool)
    assert tool.name == "book" and tool.description == "Book it."
    assert tool.input_schema == spec.input_schema
    assert tool.output_schema is not None and tool.output_schema["type"] == "object"
    assert tool.output_schema["properties"]["result"] == spec.output_schema
    wire = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
    assert set(wire) == {"name", "description", "inputSchema", "outputSchema"}
    assert "gold" not in str(wire)
    assert mcp.types.Tool.model_validate(wire) == tool
    # the MCP client validates structured results against the advertised schema: ours pass
    assert ToolSpec(name="x").to_mcp_tool().description is None


async def test_tool_result_to_mcp() -> None:
    spec = ToolSpec(name="book", input_schema=LOOSE, output_schema={"id": {"type": "str"}}, validation="warn")
    result = await spec.call({"time": "07:00", "colour": "red"})
    call_result = result.to_mcp()
    assert isinstance(call_result, mcp.types.CallToolResult)
    assert call_result.is_error is False
    assert len(call_result.content) == 2  # the result, then the warnings the model should read
    assert isinstance(call_result.content[0], mcp.types.TextContent)
    assert call_result.content[0].text == result.text
    assert "colour" in call_result.content[1].text and "still run" in call_result.content[1].text
    assert call_result.structured_content == result.structured
    Draft202012Validator(spec.to_mcp_tool().output_schema).validate(call_result.structured_content)
    wire = call_result.model_dump(by_alias=True, exclude_none=True, mode="json")
    assert wire["isError"] is False
    assert wire["_meta"] == {
        "warnings": ["Unknown parameter 'colour'; valid parameters are: vibrate, label, time."]
    }
    assert mcp.types.CallToolResult.model_validate(wire).structured_content == result.structured

    error = ToolResult.error("boom").to_mcp()
    assert error.is_error is True and error.structured_content is None and error.content[0].text == "boom"


async def test_call_rejects_bad_arguments_with_a_model_facing_message() -> None:
    spec = ToolSpec(name="set_alarm", input_schema=LOOSE)
    result = await spec.call({"vibrate": "high"})
    assert result.is_error
    assert result.text.splitlines() == [
        "Invalid arguments for tool 'set_alarm' (2 problems):",
        "- Missing required parameter 'time'.",
        "- Parameter 'vibrate' expected type integer but got string \"high\".",
        "Fix the arguments and call tool 'set_alarm' again.",
    ]
    not_object = await spec.call(["time", "07:00"])
    assert not_object.is_error and "must be a JSON object" in not_object.text


async def test_call_never_raises() -> None:
    class Broken:
        def __init__(self, value: Any = None, exc: Exception | None = None) -> None:
            self.value, self.exc = value, exc

        async def __call__(self, spec: ToolSpec, arguments: dict[str, Any], ctx: CallContext) -> Any:
            if self.exc is not None:
                raise self.exc
            return self.value

    def call(executor: Any, **kw: Any) -> Any:
        return ToolSpec(name="b", executor=executor, validation="warn", **kw).call({})

    failed = await call(Broken(exc=KeyError("k")))
    assert failed.is_error and failed.text == "b failed: KeyError: 'k'"
    long = await call(Broken(exc=ValueError("x" * 10_000)))
    assert long.is_error and len(long.text) < 2100
    bad_key = await call(Broken(value={1: "a"}))
    assert bad_key.is_error and "non-string key" in bad_key.text
    nan = await call(Broken(value={"a": float("nan")}))
    assert nan.is_error and "not JSON-serialisable" in nan.text
    # a tool declaring an output schema must return a matching structured result
    text_only = await call(Broken(value="plain"), output_schema={"id": {"type": "string"}})
    assert text_only.is_error and "no structured result" in text_only.text
    mismatch = await call(Broken(value={"id": 5}), output_schema={"id": {"type": "string"}})
    assert mismatch.is_error and "does not match the tool's output schema at id" in mismatch.text
    ok = await call(Broken(value={"id": "5"}), output_schema={"id": {"type": "string"}})
    assert not ok.is_error and ok.structured == {"id": "5"}
    passthrough = await call(Broken(value=ToolResult(is_error=True, text="upstream said no")))
    assert passthrough.is_error and passthrough.text == "upstream said no"


async def test_executor_gets_a_copy_of_the_arguments_and_the_context() -> None:
    seen: dict[str, Any] = {}

    class Recorder:
        async def __call__(
            self, spec: ToolSpec, arguments: dict[str, Any], ctx: CallContext
        ) -> dict[str, Any]:
            seen["ctx"] = ctx
            arguments.get("nested", {})["x"] = "mutated"
            return {}

    spec = ToolSpec(name="r", executor=Recorder(), validation="warn")
    arguments = {"nested": {"x": 1}}
    await spec.call(arguments, CallContext(episode_id="ep", benchmark="b", extra={"k": 1}))
    assert arguments == {"nested": {"x": 1}}
    assert seen["ctx"] == CallContext(episode_id="ep", task_id=None, benchmark="b", extra={"k": 1})
    await spec.call({})
    assert seen["ctx"] == CallContext()


def test_to_dict_is_json_ready_and_round_trips() -> None:
    spec = ToolSpec(
        name="c",
        input_schema=LOOSE,
        executor={"kind": "python", "target": "tool_specs.examples.unit_converter:convert", "timeout_s": 2},
        annotations={"benchmark": "x"},
    )
    data = json.loads(json.dumps(spec.to_dict()))
    assert data["executor"] == {
        "kind": "python",
        "target": "tool_specs.examples.unit_converter:convert",
        "timeout_s": 2.0,
    }
    again = ToolSpec(**data)
    assert again.input_schema == spec.input_schema
    assert isinstance(again.executor, PythonExecutor)
    assert ToolSpec(name="s").to_dict()["executor"] == {"kind": "simulated"}
