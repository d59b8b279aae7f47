"""What an assistant client sees besides tools, through the MCP SDK's real client over stdio and HTTP:
resources (KG entities and relation types, task descriptions), prompts, completions, tool
annotations, logging, and resource change notifications after a KG write."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters, types
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated

from client.mcp_session import connect, list_all_tools
from evals.benchmarks.familytool.data import EXTRA_MARKER, load_tasks
from evals.core.serving import build_tool_server
from server import RESOURCE_NOT_FOUND, EndpointRef, ToolServer, create_app, serve_in_background

TASK = "KGMTUbench_0"
ENTITY_TEMPLATE = "kg://familytool-b/entity/{name}"
RELATION_TEMPLATE = "kg://familytool-b/relation/{name}"


def _stdio_params(path: str, *extra: str) -> StdioServerParameters:
    parts = path.split("/")[2:]
    args = ["-m", "evals.cli", "serve", "--stdio", "--benchmark", parts[0], *extra]
    if len(parts) > 1:
        args += ["--task", parts[1]]
    return StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))


@asynccontextmanager
async def _session(tool_server: ToolServer, transport: str, path: str) -> AsyncIterator[Client]:
    if transport == "http":
        async with serve_in_background(create_app(tool_server)) as url:
            async with connect(url + path) as client:
                yield client
    else:
        async with connect(_stdio_params(path)) as client:
            yield client


async def _all_resources(client: Client) -> list[types.Resource]:
    out: list[types.Resource] = []
    cursor: str | None = None
    while True:
        page = await client.list_resources(cursor=cursor)
        out += page.resources
        cursor = page.next_cursor
        if not cursor:
            return out


def _json_content(result: types.ReadResourceResult) -> Any:
    by_type = {c.mime_type: c for c in result.contents}
    assert set(by_type) == {"text/plain", "application/json"}
    content = by_type["application/json"]
    assert isinstance(content, types.TextResourceContents)
    return json.loads(content.text)


def _text_content(result: types.ReadResourceResult) -> str:
    content = next(c for c in result.contents if c.mime_type == "text/plain")
    assert isinstance(content, types.TextResourceContents)
    return content.text


@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_kg_resources_templates_pagination_and_task_description(tool_server, transport):
    kg = tool_server.mounts["familytool-b"].kg
    assert kg is not None
    entities, relations = kg.store.entities(), kg.store.relations()
    task = next(t for t in load_tasks("b") if t.id == TASK)
    async with _session(tool_server, transport, f"/mcp/familytool-b/{TASK}") as client:
        first = await client.list_resources()
        assert first.next_cursor is not None  # paginated: the KG has more than one page of entities
        listed = await _all_resources(client)
        uris = [r.uri for r in listed]
        assert len(uris) == len(set(uris)) == 1 + len(relations) + len(entities)
        assert uris[0] == f"task://familytool-b/{TASK}"
        assert "kg://familytool-b/entity/Bob" in uris and "kg://familytool-b/relation/mother" in uris

        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        assert templates == {ENTITY_TEMPLATE, RELATION_TEMPLATE}  # a task endpoint lists only its own task

        bob = await client.read_resource("kg://familytool-b/entity/Bob")
        assert "Bob --mother--> Alice" in _text_content(bob)
        data = _json_content(bob)
        assert ["Bob", "mother", "Alice"] in data["out"] and data["entity"] == "Bob"

        mother = _json_content(await client.read_resource("kg://familytool-b/relation/mother"))
        assert ["Bob", "mother", "Alice"] in mother["facts"] and mother["total"] == len(mother["facts"])

        desc = await client.read_resource(uris[0])
        info = _json_content(desc)
        assert info["query"] == task.official_query and EXTRA_MARKER not in _text_content(desc)
        for gold in task.gold_kg:  # never the gold sub-KG the data file appends to the query
            assert f"[{gold[0]}, {gold[1]}, {gold[2]}]" not in _text_content(desc)
        assert [t["name"] for t in info["candidate_tools"]] == [
            t.name for t in tool_server.mounts["familytool-b"].catalog.task_tools(TASK)
        ]

        with pytest.raises(MCPError) as err:
            await client.read_resource("kg://familytool-b/entity/Bobb")
        assert err.value.error.code == RESOURCE_NOT_FOUND and "Bob" in err.value.error.message
        with pytest.raises(MCPError) as err:
            await client.read_resource("task://familytool-b/KGMTUbench_1")  # another task's description
        assert err.value.error.code == RESOURCE_NOT_FOUND


@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_prompts_and_completions(tool_server, transport):
    task = next(t for t in load_tasks("b") if t.id == TASK)
    async with _session(tool_server, transport, f"/mcp/familytool-b/{TASK}") as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        assert set(prompts) == {"kgetool_extraction", "kgetool_tool_use"}
        assert {a.name for a in prompts["kgetool_extraction"].arguments or []} == {"query", "task_id"}
        got = await client.get_prompt("kgetool_extraction")  # the endpoint's task fills task_id
        text = got.messages[0].content.text  # type: ignore[union-attr]
        assert "- <relationship>mother" in text and text.endswith(task.official_query)
        own = await client.get_prompt("kgetool_tool_use", {"query": "<speak>Bob</speak> Hi.", "current_date": "2024-01-02"})
        assert "2024-01-02" in own.messages[0].content.text  # type: ignore[union-attr]
        with pytest.raises(MCPError) as err:
            await client.get_prompt("kgetool_extraction", {"nonsense": "x"})
        assert err.value.error.code == types.INVALID_PARAMS and "nonsense" in err.value.error.message

        entity_ref = types.ResourceTemplateReference(type="ref/resource", uri=ENTITY_TEMPLATE)
        done = (await client.complete(entity_ref, {"name": "name", "value": "Bo"})).completion
        assert "Bob" in done.values and all(v.startswith("Bo") for v in done.values)
        relation_ref = types.ResourceTemplateReference(type="ref/resource", uri=RELATION_TEMPLATE)
        done = (await client.complete(relation_ref, {"name": "name", "value": "moth"})).completion
        assert done.values == ["mother"] and done.total == 1
        prompt_ref = types.PromptReference(type="ref/prompt", name="kgetool_extraction")
        done = (await client.complete(prompt_ref, {"name": "task_id", "value": "KGM"})).completion
        assert done.values == [TASK]  # a task endpoint completes its own task only


async def test_playground_prompts_need_a_task_and_complete_every_task(tool_server):
    async with serve_in_background(create_app(tool_server)) as url:
        async with connect(url + "/mcp/familytool-b") as client:
            with pytest.raises(MCPError, match="query or a task_id"):
                await client.get_prompt("kgetool_extraction")
            ref = types.PromptReference(type="ref/prompt", name="kgetool_extraction")
            done = (await client.complete(ref, {"name": "task_id", "value": "KGMTUbench_1"})).completion
            assert "KGMTUbench_1" in done.values and "KGMTUbench_10" in done.values and done.total > 2
            templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
            assert "task://familytool-b/{task_id}" in templates


async def test_nestools_oneshot_prompt(data_dir):  # noqa: ARG001 - data_dir skips without data
    with contextlib.ExitStack() as stack:
        ts = build_tool_server(["nestools"], stack=stack)
        bench = ts.mounts["nestools"]
        task_id = bench.catalog.task_ids()[0]
        async with connect(ts.mcp_server(EndpointRef("nestools", task_id))) as client:
            got = await client.get_prompt("oneshot")
            text = got.messages[0].content.text  # type: ignore[union-attr]
            query = bench.task_query(task_id) if bench.task_query else None
            assert query and text.endswith(f"Task description:\n{query}\n\nAPI call result:\n")
            for tool in bench.catalog.task_tools(task_id):
                assert f"'api_name': '{tool.name}'" in text
            assert (await client.list_resources()).resources[0].uri == f"task://nestools/{task_id}"
            with pytest.raises(MCPError) as err:
                await client.get_prompt("oneshot", {"task_id": "no-such-task"})
            assert err.value.error.code == types.INVALID_PARAMS and "unknown task 'no-such-task'" in err.value.error.message


async def test_tool_annotations_and_output_schemas(data_dir):  # noqa: ARG001
    with contextlib.ExitStack() as stack:
        ts = build_tool_server(["familytool-b"], stack=stack, options={"allow_writes": True})
        async with serve_in_background(create_app(ts)) as url:
            async with connect(url + f"/mcp/familytool-b/{TASK}") as client:
                tools = {t.name: t for t in await list_all_tools(client)}
                for name in ("kg_list_relations", "kg_neighbors", "kg_search_path", "kg_add_fact", "kg_remove_fact"):
                    tool = tools[name]
                    assert tool.title and tool.annotations is not None and tool.output_schema is not None, name
                    hints = tool.annotations
                    assert hints.open_world_hint is False and hints.idempotent_hint is True
                    assert hints.read_only_hint is (name not in ("kg_add_fact", "kg_remove_fact"))
                    assert hints.destructive_hint is (name in ("kg_add_fact", "kg_remove_fact"))
                res = await client.call_tool("kg_neighbors", {"entity": "Bob"})
                assert not res.is_error and ["Bob", "mother", "Alice"] in res.structured_content["out"]


@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_subscription_sees_kg_writes(data_dir, transport):  # noqa: ARG001
    """The current protocol: a subscriptions/listen stream gets resources/updated and list_changed."""
    with contextlib.ExitStack() as stack:
        ts = build_tool_server(["familytool-b"], stack=stack, options={"allow_writes": True})
        async with contextlib.AsyncExitStack() as astack:
            if transport == "http":
                url = await astack.enter_async_context(serve_in_background(create_app(ts)))
                client = await astack.enter_async_context(connect(url + "/mcp/familytool-b"))
            else:
                client = await astack.enter_async_context(connect(_stdio_params("/mcp/familytool-b", "--allow-writes")))
            alice = "kg://familytool-b/entity/Alice"
            events: list[Any] = []
            async with client.listen(resource_subscriptions=[alice], resources_list_changed=True) as sub:
                res = await client.call_tool("kg_add_fact", {"head": "Alice", "relation": "best_friend", "tail": "Zoe"})
                assert not res.is_error
                with anyio.fail_after(30):
                    async for event in sub:
                        events.append(event)
                        if {type(e) for e in events} >= {ResourceUpdated, ResourcesListChanged}:
                            break
            assert ResourceUpdated(alice) in events
            read = _json_content(await client.read_resource(alice))
            assert ["Alice", "best_friend", "Zoe"] in read["out"]
            zoe = types.ResourceTemplateReference(type="ref/resource", uri=ENTITY_TEMPLATE)
            assert (await client.complete(zoe, {"name": "name", "value": "Zo"})).completion.values == ["Zoe"]


async def test_legacy_subscribe_and_logging_over_stdio(data_dir):  # noqa: ARG001
    """Handshake-era clients: resources/subscribe, notifications/resources/updated, logging/setLevel."""
    notes: list[Any] = []
    logs: list[types.LoggingMessageNotificationParams] = []

    async def on_message(message: Any) -> None:
        notes.append(message)

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params)

    params = _stdio_params("/mcp/familytool-b", "--allow-writes")
    alice = "kg://familytool-b/entity/Alice"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)  # subscribe and setLevel are handshake-era APIs
        async with Client(params, mode="legacy", message_handler=on_message, logging_callback=on_log) as client:
            caps = client.server_capabilities
            assert caps.resources and caps.resources.subscribe and caps.resources.list_changed
            assert caps.logging is not None and caps.completions is not None and caps.prompts is not None
            await client.list_resources()
            await client.subscribe_resource(alice)
            await client.set_logging_level("warning")
            await client.call_tool("kg_neighbors", {"entity": "Bob"})  # debug: not sent at "warning"
            await client.call_tool("kg_neighbors", {"entity": "Nobody"})  # failed call: a warning
            await client.set_logging_level("debug")
            res = await client.call_tool("kg_add_fact", {"head": "Alice", "relation": "best_friend", "tail": "Zoe"})
            assert not res.is_error
            with anyio.fail_after(30):
                while not any(_method(n) == "notifications/resources/updated" for n in notes):
                    await anyio.sleep(0.05)
                while not any(_method(n) == "notifications/resources/list_changed" for n in notes):
                    await anyio.sleep(0.05)
    updated = [n for n in notes if _method(n) == "notifications/resources/updated"]
    assert alice in {n.params.uri for n in updated}
    levels = [(entry.level, str(entry.data)) for entry in logs]
    assert levels[0][0] == "warning" and "kg_neighbors failed" in levels[0][1]
    assert not any(level == "debug" and "kg_neighbors" in text for level, text in levels)
    assert any(level == "debug" and "kg_add_fact called" in text for level, text in levels)
    assert any(level == "notice" and "[Alice, best_friend, Zoe]" in text for level, text in levels)


def _method(message: Any) -> str | None:
    return getattr(message, "method", None)


async def test_logging_follows_the_request_level_on_the_current_protocol(tool_server):
    logs: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async with serve_in_background(create_app(tool_server)) as url:
        async with Client(url + f"/mcp/familytool-b/{TASK}", log_level="warning", logging_callback=on_log) as client:
            caps = client.server_capabilities
            assert caps.logging is not None and caps.completions is not None and caps.prompts is not None
            assert caps.resources and caps.resources.subscribe and caps.resources.list_changed
            await client.call_tool("kg_neighbors", {"entity": "Bob"})
            await client.call_tool("kg_neighbors", {"entity": "Nobody"})
    assert [e.level for e in logs] == ["warning"] and "Nobody" in str(logs[0].data)


async def test_http_unknown_endpoints_answer_json_rpc_errors(tool_server):
    async with serve_in_background(create_app(tool_server)) as url:
        async with httpx2.AsyncClient() as http:
            for path in ("/mcp", "/mcp/"):
                r = await http.post(url + path, json={"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {}})
                body = r.json()
                assert r.status_code == 404 and body["jsonrpc"] == "2.0" and body["id"] == 7
                assert body["error"]["data"]["endpoints"] == ["/mcp/familytool-b", "/mcp/familytool-e"]
                assert "/mcp/familytool-b" in body["error"]["message"]
            r = await http.post(url + "/mcp/familytol-b", json={"jsonrpc": "2.0", "id": "a", "method": "tools/list"})
            body = r.json()
            assert r.status_code == 404 and body["id"] == "a" and "did you mean familytool-b" in body["error"]["message"]


async def test_input_responses_null_is_rejected(tool_server):
    """The protocol types inputResponses as an object: a request carrying null there is invalid."""
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    async with serve_in_background(create_app(tool_server, json_response=True)) as url:
        endpoint = url + f"/mcp/familytool-b/{TASK}"
        async with httpx2.AsyncClient(headers=headers) as http:
            r = await http.post(endpoint, json=init)
            sid = r.headers["mcp-session-id"]
            more = {"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
            await http.post(endpoint, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=more)
            call = {"name": "kg_neighbors", "arguments": {"entity": "Bob"}}
            r = await http.post(endpoint, headers=more, json={
                "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {**call, "inputResponses": None}})
            error = r.json()["error"]
            assert error["code"] == types.INVALID_PARAMS and "inputResponses" in error["message"]
            r = await http.post(endpoint, headers=more, json={"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                                             "params": call})
            assert r.json()["result"]["isError"] is False


async def test_ultratool_few_shot_prompt_is_the_published_runs_prompt(data_dir):  # noqa: ARG001
    from evals.benchmarks.ultratool.tasks import build_prompt, load_records

    record = load_records("tool_usage")[0]
    with contextlib.ExitStack() as stack:
        ts = build_tool_server(["ultratool"], stack=stack)
        async with connect(ts.mcp_server(EndpointRef("ultratool", record.id))) as client:
            got = await client.get_prompt("few_shot_cot")
            assert got.messages[0].content.text == build_prompt(record)  # type: ignore[union-attr]
            desc = _json_content(await client.read_resource(f"task://ultratool/{record.id}"))
            assert desc["query"] == record.question and "reference" not in json.dumps(desc)
