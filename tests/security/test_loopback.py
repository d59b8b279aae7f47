"""Loopback binds and the Host check of ``/health`` (issue 26, item 9).

Any address of 127.0.0.0/8 in any form the socket layer binds (``127.1``, ``127.0.0.2``), and
``::1``, keep the server on this machine: no token is demanded, and a client that connects to the
bound address is served (its Host header names that address). ``/health`` refuses a foreign Host
header as ``/mcp`` does (DNS rebinding: a page on another site must not read it through a name
that resolves to 127.0.0.1).
"""

from __future__ import annotations

import socket
import subprocess
import sys

import httpx2
import pytest

from client.agent import result_text
from client.mcp_session import connect
from server import (
    BenchmarkMount,
    ServerConfigError,
    ToolServer,
    check_bind,
    create_app,
    is_loopback,
    serve_in_background,
)
from tool_specs import StaticCatalog, ToolSpec

PAY = ToolSpec(name="pay", description="Pay.", input_schema={"type": "object"}, executor={"kind": "placeholder"})
CATALOG = StaticCatalog("shop", {"t1": [PAY]})
LOOPBACK = ["127.0.0.1", "127.1", "127.0.0.2", "127.255.255.254", "2130706433", "localhost", "::1", "[::1]",
            "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1"]
PUBLIC = ["0.0.0.0", "10.0.0.1", "128.0.0.1", "::", "example.com", "127.0.0.1 ", "127.0.0.1 x", ""]


@pytest.mark.parametrize("host", LOOPBACK)
def test_loopback_hosts_need_no_token(host):
    assert is_loopback(host)
    check_bind(host, None)
    create_app(ToolServer([BenchmarkMount(CATALOG)]), host=host)


@pytest.mark.parametrize("host", PUBLIC)
def test_other_hosts_need_a_token(host):
    assert not is_loopback(host)
    with pytest.raises(ServerConfigError, match="without authentication"):
        check_bind(host, None)


def test_the_cli_takes_127_1_without_a_token():
    """``evals serve --host 127.1`` passes the bind check (it refused without --token): the next
    check, a session cap of 0, is the one that stops it (exit 2), before anything is served."""
    proc = subprocess.run(
        [sys.executable, "-m", "evals.cli", "serve", "--host", "127.1", "--max-sessions", "0"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2 and "session caps must be at least 1" in proc.stderr, proc.stderr


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.parametrize("host", ["127.1", "127.0.0.2", "::1"])
async def test_a_client_of_the_bound_loopback_address_is_served(host):
    if ":" in host and not _ipv6_loopback():
        pytest.skip("this host has no IPv6 loopback")
    app = create_app(ToolServer([BenchmarkMount(CATALOG)]), host=host)
    async with serve_in_background(app, host=host) as url:
        async with connect(url + "/mcp/shop/t1") as c:
            assert result_text(await c.call_tool("pay", {})) == '{"result": "API_call_0"}'
        async with httpx2.AsyncClient() as http:
            assert (await http.get(url + "/health")).status_code == 200


async def test_health_checks_the_host_header_as_mcp_does():
    app = create_app(ToolServer([BenchmarkMount(CATALOG)]))
    async with serve_in_background(app) as url, httpx2.AsyncClient() as http:
        port = url.rsplit(":", 1)[1]
        for good in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"):
            r = await http.get(url + "/health", headers={"Host": good})
            assert r.status_code == 200 and r.json()["status"] == "ok", (good, r.text)
        for evil in (f"evil.example:{port}", "evil.example", f"127.0.0.1.evil.example:{port}"):
            health = await http.get(url + "/health", headers={"Host": evil})
            mcp = await http.post(url + "/mcp/shop/t1", headers={"Host": evil, "Content-Type": "application/json"},
                                  json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert health.status_code == mcp.status_code == 421, (evil, health.text, mcp.text)
            assert "shop" not in health.text
        # a page on another origin is refused too
        r = await http.get(url + "/health", headers={"Origin": "http://evil.example"})
        assert r.status_code == 403


# ---- issue 36, item 16: what passes the loopback check binds, and binds loopback -------------------
@pytest.mark.parametrize("host", ["localhost.", "LocalHost.", "::ffff:127.0.0.1", "[::ffff:127.0.0.2]", "[::1]"])
async def test_every_host_the_check_passes_binds_on_loopback(host):
    """``localhost.`` and ``[::1]`` passed the check and then failed to bind (the resolver knows no
    such names); an IPv4-mapped address bound an IPv6 socket (it needs dual-stack). Each binds its
    loopback address now, and a client of the URL the server reports is served."""
    if "::1" in host and not _ipv6_loopback():
        pytest.skip("this host has no IPv6 loopback")
    assert is_loopback(host)
    app = create_app(ToolServer([BenchmarkMount(CATALOG)]), host=host)
    async with serve_in_background(app, host=host) as url:
        bound = url.split("//", 1)[1].rsplit(":", 1)[0].strip("[]")
        assert bound in ("localhost", "127.0.0.1", "127.0.0.2", "::1"), url
        async with connect(url + "/mcp/shop/t1") as c:
            assert result_text(await c.call_tool("pay", {})) == '{"result": "API_call_0"}'
