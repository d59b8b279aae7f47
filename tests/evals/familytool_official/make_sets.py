"""Write the hand-made prediction sets of this fixture (``sets/<name>-<b|e>/``) in the
``familytool-official`` format: ``manifest.json``, ``tool_use_results.json`` and, for the KG sets,
``kg_extraction.json``. Each set exercises one rule of the official scorer (see README.md); ``mix``
draws from all of them. Deterministic: it reads only the FamilyTool data ($EVALS_DATA_DIR).

Usage (from the repository root): EVALS_DATA_DIR=/work/shared/data .venv/bin/python tests/evals/familytool_official/make_sets.py
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evals.benchmarks.familytool.data import FamilyToolTask, kg_file, load_tasks
from evals.benchmarks.familytool.metrics import gold_paths
from evals.benchmarks.familytool.official import load_official_kg

HERE = Path(__file__).parent / "sets"
Call = dict[str, Any]


def gold_call(t: FamilyToolTask) -> Call:
    return {"name": t.gold_calls[0].name, "parameters": dict(t.gold_calls[0].arguments)}


def schema_props(t: FamilyToolTask) -> dict[str, Any]:
    tool = next(c for c in t.candidate_tools if c["name"] == t.gold_calls[0].name)
    return dict((tool.get("parameters") or {}).get("properties") or {})


def search(start: str, path: list[str], style: str = "paper") -> str:
    if style == "paper":
        rels = ",".join(f'"<relationship>{r}"' for r in path)
        return f'KG.search(start="{start}", path=[{rels}])'
    if style == "plain":
        return f"KG.search(start={start}, path=[{', '.join(path)}])"
    if style == "spaced":
        return f"KG . search( start = '{start}' , path = [ {' , '.join(path)} ] )"
    if style == "capital":  # the project's old syntax: the official parser reads no path
        return f"KG.search(Start={start}, Path=[{', '.join(path)}])"
    raise ValueError(style)


def gold_searches(t: FamilyToolTask, style: str = "paper") -> list[str]:
    return [search(p[0][0], [x[1] for x in p], style) for p in gold_paths(t.gold_kg)]


# ---- tool-use rules: task -> the predicted calls -------------------------------------------------------
def extra_params(t: FamilyToolTask, i: int) -> list[Call]:
    c = gold_call(t)
    spare = [k for k in schema_props(t) if k not in c["parameters"]]
    c["parameters"][spare[0] if spare and i % 2 else "extra_note"] = "anything"
    return [c]


def retype(t: FamilyToolTask, i: int) -> list[Call]:
    c = gold_call(t)
    for k, v in c["parameters"].items():
        if isinstance(v, bool):
            c["parameters"][k] = str(v).lower()
        elif isinstance(v, int | float):
            c["parameters"][k] = [str(v), float(v) if isinstance(v, int) else int(v), v][i % 3]
        elif isinstance(v, str) and i % 3 == 1:
            c["parameters"][k] = [v]
        else:
            continue
        break
    return [c]


def omit_one(t: FamilyToolTask, i: int) -> list[Call]:
    c = gold_call(t)
    props = schema_props(t)
    defaults = [k for k, v in c["parameters"].items() if k in props and props[k].get("default") == v]
    key = defaults[0] if defaults else sorted(c["parameters"])[-1]
    del c["parameters"][key]
    return [c]


def one_wrong(t: FamilyToolTask, i: int) -> list[Call]:
    c = gold_call(t)
    if i % 3 != 2:
        c["parameters"][sorted(c["parameters"])[i % len(c["parameters"])]] = "WRONG_VALUE"
    return [c]


def padded(t: FamilyToolTask, i: int) -> list[Call]:
    c = gold_call(t)
    mode = i % 4
    if mode == 0:
        c["parameters"] = {k: f"  {v} " if isinstance(v, str) else v for k, v in c["parameters"].items()}
    elif mode == 1:
        c["name"] = f" {c['name']}  "
    elif mode == 2:
        c["parameters"] = {f" {k}": v for k, v in c["parameters"].items()}
    else:  # strings inside lists are not stripped, even non-strict
        c["parameters"] = {k: [f" {x} " if isinstance(x, str) else x for x in v] if isinstance(v, list) else
                           (f" {v}" if isinstance(v, str) else v) for k, v in c["parameters"].items()}
    return [c]


def call_lists(t: FamilyToolTask, i: int) -> list[Call]:
    gold = gold_call(t)
    other = next((c["name"] for c in t.candidate_tools if c["name"] != gold["name"]), "no_such_tool")
    wrong_args = {"name": gold["name"], "parameters": {k: "zzz_wrong" for k in gold["parameters"]}}
    early_wrong = {"name": gold["name"], "parameters": {k: "000_wrong" for k in gold["parameters"]}}
    return [
        [{"name": other, "parameters": dict(gold["parameters"])}],  # wrong tool
        [{"name": other, "parameters": {}}, gold],  # a wrong tool, then the gold call
        [gold, {"name": other, "parameters": {}}],
        [gold, wrong_args],  # two calls of the gold tool: the one that sorts first is compared
        [gold, early_wrong],
        [],  # no call
        [{"name": gold["name"].upper(), "parameters": gold["parameters"]}],  # names are case-sensitive
        [{"name": gold["name"], "parameters": {}}],
    ][i % 8]


# ---- KG rules: task -> the step-1 text ---------------------------------------------------------------
def kg_links(kg: Any) -> Callable[[FamilyToolTask, int], str]:
    relations = sorted({r for links in kg.by_head.values() for _, r, _ in links})

    def rule(t: FamilyToolTask, i: int) -> str:
        paths = gold_paths(t.gold_kg)
        start, rels = paths[0][0][0], [x[1] for x in paths[0]]
        own = {r for _, r, _ in kg.by_head.get(start, [])}
        elsewhere = next(r for r in relations if r not in own)  # a KG relation this entity has no link for
        mode = i % 7
        if mode == 0:  # a made-up relation at the first hop: every link of the start, longest paths kept
            return search(start, ["made_up_relation", *rels[1:]])
        if mode == 1:  # a made-up relation at the last hop
            return search(start, [*rels[:-1], "made_up_relation"]) if len(rels) > 1 else search(start, [elsewhere])
        if mode == 2:  # a relation of the KG that this entity lacks
            return search(start, [elsewhere, *rels[1:]])
        if mode == 3:  # one hop too many (the last entity has no links)
            return search(start, [*rels, rels[-1]])
        if mode == 4:  # gold searches twice, and a partial one
            return "\n".join(gold_searches(t) * 2 + [search(start, rels[:1])])
        if mode == 5:  # the only (entity, relation) with two links in -b: the first is taken
            return search("Bob", ["prefer_travel_city"]) + "\n" + "\n".join(gold_searches(t))
        return "\n".join(gold_searches(t, "plain"))

    return rule


def kg_parse(t: FamilyToolTask, i: int) -> str:
    good = gold_searches(t)
    start = gold_paths(t.gold_kg)[0][0][0]
    tail = t.gold_kg[-1].tail
    return [
        "\n".join(gold_searches(t, "capital")),  # Start=/Path=: no path read -> hallucination, no links
        "\n".join([*good, search(start, [], "plain")]),  # path=[] among valid ones
        "I need the KG but will not search it.",  # no search: format error
        search("Nobody", ["mother"]),  # unknown start alone: format error
        "\n".join([search("Nobody", ["mother"]), *good]),  # unknown start among valid ones: ignored
        search(tail, ["mother"]),  # a tail-only entity as start
        "\n".join(gold_searches(t, "spaced")),  # spaces and quotes are removed before parsing
        f"KG.search(start={start},\npath=[{gold_paths(t.gold_kg)[0][0][1]}])",  # split over two lines
        search("Mr. Smith", ["prefer_restaurant"]),  # spaces inside a name are removed too
        "```python\n" + "\n".join(good) + "\n```",
    ][i % 10]


def tool_set(name: str, tasks: list[FamilyToolTask], rule: Callable[[FamilyToolTask, int], list[Call]]) -> dict[str, Any]:
    return {"strategy": "golden-kg", "tool": {t.id: rule(t, i) for i, t in enumerate(tasks)}, "kg": None}


def write_set(name: str, dataset: str, spec: dict[str, Any]) -> None:
    out = HERE / f"{name}-{dataset}"
    out.mkdir(parents=True, exist_ok=True)
    ids = list(spec["tool"])
    tool_rows = [{"data_id": tid, "result": {"think": "", "content": "", "tool_call": spec["tool"][tid]}} for tid in ids]
    (out / "tool_use_results.json").write_text(json.dumps(tool_rows, ensure_ascii=False, indent=1) + "\n")
    manifest = {"format": "familytool-official", "benchmark": f"familytool-{dataset}", "strategy": spec["strategy"],
                "model": f"fixture:{name}", "options": {}, "tasks": len(ids)}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    if spec["kg"] is not None:
        rows = [{"id": tid, "response": spec["kg"][tid]} for tid in ids]
        (out / "kg_extraction.json").write_text(json.dumps(rows, ensure_ascii=False, indent=1) + "\n")


def main() -> None:
    for ds in ("b", "e"):
        tasks = load_tasks(ds)
        kg = load_official_kg(kg_file(ds))
        numeric = [t for t in tasks if any(isinstance(v, int | float) for v in t.gold_calls[0].arguments.values())]
        many = [t for t in tasks if len(t.gold_calls[0].arguments) >= 3][:12] + [t for t in tasks if len(t.gold_calls[0].arguments) == 1][:12]
        defaults = [t for t in tasks if any(k in schema_props(t) and schema_props(t)[k].get("default") == v
                                             for k, v in t.gold_calls[0].arguments.items())]
        lists = [t for t in tasks if any(isinstance(v, list) for v in t.gold_calls[0].arguments.values())][:4]
        sets: dict[str, dict[str, Any]] = {
            "tool_extra_params": tool_set("x", tasks[:10], extra_params),
            "tool_types": tool_set("x", numeric[:12] + tasks[:6], retype),
            "tool_defaults": tool_set("x", defaults + tasks[:4], omit_one),
            "tool_value_acc": tool_set("x", many, one_wrong),
            "tool_nonstrict": tool_set("x", tasks[:12] + lists, padded),
            "tool_calls": tool_set("x", tasks[:16], call_lists),
        }
        travel = [t for t in tasks if any(x.relation == "prefer_travel_city" for x in t.gold_kg)][:3]
        kg_tasks = tasks[:18] + [t for t in travel if t not in tasks[:18]]
        rule = kg_links(kg)
        sets["kg_links"] = {"strategy": "kgetool", "tool": {t.id: [gold_call(t)] for t in kg_tasks},
                            "kg": {t.id: rule(t, i) for i, t in enumerate(kg_tasks)}}
        sets["kg_parse"] = {"strategy": "kgetool", "tool": {t.id: [gold_call(t)] for t in tasks[20:40]},
                            "kg": {t.id: kg_parse(t, i) for i, t in enumerate(tasks[20:40])}}
        rng = random.Random(f"familytool-official-{ds}")
        tool_rules: list[Callable[[FamilyToolTask, int], list[Call]]] = [
            extra_params, retype, omit_one, one_wrong, padded, call_lists, lambda t, i: [gold_call(t)]]
        kg_rules: list[Callable[[FamilyToolTask, int], str]] = [rule, kg_parse, lambda t, i: "\n".join(gold_searches(t))]
        picked = rng.sample(tasks, 60)
        sets["mix"] = {"strategy": "kgetool",
                       "tool": {t.id: rng.choice(tool_rules)(t, rng.randrange(16)) for t in picked},
                       "kg": {t.id: rng.choice(kg_rules)(t, rng.randrange(70)) for t in picked}}
        order = {t.id: n for n, t in enumerate(tasks)}
        for name, spec in sets.items():  # in the dataset's order, as `evals export` writes them
            spec["tool"] = dict(sorted(spec["tool"].items(), key=lambda kv: order[kv[0]]))
            write_set(name, ds, spec)
            print(f"{name}-{ds}: {len(spec['tool'])} tasks")


if __name__ == "__main__":
    main()
