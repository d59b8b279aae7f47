"""Wire benchmarks and user tool specs into a :class:`server.ToolServer` (``evals serve``).

Each benchmark hands over its endpoints through the same call ``evals run`` uses
(:meth:`~evals.core.plugin.Benchmark.mounts`); spec files given with ``--tools-dir`` are served at
``/mcp/custom``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from server import BenchmarkMount, EndpointRef, SessionLimits, ToolServer
from tool_specs import StaticCatalog, load_spec_dir

from .plugin import attach_surface
from .registry import load_benchmark, own_options

__all__ = ["CUSTOM", "build_tool_server", "run_session_limits"]

CUSTOM = "custom"


def build_tool_server(
    benchmarks: Sequence[str],
    *,
    stack: contextlib.ExitStack | contextlib.AsyncExitStack,
    tools_dirs: Sequence[Path] = (),
    options: Mapping[str, Any] | None = None,
    default: EndpointRef | None = None,
    page_size: int | None = None,
) -> ToolServer:
    """A server with the given benchmarks mounted, plus a ``custom`` endpoint for spec-dir tools.

    ``options`` are serve options (see :attr:`~evals.core.options.Option.serve`); each benchmark
    takes those it declares and its defaults for the rest.
    """
    given = dict(options or {})
    mounts: list[BenchmarkMount] = []
    for name in benchmarks:
        benchmark = load_benchmark(name, own_options(name, given))
        mounts.extend(attach_surface(benchmark, benchmark.mounts(stack)))
    if tools_dirs:
        custom = [spec for d in tools_dirs for spec in load_spec_dir(d)]
        mounts.append(BenchmarkMount(catalog=StaticCatalog(CUSTOM, {}, extra_playground=custom)))
    kw: dict[str, Any] = {} if page_size is None else {"page_size": page_size}
    return ToolServer(mounts, default=default, **kw)


def run_session_limits(concurrency: int) -> SessionLimits:
    """Session limits of the private server ``evals run`` starts for itself.

    Its only client is the run, so the caps only need to stay above the episodes in flight (a
    session closed under a running episode would fail it), and an episode may wait minutes for its
    model (retries, rate limits) between two tool calls.
    """
    base = SessionLimits()
    return SessionLimits(
        max_sessions=max(base.max_sessions, 4 * concurrency),
        max_sessions_per_endpoint=max(base.max_sessions_per_endpoint, 2 * concurrency),
        idle_timeout=max(base.idle_timeout, 3600.0),
    )
