"""`evals run` end to end: the real MCP server over HTTP, the real SDKs against local provider stand-ins."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest
from fake_providers import Delay, FakeProviderServer, anthropic_message, openai_chat, openai_error, tool_call

from client.runs import RunDir
from evals.benchmarks.familytool.data import load_tasks
from evals.core.run import RunOptions, prepare_options, run_benchmark


def _evals(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evals.cli", *args], capture_output=True, text=True, timeout=timeout)


def test_the_run_resolves_its_options_into_a_new_frozen_plan(data_dir):
    """RunOptions is frozen: resolving makes the plan (transport, workers, strategy, the benchmark's
    options filled in) as a new value, and what was given stays as given."""
    given = RunOptions(benchmark="familytool-b", model="oracle", workers=None)
    plan, bench = prepare_options(given)
    assert (given.strategy, given.transport, given.workers, dict(given.benchmark_options)) == (None, None, None, {})
    assert plan.strategy == bench.info.default_strategy and plan.transport == "memory"
    assert plan.workers is not None and plan.workers >= 1 and plan.benchmark_options == dict(bench.options)
    with pytest.raises(dataclasses.FrozenInstanceError):
        given.workers = 2  # type: ignore[misc]
    worker = plan.for_worker()
    assert (worker.workers, worker.progress, worker.executor, worker.ray_address) == (1, False, "local", None)
    assert dataclasses.replace(worker, workers=plan.workers, progress=plan.progress) == plan


@pytest.mark.parametrize("dataset,count", [("familytool-b", 483), ("familytool-e", 455)])
def test_oracle_gets_every_gold_call_through_the_http_server(data_dir, tmp_path, dataset, count):
    proc = _evals("run", dataset, "--model", "oracle", "--run-dir", str(tmp_path / "run"),
                  "--concurrency", "16", "--no-progress", "--json", "--transport", "http")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["tasks"] == summary["completed"] == count and summary["errored"] == 0
    assert summary["metrics"]["tool_em"] == 100.0 and "exact_call_match" not in summary["metrics"]
    # the traces hold each task once, with the gold call made over MCP and answered without error
    gold = {t.id: t.gold_calls[0] for t in load_tasks(dataset)}
    traces = [json.loads(line) for line in open(tmp_path / "run" / "traces.jsonl")]
    assert Counter(t["task_id"] for t in traces) == Counter(list(gold))
    for t in traces:  # the agent oracle looks the gold paths up in the KG, then makes the gold call
        calls = [e for e in t["events"] if e["kind"] == "tool_call"]
        assert [c["name"] for c in calls[:-1]] == ["kg_search_path"] * (len(calls) - 1) and len(calls) >= 2
        assert (calls[-1]["name"], calls[-1]["arguments"]) == (gold[t["task_id"]].name, gold[t["task_id"]].arguments)
        assert not any(c["is_error"] for c in calls)


def test_a_run_killed_with_sigkill_resumes_with_every_task_exactly_once(data_dir, tmp_path):
    run = tmp_path / "run"
    args = [sys.executable, "-m", "evals.cli", "run", "familytool-b", "--model", "oracle:0.02",
            "--limit", "80", "--concurrency", "4", "--run-dir", str(run), "--no-progress"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    traces = run / "traces.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline:
        if traces.exists() and traces.read_bytes().count(b"\n") >= 10:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    first = traces.read_bytes().count(b"\n")
    assert 10 <= first < 80, first  # killed in the middle
    done = _evals("run", "familytool-b", "--model", "oracle:0.02", "--limit", "80", "--concurrency", "4",
                  "--run-dir", str(run), "--no-progress", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["completed"] == 80 and summary["metrics"]["tool_em"] == 100.0
    ids = [r["task_id"] for r in RunDir.open(run).iter_traces(dedupe=False)]
    assert len(ids) == len(set(ids)) == 80
    assert set(ids) == {t.id for t in load_tasks("b")[:80]}
    # issue 50: each fact once: no events.jsonl beside the traces unless --event-log asks for one
    assert not (run / "events.jsonl").exists()
    assert json.loads((run / "config.json").read_text())["run"]["event_log"] is False
    # the tool lists are kept once, in tools.jsonl, and every trace of both calls finds its lists there
    assert '"tools": [' not in (run / "traces.jsonl").read_text()
    for trace in RunDir.open(run).iter_traces(dedupe=False):
        requests = [e for e in trace["events"] if e["kind"] == "model_request"]
        assert requests[0]["tools"] and not any(e.get("tools_missing") for e in requests)


def _gold_by_query(dataset: str) -> dict[str, dict]:
    from evals.benchmarks.familytool.data import agent_prompt

    return {agent_prompt(t): t.gold_calls[0].to_dict() for t in load_tasks(dataset)}


async def test_openai_model_through_mcp_with_failures_recorded_in_the_traces(data_dir, tmp_path):
    """A scripted OpenAI-compatible model drives 6 tasks; the provider misbehaves in every documented way."""
    gold = _gold_by_query("familytool-b")
    tasks = load_tasks("b")[:6]
    first_request_seen: Counter[str] = Counter()

    def model(body: dict) -> object:
        msgs = body["messages"]
        user = next(m["content"] for m in msgs if m["role"] == "user")
        task_no = [t.id for t in tasks].index(next(t.id for t in tasks if user.endswith(t.query)))
        results = [m for m in msgs if m["role"] == "tool"]
        first_request_seen[user] += 1
        if not results:
            attempt = first_request_seen[user]
            if task_no == 1 and attempt == 1:
                return openai_error(429, "slow down", headers={"retry-after": "0.3"})
            if task_no == 2 and attempt == 1:
                return openai_error(500, "upstream hiccup")
            if task_no == 3 and attempt == 1:
                return Delay(5.0, openai_chat("too late"))  # longer than the client timeout
            if task_no == 4:
                return openai_error(400, "This model's maximum context length is 8192 tokens.",
                                    code="context_length_exceeded")
            # a malformed argument string first: the loop must report it back, not crash
            return openai_chat(tool_calls=[tool_call("kg_neighbors", '{"entity": "Bob"')])
        if len(results) == 1:  # parallel calls: look around, then list relations
            return openai_chat(tool_calls=[tool_call("kg_neighbors", {"entity": "Bob"}),
                                           tool_call("kg_list_relations", {})])
        if len(results) == 3:
            g = gold[user]
            return openai_chat(tool_calls=[tool_call(g["name"], g["arguments"])], usage=(120, 30))
        return openai_chat("Done.")

    with FakeProviderServer() as fake:
        fake.openai.respond_with(model)
        opts = RunOptions(
            benchmark="familytool-b", model="openai:fake-model", limit=6, concurrency=3,
            run_dir=tmp_path / "run", base_url=fake.openai_base_url, progress=False,
            retry_base_delay=0.05, adapter_options={"timeout": 1.0},
        )
        result, summary = await run_benchmark(opts)
    assert summary["tasks"] == 6 and summary["completed"] == 5 and summary["errored"] == 1
    assert summary["metrics"]["tool_em"] == pytest.approx(100 * 5 / 6, abs=0.01)
    traces = {t["task_id"]: t for t in RunDir.open(tmp_path / "run").iter_traces()}

    def attempts(task_no: int) -> list[dict]:
        return [e for e in traces[tasks[task_no].id]["events"] if e["kind"] == "attempt_failed"]

    assert attempts(1)[0]["error"]["details"]["kind"] == "rate_limit" and attempts(1)[0]["delay"] >= 0.3
    assert attempts(2)[0]["error"]["details"]["kind"] == "server_error" and attempts(2)[0]["delay"] is not None
    assert attempts(3)[0]["error"]["details"]["kind"] == "timeout" and attempts(3)[0]["delay"] is not None
    errored = traces[tasks[4].id]
    assert errored["status"] == "errored" and "context" in json.dumps(errored["error"]).lower()
    # the model's own error, not the task group's ExceptionGroup around it
    assert errored["error"]["type"] == "ModelError" and errored["error"]["details"]["kind"] == "context_length"
    assert errored["error"]["retryable"] is False
    assert [e["delay"] for e in attempts(4)] == [None]  # a deterministic failure is not retried
    ok = traces[tasks[0].id]
    calls = [e for e in ok["events"] if e["kind"] == "tool_call"]
    assert calls[0]["is_error"] and "JSON" in calls[0]["result_text"]  # malformed arguments, reported back
    assert [c["name"] for c in calls[1:3]] == ["kg_neighbors", "kg_list_relations"]  # parallel, in order
    assert calls[3]["name"] == gold[next(u for u in gold if u.endswith(tasks[0].query))]["name"]
    assert ok["totals"]["input_tokens"] > 0 and ok["outcome"]["exact_call_match"] is True
    assert ok["outcome"]["stop"] == "stop_tool_called"  # FamilyTool's answer is the call: the episode ends there


def test_run_refuses_a_run_dir_made_with_another_model(data_dir, tmp_path):
    run = str(tmp_path / "run")
    assert _evals("run", "familytool-b", "--model", "oracle", "--limit", "2", "--run-dir", run, "--no-progress").returncode == 0
    proc = _evals("run", "familytool-b", "--model", "openai:gpt-4o-mini", "--base-url", "http://127.0.0.1:9",
                  "--limit", "2", "--run-dir", run, "--no-progress")
    assert proc.returncode == 2 and "model" in proc.stderr


def test_anthropic_model_runs_the_agent_over_the_kg_with_thinking_sent_back(data_dir, tmp_path):
    """`evals run` with the real anthropic SDK: a KG lookup, then the gold call; thinking blocks go back."""
    tasks = {t.id: t for t in load_tasks("b")[:3]}

    def claude(body: dict) -> dict:
        user = body["messages"][0]["content"]
        user = user if isinstance(user, str) else " ".join(b.get("text", "") for b in user)
        task = next(t for t in tasks.values() if t.query in user)
        if len(body["messages"]) == 1:
            first = task.gold_kg[0]
            return anthropic_message(thinking="look the person up first", usage=(500, 40),
                                     tool_uses=[("kg_search_path", {"start": first.head, "path": [t.relation for t in task.gold_kg]})])
        gold = task.gold_calls[0]
        return anthropic_message(thinking="now call the tool", tool_uses=[(gold.name, gold.arguments)], usage=(800, 30))

    with FakeProviderServer() as server:  # strict: rejects a turn whose thinking blocks were not sent back
        server.anthropic.respond_with(claude)
        proc = subprocess.run(
            [sys.executable, "-m", "evals.cli", "run", "familytool-b", "--model", "anthropic:claude-sonnet-4-5",
             "--base-url", server.anthropic_base_url, "--api-key-env", "PATH", "--strategy", "agent", "--limit", "3",
             "--run-dir", str(tmp_path / "r"), "--no-progress", "--json"],
            capture_output=True, text=True, timeout=300)
        violations = list(server.anthropic.violations)
        second = [b for b in server.anthropic.bodies if len(b["messages"]) == 3]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not violations
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["completed"] == 3 and summary["metrics"]["tool_em"] == 100.0
    assert summary["agent_kg_metrics"]["kg_em"] > 0  # the agent's KG lookups: under our own names
    assert len(second) == 3 and all(any(b.get("type") == "thinking" for b in m["messages"][1]["content"]) for m in second)
    traces = [json.loads(line) for line in open(tmp_path / "r" / "traces.jsonl")]
    assert all(t["totals"]["input_tokens"] == 1300 and t["totals"]["cost_known"] for t in traces)


def test_cache_makes_a_rerun_free_and_identical(data_dir, tmp_path):
    tasks = load_tasks("b")[:4]

    def model(body: dict) -> dict:
        user = body["messages"][-1]["content"]
        gold = next(t for t in tasks if t.query in user).gold_calls[0]
        return openai_chat(tool_calls=[(gold.name, gold.arguments)], usage=(400, 20))

    cache = tmp_path / "cache.sqlite"
    with FakeProviderServer() as server:
        server.openai.respond_with(model)
        out = []
        for run in ("a", "b"):
            proc = _evals("run", "familytool-b", "--model", "openai:m", "--base-url", server.openai_base_url,
                          "--api-key-env", "PATH", "--strategy", "golden-kg", "--limit", "4", "--cache", str(cache),
                          "--run-dir", str(tmp_path / run), "--no-progress", "--json")
            assert proc.returncode == 0, proc.stderr[-3000:]
            out.append((json.loads(proc.stdout.strip().splitlines()[-1]), len(server.openai.requests)))
            cost = [line for line in proc.stderr.splitlines() if "cost USD" in line][0].split()
            # "m" has no price: its cost is unknown, not the 0.0 that the priced calls sum to; a rerun
            # answered from the cache is free
            assert ("unknown" if run == "a" else "0.0000") in cost
    (first, n1), (second, n2) = out
    assert first["totals"]["model"]["cost_known"] is False and second["totals"]["model"]["cost_known"] is True
    assert n1 == 4 and n2 == 4  # the second run asked the provider nothing
    assert first["metrics"] == second["metrics"] and first["metrics"]["tool_em"] == 100.0
    traces = [json.loads(line) for line in open(tmp_path / "b" / "traces.jsonl")]
    responses = [e for t in traces for e in t["events"] if e["kind"] == "model_response"]
    assert len(responses) == 4 and all(e.get("cached") for e in responses)
    assert all(t["totals"]["cost_usd"] == 0 for t in traces)


def test_model_args_reach_the_adapter_and_the_run_config(data_dir, tmp_path):
    task = load_tasks("b")[0]
    with FakeProviderServer() as server:
        server.openai.respond_with(lambda body: openai_chat(tool_calls=[(task.gold_calls[0].name, task.gold_calls[0].arguments)]))
        proc = _evals("run", "familytool-b", "--model", "openai:m", "--base-url", server.openai_base_url,
                      "--api-key-env", "PATH", "--strategy", "golden-kg", "--limit", "1", "--run-dir", str(tmp_path / "r"),
                      "--model-arg", "parallel_tool_calls=false", "--model-arg", 'extra_body={"top_k": 5}', "--no-progress")
        body = server.openai.bodies[0]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert body["parallel_tool_calls"] is False and body["top_k"] == 5
    config = json.loads((tmp_path / "r" / "config.json").read_text())
    assert config["options"]["model_args"] == {"parallel_tool_calls": False, "extra_body": {"top_k": 5}}
    bad = _evals("run", "familytool-b", "--model", "oracle", "--model-arg", "novalue", "--run-dir", str(tmp_path / "x"))
    assert bad.returncode != 0 and "KEY=VALUE" in bad.stderr
