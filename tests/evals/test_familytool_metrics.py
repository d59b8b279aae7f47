"""FamilyTool's project reading (``--scoring project``: the matcher cascade, all links extracted) and
the matchers, on hand-built predictions whose values are computed by hand. The official metrics are
checked against the official code's numbers in ``test_familytool_official.py``."""

from __future__ import annotations

import asyncio

import pytest
from fake_providers import FakeProviderServer, openai_chat

from client.adapters.openai_adapter import OpenAIAdapter
from client.cache import ResponseCache
from evals.benchmarks.familytool.data import FamilyToolCatalog
from evals.benchmarks.familytool.metrics import METRICS, gold_paths, kg_scores, parse_kg_searches
from evals.benchmarks.familytool.plugin import oracle_kg_search
from evals.core.judge import LLMJudge, parse_judgement
from evals.core.metrics import summary_blocks
from evals.core.registry import load_benchmark
from evals.core.scoring import ScoreContext
from tool_specs.argument_matching import normalize_arguments, param_matches
from tool_specs.matching import response_match, rule_match

A = "KGMTUbench_0"  # Bob -> mother Alice -> prefer_dinnertime dinnertime_0002; cancel_alarm(label=dinnertime_0002)
B = "KGMTUbench_203"  # Alice -> son Bob -> prefer_travel_city travel_city_0000; BookHouse(where_to, check_in, check_out)


@pytest.fixture(scope="module")
def cat(data_dir):
    return FamilyToolCatalog("familytool-b")


def _schemas(cat):
    return {s.name: s.input_schema for s in cat.playground_tools()}


def _gold_kg(cat, tid):
    return {"format_error": False, "paths": [{"hallucinated": False}], "extracted": [list(t) for t in cat.task(tid).gold_kg]}


def _trace(prediction, kg=None, **extra):
    return {"status": "completed", "outcome": {"prediction": prediction, **({"kg": kg} if kg else {}), **extra}}


def _gold_call(cat, tid):
    return cat.task(tid).gold_calls[0].to_dict()


async def _ascore(cat, traces, with_kg=True):
    """The summary's metric blocks, scored by the benchmark's scorer (``agent`` extracts a KG, ``golden-kg`` does not)."""
    bench = load_benchmark(cat.name, {"scoring": "project"})
    ctx = ScoreContext({"strategy": "agent" if with_kg else "golden-kg"}, None, {})
    blocks = summary_blocks(METRICS, [await bench.score(t, traces[t], ctx) for t in traces])
    return {**blocks, "metrics": blocks["project_metrics"]}


def _score(cat, traces, with_kg=True):
    return asyncio.run(_ascore(cat, traces, with_kg))


def test_the_tasks_are_what_the_hand_computations_assume(cat):
    a, b = cat.task(A), cat.task(B)
    assert [tuple(t) for t in a.gold_kg] == [("Bob", "mother", "Alice"), ("Alice", "prefer_dinnertime", "dinnertime_0002")]
    assert a.gold_calls[0].to_dict() == {"name": "cancel_alarm", "arguments": {"label": "dinnertime_0002"}}
    assert b.gold_calls[0].name == "BookHouse" and len(b.gold_calls[0].arguments) == 3


def test_gold_extraction_and_gold_call_score_100_everywhere(cat):
    for tid in cat.task_ids():
        s = kg_scores(cat.task(tid), _gold_kg(cat, tid))
        assert s == {"kg_em": 1.0, "kg_f1": 1.0, "kg_no_hallucination": 1.0, "kg_coverage": 1.0, "kg_format_error": 0.0}, tid
    e = FamilyToolCatalog("familytool-e")
    traces = {t: _trace(_gold_call(e, t), _gold_kg(e, t)) for t in e.task_ids()}
    m = _score(e, traces)["metrics"]
    assert m["tool_em"] == m["tool_acc"] == m["value_acc"] == m["kg_em"] == m["kg_f1"] == 100.0
    assert m["kg_no_hallucination"] == m["kg_coverage"] == 100.0 and m["kg_format_error"] == 0.0


def test_wrong_tool_moves_tool_em_tool_acc_and_its_values_only(cat):
    out = _score(cat, {A: _trace({"name": "AddAlarm", "arguments": {"label": "dinnertime_0002"}}, _gold_kg(cat, A))})
    m = out["metrics"]
    assert (m["tool_em"], m["tool_acc"], m["value_acc"]) == (0.0, 0.0, 0.0)
    assert m["kg_em"] == m["kg_f1"] == m["kg_coverage"] == 100.0  # the KG part is untouched


def test_missing_parameter_and_wrong_value_cost_one_third_of_the_values(cat):
    gold = _gold_call(cat, B)
    missing = {"name": gold["name"], "arguments": {k: v for k, v in gold["arguments"].items() if k != "check_out_date"}}
    wrong = {"name": gold["name"], "arguments": {**gold["arguments"], "where_to": "travel_city_0001"}}
    for pred in (missing, wrong):
        m = _score(cat, {B: _trace(pred, _gold_kg(cat, B))})["metrics"]
        assert (m["tool_em"], m["tool_acc"], m["value_acc"]) == (0.0, 100.0, 66.67)
    # value accuracy is a micro-average over all gold parameters: A's 1 right + B's 2 of 3 = 3 / 4
    both = _score(cat, {A: _trace(_gold_call(cat, A)), B: _trace(missing)}, with_kg=False)["metrics"]
    assert both == {"tool_em": 50.0, "tool_acc": 100.0, "value_acc": 75.0}  # one name per quantity


def test_hallucinated_relation_moves_no_hallucination_only(cat):
    kg = {**_gold_kg(cat, A), "paths": [{"hallucinated": False}, {"hallucinated": True}]}
    m = _score(cat, {A: _trace(_gold_call(cat, A), kg)})["metrics"]
    assert m["kg_no_hallucination"] == 0.0
    assert m["kg_em"] == m["kg_f1"] == m["kg_coverage"] == m["tool_em"] == 100.0 and m["kg_format_error"] == 0.0


def test_unparsable_kg_search_is_a_format_error_and_scores_zero_on_extraction(cat):
    assert parse_kg_searches("KG.search(Bob, mother)") == []
    assert parse_kg_searches("I would search for Bob's mother.") == []
    kg = {"generation": "KG.search(Bob, mother)", "format_error": True, "paths": [], "extracted": []}
    m = _score(cat, {A: _trace(_gold_call(cat, A), kg)})["metrics"]
    assert (m["kg_em"], m["kg_f1"], m["kg_no_hallucination"], m["kg_coverage"], m["kg_format_error"]) == (0, 0, 0, 0, 100)
    assert m["tool_em"] == 100.0


def test_path_that_misses_the_gold_entity_loses_coverage_and_part_of_f1(cat):
    kg = {"format_error": False, "paths": [{"hallucinated": False}], "extracted": [["Bob", "mother", "Alice"]]}
    m = _score(cat, {A: _trace(_gold_call(cat, A), kg)})["metrics"]
    # precision 1/1, recall 1/2 -> F1 2/3
    assert (m["kg_em"], m["kg_f1"], m["kg_coverage"], m["kg_no_hallucination"]) == (0.0, 66.67, 0.0, 100.0)


def test_a_task_that_did_not_complete_counts_as_wrong_everywhere(cat):
    m = _score(cat, {A: {"status": "errored", "outcome": None}, B: _trace(_gold_call(cat, B), _gold_kg(cat, B))})["metrics"]
    assert m["tool_em"] == 50.0 and m["value_acc"] == 75.0 and m["kg_em"] == 50.0 and m["kg_format_error"] == 50.0


def test_parse_kg_search_accepts_the_spellings_models_use():
    text = (
        "Sure:\nKG.search(Start=\"Bob\", Path=['mother', \"prefer_dinnertime\"])\n"
        "kg.search(start=Mr. Smith, path=[<relationship>prefer_dentist])"
    )
    got = [(s.start, s.path) for s in parse_kg_searches(text)]
    assert got == [("Bob", ("mother", "prefer_dinnertime")), ("Mr. Smith", ("prefer_dentist",))]


def test_oracle_kg_search_writes_one_search_per_gold_path(data_dir):
    e = FamilyToolCatalog("familytool-e")
    for task in e.tasks.values():
        searches = parse_kg_searches(oracle_kg_search(task))
        covered = {t for p in gold_paths(task.gold_kg) for t in p}
        assert covered == set(task.gold_kg) and len(searches) == len(gold_paths(task.gold_kg)), task.id


# ---- matchers -----------------------------------------------------------------------------------
def test_rule_match_normalises_json_types_by_schema_only():
    schema = {"type": "object", "properties": {"n": {"type": "integer"}, "ok": {"type": "boolean"}, "s": {"type": "string"},
                                               "x": {}}}
    assert rule_match("t", {"n": "5", "ok": "true", "s": 7}, "t", {"n": 5, "ok": True, "s": "7"}, schema)
    assert not rule_match("t", {"x": "5"}, "t", {"x": 5}, schema)  # no type in the schema: nothing to normalise by
    assert not rule_match("t", {"n": 5, "s": "a"}, "t", {"n": 5}, schema)  # an extra parameter
    assert not rule_match("u", {"n": 5}, "t", {"n": 5}, schema)
    assert normalize_arguments({"n": "x5"}, schema) == {"n": "x5"}
    assert param_matches({"n": "5"}, {"n": 5, "s": "a"}, schema) == {"n": True, "s": False}


async def test_response_match_accepts_an_explicit_default_that_rule_rejects(cat):
    spec = next(s for s in cat.playground_tools() if s.name == "LookupSong")
    gold = {"artist": "artist_0001"}
    pred = {"artist": "artist_0001", "genre": "dontcare"}  # the schema's default, said out loud
    assert not rule_match("LookupSong", pred, "LookupSong", gold, spec.input_schema)
    assert await response_match(spec, pred, gold)
    assert not await response_match(spec, {"artist": "artist_0002"}, gold)
    # scoring asks the response matcher when the rule matcher rejects a call (KGMTUbench_215's gold: {"album": "Alice"})
    m = await _ascore(cat, {"KGMTUbench_215": _trace({"name": "LookupSong", "arguments": {"album": "Alice", "genre": "dontcare"}})},
                      with_kg=False)
    assert m["metrics"]["tool_em"] == 100.0 and m["project_strict_metrics"]["tool_em"] == 0.0 and m["matchers"]["response"] == 1


def test_parse_judgement():
    assert parse_judgement("They mean the same.\nEQUIVALENT") is True
    assert parse_judgement("EQUIVALENT?\nDIFFERENT") is False
    assert parse_judgement("NOT EQUIVALENT") is False
    assert parse_judgement("no idea") is None


async def test_llm_judge_asks_once_and_caches_its_decision(tmp_path):
    with FakeProviderServer() as server:
        server.openai.script(openai_chat("Both book the same house.\nEQUIVALENT", usage=(120, 9)))
        adapter = OpenAIAdapter("judge-model", base_url=server.openai_base_url, api_key="k")
        cache = ResponseCache(tmp_path / "judge.sqlite")
        judge = LLMJudge(adapter, cache)
        args = ("book it", {"name": "BookHouse"}, {"name": "BookHouse", "arguments": {"where_to": "Paris"}},
                {"name": "BookHouse", "arguments": {"where_to": "paris"}})
        first = await judge.decide(*args)
        second = await judge.decide(*args)
        await adapter.aclose()
        cache.close()
    assert first.equivalent and second.equivalent and second.cached and not first.cached
    assert first.input_tokens == 120 and "Reference call" in first.prompt
    assert len(server.openai.requests) == 1  # the second decision came from the cache
