"""A model can call only what it was shown: a tool the harness hides (the KG write tools of the
inductive setting) is refused by the harness, recorded as the model's error, and never reaches the
server; the KG stays as it was."""

from __future__ import annotations

import json

from fake_providers import FakeProviderServer, openai_chat

from client.runs import RunDir
from evals.benchmarks.familytool.data import load_tasks
from evals.core.run import RunOptions, run_benchmark


async def test_a_hidden_write_tool_is_refused_recorded_and_the_kg_is_unchanged(data_dir, tmp_path):
    task = load_tasks("e")[0]
    gold = task.gold_calls[0]

    def model(body: dict) -> dict:
        names = {t["function"]["name"] for t in body["tools"]}
        assert "kg_add_fact" not in names and "kg_remove_fact" not in names  # hidden from the model
        results = [m for m in body["messages"] if m["role"] == "tool"]
        if not results:  # guess the write tool's name and call it anyway
            return openai_chat(tool_calls=[("kg_add_fact", {"head": "Bob", "relation": "pet", "tail": "Rex"})])
        if len(results) == 1:  # look: the fact must not be there
            return openai_chat(tool_calls=[("kg_neighbors", {"entity": "Bob"})])
        return openai_chat(tool_calls=[(gold.name, gold.arguments)])

    with FakeProviderServer() as fake:
        fake.openai.respond_with(model)
        opts = RunOptions(benchmark="familytool-e", model="openai:m", base_url=fake.openai_base_url,
                          api_key_env="PATH", limit=1, run_dir=tmp_path / "run", progress=False,
                          benchmark_options={"inductive": True})
        _, summary = await run_benchmark(opts)
    assert summary["completed"] == 1
    (trace,) = RunDir.open(tmp_path / "run").iter_traces()
    calls = [e for e in trace["events"] if e["kind"] == "tool_call" and e.get("by") != "harness"]
    refused, neighbors, final = calls
    assert refused["name"] == "kg_add_fact" and refused["is_error"] and refused["refused"]
    assert refused["result_text"].startswith("Error: unknown tool 'kg_add_fact'")
    assert not neighbors["is_error"] and "Rex" not in json.dumps(neighbors["structured"])  # the KG is unchanged
    assert final["name"] == gold.name and not final["is_error"]
    assert summary["metrics"]["tool_em"] == 100.0
