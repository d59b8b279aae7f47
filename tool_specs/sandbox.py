"""Run untrusted tool code (benchmark tools written in Python) in isolated worker processes.

Containment model (Linux; the details are in ``tool_specs/_sandbox_worker.py``; one worker process
as the pool sees it is ``tool_specs/_sandbox_process.py``):

* **Never in the server process.** A :class:`SandboxPool` keeps a few worker processes
  (``tool_specs/_sandbox_worker.py``, started with ``python -I``); each call is sent to an idle
  worker, which clones a fresh child for it (no state survives a call) and answers with JSON.
  Which waiting call gets the next free worker is decided by a fair queue between clients and
  their MCP sessions (:class:`tool_specs.fair_queue.FairGate`: a cap per session on calls in
  flight, light clients and sessions first, workers kept in reserve from those whose calls run long).
* **A kernel boundary per call** (isolation ``"namespaces"``, the default). Each worker lives in
  its own user, mount, network, IPC and UTS namespaces (uid 0 inside maps to ``nobody`` when the
  server is root, else to the server's uid), on a read-only root that shows only ``/usr``, the
  interpreter and its ``sys.path`` directories and four ``/dev`` nodes (no ``/proc``, ``/sys``,
  ``/home``, ``/dev/shm``, no checkout); the network namespace has only a down loopback. Each call
  runs as process 1 of its own PID namespace (when it ends the kernel kills everything it
  started) with its own mount namespace and a private, size-limited tmpfs as ``/tmp`` and cwd
  (invisible to other calls, gone with the call: nothing is written to the host's disk), its own
  IPC namespace (no shared memory, message queue or semaphore outlives the call or reaches the
  next), no capabilities, ``no_new_privs`` and a libseccomp-generated filter (sockets, ``ptrace``,
  mounts, namespaces, ``fork``/``exec``, ``bpf``, ``keyctl``, ``io_uring``, System V and POSIX
  IPC... refused).
* **Kernel limits per call** (soft = hard, so the code cannot raise them): ``RLIMIT_CPU``,
  ``RLIMIT_AS`` (memory), ``RLIMIT_NPROC`` = 0 (no fork, no threads), ``RLIMIT_FSIZE``,
  ``RLIMIT_NOFILE``, no core dumps; the scratch tmpfs's size; plus a wall-clock deadline after
  which the child is SIGKILLed. A worker that does not answer in time is killed and replaced.
* **Nothing of the server's environment.** Workers get ``PATH`` and ``LANG`` only and the child
  empties even that.
* **Audit hook** (:func:`sys.addaudithook`) in the child: a tripwire that refuses sockets,
  processes, ``ctypes``, writes outside the scratch directory and the like with a clear message.
  It is not the boundary: native code and tricks on the interpreter get past it.

Where the kernel does not allow the namespaces (:func:`namespace_support` says why), a pool
refuses to start unless it is created with ``allow_unsafe=True`` (isolation ``"none"``: a plain
forked child, ``nobody`` when the server is root, rlimits and the audit hook only, which is NOT a
security boundary); it then logs a warning. :meth:`SandboxPool.describe` says what is in effect.

The executor kind ``sandbox`` (registered here) runs a code string:
``{"kind": "sandbox", "function": "f", "code": "def f(x): ..."}`` (or ``"file": "tool.py"``).
What a call produced (a :class:`SandboxReply`) becomes the tool result by :func:`reply_to_result`:
the return value, or an error naming what the tool raised or what the sandbox stopped. A caller
that reads its tools' results differently (tools that *return* their errors, a feedback level
that hides failure details) gives :class:`SandboxExecutor` its own ``to_result`` hook; the
sandbox itself knows nothing of any benchmark.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import itertools
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tool_specs._sandbox_process import _SUPPORT as _SUPPORT  # per interpreter: what the probe found
from tool_specs._sandbox_process import (
    WORKER_SCRIPT,
    NamespaceSupport,
    SandboxError,
    SandboxLimits,
    SandboxReply,
    WorkerProcess,
    namespace_support,
)
from tool_specs.bounded_read import bounded_text
from tool_specs.errors import ExecutorConfigError
from tool_specs.executors import register_executor_kind
from tool_specs.fair_queue import FairGate, GateTicket
from tool_specs.results import CallContext, ToolResult, to_json_text

if TYPE_CHECKING:
    from tool_specs.protocols import ToolLike

__all__ = [
    "ResultHook",
    "SandboxError",
    "SandboxExecutor",
    "SandboxLimits",
    "SandboxPool",
    "SandboxReply",
    "NamespaceSupport",
    "default_pool",
    "namespace_support",
    "reply_to_result",
    "value_to_result",
]

Isolation = Literal["namespaces", "none"]
log = logging.getLogger(__name__)
_SESSION_KEY = "tool_specs.sandbox.session"  # the key of a session's token in CallContext.state
_REPLY_GRACE_S = 5.0


class SandboxPool:
    """Up to ``size`` sandbox workers, started on demand and reused; thread-safe.

    ``run`` is synchronous (safe to call from any thread); ``arun`` runs it in a thread so the
    event loop keeps serving. Call :meth:`close` (or use the pool as a context manager) to stop the
    workers and remove the scratch directory; a pool left open is closed at interpreter exit.
    """

    def __init__(
        self,
        size: int | None = None,
        *,
        limits: SandboxLimits | None = None,
        allow_unsafe: bool = False,
        isolation: Isolation | None = None,
        python: str | None = None,
        per_session: int | None = None,
        reserve: int | None = None,
        slow_s: float = 1.0,
        fair: bool = True,
    ) -> None:
        if isolation not in (None, "namespaces", "none"):
            raise ValueError(f"isolation must be 'namespaces' or 'none', got {isolation!r}")
        if isolation == "none" and not allow_unsafe:
            raise ValueError("isolation='none' (no kernel boundary) needs allow_unsafe=True")
        self.size = int(size) if size is not None else max(1, min(4, os.cpu_count() or 1))
        if self.size < 1:
            raise ValueError(f"a sandbox pool needs at least one worker, got size={size!r}")
        self.limits = limits or SandboxLimits()
        self.python = python or sys.executable
        support = namespace_support(self.python) if isolation != "none" else NamespaceSupport(False, "isolation='none' asked for")
        if isolation == "namespaces" and not support.ok:
            raise SandboxError(f"isolation='namespaces' but this host cannot set them up: {support.reason}")
        self.isolation: Isolation = "namespaces" if support.ok else "none"
        self.support = support
        if not support.ok:
            if not allow_unsafe:
                raise SandboxError(
                    "refusing to run untrusted tool code: this host cannot give it a kernel boundary "
                    f"(namespaces unavailable: {support.reason}). Allow unprivileged user namespaces "
                    "(sysctl kernel.unprivileged_userns_clone=1 / user.max_user_namespaces > 0), or accept "
                    "running it with an audit hook only, which is NOT a security boundary, by passing the "
                    "explicit unsafe flag (SandboxPool(allow_unsafe=True); a benchmark's option "
                    "--unsafe-sandbox-without-namespaces)"
                )
            log.warning(
                "UNSAFE: untrusted tool code runs WITHOUT a kernel boundary (namespaces unavailable: %s); "
                "only rlimits%s and an audit hook contain it, and native code can get past the hook",
                support.reason, ", the nobody uid" if os.geteuid() == 0 else "",
            )
        self._drop = self.isolation == "none" and os.geteuid() == 0
        self._idle: list[WorkerProcess] = []
        self._all: set[WorkerProcess] = set()
        self._lock = threading.Lock()
        # which call gets the next free worker: a fair queue between sessions (tool_specs/fair_queue.py)
        self.gate = FairGate(self.size, per_session=per_session, reserve=reserve, slow_s=slow_s, fair=fair)
        self._threads: concurrent.futures.ThreadPoolExecutor | None = None
        self._ids = itertools.count(1)
        self._closed = False
        self.started = 0  # workers started over the pool's life
        atexit.register(self.close)

    # ---- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop every worker (busy ones are killed) and remove the scratch directory. Idempotent."""
        with self._lock:
            self._closed = True
            workers = list(self._all)
            self._all.clear()
            self._idle.clear()
        for w in workers:
            w.stop()
        if self._threads is not None:
            self._threads.shutdown(wait=False)
        atexit.unregister(self.close)

    @property
    def closed(self) -> bool:
        return self._closed

    def worker_pids(self) -> list[int]:
        """Process ids of the live workers."""
        with self._lock:
            return sorted(w.pid for w in self._all if w.alive())

    def describe(self) -> dict[str, Any]:
        """The containment actually in effect (for ``/health``, logs and the README's claims)."""
        if self.isolation == "namespaces":
            info = self.support.isolation
            out: dict[str, Any] = {
                "isolation": "kernel namespaces",
                "namespaces": info.get("namespaces"),
                "network": "namespace (no interface but a down loopback)",
                "uid": info.get("uid"),
                "filesystem": "read-only root with " + ", ".join(info.get("read_only") or []) + "; a private tmpfs as /tmp",
                "seccomp": info.get("seccomp"),
                "capabilities": "none, no_new_privs",
            }
        else:
            out = {
                "isolation": f"NONE (unsafe, allowed explicitly): {self.support.reason}",
                "network": "audit hook only",
                "uid": "nobody (65534)" if self._drop else "the server's uid (not root: no drop)",
            }
        return {"workers": self.size, **out, "limits": asdict(self.limits), "fresh_process_per_call": True,
                "queue": self.gate.describe()}

    def _argv(self) -> list[str]:
        argv = [self.python, "-I", str(WORKER_SCRIPT), "--isolation", self.isolation]
        return argv + (["--drop-to-nobody"] if self._drop else [])

    def _spawn(self) -> WorkerProcess:
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
        try:
            worker = WorkerProcess(self._argv(), "/", env)
        except OSError as exc:
            raise SandboxError(f"cannot start a sandbox worker ({' '.join(self._argv())}): {exc}") from exc
        with self._lock:
            if self._closed:
                worker.kill()
                raise SandboxError("the sandbox pool is closed")
            self._all.add(worker)
            self.started += 1
        return worker

    def warm(self, n: int | None = None) -> None:
        """Start workers ahead of the first calls (up to ``n``, default the pool size)."""
        want = min(self.size, n or self.size)
        with self._lock:
            have = len(self._all)
        for _ in range(max(0, want - have)):
            worker = self._spawn()
            with self._lock:
                self._idle.append(worker)

    def _discard(self, worker: WorkerProcess) -> None:
        with self._lock:
            self._all.discard(worker)
        worker.kill()

    # ---- calls -------------------------------------------------------------------------------
    def run_batch(
        self, code: str, function: str, batch: list[dict[str, Any]], *, limits: SandboxLimits | None = None
    ) -> SandboxReply:
        """Run ``function`` once per argument object of ``batch`` in *one* child (for searches
        over a tool's arguments, where state shared between the calls does not matter). ``value``
        of an ``ok`` reply is a list of ``{"ok": bool, "value" | "error"}``; the limits apply to
        the whole batch."""
        return self.run(code, function, {}, limits=limits, _batch=[dict(b) for b in batch])

    def run(
        self, code: str, function: str, arguments: dict[str, Any] | None = None, *, limits: SandboxLimits | None = None,
        session: Hashable | None = None, client: Hashable | None = None, _batch: list[dict[str, Any]] | None = None,
    ) -> SandboxReply:
        """Run ``function(**arguments)`` defined by ``code`` in a sandbox; never raises for
        anything the tool does (see :class:`SandboxReply`). Raises :class:`SandboxError` only when
        no worker can be started, or the pool is closed. ``session`` names whose call it is for the
        fair queue (:attr:`gate`); ``None``: a session of its own; ``client``, whose session it is
        (``None``: the session is its own client)."""
        req, lim, bad = self._request(code, function, arguments, limits, _batch)
        if bad is not None:
            return bad
        ticket = self.gate.acquire(session, client)
        return self._run_granted(ticket, req, lim)

    def _request(
        self, code: str, function: str, arguments: dict[str, Any] | None, limits: SandboxLimits | None,
        batch: list[dict[str, Any]] | None,
    ) -> tuple[dict[str, Any], SandboxLimits, SandboxReply | None]:
        if not isinstance(code, str) or not isinstance(function, str) or not function:
            raise TypeError("code and function must be strings (function non-empty)")
        arguments = dict(arguments or {})
        lim = limits or self.limits
        if self._closed:
            raise SandboxError("the sandbox pool is closed")
        req = {"id": next(self._ids), "code": code, "function": function, "arguments": arguments, "limits": asdict(lim)}
        if batch is not None:
            req["batch"] = batch
        try:
            json.dumps(req, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            return req, lim, SandboxReply("bad_request", error=f"the arguments are not JSON: {exc}")
        return req, lim, None

    def _run_granted(self, ticket: GateTicket, req: dict[str, Any], lim: SandboxLimits) -> SandboxReply:
        """Run a request on a worker, holding the gate's slot ``ticket`` until the worker is back."""
        try:
            return self._on_worker(req, lim)
        finally:
            self.gate.release(ticket)

    def _on_worker(self, req: dict[str, Any], lim: SandboxLimits) -> SandboxReply:
        if self._closed:
            raise SandboxError("the sandbox pool is closed")
        with self._lock:
            worker = self._idle.pop() if self._idle else None
        cold = worker is None
        if worker is None:
            worker = self._spawn()
        try:
            raw = worker.request(req, time.monotonic() + lim.wall_s + _REPLY_GRACE_S)
        except SandboxError as exc:
            self._discard(worker)
            return SandboxReply("crashed", error=f"{exc}; the worker was replaced", worker_pid=worker.pid, cold=cold)
        with self._lock:
            if self.closed:  # closed by another thread during the call
                worker.kill()
            elif worker.alive():
                self._idle.append(worker)
            else:
                self._all.discard(worker)
        if raw.get("id") != req["id"]:
            self._discard(worker)
            return SandboxReply("crashed", error="the sandbox worker answered another request", worker_pid=worker.pid)
        return SandboxReply(
            status=str(raw.get("status")),
            value=raw.get("value"),
            error=raw.get("error"),
            error_type=raw.get("error_type"),
            wall_s=float(raw.get("wall_s") or 0.0),
            cpu_s=float(raw.get("cpu_s") or 0.0),
            worker_pid=worker.pid,
            cold=cold,
        )

    async def arun(
        self, code: str, function: str, arguments: dict[str, Any] | None = None, *, limits: SandboxLimits | None = None,
        session: Hashable | None = None, client: Hashable | None = None,
    ) -> SandboxReply:
        """:meth:`run` without blocking the event loop: the call waits for its turn in the fair
        queue as a task, then runs in one of the pool's own threads (at most one per worker)."""
        req, lim, bad = self._request(code, function, arguments, limits, None)
        if bad is not None:
            return bad
        ticket = await self.gate.aacquire(session, client)
        with self._lock:
            if self._threads is None:
                self._threads = concurrent.futures.ThreadPoolExecutor(self.size, thread_name_prefix="sandbox-call")
            threads = self._threads
        try:
            fut = asyncio.get_running_loop().run_in_executor(threads, self._run_granted, ticket, req, lim)
        except RuntimeError:  # the pool was closed meanwhile (its threads shut down)
            self.gate.release(ticket)
            raise SandboxError("the sandbox pool is closed") from None
        # shielded: a cancelled caller leaves the call to finish on its worker and hand its slot back
        return await asyncio.shield(fut)


_DEFAULT: SandboxPool | None = None
_DEFAULT_LOCK = threading.Lock()


def default_pool() -> SandboxPool:
    """A process-wide pool (started lazily, closed at exit) for executors given no pool."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None or _DEFAULT.closed:
            _DEFAULT = SandboxPool()
        return _DEFAULT


# ---- the executor ------------------------------------------------------------------------------


def value_to_result(value: Any) -> ToolResult:
    """The result of a call that returned ``value``: a string as is, anything else as its JSON
    text (its ``repr`` when it is not JSON); an object with string keys is also the structured result."""
    if isinstance(value, str):
        return ToolResult(text=value)
    try:
        text = to_json_text(value)
    except (TypeError, ValueError):
        text = repr(value)
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return ToolResult(text=text, structured=value)
    return ToolResult(text=text)


def reply_to_result(reply: SandboxReply) -> ToolResult:
    """The tool result of a sandbox reply (the executor's default ``to_result``): the function's
    return value (:func:`value_to_result`), else an error result ``Error: <what happened>``: the
    exception the tool raised (``"<Type>: <message>"``) or what the sandbox stopped (time, memory...)."""
    if reply.ok:
        return value_to_result(reply.value)
    return ToolResult.error(f"Error: {reply.error or reply.status}")


#: Turns what one call produced into the tool result (see :class:`SandboxExecutor`).
ResultHook = Callable[[SandboxReply], ToolResult]


@dataclass(eq=False)
class SandboxExecutor:
    """Executor kind ``sandbox``: ``function(**arguments)`` from ``code``, run by a
    :class:`SandboxPool` (``pool``, or :func:`default_pool` when ``None``). ``to_result`` makes the
    reply a tool result (default :func:`reply_to_result`); a caller whose tools need another reading
    of their output passes its own."""

    code: str
    function: str
    limits: SandboxLimits | None = None
    pool: SandboxPool | None = field(default=None, repr=False)
    to_result: ResultHook = field(default=reply_to_result, repr=False)

    kind = "sandbox"

    def __post_init__(self) -> None:
        if not isinstance(self.code, str) or not self.code.strip():
            raise ExecutorConfigError("sandbox executor needs a non-empty 'code' string")
        if not isinstance(self.function, str) or not self.function.isidentifier():
            raise ExecutorConfigError(f"sandbox executor 'function' must be a Python identifier, got {self.function!r}")
        if not callable(self.to_result):
            raise ExecutorConfigError(f"sandbox executor 'to_result' must be callable, got {type(self.to_result).__name__}")

    def config(self) -> dict[str, Any]:
        """The spec-file config; a ``to_result`` hook other than the default is named under
        ``"to_result"`` (for the record: a spec file cannot set one)."""
        out: dict[str, Any] = {"kind": self.kind, "function": self.function, "code": self.code}
        if self.limits is not None:
            out["limits"] = asdict(self.limits)
        if self.to_result is not reply_to_result:
            hook = self.to_result
            out["to_result"] = f"{getattr(hook, '__module__', '?')}.{getattr(hook, '__qualname__', repr(hook))}"
        return out

    def with_pool(self, pool: SandboxPool | None) -> SandboxExecutor:
        return replace(self, pool=pool)

    async def __call__(self, spec: ToolLike, arguments: dict[str, Any], ctx: CallContext) -> ToolResult:
        pool = self.pool or default_pool()
        # the MCP session's state dict is the same object for all its calls: its token names the
        # session in the pool's fair queue, and ctx.client the client its sessions share
        session = ctx.state.setdefault(_SESSION_KEY, object())
        reply = await pool.arun(self.code, self.function, arguments, limits=self.limits, session=session,
                                client=ctx.client)
        return self.to_result(reply)


def _sandbox_factory(options: dict[str, Any], base_dir: Path | None) -> SandboxExecutor:
    allowed = {"code", "file", "function", "wall_s", "cpu_s", "memory_mb"}
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ExecutorConfigError(
            f"unknown option(s) {', '.join(map(repr, unknown))} for executor kind 'sandbox'; allowed: {', '.join(sorted(allowed))}"
        )
    if "function" not in options:
        raise ExecutorConfigError("executor kind 'sandbox' needs option 'function'")
    if ("code" in options) == ("file" in options):
        raise ExecutorConfigError("executor kind 'sandbox' needs exactly one of 'code' and 'file'")
    if "file" in options:
        path = Path(options["file"])
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        try:
            code = bounded_text(path)  # untrusted: no more than MAX_LINE_BYTES read
        except (OSError, ValueError) as exc:  # a file past the bound (LineTooLong, FILE:LINE), not UTF-8
            raise ExecutorConfigError(f"sandbox executor cannot read code file {str(path)!r}: {exc}") from exc
    else:
        code = options["code"]
        if not isinstance(code, str):
            raise ExecutorConfigError(f"option 'code' of executor kind 'sandbox' must be a string, got {type(code).__name__}")
    limit_kw = {k: options[k] for k in ("wall_s", "cpu_s", "memory_mb") if k in options}
    try:
        limits = SandboxLimits(**limit_kw) if limit_kw else None
    except ValueError as exc:
        raise ExecutorConfigError(str(exc)) from exc
    return SandboxExecutor(code, options["function"], limits=limits)


with contextlib.suppress(ValueError):  # already registered (module reloaded)
    register_executor_kind("sandbox", _sandbox_factory)
