"""The ``replay`` adapter (``--model replay:FILE``): plays the assistant turns of recorded
conversations again, so that a run made elsewhere goes through this project's server and scorer
and can be compared with it sample by sample.

``FILE`` is JSON Lines; each record holds one conversation under ``gen_convs``, ``conversations``
or ``messages``: a list of turns ``{"role": "user", "content": ...}``, ``{"role": "assistant",
"function_call": [{"name", "arguments"}, ...]}`` (one turn of parallel calls), ``{"role":
"assistant", "tool_calls": [{"function": {"name", "arguments"}}]}`` (the OpenAI form) or
``{"role": "assistant", "content": text}``; other roles are skipped. An episode replays the
conversation whose first user message is its own; its n-th request gets the n-th assistant turn.
A recorded tool name the episode does not offer is sent as the offered name it becomes with every
character outside ``[A-Za-z0-9_-]`` replaced by ``-`` (what tool-calling APIs accept), if there is
one. A request beyond the recorded turns, or for a conversation the file does not hold, is a
``bad_request`` error (the episode fails, and says why: for a conversation it does not hold, the user
message it looked for and the closest one the file holds, with its line).

``${NAME}`` in the file's strings (user messages, arguments, texts) is replaced by the adapter
option ``variables`` (``--model-arg 'variables={"REPO": "/tmp/r"}'``), else the environment variable
``NAME`` when the option ``allow_env`` lists it (``--model-arg 'allow_env=["REPO"]'``; no other is
read, and one that looks like a secret's is refused), as in a task file; an undefined one is an
error naming the file and line. So a scripted model for a task file with variables can be
committed next to it.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

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
from client.runs import iter_jsonl
from tool_specs import UndefinedVariable, environment_value, expand_value

from .base import DEFAULT_PARAMS, GenerateParams
from .errors import ModelError

__all__ = ["ReplayAdapter"]

_INVALID = re.compile(r"[^A-Za-z0-9_-]")


_SHOWN = 160  # characters of a user message an error shows
_COMPARED = 2000  # characters of a user message compared when looking for the closest one


def _cut(text: str) -> str:
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "...")


def closest_message(wanted: str, held: Mapping[str, int]) -> tuple[str, int] | None:
    """The held first user message most like ``wanted`` (difflib's ratio over their first characters) and its
    line; None when the file holds none."""
    if not held:
        return None
    key = wanted[:_COMPARED]
    best = max(held, key=lambda m: difflib.SequenceMatcher(None, key, m[:_COMPARED], autojunk=False).ratio())
    return best, held[best]


def _load_conversations(path: Path, variables: Mapping[str, str], allowed: Collection[str],
                        lines: dict[str, int] | None = None) -> dict[str, list[dict[str, Any]]]:
    """The assistant turns of every conversation in ``path``, by its first user message (``lines``: filled
    with each one's line)."""
    out: dict[str, list[dict[str, Any]]] = {}

    def lookup(name: str) -> str | None:
        return variables[name] if name in variables else environment_value(name, os.environ, allowed)

    for n, record in iter_jsonl(path, label="replay file "):
        try:
            record = expand_value(record, lookup)
        except UndefinedVariable as exc:
            raise ValueError(f"replay file {path}: line {n}: {exc}") from None
        convs = next((record[k] for k in ("gen_convs", "conversations", "messages") if isinstance(record, dict)
                      and isinstance(record.get(k), list)), None)
        if convs is None:
            raise ValueError(f"replay file {path}: line {n} has no 'gen_convs', 'conversations' or 'messages' list")
        user = next((t.get("content") for t in convs if isinstance(t, dict) and t.get("role") == "user"), None)
        if not isinstance(user, str):
            raise ValueError(f"replay file {path}: line {n}: the conversation has no user message")
        out[user] = [t for t in convs if isinstance(t, dict) and t.get("role") == "assistant"]
        if lines is not None:
            lines.setdefault(user, n)
    return out


class ReplayAdapter:
    """Replays recorded assistant turns (see the module docstring)."""

    provider = "replay"

    def __init__(self, path: str, *, variables: Mapping[str, Any] | None = None, allow_env: Any = None, **_options: Any):
        self.path = Path(path).expanduser()
        if not self.path.is_file():
            raise ValueError(f"replay: no such file {str(self.path)!r} (use replay:PATH)")
        self.model = f"replay:{self.path.name}"
        self.name = self.model
        if variables is not None and not isinstance(variables, Mapping):
            raise ValueError("replay: the variables option is a JSON object of names to values")
        if allow_env is not None and not (isinstance(allow_env, list) and all(isinstance(n, str) for n in allow_env)):
            raise ValueError("replay: the allow_env option is a JSON list of environment variable names")
        self.lines: dict[str, int] = {}
        self.turns = _load_conversations(self.path, {str(k): str(v) for k, v in (variables or {}).items()},
                                         frozenset(allow_env or ()), self.lines)

    def _call(self, raw: dict[str, Any], offered: set[str], turn: int, i: int) -> ToolCall:
        inner = raw.get("function")
        fn: dict[str, Any] = inner if isinstance(inner, dict) else raw
        name = str(fn.get("name") or "")
        if name not in offered and _INVALID.sub("-", name)[:64] in offered:
            name = _INVALID.sub("-", name)[:64]
        args = fn.get("arguments")
        call_id = str(raw.get("id") or f"replay_{turn}_{i}")
        if isinstance(args, str):
            return ToolCall.from_raw(call_id, name, args)
        return ToolCall.from_arguments(call_id, name, dict(args or {}))

    async def complete(
        self, messages: list[Message], tools: list[ToolDef], tool_choice: ToolChoice = "auto",
        params: GenerateParams = DEFAULT_PARAMS,
    ) -> ModelResponse:
        user = next((m.text for m in messages if isinstance(m, UserMessage)), None)
        turns = self.turns.get(user or "")
        if turns is None:
            found = closest_message(user or "", self.lines)
            near = f"; the closest it holds (line {found[1]}): {_cut(found[0])}" if found else "; it holds none"
            raise ModelError("bad_request", f"{self.path.name} holds no conversation whose first user message is "
                             f"{_cut(user or '')}{near}", retryable=False, provider=self.provider, model=self.model)
        done = sum(1 for m in messages if isinstance(m, AssistantMessage))
        if done >= len(turns):
            raise ModelError("bad_request", f"the recorded conversation has only {len(turns)} assistant turn(s)",
                             retryable=False, provider=self.provider, model=self.model)
        turn = turns[done]
        offered = {t.name for t in tools}
        raw_calls = turn.get("function_call") or turn.get("tool_calls") or []
        calls = [self._call(c, offered, done, i) for i, c in enumerate(raw_calls) if isinstance(c, dict)]
        text = None if calls else (turn.get("content") if isinstance(turn.get("content"), str) else "")
        raw = {"replayed_turn": done, "turn": turn}
        return ModelResponse(text=text, tool_calls=calls, reasoning=None, usage=Usage(),
                             stop_reason="tool_calls" if calls else "end_turn", latency_s=0.0, model=self.model,
                             raw=json.loads(json.dumps(raw, default=str))).valid_unicode()

    async def aclose(self) -> None:
        return None
