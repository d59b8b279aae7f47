"""NesTools through the real MCP server: tools answered with handles, schema errors, distractors, the
two strategies with the oracle, a scripted agent's trace made into the official call list, export.

The oracle over all 1,000 samples with both strategies takes about 2 minutes, so these tests run
the first 25 tasks and the samples with the rarest structures; the full-set command is in the
README (NesTools section)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from client.adapters.oracle import OracleAdapter
from client.agent import AgentConfig, result_text, run_agent
from client.mcp_session import connect, make_http_client
from client.runs import EpisodeRecorder
from evals.benchmarks.nestools.data import TaskSet, load_tasks
from evals.benchmarks.nestools.metrics import METRICS, task_score
from evals.benchmarks.nestools.official import score_prediction
from evals.benchmarks.nestools.plugin import PROMPT_HEAD, NesToolsBenchmark, calls_from_trace, oneshot_prompt
from evals.benchmarks.nestools.tools import NesToolsCatalog
from evals.core.context import ScoreContext
from evals.core.data import data_dir
from evals.core.formats import export_run, import_predictions
from evals.core.metrics import summary_blocks
from evals.core.registry import get_benchmark
from evals.core.run import RunOptions, run_benchmark, score_run_dir
from server import BenchmarkMount, ToolServer, create_app, serve_in_background

DATA = Path(data_dir()) / "nestools" / "test_data.jsonl"
pytestmark = pytest.mark.skipif(not DATA.is_file(), reason=f"NesTools data not found at {DATA}")
LIMIT = 25
# depth 5, a tool called twice, a list of handles, a dict argument, a tool without outputs
RARE = ("516", "57", "45", "76", "834")


@pytest.fixture(scope="module")
def taskset() -> TaskSet:
    return TaskSet(load_tasks())


@pytest.fixture(scope="module")
def bench() -> NesToolsBenchmark:
    info = get_benchmark("nestools")
    return NesToolsBenchmark(info, {"distractors": 5, "seed": 0})


def test_offered_tools_are_the_gold_tools_and_five_distractors_each_drawn_deterministically(taskset):
    again = TaskSet(list(taskset.tasks.values()))
    for task_id in ("1", "9", "57", "834"):
        task = taskset.tasks[task_id]
        offered = taskset.offered(task_id)
        assert [a.api_id for a in offered] == [a.api_id for a in again.offered(task_id)]  # same seed, same draw
        names = [a.name for a in offered]
        assert len(offered) == 6 * len(task.gold_apis) and len(set(names)) == len(names)
        assert {a.api_id for a in task.gold_apis} <= {a.api_id for a in offered}
    assert [a.api_id for a in TaskSet(list(taskset.tasks.values()), seed=1).offered("1")] != \
        [a.api_id for a in taskset.offered("1")]
    only_gold = TaskSet(list(taskset.tasks.values()), distractors=0)
    assert {a.api_id for a in only_gold.offered("9")} == {a.api_id for a in taskset.tasks["9"].gold_apis}


def test_oneshot_prompt_is_the_papers(taskset):
    task = taskset.tasks["1"]
    shown = [a.with_id() for a in taskset.offered("1")]
    prompt = oneshot_prompt(shown, task.query)
    assert prompt.startswith(PROMPT_HEAD) and prompt.endswith(f"\n\nTask description:\n{task.query}\n\nAPI call result:\n")
    listed = ast.literal_eval(prompt[len(PROMPT_HEAD):prompt.index("\n\nTask description:")])
    assert listed == shown and list(listed[0])[:2] == ["api_name", "api_id"]


async def test_tools_answer_handles_per_session_and_refuse_bad_arguments_naming_them(taskset):
    server = ToolServer([BenchmarkMount(NesToolsCatalog("nestools", taskset))])
    async with serve_in_background(create_app(server, json_response=True)) as url, make_http_client() as http:
        async with connect(f"{url}/mcp/nestools/1?session=a", http_client=http) as a, \
                connect(f"{url}/mcp/nestools/1?session=b", http_client=http) as b:
            listed = {t.name: t for t in (await a.list_tools()).tools}
            assert {"scan_isbn", "locate_book", "engage_ar_experience"} <= set(listed) and len(listed) == 18
            first = await a.call_tool("scan_isbn", {"isbn": "978-3-16-148410-0"})
            assert first.structured_content == {"book_details": "API_call_0", "availability": "API_call_1"}
            second = await a.call_tool("locate_book", {"book_info": "API_call_0"})
            assert second.structured_content == {"location_desc": "API_call_2"}
            other = await b.call_tool("locate_book", {"book_info": "x"})  # another session counts from 0
            assert other.structured_content == {"location_desc": "API_call_0"}
            # a bool parameter takes a bool or a handle, nothing else
            nested = await a.call_tool("engage_ar_experience", {"availability": "API_call_1", "exact_location": "API_call_2"})
            assert not nested.is_error
            bad = await a.call_tool("engage_ar_experience", {"availability": "maybe", "exact_location": "x"})
            assert bad.is_error and "availability" in result_text(bad)
            missing = await a.call_tool("scan_isbn", {})
            assert missing.is_error and "isbn" in result_text(missing)
            wrong_type = await a.call_tool("scan_isbn", {"isbn": 978})
            assert wrong_type.is_error and "isbn" in result_text(wrong_type)
            after = await a.call_tool("locate_book", {"book_info": "y"})  # refused calls used no handle
            assert after.structured_content == {"location_desc": "API_call_5"}
        async with connect(f"{url}/mcp/nestools/834", http_client=http) as c:
            none = await c.call_tool("review_legal_compliance", {"business_type": "x", "risk_level": "API_call_0",
                                                                 "compliance_date": "2023-08-15"})
            assert not none.is_error and none.structured_content == {}  # no outputs declared: no handle


@pytest.mark.parametrize("strategy", ["oneshot", "agent"])
async def test_oracle_scores_100_on_every_metric_through_the_server(strategy, tmp_path):
    opts = RunOptions(benchmark="nestools", model="oracle", strategy=strategy, run_dir=tmp_path / "run",
                      limit=LIMIT, concurrency=8, progress=False)
    _, summary = await run_benchmark(opts)
    m = summary["metrics"]
    assert summary["completed"] == LIMIT and m["scored_tasks"] == LIMIT and m["failed_tasks"] == 0
    percent = [x.name for x in METRICS if x.kind == "percent"]
    assert {k: m[k] for k in percent} == dict.fromkeys(percent, 100.0)
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["options"]["distractors"] == 5 and config["options"]["seed"] == 0
    assert await score_run_dir(tmp_path / "run") == summary | {"run_dir": summary["run_dir"]}
    # export: the official input format, read back to the same numbers
    files = export_run(tmp_path / "run", "nestools-official", tmp_path / "export")
    lines = [json.loads(x) for x in files[0].read_text().splitlines()]
    assert [x["test_id"] for x in lines] == list(range(1, LIMIT + 1))
    assert all(isinstance(x["response"], str) for x in lines)
    again = await score_run_dir(import_predictions(files[0], "nestools-official", "nestools", tmp_path / "imported"))
    assert again["metrics"] == m


async def test_the_rarest_structures_score_100_live(bench):
    """Depth 5, a repeated tool, a list of handles, a dict argument, an api without outputs: the
    gold calls played over MCP become the gold call list."""
    server = ToolServer([BenchmarkMount(NesToolsCatalog("nestools", bench.taskset))])
    async with serve_in_background(create_app(server, json_response=True)) as url, make_http_client() as http:
        for task_id in RARE:
            task = bench.tasks[task_id]
            steps = [[{"name": c["api_name"], "arguments": dict(c["parameters"])}] for c in task.calls]
            trace = await _play(url, http, bench, task_id, steps)
            assert calls_from_trace(trace, trace["outcome"]["api_ids"]) == task.gold_prediction()
            score = await bench.score(task_id, trace, ScoreContext({}, None, {}))
            assert score.details["counts"]["tree"], task_id


async def test_agent_trace_resolves_handles_to_the_calls_that_made_them(bench):
    """Sample 9 played with two independent calls in parallel first: every handle after them is
    renumbered, yet each nested argument names the call that produced it, so nested parameters are
    all right while one call pair is out of the gold order."""
    gold = bench.tasks["9"].calls
    inquiry, assess, warranty, ticket, schedule = (dict(c["parameters"]) for c in gold)
    steps = [
        [{"name": "receive_customer_inquiry", "arguments": inquiry}, {"name": "lookup_warranty", "arguments": warranty}],
        [{"name": "assess_issue", "arguments": {"inquiry_id": "API_call_0", "issue_description": "API_call_1"}}],
        [{"name": "generate_support_ticket",
          "arguments": {"inquiry_id": "API_call_0", "resolution_path": "API_call_3", "warranty_status": "API_call_2"}}],
        [{"name": "schedule_service_ticket", "arguments": {**schedule, "ticket_number": "API_call_5"}}],
    ]
    server = ToolServer([BenchmarkMount(NesToolsCatalog("nestools", bench.taskset))])
    async with serve_in_background(create_app(server, json_response=True)) as url, make_http_client() as http:
        trace = await _play(url, http, bench, "9", steps)
        wrong = [*steps[:3], [{"name": "schedule_service_ticket", "arguments": {**schedule, "ticket_number": "API_call_6"}}]]
        wrong_trace = await _play(url, http, bench, "9", wrong)
    counts = (await bench.score("9", trace, ScoreContext({}, None, {}))).details["counts"]
    assert counts["correct_nest"] == counts["gold_nest"] == counts["predict_nest"] == 6
    assert counts["correct_param"] == counts["gold_param"] == 10 and counts["correct_api"] == 5
    # predicted pairs: inquiry-warranty, warranty-assess, assess-ticket, ticket-schedule; gold: inquiry-assess,
    # assess-warranty, warranty-ticket, ticket-schedule
    assert (counts["correct_order"], counts["gold_order"]) == (1, 4) and not counts["tree"]
    # the other output of the right call is a wrong nested value (and a wrong parameter)
    wrong_counts = (await bench.score("9", wrong_trace, ScoreContext({}, None, {}))).details["counts"]
    assert wrong_counts["correct_nest"] == 5 and wrong_counts["correct_param"] == 9
    # the same numbers as the official scoring of the exported call list
    official = score_prediction(gold, bench.tasks["9"].api_ids, json.dumps(calls_from_trace(trace, trace["outcome"]["api_ids"])))
    assert official.to_dict() == counts


def test_failed_episodes_are_left_out_and_counted():
    blocks = summary_blocks(METRICS, [task_score(None), task_score(None)])
    assert blocks["metrics"] == {"failed_tasks": 2}


async def _play(url, http, bench, task_id, steps) -> dict:
    recorder = EpisodeRecorder(task_id)
    model = OracleAdapter(steps, "Done.", task_id=task_id)
    async with connect(f"{url}/mcp/nestools/{task_id}?session={id(steps)}-{task_id}", http_client=http) as session:
        outcome = await run_agent(model, session, bench.tasks[task_id].query, recorder, AgentConfig())
    api_ids = {a.name: a.api_id for a in bench.taskset.offered(task_id)}
    return {"task_id": task_id, "status": "completed", "events": recorder.events,
            "outcome": {**outcome.data, "strategy": "agent", "api_ids": api_ids}}

