"""FamilyTool's metrics as the official code computes them (GitHub ``yxzwang/FamilyTool`` at commit
``c3c5fc7e``), quirks included. Our own implementation of what these files do:

* KG extraction: ``pipeline/KG_extraction_post_process_make_intermediate_json.py`` (``KG_search``,
  ``extractpath`` with ``KGretrieval_type="exact"``, the paper's Greedy Search; ``metric_KG_extraction``)
  and ``pipeline/utils.py`` (``KnowledgeGraph``, ``extract_links_func``);
* tool use: ``resources/UnifiedToolHub/benchmark/metrics.py`` (``metrics_for_single_round_tool_call``)
  averaged over the tasks as in ``benchmark/evaluate_model.py`` (``is_strict`` True by default, as
  in ``run.py``; the non-strict mode also strips the string values).

The tool-use step (``tool_step_query``) gets the gold query with its sub-KG ``(...)`` replaced by the
extraction string of the step-1 text (``KG_extraction_post``, which writes the intermediate jsonl that
``Tooluse_generation`` evaluates).

What they do (``tests/evals/familytool_official`` checks each rule against the official code's numbers):

Step-1 text -> extracted links. Every ``KG.search(...)`` (regex ``KG.search\\((.*?)\\)``: one line, up to
the first ``)``) is cleaned (quotes, backticks and *all spaces* removed, ``<...>`` tags removed) and
read with ``start=([^,]+)`` and ``path=\\[([^\\]]+)\\]``: lower-case keys only. A search whose path does
not parse adds a hallucination mark and no links. Otherwise the path is walked over the KG (links in
file order, duplicates dropped): at each hop only the *first* link of (entity, relation) is taken.
A relation the entity has no link for (a made-up one, or one that exists elsewhere in the KG) marks a
hallucination and, the first time only, adds every link of that entity (at the first hop each of them
starts a path of its own, and the longest paths are kept). A start that is no head entity of the KG
(or, after the first hop, a dead end) yields no links: such a search adds *nothing*, not even the
hallucination mark. The task is a format error when the whole result is empty (no search, or only
searches with an unknown start); otherwise it is hallucinated when any mark was added.

Per task: ``kg_em`` the extracted link set equals the gold one (parsed the same way from the first
``(...)`` of the gold query); ``kg_f1`` their F1 (0 when nothing is shared); ``kg_coverage`` every gold
entity that occurs in the gold call (``str()`` of the gold ``tool_call`` content, substring match) is
an entity of the extracted links; ``kg_format_error``; ``kg_no_hallucination`` over the tasks that are
not format errors only. All are means over the tasks.

Tool use, per task, with the gold call and the predicted calls (names stripped; calls grouped by
name): ``tool_em`` the gold tool was called and, for each *gold* parameter, ``json.dumps`` of the
prediction's value (``null`` when omitted) equals ``json.dumps`` of the gold value (no type
conversion, no schema defaults; extra parameters are ignored; dict values compare with their key
order); ``tool_acc`` the gold tool name was called; ``value_acc`` the share of the gold parameters so
matched, 0 when the gold tool was not called; means over the tasks (``value_acc`` is averaged per
task, not over all parameters). With several predicted calls of the gold tool the one whose
``json.dumps(..., sort_keys=True)`` sorts first is compared.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

_SEARCH = re.compile(r"KG.search\((.*?)\)")
_START = re.compile(r"start=([^,]+)")
_PATH = re.compile(r"path=\[([^\]]+)\]")
_TAG = re.compile(r"<.*?>")
_LINK = re.compile(r"\[([^\[\]]+)\]")
_GOLD_KG = re.compile(r"\(.*?\)")
_DROP = str.maketrans({c: None for c in "\"'`‘’“” "})
_BAD = "<bad_extract>"
_ALL = "全部"  # the official parser glues this word (Chinese "all") to the relation before it


@dataclass
class OfficialKG:
    """The KG as the official ``KnowledgeGraph`` indexes it: links of each head entity in file order
    (exact duplicates dropped), and the tails of each ``"<head>-<relation>"`` key."""

    by_head: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    by_key: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def from_triples(cls, triples: Iterable[Sequence[str]]) -> OfficialKG:
        kg = cls()
        seen: set[tuple[str, ...]] = set()
        for t in triples:
            h, r, tail = (str(x) for x in t)
            if (h, r, tail) in seen:
                continue
            seen.add((h, r, tail))
            kg.by_head.setdefault(h, []).append((h, r, tail))
            kg.by_key.setdefault(f"{h}-{r}", []).append(tail)
        return kg

    def first(self, head: str, relation: str) -> tuple[str, str, str] | None:
        tails = self.by_key.get(f"{head}-{relation}")
        return (head, relation, tails[0]) if tails else None


@cache
def load_official_kg(path: Path) -> OfficialKG:
    """A KG triple file (one Python list literal per line), indexed as the official code does."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return OfficialKG.from_triples(ast.literal_eval(line) for line in lines if line.strip())


def _glue_all(items: list[str]) -> list[str]:
    out: list[str] = []
    for item in items:
        if item == _ALL and out:
            out[-1] += item
        else:
            out.append(item)
    return out


def parse_search(body: str) -> tuple[str | None, list[str] | None]:
    """The (start, path) the official parser reads from the inside of one ``KG.search(...)``."""
    cleaned = _TAG.sub("", body.translate(_DROP).replace("，", ",").replace("】", "]").replace("【", "["))
    sm, pm = _START.search(cleaned), _PATH.search(cleaned)
    path = None
    if pm:
        path = [p.strip() for p in pm.group(1).split(",")]
        if len(path) >= 2:
            path = _glue_all(path)
    return (sm.group(1).strip() if sm else None), path


def _walk(start: str | None, path: list[str], kg: OfficialKG) -> tuple[list[list[tuple[str, str, str]]], bool]:
    """One search's paths (lists of links) and whether it was marked as a hallucination."""
    bad = False
    paths: list[list[tuple[str, str, str]]] = []
    nexts: list[str] = []
    for i, rel in enumerate(path):
        if i == 0:
            if start is None or start not in kg.by_head:
                return [], True
            link = kg.first(start, rel)
            if link is None:
                paths = [[c] for c in kg.by_head[start]]
                nexts = [c[2] for c in kg.by_head[start]]
                bad = True
            else:
                paths, nexts = [[link]], [link[2]]
            continue
        if not nexts:
            bad = True
            continue
        for j, node in enumerate(nexts):
            if node not in kg.by_head:
                bad = True
                continue
            link = kg.first(node, rel)
            if link is None:
                if not bad:
                    paths[j].extend(kg.by_head[node])
                    bad = True
            else:
                paths[j].append(link)
                nexts[j] = link[2]
    return paths, bad


def extraction_text(text: str | None, kg: OfficialKG) -> str:
    """What the official ``KG_search`` returns for a step-1 text: each kept path as ``(<list>)``
    followed by its search's mark (``""`` or ``"<bad_extract>"``); ``""`` when nothing was found."""
    out: list[str] = []
    for body in _SEARCH.findall(text or ""):
        start, path = parse_search(body)
        if path is None:
            out += ["", _BAD]
            continue
        paths, bad = _walk(start, path, kg)
        if paths:
            longest = max(len(p) for p in paths)
            paths = [p for p in paths if len(p) == longest]
        for p in paths:
            out += [f"({[list(link) for link in p]})", _BAD if bad else ""]
    return "".join(out)


def links_of(text: str) -> list[list[str]]:
    """The links written in a text (the official ``extract_links_func``): every innermost ``[...]``
    after removing quotes, split at commas."""
    cleaned = text.replace("'", "").replace('"', "")
    return [[item.strip() for item in m.split(",")] for m in _LINK.findall(cleaned)]


def gold_links(raw_query: str) -> list[list[str]]:
    """The gold sub-KG: the links of the first ``(...)`` of the gold query."""
    m = _GOLD_KG.search(raw_query)
    return links_of(m.group(0)) if m else []


def tool_step_query(raw_query: str, extra: str) -> str:
    """The official tool-use query (``KG_extraction_post``): the gold query with the text of its first
    ``(...)`` (the gold sub-KG) replaced by ``extra``, at every place it occurs (``str.replace``). An
    empty ``extra`` (a format error) leaves "... for the query is ."."""
    m = _GOLD_KG.search(raw_query)
    return raw_query.replace(m.group(0), extra) if m else raw_query


def links_text(links: Iterable[Sequence[str]]) -> str:
    """Links written as the gold sub-KG of the data is: ``(['h', 'r', 't'], ...)``."""
    return "(" + ", ".join(str([str(x) for x in link]) for link in links) + ")"


def kg_values(extracted: str, gold: list[list[str]], gold_call_text: str) -> dict[str, float]:
    """One task's KG-extraction values from the official extraction string. ``kg_no_hallucination``
    is absent for a format error (the official denominator leaves those tasks out)."""
    pred = {"<>".join(link) for link in links_of(extracted)}
    true = {"<>".join(link) for link in gold}
    tp = len(pred & true)
    precision = tp / len(pred) if pred else 0.0
    recall = tp / len(true) if true else 0.0
    f1 = 2 * (precision * recall) / (precision + recall) if precision + recall > 0 else 0.0
    gold_ents = {e for link in gold for e in (link[0], link[-1])} if gold else set()
    got_ents = {e for link in links_of(extracted) for e in (link[0], link[-1])}
    used = [e for e in gold_ents if e in gold_call_text]
    out = {
        "kg_em": float(pred == true),
        "kg_f1": float(f1),
        "kg_coverage": float(all(e in got_ents for e in used)),
        "kg_format_error": float(extracted == ""),
    }
    if extracted != "":
        out["kg_no_hallucination"] = float(_BAD not in extracted)
    return out


# ---- tool use ---------------------------------------------------------------------------------------
def _strip(value: Any, strict: bool) -> Any:
    if isinstance(value, dict):
        return {_strip(k, strict): (v if strict else _strip(v, strict)) for k, v in value.items()}
    if isinstance(value, str):
        return value.strip()
    return value


def _by_name(calls: Iterable[Mapping[str, Any]], strict: bool) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for c in calls:
        if not isinstance(c, Mapping) or "name" not in c or "parameters" not in c:
            continue
        out.setdefault(str(c["name"]).strip(), []).append(_strip(c["parameters"], strict))
    return out


def tool_values(gold: Sequence[Mapping[str, Any]], predicted: Sequence[Mapping[str, Any]], *, strict: bool = True) -> dict[str, float]:
    """One task's ``tool_em``, ``tool_acc`` and ``value_acc`` (as fractions): ``gold`` and
    ``predicted`` are lists of ``{"name", "parameters"}`` (a prediction's non-dict parameters count as
    ``{}``; the official code stops with an error on them)."""
    gold_by, out_by = _by_name(gold, strict), _by_name(predicted, strict)
    if not gold_by:
        empty = float(not out_by)
        return {"tool_em": empty, "tool_acc": empty, "value_acc": empty}
    names = matched = total = all_matched = 0
    for name, gold_args in gold_by.items():
        if name not in out_by:
            continue
        names += 1
        ok = True
        pairs = zip(sorted(gold_args, key=lambda x: json.dumps(x, sort_keys=True)),
                    sorted(out_by[name], key=lambda x: json.dumps(x, sort_keys=True)), strict=False)
        for g, o in pairs:
            o = o if isinstance(o, dict) else {}
            ok = True
            for key, gv in g.items():
                total += 1
                if json.dumps(o.get(key)) == json.dumps(gv):
                    matched += 1
                else:
                    ok = False
        all_matched += int(ok)
    em = all_matched / len(gold)
    return {"tool_em": float(int(em == 1)), "tool_acc": names / len(gold_by), "value_acc": matched / total if total else 0}


# ---- the tool list of the step-2 request ---------------------------------------------------------
# UnifiedToolHub's ``models/api_requester.py`` (``APIRequester.convert_to_openai_tools``, called by
# ``get_prompt``) rewrites the data's candidate tools before the API request; our implementation of
# its rules (``tests/evals/familytool_official/tool_schemas`` checks it against the official function):
#
# * each tool becomes ``{"type": "function", "function": {"name", "description", "parameters"}}``: the
#   name stripped with ``.`` made ``_``, the description as in the data, and parameters
#   ``{"type": "object", "properties": ..., "required": ...}``: ``required`` copied as it is (names
#   not rewritten), ``[]`` without one; everything else of the tool (``response``, the parameters'
#   own ``type``) is dropped;
# * each parameter (``properties`` as a name -> schema mapping, or a list of schemas with ``name``;
#   ``.`` in names made ``_``; a later one of the same name replaces an earlier one in its place)
#   keeps only ``type`` and ``description`` (``""`` when absent; a plain string is the description
#   of a string parameter): ``type`` as mapped below, ``"string"`` when absent or null. Default,
#   format, pattern, enum, options... are dropped. An ``array`` gets ``items`` as in the data (every
#   key kept) with its ``type`` mapped and its ``properties`` rewritten as nested ones, or
#   ``{"type": "string"}`` without; an ``object`` gets its ``properties`` rewritten as nested ones,
#   or ``{}`` without;
# * a nested property (inside an object or an array's items) keeps *every* key, with its ``type``
#   mapped, its ``properties`` rewritten the same way and, for an array, its ``items``' type mapped
#   and their ``properties`` rewritten; names get ``_`` for ``.``;
# * a type is lower-cased and ``str``/``int``/``float``/``list``/``dict`` become
#   ``string``/``integer``/``number``/``array``/``object`` (``Dict`` -> ``object``); a list of types
#   maps its first; any other value (null, a number) is ``"string"``.
_API_TYPES = {"str": "string", "int": "integer", "float": "number", "list": "array", "dict": "object"}


def _api_type(value: Any, where: str) -> str:
    if isinstance(value, list) and value:
        value = value[0]
    elif not isinstance(value, str):
        return "string"
    if not isinstance(value, str):
        raise ValueError(f"{where}: a list of types whose first is not a string: {value!r}")
    return _API_TYPES.get(value.lower(), value.lower())


def _api_items(items: Any, where: str) -> Any:
    if isinstance(items, dict):
        if "type" in items:
            items["type"] = _api_type(items["type"], where)
        if "properties" in items:
            items["properties"] = _api_nested(items["properties"], where)
    return items


def _api_nested(properties: Any, where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if not isinstance(properties, dict):
        return out
    for name, schema in properties.items():
        if isinstance(schema, dict):
            schema = dict(schema)
            if "type" in schema:
                schema["type"] = _api_type(schema["type"], f"{where}.{name}")
            if "properties" in schema:
                schema["properties"] = _api_nested(schema["properties"], f"{where}.{name}")
            if schema.get("type") == "array" and "items" in schema:
                schema["items"] = _api_items(schema["items"], f"{where}.{name}")
        out[name.replace(".", "_")] = schema
    return out


def _api_parameter(schema: Any, where: str) -> dict[str, Any]:
    if isinstance(schema, str):
        return {"type": "string", "description": schema}
    if not isinstance(schema, dict):
        raise ValueError(f"{where}: a parameter must be a JSON object or a string, got {schema!r}")
    info: dict[str, Any] = {"type": "string", "description": schema.get("description", "")}
    if "type" in schema:
        info["type"] = _api_type(schema["type"], where)
    if info["type"] == "array":
        info["items"] = _api_items(schema["items"], where) if "items" in schema else {"type": "string"}
    elif info["type"] == "object":
        info["properties"] = _api_nested(schema["properties"], where) if "properties" in schema else {}
    return info


def api_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """One candidate tool of the data as the official step 2 sends it to an API model (the rules
    above); ``tool`` is not changed."""
    tool = json.loads(json.dumps(tool))  # the official code changes the items in place: work on a copy
    name = tool.get("name")
    if not isinstance(name, str) or "description" not in tool:
        raise ValueError(f"candidate tool {name!r}: needs a string 'name' and a 'description'")
    params: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
    spec = tool.get("parameters")
    if spec is not None and not isinstance(spec, dict):
        raise ValueError(f"candidate tool {name!r}: 'parameters' must be a JSON object, got {spec!r}")
    spec = spec or {}
    if "required" in spec:
        params["required"] = spec["required"]
    props = spec.get("properties")
    if isinstance(props, list):
        for p in props:
            if not isinstance(p, dict) or not isinstance(p.get("name"), str):
                raise ValueError(f"candidate tool {name!r}: a parameter of the list form needs a string 'name': {p!r}")
            params["properties"][p["name"].replace(".", "_")] = _api_parameter(p, f"{name}.{p['name']}")
    elif isinstance(props, dict):
        params["properties"] = {k.replace(".", "_"): _api_parameter(v, f"{name}.{k}") for k, v in props.items()}
    return {"type": "function", "function": {"name": name.strip().replace(".", "_"),
                                             "description": tool["description"], "parameters": params}}


def api_tools(candidate_tools: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A task's candidate tools as the official step 2 sends them (``convert_to_openai_tools``), in
    the data's order, a tool listed twice included twice."""
    return [api_tool(t) for t in candidate_tools]
