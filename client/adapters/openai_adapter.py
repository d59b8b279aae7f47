"""Adapter for the OpenAI Chat Completions API and every server that speaks it.

With ``base_url`` it drives any OpenAI-compatible server (vLLM, DeepSeek, OpenRouter, llama.cpp,
Ollama, ...). Reasoning text that such servers put on the message as ``reasoning_content`` (DeepSeek,
vLLM) or ``reasoning`` (OpenRouter, newer vLLM) is kept in ``ModelResponse.reasoning``.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import openai

from client.adapters.base import GenerateParams, SDKAdapter
from client.adapters.errors import ErrorDetails, ModelError, stainless_error_details
from client.adapters.names import ToolNameMap
from client.messages import (
    STOP_CONTENT_FILTER,
    STOP_END_TURN,
    STOP_MAX_TOKENS,
    STOP_TOOL_CALLS,
    AssistantMessage,
    Message,
    ModelResponse,
    SystemMessage,
    ToolCall,
    ToolChoice,
    ToolDef,
    ToolResultMessage,
    Usage,
    UserMessage,
)

__all__ = ["OpenAIAdapter", "unparsed_text_tool_calls"]

_FINISH_REASONS = {
    "stop": STOP_END_TURN,
    "tool_calls": STOP_TOOL_CALLS,
    "function_call": STOP_TOOL_CALLS,
    "length": STOP_MAX_TOKENS,
    "content_filter": STOP_CONTENT_FILTER,
}

ERROR_PREFIX = "Error: "


class OpenAIAdapter(SDKAdapter):
    """Chat Completions with native tool calling (see :class:`client.adapters.base.ModelAdapter`).

    Args:
        model: model name as the server knows it.
        base_url: server URL including ``/v1`` (default: OpenAI, or ``$OPENAI_BASE_URL``).
        api_key: the key; default ``$api_key_env``. With a ``base_url`` and no key, a placeholder key
            is sent (local servers need none); with neither, construction fails naming the variable.
        timeout: seconds per request (the SDK's own retries are disabled: ``client.retry`` retries).
        extra_body: extra JSON fields merged into every request (e.g. vLLM's ``top_k``,
            ``chat_template_kwargs``).
        name_prefix: first part of :attr:`name` and the :attr:`provider` label (``"vllm"``, ``"deepseek"``...).
        max_tokens_param: ``"max_completion_tokens"`` (OpenAI's current name, required by reasoning
            models) or ``"max_tokens"`` (what most compatible servers expect). Default: the former for
            OpenAI itself, the latter when ``base_url`` is given.
        parallel_tool_calls: sent as ``parallel_tool_calls`` when not ``None`` (server default otherwise).
        send_reasoning: send earlier turns' reasoning back as ``reasoning_content`` (DeepSeek thinking
            mode with tools wants it; most servers reject or ignore it). Default off.
        history_malformed_arguments: how to send back an earlier tool call whose arguments were not a
            JSON object: ``"verbatim"`` (the model's string as-is; OpenAI accepts it) or ``"empty"``
            (``"{}"``, for servers such as vLLM that parse history arguments and reject bad JSON).
        default_headers: extra HTTP headers for every request.
        seed: sent as ``seed`` when not ``None``: the server's sampling seed (OpenAI: best effort; vLLM
            honours it per request), so a run at a temperature above 0 can be repeated.
        tool_call_markers: ``(opening, closing)`` markers of the model's text tool-call format, for
            servers that parse tool calls out of the generated text (vLLM's ``hermes`` parser:
            ``("<tool_call>", "</tool_call>")``). When a response has no parsed tool call but its text
            holds the opening marker (the call ran into ``max_tokens`` before its closing marker, or
            the server's parser rejected it), each marked block becomes a :class:`ToolCall` with
            ``arguments=None`` and ``parse_error`` saying why, and the text keeps only what came before
            the first marker: the turn is an unparsable call, not a final answer.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 300.0,
        extra_body: Mapping[str, Any] | None = None,
        name_prefix: str = "openai",
        max_tokens_param: Literal["max_tokens", "max_completion_tokens"] | None = None,
        parallel_tool_calls: bool | None = None,
        send_reasoning: bool = False,
        history_malformed_arguments: Literal["verbatim", "empty"] = "verbatim",
        default_headers: Mapping[str, str] | None = None,
        seed: int | None = None,
        tool_call_markers: Sequence[str] | None = None,
    ) -> None:
        if not model:
            raise ValueError("OpenAIAdapter needs a model name")
        if history_malformed_arguments not in ("verbatim", "empty"):
            raise ValueError(
                f"history_malformed_arguments must be 'verbatim' or 'empty', got {history_malformed_arguments!r}"
            )
        self.max_tokens_param = max_tokens_param or ("max_tokens" if base_url else "max_completion_tokens")
        self.parallel_tool_calls = parallel_tool_calls
        self.send_reasoning = send_reasoning
        self.history_malformed_arguments = history_malformed_arguments
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ValueError(f"seed must be an integer, got {seed!r}")
        self.seed = seed
        self.tool_call_markers = _markers(tool_call_markers)
        super().__init__(
            model, name_prefix=name_prefix, base_url=base_url, api_key=api_key, api_key_env=api_key_env,
            timeout=timeout, extra_body=extra_body, default_headers=default_headers,
        )

    def make_client(self, options: dict[str, Any]) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(**options)

    # ------------------------------------------------------------------ request

    def request_body(
        self, messages: list[Message], tools: list[ToolDef], tool_choice: ToolChoice, forced: str | None,
        names: ToolNameMap, params: GenerateParams,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": self._convert_messages(messages, names)}
        if tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": names.to_safe(t.name),
                        "description": t.description,
                        "parameters": t.input_schema or {"type": "object", "properties": {}},
                    },
                }
                for t in tools
            ]
            if forced is not None:
                body["tool_choice"] = {"type": "function", "function": {"name": names.to_safe(forced)}}
            else:
                body["tool_choice"] = tool_choice
            if self.parallel_tool_calls is not None:
                body["parallel_tool_calls"] = self.parallel_tool_calls
        if params.max_tokens is not None:
            body[self.max_tokens_param] = params.max_tokens
        if params.temperature is not None:
            body["temperature"] = params.temperature
        if self.seed is not None:
            body["seed"] = self.seed
        return body

    def _convert_messages(self, messages: list[Message], names: ToolNameMap) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for m in messages:
            if isinstance(m, SystemMessage):
                out.append({"role": "system", "content": m.text})
            elif isinstance(m, UserMessage):
                out.append({"role": "user", "content": m.text})
            elif isinstance(m, AssistantMessage):
                item: dict[str, Any] = {"role": "assistant", "content": m.text if m.text else None}
                if m.tool_calls:
                    item["tool_calls"] = [
                        {
                            "id": tc.id,
                            "type": "function",
                            "function": {
                                "name": names.to_safe(tc.name),
                                "arguments": self._history_arguments(tc),
                            },
                        }
                        for tc in m.tool_calls
                    ]
                elif item["content"] is None:
                    item["content"] = ""
                if self.send_reasoning and m.reasoning:
                    item["reasoning_content"] = m.reasoning
                out.append(item)
            elif isinstance(m, ToolResultMessage):
                content = m.content
                if m.is_error and not content.lstrip().lower().startswith("error"):
                    content = ERROR_PREFIX + content
                out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": content})
            else:  # pragma: no cover - defensive
                raise TypeError(f"unsupported message type {type(m).__name__}")
        return out

    def _history_arguments(self, tc: ToolCall) -> str:
        if tc.parse_error is not None:
            return tc.raw_arguments if self.history_malformed_arguments == "verbatim" else "{}"
        if tc.raw_arguments.strip():
            return tc.raw_arguments
        return json.dumps(tc.arguments or {}, ensure_ascii=False)

    # ------------------------------------------------------------------ call

    async def send(self, body: dict[str, Any]) -> Any:
        return await self._client.chat.completions.create(**body, extra_body=self.extra_body)

    def error_details(self, exc: BaseException) -> ErrorDetails | None:
        # openai passes the body's "error" object as exc.body; exc.code is its "code".
        return stainless_error_details(
            exc, openai, message_and_code=lambda e, message, code: (message, e.code or code),
            timeout_message=lambda e: str(e) or "request timed out",
        )

    def parse_response(self, completion: Any, names: ToolNameMap, latency_s: float = 0.0) -> ModelResponse:
        """Turn a ``ChatCompletion`` (or its JSON dict) into a :class:`ModelResponse`."""
        if hasattr(completion, "to_dict"):
            raw: Any = completion.to_dict(mode="json")
        else:
            raw = completion
        if not isinstance(raw, dict):
            raise ModelError(
                "server_error",
                f"expected a JSON object from chat/completions, got {type(raw).__name__}: {str(raw)[:300]}",
                provider=self.provider,
                model=self.model,
            )
        request_id = getattr(completion, "_request_id", None)
        choices = raw.get("choices")
        if not choices:
            raise self._error_in_body(raw, request_id)
        choice = choices[0] or {}
        message = choice.get("message") or {}

        text = _content_text(message.get("content"))
        reasoning = message.get("reasoning_content")
        if not isinstance(reasoning, str) or not reasoning:
            alt = message.get("reasoning")
            reasoning = alt if isinstance(alt, str) and alt else None

        tool_calls: list[ToolCall] = []
        for index, tc in enumerate(message.get("tool_calls") or []):
            fn = tc.get("function") or {}
            tool_calls.append(
                self._tool_call(tc.get("id"), fn.get("name"), fn.get("arguments"), names, index)
            )
        legacy = message.get("function_call")
        if not tool_calls and isinstance(legacy, dict) and legacy.get("name"):
            tool_calls.append(self._tool_call(None, legacy.get("name"), legacy.get("arguments"), names, 0))

        finish = choice.get("finish_reason")
        stop_reason = _FINISH_REASONS.get(finish, finish) if finish else STOP_END_TURN
        if not tool_calls and text and self.tool_call_markers is not None:
            text, tool_calls = unparsed_text_tool_calls(text, self.tool_call_markers, names, finish)
        if tool_calls and stop_reason == STOP_END_TURN:
            stop_reason = STOP_TOOL_CALLS  # some servers say "stop" even when they return tool calls

        return ModelResponse(
            text=text,
            tool_calls=tool_calls,
            reasoning=reasoning,
            usage=_usage(raw.get("usage")),
            stop_reason=stop_reason,
            latency_s=latency_s,
            model=str(raw.get("model") or self.model),
            raw=raw,
            provider_blocks=None,
            request_id=request_id,
        )

    @staticmethod
    def _tool_call(id_: Any, name: Any, arguments: Any, names: ToolNameMap, index: int) -> ToolCall:
        call_id = str(id_) if id_ else f"call_{uuid.uuid4().hex[:16]}_{index}"
        original = names.to_original(str(name or ""))
        if isinstance(arguments, dict):  # a few servers send an object instead of a string
            return ToolCall.from_arguments(call_id, original, arguments)
        if arguments is not None and not isinstance(arguments, str):
            raw = json.dumps(arguments, ensure_ascii=False)
            return ToolCall(
                call_id, original, None, raw, f"tool arguments must be a JSON object, got {raw[:100]}"
            )
        return ToolCall.from_raw(call_id, original, arguments)

    def _error_in_body(self, raw: dict[str, Any], request_id: str | None) -> ModelError:
        """Some proxies (OpenRouter, ...) answer HTTP 200 with ``{"error": {...}}`` and no choices."""
        error = raw.get("error")
        if isinstance(error, dict):
            message = str(error.get("message") or error)
            code = error.get("code")
            status = code if isinstance(code, int) else None
            kind = "server_error"
            if status == 429:
                kind = "rate_limit"
            elif status in (401, 403):
                kind = "auth"
            elif status is not None and 400 <= status < 500:
                kind = "bad_request"
            return ModelError(
                kind,
                message,
                status=status,
                provider=self.provider,
                model=self.model,
                request_id=request_id,
                body=raw,
            )
        return ModelError(
            "server_error",
            f"response has no choices: {json.dumps(raw)[:300]}",
            provider=self.provider,
            model=self.model,
            request_id=request_id,
            body=raw,
        )



def _markers(value: Sequence[str] | None) -> tuple[str, str] | None:
    if value is None:
        return None
    if isinstance(value, str) or len(value) != 2 or not all(isinstance(m, str) and m for m in value):
        raise ValueError(f"tool_call_markers must be two non-empty strings (opening, closing), got {value!r}")
    return value[0], value[1]


_NAME_IN_CALL = re.compile(r'"name"\s*:\s*"((?:[^"\\]|\\.)*)"')


def _name_in_call(body: str, names: ToolNameMap) -> str:
    match = _NAME_IN_CALL.search(body)
    if match is None:
        return ""
    try:
        name = json.loads(f'"{match.group(1)}"')
    except ValueError:
        name = match.group(1)
    return names.to_original(name)


def unparsed_text_tool_calls(
    text: str, markers: tuple[str, str], names: ToolNameMap, finish_reason: str | None
) -> tuple[str | None, list[ToolCall]]:
    """Tool calls left in the text by the server's parser, as unparsable :class:`ToolCall` s.

    Returns the text before the first opening marker (``None`` when empty) and one call per opening
    marker, with ``arguments=None``, ``raw_arguments`` the block after the marker (up to its closing
    marker, or to the end when there is none) and ``parse_error`` saying why it is not a call: cut off
    at the token limit (``finish_reason`` ``"length"``), never closed, not valid JSON, or not returned
    by the server's parser. The name is the ``"name"`` the block gives, when it gives one, else ``""``.
    Without an opening marker, returns ``(text, [])``.
    """
    opening, closing = markers
    first = text.find(opening)
    if first < 0:
        return text, []
    calls: list[ToolCall] = []
    for index, block in enumerate(text[first + len(opening) :].split(opening)):
        end = block.find(closing)
        body = (block if end < 0 else block[:end]).strip()
        name = _name_in_call(body, names)
        if end < 0 and finish_reason == "length":
            error = f"cut off at the token limit (finish_reason 'length') before its closing {closing}"
        elif end < 0:
            error = f"no closing {closing} (finish_reason {finish_reason!r})"
        else:
            try:
                value = json.loads(body)
            except (json.JSONDecodeError, RecursionError) as exc:
                where = f" at position {exc.pos}" if isinstance(exc, json.JSONDecodeError) else ""
                error = f"{opening}...{closing} is not valid JSON: {getattr(exc, 'msg', exc)}{where}"
            else:
                if not isinstance(value, dict) or not isinstance(value.get("arguments"), dict):
                    error = f'{opening}...{closing} is not a JSON object with "name" and "arguments" (an object)'
                else:
                    error = f"the server's tool-call parser did not return this {opening}...{closing} call"
        call_id = f"call_{uuid.uuid4().hex[:16]}_{index}"
        calls.append(ToolCall(call_id, name, None, body, f"unparsable tool call: {error}"))
    return text[:first].strip() or None, calls


def _content_text(content: Any) -> str | None:
    if content is None:
        return None
    if isinstance(content, str):
        return content or None
    if isinstance(content, list):  # content parts
        parts = [
            p.get("text", "")
            for p in content
            if isinstance(p, dict) and p.get("type") in ("text", "output_text")
        ]
        joined = "".join(parts)
        return joined or None
    return str(content)


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def _usage(usage: Any) -> Usage:
    if not isinstance(usage, dict):
        return Usage()
    completion_details = usage.get("completion_tokens_details") or {}
    prompt_details = usage.get("prompt_tokens_details") or {}
    return Usage(
        input_tokens=_int(usage.get("prompt_tokens")),
        output_tokens=_int(usage.get("completion_tokens")),
        reasoning_tokens=_int(completion_details.get("reasoning_tokens")),
        cache_read_tokens=_int(prompt_details.get("cached_tokens") or usage.get("prompt_cache_hit_tokens")),
        cache_write_tokens=_int(prompt_details.get("cache_write_tokens")),
    )
