"""``--base-url`` for Anthropic works with or without a trailing ``/v1`` (the SDK appends ``/v1/messages``)."""

from __future__ import annotations

import pytest
from fake_providers import FakeProviderServer, anthropic_message

from client.adapters.anthropic_adapter import AnthropicAdapter, anthropic_root
from client.messages import UserMessage


def test_anthropic_root_drops_one_trailing_v1() -> None:
    assert anthropic_root("http://h:1/v1") == anthropic_root("http://h:1/v1/") == anthropic_root("http://h:1") == "http://h:1"
    assert anthropic_root("http://h:1/proxy/v1") == "http://h:1/proxy"
    assert anthropic_root(None) is None


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
async def test_messages_reach_the_api_with_or_without_v1(fake_server: FakeProviderServer, suffix: str) -> None:
    fake_server.anthropic.script(anthropic_message("hello"))
    adapter = AnthropicAdapter("claude-test", base_url=fake_server.anthropic_base_url + suffix, timeout=5.0)
    try:
        response = await adapter.complete([UserMessage("hi")], [])
    finally:
        await adapter.aclose()
    assert response.text == "hello"
    assert len(fake_server.anthropic.bodies) == 1  # the request reached /v1/messages, not /v1/v1/messages
