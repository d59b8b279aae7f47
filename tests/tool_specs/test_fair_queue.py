"""The fair queue in front of the sandbox workers (issue 26, item 2): who gets the next free worker.

The gate is driven by hand with its own clock, so each test states an exact order of service; no
test here depends on how fast anything runs. The last test runs real sandbox calls and checks an
order the gate guarantees whatever the machine's load (a session's calls never overlap at a cap of
one). What the policy buys in latency is measured by ``bench/bench_fairness.py``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json

import pytest

from tool_specs import CallContext, SandboxExecutor, SandboxPool, ToolSpec
from tool_specs.fair_queue import FairGate, GateTicket


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def granted(gate: FairGate, calls: list[tuple[str, object]]) -> list[str]:
    """Submit ``(label, session)`` calls in order; the labels of those granted at once."""
    out = []
    for label, session in calls:
        w = gate.submit(session)
        if w.ticket is not None:
            out.append(label)
    return out


def serve_all(gate: FairGate, clock: Clock, waiters: dict[str, object], *, took: float) -> list[str]:
    """Finish running calls one at a time (each ran ``took`` s) and record who is granted next."""
    order = []
    while True:
        running = [(lbl, w) for lbl, w in waiters.items() if w.ticket is not None and lbl not in order]  # type: ignore[attr-defined]
        if not running:
            return order
        running.sort(key=lambda item: item[1].ticket.order)  # type: ignore[attr-defined]
        label, w = running[0]
        order.append(label)
        clock.now += took
        gate.release(w.ticket)  # type: ignore[attr-defined]


def test_first_come_first_served_lets_a_flood_of_slow_calls_go_first():
    """The behaviour before (``fair=False``): a victim's call waits behind every queued call."""
    clock = Clock()
    gate = FairGate(2, fair=False, clock=clock)
    waiters = {f"h{i}": gate.submit(f"hostile-{i}") for i in range(12)}
    waiters["victim"] = gate.submit("victim")
    order = serve_all(gate, clock, waiters, took=5.0)
    assert order.index("victim") == 12  # served last: 11 slow calls finished before it got a worker


def test_a_session_holds_at_most_its_cap_of_workers():
    gate = FairGate(4, per_session=2, clock=Clock())
    assert granted(gate, [("a1", "a"), ("a2", "a"), ("a3", "a"), ("a4", "a")]) == ["a1", "a2"]
    assert gate.free == 2  # free workers, and still a's third call waits: the cap is per session
    assert granted(gate, [("b1", "b")]) == ["b1"]
    assert gate.in_flight("a") == 2 and gate.in_flight("b") == 1


def test_waiting_sessions_are_served_round_robin():
    """a queued three calls before b and c queued one each: a's second call goes after b's and c's."""
    clock = Clock()
    gate = FairGate(1, per_session=1, clock=clock)
    _make_light(gate, ["b", "c", "a"])  # each has had a quick call (all light), b longest ago
    waiters = {"a1": gate.submit("a"), "a2": gate.submit("a"), "a3": gate.submit("a"),
               "b1": gate.submit("b"), "c1": gate.submit("c")}
    assert serve_all(gate, clock, waiters, took=0.1) == ["a1", "b1", "c1", "a2", "a3"]


def _make_light(gate: FairGate, sessions: list[str]) -> None:
    """Each session has had one quick call (its history: light)."""
    for s in sessions:
        w = gate.submit(s)
        assert w.ticket is not None
        gate.release(w.ticket)


def _make_slow(gate: FairGate, clock: Clock, sessions: list[str]) -> None:
    """Each session runs one call to the 5 s limit (its history: slow)."""
    for s in sessions:
        w = gate.submit(s)
        assert w.ticket is not None
        clock.now += 5.0
        gate.release(w.ticket)


def test_twelve_slow_sessions_leave_a_worker_for_a_light_one():
    """The attack of the issue, in the gate's terms: twelve sessions whose calls run to the 5 s limit
    queue one call each; they get at most capacity - reserve workers, and a light session's call
    is granted at once, every time."""
    clock = Clock()
    gate = FairGate(4, per_session=2, reserve=1, clock=clock)
    hostile = [f"hostile-{i}" for i in range(12)]
    _make_slow(gate, clock, hostile)
    _make_light(gate, ["victim"])
    waiters = {s: gate.submit(s) for s in hostile}
    assert sum(w.ticket is not None for w in waiters.values()) == 3
    for round_ in range(5):
        light = gate.submit("victim")
        assert light.ticket is not None, round_
        gate.release(light.ticket)
        clock.now += 5.0
        first_done = min(_running(gate), key=lambda t: t.order)
        gate.release(first_done)  # the next hostile call takes its worker, not the reserve
        assert len(_running(gate)) == 3 and gate.free == 1, round_


def _running(gate: FairGate) -> list[GateTicket]:
    return [t for f in gate._busy.values() for t in f.running]


def test_a_call_running_past_slow_s_makes_its_session_slow_at_once():
    """No history is needed once a call has run long: while its calls run past ``slow_s`` a
    session counts as slow, so its next call leaves the reserved worker to a light session."""
    clock = Clock()
    gate = FairGate(3, per_session=3, reserve=1, clock=clock)
    _make_light(gate, ["h", "victim"])
    assert granted(gate, [("h1", "h"), ("h2", "h")]) == ["h1", "h2"]  # light so far: both run
    clock.now += 2.0  # both are now past slow_s
    third = gate.submit("h")
    assert third.ticket is None and gate.free == 1  # one worker free, but it is the reserve
    victim = gate.submit("victim")
    assert victim.ticket is not None


def test_a_slow_session_goes_behind_light_ones_but_is_served():
    clock = Clock()
    gate = FairGate(2, per_session=1, reserve=1, clock=clock)
    _make_slow(gate, clock, ["slow"])
    _make_light(gate, ["holder", "light"])
    hold = gate.submit("holder")  # a light session holds one worker
    slow = gate.submit("slow")  # the reserve is for light sessions, but one slow call may run
    assert hold.ticket is not None and slow.ticket is not None
    slow2 = gate.submit("slow")  # its cap (1) is reached
    light = gate.submit("light")
    assert light.ticket is None and slow2.ticket is None
    gate.release(hold.ticket)
    assert light.ticket is not None and slow2.ticket is None  # light first
    gate.release(slow.ticket)
    assert slow2.ticket is not None  # and the slow session is not starved


def test_new_sessions_share_the_non_reserved_workers_and_go_before_slow_ones():
    """A burst of new sessions cannot take the reserve either (a new session may be a slow one);
    a new session's call goes before a slow session's when a worker frees."""
    clock = Clock()
    gate = FairGate(4, per_session=1, reserve=1, clock=clock)
    _make_slow(gate, clock, ["slow"])
    _make_light(gate, ["light"])
    burst = [gate.submit(f"new-{i}") for i in range(6)]
    assert sum(w.ticket is not None for w in burst) == 3 and gate.free == 1
    slow = gate.submit("slow")
    assert slow.ticket is None
    assert gate.submit("light").ticket is not None  # the reserve
    gate.release(next(w.ticket for w in burst if w.ticket is not None))
    assert burst[3].ticket is not None and slow.ticket is None  # the next new session, not the slow one


# ---- clients as well as sessions (issue 36, item 10) -------------------------------------------------
def test_a_flood_of_new_sessions_is_one_slow_client_and_a_light_clients_new_session_takes_the_reserve():
    """The new-session attack: a client opens a new session for every call (each new, no history),
    so sessions alone never see it as slow. By client, its sessions are one client, slow once its
    first calls ran long; a victim client known to be light opens a new session (as every ``evals run``
    episode does) and its first call there is granted at once, each time."""
    clock = Clock()
    gate = FairGate(4, per_session=1, reserve=1, clock=clock)
    w = gate.submit("victim-0", client="victim")  # the victim client's history: light
    assert w.ticket is not None
    gate.release(w.ticket)
    flood = [gate.submit(f"flood-{i}", client="flooder") for i in range(20)]
    assert sum(f.ticket is not None for f in flood) == 3 and gate.free == 1  # new: the non-reserved workers
    n = 20
    for round_ in range(5):
        clock.now += 2.0  # the flooder's calls run past slow_s: the flooder is slow, in every session
        mine = gate.submit(f"victim-{round_ + 1}", client="victim")  # a new session of a light client
        assert mine.ticket is not None, round_
        gate.release(mine.ticket)
        clock.now += 3.0
        gate.release(min(_running(gate), key=lambda t: t.order))  # a flooder's call ends; its next one runs
        flood.append(gate.submit(f"flood-{n}", client="flooder"))  # and it opens another new session
        n += 1
        assert len(_running(gate)) == 3 and gate.free == 1, round_


def test_a_victims_new_session_goes_ahead_of_the_flooders_queue():
    """With no reserve, a light client's first call in a new session waits only for the next free
    worker, never behind the flooder's queued calls; so does a new client's, ahead of a slow one."""
    clock = Clock()
    gate = FairGate(2, per_session=1, reserve=0, clock=clock)
    w = gate.submit("v-0", client="victim")
    assert w.ticket is not None
    gate.release(w.ticket)
    flood = [gate.submit(f"flood-{i}", client="flooder") for i in range(10)]
    clock.now += 5.0  # both running flooder calls are past slow_s
    victim = gate.submit("v-1", client="victim")
    stranger = gate.submit("s-0", client="stranger")  # a client never seen: new
    assert victim.ticket is None and stranger.ticket is None
    gate.release(flood[0].ticket)  # type: ignore[arg-type]
    assert victim.ticket is not None and stranger.ticket is None
    gate.release(flood[1].ticket)  # type: ignore[arg-type]
    assert stranger.ticket is not None  # new before slow
    assert sum(f.ticket is not None for f in flood) == 2


def test_a_clients_sessions_share_its_turn():
    """Among equals the client with fewer calls in flight goes first: a client with many sessions
    does not get a turn per session."""
    gate = FairGate(2, per_session=1, reserve=0, clock=Clock())
    for c in ("a", "b"):
        w = gate.submit(f"{c}-0", client=c)
        gate.release(w.ticket)  # type: ignore[arg-type]
    a = [gate.submit(f"a-{i}", client="a") for i in range(1, 6)]
    assert all(w.ticket is not None for w in a[:2])
    b = gate.submit("b-1", client="b")
    gate.release(a[0].ticket)  # type: ignore[arg-type]
    assert b.ticket is not None and a[2].ticket is None  # b holds none, a one: b's turn


def test_clients_are_forgotten_with_their_sessions():
    gate = FairGate(2, clock=Clock(), memory=3)
    for i in range(10):
        w = gate.submit(f"s-{i}", client=f"c-{i}")
        gate.release(w.ticket)  # type: ignore[arg-type]
    assert len(gate._flows) <= 3 and len(gate._clients) <= 3


def test_calls_without_a_session_are_each_their_own():
    gate = FairGate(3, per_session=1, clock=Clock())
    assert granted(gate, [("x", None), ("y", None), ("z", None)]) == ["x", "y", "z"]


def test_the_gates_settings_are_checked():
    with pytest.raises(ValueError, match="at least one slot"):
        FairGate(0)
    with pytest.raises(ValueError, match="reserve"):
        FairGate(2, reserve=2)


async def test_a_cancelled_wait_takes_no_worker():
    gate = FairGate(1, per_session=1)
    held = await gate.aacquire("a")
    waiting = asyncio.create_task(gate.aacquire("b"))
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    gate.release(held)
    assert gate.free == 1
    again = await gate.aacquire("c")  # the slot went back, not to the cancelled wait
    gate.release(again)
    assert gate.free == 1


async def test_a_grant_racing_a_cancellation_is_handed_back():
    gate = FairGate(1, per_session=1)
    held = await gate.aacquire("a")
    waiting = asyncio.create_task(gate.aacquire("b"))
    await asyncio.sleep(0)
    gate.release(held)  # granted to b now; its delivery is scheduled on the loop
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    for _ in range(3):
        await asyncio.sleep(0)
    assert gate.free == 1


SLEEPER = "import time\ndef f(tag):\n    t0 = time.monotonic()\n    time.sleep(0.3)\n    return [tag, t0, time.monotonic()]\n"


async def test_through_the_executor_a_sessions_calls_never_overlap_at_a_cap_of_one():
    """Real sandbox calls: the executor names the MCP session (the CallContext's state) to the
    pool's gate. Three concurrent calls of one session run one after the other; the gate's record
    shows two sessions were told apart."""
    with SandboxPool(2, per_session=1) as pool:
        spec = ToolSpec(name="sleep", description="Sleeps.",
                        input_schema={"type": "object", "properties": {"tag": {"type": "string"}}},
                        executor=SandboxExecutor(SLEEPER, "f", pool=pool))
        one, other = CallContext(), CallContext()
        results = await asyncio.gather(*(spec.call({"tag": f"a{i}"}, one) for i in range(3)),
                                       spec.call({"tag": "b"}, other))
        spans = [json.loads(r.text) for r in results]
        assert not any(r.is_error for r in results), results
        mine = sorted((s[1], s[2]) for s in spans[:3])
        assert all(end <= start for (_, end), (start, _) in zip(mine, mine[1:], strict=False)), mine
        assert pool.gate.free == 2 and pool.describe()["queue"]["per_session"] == 1
        assert one.state.keys() == other.state.keys() and one.state != other.state  # two sessions


def test_sync_callers_in_threads_share_the_gate():
    with SandboxPool(1) as pool, concurrent.futures.ThreadPoolExecutor(3) as ex:
        replies = list(ex.map(lambda i: pool.run(SLEEPER, "f", {"tag": i}, session="s"), range(3)))
        assert [r.ok for r in replies] == [True] * 3
        spans = sorted((r.value[1], r.value[2]) for r in replies)
        assert all(end <= start for (_, end), (start, _) in zip(spans, spans[1:], strict=False))
        assert pool.gate.free == 1
