"""The MCP Inspector's CLI (npm ``@modelcontextprotocol/inspector``) browsing the family KG: resources,
templates, prompts, tool annotations and logging, over HTTP and over stdio."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from npm_tools import BENCHMARK, serve_command

TASK = "KGMTUbench_0"


def _inspect(npm_env: dict[str, str], target: list[str], *args: str) -> Any:
    # --connect-timeout 0: the Inspector waits for the server however long it takes to start (its own
    # default, 15 s, was too short for a stdio server starting on a starved machine); the subprocess
    # timeout is the bound for a hang
    proc = subprocess.run(["mcp-inspector", "--cli", "--connect-timeout", "0", *target, *args], env=npm_env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_inspector_browses_the_kg_over_http(npm_env, serve_url):
    target = [f"{serve_url}/mcp/{BENCHMARK}/{TASK}", "--transport", "http"]
    listed = _inspect(npm_env, target, "--method", "resources/list")
    uris = [r["uri"] for r in listed["resources"]]
    assert uris[0] == f"task://{BENCHMARK}/{TASK}" and len(uris) == len(set(uris)) > 200  # every page, in order
    templates = _inspect(npm_env, target, "--method", "resources/templates/list")["resourceTemplates"]
    assert {t["uriTemplate"] for t in templates} == {f"kg://{BENCHMARK}/entity/{{name}}",
                                                    f"kg://{BENCHMARK}/relation/{{name}}"}
    read = _inspect(npm_env, target, "--method", "resources/read", "--uri", f"kg://{BENCHMARK}/entity/Bob")
    by_type = {c["mimeType"]: c["text"] for c in read["contents"]}
    assert "Bob --mother--> Alice" in by_type["text/plain"]
    assert ["Bob", "mother", "Alice"] in json.loads(by_type["application/json"])["out"]
    prompts = _inspect(npm_env, target, "--method", "prompts/list")["prompts"]
    assert {p["name"] for p in prompts} == {"kgetool_extraction", "kgetool_tool_use"}
    tools = {t["name"]: t for t in _inspect(npm_env, target, "--method", "tools/list")["tools"]}
    assert tools["kg_add_fact"]["annotations"]["destructiveHint"] is True
    assert tools["kg_search_path"]["annotations"]["readOnlyHint"] is True and tools["kg_search_path"]["outputSchema"]
    _inspect(npm_env, target, "--method", "logging/setLevel", "--log-level", "debug")


@pytest.mark.parametrize("method,args,check", [
    ("resources/templates/list", [], lambda out: len(out["resourceTemplates"]) == 3),  # the playground: + task://
    ("prompts/get", ["--prompt-name", "kgetool_extraction", "--prompt-args", "query=<speak>Bob</speak> Hello"],
     lambda out: out["messages"][0]["content"]["text"].endswith("<speak>Bob</speak> Hello")),
])
def test_inspector_over_stdio(npm_env, method, args, check):
    # the Inspector hands a stdio server only a default environment: the data and cache paths go with -e
    paths = [f"{k}={npm_env[k]}" for k in ("EVALS_DATA_DIR", "EVALS_CACHE_DIR") if k in npm_env]
    env_args = [arg for pair in paths for arg in ("-e", pair)]
    command = serve_command("--stdio", "--benchmark", BENCHMARK)
    out = _inspect(npm_env, [*env_args, *command], "--method", method, *args)
    assert check(out), out
