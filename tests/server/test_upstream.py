"""Tools of another MCP server through ours: a real stdio server (started as a child process) and
our own server over streamable HTTP with a bearer token; failures to start, death mid-run,
recording and replay."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from server import (
    UPSTREAM_UNAVAILABLE,
    BenchmarkMount,
    CallRecording,
    McpSource,
    McpSourceError,
    ToolServer,
    UpstreamConnection,
    create_app,
    load_mcp_config,
    parse_mcp_server,
    read_recording,
    replay_specs,
    serve_in_background,
    upstream_specs,
)
from tool_specs import CallContext, StaticCatalog, ToolSpec

ECHO = Path(__file__).with_name("mcp_echo_server.py")


def echo_source(**env: str) -> McpSource:
    return McpSource("echo", command=sys.executable, args=(str(ECHO),), env=env)


def test_stderr_tail_is_whole_when_two_threads_ask_at_once() -> None:
    """When a server exits at start, the caller and the connection's own task both read its stderr
    (a pipe whose tail is kept, issue 36): both see it whole, and later writes land after it."""
    import os
    import threading

    conn = UpstreamConnection(echo_source())
    try:
        fd = conn._stderr.fileno()
        os.write(fd, b"starting\nmissing ECHO_API_KEY\n")  # as the server writes it: through its own fd
        tails: list[str] = []

        def ask() -> None:
            for _ in range(300):
                tails.append(conn.stderr_tail())

        threads = [threading.Thread(target=ask) for _ in range(2)]
        interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
        try:
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        finally:
            sys.setswitchinterval(interval)
        assert set(tails) == {"starting | missing ECHO_API_KEY"}
        os.write(fd, b"later\n")  # a later write by the server still lands after what it wrote
        assert conn.stderr_tail() == "starting | missing ECHO_API_KEY | later"
    finally:
        conn.close()


def test_a_stdio_server_is_listed_and_called_through_our_validation() -> None:
    conn = UpstreamConnection(echo_source())
    try:
        tools = conn.open()
        specs = {s.name: s for s in upstream_specs(tools, conn)}
        assert set(specs) == {"echo", "add"}
        assert specs["echo"].input_schema["required"] == ["text"]
        ok = asyncio.run(specs["echo"].call({"text": "hello"}))
        assert not ok.is_error and ok.structured == {"text": "hello", "length": 5}
        bad = asyncio.run(specs["add"].call({"a": 1}))  # refused by our schema check, never sent
        assert bad.is_error and "b" in bad.text
    finally:
        conn.close()
    assert conn.dead == "closed"


def test_a_server_that_fails_to_start_is_a_clear_error_with_its_stderr() -> None:
    with pytest.raises(McpSourceError, match=r"echo .*failed to start.*its stderr ends: bad API key for echo"):
        UpstreamConnection(echo_source(ECHO_FAIL_AT_START="bad API key for echo")).open()
    with pytest.raises(McpSourceError, match="failed to start"):
        UpstreamConnection(McpSource("nothing", command="/nonexistent/mcp-server")).open()


def test_a_server_that_dies_mid_run_answers_with_a_marked_error() -> None:
    conn = UpstreamConnection(echo_source(ECHO_DIE_AFTER="1"))
    try:
        spec = {s.name: s for s in upstream_specs(conn.open(), conn)}["echo"]
        assert not asyncio.run(spec.call({"text": "one"})).is_error
        for _ in range(2):  # the call that kills it, and every later one
            dead = asyncio.run(spec.call({"text": "two"}))
            assert dead.is_error and dead.text.startswith(UPSTREAM_UNAVAILABLE) and "echo" in dead.text
    finally:
        conn.close()


async def test_a_streamable_http_server_with_a_bearer_token_from_the_environment(monkeypatch) -> None:
    async def shout(spec: object, arguments: dict, ctx: object) -> dict:
        return {"loud": arguments["text"].upper()}

    tool = ToolSpec(name="shout", input_schema={"type": "object", "properties": {"text": {"type": "string"}},
                                                "required": ["text"]}, executor=shout)
    ours = ToolServer([BenchmarkMount(catalog=StaticCatalog("custom", {}, extra_playground=[tool]))])
    monkeypatch.setenv("UPSTREAM_TOKEN", "s3cret")
    async with serve_in_background(create_app(ours, token="s3cret")) as url:
        source = parse_mcp_server(f"{url}/mcp/custom", token_env="UPSTREAM_TOKEN")
        assert source.url and source.name == "127.0.0.1"
        conn = UpstreamConnection(source)
        try:
            tools = await asyncio.to_thread(conn.open)
            (spec,) = upstream_specs(tools, conn)
            result = await spec.call({"text": "hi"})
            assert not result.is_error and result.structured == {"loud": "HI"}
        finally:
            await asyncio.to_thread(conn.close)
        monkeypatch.setenv("UPSTREAM_TOKEN", "wrong")
        with pytest.raises(McpSourceError, match="failed to start"):
            await asyncio.to_thread(UpstreamConnection(source).open)
        monkeypatch.delenv("UPSTREAM_TOKEN")
        with pytest.raises(McpSourceError, match=r"\$UPSTREAM_TOKEN is not set"):
            await asyncio.to_thread(UpstreamConnection(source).open)


def test_sources_from_a_command_line_a_url_and_an_mcp_servers_file(tmp_path: Path) -> None:
    s = parse_mcp_server("time=uvx mcp-server-time --local-timezone 'Asia/Tokyo'")
    assert (s.name, s.command, s.args) == ("time", "uvx", ("mcp-server-time", "--local-timezone", "Asia/Tokyo"))
    assert parse_mcp_server("https://example.org:8443/mcp").name == "example.org"
    with pytest.raises(McpSourceError, match="goes with an http"):
        parse_mcp_server("uvx x", token_env="T")
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "echo": {"command": sys.executable, "args": [str(ECHO)], "env": {"A": "1"}},
        "remote": {"url": "http://127.0.0.1:1/mcp", "headers": {"X-Team": "a"}, "bearer_token_env": "T"}}}))
    local, remote = load_mcp_config(config)
    assert local.env == {"A": "1"} and remote.headers == {"X-Team": "a"} and remote.token_env == "T"
    assert "X-Team" not in remote.describe()  # no header (or token) in what is shown or recorded
    config.write_text(json.dumps({"mcpServers": {"x": {"command": "a", "url": "http://h/"}}}))
    with pytest.raises(McpSourceError, match="exactly one of a command or a url"):
        load_mcp_config(config)
    config.write_text('{"mcpServers": {"x": {"command": "a", "argz": []}}}')
    with pytest.raises(McpSourceError, match="unknown key"):
        load_mcp_config(config)
    config.write_text('{"mcpServers": \n {')
    with pytest.raises(McpSourceError, match=r"mcp.json:2: invalid JSON"):
        load_mcp_config(config)


def test_record_then_replay_offline(tmp_path: Path) -> None:
    rec_path = tmp_path / "rec.jsonl"
    recording = CallRecording(rec_path)
    conn = UpstreamConnection(echo_source())
    try:
        tools = conn.open()
        recording.tools("echo", tools)
        specs = {s.name: s for s in upstream_specs(tools, conn, recording)}
        for task, text in (("t1", "a"), ("t1", "b"), ("t2", "a")):
            live = asyncio.run(specs["echo"].call({"text": text}, CallContext(task_id=task, episode_id=f"s-{task}")))
            assert not live.is_error
        asyncio.run(specs["add"].call({"a": 1, "b": "2"}, CallContext(task_id="t3", episode_id="s")))  # refused by us
    finally:
        conn.close()
        recording.close()
    rec = read_recording(rec_path)
    assert len(rec.calls["echo"]) == 3 and "add" not in rec.calls  # a refused call never reached the server
    replayed = {s.name: s for s in replay_specs(rec)}
    got = asyncio.run(replayed["echo"].call({"text": "b"}, CallContext(task_id="t1")))
    assert got.structured == {"text": "b", "length": 1}
    other_task = asyncio.run(replayed["echo"].call({"text": "a"}, CallContext(task_id="t9")))
    assert other_task.structured == {"text": "a", "length": 1}
    missing = asyncio.run(replayed["echo"].call({"text": "zzz"}, CallContext(task_id="t1")))
    assert missing.is_error and "no response was recorded" in missing.text and "--record" in missing.text
    rec_path.write_text(rec_path.read_text() + "{not json\n")
    with pytest.raises(McpSourceError, match=r"rec.jsonl:5: not a recording line"):
        read_recording(rec_path)
