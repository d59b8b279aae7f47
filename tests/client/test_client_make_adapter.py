"""make_adapter / register_adapter, the price table, and the error-mapping helpers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fake_providers import FakeProviderServer, openai_chat

from client.adapters import known_prefixes, make_adapter, parse_spec, register_adapter
from client.adapters.anthropic_adapter import AnthropicAdapter
from client.adapters.base import ModelAdapter
from client.adapters.errors import is_context_length_message
from client.adapters.openai_adapter import OpenAIAdapter
from client.adapters.pricing import PRICES, load_price_overrides, price_for
from client.messages import ModelResponse, Price, Usage, UserMessage


async def test_make_adapter_builds_both_providers(fake_server: FakeProviderServer) -> None:
    openai_adapter = make_adapter("openai:gpt-4o-mini", base_url=fake_server.openai_base_url)
    anthropic_adapter = make_adapter(
        "anthropic:claude-haiku-4-5", base_url=fake_server.anthropic_base_url, thinking_budget=1024
    )
    try:
        assert isinstance(openai_adapter, OpenAIAdapter) and openai_adapter.name == "openai:gpt-4o-mini"
        assert isinstance(anthropic_adapter, AnthropicAdapter) and anthropic_adapter.provider == "anthropic"
        assert anthropic_adapter.thinking == {"type": "enabled", "budget_tokens": 1024}
        assert isinstance(openai_adapter, ModelAdapter) and isinstance(anthropic_adapter, ModelAdapter)
        fake_server.openai.script(openai_chat("hello"))
        assert (await openai_adapter.complete([UserMessage("hi")], [])).text == "hello"
    finally:
        await openai_adapter.aclose()
        await anthropic_adapter.aclose()


def test_unknown_prefix_lists_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown model provider 'gemini'.*'anthropic', 'openai'"):
        make_adapter("gemini:pro")
    with pytest.raises(ValueError, match="needs a model name"):
        make_adapter("openai:")
    with pytest.raises(ValueError, match="empty model spec"):
        make_adapter("  ")


def test_parse_spec_keeps_colons_in_model_names() -> None:
    assert parse_spec("openai:qwen3:8b") == ("openai", "qwen3:8b")
    assert parse_spec("Oracle") == ("oracle", "")


class EchoAdapter:
    """A minimal adapter, as another package would register it."""

    provider = "echo"

    def __init__(self, model: str, **options: object) -> None:
        self.model = model or "default"
        self.name = f"echo:{self.model}"
        self.options = options

    async def complete(self, messages, tools, tool_choice="auto", params=None):
        text = messages[-1].text if messages else ""
        return ModelResponse(text, [], None, Usage(), "end_turn", 0.0, self.model, {})

    async def aclose(self) -> None:
        return None


async def test_register_adapter_for_other_prefixes() -> None:
    register_adapter("echo-test", EchoAdapter)
    try:
        assert "echo-test" in known_prefixes()
        adapter = make_adapter("echo-test", flag=True)
        assert adapter.model == "default" and adapter.options == {"flag": True}  # type: ignore[attr-defined]
        assert (await adapter.complete([UserMessage("ping")], [])).text == "ping"
        with pytest.raises(ValueError, match="already registered"):
            register_adapter("echo-test", lambda model, **o: EchoAdapter(model))
        register_adapter("echo-test", EchoAdapter)  # same factory again is fine
        with pytest.raises(ValueError, match="without ':'"):
            register_adapter("a:b", EchoAdapter)
    finally:
        from client.adapters import _REGISTRY

        _REGISTRY.pop("echo-test", None)


def test_price_lookup_and_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert price_for("gpt-4o-mini") == PRICES["gpt-4o-mini"]
    assert price_for("gpt-4o-mini-2024-07-18") == PRICES["gpt-4o-mini"]  # dated snapshot
    assert price_for("claude-sonnet-4-5-20250929") == PRICES["claude-sonnet-4-5"]
    assert price_for("openai/gpt-4o") == PRICES["gpt-4o"]  # OpenRouter-style
    assert price_for("my-local-llama") is None
    assert Usage(1_000_000, 1_000_000).cost_usd(price_for("gpt-4o-mini")) == pytest.approx(0.75)

    table = tmp_path / "prices.json"
    table.write_text(
        json.dumps(
            {"my-local-llama": {"input": 0.1, "output": 0.2}, "gpt-4o-mini": {"input": 9, "output": 9}}
        )
    )
    monkeypatch.setenv("EVALS_PRICES", str(table))
    assert price_for("my-local-llama") == Price(0.1, 0.2)
    assert price_for("gpt-4o-mini") == Price(9.0, 9.0)
    assert price_for("gpt-4o-mini", {"gpt-4o-mini": Price(1, 1)}) == Price(1, 1)  # CLI wins

    table.write_text(json.dumps({"bad": {"output": 1}}))
    with pytest.raises(ValueError, match="bad entry for 'bad'"):
        load_price_overrides()
    with pytest.raises(ValueError, match="cannot read price table"):
        load_price_overrides(tmp_path / "missing.json")


def test_a_price_file_changed_in_place_with_its_mtime_put_back_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``$EVALS_PRICES`` is parsed once per version of its bytes (issue 45 item 5), not per mtime:
    the same size and modification time with other bytes is another price."""
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"my-local-llama": {"input": 0.1, "output": 0.2}}))
    st = table.stat()
    monkeypatch.setenv("EVALS_PRICES", str(table))
    assert price_for("my-local-llama") == Price(0.1, 0.2)
    table.write_text(json.dumps({"my-local-llama": {"input": 0.3, "output": 0.4}}))  # same length
    os.utime(table, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert table.stat().st_size == st.st_size and table.stat().st_mtime_ns == st.st_mtime_ns
    assert price_for("my-local-llama") == Price(0.3, 0.4)


@pytest.mark.parametrize(
    ("message", "code", "expected"),
    [
        ("This model's maximum context length is 8192 tokens", None, True),
        ("prompt is too long: 210000 tokens > 200000 maximum", None, True),
        ("input length and `max_tokens` exceed context limit: 190000 + 20000 > 200000", None, True),
        ("whatever", "context_length_exceeded", True),
        ("Invalid schema for function", None, False),
        ("", None, False),
    ],
)
def test_context_length_detection(message: str, code: str | None, expected: bool) -> None:
    assert is_context_length_message(message, code) is expected
