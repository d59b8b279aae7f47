"""Executors: the simulated acknowledgement, real Python functions, and the kind registry."""

from __future__ import annotations

import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tool_specs import (
    CallContext,
    ExecutorConfigError,
    PythonExecutor,
    SimulatedExecutor,
    ToolResult,
    ToolSpec,
    known_executor_kinds,
    register_executor_kind,
    resolve_executor,
    simulated_value,
)

OUTPUT = {
    "type": "object",
    "properties": {
        "booking_id": {"type": "string"},
        "restaurant": {"type": "string"},
        "party_size": {"type": "integer"},
        "price": {"type": "number"},
        "confirmed": {"type": "boolean"},
        "tags": {"type": "array"},
        "details": {
            "type": "object",
            "properties": {"table": {"type": "integer"}, "note": {"type": "string"}},
        },
        "seating": {"enum": ["indoor", "outdoor"]},
        "date": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
        "time": {"type": "string", "format": "HH:MM"},
        "anything": {},
    },
}


def booking_spec(**kw: Any) -> ToolSpec:
    return ToolSpec(
        name="book_table",
        input_schema={
            "type": "object",
            "properties": {"restaurant": {"type": "string"}, "party_size": {"type": "integer"}},
            "required": ["restaurant"],
        },
        output_schema=OUTPUT,
        **kw,
    )


# ----------------------------------------------------------------------------- simulated


async def test_simulated_result_is_shaped_by_the_output_schema() -> None:
    spec = booking_spec()
    result = await spec.call({"restaurant": "Chez Nous", "party_size": 4})
    assert not result.is_error
    assert result.structured == {
        "status": "success",
        "tool": "book_table",
        "arguments": {"party_size": 4, "restaurant": "Chez Nous"},
        "result": {
            "booking_id": "<booking_id>",
            "restaurant": "Chez Nous",
            "party_size": 4,
            "price": 0,
            "confirmed": False,
            "tags": [],
            "details": {"table": 0, "note": "<note>"},
            "seating": "indoor",
            "date": "2000-01-01",
            "time": "00:00",
            "anything": "<anything>",
        },
    }
    # the envelope matches the schema the tool advertises
    Draft202012Validator(spec.advertised_output_schema).validate(result.structured)
    Draft202012Validator(spec.output_schema).validate(result.structured["result"])


async def test_simulated_echo_only_when_the_argument_fits_the_output_field() -> None:
    spec = ToolSpec(
        name="t",
        input_schema={"type": "object", "properties": {"n": {}}},
        output_schema={"n": {"type": "integer"}},
    )
    assert (await spec.call({"n": 3})).structured["result"] == {"n": 3}
    assert (await spec.call({"n": "three"})).structured["result"] == {"n": 0}


async def test_simulated_is_deterministic_byte_for_byte() -> None:
    spec = booking_spec()
    first = await spec.call({"restaurant": "Chez Nous", "party_size": 4})
    second = await spec.call({"party_size": 4, "restaurant": "Chez Nous"})
    third = await booking_spec().call({"restaurant": "Chez Nous", "party_size": 4})
    assert first.text == second.text == third.text
    assert first.text.encode() == third.to_mcp().content[0].text.encode()


async def test_simulated_without_output_schema() -> None:
    spec = ToolSpec(name="ping", input_schema={"type": "object", "properties": {"x": {}}})
    result = await spec.call({"x": 1})
    assert result.structured == {"status": "success", "tool": "ping", "arguments": {"x": 1}, "result": {}}
    assert spec.advertised_output_schema is None
    assert spec.to_mcp_tool().output_schema is None


def test_simulated_value_rules() -> None:
    assert simulated_value({"const": 5}, "f") == 5
    assert simulated_value({"type": "string", "default": "d"}, "f") == "d"
    assert simulated_value({"type": ["null", "integer"]}, "f") == 0
    assert simulated_value({"type": "null"}, "f") is None
    assert simulated_value({"anyOf": [{"type": "boolean"}, {"type": "string"}]}, "f") is False
    assert simulated_value({"type": "string", "format": "email"}, "f") == "user@example.com"
    assert simulated_value(True, "f") == "<f>"


# ----------------------------------------------------------------------------- python

MODULE = textwrap.dedent(
    """
    import asyncio
    import threading

    def add(a, b=0):
        return {"sum": a + b, "thread": threading.get_ident()}

    async def add_async(a, b=0):
        await asyncio.sleep(0)
        return {"sum": a + b}

    def fail(reason):
        raise RuntimeError(f"cannot do it: {reason}")

    def greet(name):
        return f"hello {name}"

    def listing(n):
        return list(range(n))

    def not_json():
        return {"when": object()}

    def slow():
        import time
        time.sleep(0.5)
        return {}

    class Tools:
        @staticmethod
        def double(x):
            return x * 2
    """
)


@pytest.fixture
def module_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "ts_test_tools.py").write_text(MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def python_spec(target: str, **kw: Any) -> ToolSpec:
    return ToolSpec(
        name=target.split(":")[1], input_schema={}, executor=PythonExecutor(target, **kw), validation="warn"
    )


async def test_python_sync_function_runs_in_a_thread(module_dir: Path) -> None:
    result = await python_spec("ts_test_tools:add").call({"a": 2, "b": 3})
    assert not result.is_error
    assert result.structured is not None and result.structured["sum"] == 5
    assert result.structured["thread"] != threading.get_ident()


async def test_python_async_function_is_awaited(module_dir: Path) -> None:
    result = await python_spec("ts_test_tools:add_async").call({"a": 2})
    assert result.structured == {"sum": 2}
    assert result.text == '{"sum": 2}'


async def test_python_exception_becomes_an_error_result(module_dir: Path) -> None:
    result = await python_spec("ts_test_tools:fail").call({"reason": "closed"})
    assert result.is_error
    assert result.text == "fail failed: RuntimeError: cannot do it: closed"
    assert result.structured is None


async def test_python_wrong_arguments_become_an_error_result(module_dir: Path) -> None:
    result = await python_spec("ts_test_tools:add").call({"a": 1, "c": 2})
    assert result.is_error
    assert result.text.startswith("add failed: TypeError:")


async def test_python_return_values_are_wrapped(module_dir: Path) -> None:
    text = await python_spec("ts_test_tools:greet").call({"name": "Ann"})
    assert (text.text, text.structured) == ("hello Ann", None)
    listing = await python_spec("ts_test_tools:listing").call({"n": 3})
    assert listing.structured == {"result": [0, 1, 2]}
    assert listing.text == "[0, 1, 2]"
    bad = await python_spec("ts_test_tools:not_json").call({})
    assert bad.is_error and "not JSON-serialisable" in bad.text
    method = await python_spec("ts_test_tools:Tools.double").call({"x": 4})
    assert method.structured == {"result": 8}


async def test_python_timeout(module_dir: Path) -> None:
    result = await python_spec("ts_test_tools:slow", timeout_s=0.05).call({})
    assert result.is_error
    assert result.text == "slow failed: TimeoutError: no result after 0.05 s"


async def test_python_file_target_relative_to_base_dir(tmp_path: Path) -> None:
    (tmp_path / "helpers.py").write_text(
        "def shout(text):\n    return {'text': text.upper()}\n", encoding="utf-8"
    )
    executor = PythonExecutor("helpers.py:shout", base_dir=tmp_path)
    result = await ToolSpec(name="shout", executor=executor, validation="warn").call({"text": "hi"})
    assert result.structured == {"text": "HI"}


def test_python_resolve_errors_name_the_target(tmp_path: Path, module_dir: Path) -> None:
    with pytest.raises(ExecutorConfigError, match="cannot import module 'no_such_module_xyz'"):
        PythonExecutor("no_such_module_xyz:f").resolve()
    with pytest.raises(ExecutorConfigError, match="has no attribute 'missing'"):
        PythonExecutor("ts_test_tools:missing").resolve()
    with pytest.raises(ExecutorConfigError, match="does not exist"):
        PythonExecutor("nope.py:f", base_dir=tmp_path).resolve()
    with pytest.raises(ExecutorConfigError, match="must be 'module:function'.*or 'path/file.py:function'"):
        PythonExecutor("no_colon")
    (tmp_path / "broken_mod.py").write_text("raise ImportError('needs numpy')\n", encoding="utf-8")
    with pytest.raises(ExecutorConfigError, match="needs numpy"):
        PythonExecutor("broken_mod.py:f", base_dir=tmp_path).resolve()


async def test_unresolvable_target_at_call_time_is_an_error_result() -> None:
    result = await python_spec("no_such_module_xyz:f").call({})
    assert result.is_error
    assert "ExecutorConfigError" in result.text and "no_such_module_xyz" in result.text


# ----------------------------------------------------------------------------- registry


def test_resolve_executor_forms() -> None:
    assert isinstance(resolve_executor(None), SimulatedExecutor)
    assert isinstance(resolve_executor("simulated"), SimulatedExecutor)
    assert isinstance(resolve_executor({"kind": "simulated"}), SimulatedExecutor)
    python = resolve_executor({"kind": "python", "target": "tool_specs.examples.unit_converter:convert"})
    assert isinstance(python, PythonExecutor)
    assert python.config() == {"kind": "python", "target": "tool_specs.examples.unit_converter:convert"}
    shorthand = resolve_executor("tool_specs.examples.unit_converter:convert")
    assert isinstance(shorthand, PythonExecutor)
    same = SimulatedExecutor()
    assert resolve_executor(same) is same


def test_resolve_executor_errors() -> None:
    with pytest.raises(
        ExecutorConfigError, match=r"unknown executor kind 'quantum'; known kinds: .*python.*simulated"
    ):
        resolve_executor({"kind": "quantum"})
    with pytest.raises(ExecutorConfigError, match="has no 'kind'"):
        resolve_executor({"target": "a:b"})
    with pytest.raises(ExecutorConfigError, match="unknown option.*'targt'"):
        resolve_executor({"kind": "python", "targt": "a:b"})
    with pytest.raises(ExecutorConfigError, match="needs option.*'target'"):
        resolve_executor({"kind": "python"})
    with pytest.raises(ExecutorConfigError, match="unknown executor kind 'quantum'"):
        resolve_executor("quantum")


async def test_register_executor_kind() -> None:
    class Echo:
        def __init__(self, prefix: str) -> None:
            self.prefix = prefix

        async def __call__(self, spec: ToolSpec, arguments: dict[str, Any], ctx: CallContext) -> ToolResult:
            return ToolResult(text=f"{self.prefix}{spec.name}:{ctx.task_id}:{sorted(arguments)}")

    def factory(options: dict[str, Any], base_dir: Path | None) -> Echo:
        return Echo(options.get("prefix", ""))

    register_executor_kind("test-echo", factory, replace=True)
    assert "test-echo" in known_executor_kinds()
    with pytest.raises(ValueError, match="already registered"):
        register_executor_kind("test-echo", factory)
    spec = ToolSpec(name="e", executor={"kind": "test-echo", "prefix": ">"}, validation="warn")
    result = await spec.call({"b": 1, "a": 2}, CallContext(task_id="T1"))
    assert result.text == ">e:T1:['a', 'b']"
