"""Model adapters: one provider-neutral interface over OpenAI-compatible and Anthropic APIs.

``make_adapter("openai:gpt-4o-mini")`` or ``make_adapter("anthropic:claude-sonnet-4-5",
thinking_budget=2048)`` builds an adapter from a spec string. This module is the registry of spec
prefixes; each provider is a module of this package (``openai_adapter``, ``anthropic_adapter``, ...)
imported when an adapter of it is first built, so its SDK loads only then. A new provider is its
module and one line here: ``register_adapter("echo", provider("echo_adapter", "EchoAdapter"))``.
Other packages add their own prefixes with :func:`register_adapter` (``oracle``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from client.adapters.base import ModelAdapter

__all__ = ["AdapterFactory", "known_prefixes", "make_adapter", "parse_spec", "provider", "register_adapter"]

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


def provider(module: str, class_name: str) -> AdapterFactory:
    """The factory of a provider whose adapter class is ``class_name`` of ``client.adapters.<module>``
    (imported on the first adapter built: the provider's SDK loads only then)."""
    prefix = module.removesuffix("_adapter")

    def factory(model: str, **options: Any) -> ModelAdapter:
        if not model:
            raise ValueError(f"model spec needs a model name: '{prefix}:<model>'")
        cls = getattr(importlib.import_module(f"client.adapters.{module}"), class_name)
        adapter: ModelAdapter = cls(model, **options)
        return adapter

    factory.__name__ = f"make_{prefix}_adapter"
    return factory


register_adapter("openai", provider("openai_adapter", "OpenAIAdapter"))
register_adapter("anthropic", provider("anthropic_adapter", "AnthropicAdapter"))
register_adapter(  # replays recorded conversations: replay:PATH
    "replay", lambda model, **options: importlib.import_module("client.adapters.replay").ReplayAdapter(model, **options)
)
register_adapter(
    "vllm",
    lambda model, **options: importlib.import_module("client.adapters.vllm_adapter").make_vllm_adapter(
        model, **options
    ),
)
