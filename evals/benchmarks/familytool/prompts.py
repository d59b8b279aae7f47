"""FamilyTool's published prompts as MCP prompts (``evals serve``), and its tasks' queries.

The texts are the ones the ``kgetool`` strategy sends (:mod:`.plugin` takes them from here): step 1's instruction
(``kg_step_prompt.txt`` with the KG's relations) followed by the query as the official pipeline sends
it, and step 2's official system message (``tool_step_system.txt``) followed by the query. A query
comes from the ``query`` argument or from a task (``task_id``; on a task endpoint, that task), always
cut before the gold sub-KG the data file appends to it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from kg_store import KGStore
from server import TASK_ARGUMENT, PromptArgument, PromptError, PromptSpec

from . import data as ft

__all__ = ["KG_STEP_TEMPLATE", "TOOL_STEP_OFFICIAL", "familytool_prompts", "kg_step_system", "tool_step_system"]

# ``kg_step_prompt.txt``: the valid relations fill ``{relations}`` as ``- <relationship>NAME`` items
# joined by three spaces. It is the system message; the user message is the query up to the extra
# information (speaker tag included), as the official code sends them to API models.
KG_STEP_TEMPLATE = Path(__file__).with_name("kg_step_prompt.txt").read_text(encoding="utf-8")


def kg_step_system(relations: list[str]) -> str:
    """The paper's step-1 instruction with the KG's relations."""
    return KG_STEP_TEMPLATE.replace("{relations}", "   ".join(f"- <relationship>{r}" for r in relations))


# The step-2 system message of the official pipeline for API models (UnifiedToolHub's
# ``models/api_requester.py``, ``APIRequester.get_prompt``, at the pinned commit), verbatim in
# ``tool_step_system.txt`` (its final newline is not part of it); ``{date}`` is ``--current-date``.
TOOL_STEP_OFFICIAL = Path(__file__).with_name("tool_step_system.txt").read_text(encoding="utf-8").removesuffix("\n")


def tool_step_system(date: str) -> str:
    """The official step-2 system message for the date ``date`` (YYYY-MM-DD)."""
    return TOOL_STEP_OFFICIAL.replace("{date}", date)



_QUERY = PromptArgument("query", "The user's request, e.g. '<speak>Bob</speak> Book my mother her usual dinner.' "
                                 "(or give task_id)", required=False)


def _query(catalog: ft.FamilyToolCatalog, args: Mapping[str, str]) -> str:
    if args.get("query"):
        return args["query"].strip()
    if not args.get("task_id"):
        raise PromptError("give a query or a task_id")
    return catalog.task(args["task_id"]).official_query


def familytool_prompts(
    catalog: ft.FamilyToolCatalog, store: Callable[[], KGStore | None], current_date: str
) -> list[PromptSpec]:
    """The prompts of one FamilyTool dataset; ``store()`` is its KG (its relations fill step 1)."""
    def extraction(args: Mapping[str, str]) -> str:
        kg = store()
        relations = kg.relations() if kg is not None else []
        return kg_step_system(relations) + "\n\n" + _query(catalog, args)

    def tool_use(args: Mapping[str, str]) -> str:
        date = args.get("current_date") or current_date
        return tool_step_system(date) + "\n\n" + _query(catalog, args)

    return [
        PromptSpec(
            name="kgetool_extraction",
            title="FamilyTool KGETool step 1: KG extraction",
            description="The paper's step-1 prompt: write KG.search(start, path) calls over the KG's relations "
                        "that retrieve what a request needs.",
            render=extraction, arguments=(_QUERY, TASK_ARGUMENT),
        ),
        PromptSpec(
            name="kgetool_tool_use",
            title="FamilyTool KGETool step 2: tool use (official system message)",
            description="The official pipeline's step-2 instruction with the current date, then the request.",
            render=tool_use,
            arguments=(_QUERY, TASK_ARGUMENT, PromptArgument("current_date", f"YYYY-MM-DD (default {current_date})",
                                                     required=False)),
        ),
    ]
