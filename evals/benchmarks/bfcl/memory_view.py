"""A BFCL memory episode in ``evals view``: the accepted answers beside the final answer, BFCL's
verdict with its error type, the memory the question started from, and the scenario's prerequisite
conversations (collapsed: one section each, from the ``bfcl_memory_prereq`` events of the episode
that ran them; the scenario's other questions say where they ran).

Everything is text (the viewer never renders HTML from data). The verdict is
:func:`.agentic.check_answer`'s, recomputed from the trace (the same as the scored one).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...core.episode_view import answer_section, table_section, text_section
from .agentic import AgenticVerdict, MemoryEntry, Prereq

__all__ = ["MEMORY_ERRORS", "agentic_sections", "memory_episode_sections", "prereq_text"]

HOW = "any one, standardized (lower case, ,./-_*^() removed), between word boundaries"
MEMORY_ERRORS = {
    "": "an accepted answer occurs in the final message",
    "agentic:answer_not_found": "no accepted answer occurs, standardized, between word boundaries in the final message",
    "agentic:no_last_message": "no final message: every step made calls (to --max-turns), or the text was empty",
    "agentic:inference_error": "the episode failed: BFCL scores an inference error as wrong",
}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1)


def _final(trace: Mapping[str, Any] | None, verdict: AgenticVerdict | None) -> str | None:
    if trace is None:
        return None
    if verdict is not None and verdict.error_type == "agentic:no_last_message":
        outcome = trace.get("outcome") or {}
        if "bfcl_last_message" in outcome:  # an imported BFCL result
            return "(none: no step without calls, or the last such step was empty)"
        return "(an empty text)" if outcome.get("stop") == "final_answer" else "(none: every step made calls)"
    if verdict is not None and verdict.error_type == "agentic:inference_error":
        return f"(none: the episode {trace.get('status') or 'failed'})"
    return str(trace.get("final_answer") or "")


def prereq_text(event: Mapping[str, Any], conv: Prereq | None) -> str:
    """One prerequisite conversation as text: each user turn, the calls and the reply it got, and the
    memory it left."""
    lines: list[str] = []
    for t in event.get("turns") or []:
        if not isinstance(t, Mapping):
            continue
        n = t.get("turn")
        said = conv.turns[n] if conv is not None and isinstance(n, int) and 0 <= n < len(conv.turns) else "(not in the data)"
        lines.append(f"user {n + 1 if isinstance(n, int) else '?'}: {said}")
        for c in t.get("calls") or []:
            if isinstance(c, Mapping):
                args = c.get("arguments") if c.get("arguments") is not None else c.get("raw_arguments")
                flag = "  (error)" if c.get("is_error") else ""
                lines.append(f"  -> {c.get('name')} {json.dumps(args, ensure_ascii=False)}{flag}")
        reply = t.get("reply")
        lines.append(f"model: {reply}" if reply is not None else f"model: (no reply: {t.get('stop')})")
    lines += ["", "memory after the conversation:", _json(event.get("snapshot"))]
    return "\n".join(lines)


def agentic_sections(answers: tuple[str, ...], trace: Mapping[str, Any] | None,
                     verdict: AgenticVerdict | None) -> list[dict[str, Any]]:
    """An agentic entry's (memory, web search) accepted answers beside its final message, and BFCL's verdict."""
    correct = verdict.valid if verdict is not None and trace is not None else None
    error = verdict.error_type if verdict is not None and trace is not None else None
    sections = [answer_section(list(answers), HOW, _final(trace, verdict), correct,
                               note="BFCL's agentic_checker reads only the last message that is not a call.")]
    if error is not None:
        sections.append(table_section("BFCL's verdict", ["verdict", "error type", "what it means"],
                                      [["right" if correct else "wrong", error or "(none)", MEMORY_ERRORS.get(error, "")]]))
    return sections


def memory_episode_sections(entry: MemoryEntry, prereqs: Mapping[str, Prereq], trace: Mapping[str, Any] | None,
                            verdict: AgenticVerdict | None) -> list[dict[str, Any]]:
    """The sections of one memory question's episode (``verdict``: None when it never ran)."""
    sections = agentic_sections(entry.answers, trace, verdict)
    memory = ((trace or {}).get("outcome") or {}).get("memory") or {}
    if "snapshot" in memory:
        sections.append(text_section("Memory the question started from", _json(memory["snapshot"]),
                                     note=f"scenario {entry.scenario}: what its prerequisite conversations left",
                                     collapsed=True))
    events = [e for e in (trace or {}).get("events") or [] if isinstance(e, Mapping) and e.get("kind") == "bfcl_memory_prereq"]
    for i, e in enumerate(events, 1):
        sections.append(text_section(f"Prerequisite conversation {i} of {len(events)}: {e.get('id')}",
                                     prereq_text(e, prereqs.get(str(e.get("id")))), collapsed=True))
    if trace is not None and trace.get("imported_from"):
        sections.append(text_section("BFCL's result, as imported", _json((trace.get("outcome") or {}).get("bfcl_result")),
                                     note=f"from {trace['imported_from']}: the question's turn, each step the "
                                     "model's calls or its text", collapsed=True))
    elif trace is not None and not events:
        sections.append(text_section(
            "Prerequisite conversations", f"The {entry.scenario} scenario's prerequisite conversations ran once in this "
            "run, in the trace of the first of its questions to start (its outcome has memory.ran_prerequisites "
            "true); this question started from the memory they left."))
    return sections
