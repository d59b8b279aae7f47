"""FamilyTool (-b base, -e extended): tasks, gold, candidate tools and the family KG.

Record format (see ``../shared/data/MANIFEST.md``): each line of ``familytool-{b,e}.jsonl`` is a
JSON list of four messages: the id, the candidate tools, the user query (with the gold sub-KG
appended after "The extra information for the query is"), and the gold tool call.

Quirks handled here, each counted over the real files:
- the speaker tag is ``<speak>Speaker: X</speak>``, sometimes ``<speak>Person: X</speak>``,
  sometimes with a trailing full stop (``Alice.``), and sometimes absent (speaker ``None``);
- the gold triples are quoted Python lists in some -b rows and unquoted (``[Jack, wife, Alice]``)
  elsewhere, so they are parsed with a regular expression, not ``literal_eval``;
- the candidate tools' schemas are loose (see ``tool_specs.normalize_schema``) and the gold
  calls themselves break them (omitted required parameters, parameters that are not in the
  schema), so FamilyTool tools validate with the ``warn`` policy: problems are reported to the
  model as warnings and the call still runs.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from kg_store import Triple
from tool_specs import TaskNotFound, ToolSpec

from ...core.data import data_file
from ...core.derived_cache import cached_derivation, with_cached_normalizations
from .names import KG_TOOL_PREFIX

DATASETS = ("b", "e")
FAMILYTOOL_NAMES = ("familytool-b", "familytool-e")
EXTRA_MARKER = "The extra information for the query is"
_SPEAKER_RE = re.compile(r"<speak>\s*(?:Speaker|Person)\s*:\s*([^<]*?)\.?\s*</speak>\s*", re.S)
_TRIPLE_RE = re.compile(
    r"\[\s*'?([^\[\],']+?)'?\s*,\s*'?([^\[\],']+?)'?\s*,\s*'?([^\[\],']+?)'?\s*\]"
)


class FamilyToolFormatError(ValueError):
    """A FamilyTool record does not have the documented shape; the message names file and line."""


@dataclass(frozen=True)
class GoldCall:
    """One gold tool call."""

    name: str
    arguments: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "arguments": dict(self.arguments)}


@dataclass(frozen=True)
class FamilyToolTask:
    """One FamilyTool item."""

    id: str
    dataset: str  # "familytool-b" or "familytool-e"
    query: str  # the bare user query, without the speaker tag and the gold sub-KG
    raw_query: str  # the query exactly as in the file
    speaker: str | None
    gold_kg: tuple[Triple, ...]
    gold_calls: tuple[GoldCall, ...]
    candidate_tools: tuple[dict[str, Any], ...] = field(repr=False)
    gold_text: str = field(default="", repr=False)  # str() of the file's tool_call content (official coverage)

    @property
    def official_gold(self) -> list[dict[str, Any]]:
        """The gold calls as the official scripts read them (``{"name", "parameters"}``)."""
        return [{"name": c.name, "parameters": dict(c.arguments)} for c in self.gold_calls]

    @property
    def official_query(self) -> str:
        """The step-1 query of the official pipeline: the file's query up to the extra information."""
        return self.raw_query.split(EXTRA_MARKER)[0].strip()

    @property
    def hops(self) -> int:
        """Number of gold sub-KG triples (the paper's hop count)."""
        return len(self.gold_kg)

    @property
    def gold_tools(self) -> list[str]:
        return [c.name for c in self.gold_calls]


def parse_query(raw: str) -> tuple[str | None, str, tuple[Triple, ...]]:
    """Split a raw FamilyTool query into (speaker, bare query, gold sub-KG triples)."""
    speaker = None
    text = raw
    m = _SPEAKER_RE.search(text)
    if m:
        speaker = m.group(1).strip() or None
        text = text[: m.start()] + text[m.end() :]
    gold: tuple[Triple, ...] = ()
    k = text.find(EXTRA_MARKER)
    if k >= 0:
        extra = text[k + len(EXTRA_MARKER) :]
        gold = tuple(Triple(*(s.strip() for s in t)) for t in _TRIPLE_RE.findall(extra))
        text = text[:k]
    return speaker, text.strip(), gold


def _parse_record(line: str, *, dataset: str, where: str) -> FamilyToolTask:
    try:
        msgs = json.loads(line)
        roles = [m.get("role") for m in msgs]
    except (json.JSONDecodeError, AttributeError, TypeError) as exc:
        raise FamilyToolFormatError(f"{where}: not a JSON list of messages ({exc})") from exc
    if roles != ["id", "candidate_tools", "user", "tool_call"]:
        raise FamilyToolFormatError(
            f"{where}: expected messages with roles id, candidate_tools, user, tool_call; got {roles}"
        )
    raw_query = msgs[2]["content"]
    speaker, query, gold_kg = parse_query(raw_query)
    if not gold_kg:
        raise FamilyToolFormatError(f"{where}: no gold sub-KG after {EXTRA_MARKER!r}")
    calls = tuple(GoldCall(c["name"], dict(c.get("parameters") or {})) for c in msgs[3]["content"])
    return FamilyToolTask(
        id=str(msgs[0]["content"]),
        dataset=dataset,
        query=query,
        raw_query=raw_query,
        speaker=speaker,
        gold_kg=gold_kg,
        gold_calls=calls,
        candidate_tools=tuple(msgs[1]["content"]),
        gold_text=str(msgs[3]["content"]),
    )


def load_tasks(dataset: str, path: Path | None = None) -> list[FamilyToolTask]:
    """Load all tasks of ``familytool-b`` or ``familytool-e`` (``dataset`` is either form)."""
    short = dataset.removeprefix("familytool-")
    if short not in DATASETS:
        raise ValueError(f"unknown FamilyTool dataset {dataset!r}; expected one of familytool-b, familytool-e")
    path = path or data_file("familytool", f"familytool-{short}.jsonl")
    return cached_derivation(f"familytool-{short}-tasks", [path], lambda: _parse_tasks(short, path),
                             code=[__file__], encode=_encode_tasks, decode=_decode_tasks)


def _parse_tasks(short: str, path: Path) -> list[FamilyToolTask]:
    tasks: list[FamilyToolTask] = []
    seen: set[str] = set()
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            task = _parse_record(line, dataset=f"familytool-{short}", where=f"{path}:{n}")
            if task.id in seen:
                raise FamilyToolFormatError(f"{path}:{n}: duplicate task id {task.id!r}")
            seen.add(task.id)
            tasks.append(task)
    return tasks


def _encode_tasks(tasks: list[FamilyToolTask]) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]]]:
    """The tasks as built-in types for the cache: each distinct candidate tool once (a task names
    its tools by index; the file repeats them in every record)."""
    tools: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    rows = []
    for t in tasks:
        refs = []
        for tool in t.candidate_tools:
            key = json.dumps(tool)  # key order kept: it is the order the schema is served in
            if key not in index:
                index[key] = len(tools)
                tools.append(tool)
            refs.append(index[key])
        rows.append((t.id, t.dataset, t.query, t.raw_query, t.speaker, [tuple(x) for x in t.gold_kg],
                     [(c.name, c.arguments) for c in t.gold_calls], refs, t.gold_text))
    return tools, rows


def _decode_tasks(raw: Any) -> list[FamilyToolTask]:
    tools, rows = raw
    return [
        FamilyToolTask(
            id=tid, dataset=dataset, query=query, raw_query=raw_query, speaker=speaker,
            gold_kg=tuple(Triple(*x) for x in gold_kg), gold_calls=tuple(GoldCall(n, a) for n, a in calls),
            candidate_tools=tuple(tools[i] for i in refs), gold_text=gold_text,
        )
        for tid, dataset, query, raw_query, speaker, gold_kg, calls, refs, gold_text in rows
    ]


def kg_file(dataset: str) -> Path:
    """The triple file of the dataset's family KG."""
    short = dataset.removeprefix("familytool-")
    return data_file("familytool", f"familykg-{short}.txt")


class FamilyToolCatalog:
    """The server's view of a FamilyTool dataset: per-task candidate tools and a playground.

    A tool name always carries the same schema across the tasks of a file (checked at load), so
    each tool is normalised once and shared.
    """

    def __init__(self, dataset: str, tasks: list[FamilyToolTask] | None = None, path: Path | None = None):
        short = dataset.removeprefix("familytool-")
        self.name = f"familytool-{short}"
        self.path = path  # the tasks' file, when they are its tasks (their schemas' normalisations are cached)
        self.tasks: dict[str, FamilyToolTask] = {t.id: t for t in (tasks or load_tasks(short))}
        self._raw: dict[str, dict[str, Any]] = {}
        for task in self.tasks.values():
            for tool in task.candidate_tools:
                prev = self._raw.setdefault(tool["name"], tool)
                if prev != tool:
                    raise FamilyToolFormatError(
                        f"{self.name}: tool {tool['name']!r} has two different schemas (task {task.id})"
                    )

    @cached_property
    def _specs(self) -> dict[str, ToolSpec]:
        def build() -> dict[str, ToolSpec]:
            return {
                name: ToolSpec.from_benchmark(
                    raw, validation="warn", annotations={"benchmark": self.name, "source": "MTU-Bench"}
                )
                for name, raw in sorted(self._raw.items())
            }

        if self.path is None:
            return build()
        return with_cached_normalizations(f"{self.name}-schemas", [self.path], build)

    def task_ids(self) -> list[str]:
        return list(self.tasks)

    def task(self, task_id: str) -> FamilyToolTask:
        try:
            return self.tasks[task_id]
        except KeyError:
            raise TaskNotFound(task_id) from None

    def task_tools(self, task_id: str) -> list[ToolSpec]:
        """The task's candidate tools, in file order; a tool listed twice (27 -b tasks) is served once."""
        names = dict.fromkeys(t["name"] for t in self.task(task_id).candidate_tools)
        return [self._specs[name] for name in names]

    def playground_tools(self) -> list[ToolSpec]:
        return list(self._specs.values())

    def stats(self) -> dict[str, Any]:
        """Dataset statistics (the KG's own numbers come from the KG store)."""
        hops = Counter(t.hops for t in self.tasks.values())
        return {
            "tasks": len(self.tasks),
            "gold_tools": len({c.name for t in self.tasks.values() for c in t.gold_calls}),
            "candidate_tools": len(self._raw),
            "hops": {str(k): hops[k] for k in sorted(hops)},
        }


def load_catalog(dataset: str) -> FamilyToolCatalog:
    """The dataset's catalog. Its tasks and its tools' schema normalisations come from the derived
    cache (:mod:`evals.core.derived_cache`): building it again costs about 10 ms, so it is not kept
    per process."""
    short = dataset.removeprefix("familytool-")
    path = data_file("familytool", f"familytool-{short}.jsonl")
    return FamilyToolCatalog(short, load_tasks(short, path), path)


# ---- the agent strategy: prompts, oracle, scoring ---------------------------------------------------

AGENT_SYSTEM_PROMPT = (
    "You are the assistant of a family. The user's name is given in <speak> tags. Requests refer to "
    "people and their preferences indirectly (\"my mom's favourite restaurant\"); the family knowledge "
    "graph holds those facts. Use the kg_* tools to look them up, then call exactly one of the other "
    "tools to carry out the request, using the knowledge graph's entity ids (such as dinnertime_0002) "
    "as parameter values. After that call, answer briefly."
)


def agent_prompt(task: FamilyToolTask) -> str:
    """The user turn of the ``agent`` strategy: the query without the gold sub-KG (speaker kept)."""
    return (f"<speak>Speaker: {task.speaker}</speak> " if task.speaker else "") + task.query


def oracle_steps(task: FamilyToolTask) -> list[list[dict[str, Any]]]:
    """The gold answer as the oracle's script: one step with the gold call(s)."""
    return [[c.to_dict() for c in task.gold_calls]]


def predicted_call(calls: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The prediction of an episode: its last call to a candidate (non-KG) tool."""
    for call in reversed(calls):
        if not call["name"].startswith(KG_TOOL_PREFIX):
            return dict(call)
    return None
