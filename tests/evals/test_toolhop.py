"""ToolHop: loading both file formats, answers, scoring and metrics, feedback, gold chains through the
real MCP server, the plugin's modes, fetch."""

from __future__ import annotations

import ast
import asyncio
import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest
from loopback_http import serve_directory

from client.agent import result_text
from client.mcp_session import connect, make_http_client
from client.runs import RunDir
from evals.benchmarks.toolhop.answers import answer_correct
from evals.benchmarks.toolhop.chains import Chain, gold_chains
from evals.benchmarks.toolhop.feedback import GENERIC_ERROR, shown, tool_reported_error, tool_result
from evals.benchmarks.toolhop.metrics import METRICS, task_score
from evals.benchmarks.toolhop.scoring import invocation_errors, score_trace
from evals.benchmarks.toolhop.tasks import (
    ToolHopDataError,
    ToolHopTask,
    dataset_in_use,
    load_file,
    load_tasks,
    split_code,
)
from evals.benchmarks.toolhop.tools import ToolHopCatalog
from evals.core import fetch
from evals.core.data import data_dir
from evals.core.metrics import summary_blocks
from evals.core.registry import get_benchmark, load_benchmark
from evals.core.run import RunOptions, run_benchmark, score_run_dir
from server import BenchmarkMount, ToolServer, create_app, serve_in_background
from tool_specs import ToolResult
from tool_specs.sandbox import SandboxPool, SandboxReply

SUBSET = Path(data_dir()) / "toolhop" / "toolhop_subset100_localbench.jsonl"
pytestmark = pytest.mark.skipif(not SUBSET.is_file(), reason=f"ToolHop subset not found at {SUBSET}")


@pytest.fixture(scope="module")
def tasks() -> list[ToolHopTask]:
    return load_tasks("subset100")


def test_subset_loads_in_hop_order_with_the_manifest_counts(tasks):
    assert len(tasks) == 100 and sum(t.hop_count for t in tasks) == 450
    assert Counter(t.hop_count for t in tasks) == {3: 29, 4: 32, 5: 18, 6: 2, 7: 19}
    assert Counter(t.answer_type for t in tasks) == {"number": 76, "string": 21, "letter": 2, "date": 1}
    assert sum(1 for t in tasks if t.gold_calls) == 22
    first = next(t for t in tasks if t.id == "202")  # the manifest's example
    assert [h.name for h in first.hops] == ["genealogy_query", "historical_biography_retriever", "date_digit_sum"]
    assert first.hops[0].answer == "John II of Brienne, Count of Eu" and first.answer == "15"
    for task in tasks:
        names = [h.name for h in task.hops]
        assert len(set(names)) == len(names), task.id  # duplicate published names get a suffix
        for hop in task.hops:
            module = ast.parse(hop.code.code)
            # the example block is gone: only definitions (and constants) remain
            assert all(isinstance(n, ast.Import | ast.ImportFrom | ast.FunctionDef | ast.ClassDef | ast.Assign) for n in module.body)
            assert hop.function in {n.name for n in module.body if isinstance(n, ast.FunctionDef)}
    renamed = [h for t in tasks for h in t.hops if h.name != h.function]
    assert len(renamed) == 7 and all(h.name == h.function + "_2" for h in renamed)


def test_example_usage_is_stripped_and_kept_as_example_calls():
    code = split_code(
        "import re\nLIMIT = 3\ndef f(name, n=1):\n    return name[:LIMIT] * n\n\n# Example usage\n"
        "who = 'Alice'\nresult = f(who, 2)\nprint(result)\n", "f")
    assert "print" not in code.code and "LIMIT = 3" in code.code and "result =" not in code.code
    assert [c.arguments for c in code.examples] == [{"name": "Alice", "n": 2}]
    with pytest.raises(ToolHopDataError, match="defines no function 'g'"):
        split_code("def f():\n    pass\n", "g")


def test_official_format_loads_to_the_same_tasks(tasks, tmp_path):
    """The official file: a JSON array, integer ids, dicts in hop order; no local-bench fields."""
    rows = [json.loads(line) for line in SUBSET.read_text().splitlines()]
    official = []
    for r in rows:
        by_name = {t["name"]: q for q, t in r["tools"].items()}
        order = [by_name.get(ast.parse(f).body[[isinstance(n, ast.FunctionDef) for n in ast.parse(f).body].index(True)].name) for f in r["functions"]]
        if None in order or len(set(order)) != len(order):
            order = list(r["tools"])  # rows with a repeated tool name: any order is fine
        official.append({"id": r["source_id"], "question": r["question"], "answer": r["answer"],
                         "sub_task": {q: r["sub_task"][q] for q in order}, "tools": {q: r["tools"][q] for q in order},
                         "functions": r["functions"], "domain": r["domain"], "answer_type": r["answer_type"],
                         "previous_answer_type": r["previous_answer_type"]})
    path = tmp_path / "ToolHop.json"
    path.write_text(json.dumps(official, indent=1))
    loaded = load_file(path)
    assert [t.id for t in loaded] == [t.id for t in tasks]
    assert [[(h.name, h.answer) for h in t.hops] for t in loaded] == [[(h.name, h.answer) for h in t.hops] for t in tasks]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{**official[0], "functions": official[0]["functions"][:-1]}]))
    with pytest.raises(ToolHopDataError, match=r"record 1 \(id 202\).*no code"):
        load_file(bad)


def test_answer_normalisation():
    ok = answer_correct
    assert ok("Final answer: 15", "15") and ok("The sum is 15.", "15") and ok("324", "324.0")
    assert ok("Final answer: 1,851", "1851") and ok("final answer: O’Sullivan", "O'Sullivan")
    assert ok('{"last_name": "Russell"}', "Russell") and ok("Renée Saint-Cyr", "Renee Saint-Cyr")
    assert ok("The answer is imgniX", "imgnix") and ok("2.00", "2")
    assert not ok("1302", "15") and not ok("The year is 2011; final answer: 2012", "2011") and not ok(None, "1")
    assert not ok("", "x") and not ok("Final answer:", "x")


def test_invocation_errors_and_metrics_from_traces(tasks):
    task = next(t for t in tasks if t.id == "202")
    tool = task.hops[0].name  # genealogy_query(individual_name, relationship_type, data_source required)
    full = {"individual_name": "X", "relationship_type": "father", "data_source": {"database_name": "db"}}
    calls = [
        {"name": tool, "arguments": full},  # fine
        {"name": "made_up_tool", "arguments": {}},  # tool hallucination
        {"name": tool, "arguments": {**full, "colour": "red"}},  # parameter hallucination
        {"name": tool, "arguments": {"relationship_type": "father", "data_source": {}}},  # parameter omission
        {"name": tool, "arguments": None},  # not a JSON object: no parameter error
    ]
    errs = [invocation_errors(c, task.tool_schemas) for c in calls]
    assert [e["tool_hallucination"] for e in errs] == [False, True, False, False, False]
    assert [e["param_hallucination"] for e in errs] == [False, False, True, False, False]
    assert [e["param_omission"] for e in errs] == [False, False, False, True, False]
    assert errs[2]["hallucinated_params"] == ["colour"] and errs[3]["omitted_params"] == ["individual_name"]
    good_trace = {"status": "completed", "final_answer": "Final answer: 15", "outcome": {"calls": calls[:1]}}
    bad_trace = {"status": "completed", "final_answer": "16", "outcome": {"calls": calls}}
    good, bad, missing = score_trace(task, good_trace), score_trace(task, bad_trace), score_trace(task, None)
    assert (good.correct, good.calls, good.error_calls) == (True, 1, 0)
    assert (bad.correct, bad.calls, bad.error_calls) == (False, 5, 3)
    assert (missing.correct, missing.calls) == (False, 0)
    # the run's metrics, aggregated by the core from each task's samples
    samples = [task_score(task, t, has_chain=False) for t in (good_trace, bad_trace, None)]
    m = summary_blocks(METRICS, samples)["metrics"]
    assert m["answer_accuracy"] == 33.33 and m["calls"] == 6
    assert m["query_error_rate"] == 33.33 and m["instance_error_rate"] == 50.0
    assert m["tool_hallucination"] == m["param_hallucination"] == m["param_omission"] == 16.67


async def test_every_gold_chain_yields_the_gold_answer_through_the_mcp_server(tasks):
    """Explicit chains (gold_calls) and derived ones, each call made over HTTP with the real client;
    the last call's real output must hold the gold final answer."""
    with SandboxPool(2) as pool:
        chains = gold_chains(tasks, pool)
        catalog = ToolHopCatalog("toolhop", tasks, pool=pool)
        server = ToolServer([BenchmarkMount(catalog)])
        explicit = [c for c in chains.values() if c.source == "explicit"]
        assert len(explicit) == 22 and len(chains) >= 50
        gate = asyncio.Semaphore(4)

        async def play(url: str, http, task: ToolHopTask, chain: Chain) -> None:
            async with gate, connect(f"{url}/mcp/toolhop/{task.id}", http_client=http) as client:
                listed = [t.name for t in (await client.list_tools()).tools]
                assert listed == [h.name for h in task.hops]
                outputs = []
                for call in chain.calls:
                    res = await client.call_tool(call.name, call.arguments)
                    assert not res.is_error, (task.id, call, result_text(res))
                    outputs.append(result_text(res))
            assert answer_correct(outputs[-1], task.answer), (task.id, outputs[-1], task.answer)
            if chain.source == "derived":  # each derived hop was chosen for its gold intermediate answer
                assert all(answer_correct(o, h.answer) for o, h in zip(outputs[:-1], task.hops, strict=False))

        async with serve_in_background(create_app(server, json_response=True)) as url, make_http_client() as http:
            await asyncio.gather(*(play(url, http, t, chains[t.id]) for t in tasks if t.id in chains))


def test_returned_errors_and_feedback_levels():
    """The sandbox executor's result hook: a returned error is an error result; minimal feedback
    hides every failure's detail, detailed shows the tool's own text; warnings never show."""
    assert tool_reported_error({"error": "Invalid date format"}) and tool_reported_error("Error: bad input")
    assert tool_reported_error(" exception raised") and not tool_reported_error({"error": "", "x": 1})
    assert not tool_reported_error({"error": "x", "a": 1, "b": 2}) and not tool_reported_error("no error here")
    returned = tool_result(SandboxReply("ok", value={"error": "Invalid date format"}))
    assert returned.is_error and returned.text == '{"error": "Invalid date format"}'
    raised = tool_result(SandboxReply("exception", error="KeyError: 'the secret detail'"))
    assert raised.is_error and raised.text == "Error: KeyError: 'the secret detail'"
    ok = tool_result(SandboxReply("ok", value={"sum": 15}))
    assert not ok.is_error and ok.text == '{"sum": 15}' and ok.structured == {"sum": 15}
    assert tool_result(SandboxReply("timeout", error="too slow")).text == "Error: too slow"
    for result in (returned, raised):
        assert shown(result, "minimal").text == GENERIC_ERROR and shown(result, "detailed").text == result.text
    assert shown(ok, "minimal").text == '{"sum": 15}'
    warned = ToolResult(text="fine", warnings=["unknown parameter 'x'"])
    assert shown(warned, "detailed") == ToolResult(text="fine")
    with pytest.raises(ValueError, match="feedback must be one of"):
        ToolHopCatalog("toolhop", [], feedback="terse")  # type: ignore[arg-type]


def test_tasks_are_kept_per_version_of_the_files_bytes_not_per_mtime(data_dir, tmp_path, monkeypatch) -> None:
    """Bytes changed in place with the size and mtime put back are parsed again (issue 45 item 5)."""
    import os
    import shutil

    (tmp_path / "toolhop").mkdir()
    copy = tmp_path / "toolhop" / "toolhop_subset100_localbench.jsonl"
    shutil.copyfile(data_dir / "toolhop" / copy.name, copy)
    monkeypatch.setenv("EVALS_DATA_DIR", str(tmp_path))
    st = copy.stat()
    assert load_tasks("subset100")[0].answer == "15"
    copy.write_bytes(copy.read_bytes().replace(b'{"answer":"15"', b'{"answer":"16"', 1))
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (copy.stat().st_size, copy.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    assert load_tasks("subset100")[0].answer == "16"


def test_evals_serve_mounts_toolhop_for_its_default_strategy_and_a_run_for_its_own(data_dir) -> None:
    """The strategy comes from the caller (``evals serve``: the default, ``free``; a run: its plan),
    never derived again by the benchmark."""
    import contextlib

    from evals.core.registry import load_benchmark
    from evals.core.serving import build_tool_server

    with contextlib.ExitStack() as stack:
        served = build_tool_server(["toolhop"], stack=stack)
        assert [m.catalog.feedback for m in served.mounts.values()] == ["detailed"]  # type: ignore[attr-defined]
        bench = load_benchmark("toolhop", {"dataset": "subset"})
        assert bench.mounts(stack, strategy="free-minimal")[0].catalog.feedback == "minimal"  # type: ignore[attr-defined]


async def test_feedback_detailed_and_minimal_through_the_server(tasks):
    task = next(t for t in tasks if t.id == "202")
    with SandboxPool(1) as pool:
        for feedback in ("detailed", "minimal"):
            server = ToolServer([BenchmarkMount(ToolHopCatalog("toolhop", [task], pool=pool, feedback=feedback))])
            async with serve_in_background(create_app(server, json_response=True)) as url:
                async with connect(f"{url}/mcp/toolhop/202") as client:
                    bad = await client.call_tool("date_digit_sum", {"no_such_parameter": 1})
                    missing = await client.call_tool("genealogy_query", {"individual_name": "X"})
            assert bad.is_error
            if feedback == "detailed":
                assert "TypeError" in result_text(bad) and "no_such_parameter" in result_text(bad)
                assert "data_source" in result_text(missing)  # the tool's own returned error
            else:
                assert result_text(bad) == result_text(missing) == GENERIC_ERROR


async def test_evals_run_oracle_free_and_score(tmp_path, tasks):
    opts = RunOptions(benchmark="toolhop", model="oracle", strategy="free", run_dir=tmp_path / "run",
                      concurrency=4, progress=False)
    result, summary = await run_benchmark(opts)
    m = summary["metrics"]
    assert summary["tasks"] == summary["completed"] == 100 and summary["dataset"] == "subset100"
    assert m["answer_accuracy"] == 100.0 and m["tasks_with_gold_chain"] == m["scored_tasks"] >= 50
    assert m["instance_error_rate"] == m["query_error_rate"] == 0.0
    assert set(summary["breakdowns"]) == {"hops", "domain"}
    assert sum(b["tasks"] for b in summary["breakdowns"]["hops"].values()) == m["scored_tasks"]
    # evals score: the same numbers from the traces alone
    again = await score_run_dir(tmp_path / "run")
    assert again["metrics"] == m and again["breakdowns"] == summary["breakdowns"]
    # the oracle's answers are the real last outputs, not the gold field
    traces = {t["task_id"]: t for t in RunDir.open(tmp_path / "run").iter_traces()}
    played = [t for t in traces.values() if t["outcome"].get("gold_chain")]
    for t in played:
        calls = [e for e in t["events"] if e["kind"] == "tool_call"]
        assert t["final_answer"] == "Final answer: " + calls[-1]["result_text"]


async def test_forced_and_direct_modes(tmp_path):
    forced = RunOptions(benchmark="toolhop", model="oracle", strategy="forced", run_dir=tmp_path / "forced",
                        limit=3, progress=False)
    _, summary = await run_benchmark(forced)
    traces = list(RunDir.open(tmp_path / "forced").iter_traces())
    requests = [e for t in traces for e in t["events"] if e["kind"] == "model_request"]
    assert requests and all(r["tool_choice"] == ("required" if r["turn"] == 0 else "auto") for r in requests)
    direct = RunOptions(benchmark="toolhop", model="oracle", strategy="direct", run_dir=tmp_path / "direct",
                        limit=3, progress=False)
    _, summary = await run_benchmark(direct)
    traces = list(RunDir.open(tmp_path / "direct").iter_traces())
    assert all(not [e for e in t["events"] if e["kind"] == "tool_call"] for t in traces)
    assert all(e["tools"] == [] for t in traces for e in t["events"] if e["kind"] == "model_request")
    with pytest.raises(ValueError, match="no strategy 'agent'"):
        await run_benchmark(RunOptions(benchmark="toolhop", model="oracle", strategy="agent", run_dir=tmp_path / "x"))


def test_registry_entry():
    info = get_benchmark("toolhop")
    assert "subset" in info.description and {o.name for o in info.options} >= {"dataset", "derive_chains"}
    assert load_benchmark("toolhop", {"dataset": "subset"}).task_ids()[:1] == ["202"]


def test_fetch_toolhop_pins_the_revision_and_checks_the_checksum(tmp_path, monkeypatch):
    (entry,) = fetch.sources()["toolhop"]
    assert "/resolve/b439d7279af359fda46e8117ae4f0245b75f5c6b/data/ToolHop.json" in entry.url
    assert entry.size == 19720396 and entry.sha256.startswith("0a51f71a")
    mirror = tmp_path / "mirror"
    (mirror / "data").mkdir(parents=True)
    payload = json.dumps([json.loads(line) | {"id": json.loads(line)["source_id"]} for line in SUBSET.read_text().splitlines()[:3]])
    (mirror / "data" / "ToolHop.json").write_text(payload)
    with serve_directory(mirror) as prefix:
        with pytest.raises(fetch.FetchError, match="sha256"):  # not the pinned file: refused, nothing saved
            fetch.fetch("toolhop", tmp_path / "data", url_prefix=prefix)
        assert not (tmp_path / "data" / "toolhop" / "ToolHop.json").exists()
        blob = payload.encode()
        pinned = fetch.RemoteFile(entry.dest, entry.url, hashlib.sha256(blob).hexdigest(), len(blob), entry.pinned_path)
        monkeypatch.setitem(fetch.sources(), "toolhop", [pinned])
        (path,) = fetch.fetch("toolhop", tmp_path / "data", url_prefix=prefix)
        assert path.read_bytes() == blob
    monkeypatch.setenv("EVALS_DATA_DIR", str(tmp_path / "data"))
    assert dataset_in_use("auto") == "full"
    subset_ids = [str(json.loads(line)["source_id"]) for line in SUBSET.read_text().splitlines()[:3]]
    assert [t.id for t in load_tasks()] == subset_ids


def test_derived_chains_from_the_cache_keep_the_argument_order_of_a_fresh_derivation(tasks):
    from evals.benchmarks.toolhop.chains import derive_chains

    some = [t for t in tasks if not t.gold_calls][:3]
    assert some, "the subset has tasks whose chains are derived"

    def calls(chains: dict[str, Chain]) -> str:  # order-sensitive, as a trace's bytes are
        return json.dumps({tid: [c.to_dict() for c in ch.calls] for tid, ch in chains.items()})

    with SandboxPool() as pool:
        fresh = derive_chains(some, pool, use_cache=False)
        assert fresh, "no chain derived"
        first = derive_chains(some, pool)  # derives and writes the cache
    cached = derive_chains(some)  # read back from the cache
    assert calls(first) == calls(fresh) and calls(cached) == calls(fresh)
