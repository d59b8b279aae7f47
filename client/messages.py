"""Provider-neutral conversation records used by the agent loop, the adapters and the traces.

Every record is a dataclass with ``to_dict()`` / ``from_dict()`` so that a trace can store a whole
conversation as JSON and replay it later without calling any model again.

Conventions shared by all adapters:

* Tool names are always the *original* tool names (as served by the MCP server). Adapters map them
  to provider-safe names on the way out and back on the way in (see ``client.adapters.names``).
* ``Usage.input_tokens`` counts *all* prompt tokens of a request, including tokens read from or
  written to a prompt cache (``cache_read_tokens`` / ``cache_write_tokens`` are subsets of it).
  ``Usage.output_tokens`` counts all generated tokens, including reasoning/thinking tokens
  (``reasoning_tokens`` is a subset of it). This is OpenAI's convention; the Anthropic adapter adds
  the cache counts to ``input_tokens`` to match it.
* ``ModelResponse.stop_reason`` is normalised to one of the ``STOP_*`` constants below where the
  provider's value has an equivalent; otherwise the provider's own value is kept.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

if TYPE_CHECKING:  # pragma: no cover - typing only
    import mcp.types

__all__ = [
    "STOP_CONTENT_FILTER",
    "STOP_CONTEXT_LENGTH",
    "STOP_END_TURN",
    "STOP_MAX_TOKENS",
    "STOP_REFUSAL",
    "STOP_TOOL_CALLS",
    "AssistantMessage",
    "Message",
    "ModelResponse",
    "Price",
    "SystemMessage",
    "ToolCall",
    "replace_surrogates",
    "ToolChoice",
    "ToolDef",
    "ToolResultMessage",
    "Usage",
    "UserMessage",
    "message_from_dict",
    "parse_tool_arguments",
]

# Normalised stop reasons (ModelResponse.stop_reason).
STOP_END_TURN = (
    "end_turn"  # the model finished its turn (OpenAI "stop", Anthropic "end_turn"/"stop_sequence")
)
STOP_TOOL_CALLS = "tool_calls"  # the model asked for tool calls (OpenAI "tool_calls", Anthropic "tool_use")
STOP_MAX_TOKENS = "max_tokens"  # output budget exhausted (OpenAI "length", Anthropic "max_tokens")
STOP_CONTENT_FILTER = "content_filter"  # OpenAI "content_filter"
STOP_REFUSAL = "refusal"  # Anthropic "refusal"
STOP_CONTEXT_LENGTH = "context_length"  # Anthropic "model_context_window_exceeded"


# --------------------------------------------------------------------------------------------------
# Tools
# --------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class ToolDef:
    """A tool offered to the model: its original name, description and JSON Schema for the input."""

    name: str
    description: str
    input_schema: dict[str, Any]

    @classmethod
    def from_mcp(cls, tool: mcp.types.Tool) -> ToolDef:
        """Build from an MCP ``Tool`` (as returned by ``ClientSession.list_tools()``)."""
        schema = getattr(tool, "input_schema", None)
        if schema is None:  # older mcp versions spell it inputSchema
            schema = getattr(tool, "inputSchema", None)
        description = tool.description or getattr(tool, "title", None) or ""
        return cls(name=tool.name, description=description, input_schema=dict(schema or {"type": "object"}))

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolDef:
        """Inverse of :meth:`to_dict`."""
        return cls(
            name=data["name"], description=data.get("description", ""), input_schema=data["input_schema"]
        )


def parse_tool_arguments(raw: str | None) -> tuple[dict[str, Any] | None, str | None]:
    """Parse a model's tool-argument string into ``(arguments, parse_error)``; never raises.

    ``arguments`` is a dict when ``raw`` is a JSON object, else ``None`` with ``parse_error`` saying
    why. An empty or all-whitespace string (some OpenAI-compatible servers send ``""`` for a call with
    no parameters) counts as ``{}``.
    """
    if raw is None or not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except (json.JSONDecodeError, RecursionError) as exc:
        msg = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        pos = f" at position {exc.pos}" if isinstance(exc, json.JSONDecodeError) else ""
        return None, f"tool arguments are not valid JSON: {msg}{pos}"
    if not isinstance(value, dict):
        return None, f"tool arguments must be a JSON object, got {_json_type_name(value)}"
    return value, None


def _json_type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return type(value).__name__


@dataclass(slots=True)
class ToolCall:
    """One tool call requested by the model.

    ``raw_arguments`` is the argument string exactly as the model produced it. ``arguments`` is the
    parsed JSON object, or ``None`` when the string was not a JSON object; then ``parse_error`` says
    why. Malformed arguments are data, not exceptions: the agent loop reports them back to the model.
    """

    id: str
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str
    parse_error: str | None = None

    @classmethod
    def from_raw(cls, id: str, name: str, raw_arguments: str | None) -> ToolCall:
        """Build from an argument *string*, parsing it with :func:`parse_tool_arguments`."""
        arguments, error = parse_tool_arguments(raw_arguments)
        return cls(
            id=id, name=name, arguments=arguments, raw_arguments=raw_arguments or "", parse_error=error
        )

    @classmethod
    def from_arguments(cls, id: str, name: str, arguments: dict[str, Any]) -> ToolCall:
        """Build from already-parsed arguments (``raw_arguments`` becomes their JSON encoding)."""
        return cls(
            id=id, name=name, arguments=arguments, raw_arguments=json.dumps(arguments, ensure_ascii=False)
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {
            "id": self.id,
            "name": self.name,
            "arguments": self.arguments,
            "raw_arguments": self.raw_arguments,
            "parse_error": self.parse_error,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCall:
        """Inverse of :meth:`to_dict`."""
        return cls(
            id=data["id"],
            name=data["name"],
            arguments=data.get("arguments"),
            raw_arguments=data.get("raw_arguments", ""),
            parse_error=data.get("parse_error"),
        )


ToolChoice: TypeAlias = Literal["auto", "required", "none"] | dict[str, str]
"""``"auto"``, ``"required"`` (must call some tool), ``"none"``, or ``{"name": tool_name}``."""


# --------------------------------------------------------------------------------------------------
# Usage and prices
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens. Cache prices default to the input price when not given."""

    input_per_mtok: float
    output_per_mtok: float
    cache_read_per_mtok: float | None = None
    cache_write_per_mtok: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {
            "input_per_mtok": self.input_per_mtok,
            "output_per_mtok": self.output_per_mtok,
            "cache_read_per_mtok": self.cache_read_per_mtok,
            "cache_write_per_mtok": self.cache_write_per_mtok,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Price:
        """Inverse of :meth:`to_dict`; also accepts the short keys ``input``/``output``/``cache_read``/``cache_write``."""

        def get(key: str) -> Any:
            return data.get(f"{key}_per_mtok", data.get(key))

        if get("input") is None or get("output") is None:
            raise ValueError(
                f"a price needs 'input_per_mtok' and 'output_per_mtok' (USD per million tokens), got {data!r}"
            )
        cache_read, cache_write = get("cache_read"), get("cache_write")
        return cls(
            input_per_mtok=float(get("input")),
            output_per_mtok=float(get("output")),
            cache_read_per_mtok=None if cache_read is None else float(cache_read),
            cache_write_per_mtok=None if cache_write is None else float(cache_write),
        )


@dataclass(slots=True)
class Usage:
    """Token usage of one or more model calls (see the module docstring for what counts where)."""

    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def cost_usd(self, price: Price | None) -> float | None:
        """Cost in USD under ``price``; ``None`` when the price is unknown."""
        if price is None:
            return None
        cache_read = self.cache_read_tokens
        cache_write = self.cache_write_tokens
        uncached = max(0, self.input_tokens - cache_read - cache_write)
        read_price = price.input_per_mtok if price.cache_read_per_mtok is None else price.cache_read_per_mtok
        write_price = (
            price.input_per_mtok if price.cache_write_per_mtok is None else price.cache_write_per_mtok
        )
        total = (
            uncached * price.input_per_mtok
            + cache_read * read_price
            + cache_write * write_price
            + self.output_tokens * price.output_per_mtok
        )
        return total / 1_000_000

    def to_dict(self) -> dict[str, int]:
        """JSON-serialisable form."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Usage:
        """Inverse of :meth:`to_dict` (missing keys count as 0)."""
        return cls(**{k: int(data.get(k) or 0) for k in cls.__dataclass_fields__})


# --------------------------------------------------------------------------------------------------
# Messages
# --------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class SystemMessage:
    """System prompt. Several system messages are joined (Anthropic takes one ``system`` parameter)."""

    text: str
    role: Literal["system"] = field(default="system", init=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {"role": "system", "text": self.text}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SystemMessage:
        """Inverse of :meth:`to_dict`."""
        return cls(text=data["text"])


@dataclass(slots=True)
class UserMessage:
    """A user turn with plain text."""

    text: str
    role: Literal["user"] = field(default="user", init=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {"role": "user", "text": self.text}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> UserMessage:
        """Inverse of :meth:`to_dict`."""
        return cls(text=data["text"])


@dataclass(slots=True)
class AssistantMessage:
    """A model turn: text and/or tool calls.

    ``provider_blocks`` holds provider content that must be sent back verbatim on later turns (for
    Anthropic: the whole content list when it contains thinking / redacted_thinking blocks, whose
    signatures the API checks). Adapters of other providers ignore it.
    """

    text: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    reasoning: str | None = None
    provider_blocks: list[dict[str, Any]] | None = None
    role: Literal["assistant"] = field(default="assistant", init=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {
            "role": "assistant",
            "text": self.text,
            "tool_calls": [tc.to_dict() for tc in self.tool_calls],
            "reasoning": self.reasoning,
            "provider_blocks": self.provider_blocks,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AssistantMessage:
        """Inverse of :meth:`to_dict`."""
        return cls(
            text=data.get("text"),
            tool_calls=[ToolCall.from_dict(tc) for tc in data.get("tool_calls") or []],
            reasoning=data.get("reasoning"),
            provider_blocks=data.get("provider_blocks"),
        )


@dataclass(slots=True)
class ToolResultMessage:
    """The result of one tool call, answering the ``ToolCall`` whose id is ``tool_call_id``."""

    tool_call_id: str
    name: str
    content: str
    is_error: bool = False
    role: Literal["tool"] = field(default="tool", init=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {
            "role": "tool",
            "tool_call_id": self.tool_call_id,
            "name": self.name,
            "content": self.content,
            "is_error": self.is_error,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolResultMessage:
        """Inverse of :meth:`to_dict`."""
        return cls(
            tool_call_id=data["tool_call_id"],
            name=data.get("name", ""),
            content=data.get("content", ""),
            is_error=bool(data.get("is_error", False)),
        )


Message: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolResultMessage

_MESSAGE_TYPES: dict[str, type[SystemMessage | UserMessage | AssistantMessage | ToolResultMessage]] = {
    "system": SystemMessage,
    "user": UserMessage,
    "assistant": AssistantMessage,
    "tool": ToolResultMessage,
}


def message_from_dict(data: dict[str, Any]) -> Message:
    """Rebuild any message from its ``to_dict()`` form (dispatching on ``role``)."""
    role = data.get("role")
    try:
        kind = _MESSAGE_TYPES[role]  # type: ignore[index]
    except KeyError:
        raise ValueError(f"unknown message role {role!r}; expected one of {sorted(_MESSAGE_TYPES)}") from None
    return kind.from_dict(data)


# --------------------------------------------------------------------------------------------------
# Responses
# --------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class ModelResponse:
    """What one successful model call returned, in provider-neutral form.

    ``raw`` is the provider's JSON response (tool names in it are the provider-safe ones);
    ``request_id`` is the provider's request id when it sent one.
    """

    text: str | None
    tool_calls: list[ToolCall]
    reasoning: str | None
    usage: Usage
    stop_reason: str
    latency_s: float
    model: str
    raw: dict[str, Any]
    provider_blocks: list[dict[str, Any]] | None = None
    request_id: str | None = None
    notes: list[str] = field(default_factory=list)
    """What the client changed in the reply before anyone used it (e.g. invalid Unicode replaced)."""

    def to_assistant_message(self) -> AssistantMessage:
        """The assistant turn to append to the conversation."""
        return AssistantMessage(
            text=self.text,
            tool_calls=list(self.tool_calls),
            reasoning=self.reasoning,
            provider_blocks=self.provider_blocks,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {
            "text": self.text,
            "tool_calls": [tc.to_dict() for tc in self.tool_calls],
            "reasoning": self.reasoning,
            "usage": self.usage.to_dict(),
            "stop_reason": self.stop_reason,
            "latency_s": self.latency_s,
            "model": self.model,
            "raw": self.raw,
            "provider_blocks": self.provider_blocks,
            "request_id": self.request_id,
            **({"notes": list(self.notes)} if self.notes else {}),
        }

    def valid_unicode(self) -> ModelResponse:
        """This response, or a copy with every lone surrogate (``"\\ud800"`` in the provider's JSON: no
        character, not encodable as UTF-8) replaced by U+FFFD in its text, reasoning, tool calls
        (names, parsed arguments, argument text) and raw reply, and a :attr:`notes` entry saying how
        many. Adapters return it, so a trace, a cache or the next request never meets one."""
        count = 0

        def fix(value: Any) -> Any:
            nonlocal count
            value, n = replace_surrogates(value)
            count += n
            return value

        calls = [
            replace(tc, name=fix(tc.name), arguments=fix(tc.arguments), raw_arguments=fix(tc.raw_arguments),
                    parse_error=fix(tc.parse_error))
            for tc in self.tool_calls
        ]
        fixed = replace(self, text=fix(self.text), reasoning=fix(self.reasoning), tool_calls=calls,
                        raw=fix(self.raw), provider_blocks=fix(self.provider_blocks))
        if not count:
            return self
        fixed.notes = [*self.notes, f"the reply held {count} lone surrogate(s) (\\ud800-\\udfff: not valid Unicode); "
                       "each was replaced by U+FFFD"]
        return fixed

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelResponse:
        """Inverse of :meth:`to_dict`."""
        return cls(
            text=data.get("text"),
            tool_calls=[ToolCall.from_dict(tc) for tc in data.get("tool_calls") or []],
            reasoning=data.get("reasoning"),
            usage=Usage.from_dict(data.get("usage") or {}),
            stop_reason=data.get("stop_reason", ""),
            latency_s=float(data.get("latency_s", 0.0)),
            model=data.get("model", ""),
            raw=data.get("raw") or {},
            provider_blocks=data.get("provider_blocks"),
            request_id=data.get("request_id"),
            notes=[str(n) for n in data.get("notes") or []],
        )


_SURROGATE = re.compile(r"[\ud800-\udfff]")


def replace_surrogates(value: Any) -> tuple[Any, int]:
    """``value`` (JSON-like) with every lone surrogate in its strings (keys too) replaced by U+FFFD,
    and how many there were; ``value`` itself when there were none."""
    if isinstance(value, str):
        return _SURROGATE.subn("\ufffd", value) if _SURROGATE.search(value) else (value, 0)
    if isinstance(value, dict):
        total, out = 0, {}
        for key, item in value.items():
            new_key, n = replace_surrogates(key)
            new_item, m = replace_surrogates(item)
            total += n + m
            out[new_key] = new_item
        return (out, total) if total else (value, 0)
    if isinstance(value, list | tuple):
        total, items = 0, []
        for item in value:
            new_item, n = replace_surrogates(item)
            total += n
            items.append(new_item)
        return (items, total) if total else (value, 0)
    return value, 0
