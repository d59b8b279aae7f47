"""A 200 reply whose body is not JSON (a proxy's HTML error page) is a transient failure: retried,
and its episode re-run on resume (issue 26, item 6). The real openai/anthropic SDKs against the local
stand-in, which answers with the page and, when asked again, with a real reply."""

from __future__ import annotations

import pytest
from fake_providers import Reply, anthropic_message, openai_chat

from client.adapters.anthropic_adapter import AnthropicAdapter
from client.adapters.errors import ModelError
from client.adapters.openai_adapter import OpenAIAdapter
from client.messages import UserMessage
from client.retry import RetryPolicy, call_with_retries

PAGE = "<html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1></body></html>"


def _adapters(fake):  # noqa: ANN001, ANN202
    return [
        (fake.openai, OpenAIAdapter("gpt-test", base_url=fake.openai_base_url, timeout=60.0),
         openai_chat(text="fine", usage=(5, 1))),
        (fake.anthropic, AnthropicAdapter("claude-test", base_url=fake.anthropic_base_url, timeout=60.0),
         anthropic_message(text="fine", usage=(5, 1))),
    ]


@pytest.mark.parametrize("content_type", ["application/json", "text/html; charset=utf-8"])
async def test_an_html_page_with_status_200_is_a_transient_server_error(fake_server, content_type):
    for endpoint, adapter, _ in _adapters(fake_server):
        endpoint.script(Reply(200, PAGE, {"content-type": content_type}))
        with pytest.raises(ModelError) as info:
            await adapter.complete([UserMessage("hi")], [])
        assert info.value.retryable is True and info.value.kind == "server_error", str(info.value)
        assert "Bad Gateway" in str(info.value)
        await adapter.aclose()


async def test_an_html_page_is_retried_and_the_next_reply_is_used(fake_server):
    async def no_sleep(_: float) -> None:
        return None

    for endpoint, adapter, good in _adapters(fake_server):
        endpoint.script(Reply(200, PAGE, {"content-type": "application/json"}), good)
        seen: list[ModelError] = []
        response = await call_with_retries(lambda a=adapter: a.complete([UserMessage("hi")], []),
                                           RetryPolicy(max_attempts=3), sleep=no_sleep,
                                           on_attempt=lambda n, e, d, seen=seen: seen.append(e))
        assert response.text == "fine"
        assert len(seen) == 1 and seen[0].retryable
        await adapter.aclose()
