"""BFCL's memory categories as one :class:`~.kinds.Kind` (:class:`MemoryKind`): the endpoints
(:mod:`.memory`'s tools), and the episodes as its ``inference_multi_turn_FC`` runs them: the
prerequisite conversations of the scenario first, then the question on the memory they left.

The prerequisite phase runs once per (backend, scenario) and run, started by the first of the
scenario's questions to need it (the others wait for it; a failed phase is retried by the next).
Once per run, not per process: with ``--workers N`` the phase's final snapshot is kept in the run
directory (``bfcl_memory/<category>-<scenario>.json``, written atomically once the phase is done)
under an exclusive lock file beside it, so the workers' first questions wait for one phase rather
than each running its own; a resumed run reuses it. The file is read as any run file is: a
regular file (no link followed) of bounded size holding a snapshot of the backend's keys, else
the phase runs again.
Each conversation, in BFCL's order, gets a session of its own (a fresh backend instance loaded with
the snapshot the previous conversation left, none for the first), BFCL's memory system prompt with
the memory it dumps into context, and its user turns one after another, each run to the model's
reply without calls; a turn that reaches ``--max-turns`` ends the conversation (BFCL's force quit
after ``MAXIMUM_STEP_LIMIT`` steps: ``--max-turns 21`` is BFCL's limit). Then the snapshot is taken.
The conversations are recorded in the trace of the episode that ran them (one ``bfcl_memory_prereq``
event each: turns, calls, replies, the snapshot after), their tokens and cost counted there.

A question gets a fresh instance holding the scenario's final snapshot, the system prompt BFCL
builds (memory instruction, then BFCL's agentic answer-format prompt after a blank line; it replaces
any ``--system-prompt``) and its one user turn; its trace keeps the snapshot it started from. The
final reply is scored by :func:`.agentic.check_answer`.

With ``--strategy prompting`` the conversations and the question run as BFCL's
``inference_multi_turn_prompting`` runs them (:mod:`.prompting_turns`: BFCL's function prompt before the
memory prompt; the replies' texts decoded into calls, the results sent back as a user message).

The oracle replies "Noted." in the prerequisite turns; in a question it reads the memory once
(``archival_memory_list_keys`` for kv, ``memory_retrieve`` for rec_sum) and answers BFCL's first
accepted answer in BFCL's answer format.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import json
import os
import stat
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from client.agent import run_agent
from client.runs import EpisodeOutcome, EpisodeRecorder

from .agentic import AgenticVerdict, MemoryEntry, Prereq, check_answer, read_memory
from .files import NAME
from .memory import HIDDEN_TOOLS, LOAD_TOOL, SNAPSHOT_KEYS, SNAPSHOT_TOOL, memory_tools, read_docs
from .tools import first_by_name

if TYPE_CHECKING:
    from mcp import Client

    from tool_specs import ToolSpec

    from ...core.plugin import EpisodeEnv

__all__ = ["MemoryKind", "final_message", "oracle_answer"]

PREREQ_REPLY = "Noted."
SHARED_FOLDER = "bfcl_memory"  # in the run directory: each scenario's final snapshot, once per run
MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024
_LOCK_POLL_S = 0.2
_ORACLE_READ = {"kv": "archival_memory_list_keys", "rec_sum": "memory_retrieve", "vector": "archival_memory_retrieve_all"}


def _prompts() -> Any:
    from .wheel_code import import_module

    return import_module("bfcl_eval.constants.default_prompts")


def oracle_answer(entry: MemoryEntry) -> str:
    """BFCL's answer format holding the first accepted answer."""
    return str({"answer": entry.answers[0], "context": "from the memory of earlier conversations"})


def final_message(trace: Mapping[str, Any] | None) -> str | None:
    """The last message of the episode that is not a call: the final reply, or ``None`` when the
    model's every step made calls (it ran out of steps) or its reply was empty (BFCL reads an empty
    text as no message). An imported BFCL result carries the message BFCL's runner picks
    (``bfcl_last_message``, :func:`.results.last_message`)."""
    if trace is None:
        return None
    outcome = trace.get("outcome") or {}
    if "bfcl_last_message" in outcome:
        message = outcome["bfcl_last_message"]
        return message if isinstance(message, str) else None
    return str(trace.get("final_answer") or "") or None if outcome.get("stop") == "final_answer" else None


class _Conversation(EpisodeRecorder):
    """A recorder of its own for a prerequisite conversation that also keeps the agent's message
    list (the conversation so far), which the next user turn continues."""

    messages: list[Any]

    def model_request(self, *, messages: Any, **kw: Any) -> None:  # type: ignore[override]
        self.messages = messages  # the agent's own list: its later replies and results are appended to it
        super().model_request(messages=messages, **kw)


async def _load(session: Client, snapshot: dict[str, Any] | None) -> str:
    res = await session.call_tool(LOAD_TOOL, {"snapshot": snapshot})
    if res.is_error or res.structured_content is None:
        raise RuntimeError(f"the memory backend refused the snapshot: {res.content}")
    return str(res.structured_content["context"])


class AnsweredKind:
    """The verdicts of a kind whose entries are answered in words (memory, web search): BFCL's agentic
    checker on the episode's final message against the entry's accepted ``answers``."""

    entries: Mapping[str, Any]

    async def averdict(self, task_id: str, trace: Mapping[str, Any] | None) -> AgenticVerdict:
        return self.verdict(task_id, trace)

    def verdict(self, task_id: str, trace: Mapping[str, Any] | None) -> AgenticVerdict:
        errored = trace is None or trace.get("status") != "completed"
        return check_answer(final_message(trace), self.entries[task_id].answers, errored=errored)


class MemoryKind(AnsweredKind):
    """The memory categories' entries, endpoints (every question and every prerequisite conversation,
    each with its backend's tools), prerequisite phases and episodes for one run."""

    def __init__(self, categories: Sequence[str], name: str = NAME) -> None:
        self.name = name
        self.entries: dict[str, MemoryEntry] = {}
        self.prereqs: dict[tuple[str, str], list[Prereq]] = {}
        for category in categories:
            entries, prereqs = read_memory(category)
            self.entries.update((e.id, e) for e in entries)
            self.prereqs.update(((category, s), convs) for s, convs in prereqs.items())
        self._backend = {e.id: e.backend for e in self.entries.values()}  # endpoint id -> its backend
        self._backend.update((p.id, c.removeprefix("memory_")) for (c, _), convs in self.prereqs.items() for p in convs)
        self._docs: dict[str, list[dict[str, Any]]] = {}
        self._snapshots: dict[tuple[str, str], dict[str, Any] | None] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}

    def endpoints(self) -> list[str]:
        """Every endpoint id: the questions and the prerequisite conversations."""
        return list(self._backend)

    def serve(self) -> None:
        # read now, with the wheel checked: a listing never reads the wheel file again
        self._docs = {b: read_docs(b) for b in dict.fromkeys(self._backend.values())}
        from .backend_host import prestart

        prestart(memory=True)  # the holders' zygote imports BFCL's modules while the rest starts

    def task_tools(self, endpoint: str) -> list[ToolSpec]:
        backend = self._backend[endpoint]
        return memory_tools(backend, self._docs[backend], endpoint)

    def playground_tools(self) -> list[ToolSpec]:
        return first_by_name(spec for backend, docs in self._docs.items() for spec in memory_tools(backend, docs)
                             if spec.name not in HIDDEN_TOOLS)

    def _system(self, category: str, scenario: str, memory_text: str) -> str:
        p = _prompts()
        template = p.MEMORY_BACKEND_INSTRUCTION_UNIFIED if "rec_sum" in category else p.MEMORY_BACKEND_INSTRUCTION_CORE_ARCHIVAL
        return str(template.format(scenario_setting=p.MEMORY_AGENT_SETTINGS[scenario], memory_content=memory_text))

    async def _conversation(self, env: EpisodeEnv, category: str, conv: Prereq, snapshot: dict[str, Any] | None,
                            recorder: EpisodeRecorder) -> dict[str, Any] | None:
        sub = _Conversation(conv.id)
        async with env.session(self.name, conv.id) as session:
            system = self._system(category, conv.scenario, await _load(session, snapshot))
            if env.opts.strategy == "prompting":  # BFCL's inference_multi_turn_prompting (.prompting_turns)
                turns = await self._prompting_conversation(env, session, category, conv, system, sub)
            else:
                turns = await self._fc_conversation(env, session, conv, system, sub)
            res = await session.call_tool(SNAPSHOT_TOOL, {})
            if res.is_error or res.structured_content is None:
                raise RuntimeError(f"{conv.id}: the memory snapshot could not be read: {res.content}")
            after: dict[str, Any] = res.structured_content["snapshot"]
        recorder.totals.add(sub.totals)  # the conversation's tokens and cost count in this episode
        recorder.adopt_usage(sub.totals.total_tokens, sub.totals.cost_usd)  # and in the run's budget
        recorder.event("bfcl_memory_prereq", id=conv.id, turns=turns, snapshot=after)
        return after

    async def _fc_conversation(self, env: EpisodeEnv, session: Any, conv: Prereq, system: str,
                               sub: _Conversation) -> list[dict[str, Any]]:
        history: list[Any] = []
        turns: list[dict[str, Any]] = []
        for number, text in enumerate(conv.turns):
            cfg = dataclasses.replace(env.agent_cfg, system_prompt=None if history else system)
            outcome = await run_agent(env.model(conv.id, [], final_answer=PREREQ_REPLY), session, text, sub, cfg, visible=lambda n: n not in HIDDEN_TOOLS, history=history)
            history = list(sub.messages)
            turns.append({"turn": number, "calls": outcome.data.get("calls", []), "reply": outcome.final_answer,
                          "stop": outcome.data.get("stop")})
            if outcome.data.get("stop") == "max_turns":
                break  # BFCL's force quit ends the conversation
        return turns

    def _hinted(self, backend: str, category: str) -> list[dict[str, Any]]:
        """The backend's docs as BFCL's loader gives them to a prompting handler (its Python hint added)."""
        from .prompting_turns import hinted_docs

        return hinted_docs(self._docs.get(backend) or read_docs(backend), category)

    async def _prompting_conversation(self, env: EpisodeEnv, session: Any, category: str, conv: Prereq, system: str,
                                      recorder: EpisodeRecorder) -> list[dict[str, Any]]:
        """A prerequisite conversation in BFCL's prompting mode: BFCL's function prompt before the memory
        system prompt, each user turn run to a reply that is no call (the oracle says "Done.")."""
        from .prompting_turns import run_prompting_turns, scripted

        model, script = scripted(env, [], conv.id)
        docs = self._hinted(category.removeprefix("memory_"), category)
        done = await run_prompting_turns(model, session, [{"role": "system", "content": system},
                                                          {"role": "user", "content": conv.turns[0]}],
                                         conv.turns[1:], docs, conv.id, recorder, env.agent_cfg.params,
                                         hidden=HIDDEN_TOOLS, script=script)
        return [{"turn": n, "calls": t.calls, "reply": t.last_text, "stop": "max_turns" if t.force_quit else
                 "final_answer", "bfcl_result": t.texts} for n, t in enumerate(done)]

    async def _prompting_question(self, env: EpisodeEnv, session: Any, entry: MemoryEntry, system: str,
                                  recorder: EpisodeRecorder) -> EpisodeOutcome:
        """A question in BFCL's prompting mode (:mod:`.prompting_turns`): the oracle's replies are a call
        that reads the memory, written as Python, then the answer (which BFCL's decoder cannot read as calls)."""
        from .prompting_turns import run_prompting_turns, scripted

        model, script = scripted(env, [[f"[{_ORACLE_READ[entry.backend]}()]", oracle_answer(entry)]], entry.id)
        docs = self._hinted(entry.backend, entry.category)
        turn, *_ = await run_prompting_turns(model, session, [{"role": "system", "content": system},
                                                              {"role": "user", "content": entry.question}],
                                             [], docs, entry.id, recorder, env.agent_cfg.params,
                                             hidden=HIDDEN_TOOLS, script=script)
        return EpisodeOutcome(final_answer=recorder.answer, data={
            "calls": turn.calls, "stop": "max_turns" if turn.force_quit else "final_answer",
            "bfcl_result": [turn.texts], "bfcl_last_message": turn.last_text or None, "underscore_to_dot": False})

    async def snapshot(self, env: EpisodeEnv, category: str, scenario: str,
                       recorder: EpisodeRecorder) -> tuple[dict[str, Any] | None, bool]:
        """The scenario's final snapshot (running its prerequisite phase if no episode of the run
        has yet, in this process or another worker's), and whether this call ran it."""
        key = (category, scenario)
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            if key in self._snapshots:
                return self._snapshots[key], False
            folder = getattr(env.opts, "run_dir", None)
            shared = Path(folder) / SHARED_FOLDER / f"{category}-{scenario}.json" if folder is not None else None
            async with _file_lock(shared):
                found = _read_shared(shared, category) if shared is not None else _MISSING
                if found is not _MISSING:
                    self._snapshots[key] = found
                    return found, False
                snapshot: dict[str, Any] | None = None
                for conv in self.prereqs[key]:
                    snapshot = await self._conversation(env, category, conv, snapshot, recorder)
                if shared is not None:
                    _write_shared(shared, snapshot)
            self._snapshots[key] = snapshot
            return snapshot, True

    async def episode(self, env: EpisodeEnv, task_id: str, recorder: EpisodeRecorder) -> EpisodeOutcome:
        entry = self.entries[task_id]
        snapshot, ran = await self.snapshot(env, entry.category, entry.scenario, recorder)
        async with env.session(self.name, task_id) as session:
            memory_text = await _load(session, snapshot)
            system = (self._system(entry.category, entry.scenario, memory_text) + "\n\n"
                      + str(_prompts().ADDITIONAL_SYSTEM_PROMPT_FOR_AGENTIC_RESPONSE_FORMAT))
            if env.opts.strategy == "prompting":
                outcome = await self._prompting_question(env, session, entry, system, recorder)
                outcome.data.update(category=entry.category, memory={"scenario": entry.scenario, "snapshot": snapshot,
                                                                      "ran_prerequisites": ran})
                return outcome
            model = env.model(task_id, [[{"name": _ORACLE_READ[entry.backend], "arguments": {}}]],
                              final_answer=oracle_answer(entry))
            outcome = await run_agent(model, session, entry.question, recorder,
                                      dataclasses.replace(env.agent_cfg, system_prompt=system),
                                      visible=lambda n: n not in HIDDEN_TOOLS)
        outcome.data.update(category=entry.category, memory={"scenario": entry.scenario, "snapshot": snapshot,
                                                              "ran_prerequisites": ran})
        return outcome

    def view(self, task_id: str, trace: Mapping[str, Any] | None,
             score: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        """``evals view``: the question's accepted answers beside its final answer, the verdict, the
        prerequisite conversations (:mod:`.memory_view`)."""
        from .memory_view import memory_episode_sections

        verdict = self.verdict(task_id, trace) if trace is not None else None
        prereqs = {p.id: p for convs in self.prereqs.values() for p in convs}
        return memory_episode_sections(self.entries[task_id], prereqs, trace, verdict)


_MISSING: Any = object()


@contextlib.asynccontextmanager
async def _file_lock(path: Path | None) -> AsyncIterator[None]:
    """An exclusive lock on ``path`` + ``.lock`` across processes (none without a path), waited
    for without blocking the event loop."""
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                await asyncio.sleep(_LOCK_POLL_S)
        yield
    finally:
        os.close(fd)  # releases the lock


def _read_shared(path: Path, category: str) -> Any:
    """The snapshot a phase of this run left (``None``: an empty memory), or ``_MISSING``."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return _MISSING
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_SNAPSHOT_BYTES:
            return _MISSING
        raw = f.read(MAX_SNAPSHOT_BYTES + 1)
    try:
        value = json.loads(raw)
    except ValueError:
        return _MISSING
    snapshot = value.get("snapshot", _MISSING) if isinstance(value, dict) else _MISSING
    keys = SNAPSHOT_KEYS[category.removeprefix("memory_")]
    if snapshot is None or (isinstance(snapshot, dict) and set(keys) <= set(snapshot)):
        return snapshot
    return _MISSING


def _write_shared(path: Path, snapshot: dict[str, Any] | None) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)  # a leftover of a killed run of this pid (or a link someone put there)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump({"snapshot": snapshot}, f, ensure_ascii=False)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
