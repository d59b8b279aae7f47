"""``evals serve``: its flags (with the HTTP limits) and the command, which builds the tool server
of the benchmarks and the user's own tools and serves it on stdio or HTTP."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from ..core.registry import all_benchmarks, serve_options
from .data import ensure_benchmark_data
from .listing import add_serve_option_groups
from .parser import workers_arg

if TYPE_CHECKING:
    from server import EndpointRef, HTTPLimits, SessionLimits, ToolServer

__all__ = ["build_serve_parser", "cmd_serve"]

err = Console(stderr=True, soft_wrap=True)  # an error is one line, never wrapped to the terminal


def cmd_serve(args: argparse.Namespace) -> int:
    import logging

    from kg_store import KGError
    from server import EndpointRef, HTTPLimits, McpSourceError, ServerConfigError, SessionLimits, check_bind
    from server.loopback import is_loopback
    from tool_specs import SandboxError, SpecLoadError

    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr)
    token = args.token or os.environ.get("EVALS_SERVER_TOKEN") or None
    own_tools = bool(args.tools_dir or args.mcp_server or args.mcp_config or args.kg_file)
    if args.benchmark:
        benchmarks = [args.benchmark]
    elif args.benchmarks or not own_tools:
        benchmarks = list(args.benchmarks or [n for n, b in all_benchmarks().items() if b.served_by_default])
    else:  # the user's tools alone (--tools-dir, --mcp-server, --kg-file): no benchmark data needed
        benchmarks = []
    given = {o.name: getattr(args, o.name) for o in serve_options() if hasattr(args, o.name)}
    if args.stdio and not args.benchmark and not (args.tools_dir or args.mcp_server or args.mcp_config or args.kg_file):
        err.print("[red]error:[/] --stdio needs --benchmark NAME (and optionally --task TASK_ID), --tools-dir, "
                  "--mcp-server or --kg-file")
        return 2
    if args.task and not args.benchmark:
        err.print("[red]error:[/] --task needs --benchmark")
        return 2
    sessions: SessionLimits | None = None
    limits: HTTPLimits | None = None
    shared_state = bool(args.mcp_server or args.mcp_config or given.get("allow_writes") or given.get("inductive"))
    if args.workers is None:  # auto; one process where the state must be one: a writable KG, the user's MCP servers
        caps = (args.max_sessions, args.max_sessions_per_endpoint, args.max_connections)  # each worker gets 1/N of each
        args.workers = 1 if args.stdio or shared_state else max(1, min(os.cpu_count() or 1, *caps))
    if args.workers < 1 or (args.workers > 1 and (args.stdio or shared_state)):
        err.print(f"[red]error:[/] --workers {args.workers}: " + (
            "must be at least 1" if args.workers < 1 else "stdio serves one session, from one process" if args.stdio
            else "--allow-writes, --inductive and --mcp-server/--mcp-config keep state that one process must hold: use --workers 1"))
        return 2
    if args.worker_header and not is_loopback(args.host):
        err.print("[red]error:[/] --worker-header tells a client which process holds its session: loopback only "
                  "(--host 127.0.0.1), for debugging")
        return 2
    if not args.worker_stuck_timeout > 0:
        err.print(f"[red]error:[/] --worker-stuck-timeout {args.worker_stuck_timeout:g}: must be a positive number of seconds")
        return 2
    if not args.stdio:
        try:
            check_bind(args.host, token)
            sessions = SessionLimits(args.max_sessions, args.max_sessions_per_endpoint, args.session_idle_timeout)
            limits = HTTPLimits(args.max_connections, args.header_timeout, args.body_timeout, args.keep_alive_timeout)
            if args.workers > 1:
                from server.serve_workers import share_limits

                share_limits(sessions, limits, args.workers)
        except (ServerConfigError, ValueError) as exc:
            err.print(f"[red]error:[/] {exc}")
            return 2
    default = None
    if args.benchmark:
        default = EndpointRef(args.benchmark, args.task)
    elif args.stdio:
        default = EndpointRef("custom")
        benchmarks = []
    # first use: download what is missing; `evals serve` alone serves the benchmarks it can have
    if benchmarks:
        benchmarks = ensure_benchmark_data(benchmarks, required=bool(args.benchmark or args.benchmarks),
                                           options=dict.fromkeys(benchmarks, given))
    from server.serve_workers import WorkerStartError

    try:
        return _serve(args, benchmarks, given, default, token, sessions, limits)
    except WorkerStartError as exc:  # a worker process's start-up error (--workers N), as one process says it
        err.print(f"[red]error:[/] {escape(str(exc))}", soft_wrap=True)
        return 2
    except KGError as exc:  # --kg-file: a missing file or a bad line (file:line), no traceback
        err.print(f"[red]error:[/] {escape(str(exc))}", soft_wrap=True)
        return 2
    except (SandboxError, McpSourceError) as exc:  # e.g. no kernel namespaces: say why, no traceback
        err.print(f"[red]error:[/] {exc}")
        return 2
    except SpecLoadError as exc:  # every problem of every --tools-dir file, one line each
        print(f"evals serve: error: {exc}", file=sys.stderr, flush=True)
        return 2


def _build(args: argparse.Namespace, benchmarks: list[str], given: dict[str, Any], default: EndpointRef | None,
           stack: contextlib.ExitStack) -> ToolServer:
    from ..core.serving import build_tool_server

    return build_tool_server(
        benchmarks,
        stack=stack,
        tools_dirs=[Path(d) for d in args.tools_dir],
        options=given,
        default=default,
        page_size=args.page_size,
        mcp_sources=_serve_mcp_sources(args),
        kg_file=Path(args.kg_file) if args.kg_file else None,
    )


def _worker_app(args: argparse.Namespace, benchmarks: list[str], given: dict[str, Any], token: str | None,
                stack: contextlib.ExitStack, sessions: SessionLimits,
                admission: Callable[[str], None]) -> tuple[Any, dict[str, Any]]:
    """A worker process's app (``--workers N``): its own tool server, with its share of the session caps;
    and what it serves (for the start-up lines)."""
    from server import create_app
    from server.serve_workers import WorkerStartError

    ts = _build(args, benchmarks, given, None, stack)
    writable = sorted(name for name, info in ts.describe().items() if (info["kg"] or {}).get("writes"))
    if writable:
        raise WorkerStartError(f"{', '.join(writable)} serves a writable KG, which one process must hold: use --workers 1")
    ts.session_limits = sessions
    ts.session_admission = admission
    return create_app(ts, host=args.host, token=token, json_response=args.json_response), ts.describe()


def _announce(url: str, describe: dict[str, Any], pids: list[int] | None = None) -> None:
    procs = f"  ({len(pids)} worker processes, pids {', '.join(map(str, pids))})" if pids else ""
    err.print(f"[bold]MCP server[/] on {url}  (health: {url}/health){procs}")
    for name, info in describe.items():
        if info["tasks"]:
            err.print(f"  {url}/mcp/{name}  playground, {info['tasks']} task endpoints at {url}/mcp/{name}/<task_id>")
        else:  # the user's own tools (--tools-dir): one endpoint, no tasks
            err.print(f"  {url}/mcp/{name}")


def _serve(args: argparse.Namespace, benchmarks: list[str], given: dict[str, Any], default: EndpointRef | None,
           token: str | None, sessions: SessionLimits | None, limits: HTTPLimits | None) -> int:
    """Build the tool server and serve it on stdio, or over HTTP with ``sessions`` and ``limits``
    (from ``args.workers`` processes when more than one)."""
    import functools

    from client import eventloop
    from server import bind_host, create_app, serve, serve_stdio

    log_level = "info" if args.verbose else "warning"
    if not args.stdio and sessions is not None and limits is not None and args.workers > 1:
        from server.serve_workers import serve_workers
        from tool_specs import load_tool_dir

        for folder in args.tools_dir:  # its problems said once, before any worker starts (each loads it again)
            load_tool_dir(Path(folder))
        return serve_workers(
            args.workers, args.host, args.port, functools.partial(_worker_app, args, benchmarks, given, token),
            sessions=sessions, limits=limits, log_level=log_level,
            announce=lambda url, pids, describe: _announce(url, describe, pids),
            report=lambda line: err.print(f"[yellow]warning:[/] {line}"),
            stuck_s=args.worker_stuck_timeout, worker_header=args.worker_header,
        )
    with contextlib.ExitStack() as stack:
        ts = _build(args, benchmarks, given, default, stack)
        if args.stdio or sessions is None or limits is None:
            eventloop.run(serve_stdio(ts))
            return 0
        ts.session_limits = sessions
        app = create_app(ts, host=args.host, token=token, json_response=args.json_response)
        bound = bind_host(args.host)  # what is listened on (``localhost.`` binds ``localhost``)
        _announce(f"http://[{bound}]:{args.port}" if ":" in bound else f"http://{bound}:{args.port}", ts.describe())
        serve(app, host=args.host, port=args.port, log_level=log_level, limits=limits)
    return 0


def _serve_mcp_sources(args: argparse.Namespace) -> list[Any]:
    """The MCP servers of ``evals serve --mcp-config`` and ``--mcp-server`` (repeatable)."""
    from server import McpSourceError, load_mcp_config, parse_mcp_server

    sources = load_mcp_config(args.mcp_config) if args.mcp_config else []
    sources += [parse_mcp_server(s, token_env=args.mcp_token_env if s.strip().startswith("http") else None)
                for s in args.mcp_server]
    names = [s.name for s in sources]
    if len(set(names)) != len(names):
        raise McpSourceError(f"two MCP servers have one name ({', '.join(names)}); name them: NAME=COMMAND")
    for s in sources:
        if s.per_episode:
            raise McpSourceError(f"MCP server {s.name!r}: per_episode goes with `evals run taskfile` (a server per "
                                 "episode); `evals serve` has no episodes")
    return sources



def _add_limit_arguments(g: argparse._ArgumentGroup) -> None:
    from server import HTTPLimits, SessionLimits

    h, k = HTTPLimits(), SessionLimits()
    g.add_argument("--max-sessions", type=int, default=k.max_sessions, metavar="N",
                   help=f"sessions kept in total; at the cap the least recently used idle one is closed (default {k.max_sessions})")
    g.add_argument("--max-sessions-per-endpoint", type=int, default=k.max_sessions_per_endpoint, metavar="N",
                   help=f"sessions kept per endpoint (default {k.max_sessions_per_endpoint})")
    g.add_argument("--session-idle-timeout", type=float, default=k.idle_timeout, metavar="S",
                   help=f"a session unused this long is closed (default {k.idle_timeout:g} s)")
    g.add_argument("--max-connections", type=int, default=h.max_connections, metavar="N",
                   help=f"open connections; at the cap the longest idle one is closed (default {h.max_connections})")
    g.add_argument("--header-timeout", type=float, default=h.header_timeout, metavar="S",
                   help=f"time a client has to send a request's headers (default {h.header_timeout:g} s)")
    g.add_argument("--body-timeout", type=float, default=h.body_timeout, metavar="S",
                   help=f"time a client has to send a request's body (default {h.body_timeout:g} s)")
    g.add_argument("--keep-alive-timeout", type=float, default=h.keep_alive_timeout, metavar="S",
                   help=f"an idle keep-alive connection is closed after this long (default {h.keep_alive_timeout:g} s)")


def build_serve_parser(s: argparse.ArgumentParser) -> None:
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; others need --token)")
    s.add_argument("--port", type=int, default=8765, help="port to listen on")
    s.add_argument("--token", help="bearer token required on /mcp requests (or $EVALS_SERVER_TOKEN)")
    s.add_argument("--stdio", action="store_true", help="serve one session over stdin/stdout (for assistant clients)")
    benchmarks = all_benchmarks()
    s.add_argument("--benchmark", choices=list(benchmarks), help="bind the session to this benchmark (stdio), or serve only it")
    s.add_argument("--benchmarks", nargs="+", choices=list(benchmarks),
                   help="benchmarks to serve over HTTP (default: all, or none with --tools-dir)")
    s.add_argument("--task", help="bind the session to this task id (with --benchmark); default: the playground")
    s.add_argument("--tools-dir", action="append", default=[], metavar="DIR",
                   help="directory of tool spec files (YAML/JSON; OpenAI function tools; BFCL function docs), "
                   "served at /mcp/custom (repeatable); alone, only these tools are served (add --benchmarks to "
                   "serve benchmarks too)")
    s.add_argument("--mcp-server", action="append", default=[], metavar="CMD|URL",
                   help="an MCP server whose tools are served (proxied) at /mcp/custom: a command line run over "
                   "stdio, or a streamable-HTTP URL; NAME=... names it (repeatable)")
    s.add_argument("--mcp-config", metavar="FILE", help="MCP servers in the mcpServers JSON format (command, args, "
                   "env; or url, headers, bearer_token_env), served at /mcp/custom")
    s.add_argument("--mcp-token-env", metavar="VAR", help="environment variable with the bearer token of an "
                   "--mcp-server URL")
    s.add_argument("--kg-file", metavar="FILE", help="serve your own KG, a triple file (one ['head', 'relation', "
                   "'tail'] per line), as the KG tools at /mcp/custom (built once into the cache)")
    s.add_argument("--page-size", type=int, help="tools per tools/list page (0 = no pagination; default 200)")
    s.add_argument("--workers", type=workers_arg, default=1, metavar="N|auto",
                   help="HTTP: serve from N processes on the one port, each session kept on the process that made "
                   "it, the session and connection caps shared out between them; auto: one per CPU (1 with "
                   "--allow-writes, --inductive, --mcp-server or --mcp-config). Default 1: one process, what an "
                   "assistant client needs; more when a load needs more cores (docs/server.md)")
    s.add_argument("--worker-stuck-timeout", type=float, default=15.0, metavar="S",
                   help="--workers N: a worker process whose event loop has not answered for S seconds is stopped "
                   "and restarted (default 15)")
    s.add_argument("--worker-header", action="store_true", help=argparse.SUPPRESS)  # debug, loopback only: x-evals-worker
    s.add_argument("--json-response", action="store_true", help="answer HTTP requests with JSON instead of SSE")
    _add_limit_arguments(s.add_argument_group(
        "limits on what clients may hold (HTTP; they do not change results)"))
    s.add_argument("-v", "--verbose", action="store_true", help="log every request (uvicorn's info level)")
    add_serve_option_groups(s)
    s.set_defaults(func=cmd_serve)
