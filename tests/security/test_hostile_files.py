"""Hostile files from outside (issue 36, items 4, 6, 12 and 16's tolerances): a YAML alias bomb, keys
given twice, files nested hundreds of levels deep, NaN/Infinity tolerances and a regex that
backtracks for hours. Each is refused with one ``FILE:LINE`` line and exit 2 by the real ``evals``
command (a subprocess), or scored without hanging; every wait is bounded so a regression fails
instead of hanging or eating the machine's memory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_providers import FakeProviderServer, openai_chat
from mcp import Client

from evals.benchmarks.usertasks.taskfile import TaskFileError, load_task_file
from evals.core.options import OptionError, load_config_file
from server import BenchmarkMount, ToolServer, create_app, load_mcp_config, serve_in_background
from server.mcp_sources import McpSourceError
from server.recording import read_recording
from tool_specs import MAX_FILE_DEPTH, SpecLoadError, StaticCatalog, load_spec_file, load_tool_file

REPO = Path(__file__).resolve().parents[2]
WAIT = 120  # seconds: far more than any of these commands needs; a hang or a runaway fails the test

# 1.3 KB: nine levels of nine aliases, 9**9 = 387 million strings when walked as a tree
BOMB = "".join(
    [f"a: &a [{', '.join(['lol'] * 9)}]\n"]
    + [f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)]
)


def evals(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "evals.cli", *args], capture_output=True, text=True, timeout=WAIT,
                          cwd=cwd, env=env, stdin=subprocess.DEVNULL)


def refused(proc: subprocess.CompletedProcess[str], where: str, what: str) -> None:
    """Exit 2, no traceback, and one line of stderr naming ``where`` (FILE:LINE) and ``what``."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if where in line]
    assert len(lines) == 1 and what in lines[0], proc.stderr[-2000:]


def run_tasks(tasks: Path, tmp_path: Path, *more: str) -> subprocess.CompletedProcess[str]:
    return evals("run", "taskfile", "--tasks", str(tasks), "--model", "oracle", "--run-dir", str(tmp_path / "run"),
                 "--no-progress", *more, cwd=tmp_path)


def serve_tools(folder: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return evals("serve", "--tools-dir", str(folder), "--stdio", cwd=tmp_path)


# ---- item 6: the alias bomb and keys given twice ---------------------------------------------------
def test_an_alias_bomb_task_file_is_refused_at_its_line_without_growing(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text("tasks:\n  - id: t\n    query: q\n    answer: x\n" + BOMB)
    assert path.stat().st_size < 1400
    refused(run_tasks(path, tmp_path), f"{path}:9:", "aliases expand to more than")  # *d: past the budget
    assert not (tmp_path / "run").exists()


def test_an_alias_bomb_spec_file_is_refused_by_evals_serve(tmp_path: Path) -> None:
    folder = tmp_path / "tools"
    folder.mkdir()
    (folder / "bomb.yaml").write_text("name: boom\ndescription: d\nannotations:\n" + "".join(
        f"  {line}\n" for line in BOMB.splitlines()))
    refused(serve_tools(folder, tmp_path), f"{folder / 'bomb.yaml'}:8:", "aliases expand to more than")


def test_a_recursive_alias_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "loop.yaml"
    path.write_text("name: loop\nannotations: &x\n  again: [*x]\n")
    with pytest.raises(SpecLoadError, match=r"loop\.yaml:3: alias \*x is used inside its own anchor"):
        load_spec_file(path)


def test_a_few_aliases_and_merges_still_load(tmp_path: Path) -> None:
    path = tmp_path / "tools.yaml"
    path.write_text("tools:\n  - name: a\n    parameters: &p {city: {type: string}}\n  - name: b\n    parameters: *p\n"
                    "    annotations:\n      base: &b {x: 1}\n      more: {<<: *b, x: 2}\n")
    a, b = load_spec_file(path)
    assert a.input_schema["properties"] == b.input_schema["properties"] and b.annotations["more"] == {"x": 2}


@pytest.mark.parametrize(("name", "text", "line"), [
    ("tasks.yaml", "- id: a\n  query: q\n  answer: x\n  query: r\n", 4),
    ("tasks.jsonl", '{"id": "a", "query": "q", "answer": "x"}\n{"id": "b", "query": "q", "answer": "x", "query": "r"}\n', 2),
])
def test_a_key_given_twice_in_a_task_file_is_refused(tmp_path: Path, name: str, text: str, line: int) -> None:
    path = tmp_path / name
    path.write_text(text)
    refused(run_tasks(path, tmp_path), f"{path}:{line}:", "'query' is given twice")


@pytest.mark.parametrize(("name", "text", "line"), [
    ("t.yaml", "name: t\ndescription: one\nparameters: {}\ndescription: two\n", 4),
    ("t.json", '{"name": "t",\n "parameters": {"type": "object",\n  "properties": {}, "properties": {"x": {}}}}', 3),
    ("t.jsonl", '{"name": "t", "parameters": {"type": "dict", "properties": {}}}\n'
                '{"name": "u", "name": "v", "parameters": {"type": "dict", "properties": {}}}\n', 2),
])
def test_a_key_given_twice_in_a_spec_file_is_refused(tmp_path: Path, name: str, text: str, line: int) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(SpecLoadError, match="given twice") as err:
        load_tool_file(path)
    assert str(err.value).startswith(f"{path}:{line}: ")


def test_config_files_take_the_same_loader(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("concurrency: 2\nlimit: 1\nconcurrency: 8\n")
    with pytest.raises(OptionError, match=rf"^{path}:3: key 'concurrency' is given twice"):
        load_config_file(path)
    path.write_text(BOMB)
    with pytest.raises(OptionError, match=rf"^{path}:5: aliases expand"):
        load_config_file(path)
    mcp = tmp_path / "mcp.json"
    mcp.write_text('{"mcpServers": {"a": {"command": "x"},\n "a": {"command": "y"}}}')
    with pytest.raises(McpSourceError, match=rf"^{mcp}:2: key 'a' is given twice"):
        load_mcp_config(mcp)


# ---- item 12: very deep files -------------------------------------------------------------------
def _nested_schema(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


def test_a_400_level_spec_file_makes_evals_serve_exit_2_with_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "tools"
    folder.mkdir()
    (folder / "deep.json").write_text(json.dumps({"name": "deep", "parameters": _nested_schema(400)}))
    (folder / "deep.yaml").write_text("name: deeper\nparameters:\n  " + json.dumps(_nested_schema(400)) + "\n")
    proc = serve_tools(folder, tmp_path)
    refused(proc, f"{folder / 'deep.json'}:1:", f"nested more than {MAX_FILE_DEPTH} levels deep")
    refused(proc, f"{folder / 'deep.yaml'}:3:", f"nested more than {MAX_FILE_DEPTH} levels deep")


async def test_a_deep_spec_within_the_bounds_is_served_listed_and_called(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text(json.dumps({"name": "deep", "parameters": _nested_schema(60)}))
    (spec,) = load_tool_file(path)
    ts = ToolServer([BenchmarkMount(StaticCatalog("custom", {"t": [spec]}))])
    argument: Any = "x"
    for _ in range(60):
        argument = {"a": argument}
    async with serve_in_background(create_app(ts, json_response=True)) as url, Client(f"{url}/mcp/custom") as client:
        (tool,) = (await client.list_tools()).tools
        assert tool.name == "deep"
        result = await client.call_tool("deep", argument)
        assert not result.is_error
        bad = await client.call_tool("deep", {"a": 1})  # a wrong argument is a tool error, not a crash
        assert bad.is_error


@pytest.mark.parametrize("name", ["deep.yaml", "deep.jsonl"])
def test_a_deep_task_file_is_refused_with_its_line(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    deep = "[" * 1000 + "]" * 1000
    if name.endswith(".yaml"):
        path.write_text(f"- id: a\n  query: q\n  answer: x\n  metadata: {{x: {deep}}}\n")
        where = f"{path}:4:"
    else:
        path.write_text('{"id": "a", "query": "q", "answer": "x"}\n' + f'{{"id": "b", "metadata": {{"x": {deep}}}}}\n')
        where = f"{path}:2:"
    refused(run_tasks(path, tmp_path), where, "nested more than")


def test_a_deep_recording_line_is_one_error_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    path.write_text('{"kind": "tools", "source": "s", "tools": []}\n' + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(McpSourceError, match=rf"^{path}:2: not a recording line \(nested more than {MAX_FILE_DEPTH} levels deep"):
        read_recording(path)


# ---- item 16: NaN and Infinity tolerances -----------------------------------------------------------
@pytest.mark.parametrize(("name", "text", "line", "what"), [
    ("nan.yaml", "- id: a\n  query: q\n  answer:\n    type: number\n    value: 3\n    tolerance: .nan\n", 6,
     "tolerance must be a finite number"),
    ("inf.yaml", "- id: a\n  query: q\n  answer: {type: number, value: 3,\n    tolerance: .inf}\n", 4,
     "tolerance must be a finite number"),
    ("nan.jsonl", '{"id": "a", "query": "q", "answer": "x"}\n'
                  '{"id": "b", "query": "q", "answer": {"type": "number", "value": 3, "tolerance": NaN}}\n', 2,
     "NaN is not a JSON number"),
    ("inf.jsonl", '{"id": "b", "query": "q", "answer": {"type": "number", "value": 3, "tolerance": Infinity}}\n', 1,
     "Infinity is not a JSON number"),
])
def test_a_non_finite_tolerance_is_refused(tmp_path: Path, name: str, text: str, line: int, what: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    refused(run_tasks(path, tmp_path), f"{path}:{line}:", what)


# ---- item 4: a regex answer that backtracks for hours -----------------------------------------------
def test_a_catastrophic_regex_answer_is_scored_as_not_matched_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "tasks.yaml"
    path.write_text("- id: slow\n  query: q\n  answer: {type: regex, pattern: '^(a|aa)+$', example: aaa}\n"
                    "- id: fine\n  query: q\n  answer: {type: regex, pattern: '^a+b$', example: ab}\n")
    with FakeProviderServer() as fake:
        fake.openai.respond_with(lambda body: openai_chat("a" * 60 + "b"))  # 10**12 ways to split the a's
        proc = evals("run", "taskfile", "--tasks", str(path), "--model", "openai:m", "--base-url", fake.openai_base_url,
                     "--run-dir", str(tmp_path / "run"), "--no-progress", "--concurrency", "1", "--json", cwd=tmp_path)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["metrics"]["answer_accuracy"] == 50.0, summary
    assert any("regex_timeouts" in w for w in summary["warnings"]), summary["warnings"]
    assert "task slow (line 1 of the task file)" in proc.stderr
    scores = {s["task_id"]: s for s in map(json.loads, (tmp_path / "run" / "scores.jsonl").read_text().splitlines())}
    assert "^(a|aa)+$" in scores["slow"]["score"]["details"]["regex_timeouts"][0]
    assert "regex_timeouts" not in scores["fine"]["score"]["details"]


@pytest.mark.parametrize(("pattern", "what"), [
    ("(" * 3000 + ")" * 3000, "nested too deeply"),  # re's parser ran out of stack: a traceback
    ("a{1000000000}", "multiply out to 1000000000 items"),  # the regex package would unroll it: gigabytes
])
@pytest.mark.parametrize("where", ["answer", "reference"])
def test_a_pattern_too_deep_or_too_large_is_refused_at_its_line(tmp_path: Path, pattern: str, what: str,
                                                              where: str) -> None:
    path = tmp_path / "tasks.yaml"
    quoted = json.dumps(pattern)
    if where == "answer":
        path.write_text(f"- id: a\n  query: q\n  answer:\n    type: regex\n    pattern: {quoted}\n    example: a\n")
    else:
        path.write_text("- id: a\n  query: q\n  calls:\n    - {id: one, name: f, arguments: {}}\n    - name: g\n"
                        f"      arguments:\n        x: {{$from: one, pattern: {quoted}}}\n")
    with pytest.raises(TaskFileError) as err:
        load_task_file(path)
    (problem,) = err.value.problems
    assert problem.startswith(f"{path}:{5 if where == 'answer' else 7}: ") and what in problem, problem


# ---- item 4: a regex in a tool's schema, matched against what a model sends -----------------------------
SPEC_SERVER = """
import asyncio, sys
from pathlib import Path
from server import BenchmarkMount, ToolServer, create_app, serve_in_background
from tool_specs import StaticCatalog, load_tool_file
async def main():
    specs = load_tool_file(Path({spec!r}))
    async with serve_in_background(create_app(ToolServer([BenchmarkMount(StaticCatalog("custom", {{"t": specs}}))]),
                                              json_response=True)) as url:
        print(url, flush=True)
        await asyncio.Event().wait()
asyncio.run(main())
"""


async def test_a_backtracking_pattern_in_a_tool_schema_is_an_error_result_not_a_hung_server(tmp_path: Path) -> None:
    """A spec file's ``pattern`` / ``patternProperties`` (``^(a|aa)+$``) against sixty ``a`` and a ``b``:
    under jsonschema's own keywords (Python's ``re``) the server's event loop was held for hours. Now
    the search gives up after its time limit: an ``isError`` result naming the pattern, and the server
    answers the next call. The server runs in a child process so that a hang fails the test's wait."""
    import asyncio

    spec = tmp_path / "tools.json"
    spec.write_text(json.dumps([
        {"name": "echo", "input_schema": {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a|aa)+$"}}}},
        {"name": "keys", "input_schema": {"type": "object", "patternProperties": {"^(a|aa)+$": {"type": "integer"}},
                                          "additionalProperties": False}},
    ]))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", SPEC_SERVER.format(spec=str(spec))], stdout=subprocess.PIPE, text=True,
                            env=env, cwd=REPO)
    try:
        line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), WAIT)  # type: ignore[union-attr]
        assert line.startswith("http://"), line
        async with Client(line.strip() + "/mcp/custom") as client:
            evil = "a" * 60 + "b"
            slow = await asyncio.wait_for(client.call_tool("echo", {"s": evil}), WAIT)
            assert slow.is_error and "time limit" in slow.content[0].text, slow.content  # type: ignore[union-attr]
            keyed = await asyncio.wait_for(client.call_tool("keys", {evil: 1}), WAIT)
            assert keyed.is_error and "time limit" in keyed.content[0].text, keyed.content  # type: ignore[union-attr]
            fine = await asyncio.wait_for(client.call_tool("echo", {"s": "aaaa"}), WAIT)  # the server goes on
            assert not fine.is_error
            plain = await asyncio.wait_for(client.call_tool("echo", {"s": "b"}), WAIT)  # an ordinary mismatch
            assert plain.is_error and "time limit" not in plain.content[0].text  # type: ignore[union-attr]
            assert not (await asyncio.wait_for(client.call_tool("keys", {"aaa": 2}), WAIT)).is_error
    finally:
        proc.kill()
        proc.wait(WAIT)
