"""An MCP server that dies mid-run: a clear error, nothing lost, and the same command resumes the run;
``evals serve`` serves another server's tools next to the benchmarks."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from client.runs import RunDir
from evals.cli import main

ECHO = Path(__file__).resolve().parents[3] / "server" / "mcp_echo_server.py"


def test_a_server_that_dies_mid_run_stops_the_run_clearly_and_the_rerun_resumes(tmp_path: Path, capsys) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"id": f"e{i}", "query": f"Echo t{i}.", "calls": [
        {"name": "echo", "arguments": {"text": f"t{i}"}}], "answer": {"type": "exact", "value": f"t{i}", "contains": True}}) + "\n"
        for i in range(6)))
    config = tmp_path / "mcp.json"

    def servers(**env: str) -> None:
        config.write_text(json.dumps({"mcpServers": {"echo": {"command": sys.executable, "args": [str(ECHO)], "env": env}}}))

    argv = ["run", "taskfile", "--tasks", str(tasks), "--mcp-config", str(config), "--model", "oracle", "--concurrency", "1",
            "--run-dir", str(tmp_path / "run"), "--no-progress"]
    servers(ECHO_DIE_AFTER="2")  # answers two calls, then exits on the third
    assert main(argv) == 3  # the circuit breaker: every later task would fail the same way
    err = capsys.readouterr().err
    assert "Traceback" not in err and "cannot connect to the tool server" in err
    latest = RunDir.open(tmp_path / "run").latest_traces()
    assert [latest[t]["status"] for t in ("e0", "e1")] == ["completed", "completed"]
    failed = latest["e2"]["error"]
    assert failed["type"] == "UpstreamUnavailable" and failed["retryable"] is True
    assert "MCP server unavailable: echo" in failed["message"]

    servers()  # fixed: the same command goes on with the tasks that did not complete
    assert main([*argv, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["completed"] == 6 and summary["metrics"]["call_exact_match"] == 100.0
    traces = list(RunDir.open(tmp_path / "run").iter_traces(dedupe=False))
    assert [t["task_id"] for t in traces if t["status"] == "completed"].count("e0") == 1  # not run twice


def test_a_server_that_cannot_start_is_exit_2_before_anything_runs(tmp_path: Path, capsys) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "a", "query": "q", "calls": [{"name": "echo", "arguments": {"text": "x"}}]}) + "\n")
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"echo": {"command": sys.executable, "args": [str(ECHO)],
                                                          "env": {"ECHO_FAIL_AT_START": "missing ECHO_API_KEY"}}}}))
    argv = ["run", "taskfile", "--tasks", str(tasks), "--mcp-config", str(config), "--model", "oracle",
            "--run-dir", str(tmp_path / "run"), "--no-progress"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "failed to start" in err and "missing ECHO_API_KEY" in err
    tasks.write_text(json.dumps({"id": "a", "query": "q", "calls": [{"name": "shout", "arguments": {}}]}) + "\n")
    config.write_text(json.dumps({"mcpServers": {"echo": {"command": sys.executable, "args": [str(ECHO)]}}}))
    assert main([*argv[:-3], "--run-dir", str(tmp_path / "run2"), "--no-progress"]) == 2
    assert "calls[0].name: tool 'shout' is offered by no tool source. The sources offer: add, echo." in capsys.readouterr().err


async def test_evals_serve_proxies_another_servers_tools_next_to_the_benchmarks(tmp_path: Path) -> None:
    from mcp import StdioServerParameters

    from client.mcp_session import connect, list_all_tools

    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "evals.cli", "serve", "--stdio", "--mcp-server", f"echo={sys.executable} {ECHO}",
        "--tools-dir", str(Path(__file__).resolve().parents[4] / "docs" / "examples" / "tools")])
    # a fresh cache makes `evals serve` build the benchmarks' KGs before it answers: on a loaded machine
    # that can take longer than the client's default 60 s read timeout
    async with connect(params, timeout=600) as session:
        names = {t.name for t in await list_all_tools(session)}
        assert {"echo", "add", "get_weather", "math.factorial"} <= names
        result = await session.call_tool("echo", {"text": "via us"})
        assert not result.is_error and result.structured_content == {"text": "via us", "length": 6}
        refused = await session.call_tool("add", {"a": "one", "b": 2})  # our schema check, before the server
        assert refused.is_error
