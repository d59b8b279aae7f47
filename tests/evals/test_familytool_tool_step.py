"""FamilyTool's tool-use step gets what the official pipeline would feed it (``--tool-step official``):
for hand-made step-1 outputs, the step-2 request that reaches the model (over the real OpenAI SDK, at a
local stand-in) carries the official system message and the query of the data with its ``(...)``
replaced by the official extraction string. The expected strings are written here from the official
rules (``KG_extraction_post_process_make_intermediate_json.py``: ``KG_search``/``extractpath`` with
``exact``, then ``goldquery.replace(kg_info, extracted_KG)``), not computed with the project's code.
``--tool-step project`` keeps the project's earlier step 2 (server extraction as ``[h, r, t]``, the served
tool schemas; ``test_familytool_tool_schemas.py`` checks the official tool list)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import pytest
from fake_providers import FakeProviderServer, openai_chat

from evals.benchmarks.familytool.data import agent_prompt, kg_file, load_catalog, load_tasks
from evals.benchmarks.familytool.official import api_tools

ALICE_FIRST = "['Alice', 'prefer_dinnertime', 'dinnertime_0002']"  # familykg-b.txt line 57, Alice's first
# step-1 outputs for the first five tasks of FamilyTool-b (in file order), and why they read as they do
STEP1 = [
    # a valid three-hop path: one link per hop, no mark
    'KG.search(start="Bob", path=["<relationship>father", "<relationship>wife", "<relationship>prefer_dinnertime"])',
    # Alice has no "wife" link (Jack has one): at the second hop, every link of Alice, marked
    'KG.search(start="Bob", path=["mother", "wife"])',
    # an unknown start adds nothing at all (not even a mark); the valid search after it counts
    'KG.search(start="Zorro", path=["mother"])\nKG.search(start="Bob", path=["mother"])',
    # an unparsable search among valid ones: an empty path and a mark, in its place
    'First KG.search(start="Bob", path=["mother"]) then KG.search(start=Bob, mother) and KG.search(start=\'Jack\', path=[son])',
    # only an unknown start: nothing extracted, a format error; the "(...)" is replaced by nothing
    'KG.search(start="Zorro", path=["mother", "prefer_city"])',
]


def _alice_links() -> list[list[str]]:
    """Alice's links in file order, duplicates dropped (the official ``KnowledgeGraph``)."""
    out: list[list[str]] = []
    for line in kg_file("familytool-b").read_text(encoding="utf-8").splitlines():
        link = ast.literal_eval(line) if line.strip() else None
        if link and link[0] == "Alice" and link not in out:
            out.append(link)
    return out


def expected_extractions() -> list[str]:
    alice = ", ".join(str(link) for link in _alice_links())
    return [
        f"([['Bob', 'father', 'Jack'], ['Jack', 'wife', 'Alice'], {ALICE_FIRST}])",
        f"([['Bob', 'mother', 'Alice'], {alice}])<bad_extract>",
        "([['Bob', 'mother', 'Alice']])",
        "([['Bob', 'mother', 'Alice']])<bad_extract>([['Jack', 'son', 'Bob']])",
        "",
    ]


def _run(provider: FakeProviderServer, tmp_path, *args: str) -> list[dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "evals.cli", "run", "familytool-b", "--model", "openai:scripted", "--base-url",
         provider.openai_base_url, "--api-key-env", "PATH", "--strategy", "kgetool", "--limit", str(len(STEP1)),
         "--run-dir", str(tmp_path / "r"), "--concurrency", "1", "--no-progress", "--json", *args],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [b for b in provider.openai.bodies if b.get("tools")]  # the step-2 requests


@pytest.fixture()
def provider(data_dir):
    tasks = load_tasks("familytool-b")[: len(STEP1)]
    step1 = {t.official_query: text for t, text in zip(tasks, STEP1, strict=True)}

    def model(body: dict) -> dict:
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        if not body.get("tools"):
            return openai_chat(step1[user])
        return openai_chat(tool_calls=[(body["tools"][0]["function"]["name"], {})])

    with FakeProviderServer() as server:
        server.openai.respond_with(model)
        yield server


def test_step2_gets_the_official_extraction_string_in_place_of_the_gold_sub_kg(provider, tmp_path):
    tasks = load_tasks("familytool-b")[: len(STEP1)]
    assert tasks[0].raw_query.endswith("(['Bob', 'mother', 'Alice'], ['Alice', 'prefer_dinnertime', 'dinnertime_0002']).")
    assert _alice_links()[0] == ast.literal_eval(ALICE_FIRST) and len(_alice_links()) == 45
    bodies = _run(provider, tmp_path, "--current-date", "2024-02-29")
    assert len(bodies) == len(STEP1)
    users = {}
    for body in bodies:
        msgs = body["messages"]
        assert [m["role"] for m in msgs] == ["system", "user"]
        assert msgs[0]["content"] == "You are a helpful assistant.\nCurrent Date: 2024-02-29"
        users[next(t.id for t in tasks if t.query in msgs[1]["content"])] = msgs[1]["content"]
    for task, extraction in zip(tasks, expected_extractions(), strict=True):
        head, marker, gold = task.raw_query.partition("The extra information for the query is ")
        assert marker and gold.startswith("(") and gold.endswith(")."), task.raw_query
        assert users[task.id] == f"{head}{marker}{extraction}.", task.id
    assert users[tasks[4].id].endswith("The extra information for the query is .")
    # scoring reads the same string from the trace
    traces = {t["task_id"]: t for t in map(json.loads, open(tmp_path / "r" / "traces.jsonl"))}
    assert [traces[t.id]["outcome"]["kg"]["generation"] for t in tasks] == STEP1
    config = json.loads((tmp_path / "r" / "config.json").read_text())
    assert config["options"]["tool_step"] == "official" and config["options"]["current_date"] == "2024-02-29"


def test_tool_step_project_keeps_the_servers_extraction(provider, tmp_path):
    bodies = _run(provider, tmp_path, "--tool-step", "project")
    assert all("entity ids" in b["messages"][0]["content"] for b in bodies) and len(bodies) == len(STEP1)
    users = [b["messages"][1]["content"] for b in bodies]
    # the three-hop search through the server: every link, as [h, r, t]
    assert any("([Bob, father, Jack], [Jack, wife, Alice], [Alice, prefer_dinnertime, dinnertime_0002])" in u
               for u in users), users
    assert not any("<bad_extract>" in u for u in users)
    # the served schemas as they are, not the official rewrite (defaults, formats... kept)
    catalog = load_catalog("familytool-b")
    for task in load_tasks("familytool-b")[: len(STEP1)]:
        (body,) = [b for b in bodies if b["messages"][1]["content"].startswith(agent_prompt(task))]
        sent = {t["function"]["name"]: t["function"]["parameters"] for t in body["tools"]}
        assert sent == {s.name: s.input_schema for s in catalog.task_tools(task.id)}, task.id
        assert sent != {t["function"]["name"]: t["function"]["parameters"] for t in api_tools(task.candidate_tools)}


def test_official_tool_step_refuses_the_servers_other_searches(data_dir, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "evals.cli", "run", "familytool-b", "--model", "oracle", "--strategy",
                           "kgetool", "--kg-search", "retrieval", "--limit", "1", "--run-dir", str(tmp_path / "r"),
                           "--no-progress"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "--tool-step project" in " ".join(proc.stderr.split()), proc.stderr[-2000:]
