"""Model adapters: one provider-neutral interface over OpenAI-compatible and Anthropic APIs.

``make_adapter("openai:gpt-4o-mini")`` or ``make_adapter("anthropic:claude-sonnet-4-5",
thinking_budget=2048)`` builds an adapter from a spec string. Other packages add their own prefixes
with :func:`register_adapter` (``vllm:``, ``oracle``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from client.adapters.base import (
    DEFAULT_PARAMS,
    LOCAL_PLACEHOLDER_API_KEY,
    GenerateParams,
    ModelAdapter,
    SDKAdapter,
    build_name_map,
    resolve_api_key,
    tool_choice_name,
)
from client.adapters.errors import (
    ERROR_KINDS,
    AttemptRecord,
    ErrorDetails,
    ErrorKind,
    ModelError,
    is_context_length_message,
    parse_retry_after,
    sdk_error,
    stainless_error_details,
)
from client.adapters.names import DEFAULT_MAX_LEN, ToolNameMap, is_safe_name
from client.lazy import LazyExports

if TYPE_CHECKING:  # the SDKs take seconds to import: load them only when an adapter is built
    from client.adapters.anthropic_adapter import AnthropicAdapter
    from client.adapters.caching import CACHE_FORMAT, CachedModelResponse, CachingAdapter, is_cached
    from client.adapters.openai_adapter import OpenAIAdapter, unparsed_text_tool_calls
    from client.adapters.oracle import OracleAdapter
    from client.adapters.pricing import PRICES, PRICES_ENV, Price, load_price_overrides, price_for
    from client.adapters.replay import ReplayAdapter
    from client.adapters.vllm_adapter import (
        CHAT_TEMPLATE_DIR,
        INSTALL_HINT,
        TOOL_CALL_MARKERS,
        VLLMAdapter,
        VLLMError,
        VLLMNotInstalledError,
        VLLMStartError,
        default_chat_template,
        guess_tool_parser,
        is_cpu_build,
        make_vllm_adapter,
    )

#: Names loaded on first use (``client.adapters.OpenAIAdapter``): each module's own ``__all__``
#: (:mod:`client.lazy`), for the provider SDKs and what is not needed to build an adapter from a spec.
_LAZY = LazyExports(__name__, (
    "anthropic_adapter", "caching", "openai_adapter", "oracle", "pricing", "replay", "vllm_adapter",
))
__getattr__ = _LAZY.attribute


__all__ = [
    "CACHE_FORMAT",
    "CHAT_TEMPLATE_DIR",
    "DEFAULT_MAX_LEN",
    "DEFAULT_PARAMS",
    "ERROR_KINDS",
    "INSTALL_HINT",
    "LOCAL_PLACEHOLDER_API_KEY",
    "PRICES",
    "PRICES_ENV",
    "TOOL_CALL_MARKERS",
    "AdapterFactory",
    "AnthropicAdapter",
    "AttemptRecord",
    "CachedModelResponse",
    "CachingAdapter",
    "ErrorDetails",
    "ErrorKind",
    "GenerateParams",
    "ModelAdapter",
    "ModelError",
    "OpenAIAdapter",
    "OracleAdapter",
    "Price",
    "ReplayAdapter",
    "SDKAdapter",
    "ToolNameMap",
    "VLLMAdapter",
    "VLLMError",
    "VLLMNotInstalledError",
    "VLLMStartError",
    "build_name_map",
    "default_chat_template",
    "guess_tool_parser",
    "is_cached",
    "is_context_length_message",
    "is_cpu_build",
    "is_safe_name",
    "known_prefixes",
    "load_price_overrides",
    "make_adapter",
    "make_vllm_adapter",
    "parse_retry_after",
    "parse_spec",
    "price_for",
    "register_adapter",
    "resolve_api_key",
    "sdk_error",
    "stainless_error_details",
    "tool_choice_name",
    "unparsed_text_tool_calls",
]

AdapterFactory = Callable[..., ModelAdapter]
"""``factory(model: str, **options) -> ModelAdapter``; ``model`` is the part after ``prefix:`` ("" if none)."""

_REGISTRY: dict[str, AdapterFactory] = {}


def register_adapter(prefix: str, factory: AdapterFactory, *, replace: bool = False) -> None:
    """Make ``make_adapter("<prefix>:<model>")`` (or a bare ``"<prefix>"``) call ``factory(model, **options)``."""
    if not prefix or ":" in prefix:
        raise ValueError(f"adapter prefix must be a non-empty word without ':', got {prefix!r}")
    key = prefix.lower()
    if key in _REGISTRY and not replace and _REGISTRY[key] is not factory:
        raise ValueError(f"adapter prefix {prefix!r} is already registered (pass replace=True to override)")
    _REGISTRY[key] = factory


def known_prefixes() -> list[str]:
    """Registered adapter prefixes, sorted."""
    return sorted(_REGISTRY)


def parse_spec(spec: str) -> tuple[str, str]:
    """Split ``"prefix:model"`` into ``(prefix, model)``; a bare ``"prefix"`` gives ``(prefix, "")``.

    Only the first ``:`` separates, so model names may contain colons (``ollama``-style ``qwen3:8b``).
    """
    spec = spec.strip()
    if not spec:
        raise ValueError(
            f"empty model spec; expected '<prefix>:<model>' with prefix one of {known_prefixes()}"
        )
    prefix, sep, model = spec.partition(":")
    return prefix.strip().lower(), model.strip() if sep else ""


def make_adapter(spec: str, **options: Any) -> ModelAdapter:
    """Build an adapter from a spec such as ``"openai:gpt-4o-mini"`` or ``"anthropic:claude-haiku-4-5"``.

    ``options`` go to the adapter's constructor (``base_url``, ``api_key_env``, ``timeout``,
    ``thinking_budget``, ...). Raises ``ValueError`` for an unknown prefix, listing the known ones.
    """
    prefix, model = parse_spec(spec)
    factory = _REGISTRY.get(prefix)
    if factory is None:
        raise ValueError(
            f"unknown model provider {prefix!r} in spec {spec!r}; known prefixes: {known_prefixes()}"
        )
    return factory(model, **options)


def _lazy_factory(prefix: str, class_name: str) -> AdapterFactory:
    def factory(model: str, **options: Any) -> ModelAdapter:
        if not model:
            raise ValueError(f"model spec needs a model name: '{prefix}:<model>'")
        cls = __getattr__(class_name)
        adapter: ModelAdapter = cls(model, **options)
        return adapter

    factory.__name__ = f"make_{prefix}_adapter"
    return factory


register_adapter("openai", _lazy_factory("openai", "OpenAIAdapter"))
register_adapter("anthropic", _lazy_factory("anthropic", "AnthropicAdapter"))
register_adapter(  # replays recorded conversations: replay:PATH
    "replay", lambda model, **options: importlib.import_module("client.adapters.replay").ReplayAdapter(model, **options)
)
register_adapter(
    "vllm",
    lambda model, **options: importlib.import_module("client.adapters.vllm_adapter").make_vllm_adapter(
        model, **options
    ),
)
