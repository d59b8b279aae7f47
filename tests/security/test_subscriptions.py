"""``resources/subscribe`` from a hostile client (issue 36, item 2).

Subscriptions were stored for any URI of any length, without a cap, and outlived their session: a
closed session's connection sits in a reference cycle, so its entry in the server's weak table went
only when the cyclic garbage collector next ran (600 subscriptions with 200 KB URIs held ~115 MB after
the session closed). Now only URIs the endpoint serves are accepted (an existing KG entity or relation,
the endpoint's task), up to 1024 characters, 100 per session and 10,000 in all, and a session's
subscriptions are dropped when it closes. The real server over HTTP on 127.0.0.1, the MCP SDK's real
client (handshake-era protocol: ``resources/subscribe`` belongs to it), Kuzu on a temp dir.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from kg_store import KGStore
from server import BenchmarkMount, KGConfig, ToolServer, create_app, serve_in_background
from tool_specs import StaticCatalog, ToolSpec

REPO = Path(__file__).resolve().parents[2]
PAY = ToolSpec(name="pay", description="Pay.", input_schema={"type": "object"}, executor={"kind": "placeholder"})
ENTITIES = 120
MAX_SUBSCRIPTION_URI_CHARS = 1024  # server.surface's caps
MAX_SUBSCRIPTIONS_PER_SESSION = 100
NAME_PAD = 980  # entity names of ~1000 characters: URIs near the length cap, so that what is held shows


def entity(i: int) -> str:
    return f"e{i:03d}-" + "n" * NAME_PAD


def uri(i: int) -> str:
    return f"kg://shop/entity/{entity(i)}"


def tool_server(db: Path) -> ToolServer:
    store = KGStore.from_triples(db, [(entity(i), "knows", entity(i + 1)) for i in range(ENTITIES - 1)])
    mount = BenchmarkMount(StaticCatalog("shop", {"t1": [PAY], "t2": [PAY]}), kg=KGConfig(store),
                           task_query=lambda _t: "a query")
    return ToolServer([mount])


pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")  # handshake-era APIs


@contextlib.asynccontextmanager
async def legacy(http: httpx2.AsyncClient, url: str) -> AsyncIterator[Client]:
    async with Client(streamable_http_client(url, http_client=http), mode="legacy") as c:
        yield c


async def test_only_served_uris_of_bounded_length_and_count_are_accepted(tmp_path):
    ts = tool_server(tmp_path / "db")
    async with serve_in_background(create_app(ts)) as base, httpx2.AsyncClient(timeout=60) as http:
        async with legacy(http, base + "/mcp/shop/t1") as c:
            await c.subscribe_resource(uri(0))
            await c.subscribe_resource("kg://shop/relation/knows")
            await c.subscribe_resource("task://shop/t1")
            for unknown in ("kg://shop/entity/nobody", "kg://shop/relation/hates", "task://shop/t2",
                            "task://shop/t9", "kg://other/entity/e000", "https://evil.example/x", "file:///etc/passwd"):
                with pytest.raises(MCPError, match="no such resource|no resource") as refused:
                    await c.subscribe_resource(unknown)
                assert len(str(refused.value)) < 400
            with pytest.raises(MCPError, match=f"too long to subscribe to: at most {MAX_SUBSCRIPTION_URI_CHARS}") as long:
                await c.subscribe_resource("kg://shop/entity/" + "x" * 200_000)
            assert len(str(long.value)) < 400 and "(200017 chars)" in str(long.value)
            for i in range(1, MAX_SUBSCRIPTIONS_PER_SESSION - 2):  # 3 held already: fill to the cap
                await c.subscribe_resource(uri(i))
            await c.subscribe_resource(uri(1))  # held already: not a new one
            with pytest.raises(MCPError, match=f"{MAX_SUBSCRIPTIONS_PER_SESSION} resource subscriptions, the most"):
                await c.subscribe_resource(uri(MAX_SUBSCRIPTIONS_PER_SESSION))
            await c.unsubscribe_resource(uri(1))
            await c.subscribe_resource(uri(MAX_SUBSCRIPTIONS_PER_SESSION))  # room again
        async with legacy(http, base + "/mcp/shop/t1") as other:  # the cap is per session
            await other.subscribe_resource(uri(MAX_SUBSCRIPTIONS_PER_SESSION + 1))


async def test_a_closed_sessions_subscriptions_are_dropped_at_once(tmp_path):
    """Without a garbage collection: the closed connection lives on in a reference cycle."""
    ts = tool_server(tmp_path / "db")
    async with serve_in_background(create_app(ts)) as base, httpx2.AsyncClient(timeout=60) as http:
        gc.disable()
        try:
            for _ in range(3):
                async with legacy(http, base + "/mcp/shop/t1") as c:
                    for i in range(10):
                        await c.subscribe_resource(uri(i))
                    await c.set_logging_level("debug")
                    await c.list_resources()
                    assert len(ts.surface._subscribed) == 1
                deadline = time.monotonic() + 10
                while ts.surface._subscribed and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
                assert not ts.surface._subscribed and not ts.surface._levels and not ts.surface._watching
        finally:
            gc.enable()


# ---- the server's memory, measured -------------------------------------------------------------------
SERVER = """
import asyncio, sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from test_subscriptions import tool_server
from server import create_app, serve_in_background
async def main():
    async with serve_in_background(create_app(tool_server(Path({db!r})))) as url:
        print(url, flush=True)
        await asyncio.Event().wait()
asyncio.run(main())
"""


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


async def rounds(http: httpx2.AsyncClient, url: str, sessions: int, per_session: int) -> None:
    """``sessions`` sessions, 4 at a time, each subscribing to ``per_session`` URIs and unsubscribing
    from half of them, closed with the other half held."""

    async def one(k: int) -> None:
        async with legacy(http, url) as c:
            for i in range(per_session):
                await c.subscribe_resource(uri((k + i) % ENTITIES))
            for i in range(0, per_session, 2):
                await c.unsubscribe_resource(uri((k + i) % ENTITIES))

    for start in range(0, sessions, 4):
        await asyncio.gather(*(one(k) for k in range(start, min(start + 4, sessions))))


async def hostile(http: httpx2.AsyncClient, url: str, sessions: int, attempts: int) -> None:
    """The issue's attack: sessions that try many URIs of 200 KB each (all held, before), then close."""
    for k in range(sessions):
        async with legacy(http, url) as c:
            for i in range(attempts):
                with contextlib.suppress(MCPError):
                    await c.subscribe_resource(f"kg://shop/entity/{k}-{i}-" + "x" * 200_000)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the server's RSS from /proc")
async def test_server_memory_returns_after_10000_subscribe_rounds(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    code = SERVER.format(tests=str(Path(__file__).parent), db=str(tmp_path / "db"))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env, cwd=REPO)
    try:
        line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), 120)  # type: ignore[union-attr]
        assert line.startswith("http://"), line
        url = line.strip() + "/mcp/shop/t1"
        async with httpx2.AsyncClient(timeout=60) as http:
            await asyncio.wait_for(rounds(http, url, 8, MAX_SUBSCRIPTIONS_PER_SESSION), 300)  # warm up
            await asyncio.wait_for(hostile(http, url, 1, 10), 300)
            start = rss_mb(proc.pid)
            await asyncio.wait_for(rounds(http, url, 100, MAX_SUBSCRIPTIONS_PER_SESSION), 600)  # 10,000 subscribes
            await asyncio.wait_for(hostile(http, url, 2, 100), 300)  # 40 MB of URIs
            grown = rss_mb(proc.pid) - start
            deadline = time.monotonic() + 10  # sessions' teardown runs after their DELETE is answered
            while grown >= 10 and time.monotonic() < deadline:
                await asyncio.sleep(0.5)
                grown = rss_mb(proc.pid) - start
        assert grown < 10, f"the server grew by {grown:.1f} MB (RSS {start:.0f} MB after warm-up)"
    finally:
        proc.kill()
        proc.wait(timeout=30)
