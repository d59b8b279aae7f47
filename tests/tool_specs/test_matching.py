"""tool_specs.matching: the pair cascade and the optimal alignment of two call lists."""

from __future__ import annotations

import pytest
from scipy.optimize import linear_sum_assignment

from tool_specs import ToolSpec
from tool_specs.matching import (
    MatchDecision,
    ResponseMatcher,
    RuleMatcher,
    align_calls,
    argument_cost,
    combined_cost,
    decide,
    embedding_cost,
    name_cost,
    text_cost,
)

SCHEMAS = {
    "search_hotels": {"type": "object", "properties": {"city": {"type": "string"}, "adults": {"type": "integer"}}},
    "get_rooms": {"type": "object", "properties": {"hotel_id": {"type": "string"}}},
    "set_alarm": {"type": "object", "properties": {"time": {"type": "string"}, "repeat": {"type": "boolean", "default": False}}},
}


def call(name: str, **arguments: object) -> dict:
    return {"name": name, "arguments": arguments}


GOLD = [
    call("search_hotels", city="Paris", adults=2),
    call("get_rooms", hotel_id="h1"),
    call("get_rooms", hotel_id="h2"),
]


def pairs(alignment) -> list[tuple[int, int]]:
    return [(p.pred_index, p.gold_index) for p in alignment.pairs]


async def test_permuted_calls_are_paired_with_their_gold_call():
    pred = [GOLD[2], GOLD[0], GOLD[1]]
    alignment = await align_calls(pred, GOLD, matchers=[RuleMatcher(SCHEMAS.get)])
    assert pairs(alignment) == [(1, 0), (2, 1), (0, 2)]
    assert all(p.matched and p.decision.matcher == "rule" for p in alignment.pairs)
    assert alignment.unmatched_pred == [] and alignment.unmatched_gold == []


async def test_missing_and_extra_calls_are_reported_unmatched():
    pred = [call("get_rooms", hotel_id="h2"), call("book_room", room="r1"), call("search_hotels", city="Paris", adults="2")]
    alignment = await align_calls(pred, GOLD, matchers=[RuleMatcher(SCHEMAS.get)])
    # the extra call (a tool no gold call uses) is never paired; get_rooms h1 is missing
    assert pairs(alignment) == [(2, 0), (0, 2)]
    assert alignment.unmatched_pred == [1] and alignment.unmatched_gold == [1]
    # "2" for an integer parameter is the same value after type normalisation
    assert alignment.pairs[0].decision.matched and alignment.pairs[0].decision.matcher == "rule"


async def test_the_closest_arguments_win_and_a_wrong_value_is_paired_but_not_matched():
    pred = [call("get_rooms", hotel_id="h9"), call("get_rooms", hotel_id="h1")]
    alignment = await align_calls(pred, GOLD, matchers=[RuleMatcher(SCHEMAS.get)])
    assert pairs(alignment) == [(1, 1), (0, 2)]
    assert [p.matched for p in alignment.pairs] == [True, False]
    assert "arguments differ" in alignment.pairs[1].decision.reason
    assert alignment.to_dict()["pairs"][1]["decision"]["matcher"] is None


async def test_ties_keep_the_order_of_the_calls():
    gold = [call("ping"), call("ping"), call("ping")]
    alignment = await align_calls([call("ping"), call("ping"), call("ping")], gold)
    assert pairs(alignment) == [(0, 0), (1, 1), (2, 2)]
    alignment = await align_calls([call("ping"), call("ping")], gold)
    assert pairs(alignment) == [(0, 0), (1, 1)] and alignment.unmatched_gold == [2]


async def test_empty_lists():
    assert pairs(await align_calls([], GOLD)) == [] and (await align_calls([], GOLD)).unmatched_gold == [0, 1, 2]
    assert (await align_calls(GOLD, [])).unmatched_pred == [0, 1, 2]


async def test_one_call_against_one_gold_call_is_paired_as_scipy_pairs_it():
    """A 1 x 1 alignment is answered without scipy; it pairs what scipy pairs and drops a pair over max_cost."""
    for pred, gold in [(GOLD[0], GOLD[0]), (call("get_rooms", hotel_id="h9"), GOLD[1]), (call("set_alarm", time="7"), GOLD[1])]:
        alignment = await align_calls([pred], [gold])
        cost = float(argument_cost()(pred, gold))
        rows, cols = linear_sum_assignment([[cost]])
        expected = [(int(rows[0]), int(cols[0]))] if cost <= 0.999 else []
        assert pairs(alignment) == expected
        assert alignment.unmatched_pred == ([] if expected else [0]) and alignment.unmatched_gold == alignment.unmatched_pred
    assert pairs(await align_calls([call("set_alarm", time="7")], [GOLD[1]])) == []  # different tools: never paired


async def test_pluggable_costs():
    pred = [call("get_room", hotel_id="h1")]  # a misspelt tool name
    # by arguments (the default) a different tool is never paired; by text it is
    assert pairs(await align_calls(pred, GOLD)) == []
    assert pairs(await align_calls(pred, GOLD, cost=text_cost)) == [(0, 1)]
    both = combined_cost((name_cost, 0.5), (text_cost, 0.5))
    assert 0.5 < both(pred[0], GOLD[1]) < 1.0
    assert pairs(await align_calls(pred, GOLD, cost=both)) == [(0, 1)]

    def embed(text: str) -> list[float]:  # a toy embedding: letter counts
        return [text.count(c) for c in "abcdefghijklmnopqrstuvwxyz0123456789"]

    assert pairs(await align_calls(pred, GOLD, cost=embedding_cost(embed))) == [(0, 1)]
    assert argument_cost()(GOLD[1], GOLD[2]) == pytest.approx(0.99)
    with pytest.raises(ValueError):
        combined_cost()


async def test_cascade_records_which_matcher_decided():
    spec = ToolSpec(name="set_alarm", description="Set an alarm.", input_schema=SCHEMAS["set_alarm"])
    matchers = [RuleMatcher(SCHEMAS.get), ResponseMatcher(lambda name: spec if name == "set_alarm" else None)]
    gold = call("set_alarm", time="07:00")
    # the explicit default changes the arguments but not the response
    decision = await decide(call("set_alarm", time="07:00", repeat=False), gold, matchers)
    assert (decision.matched, decision.matcher) == (True, "response")
    assert (await decide(call("set_alarm", time="07:00"), gold, matchers)).matcher == "rule"
    miss = await decide(call("set_alarm", time="08:00"), gold, matchers)
    assert (miss.matched, miss.matcher) == (False, None) and "rule, response" in miss.reason

    class Always:
        name = "llm"

        async def __call__(self, pred, gold):
            return MatchDecision(True, "llm", "judge said so", {"judge": {"answer": "EQUIVALENT"}})

    decision = await decide(call("set_alarm", time="7am"), gold, [*matchers, Always()])
    assert decision.matcher == "llm" and decision.to_dict()["judge"] == {"answer": "EQUIVALENT"}
