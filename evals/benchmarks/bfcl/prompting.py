"""Strategy ``prompting``: BFCL's prompting (non-FC) mode, over MCP.

As BFCL's prompting handlers run a model (``inference_single_turn_prompting``): the entry's functions,
with BFCL's language hint (``add_language_specific_hint_to_function_doc``; twice for format_sensitivity,
whose entries BFCL loads through it twice), are written into the system prompt by BFCL's own
``system_prompt_pre_processing_chat_model`` (imported from the wheel: its prompt text, its function-doc
formats, and for format_sensitivity the entry's configuration); the model is sent no tools. Its reply's
text is decoded by BFCL's own prompting decoder (``default_decode_ast_prompting``, in the entry's return
format: Python call syntax; Java and JavaScript through BFCL's tree-sitter readers; or JSON / XML /
``<TOOLCALL>`` tags for format_sensitivity), and the decoded calls run over MCP like any other (each under
its served name, ``.`` as ``_``); the first response ends a single-turn episode. It is scored as BFCL
scores a prompting model: the text decoded again, the names as the model wrote them (BFCL's prompting
models keep ``.`` in names: no ``underscore_to_dot``).

The oracle writes the gold calls as text in the entry's return format (Python calls with Python
literals; Java and JavaScript calls with each value the FC oracle's source text, in double quotes where
BFCL's reader gives it back only so; JSON ``[{"function", "parameters"}]``; verbose or concise XML with
each value's type; inside ``<TOOLCALL>`` tags when the configuration asks).

Served with it: every single-turn category and format_sensitivity (Java and JavaScript need BFCL's pinned
tree-sitter packages, project dependencies; refused with the reason where they are missing); the
multi-turn, memory and web-search entries run BFCL's prompting loop (:mod:`.prompting_turns`).
"""

from __future__ import annotations

import copy
import dataclasses
import importlib.util
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from client.adapters.base import DEFAULT_PARAMS, GenerateParams, ModelAdapter
from client.messages import (
    AssistantMessage,
    Message,
    ModelResponse,
    SystemMessage,
    ToolCall,
    ToolChoice,
    ToolDef,
    UserMessage,
)
from client.model import Model

from .data import BfclEntry
from .files import FORMAT_SENSITIVITY, served_name
from .handlers import Decoding, bfcl_code, config_format, language_format

__all__ = ["PROMPTING", "PromptingAdapter", "as_messages", "entry_format", "oracle_text", "prompting_conversation",
           "prompting_model", "refused_category"]

PROMPTING = Decoding("prompting", False, "the prompting strategy (BFCL's prompting decoder)", "prompting")
_REFUSED_LANGUAGES = ("simple_java", "simple_javascript")
_PARSERS = ("tree_sitter", "tree_sitter_java", "tree_sitter_javascript")  # what BFCL's decoders import for them


def refused_category(category: str) -> str | None:
    """Why ``category`` is not served with the prompting strategy (None: it is)."""
    if category in _REFUSED_LANGUAGES and any(importlib.util.find_spec(m) is None for m in _PARSERS):
        return ("BFCL reads Java and JavaScript prompting replies with its tree-sitter parsers: install "
                "tree_sitter==0.21.3, tree-sitter-java==0.21.0 and tree-sitter-javascript==0.21.4")
    return None


def entry_format(entry: BfclEntry) -> tuple[str, bool]:
    """(BFCL's return format, whether the calls are inside ``<TOOLCALL>`` tags) for the entry."""
    if entry.category == FORMAT_SENSITIVITY:
        return config_format(entry.id.split(":")[1])
    return language_format(entry.category), False


def prompt_functions(entry: BfclEntry) -> list[dict[str, Any]]:
    """The function docs as BFCL's prompting handler is given them (with its language hint)."""
    hint = bfcl_code()["hint"]
    if entry.category == FORMAT_SENSITIVITY:
        base = entry.id.split(":")[-1]
        case = hint([{"id": base, "function": copy.deepcopy(list(entry.functions))}])[0]
        return list(hint([{"id": entry.id, "function": case["function"]}])[0]["function"])
    return list(hint([{"id": entry.id, "function": copy.deepcopy(list(entry.functions))}])[0]["function"])


_ROLES: dict[str, Callable[[str], Message]] = {"system": SystemMessage, "user": UserMessage,
                                               "assistant": lambda text: AssistantMessage(text=text)}


def as_messages(raw: Sequence[Mapping[str, Any]]) -> list[Message]:
    """BFCL's messages (``{"role", "content"}``) as the client's."""
    return [_ROLES[str(m.get("role"))](str(m.get("content") or "")) for m in raw]


def prompting_conversation(entry: BfclEntry) -> tuple[list[Message], str]:
    """The entry's messages with BFCL's system prompt (its own ``system_prompt_pre_processing_chat_model``):
    (the messages before the last, the last user message)."""
    messages = bfcl_code()["system_prompt"](copy.deepcopy(list(entry.messages)), prompt_functions(entry), entry.id)
    return as_messages(messages[:-1]), str(messages[-1].get("content") or "")


# ---- the oracle's text ----

def _xml_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "float"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "dict"
    return "null" if value is None else "string"


def _xml_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict):
        return repr(value)  # read back by ast.literal_eval
    return "" if value is None else str(value)


def _reads_back(key: str, written: str, text: str, return_format: str) -> bool:
    """Whether BFCL's Java / JavaScript reader gives ``text`` as the value of ``key=written``."""
    from .handlers import Undecodable, decode

    try:
        decoded = decode(PROMPTING, f"[f({key}={written})]", return_format)
    except Undecodable:
        return False
    return isinstance(decoded, list) and len(decoded) == 1 and decoded[0].get("f", {}).get(key) == text


def _source_call(call: Mapping[str, Any], return_format: str) -> str:
    """A Java or JavaScript call as a prompting model writes it (``name(key=value, ...)``): each value the
    source text the FC oracle sends, as it is when BFCL's tree-sitter reader gives it back so, else inside
    double quotes (which the reader drops), else as it is (BFCL's reader cannot give it back: the entry fails
    as it would for any prompting model)."""
    parts = []
    for key, value in call["arguments"].items():
        text = str(value)
        written = next((w for w in (text, f'"{text}"') if _reads_back(key, w, text, return_format)), text)
        parts.append(f"{key}={written}")
    return f"{call['name']}({', '.join(parts)})"


def oracle_text(calls: Sequence[Mapping[str, Any]], return_format: str, tag: bool) -> str:
    """The calls (``{"name", "arguments"}``, names as BFCL's docs write them) as a prompting model
    writes them in ``return_format`` (Java and JavaScript: the arguments as source text)."""
    if return_format in ("java", "javascript"):
        text = "[" + ", ".join(_source_call(c, return_format) for c in calls) + "]"
    elif return_format == "json":
        text = json.dumps([{"function": c["name"], "parameters": c["arguments"]} for c in calls])
    elif return_format == "verbose_xml":
        text = "<functions>" + "".join(
            f"<function name={quoteattr(c['name'])}><params>" + "".join(
                f"<param name={quoteattr(k)} value={quoteattr(_xml_text(v))} type={quoteattr(_xml_type(v))}/>"
                for k, v in c["arguments"].items()) + "</params></function>" for c in calls) + "</functions>"
    elif return_format == "concise_xml":
        text = "<functions>" + "".join(
            f"<function name={quoteattr(c['name'])}>" + "".join(
                f"<param name={quoteattr(k)} type={quoteattr(_xml_type(v))}>{escape(_xml_text(v))}</param>"
                for k, v in c["arguments"].items()) + "</function>" for c in calls) + "</functions>"
    else:
        text = "[" + ", ".join(f"{c['name']}(" + ", ".join(f"{k}={v!r}" for k, v in c["arguments"].items()) + ")"
                               for c in calls) + "]"
    return f"<TOOLCALL>{text}</TOOLCALL>" if tag else text


# ---- the model ----

class PromptingAdapter:
    """A model in BFCL's prompting mode: sent no tools; its reply's text is decoded by ``decode``
    (``(name, arguments)`` calls, names as written) into tool calls under their served names, which the
    agent loop runs over MCP. ``texts``: every reply's text, in order."""

    def __init__(self, inner: ModelAdapter, decode: Callable[[str], list[tuple[str, Any]]]) -> None:
        self.inner = inner
        self.decode = decode
        self.name = inner.name
        self.provider = inner.provider
        self.model = inner.model
        self.texts: list[str] = []
        self.sent_tools = 0  # how many tools the model was sent (none: the trace's request lists the MCP tools
        # the decoded calls may reach, not what the model saw)

    async def complete(self, messages: list[Message], tools: list[ToolDef], tool_choice: ToolChoice = "auto",
                       params: GenerateParams = DEFAULT_PARAMS) -> ModelResponse:
        sent: list[ToolDef] = []
        response = await self.inner.complete(messages, sent, "auto", params)
        self.sent_tools = len(sent)
        text = response.text or ""
        self.texts.append(text)
        calls = [ToolCall.from_arguments(f"prompting_{len(self.texts)}_{i}", served_name(name), dict(arguments))
                 for i, (name, arguments) in enumerate(self.decode(text))]
        return dataclasses.replace(response, tool_calls=calls, stop_reason="tool_calls" if calls else response.stop_reason)

    async def aclose(self) -> None:
        return None  # the inner adapter is the run's, closed by the run


def prompting_model(adapter: ModelAdapter, decode: Callable[[str], list[tuple[str, Any]]]) -> tuple[Any, PromptingAdapter]:
    """``adapter`` in prompting mode (a ``Model`` keeps its response cache, keyed apart), and the wrapper
    (whose ``texts`` are the replies)."""
    if isinstance(adapter, Model):
        wrapper = PromptingAdapter(adapter.inner, decode)
        return Model(wrapper, adapter.cache, key_extra={**adapter.key_extra, "bfcl_mode": "prompting"},
                     limiter=adapter.limiter, retry=adapter.retry), wrapper
    wrapper = PromptingAdapter(adapter, decode)
    return wrapper, wrapper
