"""Our AST checker beside BFCL's own (bfcl_eval's ``ast_checker``, run in .ci/bfcl-venv by
``bfcl_official_driver.py``): every entry of every served category, each with crafted responses
(right; wrong function; wrong type; a required or an optional parameter left out; an extra
parameter; the calls in reverse order; no call; arguments that are not JSON; a call in an
irrelevance entry; for Java and JavaScript a value sent as JSON instead of text, text in another
form, a number's suffix dropped, quotes changed; for live_relevance a call, an empty call, two calls),
must get the same verdict and error type, and each category the same accuracy. And every entry's
functions are served as the very tools BFCL's FC handler sends."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

from official_checker import run_official

from evals.benchmarks.bfcl.checker import check_calls
from evals.benchmarks.bfcl.data import BfclEntry, load_entries
from evals.benchmarks.bfcl.files import SINGLE_TURN, language, served_name
from evals.benchmarks.bfcl.single_turn import gold_calls
from evals.benchmarks.bfcl.tools import to_tool

_WRONG_TYPE: dict[type, Any] = {int: "7", float: "7.5", str: 7, bool: "true", list: "x", dict: "x"}


def _variants(entry: BfclEntry) -> Iterator[tuple[str, Any]]:
    """(variant, response): a response is a list of (name, arguments JSON text) or a text reply."""
    gold = gold_calls(entry)
    docs = {served_name(d["name"]): d for d in entry.functions}

    def calls(cs: list[dict[str, Any]]) -> list[list[str]]:
        return [[c["name"], json.dumps(c["arguments"])] for c in cs]

    yield "no_call", "I cannot help with that."
    # a few live_irrelevance entries offer no function: a call then names one that is not there
    first = entry.functions[0] if entry.functions else {"name": "not.offered", "parameters": {}}
    yield "not_json", [[served_name(first["name"]), "{not json"]]
    if entry.ground_truth is None:  # (ir)relevance: a call to the first function, with whatever arguments
        required = first["parameters"].get("required") or []
        yield "a_call", calls([{"name": served_name(first["name"]), "arguments": dict.fromkeys(required, 1)}])
        yield "empty_arguments", [[served_name(first["name"]), "{}"]]
        yield "arguments_a_list", [[served_name(first["name"]), "[1]"]]
        yield "two_calls", [[served_name(first["name"]), "{}"], [served_name((entry.functions or (first,))[-1]["name"]), "{}"]]
        if gold:
            yield "oracle", calls(gold)
        return
    yield "right", calls(gold)
    yield "reversed", calls(gold[::-1])
    if len(gold) > 1:  # an empty call list is no response a model over MCP can give: it replies with text
        yield "one_call_less", calls(gold[:-1])
    yield "one_call_more", calls([*gold, gold[0]])
    other = [n for n in docs if n != gold[0]["name"]]
    yield "wrong_function", calls([{**gold[0], "name": other[0] if other else gold[0]["name"] + "_x"}, *gold[1:]])
    extra = copy.deepcopy(gold)
    extra[0]["arguments"]["an_extra_parameter"] = 1
    yield "extra_parameter", calls(extra)
    required = set(docs[gold[0]["name"]]["parameters"].get("required") or [])
    for param, value in gold[0]["arguments"].items():
        kind = "required" if param in required else "optional"
        left = copy.deepcopy(gold)
        del left[0]["arguments"][param]
        yield f"without_{kind}_{param}", calls(left)
        typed = copy.deepcopy(gold)
        typed[0]["arguments"][param] = _WRONG_TYPE.get(type(value), None)
        yield f"wrong_type_{param}", calls(typed)
        if isinstance(value, str):
            styled = copy.deepcopy(gold)
            styled[0]["arguments"][param] = " " + value.upper().replace(" ", "-") + "."
            yield f"restyled_{param}", calls(styled)
        if language(entry.category) != "python":
            yield from ((f"{name}_{param}", calls(_with(gold, param, text)))
                        for name, text in _text_variants(entry, gold[0], param, value))
        if isinstance(value, int | float) and not isinstance(value, bool) and float(value).is_integer():
            as_int = copy.deepcopy(gold)  # an int where a float is documented: accepted
            as_int[0]["arguments"][param] = int(value)
            yield f"as_int_{param}", calls(as_int)
            as_bool = copy.deepcopy(gold)  # a bool is no integer
            as_bool[0]["arguments"][param] = bool(value)
            yield f"as_bool_{param}", calls(as_bool)


def _with(gold: list[dict[str, Any]], param: str, value: Any) -> list[dict[str, Any]]:
    out = copy.deepcopy(gold)
    out[0]["arguments"][param] = value
    return out


def _text_variants(entry: BfclEntry, call: dict[str, Any], param: str, text: Any) -> Iterator[tuple[str, Any]]:
    """A Java or JavaScript value's text changed: what a model might send instead."""
    doc = next(d for d in entry.functions if served_name(d["name"]) == call["name"])
    kind = doc["parameters"]["properties"][param]["type"]
    answer = next(iter(next(a for a in entry.ground_truth or () if served_name(next(iter(a))) == call["name"]).values()))
    first = next((v for v in answer.get(param, []) if v != ""), None)
    yield "as_json", first  # the value itself, not its text
    yield "json_text", json.dumps(first)
    if not isinstance(text, str):
        return
    yield "suffix_dropped", text[:-1] if text[-1:] in "LlfFn" else text + "L"
    yield "single_quoted", f"'{text.strip(chr(34))}'"
    yield "spaced", f" {text} "
    if kind in ("Array", "ArrayList", "array", "HashMap", "dict") and isinstance(first, list | dict):
        items = first if isinstance(first, list) else []
        yield "added", "new ArrayList<>() {{ " + " ".join(f"add({json.dumps(v)});" for v in items) + " }}"
        yield "new_array", "new Array(" + ", ".join(json.dumps(v) for v in items) + ")"
        yield "no_spaces", text.replace(" ", "")
        yield "empty", {"HashMap": "new HashMap<>()", "dict": "{}"}.get(kind, "[]")


def _ours(entry: BfclEntry, response: Any) -> tuple[bool, str]:
    if isinstance(response, str):
        made: list[tuple[str, Any]] = []
    else:
        made = []
        for name, text in response:
            try:
                args = json.loads(text)
            except json.JSONDecodeError:
                args = None
            made.append((name, args if isinstance(args, dict) else None))
    v = check_calls(entry.category, entry.functions, made, entry.ground_truth)
    return v.valid, v.error_type


def test_every_verdict_and_accuracy_is_bfcls(bfcl_data, bfcl_python, tmp_path):
    entries = load_entries(SINGLE_TURN)
    cases, ours = [], {}
    for entry in entries:
        for variant, response in _variants(entry):
            case_id = f"{entry.id}#{variant}"
            cases.append({"id": case_id, "category": entry.category, "functions": list(entry.functions),
                          "possible_answer": list(entry.ground_truth or ()), "response": response})
            ours[case_id] = _ours(entry, response)
    theirs = run_official(bfcl_python, {"cases": cases}, tmp_path)
    assert len(cases) > 30000 and set(theirs["verdicts"]) == set(ours)
    differ = {k: (ours[k], (v["valid"], v["error_type"])) for k, v in theirs["verdicts"].items()
              if ours[k] != (v["valid"], v["error_type"])}
    assert not differ, f"{len(differ)} verdicts differ, e.g. {list(differ.items())[:8]}"
    for category, accuracy in theirs["accuracy"].items():
        mine = [ours[c["id"]][0] for c in cases if c["category"] == category]
        assert sum(mine) / len(mine) == accuracy, category
    # the crafted responses cover both verdicts in every category
    for category in {e.category for e in entries}:
        assert {ours[c["id"]][0] for c in cases if c["category"] == category} == {True, False}


def test_every_entrys_tools_are_the_ones_bfcls_fc_handler_sends(bfcl_data, bfcl_python, tmp_path):
    entries = load_entries(SINGLE_TURN)
    theirs = run_official(bfcl_python, {"tools": [{"id": e.id, "category": e.category, "functions": list(e.functions)}
                                                  for e in entries]}, tmp_path)["tools"]
    differ = []
    for entry in entries:
        ours = [{"name": t.name, "description": t.description, "parameters": t.input_schema}
                for t in (to_tool(d, entry.id, entry.category) for d in entry.functions)]
        if ours != [t["function"] for t in theirs[entry.id]]:
            differ.append(entry.id)
    # the one known difference: tool_specs gives a nested object's required keys that its doc does not
    # declare a property each (with a description saying so); BFCL sends the object without them
    assert differ == ["parallel_29"], f"{len(differ)} entries' tools differ, e.g. {differ[:8]}"
    [tool] = theirs["parallel_29"]
    [ours_29] = [to_tool(d, "parallel_29", "parallel") for d in next(e for e in entries if e.id == "parallel_29").functions]
    population = dict(ours_29.input_schema["properties"]["population"])
    assert set(population.pop("properties")) == set(population["required"])
    assert tool["function"]["parameters"]["properties"]["population"] == population
    java = to_tool(next(e for e in entries if e.category == "simple_java").functions[0], "x", "simple_java")
    assert java.description.endswith(" Note that the provided function is in Java 8 SDK syntax.")
    assert {p["type"] for p in java.input_schema["properties"].values()} == {"string"}
