"""FamilyTool's step 2 shows the model the candidate tools as the official pipeline sends them to an API
model (UnifiedToolHub's ``APIRequester.convert_to_openai_tools``), with ``--tool-step official``.

The expected rewrite comes from the official function itself: ``familytool_official/tool_schemas/
official.json`` holds, for every distinct candidate tool of both datasets, the digest of its official
output, and the official output in full for hand-made tools (how it was made: the README there). The
request test runs ``evals run`` over the real OpenAI SDK against a local stand-in and reads the tools
in the step-2 HTTP request bodies (``test_familytool_tool_step.py`` checks that ``--tool-step project``
keeps sending the served schemas)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from fake_providers import FakeProviderServer, openai_chat

from evals.benchmarks.familytool import official as off
from evals.benchmarks.familytool.data import FamilyToolTask, load_tasks

FIXTURE = Path(__file__).parent / "familytool_official" / "tool_schemas"
sys.path.insert(0, str(FIXTURE.parent))
from run_official_tools import digest  # noqa: E402

OFFICIAL = json.loads((FIXTURE / "official.json").read_text(encoding="utf-8"))
# the first 22 tasks of FamilyTool-b: list-form parameters (14-16), objects with nested properties
# (17-21), arrays with items (0-3), defaults and formats everywhere, a tool listed twice (21)
LIMIT = 22


def _shown_once(tools: list[dict]) -> list[dict]:
    """The official list with a tool the data repeats shown where it first occurs."""
    seen: dict[str, dict] = {}
    for t in tools:
        seen.setdefault(t["function"]["name"], t)
    return list(seen.values())


def test_the_rewrite_equals_the_official_function_on_every_candidate_tool(data_dir):
    n = 0
    for name in ("familytool-b", "familytool-e"):
        for task in load_tasks(name):
            for tool in task.candidate_tools:
                assert digest(off.api_tool(tool)) == OFFICIAL["tools"][digest(tool)], (task.id, tool["name"])
                n += 1
    assert n == sum(OFFICIAL["candidate_tools"].values()) == 7750


@pytest.mark.parametrize("case", OFFICIAL["handmade"], ids=lambda c: c["tool"]["name"].strip())
def test_the_rewrite_equals_the_official_function_on_hand_made_tools(case):
    tool = copy.deepcopy(case["tool"])
    out = off.api_tool(tool)
    assert out == case["official"]
    assert json.dumps(out) == json.dumps(case["official"])  # key order too
    assert tool == case["tool"]  # the official code changes items in place; ours works on a copy


def test_the_rewrite_names_what_it_cannot_read():
    with pytest.raises(ValueError, match="bad.x"):
        off.api_tool({"name": "bad", "description": "", "parameters": {"properties": {"x": 3}}})
    with pytest.raises(ValueError, match="'name'"):
        off.api_tool({"name": "bad", "description": "", "parameters": {"properties": [{"description": "no name"}]}})


def _run(provider: FakeProviderServer, tmp_path: Path, *args: str) -> list[dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "evals.cli", "run", "familytool-b", "--model", "openai:scripted", "--base-url",
         provider.openai_base_url, "--api-key-env", "PATH", "--strategy", "kgetool", "--kg-model", "oracle",
         "--limit", str(LIMIT), "--run-dir", str(tmp_path / "r"), "--concurrency", "4", "--no-progress", "--json",
         *args],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [b for b in provider.openai.bodies if b.get("tools")]


@pytest.fixture()
def provider(data_dir):
    def model(body: dict) -> dict:  # step 2: call the first tool shown, with no arguments
        return openai_chat(tool_calls=[(body["tools"][0]["function"]["name"], {})])

    with FakeProviderServer() as server:
        server.openai.respond_with(model)
        yield server


def _by_task(bodies: list[dict], query: Callable[[FamilyToolTask], str]) -> dict[str, dict]:
    """The step-2 request of each task, found by the start of its user message."""
    tasks = load_tasks("familytool-b")[:LIMIT]
    out = {}
    for body in bodies:
        user = body["messages"][-1]["content"]
        (task,) = [t for t in tasks if user.startswith(query(t))]
        out[task.id] = body
    assert len(out) == len(bodies) == LIMIT
    return out


def test_kgetool_step2_request_carries_the_official_tools(provider, tmp_path):
    bodies = _by_task(_run(provider, tmp_path), lambda t: t.official_query)
    repeated = 0
    for task in load_tasks("familytool-b")[:LIMIT]:
        sent = bodies[task.id]["tools"]
        official = off.api_tools(task.candidate_tools)
        assert sent == _shown_once(official), task.id
        # each one what the official function made of it (the fixture), in the data's order
        expected = {t["name"]: OFFICIAL["tools"][digest(t)] for t in task.candidate_tools}
        assert [digest(t) for t in sent] == [expected[t["function"]["name"]] for t in sent], task.id
        assert [t["function"]["name"] for t in sent] == list(dict.fromkeys(t["name"] for t in task.candidate_tools))
        repeated += len(official) - len(sent)
        for t in sent:  # what the rewrite drops at the top level
            for p in t["function"]["parameters"]["properties"].values():
                assert not {"default", "format", "enum", "pattern", "options"} & set(p), (task.id, p)
    assert repeated > 0  # the tasks include a tool the data lists twice
    # the calls still went to the live tools
    traces = [json.loads(line) for line in open(tmp_path / "r" / "traces.jsonl")]
    calls = [c for tr in traces for c in tr["outcome"]["calls"]]
    assert len(calls) == LIMIT and not any(c.get("refused") for c in calls)

