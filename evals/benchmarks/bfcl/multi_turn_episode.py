"""A multi-turn episode as BFCL's FC inference drives one, and how the viewer shows it; with the
serving and the checker, the multi-turn entries as one :class:`~.kinds.Kind` (:class:`MultiTurnKind`).

The user turns are sent one after another in one conversation (each turn's ``run_agent`` gets the
earlier turns as its history). Within a turn the model answers, its calls run on the session's
backends and their results go back, until it answers without a call (the turn ends), a response's
call has arguments that are not JSON (BFCL cannot decode the step: the turn ends), or it has
answered with calls more than BFCL's step limit times (:func:`.multi_turn.step_limit`; the
episode ends there: BFCL's "force-terminated"). In a held-out function's turn
(``multi_turn_miss_func``) the held-out functions are shown from then on, and the user says
BFCL's :func:`.multi_turn.added_functions_prompt`.

Two differences from BFCL's loop, neither touching the score (scoring runs the recorded calls again
on fresh instances, :mod:`.multi_turn_checker`): in a response with an undecodable call the other
calls have already run live (BFCL runs none of them); a call to a function not shown yet is
answered as an unknown tool (BFCL would run it).

The oracle (:class:`MultiTurnOracle`) answers each turn with that turn's ground-truth calls in one
response, then "Done.". One entry's ground truth (``multi_turn_miss_func_49``, turn 1) calls
``tail``, which that entry holds out until turn 3: the oracle makes the call all the same; it is
answered as an unknown tool live, recorded, and scored as BFCL scores it (its checker runs every
decoded call, shown or not).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from client.adapters.base import DEFAULT_PARAMS, GenerateParams
from client.agent import run_agent
from client.messages import (
    AssistantMessage,
    Message,
    ModelResponse,
    ToolCall,
    ToolChoice,
    ToolDef,
    Usage,
    UserMessage,
)
from client.runs import EpisodeOutcome
from kg_store.triples import gc_paused

from ...core.episode_view import table_section, text_section
from .backends import backend_tool
from .checker import Verdict
from .files import NAME
from .multi_turn import MultiTurnEntry, added_functions_prompt, gold_steps, load_multi_turn, step_limit
from .multi_turn_checker import acheck_multi_turn, check_multi_turn
from .tools import first_by_name

if TYPE_CHECKING:
    from client.runs import EpisodeRecorder
    from tool_specs import ToolSpec

    from ...core.plugin import EpisodeEnv

__all__ = ["MultiTurnKind", "MultiTurnOracle", "multi_turn_view", "response_steps", "run_multi_turn", "turns_from_trace"]


class MultiTurnOracle:
    """A scripted model for one multi-turn entry: in user turn ``turn`` (set by the episode), its
    first response makes that turn's ground-truth calls (none for an empty turn), the next says "Done."."""

    provider = "oracle"

    def __init__(self, steps: list[list[dict[str, Any]]], known: set[str], *, task_id: str = "") -> None:
        self.steps = steps
        self.known = known  # the entry's functions, held-out ones too
        self.turn = 0
        self.model = self.name = "oracle"
        self.task_id = task_id

    async def complete(self, messages: list[Message], tools: list[ToolDef], tool_choice: ToolChoice = "auto",
                       params: GenerateParams = DEFAULT_PARAMS) -> ModelResponse:
        last_user = max((i for i, m in enumerate(messages) if isinstance(m, UserMessage)), default=-1)
        answered = any(isinstance(m, AssistantMessage) for m in messages[last_user + 1:])
        step = self.steps[self.turn] if not answered and self.turn < len(self.steps) else []
        missing = [c["name"] for c in step if c["name"] not in self.known]
        if missing:  # a gold call to no function of the entry: the harness is wrong, say so loudly
            raise RuntimeError(f"oracle: gold tool(s) {missing} are no function of {self.task_id!r}")
        calls = [ToolCall.from_arguments(f"oracle_{self.turn}_{i}", c["name"], dict(c["arguments"]))
                 for i, c in enumerate(step)]
        text = None if calls else "Done."
        raw = {"text": text, "tool_calls": [c.to_dict() for c in calls]}
        return ModelResponse(text=text, tool_calls=calls, reasoning=None, usage=Usage(),
                             stop_reason="tool_calls" if calls else "end_turn", latency_s=0.0, model="oracle", raw=raw)

    async def aclose(self) -> None:
        return None


class _ListedOnce:
    """An episode's MCP session that lists its tools once: ``run_agent`` lists them for each user turn,
    and an entry's endpoint offers the same tools all along (held-out functions are listed from the
    start and only shown from their turn on). Everything else goes to the session."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self._pages: dict[str | None, Any] = {}

    async def list_tools(self, cursor: str | None = None) -> Any:
        if cursor not in self._pages:
            self._pages[cursor] = await self._session.list_tools(cursor=cursor)
        return self._pages[cursor]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


def response_steps(calls: Sequence[Mapping[str, Any]]) -> list[list[dict[str, Any]]]:
    """A run_agent call's recorded calls grouped by model response, in order."""
    out: dict[int, list[dict[str, Any]]] = {}
    for c in calls:
        out.setdefault(int(c.get("turn", 0)), []).append(
            {"name": c.get("name"), "arguments": c.get("arguments") if isinstance(c.get("arguments"), dict) else None})
    return [out[k] for k in sorted(out)]


async def run_multi_turn(entry: MultiTurnEntry, env: EpisodeEnv, recorder: EpisodeRecorder, benchmark: str) -> EpisodeOutcome:
    """One multi-turn episode (see the module docstring); the outcome's ``turns`` holds, per user
    turn, the model's responses with calls, each a list of ``{"name", "arguments"}``."""
    limit = step_limit()
    cfg = dataclasses.replace(env.agent_cfg, max_turns=limit + 1)
    known = {str(d["name"]) for d in entry.all_functions()}
    oracle = MultiTurnOracle(gold_steps(entry), known, task_id=entry.id) if env.shared is None else None
    model: Any = env.shared if oracle is None else env.wrap(oracle)
    shown = {str(d["name"]) for d in entry.functions}
    conversation: list[Message] = []
    turns: list[list[list[dict[str, Any]]]] = []
    flat: list[dict[str, Any]] = []
    force_quit = False

    async def end_if_undecodable(turn: int, calls: list[ToolCall]) -> bool:
        return any(c.arguments is None for c in calls)

    async with env.session(benchmark, entry.id) as opened:
        session: Any = _ListedOnce(opened)
        for index, messages in enumerate(entry.turns):
            texts = [str(m.get("content", "")) for m in messages]
            if index in entry.missed:
                shown |= {str(d["name"]) for d in entry.missed[index]}
                texts = [added_functions_prompt()]
            if not texts:
                raise ValueError(f"BFCL entry {entry.id}: turn {index} has no user message")
            if oracle is not None:
                oracle.turn = index
            recorder.note(f"BFCL user turn {index}", user_turn=index)
            conversation.extend(UserMessage(t) for t in texts[:-1])
            now = frozenset(shown)
            out = await run_agent(model, session, texts[-1], recorder, cfg,
                                  visible=lambda name, now=now: name in now,  # type: ignore[misc]
                                  on_turn=end_if_undecodable, history=list(conversation), transcript=conversation)
            calls = out.data.get("calls") or []
            turns.append(response_steps(calls))
            flat.extend({**c, "user_turn": index} for c in calls)
            if out.data.get("stop") == "max_turns":
                force_quit = True
                break
    return EpisodeOutcome(data={"category": entry.category, "turns": turns, "calls": flat, "force_quit": force_quit})


def turns_from_trace(trace: Mapping[str, Any] | None) -> list[list[list[dict[str, Any]]]] | None:
    """The recorded turns of a completed episode; ``None`` for a failed or missing one."""
    if trace is None or trace.get("status") != "completed":
        return None
    turns = (trace.get("outcome") or {}).get("turns")
    return turns if isinstance(turns, list) else None


def _calls_text(calls: Sequence[Mapping[str, Any]]) -> str:
    from .backends import call_text

    return "; ".join(call_text(str(c.get("name")), c["arguments"]) if isinstance(c.get("arguments"), dict)
                     else f"{c.get('name')}(<arguments not JSON>)" for c in calls) or "(none)"


def multi_turn_view(entry: MultiTurnEntry, trace: Mapping[str, Any] | None,
                    verdict: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The viewer's sections: each turn's user message, the model's calls and the ground truth's,
    and, for a failed entry, the verdict and the failing turn's state differences or missing results."""
    turns = turns_from_trace(trace) or []
    rows = []
    for index, gold in enumerate(entry.ground_truth):
        said = (added_functions_prompt() if index in entry.missed
                else " ".join(str(m.get("content", "")) for m in entry.turns[index]))
        made = turns[index] if index < len(turns) else None
        rows.append([index, said, " | ".join(_calls_text(s) for s in made) if made else "(none)",
                     "; ".join(gold) or "(none)"])
    sections = [table_section("Turns: the model's calls beside the ground truth's", ["turn", "user", "model", "gold"],
                              rows, note="each | separates the model's responses within a turn")]
    if verdict is not None and not verdict.get("valid", True):
        details = verdict.get("details") or {}
        head = f"{verdict.get('error_type')}: {verdict.get('error')}"
        sections.append(text_section("Verdict", head, note=f"first failing turn: {verdict.get('turn')}"))
        differences = details.get("differences") or {}
        if differences:
            from .state_paths import differing_paths

            sections.append(table_section(
                f"State differences after turn {verdict.get('turn')} ({details.get('class')})",
                ["path", "model", "ground truth"],
                [[p, a, b] for k, v in differences.items()
                 for p, a, b in differing_paths(v.get("model"), v.get("ground_truth"), str(k))],
                note="only the paths whose values differ (module state_paths)"))
        if details.get("missing_items"):
            sections.append(table_section("Ground-truth results the model's calls never produced", ["result"],
                                          [[m] for m in details["missing_items"]]))
    return sections




class MultiTurnKind:
    """The multi-turn entries of the selected categories: an entry's endpoint offers all its functions
    (held-out ones too) as tools running on the session's own backend instances (:mod:`.backends`)."""

    def __init__(self, categories: Sequence[str], name: str = NAME) -> None:
        self.name = name
        with gc_paused():  # about 50,000 containers, no cycle: a full collection here walked them all (70 ms)
            self.entries = {e.id: e for e in load_multi_turn(categories)}
        self._specs: dict[str, list[ToolSpec]] = {}

    def endpoints(self) -> list[str]:
        return list(self.entries)

    def serve(self) -> None:
        from .backend_host import prestart

        prestart()  # the holders' zygote imports BFCL's modules while the rest starts

    def task_tools(self, endpoint: str) -> list[ToolSpec]:
        if endpoint not in self._specs:
            entry = self.entries[endpoint]
            self._specs[endpoint] = [backend_tool(doc, endpoint, entry.make_op()) for doc in entry.all_functions()]
        return list(self._specs[endpoint])

    def playground_tools(self) -> list[ToolSpec]:
        return first_by_name(spec for task_id in self.entries for spec in self.task_tools(task_id))

    async def episode(self, env: EpisodeEnv, task_id: str, recorder: EpisodeRecorder) -> EpisodeOutcome:
        if env.opts.strategy == "prompting":
            from .prompting_turns import run_multi_turn_prompting

            return await run_multi_turn_prompting(self.entries[task_id], env, recorder, self.name)
        return await run_multi_turn(self.entries[task_id], env, recorder, self.name)

    def verdict(self, task_id: str, trace: Mapping[str, Any] | None) -> Verdict:
        return check_multi_turn(self.entries[task_id], turns_from_trace(trace))

    async def averdict(self, task_id: str, trace: Mapping[str, Any] | None) -> Verdict:
        """The verdict; concurrent scorings' replays go to the holder together (:func:`.acheck_multi_turn`)."""
        return await acheck_multi_turn(self.entries[task_id], turns_from_trace(trace))

    def view(self, task_id: str, trace: Mapping[str, Any] | None,
             score: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        verdict = (((score or {}).get("score") or {}).get("details") or {}).get("verdict")
        return multi_turn_view(self.entries[task_id], trace, verdict)
