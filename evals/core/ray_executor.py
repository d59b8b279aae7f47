"""``evals run --executor ray``: the run's workers as Ray actors, on this machine or across a cluster.

Ray only places and carries: each actor (:class:`RayWorker`) is a
:class:`~evals.core.worker_process.WorkerCore` on the actor's event loop, so it loads the benchmark
and serves its tools itself, in-process (no shared server), and runs the episodes the parent hands
it. The parent is the same
:class:`~evals.core.workers.WorkerPool` as with local worker processes: it holds the run directory,
the progress display, rate limits, budget and breaker, and writes every trace line. Only the
channel differs (:class:`RayChannel`):

* parent to actor: ``deliver(seq, messages)``, the messages of one turn of the parent's event loop
  in one call. Ray runs an async actor's calls in no guaranteed order, so each call carries a
  sequence number and the actor applies them in that order (a ``cancel`` never overtakes its ``run``);
* actor to parent: ``poll()``, a long poll the parent keeps one of in flight; it returns the
  messages the actor sent since the last one, in order, gathered for up to ``POLL_GATHER_S`` after
  the first (``None`` once the actor stopped);
* ``writes_events`` is false: a remote node cannot append to the run's ``events.jsonl``, so the
  parent writes an episode's event lines when its ``done`` arrives.

Start: each actor is placed first (its ``where()`` answers once a node has given it a CPU), then
loads the benchmark on its node (``start()``: the data fetched if the node lacks it, the KG built);
the pool hands out no episode before every actor is ready, and the first refusal stops the run.
``PLACE_TIMEOUT_S`` and ``LOAD_TIMEOUT_S`` are safety nets of many minutes, not expected waits.

An actor that dies (killed, its node lost) fails its poll: the pool stops the run like a dead local
worker, naming the worker; its episodes in flight get no trace and run again on resume (actors are
not restarted: an episode is never run twice into the traces). A driver that dies takes its actors
with it (Ray's ownership).

:func:`open_cluster` connects: to ``--ray-address`` (``auto``, ``ray://host:10001``, ``host:6379``),
to the Ray this process is already connected to, or else starts a local head on 127.0.0.1 with
``--workers`` CPUs and no dashboard, shut down when the run ends. ``--workers auto`` is one actor
per CPU of the cluster given by ``--ray-address``, and for a local head the same number of workers
as without Ray.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import os
import socket
import traceback
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from client.eventloop import episode_gc, name_asyncio

from .worker_process import WorkerCore
from .workers import Channel, WorkerError

if TYPE_CHECKING:
    from .run_options import RunOptions

__all__ = ["RAY_MISSING", "RayChannel", "RayWorker", "open_cluster", "ray_installed", "start_local_head"]

log = logging.getLogger(__name__)

RAY_MISSING = "--executor ray needs Ray, which is not installed: pip install 'mcp-multihop-evals[ray]'"
STOP_TIMEOUT_S = 30.0
PLACE_TIMEOUT_S = 600.0
"""How long an actor may wait for a node with a free CPU. Only a safety net: an actor that a cluster
of enough CPUs places late (nodes still joining, a loaded machine) is waited for; a cluster that has
too few CPUs for ``--workers`` never places it, and this turns that wait into an error naming it."""
LOAD_TIMEOUT_S = 1800.0
"""How long a placed actor may take to get the data and build the KG on its node. Also only a safety
net against a node that hangs: a node that cannot get the data refuses at once (``DataNotFound``),
and an actor whose node is lost fails its call as soon as Ray knows."""
POLL_GATHER_S = 0.003
POLL_GATHER_FROM = 16
"""With at least ``POLL_GATHER_FROM`` episodes running on an actor, its poll waits ``POLL_GATHER_S``,
once it has a message, for more to send in the same reply. Episodes end in bunches and a Ray call
costs about a millisecond of CPU on each side: at concurrency 64 with 2 actors on the 2-CPU machine
gathering cut the harness's CPU by about 1.5 ms per episode (``bench/bench_harness.py --layouts
ray``); with few episodes running it only delays the replies (at concurrency 8 it cost 0.03 of the
ratio), so it is left out there."""
SINGLE_MACHINE_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # "0": Ray on one machine, on 127.0.0.1


def ray_installed() -> bool:
    return importlib.util.find_spec("ray") is not None


def ray_module(name: str = "ray") -> Any:
    """Ray (or one of its modules), imported when a run uses it; typed ``Any`` so that the type check
    is the same with and without the ``ray`` extra installed."""
    return importlib.import_module(name)


# ---- the worker: a Ray actor ------------------------------------------------------------------


class RayWorker:
    """One worker as a Ray actor (made remote with ``ray.remote(RayWorker)``; its methods are async,
    so Ray runs them on the actor's event loop, where the :class:`WorkerCore` lives)."""

    def __init__(self) -> None:
        self._outbox: list[dict[str, Any]] = []
        self._wake: asyncio.Event | None = None
        self._stopping: asyncio.Event | None = None
        self._life: asyncio.Task[None] | None = None
        self._core: WorkerCore | None = None
        self._closed = False
        self._held: dict[int, list[dict[str, Any]]] = {}
        self._next = 0

    async def start(self, options: str) -> dict[str, Any]:
        """Load the benchmark and open the episode environment: ``{"ready": true, "pid", "node"}``
        or ``{"error": MESSAGE}``."""
        loop = asyncio.get_running_loop()
        self._wake, self._stopping = asyncio.Event(), asyncio.Event()
        ready: asyncio.Future[dict[str, Any]] = loop.create_future()
        # the environment is opened and closed by one task that lives as long as the actor serves
        # (its task groups and cancel scopes must be left by the task that entered them)
        self._life = asyncio.create_task(self._live(options, ready))
        return await ready

    async def _live(self, options: str, ready: asyncio.Future[dict[str, Any]]) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                try:
                    from .run_options import RunOptions

                    opts = RunOptions.decode(options).for_worker()
                    _ensure_data(opts)
                    core = WorkerCore(opts, self._send)
                    stack.push_async_callback(core.aclose)
                    await core.open(stack)
                except Exception as exc:
                    from .data import DataNotFound

                    if not isinstance(exc, DataNotFound):  # that one says all (the parent prints it)
                        traceback.print_exc()
                    ready.set_result({"error": f"{type(exc).__name__}: {exc}"})
                    return
                self._core = core
                ray = ray_module()

                ready.set_result({"ready": True, "pid": os.getpid(), "node": ray.util.get_node_ip_address()})
                assert self._stopping is not None
                with episode_gc():  # as a local worker: the loaded benchmark out of collections
                    await self._stopping.wait()
        finally:
            self._closed = True
            if self._wake is not None:
                self._wake.set()

    def _send(self, msg: dict[str, Any]) -> None:
        self._outbox.append(msg)
        if self._wake is not None:
            self._wake.set()

    async def deliver(self, seq: int, messages: list[dict[str, Any]]) -> None:
        """The parent's messages, in the parent's order (``seq`` counts the calls from 0)."""
        self._held[seq] = messages
        name_asyncio()  # the episodes started below run in (a copy of) this call's context
        while (batch := self._held.pop(self._next, None)) is not None:
            self._next += 1
            if self._core is not None and not self._closed:
                for msg in batch:
                    self._core.handle(msg)

    async def poll(self) -> list[dict[str, Any]] | None:
        """The messages sent since the last poll, once there is one; ``None`` once stopped."""
        assert self._wake is not None
        while not self._outbox and not self._closed:
            self._wake.clear()
            await self._wake.wait()
        if not self._closed and self._core is not None and len(self._core.running) >= POLL_GATHER_FROM:
            await asyncio.sleep(POLL_GATHER_S)  # the episodes that end together answer in one call
        out, self._outbox = self._outbox, []
        return out if out or not self._closed else None

    async def stop(self) -> None:
        """Cancel the episodes still running, close the environment."""
        if self._stopping is not None:
            self._stopping.set()
        if self._life is not None:
            await self._life

    async def pid(self) -> int:
        return os.getpid()

    async def where(self) -> dict[str, Any]:
        """Where the actor was placed: ``{"pid", "node" (its address), "node_id" (Ray's)}``; the
        first call the parent makes, so that it knows the actor is placed before it waits for it to load."""
        ray = ray_module()

        return {"pid": os.getpid(), "node": ray.util.get_node_ip_address(),
                "node_id": ray.get_runtime_context().get_node_id()}


def _ensure_data(opts: RunOptions) -> None:
    """The benchmark's data on this node: ``$EVALS_DATA_DIR``, or the pinned files fetched into the
    node's cache on first use (as ``evals run`` does on the machine it starts on)."""
    from .data import DataNotFound, data_dir
    from .fetch import ensure_data, unavailable_message

    missing = ensure_data([opts.benchmark], data_dir(), options={opts.benchmark: opts.benchmark_options})
    if missing:
        raise DataNotFound(unavailable_message(missing.values()))


# ---- the parent's end -------------------------------------------------------------------------


def _wrap(ref: Any) -> asyncio.Future[Any]:
    """A Ray ObjectRef as an asyncio future of this loop."""
    return asyncio.wrap_future(ref.future())


def _why(exc: BaseException) -> str:
    """A dead actor's error in one line (Ray's messages run over many)."""
    text = " ".join(str(exc).split())
    detail = text.partition("Worker exit detail:")[2].partition(" Some common causes")[0].strip()
    head = type(exc).__name__
    return f"{head}: {detail or text}"[:300]


class RayChannel:
    """The parent's end of one Ray actor (see the module docstring)."""

    writes_events = False  # the actor may be on another node: the parent logs an episode's events at its end

    def __init__(self, index: int, actor: Any, info: dict[str, Any]):
        self.actor = actor
        self.name = f"worker {index} (Ray actor on {info['node']}, pid {info['pid']})"
        self._seq = 0
        self._out: list[dict[str, Any]] = []
        self._flush_due = False
        self._inbox: deque[dict[str, Any]] = deque()
        self._why: str | None = None
        self._closed = False

    @classmethod
    async def start(cls, index: int, opts: RunOptions, remote: Any, tag: str) -> RayChannel:
        """Place the actor, then wait until it has loaded the benchmark on its node (or refused);
        the pool hands out no episode before every actor is ready, so a run either has all its
        ``--workers`` or stops before its first episode."""
        ray = ray_module()

        actor = remote.options(
            name=f"evals-worker-{tag}-{index}", num_cpus=1, max_restarts=0, scheduling_strategy="SPREAD",
        ).remote()
        try:
            try:
                where = await asyncio.wait_for(_wrap(actor.where.remote()), PLACE_TIMEOUT_S)
            except TimeoutError:
                cpus = ray.cluster_resources().get("CPU", 0)
                raise WorkerError(
                    f"worker {index} (a Ray actor) was not placed on any node within {PLACE_TIMEOUT_S:.0f} s: "
                    f"it needs a free CPU, and the cluster has {cpus:g} CPUs for --workers {opts.workers}"
                ) from None
            except ray.exceptions.RayError as exc:
                raise WorkerError(f"worker {index} (a Ray actor) died before it was placed: {_why(exc)}") from None
            log.info("worker %d placed on node %s (%s), pid %d", index, where["node_id"], where["node"], where["pid"])
            here = f"worker {index} (Ray actor on {where['node']}, pid {where['pid']})"
            try:
                info = await asyncio.wait_for(_wrap(actor.start.remote(opts.encode())), LOAD_TIMEOUT_S)
            except TimeoutError:
                raise WorkerError(f"{here} did not load the benchmark within {LOAD_TIMEOUT_S:.0f} s") from None
            except ray.exceptions.RayError as exc:
                raise WorkerError(f"worker {index} (a Ray actor) died before it was ready: {_why(exc)}") from None
            if "error" in info:
                raise WorkerError(f"worker {index} (a Ray actor) failed to start: {info['error']}")
        except BaseException:
            ray.kill(actor)
            raise
        return cls(index, actor, info)

    def send(self, msg: dict[str, Any]) -> None:
        if self._why is not None or self._closed:
            return
        self._out.append(msg)
        if not self._flush_due:  # one call per turn of the event loop, however many messages
            self._flush_due = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_due = False
        messages, self._out = self._out, []
        if messages and self._why is None and not self._closed:
            self.actor.deliver.remote(self._seq, messages)
            self._seq += 1

    async def receive(self) -> dict[str, Any] | None:
        ray = ray_module()

        while not self._inbox:
            if self._why is not None:
                return None
            try:
                batch = await _wrap(self.actor.poll.remote())
            except ray.exceptions.RayError as exc:
                self._why = _why(exc)
                return None
            if batch is None:
                self._why = "stopped"
                return None
            self._inbox.extend(batch)
        return self._inbox.popleft()

    async def gone(self) -> str:
        return self._why or "an unknown error"

    async def close(self) -> None:
        ray = ray_module()

        if self._closed:
            return
        self._flush()  # the messages of this turn (cancels) first
        self._closed = True
        if self._why is None:
            with contextlib.suppress(Exception):  # dead, or slow to stop: killed below either way
                await asyncio.wait_for(_wrap(self.actor.stop.remote()), STOP_TIMEOUT_S)
        with contextlib.suppress(Exception):
            ray.kill(self.actor)


def _check_reachable(address: str) -> None:
    """A ``HOST:PORT`` (or ``ray://HOST:PORT``) address that nothing answers at fails at once (Ray
    itself retries for many minutes); ``auto`` and other forms are left to Ray."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit() or not host:
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=10).close()
    except OSError as exc:
        raise WorkerError(f"--ray-address {address}: nothing answers at {host}:{port} ({exc.strerror or exc}); "
                          "is the Ray head running (ray start --head), and is this its address?") from None


def start_local_head(num_cpus: int) -> None:
    """Start a Ray head for this process on 127.0.0.1 only (``num_cpus`` CPUs, no dashboard, no usage
    report) and connect to it; ``ray.shutdown()`` stops it."""
    # Ray's single-machine mode: the node's address is the loopback one and its servers listen there
    # only (by default a Linux head takes the machine's outward address and listens on every interface)
    os.environ[SINGLE_MACHINE_ENV] = "0"
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray = ray_module()
    ray_constants = ray_module("ray._private.ray_constants")

    ray_constants.ENABLE_RAY_CLUSTER = False  # read when Ray was imported, maybe before the line above
    ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, logging_level=logging.WARNING)
    if (ip := ray.util.get_node_ip_address()) != "127.0.0.1":
        ray.shutdown()
        raise WorkerError(f"the local Ray head took the address {ip}, not 127.0.0.1; "
                          "start a head yourself (ray start --head) and give --ray-address")


def open_cluster(
    opts: RunOptions, stack: contextlib.ExitStack | contextlib.AsyncExitStack
) -> tuple[RunOptions, Callable[[int], Awaitable[Channel]]]:
    """Connect to Ray (see the module docstring; a head started here is shut down by ``stack``).
    Returns ``opts`` with ``workers`` None (``--workers auto``) made the cluster's CPU count, and the
    pool's worker starter."""
    if not ray_installed():
        raise ValueError(RAY_MISSING)
    ray = ray_module()

    if not ray.is_initialized():
        if opts.ray_address:
            _check_reachable(opts.ray_address)
        try:
            if opts.ray_address:
                ray.init(address=opts.ray_address, logging_level=logging.WARNING)
            else:
                start_local_head(opts.workers or 1)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = f"the Ray cluster at {opts.ray_address}" if opts.ray_address else "a local Ray head"
            raise WorkerError(f"cannot start or reach {where}: {type(exc).__name__}: {exc}") from None
        stack.callback(ray.shutdown)
    if opts.workers is None:  # --workers auto on a cluster: one actor per CPU
        opts = replace(opts, workers=max(1, int(ray.cluster_resources().get("CPU", 1))))
    remote = ray.remote(RayWorker)
    tag = uuid.uuid4().hex[:8]

    def start(index: int) -> Awaitable[Channel]:
        return RayChannel.start(index, opts, remote, tag)

    return opts, start
