"""Who gets the next free sandbox worker: a fair queue between clients and their sessions.

A :class:`SandboxPool` has a few workers; every MCP session's calls compete for them. With a plain
first-come queue, twelve sessions calling a tool that runs to its 5 s limit keep every worker busy
and a thirteenth session's 0.2 s call waits behind them (7.8 s measured). :class:`FairGate` decides
instead, each time a worker is free:

* **A cap per session** on calls in flight (``per_session``): one session cannot take every worker.
* **Light sessions first**: a session is *slow* while the running average of its calls' durations
  (each new call counts half) is at least ``slow_s``, or while one of its calls has been running
  that long; *light* once it has finished a call and is not slow; *new* before that. A waiting
  call of a light session goes first, then one of a new session, then one of a slow session; among
  equals, the session with fewer calls in flight, then the one served least recently (round robin),
  then the one that asked first. Within a session calls keep their order.
* **A reserve**: calls of slow and new sessions together hold at most ``capacity - reserve``
  workers, so a light session finds a worker free even while a flood of slow or new sessions
  queues (a session's first call may wait for a worker; its later ones do not, once it is light).

* **Clients as well as sessions**: a call may name its *client* (the server names it by the peer's
  address and the caller's token or MCP client name) as well as its session. The kinds above are
  then the client's, over all its sessions: a client whose calls run long is slow in every session
  it opens, new ones included, so a flood of new sessions (each new, with no history) is one slow
  client, held to the non-reserved workers; a client known to be light is light in a new session
  too, so its first call there may take a reserved worker. Among equals, the client with fewer calls
  in flight and served least recently goes first, then the session. A session slow on its own is
  slow whatever its client. (A client that is itself new, its first call ever, still waits for a
  non-reserved worker: with names chosen by the caller, new clients cannot be told from a flood.)

``fair=False`` is the plain first-come queue without caps (what the pool did before; kept for
benchmarks that compare the two). Calls with no session (``session=None``, library use outside a
server) each count as a light session of their own; a session that names no client is its own
client. The gate only orders calls: it neither measures
nor limits what a call does (the sandbox's limits do that).
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FairGate", "GateTicket", "GateWaiter"]


@dataclass(eq=False)
class GateTicket:
    """One granted slot: hand it back with :meth:`FairGate.release`."""

    session: Hashable
    started: float
    order: int  # the grant's number: the gate's order of service


@dataclass(eq=False)
class GateWaiter:
    """A call waiting for a slot (``ticket`` is set once granted). ``on_grant`` runs under the
    gate's lock when the slot is granted (it must not block)."""

    session: Hashable
    arrived: int
    on_grant: Callable[[GateTicket], None] | None = None
    ticket: GateTicket | None = None
    cancelled: bool = False


@dataclass(eq=False)
class _Client:
    key: Hashable
    anonymous: bool
    running: list[GateTicket] = field(default_factory=list)
    avg_s: float | None = None  # running average of finished calls' durations, over its sessions
    last_served: int = -1
    flows: int = 0  # its sessions the gate remembers


@dataclass(eq=False)
class _Flow:
    key: Hashable
    anonymous: bool
    client: _Client
    waiting: deque[GateWaiter] = field(default_factory=deque)
    running: list[GateTicket] = field(default_factory=list)
    avg_s: float | None = None  # running average of finished calls' durations
    last_served: int = -1


class FairGate:
    """``capacity`` slots shared fairly between sessions (see the module's docstring). Thread-safe;
    waits block a thread (:meth:`acquire`) or an event loop's task (:meth:`aacquire`), or are
    observed without waiting (:meth:`submit`)."""

    def __init__(
        self,
        capacity: int,
        *,
        per_session: int | None = None,
        reserve: int | None = None,
        slow_s: float = 1.0,
        fair: bool = True,
        clock: Callable[[], float] = time.monotonic,
        memory: int = 4096,
    ) -> None:
        if capacity < 1:
            raise ValueError(f"a gate needs at least one slot, got capacity={capacity}")
        self.capacity = capacity
        self.per_session = max(1, capacity // 2) if per_session is None else int(per_session)
        self.reserve = (1 if capacity >= 2 else 0) if reserve is None else int(reserve)
        if self.per_session < 1 or not 0 <= self.reserve < capacity:
            raise ValueError(f"per_session must be >= 1 and reserve in [0, {capacity}), got {self.per_session}, {self.reserve}")
        self.slow_s = float(slow_s)
        self.fair = fair
        self._clock = clock
        self._memory = memory
        self._lock = threading.Lock()
        self._flows: OrderedDict[Hashable, _Flow] = OrderedDict()
        self._clients: dict[Hashable, _Client] = {}
        self._queued: dict[Hashable, _Flow] = {}  # flows with waiting calls, in the order they queued
        self._busy: dict[Hashable, _Flow] = {}  # flows with calls in flight
        self._free = capacity
        self._arrivals = itertools.count()
        self._grants = itertools.count()

    def describe(self) -> dict[str, Any]:
        if not self.fair:
            return {"policy": "first come, first served (no per-session cap)"}
        return {"policy": "fair queue between clients and their sessions", "per_session": self.per_session, "reserve": self.reserve,
                "slow_s": self.slow_s}

    # ---- waiting ---------------------------------------------------------------------------
    def submit(
        self, session: Hashable | None, on_grant: Callable[[GateTicket], None] | None = None,
        client: Hashable | None = None,
    ) -> GateWaiter:
        """Queue a call and grant what can be granted now; the waiter's ``ticket`` is set when (and
        if) its call got a slot. Never blocks. ``client`` groups sessions (``None``: the session is
        its own client); a session keeps the client of its first call."""
        with self._lock:
            key: Hashable = session if session is not None else object()
            flow = self._flows.get(key)
            if flow is None:
                ckey: Hashable = ("client", client) if client is not None else ("session", key)
                owner = self._clients.get(ckey)
                if owner is None:
                    owner = self._clients[ckey] = _Client(ckey, anonymous=session is None)
                owner.flows += 1
                flow = self._flows[key] = _Flow(key, anonymous=session is None, client=owner)
            self._flows.move_to_end(key)
            waiter = GateWaiter(key, next(self._arrivals), on_grant)
            flow.waiting.append(waiter)
            self._queued.setdefault(key, flow)
            self._dispatch()
            return waiter

    def cancel(self, waiter: GateWaiter) -> bool:
        """Withdraw a waiting call; ``False`` when it was already granted (then release its ticket)."""
        with self._lock:
            if waiter.ticket is not None:
                return False
            waiter.cancelled = True
            flow = self._flows.get(waiter.session)
            if flow is not None and waiter in flow.waiting:
                flow.waiting.remove(waiter)
                if not flow.waiting:
                    self._queued.pop(flow.key, None)
                self._forget_if_idle(flow)
            return True

    def acquire(self, session: Hashable | None, client: Hashable | None = None) -> GateTicket:
        """Wait (blocking this thread) for a slot."""
        granted = threading.Event()
        waiter = self.submit(session, lambda _t: granted.set(), client)
        try:
            granted.wait()
        except BaseException:  # e.g. KeyboardInterrupt: leave the queue, or give back what was granted
            if not self.cancel(waiter) and waiter.ticket is not None:
                self.release(waiter.ticket)
            raise
        assert waiter.ticket is not None
        return waiter.ticket

    async def aacquire(self, session: Hashable | None, client: Hashable | None = None) -> GateTicket:
        """Wait (without blocking the event loop) for a slot; a cancelled wait takes none."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[GateTicket] = loop.create_future()

        def deliver(ticket: GateTicket) -> None:
            if fut.cancelled():
                self.release(ticket)
            else:
                fut.set_result(ticket)

        def hand_over(ticket: GateTicket) -> None:
            loop.call_soon_threadsafe(deliver, ticket)

        waiter = self.submit(session, hand_over, client)
        try:
            return await fut
        except asyncio.CancelledError:
            if not self.cancel(waiter) and waiter.ticket is not None and fut.done() and not fut.cancelled():
                self.release(waiter.ticket)  # granted and delivered just as the wait was cancelled
            raise

    def release(self, ticket: GateTicket) -> None:
        """Hand a slot back (once per ticket); the next call in fair order gets it."""
        with self._lock:
            flow = self._flows.get(ticket.session)
            if flow is None or ticket not in flow.running:
                return
            flow.running.remove(ticket)
            flow.client.running.remove(ticket)
            if not flow.running:
                self._busy.pop(flow.key, None)
            took = self._clock() - ticket.started
            flow.avg_s = took if flow.avg_s is None else (flow.avg_s + took) / 2
            owner = flow.client
            owner.avg_s = took if owner.avg_s is None else (owner.avg_s + took) / 2
            self._free += 1
            self._forget_if_idle(flow)
            self._dispatch()

    # ---- observing (tests, describe) ---------------------------------------------------------
    def in_flight(self, session: Hashable) -> int:
        with self._lock:
            flow = self._flows.get(session)
            return 0 if flow is None else len(flow.running)

    @property
    def free(self) -> int:
        return self._free

    # ---- the policy ----------------------------------------------------------------------------
    def _slow(self, avg_s: float | None, running: list[GateTicket], now: float) -> bool:
        return (avg_s is not None and avg_s >= self.slow_s) or any(now - t.started >= self.slow_s for t in running)

    def _kind(self, flow: _Flow, now: float) -> int:
        """0 light (or anonymous), 1 new (its client has no call finished yet), 2 slow (the session
        or its client)."""
        owner = flow.client
        if self._slow(flow.avg_s, flow.running, now) or self._slow(owner.avg_s, owner.running, now):
            return 2
        return 1 if owner.avg_s is None and not flow.anonymous else 0

    def _pick(self, now: float) -> _Flow | None:
        if not self.fair:
            return min(self._queued.values(), key=lambda f: f.waiting[0].arrived, default=None)
        heavy = sum(len(f.running) for f in self._busy.values() if self._kind(f, now))
        best: tuple[int, int, int, int, int, int] | None = None
        chosen = None
        for flow in self._queued.values():
            if len(flow.running) >= self.per_session:
                continue
            kind = self._kind(flow, now)
            if kind and heavy >= self.capacity - self.reserve:
                continue
            owner = flow.client
            rank = (kind, len(owner.running), owner.last_served, len(flow.running), flow.last_served,
                    flow.waiting[0].arrived)
            if best is None or rank < best:
                best, chosen = rank, flow
        return chosen

    def _dispatch(self) -> None:
        now = self._clock()
        while self._free > 0 and self._queued:
            flow = self._pick(now)
            if flow is None:
                return
            waiter = flow.waiting.popleft()
            if not flow.waiting:
                self._queued.pop(flow.key, None)
            order = next(self._grants)
            ticket = GateTicket(flow.key, now, order)
            flow.running.append(ticket)
            flow.client.running.append(ticket)
            self._busy[flow.key] = flow
            flow.last_served = flow.client.last_served = order
            self._free -= 1
            waiter.ticket = ticket
            if waiter.on_grant is not None:
                waiter.on_grant(ticket)

    def _forget_if_idle(self, flow: _Flow) -> None:
        """Drop what is not needed any more: an idle anonymous flow at once, the least recently
        used idle flows beyond ``memory`` (their history goes with them)."""
        if flow.waiting or flow.running:
            return
        if flow.anonymous:
            self._drop(flow)
            return
        while len(self._flows) > self._memory:
            oldest = next(iter(self._flows.values()))
            if oldest.waiting or oldest.running:
                self._flows.move_to_end(oldest.key)
                break
            self._drop(oldest)

    def _drop(self, flow: _Flow) -> None:
        """Forget an idle session, and its client with its last remembered session."""
        self._flows.pop(flow.key, None)
        owner = flow.client
        owner.flows -= 1
        if owner.flows <= 0 and not owner.running:
            self._clients.pop(owner.key, None)
