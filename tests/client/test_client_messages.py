"""Provider-neutral records: parsing tool arguments, JSON round trips, usage and cost."""

from __future__ import annotations

import json

import mcp.types
import pytest

from client.messages import (
    AssistantMessage,
    ModelResponse,
    Price,
    SystemMessage,
    ToolCall,
    ToolDef,
    ToolResultMessage,
    Usage,
    UserMessage,
    message_from_dict,
    parse_tool_arguments,
)


@pytest.mark.parametrize(
    ("raw", "expected", "error_part"),
    [
        ('{"city": "Paris"}', {"city": "Paris"}, None),
        ("", {}, None),
        ("   ", {}, None),
        ('{"city": ', None, "not valid JSON"),
        ("[1, 2]", None, "got array"),
        ('"Paris"', None, "got string"),
        ("null", None, "got null"),
        ("{'single': 'quotes'}", None, "not valid JSON"),
    ],
)
def test_parse_tool_arguments(raw: str, expected: dict | None, error_part: str | None) -> None:
    arguments, error = parse_tool_arguments(raw)
    assert arguments == expected
    if error_part is None:
        assert error is None
    else:
        assert error is not None and error_part in error


def test_tool_call_from_raw_keeps_the_model_string() -> None:
    call = ToolCall.from_raw("c1", "f", '{"a": 1,}')
    assert call.arguments is None
    assert call.raw_arguments == '{"a": 1,}'
    assert "not valid JSON" in (call.parse_error or "")


def test_messages_round_trip_through_json() -> None:
    conversation = [
        SystemMessage("be brief"),
        UserMessage("book it"),
        AssistantMessage(
            "ok",
            [
                ToolCall.from_arguments("c1", "date of journey", {"d": 1}),
                ToolCall.from_raw("c2", "x", "{bad"),
            ],
            reasoning="thinking...",
            provider_blocks=[{"type": "thinking", "thinking": "t", "signature": "s"}],
        ),
        ToolResultMessage("c1", "date of journey", "Monday", False),
        ToolResultMessage("c2", "x", "bad arguments", True),
    ]
    encoded = json.loads(json.dumps([m.to_dict() for m in conversation]))
    decoded = [message_from_dict(d) for d in encoded]
    assert decoded == conversation


def test_message_from_dict_rejects_unknown_role() -> None:
    with pytest.raises(ValueError, match="unknown message role 'robot'"):
        message_from_dict({"role": "robot", "text": "hi"})


def test_model_response_round_trip_and_assistant_message() -> None:
    response = ModelResponse(
        text="hi",
        tool_calls=[ToolCall.from_arguments("c1", "f", {})],
        reasoning=None,
        usage=Usage(10, 5, 2, 3, 0),
        stop_reason="tool_calls",
        latency_s=0.25,
        model="m",
        raw={"id": "x"},
        provider_blocks=None,
        request_id="req_1",
    )
    assert ModelResponse.from_dict(json.loads(json.dumps(response.to_dict()))) == response
    message = response.to_assistant_message()
    assert message.text == "hi" and message.tool_calls == response.tool_calls


def test_usage_add_and_cost() -> None:
    total = Usage(100, 10, 5, 40, 0) + Usage(200, 20, 0, 0, 50)
    assert total == Usage(300, 30, 5, 40, 50)
    assert total.total_tokens == 330
    price = Price(input_per_mtok=2.0, output_per_mtok=10.0, cache_read_per_mtok=0.5, cache_write_per_mtok=2.5)
    # uncached 210 * 2 + 40 * 0.5 + 50 * 2.5 + 30 * 10, per million
    assert total.cost_usd(price) == pytest.approx((420 + 20 + 125 + 300) / 1e6)
    assert total.cost_usd(None) is None
    # without cache prices, cached tokens cost the input price
    assert Usage(100, 0, 0, 100, 0).cost_usd(Price(1.0, 1.0)) == pytest.approx(100 / 1e6)


def test_price_from_dict_names_missing_fields() -> None:
    assert Price.from_dict({"input": 1, "output": 2}) == Price(1.0, 2.0)
    with pytest.raises(ValueError, match="input_per_mtok"):
        Price.from_dict({"output": 2})


def test_tool_def_from_mcp() -> None:
    tool = mcp.types.Tool(
        name="date of journey",
        description="When the trip starts",
        input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
    )
    tool_def = ToolDef.from_mcp(tool)
    assert tool_def == ToolDef(
        "date of journey",
        "When the trip starts",
        {"type": "object", "properties": {"city": {"type": "string"}}},
    )
    assert ToolDef.from_dict(tool_def.to_dict()) == tool_def
