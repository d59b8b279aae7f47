"""The new-session attack on the sandbox's fair queue (issue 36, item 10), through the real server.

A flooder opens a new MCP session for every call of a tool that runs long; each of its sessions is
new, so a fair queue by session alone never saw it as slow and kept the reserved worker from every
new session, the victim's included (every ``evals run`` episode opens one): the victim's first call
waited 18.4 s. Shared by client (the peer's address, its token, its MCP client name), the flooder is
one slow client and a light client's first call in a new session takes the reserved worker.

Issue 46 item 10: the flooder may also send no token and take the MCP client name that `evals run`
sent (the SDK's default, ``mcp``): it then shared the victim's place in the queue (4.5-12.5 s per
call). `evals run` now draws its name per run, and a name that could be guessed counts for nothing
without a token (each such session is a client of its own).

Real parts: the HTTP server on 127.0.0.1, the MCP SDK's client, a two-worker sandbox pool. The
flooder's calls sleep for a minute; the victim's call must come back well before any of them ends
(bounded at 30 s, a hang bound, not a timing claim: the queue before waited for a flooder's call).
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from client.agent import result_text
from client.mcp_session import HTTPClientPool, connect, make_http_client
from evals.core.transport import HTTPSessions
from server import BenchmarkMount, ToolServer, create_app, serve_in_background
from tool_specs import SandboxExecutor, SandboxLimits, SandboxPool, StaticCatalog, ToolSpec

HOLD_S = 60.0  # how long a flooder's call runs (asleep: it costs no CPU)
SLEEP = f"def hold():\n    import time\n    time.sleep({HOLD_S})\n    return 'done'\n"
QUICK = "def quick():\n    return 'quick'\n"


async def flooder(base: str, http: object, started: list[int], stop: asyncio.Event, k: int) -> None:
    """Opens a new session for each call (its HTTP client sends a token of its own: another client)."""
    i = 0
    while not stop.is_set():
        async with connect(f"{base}/mcp/lab/t?session=flood-{k}-{i}", http_client=http) as c:  # type: ignore[arg-type]
            started.append(1)
            await c.call_tool("hold", {})
        i += 1


@pytest.mark.parametrize("flooder_token", ["flooder", None], ids=["own-token", "no-token-named-mcp"])
async def test_a_light_clients_new_session_is_served_during_a_new_session_flood(flooder_token: str | None) -> None:
    limits = SandboxLimits(wall_s=HOLD_S + 30, cpu_s=30)
    with SandboxPool(2, limits=limits) as pool:  # 2 workers: one is kept in reserve
        pool.warm()
        tools = [ToolSpec(name=n, description=f"{n}.", input_schema={"type": "object"},
                          executor=SandboxExecutor(code, n, pool=pool)) for n, code in (("hold", SLEEP), ("quick", QUICK))]
        ts = ToolServer([BenchmarkMount(StaticCatalog("lab", {"t": tools}))])
        stop, started = asyncio.Event(), []
        async with HTTPClientPool(timeout=HOLD_S + 60) as http, \
                make_http_client(timeout=HOLD_S + 60, token=flooder_token) as flood_http, \
                serve_in_background(create_app(ts)) as base:
            victim = HTTPSessions(base, http)  # as `evals run` opens its episodes' sessions (the SDK names the flooder "mcp")
            async with victim.session("lab", "t") as v:  # the victim's history
                assert result_text(await v.call_tool("quick", {})) == "quick"
            attack = [asyncio.create_task(flooder(base, flood_http, started, stop, k)) for k in range(6)]
            try:
                async with asyncio.timeout(30):
                    while len(started) < 6 or pool.gate.free > 1:  # the flood holds its worker, the rest queue
                        await asyncio.sleep(0.05)
                await asyncio.sleep(1.5)  # the flooder's running call is now past slow_s
                for _ in range(3):  # new sessions, as evals run opens one per episode
                    async with asyncio.timeout(30):
                        async with victim.session("lab", "t") as v:
                            res = await v.call_tool("quick", {})
                    assert not res.is_error and result_text(res) == "quick", result_text(res)
                assert pool.gate.free == 1  # the flooder still holds its worker: none of its calls ended
            finally:
                stop.set()
                for t in attack:
                    t.cancel()
                for t in attack:
                    with contextlib.suppress(BaseException):
                        await t
