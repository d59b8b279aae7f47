"""UltraTool's tasks: the four released test files, the two approximated tasks, and their prompts.

Every test file holds 1,000 records, one per ``test.json`` query in the same order; a task's id is
its record's line number (``"0"`` ... ``"999"``), the same id in every file.

The Chinese test set (``--language zh``) has the same files and ids; its prompts are built from
``generate_prompt_chinese`` the same way.

The prompts are the published runs' (``few_shot_cot``), built from the official texts that
:mod:`.prompts` reads from the official ``inference/utils.py``: the task's instruction, the rule to
keep to the output format, the file's one example, then the record, each filled into the official
template its fields call for. The record's fields are written as Python writes them
(``str(list)``), as the official code's ``str.format_map`` does. For planning the released code would
take the plan template (it tests for a task named ``plan`` that does not exist), but the published
runs' prompts (``inferback_planning.json``) label the query as a question (the query template,
``prompt_no_input_plan``); we follow the published runs.

The two approximations (their test files were never released) are built from ``test.json``:

* ``tool_selection_approx``: the plan with every tool step's ``tool`` blanked, the sample's tools
  plus ``distractors`` tools of other samples (drawn with a seeded generator from the record's
  index, so the same every time), shuffled; the gold is each tool step's tool name.
* ``tool_creation_awareness_approx``: the sample's tools with each one dropped with probability
  1/2 (seeded; at least one tool stays when there are two or more), plus ``distractors`` unrelated
  tools; the gold is ``"1"`` for a tool step whose tool was dropped, else ``"0"``.

Neither is the paper's distractor set; their numbers are not comparable with the paper's.
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kg_store.digest import file_sha256

from ...core.data import data_file, read_jsonl
from .files import APPROXIMATED, TASKS, language_root, test_set_path
from .prompts import run_prompts

__all__ = ["Record", "build_prompt", "call_name", "example", "load_records", "tool_steps"]

@dataclass
class Record:
    """One task of one UltraTool task file (fields as in the file)."""

    id: str
    task: str
    data: dict[str, Any]
    meta: dict[str, Any] = field(default_factory=dict)
    language: str = "en"  # the test set it comes from: en (English-dataset) or zh (Chinese-dataset)

    @property
    def reference(self) -> Any:
        return self.data["reference"]

    @property
    def question(self) -> str:
        return str(self.data.get("question") or self.data.get("input") or "")


@functools.lru_cache(maxsize=8)
def _parsed_records(path: Path, sha256: str) -> tuple[dict[str, Any], ...]:
    return tuple(read_jsonl(path))


def _file_records(dest: str) -> tuple[dict[str, Any], ...]:
    """The rows of a test-set file, kept per process and version of its bytes (its
    :func:`~kg_store.digest.file_sha256`; a load again with the derived cache warm takes ~30 ms)."""
    path = data_file(*dest.split("/"))
    return _parsed_records(path, file_sha256(path))


def call_name(call: str) -> str:
    """The tool name of a gold call string of ``test.json`` (``"file_write(file_path=...)"``)."""
    return call.split("(", 1)[0].strip()


def _is_call(tool: Any) -> bool:
    return isinstance(tool, str) and "(" in tool and tool not in ("null", "No tool required")


def _plan_input(plan: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """The plan as the task files write it (a tool step has ``"tool": ""``) and the tool steps."""
    steps: list[dict[str, Any]] = []
    calls: list[tuple[str, str]] = []
    for s in plan:
        if _is_call(s.get("tool")):
            steps.append({"step": s["step"], "tool": ""})
            calls.append((s["step"], call_name(s["tool"])))
        else:
            steps.append({"step": s["step"]})
    return steps, calls


def _approx_record(index: int, raw: Mapping[str, Any], pool: list[dict[str, Any]], task: str, distractors: int) -> dict[str, Any]:
    steps, calls = _plan_input(raw["plan"])
    tools = list(raw["tools"])
    own = {t["name"] for t in tools}
    rng = random.Random(f"ultratool:{task}:{index}")
    others = [t for t in pool if t["name"] not in own]
    picked: list[dict[str, Any]] = []
    seen: set[str] = set()
    while others and len(picked) < distractors:
        t = others[rng.randrange(len(others))]
        if t["name"] not in seen:
            seen.add(t["name"])
            picked.append(t)
        if len(seen) >= len({o["name"] for o in others}):
            break
    if task == "tool_selection_approx":
        toolset = tools + picked
        rng.shuffle(toolset)
        reference = [{"step": step, "tool": name} for step, name in calls]
        return {"input": steps, "toolset": toolset, "reference": reference}
    kept = [t for t in tools if rng.random() >= 0.5]
    if not kept and len(tools) >= 2:
        kept = [tools[rng.randrange(len(tools))]]
    names = {t["name"] for t in kept}
    toolset = kept + picked
    rng.shuffle(toolset)
    reference = [{"step": step, "tool": "0" if name in names else "1"} for step, name in calls]
    return {"input": steps, "toolset": toolset, "reference": reference}


def load_records(task: str, *, distractors: int = 3, language: str = "en") -> list[Record]:
    """The task's records of a language's test set in file order (ids ``"0"``...). Approximated
    tasks are built from ``test.json`` (see the module docstring)."""
    if task not in TASKS:
        raise ValueError(f"ultratool has no task {task!r}; available: {', '.join(TASKS)}")
    rows = _file_records(test_set_path(task, language))
    if task not in APPROXIMATED:
        return [Record(str(i), task, dict(r), language=language) for i, r in enumerate(rows)]
    pool: dict[str, dict[str, Any]] = {}
    for r in rows:
        for t in r["tools"]:
            pool.setdefault(t["name"], t)
    tools = list(pool.values())
    out = []
    for i, r in enumerate(rows):
        data = _approx_record(i, r, tools, task, distractors)
        if data["reference"]:  # a query without a tool step has nothing to select or create
            out.append(Record(str(i), task, data, {"domain": r.get("domain")}, language=language))
    return out


def example(task: str, language: str = "en") -> dict[str, Any]:
    """The task's one few-shot example (``example/<task>.json`` of the language's test set)."""
    name = task.removesuffix("_approx")
    root = language_root(language).split("/")
    data: dict[str, Any] = json.loads(data_file(*root, "example", f"{name}.json").read_text(encoding="utf-8"))
    return data


def _template_key(task: str, data: Mapping[str, Any]) -> str:
    """The official template of a record: chosen from the record's fields, as
    ``generate_prompt_english`` chooses it, except that planning takes the query template (see the
    module docstring)."""
    if data.get("question", "") != "" and data.get("toolset", "") != "":
        return "prompt_input_tool"
    if data.get("toolset", "") != "":
        return "prompt_input"
    return "prompt_no_input_plan" if task == "planning" else "prompt_no_input"


def build_prompt(record: Record) -> str:
    """The published runs' ``few_shot_cot`` prompt for ``record``, from the official texts
    (:func:`.prompts.run_prompts`; see the module docstring)."""
    task = record.task.removesuffix("_approx")
    official = run_prompts(record.language)
    key = _template_key(task, record.data)
    return official.few_shot.fill({
        "user_prompt": official.instructions[task],
        "example": official.example_templates[key].format_map(example(record.task, record.language)),
        "user": official.record_templates[key].format_map(record.data),
    })


def tool_steps(record: Record) -> list[dict[str, Any]]:
    """Tool usage: the gold tool steps in plan order (``step``, ``tool``, ``param``)."""
    return [dict(r) for r in record.reference]
