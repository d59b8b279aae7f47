"""BFCL v4's web-search categories (``web_search_base``, ``web_search_no_snippet``) over BFCL's own backend.

Served when the user can run them: BFCL's ``WebSearchAPI`` searches through SerpAPI, so the key
must be in the environment (``SERPAPI_API_KEY``, read there by BFCL's code; a secret: never written
to the run directory, whose ``config.json`` records only that a key was set, and the endpoint), and
its packages installed (``google-search-results``, ``beautifulsoup4``, ``html2text``: the
``bfcl-web`` extra). Otherwise the category is refused in one line naming what is missing.
``--bfcl-search-endpoint URL`` points SerpAPI's client at another base URL (default SerpAPI's own;
the tests use a loopback stand-in); it is recorded in the run's config.

Data: ``BFCL_v4_web_search.json`` (100 questions) and its possible answers, read out of the pinned
wheel; each category has every question, its id BFCL's (``web_search_0`` becomes
``web_search_base_0``, as ``process_web_search_test_case`` does). The entry's functions are
``multi_turn_func_doc/web_search.json`` with BFCL's Python hint; the instance is loaded as
``populate_initial_settings_for_web_search_test_cases`` loads it (``show_snippet`` False exactly for
``no_snippet``). Each MCP session gets its own instance in its holder process (:mod:`.backend_host`,
each call under :data:`WEB_DEADLINE_S`), where BFCL's code runs with its HTTP bounded
(:mod:`.web_fetch`: the pages are untrusted).

The episode is BFCL's: the system message is BFCL's agentic answer-format prompt
(``process_agentic_test_case``; it replaces any ``--system-prompt``), then the question, answered
with calls until a reply without one (``--max-turns 21`` is BFCL's step limit). With ``--strategy
prompting``, as BFCL's ``inference_multi_turn_prompting`` runs it (:mod:`.prompting_turns`): BFCL's
function prompt before that system message, the replies' texts decoded into calls. The last reply is
scored by BFCL's ``agentic_checker`` (:func:`.agentic.check_answer`), as memory is. The oracle
searches once for the question and answers BFCL's first accepted answer in its answer format.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tool_specs import CallContext, ToolLike, ToolResult, ToolSpec

from .backend_calls import ERROR_PREFIX, _rendered
from .backend_host import HostError
from .backends import session_holder, stopped_text
from .data import WheelError, read_answers, read_func_docs, read_jsonl, verified_wheel
from .files import NAME, WEB_SEARCH, served_name
from .memory_run import AnsweredKind, _prompts
from .tools import to_tool
from .web_fetch import KEY_ENV

if TYPE_CHECKING:
    from client.runs import EpisodeOutcome, EpisodeRecorder

    from ...core.plugin import EpisodeEnv

__all__ = ["DEFAULT_ENDPOINT", "KEY_ENV", "WEB_DEADLINE_S", "WebEntry", "WebSearchKind",
           "config_record", "read_web_search", "unavailable_reason", "web_tools"]

DEFAULT_ENDPOINT = "https://serpapi.com"  # the google-search-results client's own base URL
WEB_DEADLINE_S = 60.0  # one search or page fetch in its holder (each HTTP step is bounded in time too)
# the modules BFCL's web_search imports, and their PyPI packages
PACKAGES = {"serpapi": "google-search-results", "bs4": "beautifulsoup4", "html2text": "html2text"}
_DATA = "bfcl_eval/data/"


def unavailable_reason(environ: Mapping[str, str] | None = None) -> str | None:
    """Why web search cannot run here (a missing package or key), or ``None``."""
    missing = [pkg for module, pkg in PACKAGES.items() if importlib.util.find_spec(module) is None]
    if missing:
        return (f"BFCL's web-search backend needs {', '.join(missing)} (pip install "
                "'mcp-multihop-evals[bfcl-web]')")
    if not (environ if environ is not None else os.environ).get(KEY_ENV):
        return f"BFCL's web-search backend searches through SerpAPI: set {KEY_ENV} to your SerpAPI key"
    return None


def config_record(endpoint: str) -> dict[str, Any]:
    """What the run's config says of web search: that a key was used (never the key) and the endpoint."""
    return {"bfcl_web_search": {"key": f"${KEY_ENV} (set; not recorded)", "endpoint": endpoint}}


@dataclass(frozen=True)
class WebEntry:
    """One web-search question of one category."""

    id: str
    category: str
    question: str
    answers: tuple[str, ...]

    @property
    def query(self) -> str:
        return self.question


def read_web_search(category: str, wheel: Path | None = None) -> list[WebEntry]:
    """A web-search category's questions, in the file's order."""
    if category not in WEB_SEARCH:
        raise WheelError(f"BFCL category {category!r} is not a web-search category ({', '.join(WEB_SEARCH)})")
    path = verified_wheel(wheel)
    with zipfile.ZipFile(path) as archive:
        rows = read_jsonl(archive, f"{_DATA}BFCL_v4_web_search.json", str(path))
        answers = read_answers(archive, "web_search", str(path))
    out = []
    for row in rows:
        truth, question = answers.get(row["id"]), row.get("question")
        if not (isinstance(truth, list) and truth and all(isinstance(a, str) for a in truth)):
            raise WheelError(f"{path}: web-search entry {row['id']} has no list of accepted answers")
        if not (isinstance(question, list) and len(question) == 1 and len(question[0]) == 1):
            raise WheelError(f"{path}: web-search entry {row['id']} is not a one-question entry")
        out.append(WebEntry(row["id"].replace("web_search", category), category,
                            str(question[0][0].get("content", "")), tuple(truth)))
    return out


def read_docs(wheel: Path | None = None) -> list[dict[str, Any]]:
    """BFCL's function docs of the web-search backend."""
    return read_func_docs("web_search.json", wheel)


def web_result(answer: Mapping[str, Any]) -> ToolResult:
    """A holder's answer to a web call as the result BFCL's executor gives the model: the method's value
    as BFCL renders it, or its exception as ``Error during execution: ...`` (flagged ``isError``)."""
    if "value" in answer:
        return ToolResult(text=_rendered(answer["value"]))
    return ToolResult.error(f"{ERROR_PREFIX}{answer.get('exception', answer.get('error', ''))}")


def web_tools(docs: Sequence[Mapping[str, Any]], category: str, endpoint: str, task_id: str = "") -> list[ToolSpec]:
    """The backend's functions as tools of one endpoint (BFCL's Python hint added, as its loader does);
    a call runs on the session's own ``WebSearchAPI`` in its holder process."""
    key = f"bfcl_web:{category}"
    names = {served_name(str(d.get("name", ""))): str(d.get("name", "")) for d in docs}

    async def call(spec: ToolLike, arguments: dict[str, Any], ctx: CallContext) -> ToolResult:
        missing = unavailable_reason()  # `evals serve` starts without a run's check
        if missing is not None:
            return ToolResult.error(f"{ERROR_PREFIX}{missing}")
        holder = session_holder(ctx, key)
        op = {"op": "web_call", "key": key, "name": names.get(spec.name, ""), "served": spec.name,
              "arguments": arguments, "endpoint": endpoint, "show_snippet": "no_snippet" not in category,
              KEY_ENV: os.environ.get(KEY_ENV, "")}  # the key, from this process's environment, to BFCL's code
        try:
            answer = await holder.arequest(op, deadline=WEB_DEADLINE_S)
        except HostError as exc:
            return ToolResult.error(stopped_text(exc, holder.take_lost()))
        return web_result(answer)

    return [to_tool(doc, task_id, category).model_copy(update={"executor": call}) for doc in docs]


def oracle_answer(entry: WebEntry) -> str:
    """BFCL's answer format holding the first accepted answer."""
    return str({"answer": entry.answers[0], "context": "from the search results"})


class WebSearchKind(AnsweredKind):
    """The web-search entries of one run as a :class:`.kinds.Kind` (``endpoint``: ``--bfcl-search-endpoint``)."""

    def __init__(self, categories: Sequence[str], name: str = NAME, endpoint: str | None = None) -> None:
        self.name = name
        self.endpoint = endpoint or DEFAULT_ENDPOINT
        self.entries = {e.id: e for c in categories for e in read_web_search(c)}
        self._docs: list[dict[str, Any]] = []

    def check(self, strategy: str) -> None:
        """Refuse the run (one line) when BFCL's backend cannot run here or the strategy cannot serve it."""
        categories = ", ".join(dict.fromkeys(e.category for e in self.entries.values()))
        reason = unavailable_reason()
        if reason is not None:
            raise ValueError(f"BFCL category {categories} is not served here: {reason}")

    def config_record(self) -> dict[str, Any]:
        return config_record(self.endpoint)

    def endpoints(self) -> list[str]:
        return list(self.entries)

    def serve(self) -> None:
        self._docs = read_docs()  # read now, with the wheel checked

    def task_tools(self, endpoint: str) -> list[ToolSpec]:
        return web_tools(self._docs, self.entries[endpoint].category, self.endpoint, endpoint)

    def playground_tools(self) -> list[ToolSpec]:
        categories = dict.fromkeys(e.category for e in self.entries.values())
        return [spec for category in categories for spec in web_tools(self._docs, category, self.endpoint)]

    async def episode(self, env: EpisodeEnv, task_id: str, recorder: EpisodeRecorder) -> EpisodeOutcome:
        from client.agent import run_agent

        entry = self.entries[task_id]
        system = str(_prompts().ADDITIONAL_SYSTEM_PROMPT_FOR_AGENTIC_RESPONSE_FORMAT)
        if env.opts.strategy == "prompting":
            return await self._prompting_episode(env, entry, system, recorder)
        model = env.model(task_id, [[{"name": "search_engine_query", "arguments": {"keywords": entry.question}}]],
                          final_answer=oracle_answer(entry))
        async with env.session(self.name, task_id) as session:
            outcome = await run_agent(model, session, entry.question, recorder,
                                      dataclasses.replace(env.agent_cfg, system_prompt=system))
        outcome.data["category"] = entry.category
        return outcome

    async def _prompting_episode(self, env: EpisodeEnv, entry: WebEntry, system: str,
                                 recorder: EpisodeRecorder) -> EpisodeOutcome:
        """The question in BFCL's prompting mode (:mod:`.prompting_turns`: BFCL's function prompt before the
        answer-format prompt); the oracle's replies are the search, written as a Python call, then the answer."""
        from client.runs import EpisodeOutcome

        from .prompting_turns import hinted_docs, run_prompting_turns, scripted

        search = f"[search_engine_query(keywords={entry.question!r})]"
        model, script = scripted(env, [[search, oracle_answer(entry)]], entry.id)
        async with env.session(self.name, entry.id) as session:
            turn, *_ = await run_prompting_turns(
                model, session, [{"role": "system", "content": system}, {"role": "user", "content": entry.question}],
                [], hinted_docs(self._docs or read_docs(), entry.category), entry.id, recorder, env.agent_cfg.params,
                script=script)
        return EpisodeOutcome(final_answer=recorder.answer, data={
            "category": entry.category, "calls": turn.calls, "stop": "max_turns" if turn.force_quit else "final_answer",
            "bfcl_result": [turn.texts], "bfcl_last_message": turn.last_text or None, "underscore_to_dot": False})

    def view(self, task_id: str, trace: Mapping[str, Any] | None,
             score: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        from .memory_view import agentic_sections

        verdict = self.verdict(task_id, trace) if trace is not None else None
        return agentic_sections(self.entries[task_id].answers, trace, verdict)
