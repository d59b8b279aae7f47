"""BFCL's prompting mode for the entries of several steps (``--strategy prompting``): multi-turn, memory (its
prerequisite conversations and its questions) and web search, as BFCL's ``inference_multi_turn_prompting``
runs a prompting model (BFCL runs all three through it), over MCP.

* **The prompt.** The entry's functions (its classes' docs with BFCL's Python hint, the held-out ones of
  ``multi_turn_miss_func`` left out) are written into a system prompt before the first turn's messages by
  BFCL's own ``system_prompt_pre_processing_chat_model`` (imported from the wheel, as :mod:`.prompting`
  does for single-turn entries); the model is sent no tools. A held-out turn's user message is BFCL's
  ``DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_PROMPTING`` holding the held-out docs as BFCL's loader
  leaves them (without the hint: BFCL moves them out before adding it).
* **A step.** The model's text is decoded by BFCL's own ``default_decode_execute_prompting`` (the generic
  prompting handlers' ``decode_execute``). When that raises, or gives no call, the user turn ends (the text
  stays in the turn's result, as BFCL records it). Otherwise each decoded call runs over MCP on the
  session's backends (its arguments as BFCL's ``default_decode_ast_prompting`` reads them), and the results
  go back as one user message written by BFCL's ``format_execution_results_prompting``. After more than
  BFCL's step limit of such steps in one turn the episode ends (BFCL's force quit).
* **What is kept.** Per user turn, every reply's text (``bfcl_result``: what BFCL's handler writes into its
  result file, so ``evals export`` writes it as it is); per turn the steps that decoded to calls, each call
  with BFCL's execution text (``turns``, what :mod:`.multi_turn_checker` replays: the text BFCL executes,
  ``decoded_output_to_execution_list``'s).

Three differences from BFCL's loop, none touching the score (scoring replays the execution texts on fresh
instances): a call runs over MCP with its decoded arguments, where BFCL evaluates its execution text (the
same call, but for an argument that is a dict of dicts, which BFCL's text writes as a nested call); a call
to a name that is no function of the entry is answered here with the error BFCL's backends give
(``name '...' is not defined``) without reaching the server; a call with an argument that is no JSON value
(bytes, a complex number) is answered with an error, not run (BFCL runs its text).

For memory and web search (:func:`run_prompting_turns`) the first turn's system message (BFCL's memory
prompt with the memory's dump, its answer-format prompt) comes after BFCL's function prompt, as BFCL's
``system_prompt_pre_processing_chat_model`` puts it; the checked message is the reply that ended the
question's turn (none when the step limit ended it, or the reply was empty), as BFCL's eval runner picks
the last reply that does not decode to a call.

The oracle writes each turn's ground-truth calls as Python calls in one reply (values as Python literals),
then "Done." (which BFCL's decoder cannot read: the turn ends); a turn without ground truth gets "Done.".
In a memory question it reads the memory with one call, then answers (a memory prerequisite turn: "Done.");
in a web-search question it searches for the question, then answers.
"""

from __future__ import annotations

import copy
import functools
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from client.adapters.base import DEFAULT_PARAMS, GenerateParams
from client.agent import model_step, result_text
from client.mcp_session import list_all_tools
from client.messages import (
    AssistantMessage,
    Message,
    ModelResponse,
    ToolChoice,
    ToolDef,
    Usage,
    UserMessage,
)
from client.model import Model
from client.runs import EpisodeOutcome

from .backends import ERROR_PREFIX
from .files import served_name
from .handlers import bfcl_code
from .multi_turn import MultiTurnEntry, gold_steps, step_limit
from .prompting import as_messages, oracle_text

if TYPE_CHECKING:
    from client.runs import EpisodeRecorder

    from ...core.plugin import EpisodeEnv

__all__ = ["DONE", "PromptingScript", "TurnResult", "decode_execute", "held_out_prompt", "hinted_docs",
           "run_multi_turn_prompting", "run_prompting_turn", "run_prompting_turns", "scripted"]

DONE = "Done."  # the oracle's reply that ends a turn: BFCL's decoder raises on it


def _utils() -> Any:
    from .decoder_guard import decoder_module

    return decoder_module()  # BFCL's decoders, their eval bounded (the replies are untrusted)


@functools.cache
def _empty() -> Callable[[Any], bool]:
    from .wheel_code import import_with_project_root

    return import_with_project_root("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils").is_empty_execute_response  # type: ignore[no-any-return]


def decode_execute(text: Any) -> list[dict[str, Any]] | None:
    """One reply decoded as BFCL's generic prompting handlers' ``decode_execute`` decodes it: its calls
    ``{"name", "arguments", "text"}`` (``text``: the call as BFCL executes it; ``[]``: no call, BFCL's
    ``is_empty_execute_response``), or None when the decoding raises."""
    utils = _utils()
    try:
        texts = utils.default_decode_execute_prompting(text)
        if _empty()(texts):
            return []
        decoded = utils.default_decode_ast_prompting(text, bfcl_code()["ReturnFormat"]("python"), False)
    except Exception:  # noqa: BLE001 - BFCL's loop and runner take any exception as an undecodable reply
        return None
    calls = [(name, arguments) for item in decoded for name, arguments in item.items()]
    if len(calls) != len(texts):  # not reached: both come from one parse
        return None
    return [{"name": str(name), **_json_arguments(arguments), "text": str(t)}
            for (name, arguments), t in zip(calls, texts, strict=True)]


def _json_arguments(arguments: Any) -> dict[str, Any]:
    """``{"arguments": ...}`` as JSON values (:func:`.decoder_guard.json_arguments`); with ``"not_json": True``
    where the decoded values were not all JSON (such a call is not run over MCP, :func:`run_prompting_turn`)."""
    from .decoder_guard import json_arguments

    value, exact = json_arguments(arguments)
    return {"arguments": value} if exact else {"arguments": value, "not_json": True}


def held_out_prompt(docs: Sequence[Mapping[str, Any]]) -> str:
    """BFCL's user message of a held-out turn in prompting mode (the docs as its loader leaves them)."""
    from .wheel_code import import_module

    prompts = import_module("bfcl_eval.constants.default_prompts")
    return str(prompts.DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_PROMPTING.format(functions=list(docs)))



class PromptingScript:
    """A scripted prompting model (the oracle): in user turn ``turn`` (set by the episode), its replies are
    that turn's texts, in order, then :data:`DONE`."""

    provider = "oracle"

    def __init__(self, texts: Sequence[Sequence[str]], *, task_id: str = "") -> None:
        self.texts = [list(t) for t in texts]
        self.turn = 0
        self.step = 0
        self.model = self.name = "oracle"
        self.task_id = task_id

    def start_turn(self, turn: int) -> None:
        self.turn, self.step = turn, 0

    async def complete(self, messages: list[Message], tools: list[ToolDef], tool_choice: ToolChoice = "auto",
                       params: GenerateParams = DEFAULT_PARAMS) -> ModelResponse:
        said = self.texts[self.turn] if self.turn < len(self.texts) else []
        text = said[self.step] if self.step < len(said) else DONE
        self.step += 1
        return ModelResponse(text=text, tool_calls=[], reasoning=None, usage=Usage(), stop_reason="end_turn",
                             latency_s=0.0, model="oracle", raw={"text": text})

    async def aclose(self) -> None:
        return None


@dataclass
class TurnResult:
    """One user turn in prompting mode: every reply's text, the steps that decoded to calls, whether the
    step limit ended it, the calls as run (for the trace's outcome)."""

    texts: list[str] = field(default_factory=list)
    steps: list[list[dict[str, Any]]] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    force_quit: bool = False
    last_text: str | None = None  # the reply that ended the turn (did not decode to a call)


async def run_prompting_turn(model: Model, session: Any, tools: set[str], messages: list[Message],
                             recorder: EpisodeRecorder, params: GenerateParams, limit: int) -> TurnResult:
    """One user turn (its messages already in ``messages``, to which the replies and results are appended)
    run as BFCL's ``inference_multi_turn_prompting`` runs it (module docstring). ``tools``: the names the
    session serves."""
    out = TurnResult()
    step = 0
    while True:
        response = await model_step(model, messages, [], "auto", params, recorder, step)  # no tools: nothing forced
        text = response.text or ""
        out.texts.append(text)
        messages.append(AssistantMessage(text=text))
        decoded = decode_execute(text)
        if not decoded:
            out.last_text = text
            recorder.final_answer(text)
            return out
        results = []
        for i, call in enumerate(decoded):
            name = served_name(call["name"])
            t0 = time.perf_counter()
            if name not in tools:  # what BFCL's backends answer a name no class has (it evaluates the text)
                result, is_error, structured = f"{ERROR_PREFIX}name '{call['name']}' is not defined", True, None
            elif call.get("not_json"):  # BFCL would run its text; an MCP call takes JSON values only
                result, is_error, structured = (f"{ERROR_PREFIX}an argument is not a JSON value; the call did not run "
                                                "(this harness runs calls over MCP)"), True, None
            else:
                res = await session.call_tool(name, call["arguments"])
                result, is_error, structured = result_text(res), bool(res.is_error), res.structured_content
            recorder.tool_call(name, call["arguments"], result, structured=structured, is_error=is_error,
                               latency_s=time.perf_counter() - t0, call_id=f"prompting_{step}_{i}", turn=step)
            out.calls.append({"name": name, "arguments": call["arguments"], "text": call["text"],
                              "is_error": is_error, "turn": step})
            results.append(result)
        out.steps.append(decoded)
        texts = [c["text"] for c in decoded]
        messages.append(UserMessage(str(_utils().format_execution_results_prompting(
            {}, results, {"model_responses_decoded": texts}))))
        step += 1
        if step > limit:  # BFCL's force quit
            out.force_quit = True
            return out


def hinted_docs(docs: Sequence[Mapping[str, Any]], category: str) -> list[dict[str, Any]]:
    """Function docs as BFCL's loader gives them to a handler of ``category`` (its language hint added)."""
    from .tools import language_doc

    return [language_doc(d, category) for d in docs]


async def run_prompting_turns(model: Model, session: Any, first: Sequence[Mapping[str, Any]], later: Sequence[str],
                              docs: Sequence[Mapping[str, Any]], entry_id: str, recorder: EpisodeRecorder,
                              params: GenerateParams, *, hidden: frozenset[str] = frozenset(),
                              script: PromptingScript | None = None) -> list[TurnResult]:
    """A conversation of user turns in prompting mode (a memory or web-search entry's, a memory scenario's
    prerequisite conversation): ``first`` the first turn's messages (its system prompt, written before BFCL's
    function prompt is added), ``later`` the next turns' user texts; each turn run by
    :func:`run_prompting_turn` until BFCL's step limit ends the conversation. ``hidden``: the session's tools
    that are no function of the entry (a call to one is answered as to any unknown name)."""
    tools = {t.name for t in await list_all_tools(session)} - hidden
    opening = as_messages(bfcl_code()["system_prompt"](copy.deepcopy(list(first)), list(docs), entry_id))
    replies: list[list[Message]] = [[UserMessage(t)] for t in later]
    return await _run_turns(model, session, tools, iter([opening, *replies]), recorder, params, script)


async def _run_turns(model: Model, session: Any, tools: set[str], turns: Iterator[list[Message]],
                     recorder: EpisodeRecorder, params: GenerateParams, script: PromptingScript | None) -> list[TurnResult]:
    """User turns in prompting mode, each turn's new messages taken from ``turns`` when it starts and run by
    :func:`run_prompting_turn` until the turns end or BFCL's step limit ends the conversation."""
    limit = step_limit()
    messages: list[Message] = []
    out: list[TurnResult] = []
    for index, new in enumerate(turns):
        if script is not None:
            script.start_turn(index)
        recorder.note(f"BFCL user turn {index}", user_turn=index)
        messages.extend(new)
        turn = await run_prompting_turn(model, session, tools, messages, recorder, params, limit)
        out.append(turn)
        if turn.force_quit:
            break
    return out


def scripted(env: EpisodeEnv, texts: Sequence[Sequence[str]], task_id: str) -> tuple[Model, PromptingScript | None]:
    """The episode's model: the run's, or (an oracle run) a :class:`PromptingScript` of ``texts``."""
    if env.shared is not None:
        return env.shared, None
    script = PromptingScript(texts, task_id=task_id)
    return env.wrap(script), script


async def run_multi_turn_prompting(entry: MultiTurnEntry, env: EpisodeEnv, recorder: EpisodeRecorder,
                                   benchmark: str) -> EpisodeOutcome:
    """One multi-turn episode in BFCL's prompting mode (module docstring)."""
    model, oracle = scripted(env, [[oracle_text(s, "python", False)] if s else [] for s in gold_steps(entry)]
                             if env.shared is None else [], entry.id)

    def user_turns() -> Iterator[list[Message]]:  # each turn's messages, made when the turn starts
        for index, raw in enumerate(entry.turns):
            current: list[Mapping[str, Any]] = list(raw)
            if index in entry.missed:
                current = [{"role": "user", "content": held_out_prompt(entry.missed[index])}]
            if index == 0:
                current = bfcl_code()["system_prompt"](copy.deepcopy(current), list(entry.functions), entry.id)
            if not current:
                raise ValueError(f"BFCL entry {entry.id}: turn {index} has no user message")
            yield as_messages(current)

    async with env.session(benchmark, entry.id) as session:
        tools = {t.name for t in await list_all_tools(session)}
        done = await _run_turns(model, session, tools, user_turns(), recorder, env.agent_cfg.params, oracle)
    return EpisodeOutcome(final_answer=recorder.answer,
                          data={"category": entry.category, "turns": [t.steps for t in done],
                                "calls": [{**c, "user_turn": index} for index, t in enumerate(done) for c in t.calls],
                                "force_quit": any(t.force_quit for t in done),
                                "bfcl_result": [t.texts for t in done], "underscore_to_dot": False})
