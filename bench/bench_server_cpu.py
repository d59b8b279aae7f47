"""Server CPU per tool call: our server against the MCP SDK's own ``MCPServer`` (not a test).

Two servers, each in its own process, over streamable HTTP on 127.0.0.1, driven by the MCP SDK's
client from this process (persistent sessions, the calls of a session back to back):

* ``sdk``: the SDK's high-level server (``mcp.server.mcpserver.MCPServer``, run by its own
  ``run_streamable_http_async``), with two tools: ``echo(text) -> text`` (an ``async`` function,
  unstructured output) and ``kg_2hop(start, path)``, which walks a plain Python dict
  (head -> relation -> tails) built from the same FamilyTool-b KG file and returns the matching
  triples and paths: a bare server with no KG engine, validation or limits of its own beyond the SDK's.
* ``ours``: ``evals serve --benchmarks familytool-b --tools-dir DIR``, default limits and checks.
  ``echo`` is a spec file in DIR whose executor is the python kind with an ``async`` function (the
  cheapest in-process path: no thread, no sandbox), served at ``/mcp/custom``; the KG tool is the real
  ``kg_search_path`` of task ``KGMTUbench_0`` (``/mcp/familytool-b/KGMTUbench_0``: schema-checked
  arguments, the KG store's adjacency, the output schema check, the encodability check), the way
  ``evals run`` calls it (``?session=<id>`` per session).

Both KG tools answer ``start='Bob', path=['mother', 'prefer_dinnertime']`` with the same triples.

For each concurrency (``--concurrency``, default 1 8 32) and each tool, ``c`` sessions are opened
and warmed up, then make ``--calls`` calls in all; the server's CPU time (user + system, from
``/proc/PID/stat``) is read just before and after, so start-up and session set-up are not counted.
Repetitions are interleaved between the servers (a change of load on the machine hits both alike);
the table shows medians over ``--repeats`` and the ratio ours/SDK of those medians (lower is better;
the goal is <= 1.00). Only server CPU is measured: the machine may be loaded, wall times are not shown.

    EVALS_DATA_DIR=../shared/data python bench/bench_server_cpu.py [--calls 1000] [--repeats 3] \\
        [--concurrency 1 8 32] [--compare-ref REF]

``--compare-ref REF`` (e.g. ``main``) also serves the code of that git commit (its tree exported with
``git archive`` to a temporary directory, run from there the way ``ours`` is run), measured in the
same rounds: the table adds its CPU per call and ours/REF.

``--tool-path`` instead times, in this process and without HTTP, each step of our server's own path
for the KG call (argument checks, the KG search, the whole spec call, the endpoint's call, the MCP
result model and its JSON): how much of a call's CPU is ours at all.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import cpu_s, free_port, wait_for_health  # noqa: E402  (bench/ is on sys.path when run as a script)

from client.mcp_session import connect  # noqa: E402

TASK = "KGMTUbench_0"
KG_ARGS = {"start": "Bob", "path": ["mother", "prefer_dinnertime"]}
ECHO_ARGS = {"text": "hello, server"}
# tool -> server -> (endpoint path, tool name, arguments)
CALLS: dict[str, dict[str, tuple[str, str, dict[str, Any]]]] = {
    "echo": {"sdk": ("/mcp", "echo", ECHO_ARGS), "ours": ("/mcp/custom", "echo", ECHO_ARGS)},
    "kg 2-hop": {"sdk": ("/mcp", "kg_2hop", KG_ARGS),
                 "ours": (f"/mcp/familytool-b/{TASK}", "kg_search_path", KG_ARGS)},
}
SERVERS = ("sdk", "ours")

ECHO_SPEC = """\
name: echo
description: Return the text it is given.
input_schema:
  type: object
  properties:
    text: {type: string, description: The text to return.}
  required: [text]
executor: {kind: python, target: echo_tool.py:echo}
"""
ECHO_MODULE = '''\
async def echo(text: str) -> str:
    return text
'''


# ---- the SDK's server (this script run with --serve-sdk PORT, in a child process) ---------------
async def serve_sdk(port: int, kg_file: Path) -> None:
    from mcp.server.mcpserver import MCPServer

    from kg_store import parse_triple_file

    graph: dict[str, dict[str, list[str]]] = {}
    for t in parse_triple_file(kg_file):
        graph.setdefault(t.head, {}).setdefault(t.relation, []).append(t.tail)

    server = MCPServer("sdk-baseline", log_level="WARNING")

    @server.tool(structured_output=False)
    async def echo(text: str) -> str:
        """Return the text it is given."""
        return text

    @server.tool()
    async def kg_2hop(start: str, path: list[str]) -> dict[str, Any]:
        """Follow a path of relations from a start entity; the matching triples and paths."""
        paths: list[list[list[str]]] = [[]]
        ends = [start]
        for relation in path:
            next_paths, next_ends = [], []
            for walked, node in zip(paths, ends, strict=True):
                for tail in graph.get(node, {}).get(relation, ()):
                    next_paths.append([*walked, [node, relation, tail]])
                    next_ends.append(tail)
            paths, ends = next_paths, next_ends
        triples = list({tuple(t): t for p in paths for t in p}.values())
        return {"start": start, "path": path, "start_found": start in graph, "paths": paths, "triples": triples}

    await server.run_streamable_http_async(host="127.0.0.1", port=port)


# ---- the driver ---------------------------------------------------------------------------------
async def session(url: str, name: str, arguments: dict[str, Any], calls: int,
                  ready: asyncio.Event, counter: list[int], go: asyncio.Event) -> None:
    async with connect(url) as client:
        for _ in range(3):  # warm-up: connection up, first calls served
            res = await client.call_tool(name, arguments)
            assert not res.is_error, res
        counter[0] -= 1
        if counter[0] == 0:
            ready.set()
        await go.wait()
        for _ in range(calls):
            res = await client.call_tool(name, arguments)
            assert not res.is_error, res


async def measure(pid: int, url: str, name: str, arguments: dict[str, Any], concurrency: int, calls: int,
                  per_session_url: bool) -> float:
    """Server CPU ms per call: ``concurrency`` warmed-up sessions making ``calls`` calls in all."""
    ready, go = asyncio.Event(), asyncio.Event()
    counter = [concurrency]
    each = max(1, calls // concurrency)
    urls = [f"{url}?session={uuid.uuid4().hex}" if per_session_url else url for _ in range(concurrency)]
    tasks = [asyncio.create_task(session(u, name, arguments, each, ready, counter, go)) for u in urls]
    waiting = asyncio.create_task(ready.wait())
    await asyncio.wait([waiting, *tasks], return_when=asyncio.FIRST_COMPLETED)
    for t in tasks:
        if t.done() and t.exception():
            raise t.exception()  # type: ignore[misc]
    await asyncio.sleep(0.2)  # the warm-up's last replies are out
    cpu0 = cpu_s(pid)
    go.set()
    await asyncio.gather(*tasks)
    return 1000 * (cpu_s(pid) - cpu0) / (each * concurrency)


def export_tree(ref: str, dest: Path) -> Path:
    """``git archive`` the whole tree of commit ``ref`` into ``dest``."""
    repo = Path(__file__).resolve().parent.parent
    data = subprocess.run(["git", "-C", str(repo), "archive", ref], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")
    return dest


def start_servers(tmp: Path, kg_file: Path, ref: str | None = None
                  ) -> tuple[dict[str, subprocess.Popen[bytes]], dict[str, str]]:
    tools = tmp / "tools"
    tools.mkdir()
    (tools / "echo.yaml").write_text(ECHO_SPEC)
    (tools / "echo_tool.py").write_text(ECHO_MODULE)
    servers = [*SERVERS, "ref"] if ref else list(SERVERS)
    ports = {s: free_port() for s in servers}
    env = dict(os.environ)
    procs = {
        "sdk": subprocess.Popen([sys.executable, __file__, "--serve-sdk", str(ports["sdk"]), "--kg-file", str(kg_file)],
                                env=env),
    }
    trees = {"ours": Path(__file__).resolve().parent.parent}
    if ref:
        trees["ref"] = export_tree(ref, tmp / "ref")
    for name, tree in trees.items():
        # one server process, as the SDK's (`evals serve --workers 1`, the default now; older trees served one per CPU,
        # and the CPU measured is the server pid's own); a tree older than --workers has one anyway
        serve_help = subprocess.run([sys.executable, "-m", "evals.cli", "serve", "--help"], capture_output=True,
                                    text=True, env={**env, "PYTHONPATH": str(tree)}, cwd=tree, check=False).stdout
        one = ["--workers", "1"] if "--workers" in serve_help else []
        procs[name] = subprocess.Popen(
            [sys.executable, "-m", "evals.cli", "serve", "--port", str(ports[name]), "--benchmarks", "familytool-b",
             "--tools-dir", str(tools), *one], env={**env, "PYTHONPATH": str(tree)}, cwd=tree)
    return procs, {s: f"http://127.0.0.1:{p}" for s, p in ports.items()}


def _per_call_us(fn: Any, calls: int) -> float:
    for _ in range(min(calls, 300)):  # warm-up
        fn()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls * 1e6


async def _per_await_us(make: Any, calls: int) -> float:
    for _ in range(min(calls, 300)):
        await make()
    t0 = time.perf_counter()
    for _ in range(calls):
        await make()
    return (time.perf_counter() - t0) / calls * 1e6


async def tool_path(calls: int) -> None:
    """``--tool-path``: our server's own steps for the KG call, in process (see the module docs)."""
    import contextlib

    from evals.core.serving import build_tool_server
    from server.core import EndpointRef
    from tool_specs import CallContext
    from tool_specs.validation import _check_json, _check_size, validate_arguments

    with contextlib.ExitStack() as stack:
        server = build_tool_server(["familytool-b"], stack=stack)
        ref = EndpointRef("familytool-b", TASK)
        spec = server.endpoint_tools(ref)["kg_search_path"]
        ctx = CallContext(episode_id="bench", task_id=TASK, benchmark="familytool-b", extra={}, state={})
        result = (await server.call(ref, "kg_search_path", KG_ARGS, ctx)).to_mcp()
        body = result.model_dump_json(by_alias=True, exclude_none=True)
        rows = [
            ("argument size walk", _per_call_us(lambda: _check_size(KG_ARGS, 65536, 524288, 64), calls)),
            ("argument JSON check", _per_call_us(lambda: _check_json(KG_ARGS), calls)),
            ("argument validation, whole", _per_call_us(lambda: validate_arguments(spec, KG_ARGS), calls)),
            ("executor (the KG search)", await _per_await_us(lambda: spec.executor(spec, dict(KG_ARGS), ctx), calls)),
            ("spec.call (checks + executor + result checks)", await _per_await_us(lambda: spec.call(KG_ARGS, ctx), calls)),
            ("ToolServer.call (+ endpoint lookup)",
             await _per_await_us(lambda: server.call(ref, "kg_search_path", KG_ARGS, ctx), calls)),
        ]
        last = await server.call(ref, "kg_search_path", KG_ARGS, ctx)
        rows.append(("the MCP result model", _per_call_us(last.to_mcp, calls)))
        rows.append((f"its JSON ({len(body)} bytes)",
                     _per_call_us(lambda: result.model_dump_json(by_alias=True, exclude_none=True), calls)))
    table = Table(title=f"our server's own path for kg_search_path, in process ({calls} calls each)")
    table.add_column("step")
    table.add_column("us per call", justify="right")
    for step, us in rows:
        table.add_row(step, f"{us:.1f}")
    Console(width=max(Console().width, 100)).print(table)
    print("compare with the server's CPU ms per call over HTTP in the main table (the steps are nested: "
          "ToolServer.call holds spec.call, which holds the others)")


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=1000, help="calls per measurement, over all sessions (default 1000)")
    ap.add_argument("--repeats", type=int, default=3, help="measurements per cell; the table shows medians (default 3)")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    ap.add_argument("--tools", nargs="+", choices=list(CALLS), default=list(CALLS))
    ap.add_argument("--tool-path", action="store_true",
                    help="time our server's own steps for the KG call in process instead (see above)")
    ap.add_argument("--compare-ref", metavar="REF",
                    help="also serve the code of this git commit (e.g. main), interleaved; adds ours/REF")
    ap.add_argument("--serve-sdk", type=int, metavar="PORT", help=argparse.SUPPRESS)
    ap.add_argument("--kg-file", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    data = Path(os.environ.get("EVALS_DATA_DIR") or Path(__file__).resolve().parents[2] / "shared" / "data")
    kg_file = args.kg_file or data / "familytool" / "familykg-b.txt"
    if args.serve_sdk:
        await serve_sdk(args.serve_sdk, kg_file)
        return
    if args.tool_path:
        await tool_path(max(args.calls, 5000))
        return

    results: dict[tuple[str, int, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        procs, bases = start_servers(Path(tmp), kg_file, args.compare_ref)
        try:
            for server in procs:
                await wait_for_health(bases[server], tries=600, **({"path": "/mcp"} if server == "sdk" else {}))
            for _ in range(args.repeats):
                for c in args.concurrency:
                    for tool in args.tools:
                        for server in procs:  # interleaved: one of each, then again
                            kind = "sdk" if server == "sdk" else "ours"
                            path, name, arguments = CALLS[tool][kind]
                            ms = await measure(procs[server].pid, bases[server] + path, name, arguments, c,
                                               args.calls, per_session_url=kind == "ours")
                            results.setdefault((tool, c, server), []).append(ms)
        finally:
            for p in procs.values():
                p.terminate()
            for p in procs.values():
                p.wait(timeout=15)

    load = os.getloadavg()
    table = Table(title=f"server CPU per tool call over HTTP, ours vs the MCP SDK's MCPServer (median of {args.repeats}, "
                        f"{args.calls} calls each)")
    ref = args.compare_ref
    cols = ["tool", "concurrency", "SDK ms/call", "ours ms/call", "ours/SDK", "ratios per repeat"]
    if ref:
        cols += [f"{ref} ms/call", f"{ref}/SDK", f"ours/{ref}"]
    for col in cols:
        table.add_column(col, justify="right")
    med = statistics.median
    for tool in args.tools:
        for c in args.concurrency:
            sdk, ours = results[tool, c, "sdk"], results[tool, c, "ours"]
            per = " ".join(f"{o / s:.2f}" for o, s in zip(ours, sdk, strict=True))
            row = [tool, str(c), f"{med(sdk):.3f}", f"{med(ours):.3f}", f"{med(ours) / med(sdk):.2f}", per]
            if ref:
                old = results[tool, c, "ref"]
                row += [f"{med(old):.3f}", f"{med(old) / med(sdk):.2f}", f"{med(ours) / med(old):.2f}"]
            table.add_row(*row)
    console = Console(width=max(Console().width, 120))
    console.print(table)
    console.print(f"machine: {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (at the end); "
                  "goal: ours/SDK <= 1.00 on every row")


if __name__ == "__main__":
    asyncio.run(main())
