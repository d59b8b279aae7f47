"""Wire benchmarks and user tool specs into a :class:`server.ToolServer` (``evals serve``).

Each benchmark hands over its endpoints through the same call ``evals run`` uses
(:meth:`~evals.core.plugin.Benchmark.mounts`); spec files given with ``--tools-dir`` (the project's,
OpenAI function tools, BFCL function docs), the tools of MCP servers given with ``--mcp-server`` /
``--mcp-config`` (proxied: validated and limited by this server) and a user's KG given with
``--kg-file`` (as the KG tools) are served at ``/mcp/custom``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from server import BenchmarkMount, EndpointRef, KGConfig, McpSource, SessionLimits, ToolServer, open_sources
from tool_specs import StaticCatalog, load_tool_dir

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
    mcp_sources: Sequence[McpSource] = (),
    kg_file: Path | None = None,
) -> ToolServer:
    """A server with the given benchmarks mounted, plus a ``custom`` endpoint for spec-dir tools and
    the KG tools of ``kg_file`` (a triple file; a :class:`~kg_store.KGError` if it is bad).

    ``options`` are serve options (see :attr:`~evals.core.options.Option.serve`); each benchmark
    takes those it declares and its defaults for the rest.
    """
    given = dict(options or {})
    mounts: list[BenchmarkMount] = []
    for name in benchmarks:
        benchmark = load_benchmark(name, own_options(name, given))
        mounts.extend(attach_surface(benchmark, benchmark.mounts(stack, strategy=benchmark.info.default_strategy)))
    if tools_dirs or mcp_sources or kg_file is not None:
        custom = [spec for d in tools_dirs for spec in load_tool_dir(d)]
        custom += [spec for _, specs in open_sources(mcp_sources, stack) for spec in specs]
        kg = None
        if kg_file is not None:
            from .user_kg import open_user_kg

            kg = KGConfig(store=open_user_kg(kg_file, stack))
        mounts.append(BenchmarkMount(catalog=StaticCatalog(CUSTOM, {}, extra_playground=custom), kg=kg))
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
