"""client.mcp_session.connect: what a caller passes is used or refused, never dropped."""

from __future__ import annotations

import pytest

from client.mcp_session import connect, make_http_client


@pytest.mark.parametrize("extra", [{"token": "s3cret"}, {"headers": {"X-Team": "a"}}])
async def test_token_or_headers_beside_a_shared_http_client_are_refused(extra: dict[str, object]) -> None:
    async with make_http_client() as http:
        with pytest.raises(ValueError, match="go to make_http_client"):
            async with connect("http://127.0.0.1:9/mcp/x", http_client=http, **extra):  # type: ignore[arg-type]
                pass
