"""The official decision procedure of ComplexFuncBench, one episode at a time (our own code).

Read from the official harness (THUDM/ComplexFuncBench @ c37b284: ``runner/base_runner.py``,
``runner/gpt_runner.py``, ``utils/compare_method.py``) and reproduced with its quirks, because
they change the numbers:

* The pending gold list starts with the first step; a step made only of *free* calls (location
  look-ups, or any ``Search_Hotels`` with ``search_type == "hotel"``) is optional: the next step's
  gold calls are added to it at once. As soon as one call of a turn matches, the next step's gold
  calls are added too (the pending list may then hold two steps).
* A turn's predicted calls are paired with the pending gold calls: first equal calls (Python
  equality, so ``1 == 1.0``), and any call equal to a free call anywhere in the sample is matched
  to itself with that call's recorded response; the rest by an optimal assignment (the official
  code uses bge-large-en-v1.5 embeddings, which cannot run here; we use :func:`align_calls` with the
  JSON-text similarity, so only which non-equal call is paired with which can differ).
* Each pair: the official format check (required and known parameters; string, number, boolean and
  array types), then the rule match (same keys, equal values; ``categories_filter`` as a set of
  comma-separated items), then the exact-value check of the official list, then the response-based
  match (the live Booking API; off unless configured), then the LLM judge with the official prompt.
* A matched call gets the gold call's recorded response; a call whose format is wrong gets the
  format error; any other call the official "problem with your api call" text. A turn with no
  matched call and no format error ends the episode; so does a turn after every gold call was
  made (``func_hallucination``) or an undecodable call (``decode_error``).
* At the final answer the episode succeeds when every step was reached and nothing is pending
  (location look-ups and hotel searches still pending are dropped first, by a loop that removes
  from the list it walks, so it skips the item after each one removed), and the last turn with
  calls left no error.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tool_specs.matching import align_calls, text_cost

from .data import Sample

__all__ = ["FREE_FUNCTIONS", "UNEXPECTED_CALL", "Episode", "LLMCompare", "ResponseCompare", "TurnResult",
           "format_check", "rule_based", "value_checker"]

FREE_FUNCTIONS = ("Location_to_Lat_Long", "Search_Hotel_Destination", "Search_Attraction_Location",
                  "Search_Car_Location", "Search_Flight_Location", "Taxi_Search_Location")
_DROPPED_AT_END = FREE_FUNCTIONS[1:]  # the official end-of-episode clean-up leaves Location_to_Lat_Long
UNEXPECTED_CALL = {"api_status": True, "content": "There is a problem with your api call, please double-check for possible problems."}

# (pred, gold) -> (matched, details); details are stored in the trace.
ResponseCompare = Callable[[dict[str, Any], dict[str, Any]], Awaitable[tuple[bool, dict[str, Any]]]]
# (functions, history, pred, gold) -> (matched or None when undecided, details)
LLMCompare = Callable[[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any], dict[str, Any]],
                      Awaitable[tuple[bool | None, dict[str, Any]]]]


def _is_hotel_search(call: Mapping[str, Any]) -> bool:
    return call.get("name") == "Search_Hotels" and (call.get("arguments") or {}).get("search_type") == "hotel"


def _only_free(calls: Sequence[Mapping[str, Any]]) -> bool:
    if any(_is_hotel_search(c) for c in calls):
        return True
    return {c["name"] for c in calls} <= set(FREE_FUNCTIONS)


def _key(call: Mapping[str, Any]) -> str:
    return json.dumps(call)  # the official key: default separators, ASCII escapes, the dict's own order


def _filter_items(value: Any) -> set[str] | None:
    return {s.strip() for s in value.split(",")} if isinstance(value, str) else None


def format_check(call: Mapping[str, Any], functions: Sequence[Mapping[str, Any]]) -> dict[str, str] | None:
    """The official format check: ``None`` when it passes, else ``{"error": text}`` (the official text)."""
    by_name = {f["name"]: f for f in functions}
    name, args = call["name"], call["arguments"]
    if name not in by_name:
        return {"error": f"Function {name} is not defined in the function list."}
    fn = by_name[name]
    params = fn["parameters"]
    required = list(params.get("required") or [])
    if not set(required) <= set(args):
        missing = set(required) - set(args)
        return {"error": f"Function {fn['name']} requires parameters {required}, but {list(args)} do not provide {missing}"}
    props = params.get("properties") or {}
    if not set(args) <= set(props):
        extra = set(args) - set(props)
        return {"error": f"Function {fn['name']} does not have parameters {extra}"}
    checks: dict[str, tuple[type | tuple[type, ...], str]] = {
        "string": (str, "a string"), "number": ((int, float), "a number"), "boolean": (bool, "a boolean"),
        "array": (list, "an array")}
    for pname, value in args.items():
        kind = (props[pname] or {}).get("type")
        if kind in checks:
            types, what = checks[kind]
            if not isinstance(value, types):
                return {"error": f"Parameter {pname} of function {fn['name']} should be {what}, but {type(value)} is provided."}
    return None


def rule_based(pred: Mapping[str, Any], gold: Mapping[str, Any]) -> bool:
    """Same name, the same parameter names, equal values (``categories_filter``: the same set of items)."""
    if pred["name"] != gold["name"] or sorted(pred["arguments"]) != sorted(gold["arguments"]):
        return False
    for k, v in pred["arguments"].items():
        if k == "categories_filter":
            a, b = _filter_items(v), _filter_items(gold["arguments"][k])
            if a is not None and a == b:
                continue
        if v != gold["arguments"][k]:
            return False
    return True


def value_checker(pred: Mapping[str, Any], gold: Mapping[str, Any], exact: Mapping[str, Sequence[str]]) -> dict[str, str] | None:
    """The official exact-value check: ``None`` when it passes, else the official error object."""
    if pred["name"] != gold["name"]:
        return {"error_type": "func_error", "content": "Do not call the correct function."}
    listed = exact.get(pred["name"], [])
    for k, v in gold["arguments"].items():
        if k not in listed:
            continue
        if k not in pred["arguments"]:
            return {"error_type": "param_missing", "content": f"Missing parameter {k} in prediction."}
        if k != "categories_filter" and pred["arguments"][k] != v:
            return {"error_type": "value_error", "content": f"Parameter {k} value is not correct in prediction."}
        if k == "categories_filter" and _filter_items(v) != _filter_items(pred["arguments"][k]):
            return {"error_type": "value_error", "content": f"Parameter {k} value is not correct in prediction."}
    return None


def _error_message(pred: Mapping[str, Any], gold: Mapping[str, Any]) -> dict[str, str] | None:
    for k, v in gold["arguments"].items():
        if k not in pred["arguments"]:
            return {"error_type": "param_missing", "content": f"Missing parameter {k} in prediction."}
        if v != pred["arguments"][k]:
            return {"error_type": "value_error", "content": f"Parameter {k} value do not equal to golden."}
    for k in pred["arguments"]:
        if k not in gold["arguments"]:
            return {"error_type": "param_hallucination", "content": f"Parameter {k} is hallucinated."}
    return None


def _sorted_arguments(calls: list[dict[str, Any]]) -> None:
    for c in calls:  # in place, as the official code does (the pending gold list is changed too)
        c["arguments"] = {k: c["arguments"][k] for k in sorted(c["arguments"])}


@dataclass
class TurnResult:
    """What one turn of calls got: an answer per call (in order), the decisions, and whether it ended the episode."""

    answers: list[Any]
    decisions: list[dict[str, Any]]
    ended: bool = False
    message: Any = None  # the official result message when the episode ended

    def to_dict(self) -> dict[str, Any]:
        return {"answers": self.answers, "decisions": self.decisions, "ended": self.ended, "message": self.message}


@dataclass
class Episode:
    """One sample's official evaluation state; :meth:`turn` decides a turn's calls, :meth:`finish` ends it."""

    sample: Sample
    exact: Mapping[str, Sequence[str]]
    response_compare: ResponseCompare | None = None
    llm_compare: LLMCompare | None = None
    turn_id: int = 0
    correct: int = 0
    error_message: Any = None
    result: dict[str, Any] | None = None  # set once the episode has ended
    history: list[dict[str, Any]] = field(default_factory=list)
    turns: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        s = self.sample
        self.chain = [copy.deepcopy(step) for step in s.steps]
        self.obs_chain = [copy.deepcopy(o) for o in s.observations]
        self.free: dict[str, dict[str, Any]] = {}
        for step, obs in zip(s.steps, s.observations, strict=True):
            for call, resp in zip(step, obs, strict=True):
                if call["name"] in FREE_FUNCTIONS and _key(call) not in self.free:
                    self.free[_key(call)] = {"called": False, "obs": resp}
        self.golden = copy.deepcopy(self.chain[0])
        self.golden_obs = copy.deepcopy(self.obs_chain[0])
        self.history = [{"role": "user", "content": s.query}]
        if _only_free(self.golden):
            self._advance()

    # ---- the official bookkeeping ----
    def _advance(self) -> None:
        self.turn_id += 1
        if self.turn_id < len(self.chain):
            self.golden.extend(copy.deepcopy(self.chain[self.turn_id]))
            self.golden_obs.extend(copy.deepcopy(self.obs_chain[self.turn_id]))

    def _success_turn(self) -> int:
        ids = [i for i, step in enumerate(self.chain) for g in self.golden if g in step]
        return max(min(ids), 0) if ids else len(self.chain)

    def _end(self, error: Any) -> dict[str, Any]:
        if error:
            self.result = {"message": error, "success_turn_num": self._success_turn(), "correct_call_num": self.correct}
            return self.result
        for call in self.golden:  # removes from the list it walks: the item after a removed one is skipped
            if _is_hotel_search(call):
                self.golden.remove(call)
            if call["name"] in _DROPPED_AT_END:
                self.golden.remove(call)
        if self.turn_id < len(self.chain) or self.golden:
            return self._end({"error_type": "stop_early", "content": "Stop early."})
        self.result = {"message": "Success.", "success_turn_num": len(self.chain), "correct_call_num": self.correct}
        return self.result

    @property
    def ended(self) -> bool:
        return self.result is not None

    def counts(self) -> dict[str, Any]:
        """The official ``count_dict`` of the episode so far."""
        r = self.result or {}
        return {"success_turn_num": r.get("success_turn_num", 0), "total_turn_num": len(self.chain),
                "correct_call_num": self.correct, "total_call_num": sum(len(s) for s in self.chain),
                "real_turn_num": sum(1 for t in self.history if t["role"] == "assistant" and "function_call" in t)}

    # ---- one turn ----
    async def turn(self, calls: Sequence[Mapping[str, Any] | None]) -> TurnResult:
        """Decide one model turn. ``calls``: official names and arguments; ``None`` for a call that could
        not be decoded (unparsable arguments, or a name that is not one of the sample's tools)."""
        if self.ended:
            raise RuntimeError("the episode has ended")
        n = len(calls)
        if not self.golden:
            end = self._end({"error_type": "func_hallucination",
                             "content": "`self.golden_fcs == []`. Expected to stop. But Model continue to output function call."})
            return self._record(TurnResult([UNEXPECTED_CALL] * n, [{"pred": i, "outcome": "not decided"} for i in range(n)],
                                           True, end["message"]), calls)
        if any(c is None for c in calls):
            bad = next(i for i, c in enumerate(calls) if c is None)
            end = self._end({"error_type": "decode_error", "content": f"call {bad} is not Valid."})
            return self._record(TurnResult([UNEXPECTED_CALL] * n, [{"pred": i, "outcome": "not decided"} for i in range(n)],
                                           True, end["message"]), calls)
        preds = [{"name": c["name"], "arguments": dict(c["arguments"])} for c in calls if c is not None]
        self.history.append({"role": "assistant", "function_call": copy.deepcopy(preds)})
        history = self.history[:-1]
        errors, success, matched_gold, format_errors, decisions = await self._compare(history, copy.deepcopy(preds))
        self.error_message = errors
        if not success and not format_errors:
            end = self._end(errors)
            return self._record(TurnResult([UNEXPECTED_CALL] * n, decisions, True, end["message"]), calls)
        self.correct += len(success)
        answers = [success[i] if i in success else format_errors[i] if i in format_errors else UNEXPECTED_CALL for i in range(n)]
        self._process(matched_gold)
        self.history.append({"role": "observation", "content": copy.deepcopy(answers)})
        return self._record(TurnResult(answers, decisions), calls)

    def _record(self, result: TurnResult, calls: Sequence[Mapping[str, Any] | None]) -> TurnResult:
        # the answers themselves are in the conversation and in the trace's tool calls: not stored again
        self.turns.append({"calls": [None if c is None else {"name": c["name"], "arguments": c["arguments"]} for c in calls],
                           "decisions": result.decisions, "ended": result.ended, "message": result.message,
                           "pending_after": copy.deepcopy(self.golden)})
        return result

    def finish(self, final_text: str | None) -> dict[str, Any]:
        """The model answered without calls (``final_text``), or stopped otherwise (``None``)."""
        if self.result is not None:
            return self.result
        if final_text is not None:
            self.history.append({"role": "assistant", "content": final_text})
            return self._end(self.error_message)
        return self._end({"error_type": "no_final_answer", "content": "The episode stopped without a final answer."})

    def _process(self, matched: list[dict[str, Any]]) -> None:
        for m in matched:
            if m in self.golden:
                self.golden_obs.pop(self.golden.index(m))
                self.golden.remove(m)
        if matched:
            self._advance()
        for k, v in self.free.items():
            call = json.loads(k)
            if v["called"] and call in self.golden:
                self.golden_obs.pop(self.golden.index(call))
                self.golden.remove(call)
        if _only_free(self.golden):
            self._advance()

    async def _compare(
        self, history: list[dict[str, Any]], preds: list[dict[str, Any]]
    ) -> tuple[list[Any], dict[int, Any], list[dict[str, Any]], dict[int, Any], list[dict[str, Any]]]:
        golden, golden_obs = self.golden, self.golden_obs
        drop = [golden.index(g) for g in golden if _key(g) in self.free and self.free[_key(g)]["called"]]
        for i in sorted(drop, reverse=True):
            golden.pop(i)
            golden_obs.pop(i)
        if not golden:  # the official code raises here (NotImplementedError); we end the episode
            return [{"error_type": "official_error", "content": "no pending gold call after removing called free calls"}], {}, [], {}, []
        _sorted_arguments(preds)
        _sorted_arguments(golden)
        pairs: list[tuple[int, dict[str, Any], dict[str, Any], Any, str]] = []  # pred index, pred, gold, obs, how
        taken: set[int] = set()
        rest: list[int] = []
        for p, call in enumerate(preds):
            found = False
            for g, gold in enumerate(golden):
                if g in taken:
                    continue
                if call == gold:
                    pairs.append((p, call, gold, golden_obs[g], "equal"))
                    taken.add(g)
                    found = True
                    break
                if _key(call) in self.free:
                    pairs.append((p, call, call, self.free[_key(call)]["obs"], "free call"))
                    self.free[_key(call)]["called"] = True
                    found = True
                    break
            if not found:
                rest.append(p)
        rest_gold = [g for g in range(len(golden)) if g not in taken]
        if rest and rest_gold:
            alignment = await align_calls([preds[p] for p in rest], [golden[g] for g in rest_gold], cost=text_cost, max_cost=1.0)
            for pair in sorted(alignment.pairs, key=lambda a: a.pred_index):
                g = rest_gold[pair.gold_index]
                pairs.append((rest[pair.pred_index], preds[rest[pair.pred_index]], golden[g], golden_obs[g], "assignment"))
        errors: list[Any] = []
        success: dict[int, Any] = {}
        matched: list[dict[str, Any]] = []
        format_errors: dict[int, Any] = {}
        decisions: list[dict[str, Any]] = []
        paired = {p for p, *_ in pairs}
        for p, pred, gold, obs, how in pairs:
            d: dict[str, Any] = {"pred": p, "gold": _official(gold), "paired_by": how}
            bad_format = format_check(pred, self.sample.functions)
            if bad_format is not None:
                format_errors[p] = bad_format
                d.update(outcome="format_error", error=bad_format)
            else:
                ok, matcher, message, extra = await self._single(history, pred, gold)
                d.update(extra)
                if ok:
                    success[p] = obs
                    matched.append(gold)
                    d.update(outcome="matched", matcher=matcher)
                else:
                    err = message if message else _error_message(pred, gold)
                    errors.append(err)
                    d.update(outcome="not_matched", error=err)
            decisions.append(d)
        for p in range(len(preds)):
            if p not in paired:
                decisions.append({"pred": p, "gold": None, "paired_by": None, "outcome": "unpaired"})
        decisions.sort(key=lambda d: d["pred"])
        return errors, success, matched, format_errors, decisions

    async def _single(
        self, history: list[dict[str, Any]], pred: dict[str, Any], gold: dict[str, Any]
    ) -> tuple[bool, str | None, Any, dict[str, Any]]:
        if rule_based(pred, gold):
            return True, "rule", None, {}
        err = value_checker(pred, gold, self.exact)
        if err is not None:
            return False, None, err, {"exact_value_check": err}
        extra: dict[str, Any] = {}
        if self.response_compare is not None:
            ok, details = await self.response_compare(pred, gold)
            extra["response"] = details
            if ok:
                return True, "response", None, extra
        else:
            extra["response"] = {"skipped": "the live Booking API matcher is off (--rapidapi-matcher)"}
        if self.llm_compare is not None:
            verdict, details = await self.llm_compare(self.sample.functions, history, pred, gold)
            extra["llm"] = details
            if verdict:
                return True, "llm", None, extra
        else:
            extra["llm"] = {"skipped": "no call judge (--call-judge)"}
        return False, None, None, extra


def _official(call: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": call["name"], "arguments": dict(call["arguments"])}
