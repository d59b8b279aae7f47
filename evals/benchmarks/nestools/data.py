"""NesTools' samples as tasks, and the tools each task offers (its gold tools and distractors).

A sample (``test_data.jsonl``) has its gold tools (``api``: Python type names, a ``responses``
object), the query (``task``), the gold call list (``call``: nested arguments are the handles
``API_call_N`` of earlier calls' outputs, numbered across the list in the order of each api's
``responses`` keys) and a ``field``. ``test_api_ids.jsonl`` gives each gold tool's id in the
authors' global API pool; the official scorer identifies calls by these ids.

Distractors. The paper shows each sample's gold tools with 5 retrieved tools per gold tool (gte-large
over the authors' pool, ``api_dic.json``, which is not published; names within Levenshtein distance
< 0.2 of a gold name's length are skipped). We approximate that pool with the other samples' tools
(3,034 distinct ids): ``distractors`` per gold tool (default 5), drawn with a fixed ``seed`` from the
samples of the same field first, then of the same top-level domain, then any other, with the paper's
name-distance rule, no repeated name and no gold id; the task's tools are then shuffled with the same
seed. A distractor keeps its own pool id, so a call of one is a wrong tool for the scorer too.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from ...core.data import data_file, read_jsonl
from .files import API_IDS, TEST_DATA

__all__ = ["Api", "NesToolsTask", "TaskSet", "load_tasks"]


@dataclass(frozen=True)
class Api:
    """One tool of the pool: its id and its schema as the data gives it."""

    api_id: int
    raw: Mapping[str, Any]  # api_name, api_description, parameters, required, responses

    @property
    def name(self) -> str:
        return str(self.raw["api_name"])

    def with_id(self) -> dict[str, Any]:
        """The schema with ``api_id`` after ``api_name``, as the paper's prompt lists a tool."""
        out: dict[str, Any] = {}
        for key, value in self.raw.items():
            out[key] = value
            if key == "api_name":
                out["api_id"] = self.api_id
        return out


@dataclass(frozen=True)
class NesToolsTask:
    id: str  # the sample's test_id, as a string
    test_id: int
    query: str
    field: str
    gold_apis: tuple[Api, ...]
    calls: tuple[Mapping[str, Any], ...]  # the gold call list, as in the data

    @property
    def api_ids(self) -> dict[str, int]:
        """Gold api name -> id (what the official scorer maps the gold calls with)."""
        return {a.name: a.api_id for a in self.gold_apis}

    @property
    def domain(self) -> str:
        return self.field.split("/")[0].strip()

    def gold_prediction(self) -> list[dict[str, Any]]:
        """The gold calls in the official output format (``responses``: field -> handle)."""
        apis = {a.name: a for a in self.gold_apis}
        out = []
        for call in self.calls:
            api = apis[call["api_name"]]
            out.append({"api_name": call["api_name"], "api_id": api.api_id, "parameters": dict(call["parameters"]),
                        "responses": dict(zip(api.raw.get("responses") or {}, call["responses"], strict=True))})
        return out


def load_tasks(data_path: Path | None = None, ids_path: Path | None = None) -> list[NesToolsTask]:
    """Every sample, in file order; the two files must agree sample by sample."""
    rows = read_jsonl(data_path or data_file(*TEST_DATA))
    ids = {int(r["test_id"]): r["api_ids"] for r in read_jsonl(ids_path or data_file(*API_IDS))}
    tasks = []
    for row in rows:
        tid = int(row["test_id"])
        api_ids = ids.get(tid)
        if api_ids is None or len(api_ids) != len(row["api"]):
            raise ValueError(f"test_api_ids.jsonl has no matching api_ids for test_id {tid}")
        apis = tuple(Api(int(i), a) for a, i in zip(row["api"], api_ids, strict=True))
        tasks.append(NesToolsTask(str(tid), tid, str(row["task"]), str(row.get("field") or ""), apis,
                                  tuple(row["call"])))
    return tasks


class TaskSet:
    """The tasks and the tools each one offers (see the module docstring)."""

    def __init__(self, tasks: list[NesToolsTask], *, distractors: int = 5, seed: int = 0):
        self.tasks = {t.id: t for t in tasks}
        self.distractors = distractors
        self.seed = seed
        self._offered: dict[str, list[Api]] = {}

    @cached_property
    def _pool(self) -> list[tuple[NesToolsTask, Api]]:
        seen: set[int] = set()
        pool = []
        for task in self.tasks.values():
            for api in task.gold_apis:
                if api.api_id not in seen:
                    seen.add(api.api_id)
                    pool.append((task, api))
        return pool

    @cached_property
    def _by_field(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for i, (task, _) in enumerate(self._pool):
            out.setdefault(task.field, []).append(i)
        return out

    @cached_property
    def _by_domain(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for i, (task, _) in enumerate(self._pool):
            out.setdefault(task.domain, []).append(i)
        return out

    def offered(self, task_id: str) -> list[Api]:
        """The task's tools in the order they are shown: gold and distractors, shuffled."""
        if task_id not in self._offered:
            self._offered[task_id] = self._build(self.tasks[task_id])
        return self._offered[task_id]

    def _build(self, task: NesToolsTask) -> list[Api]:
        from rapidfuzz.distance import Levenshtein

        rng = random.Random(f"nestools:{self.seed}:{task.test_id}")
        tools = list(task.gold_apis)
        want = self.distractors * len(task.gold_apis)
        gold_names = [a.name for a in task.gold_apis]
        gold_ids = {a.api_id for a in task.gold_apis}
        names = set(gold_names)
        tried: set[int] = set()
        added = 0

        def take(i: int) -> bool:
            nonlocal added
            if i in tried:
                return False
            tried.add(i)
            api = self._pool[i][1]
            if api.api_id in gold_ids or api.name in names:
                return False
            if any(Levenshtein.distance(g, api.name) / len(g) < 0.2 for g in gold_names):
                return False
            tools.append(api)
            names.add(api.name)
            added += 1
            return added >= want

        done = want == 0
        for tier in (self._by_field.get(task.field, []), self._by_domain.get(task.domain, [])):
            if done:
                break
            order = list(tier)
            rng.shuffle(order)
            for i in order:
                if take(i):
                    done = True
                    break
        while not done and len(tried) < len(self._pool):
            done = take(rng.randrange(len(self._pool)))
        rng.shuffle(tools)
        return tools
