"""ComplexFuncBench's data: the record format, the schemas and aliases, the 1,000 first-turn gold
calls through the official decision procedure, the pinned downloads (against a local HTTP stand-in),
the replay server through a real MCP client, the oracle, and the live response matcher (against a
local stand-in for the Booking API)."""

from __future__ import annotations

import contextlib
import copy
import http.server
import json
import re
import shutil
from collections import Counter
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import jsonschema
import pytest
from loopback_http import serve_directory, serve_http

from client.agent import result_text
from client.mcp_session import connect
from evals.benchmarks.complexfuncbench.data import (
    Sample,
    alias_of,
    load_exact_match,
    load_first_turn,
    load_samples,
    load_tool_schemas,
    parse_record,
)
from evals.benchmarks.complexfuncbench.files import SOURCES
from evals.benchmarks.complexfuncbench.procedure import UNEXPECTED_CALL, Episode
from evals.benchmarks.complexfuncbench.rapidapi import RapidAPICompare
from evals.benchmarks.complexfuncbench.tools import FINISH_TOOL, TURN_TOOL, ReplayConfig, sample_tools
from evals.core.fetch import ChecksumMismatch, fetch
from evals.core.registry import load_benchmark
from evals.core.run import RunOptions, run_benchmark
from server import BenchmarkMount, ToolServer, create_app, serve_in_background
from tool_specs import StaticCatalog

FIX = Path(__file__).resolve().parent / "fixtures"
_VALID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@pytest.fixture(scope="module")
def cfb(data_dir) -> Path:
    d = data_dir / "complexfuncbench"
    if not (d / "ComplexFuncBench_possible_answer.jsonl").is_file():
        pytest.skip("ComplexFuncBench data is not in the data directory")
    return d


def _synthetic(sid: str, calls: list[dict], tools: dict[str, dict]) -> Sample:
    names = list(dict.fromkeys(c["name"] for c in calls))
    record = {"id": sid, "conversations": [
        {"role": "user", "content": "q"}, {"role": "assistant", "function_call": calls},
        {"role": "observation", "content": [{"gold": k} for k in range(len(calls))]}, {"role": "assistant", "content": ""}],
        "functions": [tools[n] for n in names]}
    return parse_record(record)


def _perturb(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    return [*value, "x"] if isinstance(value, list) else "x"


def _short(answer):
    if "gold" in answer:
        return answer["gold"]
    return "format error" if "error" in answer else "unexpected" if answer == UNEXPECTED_CALL else answer


def _kind(message):
    if message == "Success.":
        return message
    if isinstance(message, dict):
        return message.get("error_type")
    return [m.get("error_type") if isinstance(m, dict) else m for m in message]


async def test_the_1000_first_turn_gold_calls_validate_and_get_the_official_outcome(cfb):
    """Each sample's first-turn gold calls, played verbatim, permuted and with one value changed, get
    what the official harness decided for them (``fixtures/first_turn_expected.json``, see README)."""
    first = load_first_turn(cfb / "ComplexFuncBench_possible_answer.jsonl")
    tools = load_tool_schemas(cfb / "All_Tools.json")
    exact = load_exact_match(cfb / "exact_match_values.json")
    expected = json.loads((FIX / "first_turn_expected.json").read_text())
    assert len(first) == 1000 and len(tools) == 41 and set(expected) == set(first)
    assert Counter(s.rsplit("-", 1)[0] for s in first) == {"Hotels": 150, "Flights": 150, "Car-Rental": 150,
                                                           "Attraction": 150, "Cross": 400}
    aliases = {alias_of(n): n for n in tools}
    assert len(aliases) == 41 and all(_VALID.match(a) for a in aliases)
    assert {n for a, n in aliases.items() if a != n} == {"Get_Hotel_Reviews(Tips)", "Get_Hotel_Reviews(Tips)_Sort_Option"}
    assert set(tools) <= set(exact)
    validators = {n: jsonschema.Draft7Validator(t["parameters"]) for n, t in tools.items()}
    for sid, calls in first.items():
        for c in calls:
            validators[c["name"]].validate(c["arguments"])  # every gold call fits its schema
        sample = _synthetic(sid, calls, tools)
        want = expected[sid]
        bad = copy.deepcopy(calls)
        bad[want["k"]]["arguments"][want["param"]] = _perturb(bad[want["k"]]["arguments"][want["param"]])
        for variant, pred in (("verbatim", calls), ("permuted", calls[::-1]), ("perturbed", bad)):
            ep = Episode(sample, exact)
            res = await ep.turn(copy.deepcopy(pred))
            result = ep.finish("done")
            got = [_kind(result["message"]), ep.correct, None if res.ended else [_short(a) for a in res.answers]]
            assert got == want[variant], (sid, variant)
            if variant == "verbatim":
                assert {d["matcher"] for d in res.decisions} == {"rule"}, sid


def test_records_load_and_bad_records_say_what_is_wrong(cfb):
    [held] = load_samples([cfb / "sample_Car-Rental-9.json"])
    assert held.id == "Car-Rental-9" and held.domain == "Car-Rental" and [len(s) for s in held.steps] == [1, 2]
    assert len(load_samples([FIX / "samples.jsonl"])) == 8
    good = json.loads((FIX / "samples.jsonl").read_text().splitlines()[0])
    cases = {
        "'id' must be": {**good, "id": 5},
        "2 calls but 1 recorded responses": {**good, "conversations": [*good["conversations"][:6],
                                                                       {"role": "observation", "content": [{}]}]},
        "does not list": {**good, "functions": good["functions"][1:]},
        "first conversation turn": {**good, "conversations": good["conversations"][1:]},
    }
    for message, rec in cases.items():
        with pytest.raises(ValueError, match=re.escape(message)):
            parse_record(rec, "test")


async def test_a_real_mcp_client_lists_and_calls_a_samples_tools(cfb):
    samples = load_samples([FIX / "samples.jsonl"])
    cross = next(s for s in samples if s.id == "Cross-1")
    exact = load_exact_match(cfb / "exact_match_values.json")
    server = ToolServer([BenchmarkMount(StaticCatalog("complexfuncbench", {cross.id: sample_tools(cross, ReplayConfig(exact))}))])
    async with serve_in_background(create_app(server, json_response=True)) as url:
        async with connect(f"{url}/mcp/complexfuncbench/Cross-1?session=a") as client:
            listed = [t.name for t in (await client.list_tools()).tools]
            assert "Get_Hotel_Reviews-Tips-" in listed and TURN_TOOL in listed
            # an unannounced call is a turn of its own; a malformed one gets the official format error
            bad = await client.call_tool("Search_Taxi", {"pick_up_place_id": 5})
            assert "requires parameters" in json.loads(result_text(bad))["error"]
            tips = cross.steps[1][0]["arguments"]
            res = await client.call_tool("Get_Hotel_Reviews-Tips-", tips)
            assert json.loads(result_text(res)) == cross.observations[1][0]
            # announced parallel calls are decided together
            taxi = cross.steps[1][1]["arguments"]
            turn = await client.call_tool(TURN_TOOL, {"calls": [{"name": "Search_Taxi", "arguments": taxi}]})
            assert turn.structured_content["decisions"][0]["matcher"] == "rule"
            assert json.loads(result_text(await client.call_tool("Search_Taxi", taxi))) == cross.observations[1][1]
            done = (await client.call_tool(FINISH_TOOL, {"final": "ok"})).structured_content
            # both look-ups were optional, but the official end-of-episode clean-up removes the first
            # and skips the second: "Stop early", as the official code decides
            assert done["result"]["message"] == {"error_type": "stop_early", "content": "Stop early."}
            assert done["count_dict"]["correct_call_num"] == 2
            assert [d["outcome"] for t in done["turns"] for d in t["decisions"]] == ["format_error", "matched", "matched"]
        async with connect(f"{url}/mcp/complexfuncbench/Cross-1?session=b") as other:  # a fresh episode
            res = await other.call_tool("Search_Taxi", taxi)
            assert json.loads(result_text(res)) == cross.observations[1][1]


async def test_the_oracle_scores_100_on_every_sample_held(cfb, tmp_path, monkeypatch):
    files = f"{cfb / 'sample_Car-Rental-9.json'},{FIX / 'samples.jsonl'}"
    opts = RunOptions(benchmark="complexfuncbench", model="oracle", run_dir=tmp_path / "run", progress=False,
                      benchmark_options={"samples_file": files})
    _result, summary = await run_benchmark(opts)
    assert summary["tasks"] == 9 and summary["errored"] == 0
    assert summary["metrics"]["success_rate"] == 100.0 and summary["metrics"]["call_accuracy"] == 100.0
    assert set(summary["breakdowns"]["domain"]) == {"Hotels", "Flights", "Car-Rental", "Attraction", "Cross"}
    traces = [json.loads(line) for line in (tmp_path / "run" / "traces.jsonl").read_text().splitlines()]
    hotels = next(t for t in traces if t["task_id"] == "Hotels-1")
    turns = [e.get("turn") for e in hotels["events"] if e["kind"] == "tool_call"]
    assert turns == [0, 1, 2, 2]  # the parallel step went in one turn


def test_evals_data_fetch_checks_size_and_sha256_against_a_stand_in(cfb, tmp_path):
    mirror = tmp_path / "mirror"
    json_files = [f for f in SOURCES["complexfuncbench-official"] if f.dest.endswith(".json")]
    for f in [*SOURCES["complexfuncbench-extras"], *json_files]:
        target = mirror / f.mirror_url("").lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(cfb / Path(f.dest).name, target)
    full = SOURCES["complexfuncbench"][0]
    (mirror / full.mirror_url("").lstrip("/")).write_text("{}\n")  # not the pinned file
    with serve_directory(mirror) as url:
        got = fetch("complexfuncbench-extras", tmp_path / "data", url_prefix=url)
        assert sorted(p.name for p in got) == ["All_Tools.json", "ComplexFuncBench_possible_answer.jsonl"]
        assert (tmp_path / "data" / "complexfuncbench" / "All_Tools.json").read_bytes() == (cfb / "All_Tools.json").read_bytes()
        got = fetch("complexfuncbench-official", tmp_path / "data", url_prefix=url, only=[f.dest for f in json_files])
        assert sorted(p.name for p in got) == ["exact_match_values.json", "tool_info.json"]
        with pytest.raises(ChecksumMismatch):
            fetch("complexfuncbench", tmp_path / "data", url_prefix=url)
    assert not (tmp_path / "data" / "complexfuncbench" / "ComplexFuncBench.jsonl").exists()


async def test_the_rapidapi_matcher_asks_the_booking_api_stand_in(cfb, monkeypatch):
    seen: list[tuple[str, dict, str]] = []

    class Booking(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            parts = urlsplit(self.path)
            params = {k: v[0] for k, v in parse_qs(parts.query).items()}
            seen.append((parts.path, params, self.headers.get("X-RapidAPI-Key")))
            city = params.get("query", "").lower().removesuffix(" city")  # "Paris" and "Paris City" answer alike
            body = {"status": True, "timestamp": len(seen), "data": [{"dest_id": hash(city) % 1000}]}
            raw = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *a):
            pass

    monkeypatch.setenv("RAPID_API_KEY", "test-key")
    info = json.loads((cfb / "tool_info.json").read_text())["booking-com15"]
    exact = load_exact_match(cfb / "exact_match_values.json")
    sample = load_samples([FIX / "samples.jsonl"])[0]  # Hotels-1: a Search_Hotel_Destination step
    with serve_http(Booking) as url:
        # through the benchmark's own endpoint, as `evals serve --rapidapi-matcher --rapidapi-url URL` serves it
        bench = load_benchmark("complexfuncbench", {"samples_file": str(FIX / "samples.jsonl"), "rapidapi_matcher": True,
                                                    "rapidapi_url": url})
        async with contextlib.AsyncExitStack() as stack:
            server = ToolServer(bench.mounts(stack))
            async with serve_in_background(create_app(server, json_response=True)) as mcp_url, \
                    connect(f"{mcp_url}/mcp/complexfuncbench/Hotels-1?session=r") as client:
                res = await client.call_tool("Search_Hotel_Destination", {"query": "Lisbon City"})
                assert json.loads(result_text(res)) == sample.observations[0][0]
                done = (await client.call_tool(FINISH_TOOL, {"final": None})).structured_content
                assert done["turns"][0]["decisions"][0]["matcher"] == "response"
        seen.clear()
        compare = RapidAPICompare(info, base_url=url)
        ep = Episode(sample, exact, response_compare=compare)
        res = await ep.turn([{"name": "Search_Hotel_Destination", "arguments": {"query": "Lisbon City"}}])
        assert res.decisions[0]["matcher"] == "response" and res.answers[0] == sample.observations[0][0]
        ep = Episode(sample, exact, response_compare=compare)
        res = await ep.turn([{"name": "Search_Hotel_Destination", "arguments": {"query": "Porto"}}])
        assert res.decisions[0]["outcome"] == "not_matched" and res.decisions[0]["response"]["matched"] is False
    assert seen[0][0] == "/api/v1/hotels/searchDestination" and seen[0][1] == {"query": "Lisbon City"}
    assert {key for _p, _q, key in seen} == {"test-key"}
