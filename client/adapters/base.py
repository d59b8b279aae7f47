"""The interface every model adapter implements, the base of the adapters that speak a provider's SDK,
and small helpers shared by the adapters.

No provider SDK is imported here: a provider's file (``openai_adapter.py``, ``anthropic_adapter.py``)
imports its own, so building an adapter for one provider never loads another's.
"""

from __future__ import annotations

import asyncio
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Protocol, runtime_checkable

from client.adapters.errors import ErrorDetails, ModelError, sdk_error
from client.adapters.names import DEFAULT_MAX_LEN, ToolNameMap
from client.messages import (
    AssistantMessage,
    Message,
    ModelResponse,
    ToolChoice,
    ToolDef,
    ToolResultMessage,
)

__all__ = [
    "DEFAULT_PARAMS",
    "LOCAL_PLACEHOLDER_API_KEY",
    "GenerateParams",
    "ModelAdapter",
    "SDKAdapter",
    "build_name_map",
    "resolve_api_key",
    "tool_choice_name",
]

LOCAL_PLACEHOLDER_API_KEY = "sk-local-no-key"
"""Sent when a ``base_url`` is given but no API key: local servers (vLLM, llama.cpp, Ollama) ignore it."""

_KEYED_ALWAYS = ("max_tokens", "temperature")


@dataclass(frozen=True, slots=True)
class GenerateParams:
    """The sampling settings of one request, passed to :meth:`ModelAdapter.complete` as one value.

    ``None`` leaves a setting to the provider (or the adapter's own default). A new setting is a new
    field here, read by the adapters that can send it; the callers and the response cache carry it
    without change (see :meth:`cache_fields`).
    """

    max_tokens: int | None = None
    temperature: float | None = None

    def cache_fields(self) -> dict[str, Any]:
        """The settings as they enter a response-cache key: ``max_tokens`` and ``temperature`` always
        (the key's layout since ``CACHE_FORMAT`` 1), any later field only when it is set, so that the
        keys of requests that do not use it stay what they were."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name in _KEYED_ALWAYS or getattr(self, f.name) is not None
        }


DEFAULT_PARAMS = GenerateParams()
"""No setting given: every one is left to the provider or the adapter."""


@runtime_checkable
class ModelAdapter(Protocol):
    """A chat model with native tool calling, driven one request at a time.

    ``complete`` sends the whole conversation and returns the model's next turn. It raises
    :class:`client.adapters.errors.ModelError` for every failure (the SDK's own retries are off, so
    the caller's retry layer sees every attempt). Tool names in ``messages``, ``tools``,
    ``tool_choice`` and the returned ``ModelResponse`` are always the original names. Callers go
    through :class:`client.model.Model`, which adds the response cache, the rate limit, retries and cost.
    """

    name: str  # e.g. "openai:gpt-4o-mini"
    provider: str  # "openai" | "anthropic" | ...
    model: str

    async def complete(
        self, messages: list[Message], tools: list[ToolDef], tool_choice: ToolChoice = "auto",
        params: GenerateParams = DEFAULT_PARAMS,
    ) -> ModelResponse:
        """Send the conversation and return the model's next turn."""
        ...

    async def aclose(self) -> None:
        """Release the HTTP client."""
        ...


class SDKAdapter(ABC):
    """The base of an adapter that speaks a provider's own SDK (imports none itself).

    It holds what every such adapter has (model, provider label, base URL, timeout, ``extra_body``, the
    API key and the SDK client, :meth:`aclose`) and owns :meth:`complete`: the tool-name map, the
    tool-choice check, the timing, cancellation, the mapping of every SDK exception to a
    :class:`ModelError` (:func:`client.adapters.errors.sdk_error`), the provider/model stamp on errors
    and the lone-surrogate repair of the reply. A provider's file keeps only what is its own:

    * :meth:`make_client` builds the SDK client from the options (key, base URL, timeout, no SDK retries);
    * :meth:`request_body` turns the conversation into the provider's request;
    * :meth:`send` makes the SDK call;
    * :meth:`parse_response` turns the reply into a :class:`ModelResponse`;
    * :meth:`error_details` reads an SDK exception (status, message, code, headers; ``None``: not the SDK's).

    ``docs/architecture.md`` ("Adding a provider") walks through one.
    """

    #: The environment variable of the API key when the caller names none.
    api_key_env: ClassVar[str] = ""

    def __init__(
        self, model: str, *, name_prefix: str, base_url: str | None = None, api_key: str | None = None,
        api_key_env: str | None = None, timeout: float = 300.0, extra_body: Mapping[str, Any] | None = None,
        default_headers: Mapping[str, str] | None = None,
    ) -> None:
        self.model = model
        self.provider = name_prefix
        self.name = f"{name_prefix}:{model}"
        self.base_url = base_url
        self.timeout = timeout
        self.extra_body = dict(extra_body) if extra_body else None
        key = resolve_api_key(
            api_key=api_key, api_key_env=api_key_env or self.api_key_env, base_url=base_url, provider=self.name
        )
        self._client = self.make_client(
            {
                "api_key": key,
                "base_url": base_url,
                "timeout": timeout,
                "max_retries": 0,
                "default_headers": dict(default_headers) if default_headers else None,
            }
        )

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return f"{type(self).__name__}({self.model!r}{where})"

    # ------------------------------------------------------------------ a provider's own parts

    @abstractmethod
    def make_client(self, options: dict[str, Any]) -> Any:
        """The SDK client, from ``api_key``, ``base_url``, ``timeout``, ``max_retries`` (0: the retry
        layer retries) and ``default_headers``."""

    @abstractmethod
    def request_body(
        self, messages: list[Message], tools: list[ToolDef], tool_choice: ToolChoice, forced: str | None,
        names: ToolNameMap, params: GenerateParams,
    ) -> dict[str, Any]:
        """The request body (without ``extra_body``); ``forced`` is the tool ``tool_choice`` forces (its
        original name) and ``names`` the tool-name map. Raises ``ModelError("bad_request")`` for what
        the provider would reject."""

    @abstractmethod
    async def send(self, body: dict[str, Any]) -> Any:
        """The SDK call with ``body`` (and ``self.extra_body``); returns the SDK's reply."""

    @abstractmethod
    def parse_response(self, reply: Any, names: ToolNameMap, latency_s: float = 0.0) -> ModelResponse:
        """The SDK's reply (or its JSON dict) as a :class:`ModelResponse`."""

    @abstractmethod
    def error_details(self, exc: BaseException) -> ErrorDetails | None:
        """What an SDK exception says (``None`` when it is not one of the SDK's)."""

    # ------------------------------------------------------------------ the shared flow

    def build_request(
        self, messages: list[Message], tools: list[ToolDef], tool_choice: ToolChoice = "auto",
        params: GenerateParams = DEFAULT_PARAMS,
    ) -> tuple[dict[str, Any], ToolNameMap]:
        """The request body (without ``extra_body``) and the tool-name map used for it."""
        names = build_name_map(tools, messages)
        forced = tool_choice_name(tool_choice, tools)
        return self.request_body(messages, tools, tool_choice, forced, names, params), names

    async def complete(
        self, messages: list[Message], tools: list[ToolDef], tool_choice: ToolChoice = "auto",
        params: GenerateParams = DEFAULT_PARAMS,
    ) -> ModelResponse:
        """Send the conversation; return the next assistant turn or raise :class:`ModelError`."""
        try:
            body, names = self.build_request(messages, tools, tool_choice, params)
        except ModelError as exc:
            exc.provider, exc.model = self.provider, self.model
            raise
        start = time.perf_counter()
        try:
            reply = await self.send(body)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise sdk_error(exc, self.error_details(exc), provider=self.provider, model=self.model) from exc
        latency = time.perf_counter() - start
        # a lone surrogate in the reply never reaches a trace or a request
        return self.parse_response(reply, names, latency).valid_unicode()

    async def aclose(self) -> None:
        """Close the SDK client (``aclose()`` as httpx names it, else ``close()`` as the openai and
        anthropic SDKs do)."""
        await (self._client.aclose() if hasattr(self._client, "aclose") else self._client.close())


def resolve_api_key(
    *,
    api_key: str | None,
    api_key_env: str,
    base_url: str | None,
    provider: str,
    allow_placeholder: bool = True,
) -> str:
    """The API key to use: explicit ``api_key``, else ``$api_key_env``, else a placeholder for a custom
    ``base_url`` (local servers need none). Raises ``ValueError`` naming the variable otherwise."""
    if api_key:
        return api_key
    from_env = os.environ.get(api_key_env)
    if from_env:
        return from_env
    if base_url and allow_placeholder:
        return LOCAL_PLACEHOLDER_API_KEY
    raise ValueError(
        f"no API key for {provider}: set the environment variable {api_key_env}, or put the key in another "
        f"variable and name it (evals run: --api-key-env VAR); a base_url for a local server needs no key"
    )


def tool_choice_name(tool_choice: ToolChoice, tools: list[ToolDef]) -> str | None:
    """Validate ``tool_choice``; return the forced tool's original name, or ``None`` for the modes."""
    if isinstance(tool_choice, dict):
        name = tool_choice.get("name")
        if not isinstance(name, str) or not name:
            raise ModelError(
                "bad_request",
                f"tool_choice must be 'auto', 'required', 'none' or {{'name': ...}}, got {tool_choice!r}",
            )
        if name not in {t.name for t in tools}:
            raise ModelError(
                "bad_request",
                f"tool_choice names tool {name!r}, which is not among the {len(tools)} tools offered",
            )
        return name
    if tool_choice not in ("auto", "required", "none"):
        raise ModelError(
            "bad_request",
            f"tool_choice must be 'auto', 'required', 'none' or {{'name': ...}}, got {tool_choice!r}",
        )
    if tool_choice == "required" and not tools:
        raise ModelError("bad_request", "tool_choice='required' but no tools were offered")
    return None


def build_name_map(
    tools: list[ToolDef], messages: list[Message], *, max_len: int = DEFAULT_MAX_LEN
) -> ToolNameMap:
    """Name map for one request: built from the offered tools (so their safe names depend only on the
    tool set), then extended with any other tool names found in the conversation history."""
    names = ToolNameMap((t.name for t in tools), max_len=max_len)
    for message in messages:
        if isinstance(message, AssistantMessage):
            for tc in message.tool_calls:
                names.add(tc.name)
        elif isinstance(message, ToolResultMessage) and message.name:
            names.add(message.name)
    return names
