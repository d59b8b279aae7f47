"""BFCL v4's agentic categories: the memory entries and their prerequisite conversations, and how
BFCL scores an agentic answer.

Data: ``BFCL_v4_memory.json`` (155 questions in five scenarios, the same for every memory backend),
``possible_answer/BFCL_v4_memory.json`` (each a list of accepted answers) and
``memory_prereq_conversation/memory_<scenario>.json`` (the conversations a model holds before the
questions, in which it stores what it learns), read out of the pinned wheel. Ids are BFCL's own for
the backend: ``memory_0-customer-0`` becomes ``memory_kv_0-customer-0`` (BFCL's
``process_memory_test_case`` does the same replacement).

Scoring is BFCL's ``_evaluate_single_agentic_entry`` with ``agentic_checker``: only the model's last
message that is not a function call is read (an FC model's step with calls decodes; a text reply
does not); none (every step called tools until the step limit, or the text was empty) is
``agentic:no_last_message``; an inference error is ``agentic:inference_error``; otherwise the entry is
right when one accepted answer, standardized (lower case, ``'`` as ``"``, the characters ``,./-_*^()``
removed), occurs between word boundaries in the standardized message (``agentic:answer_not_found``
if none does). Re-implemented here rule by rule; ``tests/evals/benchmarks/bfcl/test_bfcl_memory.py``
proves every verdict equal to BFCL's own checker's.

``memory_vector`` is read here too (its questions are memory's); it runs when its embedding model is a
local folder (:mod:`.memory_vector`). The web-search categories are scored by the same checker
(:mod:`.web_search`). Refused with ``--strategy fc``:
``format_sensitivity`` (BFCL runs it only for prompting models: it varies how calls are written as
text; its generation skips it for function-calling models, and a call over MCP is function calling).
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .data import WheelError, read_answers, read_jsonl, verified_wheel
from .files import MEMORY_SERVED, MEMORY_VECTOR

__all__ = ["SCENARIOS", "AgenticVerdict", "MemoryEntry", "Prereq", "check_answer", "read_memory", "standardize"]

SCENARIOS = ("student", "customer", "finance", "healthcare", "notetaker")  # BFCL's MEMORY_SCENARIO_NAME order
_DATA = "bfcl_eval/data/"
_STRIPPED = re.compile(r"[,./\-_*^()]")


@dataclass(frozen=True)
class Prereq:
    """One prerequisite conversation: its id (BFCL's, for the backend) and its user turns in order."""

    id: str
    scenario: str
    turns: tuple[str, ...]


@dataclass(frozen=True)
class MemoryEntry:
    """One memory question of one backend's category."""

    id: str
    category: str
    scenario: str
    question: str
    answers: tuple[str, ...]

    @property
    def backend(self) -> str:
        return self.category.removeprefix("memory_")

    @property
    def query(self) -> str:
        return self.question


@dataclass(frozen=True)
class AgenticVerdict:
    """BFCL's verdict on one agentic entry (``error_type`` is ``""`` when it is right)."""

    valid: bool
    error_type: str = ""
    message: str | None = None  # the message that was checked

    def to_dict(self) -> dict[str, Any]:
        return {"valid": self.valid, "error_type": self.error_type, "checked_message": self.message}


def standardize(text: str) -> str:
    """BFCL's ``standardize_string``: ``,./-_*^()`` removed, lower case, ``'`` as ``"``."""
    return _STRIPPED.sub("", text).lower().replace("'", '"')


def check_answer(final_message: str | None, answers: tuple[str, ...] | list[str], *, errored: bool = False) -> AgenticVerdict:
    """The verdict on an episode whose last non-call message is ``final_message`` (``None``: there is
    none, as when every step made calls or the last text was empty; an imported result's message can
    be a present but empty text, which BFCL checks and finds no answer in)."""
    if errored:
        return AgenticVerdict(False, "agentic:inference_error")
    if final_message is None:
        return AgenticVerdict(False, "agentic:no_last_message", final_message)
    said = standardize(final_message)
    for answer in answers:
        if re.search(rf"\b{re.escape(standardize(answer))}\b", said):
            return AgenticVerdict(True, "", final_message)
    return AgenticVerdict(False, "agentic:answer_not_found", final_message)


def read_memory(category: str, wheel: Path | None = None) -> tuple[list[MemoryEntry], dict[str, list[Prereq]]]:
    """A served memory category's questions (file order) and each scenario's prerequisite conversations."""
    if category not in (*MEMORY_SERVED, MEMORY_VECTOR):
        raise WheelError(f"BFCL category {category!r} is not a served memory category ({', '.join(MEMORY_SERVED)})")
    path = verified_wheel(wheel)
    where = str(path)
    with zipfile.ZipFile(path) as archive:
        rows = read_jsonl(archive, f"{_DATA}BFCL_v4_memory.json", where)
        answers = read_answers(archive, "memory", where)
        prereqs: dict[str, list[Prereq]] = {}
        for scenario in SCENARIOS:
            member = f"{_DATA}memory_prereq_conversation/memory_{scenario}.json"
            convs = []
            for row in read_jsonl(archive, member, where):
                turns = row.get("question")
                if not (isinstance(turns, list) and all(isinstance(t, list) and len(t) == 1 for t in turns)):
                    raise WheelError(f"{where}:{member}: {row['id']} is not a list of one-message user turns")
                convs.append(Prereq(row["id"].replace("memory", category), scenario,
                                    tuple(str(t[0].get("content", "")) for t in turns)))
            prereqs[scenario] = convs
    entries = []
    for row in rows:
        truth, question, scenario = answers.get(row["id"]), row.get("question"), str(row.get("scenario"))
        if not (isinstance(truth, list) and truth and all(isinstance(a, str) for a in truth)):
            raise WheelError(f"{where}: memory entry {row['id']} has no list of accepted answers")
        if scenario not in prereqs or not (isinstance(question, list) and len(question) == 1 and len(question[0]) == 1):
            raise WheelError(f"{where}: memory entry {row['id']} is not a one-question entry of a known scenario")
        entries.append(MemoryEntry(row["id"].replace("memory", category), category, scenario,
                                   str(question[0][0].get("content", "")), tuple(truth)))
    return entries, prereqs
