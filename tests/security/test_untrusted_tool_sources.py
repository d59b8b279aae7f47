"""Tools that come from outside (an MCP server's listing, a ``--replay`` recording, a spec file) are
untrusted: a ``$ref`` in their schemas is never fetched, their names and schemas follow the spec-file
rules, their results reach the model bounded, and a server's stderr is held bounded.

The upstream servers are real stdio MCP servers (``hostile_mcp_server.py``, the MCP SDK's low-level
server) started as child processes; the ``$ref`` targets are a real HTTP server on 127.0.0.1 that
counts its requests, and a real file."""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import json
import os
import stat
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from loopback_http import serve_http

from evals.cli import main
from server import (
    CallRecording,
    McpSource,
    McpSourceError,
    UpstreamConnection,
    open_sources,
    read_recording,
    replay_specs,
    upstream_specs,
)
from tool_specs import MAX_RESULT_BYTES, SpecLoadError, load_tool_file

HOSTILE = Path(__file__).with_name("hostile_mcp_server.py")
SECRET = "SECRET-7f3a-from-the-fetched-document"


class _Counting(http.server.BaseHTTPRequestHandler):
    hits: list[str]

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.hits.append(self.path)
        body = json.dumps({"type": "integer", "description": SECRET}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/schema+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def schema_host() -> Iterator[tuple[str, list[str]]]:
    """A local HTTP server that serves a schema holding :data:`SECRET`: its URL and the paths asked for."""
    hits: list[str] = []
    handler = type("Handler", (_Counting,), {"hits": hits})
    with serve_http(handler) as url:
        yield f"{url}/schema.json", hits


def hostile(mode: str, **env: str) -> McpSource:
    return McpSource("hostile", command=sys.executable, args=(str(HOSTILE),), env={"HOSTILE_MODE": mode, **env},
                     timeout=60)


def open_hostile(source: McpSource) -> None:
    with contextlib.ExitStack() as stack:
        open_sources([source], stack)


# ---------------------------------------------------------------- 1. a schema is not a network client


@pytest.mark.parametrize("mode", ["ref", "output_ref"])
def test_a_ref_to_a_local_http_server_in_an_upstream_schema_is_refused_and_never_fetched(
    schema_host: tuple[str, list[str]], mode: str
) -> None:
    url, hits = schema_host
    with pytest.raises(McpSourceError) as refused:
        open_hostile(hostile(mode, HOSTILE_REF=url))
    message = str(refused.value)
    assert "MCP server hostile" in message and "lookup" in message and "$ref" in message and url in message
    assert "only local references" in message and "\n" not in message and SECRET not in message
    assert hits == []


def test_no_validator_fetches_a_ref_even_in_a_schema_that_skipped_the_load_checks(
    schema_host: tuple[str, list[str]]
) -> None:
    """The second wall: every validator resolves references with a registry that retrieves nothing."""
    from jsonschema import SchemaError

    from tool_specs import schema_validator, validate_arguments
    from tool_specs.validation import prepared_validator

    url, hits = schema_host
    remote = {"type": "object", "properties": {"thing": {"$ref": url}}}
    with pytest.raises(SchemaError, match="only local references"):
        validate_arguments(remote, {"thing": "x"})
    for validator in (schema_validator(remote), prepared_validator(remote, closed=False)[0]):
        with pytest.raises(Exception, match="Unresolvable") as unresolvable:
            list(validator.iter_errors({"thing": "x"}))
        assert SECRET not in str(unresolvable.value)
    assert hits == []


def test_a_file_ref_in_an_upstream_schema_is_refused_and_the_file_never_read(tmp_path: Path) -> None:
    secret_file = tmp_path / "secret.json"
    secret_file.write_text(json.dumps({"type": "integer", "description": SECRET}))
    with pytest.raises(McpSourceError, match=r"\$ref 'file://.*secret\.json' points outside the schema") as refused:
        open_hostile(hostile("ref", HOSTILE_REF=secret_file.as_uri()))
    assert SECRET not in str(refused.value)


def _recording(path: Path, tools: Sequence[dict[str, object]], calls: Sequence[dict[str, object]] = ()) -> Path:
    lines = [{"kind": "tools", "source": "remote", "tools": tools}, *calls]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_a_ref_in_a_recording_is_refused_at_load_and_never_fetched(
    tmp_path: Path, schema_host: tuple[str, list[str]]
) -> None:
    url, hits = schema_host
    rec = _recording(tmp_path / "rec.jsonl", [{"name": "lookup", "inputSchema": {
        "type": "object", "properties": {"thing": {"$ref": url}}}}])
    with pytest.raises(McpSourceError) as refused:
        replay_specs(read_recording(rec))
    assert str(rec) in str(refused.value) and "'remote'" in str(refused.value) and url in str(refused.value)
    assert hits == []


def test_a_ref_in_an_openai_format_spec_file_is_refused_at_load_and_never_fetched(
    tmp_path: Path, schema_host: tuple[str, list[str]]
) -> None:
    url, hits = schema_host
    spec = tmp_path / "tools.json"
    spec.write_text(json.dumps([{"type": "function", "function": {"name": "lookup", "parameters": {
        "type": "object", "properties": {"thing": {"$ref": url}}}}}], indent=1))
    with pytest.raises(SpecLoadError) as refused:
        load_tool_file(spec)
    message = str(refused.value)
    line = next(n for n, text in enumerate(spec.read_text().splitlines(), 1) if '"$ref"' in text)
    assert message.startswith(f"{spec}:{line}: tool #0 ('lookup'): ") and url in message and "only local references" in message
    assert hits == []


def test_a_yaml_spec_file_with_a_ref_is_refused_with_the_line_of_the_ref(
    tmp_path: Path, schema_host: tuple[str, list[str]]
) -> None:
    url, hits = schema_host
    spec = tmp_path / "tools.yaml"
    spec.write_text(f"- name: lookup\n  input_schema:\n    type: object\n    properties:\n      thing:\n        $ref: '{url}'\n")
    with pytest.raises(SpecLoadError, match=rf"^{spec}:6: tool #0 \('lookup'\): input_schema\.properties\.thing\.\$ref: "):
        load_tool_file(spec)
    assert hits == []


def test_the_cli_refuses_a_server_whose_schema_has_a_ref_with_exit_2_and_one_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], schema_host: tuple[str, list[str]]
) -> None:
    url, hits = schema_host
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "a", "query": "q", "calls": [{"name": "lookup", "arguments": {"thing": 1}}]}) + "\n")
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"hostile": {"command": sys.executable, "args": [str(HOSTILE)],
                                                             "env": {"HOSTILE_MODE": "ref", "HOSTILE_REF": url}}}}))
    code = main(["run", "taskfile", "--tasks", str(tasks), "--mcp-config", str(config), "--model", "oracle",
                 "--run-dir", str(tmp_path / "run"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and "$ref" in err and url in err and SECRET not in err
    assert err.count("error:") == 1 and err.lstrip().startswith("error: MCP server hostile")  # one message (wrapped)
    assert hits == []


# ---------------------------------------------------------------- 13. the spec-file rules for every source


def test_an_upstream_server_with_bad_tool_names_and_an_invalid_schema_is_refused_naming_each() -> None:
    with pytest.raises(McpSourceError) as refused:
        open_hostile(hostile("names"))
    message = str(refused.value)
    for name in ("files/read", "../../etc/passwd", "has space", "<script>", "l\u043eokup"):
        assert repr(name) in message, name
    assert "'\\u043e'" in message or "'\u043e'" in message  # the look-alike letter is named
    assert "inputSchema.properties.q.type" in message and "strng" in message
    assert "\n" not in message


def test_a_recording_with_bad_tool_names_is_refused_at_load(tmp_path: Path) -> None:
    rec = _recording(tmp_path / "rec.jsonl", [{"name": "../up", "inputSchema": {"type": "object"}},
                                              {"name": "fine", "inputSchema": {"type": "object", "properties": {
                                                  "n": {"type": "integer", "minimum": "one"}}}}])
    with pytest.raises(McpSourceError) as refused:
        replay_specs(read_recording(rec))
    message = str(refused.value)
    assert str(rec) in message and "'../up'" in message and "inputSchema.properties.n.minimum" in message


def test_an_upstream_result_of_20_mb_reaches_the_model_as_a_short_error_and_is_recorded_so(tmp_path: Path) -> None:
    recording = CallRecording(tmp_path / "rec.jsonl")
    with contextlib.ExitStack() as stack:
        stack.callback(recording.close)
        ((_, specs),) = open_sources([hostile("big")], stack, record=recording)
        result = asyncio.run(specs[0].call({}))
    assert result.is_error and f"larger than {MAX_RESULT_BYTES} bytes" in result.text and len(result.text) < 500
    assert (tmp_path / "rec.jsonl").stat().st_size < 10_000  # what was recorded is the short error


def test_a_recorded_result_over_the_limit_is_replayed_as_a_short_error(tmp_path: Path) -> None:
    rec = _recording(tmp_path / "rec.jsonl", [{"name": "big", "inputSchema": {"type": "object"}}], [
        {"kind": "call", "source": "remote", "task_id": "t", "episode": "e", "tool": "big", "arguments": {},
         "result": {"text": "x" * (MAX_RESULT_BYTES + 1), "structured": None, "is_error": False}}])
    (spec,) = replay_specs(read_recording(rec))
    result = asyncio.run(spec.call({}))
    assert result.is_error and f"larger than {MAX_RESULT_BYTES} bytes" in result.text and len(result.text) < 500


# ---------------------------------------------------------------- 15. a server's stderr is bounded


def _large_files() -> set[tuple[int, int]]:
    """(device, inode) of the regular files over 1 MB this process holds open (deleted ones too)."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            info = os.stat(int(fd))
            if stat.S_ISREG(info.st_mode) and info.st_size > (1 << 20):
                found.add((info.st_dev, info.st_ino))
    return found


def test_a_server_writing_20_mb_on_stderr_holds_no_file_and_keeps_answering() -> None:
    before = _large_files()
    conn = UpstreamConnection(hostile("stderr", HOSTILE_STDERR_BYTES=str(20 << 20), HOSTILE_STDERR_LAST="done talking"))
    try:
        (spec,) = upstream_specs(conn.open(), conn)  # it wrote 20 MB before answering: the pipe was drained
        assert asyncio.run(spec.call({})).text == "pong"
        assert _large_files() - before == set()  # nothing of its stderr went to a (temp) file
        assert conn.stderr_tail().endswith("done talking")
    finally:
        conn.close()
