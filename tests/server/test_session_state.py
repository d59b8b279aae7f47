"""Per-session executor state: ``placeholder`` handles and ``replay`` answers, through the real server.

Two MCP sessions of one endpoint (over HTTP, through the SDK's client) never see each other's
state; the executors also load from a spec file's ``executor`` mapping.
"""

from __future__ import annotations

import json

import pytest

from client.agent import result_text
from client.mcp_session import connect
from server import BenchmarkMount, EndpointRef, ToolServer, create_app, serve_in_background
from tool_specs import ExecutorConfigError, StaticCatalog, ToolSpec, resolve_executor

BOOK = ToolSpec(
    name="book_hotel",
    description="Book a hotel.",
    input_schema={"type": "object", "properties": {"hotel": {"type": "string"}}, "required": ["hotel"]},
    output_schema={"type": "object", "properties": {"book_details": {"type": "string"}, "availability": {"type": "string"}}},
    executor={"kind": "placeholder"},
)
PAY = ToolSpec(
    name="pay",
    description="Pay a booking.",
    input_schema={"type": "object", "properties": {"book_info": {"type": "string"}}},
    executor={"kind": "placeholder"},
)
ROOMS = ToolSpec(
    name="get_rooms",
    description="Rooms of a hotel.",
    input_schema={"type": "object", "properties": {"hotel_id": {"type": "integer"}}, "required": ["hotel_id"]},
    executor={
        "kind": "replay",
        "calls": [
            {"arguments": {"hotel_id": 7}, "response": {"rooms": ["r1", "r2"]}},
            {"arguments": {"hotel_id": 7}, "response": {"rooms": ["r3"]}},
            {"arguments": {"hotel_id": 9}, "response": "no rooms left"},
        ],
        "no_match": "No recorded answer for {name} {arguments}",
    },
)


@pytest.fixture
def tool_server() -> ToolServer:
    return ToolServer([BenchmarkMount(StaticCatalog("nested", {"t1": [BOOK, PAY, ROOMS]}))])


def structured(result) -> object:
    return result.structured_content if result.structured_content is not None else result_text(result)


async def test_two_sessions_of_one_endpoint_number_and_replay_independently(tool_server):
    async with serve_in_background(create_app(tool_server, json_response=True)) as url:
        async with connect(url + "/mcp/nested/t1?session=a") as a, connect(url + "/mcp/nested/t1?session=b") as b:
            assert structured(await a.call_tool("book_hotel", {"hotel": "Ritz"})) == {
                "book_details": "API_call_0", "availability": "API_call_1"}
            # b's numbering starts again at 0; a continues where it was
            assert structured(await b.call_tool("pay", {"book_info": "API_call_0"})) == {"result": "API_call_0"}
            assert structured(await a.call_tool("pay", {"book_info": "API_call_0"})) == {"result": "API_call_2"}
            assert structured(await b.call_tool("book_hotel", {"hotel": "Ritz"})) == {
                "book_details": "API_call_1", "availability": "API_call_2"}

            # replay: each recorded call once per session, then the first again
            first = structured(await a.call_tool("get_rooms", {"hotel_id": 7}))
            second = structured(await a.call_tool("get_rooms", {"hotel_id": 7}))
            third = structured(await a.call_tool("get_rooms", {"hotel_id": 7}))
            assert (first, second, third) == ({"rooms": ["r1", "r2"]}, {"rooms": ["r3"]}, {"rooms": ["r1", "r2"]})
            # b has replayed nothing yet
            assert structured(await b.call_tool("get_rooms", {"hotel_id": 7})) == {"rooms": ["r1", "r2"]}
            assert result_text(await b.call_tool("get_rooms", {"hotel_id": 9})) == "no rooms left"
            miss = await b.call_tool("get_rooms", {"hotel_id": 1})
            assert miss.is_error and result_text(miss) == "No recorded answer for get_rooms {'hotel_id': 1}"
        # a new session starts from scratch; requests that name no session share the endpoint's state
        async with connect(url + "/mcp/nested/t1?session=c") as c, connect(url + "/mcp/nested/t1") as d:
            assert structured(await c.call_tool("pay", {})) == {"result": "API_call_0"}
            assert structured(await d.call_tool("pay", {})) == {"result": "API_call_0"}
            assert structured(await d.call_tool("pay", {})) == {"result": "API_call_1"}


async def test_in_process_connections_are_sessions_of_their_own(tool_server):
    ref = EndpointRef("nested", "t1")
    async with connect(tool_server.mcp_server(ref)) as a, connect(tool_server.mcp_server(ref)) as b:
        assert structured(await a.call_tool("pay", {})) == {"result": "API_call_0"}
        assert structured(await a.call_tool("pay", {})) == {"result": "API_call_1"}
        assert structured(await b.call_tool("pay", {})) == {"result": "API_call_0"}


async def test_listing_advertises_the_handle_fields(tool_server):
    async with serve_in_background(create_app(tool_server, json_response=True)) as url:
        async with connect(url + "/mcp/nested/t1?session=x") as a:
            tools = {t.name: t for t in (await a.list_tools()).tools}
            assert tools["book_hotel"].output_schema["required"] == ["book_details", "availability"]
            assert json.loads(result_text(await a.call_tool("book_hotel", {"hotel": "x"}))) == {
                "book_details": "API_call_0", "availability": "API_call_1"}


def test_bad_executor_options_name_the_problem():
    with pytest.raises(ExecutorConfigError, match="needs option"):
        resolve_executor({"kind": "replay"})
    with pytest.raises(ExecutorConfigError, match="'response'"):
        resolve_executor({"kind": "replay", "calls": [{"arguments": {}}]})
    with pytest.raises(ExecutorConfigError, match="list of names"):
        resolve_executor({"kind": "placeholder", "fields": "a"})


async def test_a_session_named_in_any_spelling_of_the_query_is_the_same_session(tool_server):
    """The server reads ``session`` from the query only when the query can name it; a percent-encoded
    key still names it, and another parameter alone names none."""
    async with serve_in_background(create_app(tool_server)) as url:
        async with connect(url + "/mcp/nested/t1?session=k") as a, connect(url + "/mcp/nested/t1?s%65ssion=k") as b, \
                connect(url + "/mcp/nested/t1?other=k") as c:
            assert structured(await a.call_tool("pay", {})) == {"result": "API_call_0"}
            assert structured(await b.call_tool("pay", {})) == {"result": "API_call_1"}  # the same session
            assert structured(await c.call_tool("pay", {})) == {"result": "API_call_0"}  # the endpoint's shared one
            assert structured(await a.call_tool("pay", {})) == {"result": "API_call_2"}
