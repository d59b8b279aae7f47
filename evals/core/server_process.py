"""The benchmark's MCP server in a child process (``bench/bench_harness.py``'s SDK floor measures the
client alone against it; ``evals run --server-process`` is gone: ``--workers 2`` already gives the
episodes and their tools processes of their own). The child is the same server
(the benchmark's ``mounts``), on 127.0.0.1 at an ephemeral port, reached over HTTP as before.

Protocol: the parent starts ``python -m evals.core.server_process`` in a new session (so a Ctrl-C in the
terminal reaches only the parent, which stops the child itself), writes the run's options as one
JSON line to its stdin, and reads one JSON line from its stdout: ``{"ready": URL}`` or
``{"error": MESSAGE}``. The child serves until its stdin closes (the parent is done, or died:
even after a SIGKILL of the parent the child stops) or it gets SIGTERM.

``python -m evals.core.server_process --stdio BENCHMARK TASK_ID`` is the other child: one MCP
session over its stdin/stdout, for ``evals run --transport stdio`` (:mod:`evals.core.transport`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import threading
import traceback
from collections.abc import AsyncIterator
from typing import Any

from server.children import stop_child

from .run_options import RunOptions

__all__ = ["ServerProcessError", "serve_in_subprocess"]

START_TIMEOUT_S = 180.0


class ServerProcessError(RuntimeError):
    """The server's child process could not start (the message says why)."""


@contextlib.asynccontextmanager
async def serve_in_subprocess(opts: RunOptions, *, start_timeout: float = START_TIMEOUT_S) -> AsyncIterator[str]:
    """Start the benchmark's server in a child process; yields its base URL; stops it on exit."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "evals.core.server_process",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,  # stderr: the parent's (its logs)
        start_new_session=True,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(opts.encode().encode() + b"\n")
        await proc.stdin.drain()
        try:
            line = await asyncio.wait_for(proc.stdout.readline(), start_timeout)
        except TimeoutError:
            raise ServerProcessError(f"the MCP server process did not start within {start_timeout:.0f} s") from None
        if not line:
            rc = await proc.wait()
            raise ServerProcessError(f"the MCP server process exited with status {rc} before it was ready (its output is above)")
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            raise ServerProcessError(f"the MCP server process said something unexpected: {line[:200]!r}") from None
        if "error" in msg:
            raise ServerProcessError(f"the MCP server process failed to start: {msg['error']}")
        yield str(msg["ready"])
    finally:
        await stop_child(proc, proc.stdin.close if proc.stdin is not None else None)


# ---- the child --------------------------------------------------------------------------------


async def _serve(opts: RunOptions, out: Any) -> None:
    import uvicorn

    from server import ToolServer, create_app
    from server.http import bind_socket, uvicorn_config, wait_started

    from .registry import load_benchmark
    from .serving import run_session_limits

    loop = asyncio.get_running_loop()
    async with contextlib.AsyncExitStack() as stack:
        try:
            mounts = load_benchmark(opts.benchmark, opts.benchmark_options).mounts(stack, strategy=opts.chosen_strategy)
            ts = ToolServer(mounts, session_limits=run_session_limits(opts.concurrency))
            sock, url = bind_socket("127.0.0.1", 0)
            stack.callback(sock.close)
            port = sock.getsockname()[1]
            server = uvicorn.Server(uvicorn_config(create_app(ts, json_response=True), "127.0.0.1", port, "warning"))
        except Exception as exc:
            traceback.print_exc()
            out.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"}) + "\n")
            out.flush()
            return

        def stop() -> None:
            server.should_exit = True

        def watch_stdin() -> None:  # EOF: the parent closed it, or died
            with contextlib.suppress(Exception):
                while sys.stdin.readline():
                    pass
            loop.call_soon_threadsafe(stop)

        task = asyncio.create_task(server.serve(sockets=[sock]))
        await wait_started(server, task)
        out.write(json.dumps({"ready": url}) + "\n")
        out.flush()
        threading.Thread(target=watch_stdin, name="stdin-watch", daemon=True).start()
        await task


def stdio_main(benchmark: str, task_id: str | None) -> int:
    """``--transport stdio``: serve one session on stdin/stdout, bound to ``benchmark``'s endpoint of
    ``task_id`` (its playground for None), for the run whose options are in ``$EVALS_STDIO_SERVER_OPTIONS``."""
    from client import eventloop
    from server import EndpointRef, ToolServer, serve_stdio

    from .registry import load_benchmark
    from .transport import OPTIONS_ENV

    opts = RunOptions.decode(os.environ[OPTIONS_ENV])

    async def serve() -> None:
        async with contextlib.AsyncExitStack() as stack:
            mounts = load_benchmark(opts.benchmark, opts.benchmark_options).mounts(stack, strategy=opts.chosen_strategy)
            await serve_stdio(ToolServer(mounts, default=EndpointRef(benchmark, task_id)))

    eventloop.run(serve())
    return 0


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--stdio":
        return stdio_main(sys.argv[2], sys.argv[3] or None)
    # uvicorn puts SIGTERM back to this handler after shutting down and re-raises it: a no-op here
    # lets the exit stack close (sandbox workers, a private KG copy) instead of dying at once.
    signal.signal(signal.SIGTERM, lambda *_: None)
    out = sys.stdout
    sys.stdout = sys.stderr  # the protocol owns stdout; anything printed goes to the log
    line = sys.stdin.readline()
    if not line:
        return 2
    try:
        opts = RunOptions.decode(line)
    except Exception as exc:
        out.write(json.dumps({"error": f"bad options: {exc}"}) + "\n")
        out.flush()
        return 2
    from client import eventloop

    eventloop.run(_serve(opts, out))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
