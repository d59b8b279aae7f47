"""The MCP server through the SDK's real client: in-process, over a stdio subprocess, over HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
from mcp import Client, StdioServerParameters, types

from client.agent import result_text
from client.mcp_session import connect, list_all_tools
from evals.benchmarks.familytool.data import load_tasks
from server import EndpointRef, ServerConfigError, ToolServer, create_app, serve_in_background

TASK = "KGMTUbench_0"  # Bob cancels alarms at his mother's preferred dinner time


def _task_tool_names(dataset: str, task_id: str) -> list[str]:
    task = next(t for t in load_tasks(dataset) if t.id == task_id)
    return list(dict.fromkeys(t["name"] for t in task.candidate_tools))


@asynccontextmanager
async def _session(tool_server: ToolServer, transport: str, path: str) -> AsyncIterator[Client]:
    """A client session on ``path`` (``/mcp/<benchmark>[/<task>]``) over the given transport."""
    if transport == "inprocess":
        parts = path.split("/")[2:]
        ref = EndpointRef(parts[0], parts[1] if len(parts) > 1 else None)
        async with connect(tool_server.mcp_server(ref)) as client:
            yield client
    elif transport == "http":
        async with serve_in_background(create_app(tool_server)) as url:
            async with connect(url + path) as client:
                yield client
    else:
        parts = path.split("/")[2:]
        args = ["-m", "evals.cli", "serve", "--stdio", "--benchmark", parts[0]]
        if len(parts) > 1:
            args += ["--task", parts[1]]
        params = StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))
        async with connect(params, timeout=600) as client:  # a loaded machine: start-up can pass 60 s
            yield client


TRANSPORTS = ["inprocess", "http", "stdio"]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_task_endpoint_lists_exactly_the_task_tools_and_resolves_a_path(tool_server, transport):
    async with _session(tool_server, transport, f"/mcp/familytool-b/{TASK}") as client:
        names = [t.name for t in await list_all_tools(client)]
        assert names == _task_tool_names("b", TASK) + ["kg_list_relations", "kg_neighbors", "kg_search_path"]
        res = await client.call_tool("kg_search_path", {"start": "Bob", "path": ["mother", "prefer_dinnertime"]})
        assert not res.is_error, result_text(res)
        assert res.structured_content["paths"] == [
            [["Bob", "mother", "Alice"], ["Alice", "prefer_dinnertime", "dinnertime_0002"]]
        ]
        assert res.structured_content["missing_relations"] == []


@pytest.mark.filterwarnings("ignore::UserWarning")  # the SDK warns while serialising the non-object arguments
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_every_bad_call_is_an_error_result_and_the_server_keeps_serving(tool_server, transport):
    huge = "x" * 1_000_000
    bad_calls = [
        ("kg_neighbors", {"entity": 5}, ["entity", "string", "5"]),  # wrong type
        ("kg_neighbors", {}, ["entity", "required"]),  # missing required parameter
        ("kg_neighbors", {"entity": "Bob", "colour": "red"}, ["colour"]),  # unknown parameter
        ("kg_neighbours", {"entity": "Bob"}, ["kg_neighbours", "kg_neighbors"]),  # unknown tool: closest names
        ("kg_neighbors", {"entity": huge}, ["entity"]),  # a 1 MB string
        ("kg_neighbors", {"entity": "Nobody"}, ["Nobody"]),  # well-formed, but not in the KG
    ]
    async with _session(tool_server, transport, f"/mcp/familytool-b/{TASK}") as client:
        for name, args, must_mention in bad_calls:
            res = await client.call_tool(name, args)
            assert res.is_error, (name, args)
            text = result_text(res)
            for word in must_mention:
                assert word.lower() in text.lower(), (word, text)
            assert len(text) < 5000  # the 1 MB string is never echoed back
            ok = await client.call_tool("kg_neighbors", {"entity": "Bob"})
            assert not ok.is_error and ["Bob", "mother", "Alice"] in ok.structured_content["out"]
        # arguments that are not an object (the SDK's client would refuse to send them)
        for not_object in ([1, 2], "Bob", 7):
            params = types.CallToolRequestParams.model_construct(name="kg_neighbors", arguments=not_object)
            res = await client.session.send_request(types.CallToolRequest(params=params), types.CallToolResult)
            assert res.is_error and "object" in result_text(res).lower(), result_text(res)
        ok = await client.call_tool("kg_list_relations", {})
        assert not ok.is_error and "mother" in ok.structured_content["relations"]


async def test_greedy_fallback_and_retrieval_through_the_kg_tool(tool_server):
    async with _session(tool_server, "inprocess", f"/mcp/familytool-b/{TASK}") as client:
        res = await client.call_tool("kg_search_path", {"start": "Bob", "path": ["mom", "prefer_dinnertime"]})
        assert not res.is_error
        out = res.structured_content
        assert out["missing_relations"] == ["mom"] and out["mode"] == "greedy"
        assert ["Alice", "prefer_dinnertime", "dinnertime_0002"] in [t for p in out["paths"] for t in p]
        assert "mom" in out["note"]
        res = await client.call_tool(
            "kg_search_path", {"start": "Bob", "path": ["mom", "prefer_dinnertime"], "mode": "retrieval"}
        )
        out = res.structured_content
        assert out["mode"] == "retrieval" and out["substitutions"]["mom"][0] == "mother"
        # the top-k (3) candidates for "mom" may reach other people's dinner times too
        assert [["Bob", "mother", "Alice"], ["Alice", "prefer_dinnertime", "dinnertime_0002"]] in out["paths"]
        res = await client.call_tool("kg_search_path", {"start": "Bob", "path": ["mom"], "mode": "exact"})
        assert not res.is_error and res.structured_content["paths"] == []


async def test_familytool_tools_accept_the_gold_call_and_warn_about_schema_problems(tool_server):
    task = next(t for t in load_tasks("b") if t.id == TASK)
    gold = task.gold_calls[0]
    async with _session(tool_server, "inprocess", f"/mcp/familytool-b/{TASK}") as client:
        res = await client.call_tool(gold.name, gold.arguments)
        assert not res.is_error, result_text(res)
        assert res.structured_content["arguments"] == gold.arguments
        res = await client.call_tool(gold.name, {**gold.arguments, "made_up": 1})
        assert not res.is_error  # FamilyTool's own gold breaks its schemas, so problems are warnings
        assert "made_up" in result_text(res)


async def test_http_playground_health_unknown_endpoints(tool_server):
    async with serve_in_background(create_app(tool_server)) as url:
        async with connect(url + "/mcp/familytool-e") as client:
            names = {t.name for t in await list_all_tools(client)}
        union = {t["name"] for task in load_tasks("e") for t in task.candidate_tools}
        assert names == union | {"kg_list_relations", "kg_neighbors", "kg_search_path"}
        async with httpx2.AsyncClient() as http:
            health = (await http.get(url + "/health")).json()
            assert health["status"] == "ok"
            assert health["benchmarks"]["familytool-b"]["tasks"] == 483
            assert health["benchmarks"]["familytool-e"]["tasks"] == 455
            r = await http.post(url + "/mcp/familytool-b/KGMTUbench_99999", json={})
            assert r.status_code == 404 and "KGMTUbench_99999" in r.json()["error"]["message"]
            r = await http.post(url + "/mcp/familytol-b", json={})
            assert r.status_code == 404 and "familytool-b" in r.json()["error"]["message"]  # did you mean


def test_public_bind_needs_a_token(tool_server):
    with pytest.raises(ServerConfigError, match="token"):
        create_app(tool_server, host="0.0.0.0")
    create_app(tool_server, host="0.0.0.0", token="s3cret")  # allowed with a token
    proc = subprocess.run(
        [sys.executable, "-m", "evals.cli", "serve", "--host", "0.0.0.0", "--port", "0"],
        capture_output=True, text=True, timeout=60, env={k: v for k, v in os.environ.items() if k != "EVALS_SERVER_TOKEN"},
    )
    assert proc.returncode == 2 and "token" in proc.stderr


async def test_bearer_token_is_enforced(tool_server):
    app = create_app(tool_server, token="s3cret")
    async with serve_in_background(app) as url:
        async with httpx2.AsyncClient() as http:
            r = await http.post(url + f"/mcp/familytool-b/{TASK}", json={})
            assert r.status_code == 401
            assert (await http.get(url + "/health")).status_code == 200
        async with connect(url + f"/mcp/familytool-b/{TASK}", token="s3cret") as client:
            assert len(await list_all_tools(client)) > 3


@pytest.mark.parametrize("page_size,json_response", [(200, False), (0, True)])
async def test_three_thousand_tools_list_over_http(page_size, json_response):
    from server import BenchmarkMount
    from tool_specs import StaticCatalog, ToolSpec

    desc = "A synthetic tool with a long description. " * 25  # ~1 KB each, ~3.5 MB in all
    tools = [
        ToolSpec(
            name=f"tool_{i:04d}",
            description=desc,
            input_schema={"type": "object", "properties": {"x": {"type": "integer", "description": desc}}},
        )
        for i in range(3000)
    ]
    ts = ToolServer([BenchmarkMount(StaticCatalog("big", {}, extra_playground=tools))], page_size=page_size)
    async with serve_in_background(create_app(ts, json_response=json_response)) as url:
        async with connect(url + "/mcp/big") as client:
            listed = await list_all_tools(client)
            assert [t.name for t in listed] == [t.name for t in tools]
            res = await client.call_tool("tool_2999", {"x": 3})
            assert not res.is_error


async def test_writes_only_when_allowed_and_isolated_from_the_cached_kg(data_dir):
    import contextlib

    from evals.core.serving import build_tool_server

    with contextlib.ExitStack() as stack:
        ts = build_tool_server(["familytool-b"], stack=stack, options={"allow_writes": True})
        async with connect(ts.mcp_server(EndpointRef("familytool-b", TASK))) as client:
            res = await client.call_tool("kg_add_fact", {"head": "Alice", "relation": "best_friend", "tail": "Zoe"})
            assert not res.is_error and res.structured_content["added"] is True
            res = await client.call_tool("kg_search_path", {"start": "Bob", "path": ["mother", "best_friend"]})
            assert res.structured_content["paths"] == [[["Bob", "mother", "Alice"], ["Alice", "best_friend", "Zoe"]]]
    with contextlib.ExitStack() as stack:
        ts = build_tool_server(["familytool-b"], stack=stack)
        async with connect(ts.mcp_server(EndpointRef("familytool-b", TASK))) as client:
            assert "kg_add_fact" not in {t.name for t in await list_all_tools(client)}
            res = await client.call_tool("kg_add_fact", {"head": "a", "relation": "b", "tail": "c"})
            assert res.is_error
            res = await client.call_tool("kg_neighbors", {"entity": "Zoe"})
            assert res.is_error  # the shared KG never saw the other server's write


async def test_spec_dir_tools_become_live_tools(tmp_path, data_dir):
    import contextlib

    from evals.core.serving import build_tool_server

    examples = Path(__file__).resolve().parents[2] / "tool_specs" / "examples"
    spec = tmp_path / "greet.yaml"
    spec.write_text(
        "name: greet\ndescription: Say hello.\ninput_schema:\n  type: object\n"
        "  properties:\n    who: {type: string}\n  required: [who]\n"
    )
    with contextlib.ExitStack() as stack:
        ts = build_tool_server([], stack=stack, tools_dirs=[examples, tmp_path])
        async with serve_in_background(create_app(ts)) as url:
            async with connect(url + "/mcp/custom") as client:
                names = {t.name for t in await list_all_tools(client)}
                assert "greet" in names and len(names) >= 4
                res = await client.call_tool("greet", {"who": "Ada"})
                assert not res.is_error and json.loads(result_text(res))["arguments"] == {"who": "Ada"}
                res = await client.call_tool("greet", {})
                assert res.is_error and "who" in result_text(res)
