"""Adapter for the Anthropic Messages API with tool use and extended thinking.

* System messages go to the separate ``system`` parameter.
* Tool calls are ``tool_use`` blocks; tool results are ``tool_result`` blocks (with ``is_error``), and
  all results of one assistant turn travel in one user message.
* With extended thinking, the API requires the assistant's thinking / redacted_thinking blocks to be
  sent back unchanged (signatures included). The response's content list is therefore kept in
  ``ModelResponse.provider_blocks`` whenever it holds such blocks, and sent back verbatim.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from typing import Any

import anthropic

from client import messages as msg
from client.adapters.base import GenerateParams, SDKAdapter
from client.adapters.errors import ErrorDetails, ModelError, stainless_error_details
from client.adapters.names import ToolNameMap

__all__ = ["AnthropicAdapter"]

_STOP_REASONS = {
    "end_turn": msg.STOP_END_TURN,
    "stop_sequence": msg.STOP_END_TURN,
    "tool_use": msg.STOP_TOOL_CALLS,
    "max_tokens": msg.STOP_MAX_TOKENS,
    "refusal": msg.STOP_REFUSAL,
    "model_context_window_exceeded": msg.STOP_CONTEXT_LENGTH,
}
_SDK_KWARGS = {"model", "max_tokens", "messages", "system", "tools", "tool_choice", "thinking"}
_BAD_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


def _safe_id(tool_use_id: str) -> str:
    """Anthropic requires tool_use ids to match ``^[a-zA-Z0-9_-]+$``; ids from elsewhere may not."""
    return _BAD_ID_CHARS.sub("_", tool_use_id) or "toolu_empty"


def anthropic_root(base_url: str | None) -> str | None:
    """``base_url`` as the Anthropic SDK wants it: the API root, without a trailing ``/v1`` (the SDK
    appends ``/v1/messages``), so ``http://host/v1`` and ``http://host`` reach the same endpoint."""
    if not base_url:
        return base_url
    root = base_url.rstrip("/")
    return root.removesuffix("/v1") or root


class AnthropicAdapter(SDKAdapter):
    """Messages API with native tool use (see :class:`client.adapters.base.ModelAdapter`).

    Args:
        model: e.g. ``"claude-sonnet-4-5"``.
        base_url: API root, with or without a trailing ``/v1`` (the SDK appends ``/v1/messages``; a
            given ``/v1`` is dropped) (default: Anthropic, or ``$ANTHROPIC_BASE_URL``).
        api_key: the key; default ``$api_key_env``; with a ``base_url`` and no key a placeholder is sent.
        thinking_budget: enable extended thinking with this many budget tokens (>= 1024, < max_tokens).
        thinking: a raw ``thinking`` parameter (e.g. ``{"type": "adaptive"}``); wins over ``thinking_budget``.
        max_tokens: default output limit (the Messages API requires one); ``complete(max_tokens=...)`` overrides.
        timeout: seconds per request (SDK retries are disabled; ``client.retry`` retries).
        extra_body: extra JSON fields merged into every request.
        name_prefix: first part of :attr:`name` and the :attr:`provider` label.
        parallel_tool_calls: ``False`` sends ``disable_parallel_tool_use``; ``None``/``True`` leave the default.
        default_headers: extra HTTP headers (e.g. an ``anthropic-beta`` flag).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str = "ANTHROPIC_API_KEY",
        thinking_budget: int | None = None,
        thinking: Mapping[str, Any] | None = None,
        max_tokens: int = 4096,
        timeout: float = 300.0,
        extra_body: Mapping[str, Any] | None = None,
        name_prefix: str = "anthropic",
        parallel_tool_calls: bool | None = None,
        default_headers: Mapping[str, str] | None = None,
    ) -> None:
        if not model:
            raise ValueError("AnthropicAdapter needs a model name")
        if thinking_budget is not None and thinking_budget < 1024:
            raise ValueError(
                f"thinking_budget must be at least 1024 tokens (Anthropic's minimum), got {thinking_budget}"
            )
        self.max_tokens = max_tokens
        self.parallel_tool_calls = parallel_tool_calls
        if thinking is not None:
            self.thinking: dict[str, Any] | None = dict(thinking)
        elif thinking_budget is not None:
            self.thinking = {"type": "enabled", "budget_tokens": thinking_budget}
        else:
            self.thinking = None
        super().__init__(
            model, name_prefix=name_prefix, base_url=anthropic_root(base_url), api_key=api_key,
            api_key_env=api_key_env, timeout=timeout, extra_body=extra_body, default_headers=default_headers,
        )

    def make_client(self, options: dict[str, Any]) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(**options)

    # ------------------------------------------------------------------ request

    def request_body(
        self, messages: list[msg.Message], tools: list[msg.ToolDef], tool_choice: msg.ToolChoice, forced: str | None,
        names: ToolNameMap, params: GenerateParams,
    ) -> dict[str, Any]:
        """The request body; raises :class:`ModelError` (kind ``bad_request``) for combinations the API rejects."""
        temperature = params.temperature
        limit = params.max_tokens if params.max_tokens is not None else self.max_tokens
        body: dict[str, Any] = {"model": self.model, "max_tokens": limit}
        system = "\n\n".join(m.text for m in messages if isinstance(m, msg.SystemMessage) and m.text)
        if system:
            body["system"] = system
        body["messages"] = self._convert_messages(messages, names)
        if tools:
            body["tools"] = [self._tool(t, names) for t in tools]
            if forced is not None:
                choice: dict[str, Any] = {"type": "tool", "name": names.to_safe(forced)}
            else:
                choice = {"type": {"auto": "auto", "required": "any", "none": "none"}[str(tool_choice)]}
            if self.parallel_tool_calls is False and choice["type"] != "none":
                choice["disable_parallel_tool_use"] = True
            body["tool_choice"] = choice
        if self.thinking is not None:
            self._check_thinking(tool_choice, limit, temperature)
            body["thinking"] = dict(self.thinking)
        if temperature is not None:
            body["temperature"] = temperature
        return body

    def _check_thinking(self, tool_choice: msg.ToolChoice, max_tokens: int, temperature: float | None) -> None:
        assert self.thinking is not None
        if self.thinking.get("type") == "disabled":
            return
        if tool_choice not in ("auto", "none"):
            raise ModelError(
                "bad_request",
                f"tool_choice={tool_choice!r} cannot be combined with extended thinking "
                "(Anthropic allows only 'auto' or 'none' while thinking)",
            )
        budget = self.thinking.get("budget_tokens")
        if isinstance(budget, int) and budget >= max_tokens:
            raise ModelError(
                "bad_request",
                f"thinking budget ({budget} tokens) must be smaller than max_tokens ({max_tokens})",
            )
        if temperature is not None and temperature != 1:
            raise ModelError(
                "bad_request",
                f"temperature={temperature} cannot be combined with extended thinking (only 1 is allowed)",
            )

    @staticmethod
    def _tool(tool: msg.ToolDef, names: ToolNameMap) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "name": names.to_safe(tool.name),
            "input_schema": tool.input_schema or {"type": "object", "properties": {}},
        }
        if tool.description:
            spec["description"] = tool.description
        return spec

    def _convert_messages(self, messages: list[msg.Message], names: ToolNameMap) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []

        def push(role: str, blocks: list[dict[str, Any]]) -> None:
            if not blocks:
                return
            if out and out[-1]["role"] == role:
                out[-1]["content"].extend(blocks)
            else:
                out.append({"role": role, "content": blocks})

        for m in messages:
            if isinstance(m, msg.SystemMessage):
                continue
            if isinstance(m, msg.UserMessage):
                push("user", [{"type": "text", "text": m.text}] if m.text else [])
            elif isinstance(m, msg.ToolResultMessage):
                block: dict[str, Any] = {"type": "tool_result", "tool_use_id": _safe_id(m.tool_call_id)}
                if m.content:
                    block["content"] = m.content
                if m.is_error:
                    block["is_error"] = True
                push("user", [block])
            elif isinstance(m, msg.AssistantMessage):
                push("assistant", self._assistant_blocks(m, names))
            else:  # pragma: no cover - defensive
                raise TypeError(f"unsupported message type {type(m).__name__}")
        return out

    @staticmethod
    def _assistant_blocks(m: msg.AssistantMessage, names: ToolNameMap) -> list[dict[str, Any]]:
        if m.provider_blocks:
            # Verbatim, except that tool names follow the current name map and ids are made valid.
            by_id = {tc.id: tc for tc in m.tool_calls}
            blocks = copy.deepcopy(m.provider_blocks)
            for block in blocks:
                if block.get("type") == "tool_use":
                    call = by_id.get(block.get("id", ""))
                    if call is not None:
                        block["name"] = names.to_safe(call.name)
                    block["id"] = _safe_id(str(block.get("id", "")))
            return blocks
        blocks = []
        if m.text:
            blocks.append({"type": "text", "text": m.text})
        for tc in m.tool_calls:
            blocks.append(
                {
                    "type": "tool_use",
                    "id": _safe_id(tc.id),
                    "name": names.to_safe(tc.name),
                    # Anthropic needs an object; a malformed call from another provider goes back as {}.
                    "input": tc.arguments if tc.arguments is not None else {},
                }
            )
        return blocks

    # ------------------------------------------------------------------ call

    async def send(self, body: dict[str, Any]) -> Any:
        # Fields the SDK's create() has no keyword for (e.g. temperature in this SDK version) go as extra_body.
        kwargs = {k: v for k, v in body.items() if k in _SDK_KWARGS}
        extra = {k: v for k, v in body.items() if k not in _SDK_KWARGS}
        if self.extra_body:
            extra.update(self.extra_body)
        return await self._client.messages.create(**kwargs, extra_body=extra or None)

    def error_details(self, exc: BaseException) -> ErrorDetails | None:
        return stainless_error_details(
            exc, anthropic, timeout_message=lambda e: "request timed out",
            message_and_code=lambda e, message, code: (
                getattr(e, "api_message", None) or message, getattr(e, "error_code", None) or code
            ),
        )

    def parse_response(self, message: Any, names: ToolNameMap, latency_s: float = 0.0) -> msg.ModelResponse:
        """Turn a ``Message`` (or its JSON dict) into a :class:`ModelResponse`."""
        raw: Any = message.to_dict(mode="json") if hasattr(message, "to_dict") else message
        if not isinstance(raw, dict) or not isinstance(raw.get("content"), list):
            raise ModelError(
                "server_error",
                f"expected a Messages API object with a content list, got {str(raw)[:300]}",
                provider=self.provider,
                model=self.model,
            )
        texts: list[str] = []
        thoughts: list[str] = []
        tool_calls: list[msg.ToolCall] = []
        keep_blocks = False
        for block in raw["content"]:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text":
                texts.append(str(block.get("text", "")))
            elif kind == "thinking":
                thoughts.append(str(block.get("thinking", "")))
                keep_blocks = True
            elif kind == "tool_use":
                tool_calls.append(self._tool_call(block, names))
            else:  # redacted_thinking, server tool blocks, anything new: must go back as-is
                keep_blocks = True

        stop = raw.get("stop_reason")
        stop_reason = (
            _STOP_REASONS.get(stop, str(stop)) if stop else (msg.STOP_TOOL_CALLS if tool_calls else msg.STOP_END_TURN)
        )
        return msg.ModelResponse(
            text="".join(texts) or None,
            tool_calls=tool_calls,
            reasoning="\n\n".join(t for t in thoughts if t) or None,
            usage=_usage(raw.get("usage")),
            stop_reason=stop_reason,
            latency_s=latency_s,
            model=str(raw.get("model") or self.model),
            raw=raw,
            provider_blocks=copy.deepcopy(raw["content"]) if keep_blocks else None,
            request_id=getattr(message, "_request_id", None),
        )

    @staticmethod
    def _tool_call(block: dict[str, Any], names: ToolNameMap) -> msg.ToolCall:
        call_id = str(block.get("id") or "")
        name = names.to_original(str(block.get("name") or ""))
        data = block.get("input")
        raw = json.dumps(data, ensure_ascii=False)
        if isinstance(data, dict):
            return msg.ToolCall(call_id, name, data, raw)
        if isinstance(data, str):  # not what the API does, but a proxy might pass a string through
            return msg.ToolCall.from_raw(call_id, name, data)
        return msg.ToolCall(call_id, name, None, raw, f"tool input must be a JSON object, got {raw[:100]}")


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def _usage(usage: Any) -> msg.Usage:
    if not isinstance(usage, dict):
        return msg.Usage()
    cache_read = _int(usage.get("cache_read_input_tokens"))
    cache_write = _int(usage.get("cache_creation_input_tokens"))
    details = usage.get("output_tokens_details") or {}
    return msg.Usage(
        input_tokens=_int(usage.get("input_tokens")) + cache_read + cache_write,
        output_tokens=_int(usage.get("output_tokens")),
        reasoning_tokens=_int(details.get("thinking_tokens")) if isinstance(details, dict) else 0,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
    )
