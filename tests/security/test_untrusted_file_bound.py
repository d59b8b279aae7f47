"""The files a user hands the project (task files, spec files and a sandbox tool's code, ``--mcp-config``,
a recording, a ``--config`` file, ``--task-ids @FILE``, ``$EVALS_PRICES``, a run's ``config.json``, a
local vLLM model folder) are read under one bound, ``tool_specs.bounded_read.MAX_LINE_BYTES``: a line
past it (a file read as one document: the file past it) is one ``FILE:LINE`` error, ``LineTooLong``'s
wording, never read whole (a model folder's files, only looked into, are passed over). Each reader
kind is fed a sparse file (a line of 256 MiB that costs no disk) with the bound set to 64 KiB, and may
hold only a few times the bound meanwhile; ``evals`` itself, with the real bound, exits 2 with one
line and no traceback."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from client._runs.config import read_config
from client.adapters.pricing import load_price_overrides
from evals.benchmarks.usertasks.taskfile import load_task_file
from evals.core.options import load_config_file
from evals.core.selection import parse_task_ids
from evals.view.index import RunIndex
from kg_store import KGParseError, parse_triple_file, read_triple_file, triples
from server.mcp_sources import load_mcp_config
from server.recording import read_recording
from tool_specs import SpecLoadError, bounded_read, load_spec_file, load_tool_file
from tool_specs.spec_checks import sandbox_code_problems

REPO = Path(__file__).resolve().parents[2]
BOUND = 1 << 16
HUGE = 256 << 20


def _sparse(path: Path, head: bytes, size: int, tail: bytes = b"\n") -> Path:
    """``head``, then ``size`` NUL bytes not written (a hole: no disk, no memory), then ``tail``."""
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(len(head) + size)
        f.seek(len(head) + size)
        f.write(tail)
    return path


def _refused_within_the_bound(read: Callable[[], Any], where: str, error: type[Exception] = ValueError,
                              bound: str = "tool_specs.bounded_read.MAX_LINE_BYTES") -> str:
    """``read()`` raises ``error`` naming ``where`` (FILE:LINE) in LineTooLong's words, allocating a few bounds at most."""
    tracemalloc.start()
    try:
        with pytest.raises(error) as caught:
            read()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(caught.value)
    assert where in message and f"longer than {BOUND} bytes ({bound})" in message, message
    assert peak < 8 * BOUND, peak
    return message


@pytest.fixture
def small_bound(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The bound set to 64 KiB; every reader run once first on a small file (its imports are not counted)."""
    monkeypatch.setattr(bounded_read, "MAX_LINE_BYTES", BOUND)
    warm = tmp_path / "warm"
    warm.mkdir()
    (warm / "t.jsonl").write_text('{"id": "a", "query": "q", "answer": "x"}\n')
    (warm / "t.yaml").write_text("- id: a\n  query: q\n  answer: x\n")
    (warm / "s.yaml").write_text("name: t\ndescription: d\n")
    (warm / "s.json").write_text('[{"type": "function", "function": {"name": "t", "description": "d", "parameters": {}}}]')
    for call in (lambda: load_task_file(warm / "t.jsonl"), lambda: load_task_file(warm / "t.yaml"),
                 lambda: load_spec_file(warm / "s.yaml"), lambda: load_tool_file(warm / "s.json")):
        call()
    return tmp_path


def test_a_task_file_line_past_the_bound_is_refused_unread(small_bound: Path) -> None:
    jsonl = _sparse(small_bound / "tasks.jsonl", b'{"id": "a", "query": "q", "answer": "x"}\n', HUGE)
    message = _refused_within_the_bound(lambda: load_task_file(jsonl), f"{jsonl}:2: a line longer than")
    assert message.count("\n") == 1  # the task file's head line, then the one problem
    yaml_file = _sparse(small_bound / "tasks.yaml", b"- id: a\n  query: q\n  answer: x\n", HUGE)
    _refused_within_the_bound(lambda: load_task_file(yaml_file), f"{yaml_file}:4: a whole file longer than")


def test_the_triple_files_bound_is_every_other_files_bound() -> None:
    assert triples.MAX_LINE_BYTES == bounded_read.MAX_LINE_BYTES


def test_a_triple_file_line_past_the_bound_is_refused_unread(small_bound: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--kg``: kg_store is below tool_specs, so it keeps the same bound under its own name (kept equal)."""
    monkeypatch.setattr(triples, "MAX_LINE_BYTES", BOUND)
    kg = _sparse(small_bound / "kg.txt", b"['Bob', 'mother', 'Alice']\n", HUGE)
    for read in (read_triple_file, parse_triple_file):
        message = _refused_within_the_bound(functools.partial(read, kg), f"{kg}:2: a line longer than", KGParseError,
                                            "kg_store.triples.MAX_LINE_BYTES")
        assert "\n" not in message
    head = b"['Bob', 'mother', 'Alice']\n"
    line = b"['Bob', 'father', '" + b"x" * (BOUND - 22) + b"']\n"  # exactly the bound, its line feed included
    assert len(line) == BOUND
    at_bound = small_bound / "at_bound.txt"
    at_bound.write_bytes(head * 3 + line + head)
    assert [t.relation for t in parse_triple_file(at_bound)] == ["mother"] * 3 + ["father", "mother"]
    over = small_bound / "over.txt"
    over.write_bytes(head * 3 + line[:-3] + b"x" + line[-3:] + head)
    _refused_within_the_bound(lambda: read_triple_file(over), f"{over}:4: a line longer than", KGParseError,
                              "kg_store.triples.MAX_LINE_BYTES")


def test_a_spec_file_past_the_bound_is_refused_unread(small_bound: Path) -> None:
    yaml_file = _sparse(small_bound / "tool.yaml", b"name: t\ndescription: d\n", HUGE)
    _refused_within_the_bound(lambda: load_spec_file(yaml_file), f"{yaml_file}:3: a whole file longer than",
                              SpecLoadError)
    bfcl = _sparse(small_bound / "tools.jsonl", b'{"name": "t", "description": "d", "parameters": {}}\n', HUGE)
    _refused_within_the_bound(lambda: load_tool_file(bfcl), f"{bfcl}:2: a whole file longer than", SpecLoadError)
    code = _sparse(small_bound / "tool.py", b"def f():\n    return 1\n", HUGE)
    tracemalloc.start()
    try:
        ((line, problem),) = sandbox_code_problems({"kind": "sandbox", "file": "tool.py"}, small_bound)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert line is None and f"{code}:3: a whole file longer than {BOUND} bytes" in problem and peak < 8 * BOUND


def test_server_sources_past_the_bound_are_refused_unread(small_bound: Path) -> None:
    mcp = _sparse(small_bound / "servers.json", b'{"mcpServers": {"a": {"command": "x"}}}\n', HUGE)
    _refused_within_the_bound(lambda: load_mcp_config(mcp), f"{mcp}:2: a whole file longer than")
    rec = _sparse(small_bound / "rec.jsonl", b'{"kind": "tools", "source": "s", "tools": []}\n', HUGE)
    _refused_within_the_bound(lambda: read_recording(rec), f"{rec}:2: a line longer than")


def test_run_settings_files_past_the_bound_are_refused_unread(small_bound: Path) -> None:
    config = _sparse(small_bound / "config.yaml", b"limit: 1\n", HUGE)
    _refused_within_the_bound(lambda: load_config_file(config), f"{config}:2: a whole file longer than")
    ids = _sparse(small_bound / "ids.txt", b"a\nb\n", HUGE)
    _refused_within_the_bound(lambda: parse_task_ids(f"@{ids}"), f"{ids}:3: a line longer than")
    prices = _sparse(small_bound / "prices.json", b"{}\n", HUGE)
    _refused_within_the_bound(lambda: load_price_overrides(prices), f"{prices}:2: a whole file longer than")
    run = small_bound / "run"
    run.mkdir()
    cfg = _sparse(run / "config.json", b'{"benchmark": "x"}\n', HUGE)
    _refused_within_the_bound(lambda: read_config(run), f"{cfg}:2: a whole file longer than")
    _refused_within_the_bound(lambda: RunIndex.open(run), f"{cfg}:2: a whole file longer than")


def test_a_local_model_folders_files_past_the_bound_are_not_read(small_bound: Path) -> None:
    """vLLM's local model folder: its chat template and config files are only looked into (what tool
    parser, which template), so one past the bound is passed over, as an unreadable one is."""
    from client.adapters._vllm_flags import _local_model_type, own_template_supports_tools

    model = small_bound / "model"
    model.mkdir()
    _sparse(model / "config.json", b'{"model_type": "llama"}', HUGE)
    _sparse(model / "chat_template.jinja", b"{{ tools }}", HUGE)
    (model / "tokenizer_config.json").write_text('{"chat_template": "{{ messages }}"}')
    tracemalloc.start()
    try:
        assert _local_model_type(str(model)) is None
        assert own_template_supports_tools(str(model)) is False  # the small file's template, not the huge one's
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * BOUND, peak


def _evals(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "evals.cli", *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd, env=env, stdin=subprocess.DEVNULL)


def test_evals_exits_2_with_one_line_on_a_file_past_the_real_bound(tmp_path: Path) -> None:
    real = bounded_read.MAX_LINE_BYTES
    tasks = _sparse(tmp_path / "tasks.jsonl", b'{"id": "a", "query": "q", "answer": "x"}\n', real + 1)
    tools = tmp_path / "tools"
    tools.mkdir()
    _sparse(tools / "tool.yaml", b"name: t\ndescription: d\n", real)
    servers = _sparse(tmp_path / "servers.json", b'{"mcpServers": {}}\n', real)
    config = _sparse(tmp_path / "config.yaml", b"limit: 1\n", real)
    rec = _sparse(tmp_path / "rec.jsonl", b'{"kind": "tools", "source": "s", "tools": []}\n', real + 1)
    kg = _sparse(tmp_path / "kg.txt", b"['Bob', 'mother', 'Alice']\n", real + 1)
    small = tmp_path / "small.jsonl"
    small.write_text('{"id": "a", "query": "q", "answer": "x"}\n')
    run = ["run", "taskfile", "--model", "oracle", "--run-dir", str(tmp_path / "run"), "--no-progress", "--tasks"]
    for args, where in (  # each refused before the run folder is made (but --kg: the KG is built once it is)
        ([*run, str(tasks)], f"{tasks}:2: a line longer than {real} bytes"),
        ([*run, str(small), "--mcp-config", str(servers)], f"{servers}:2: a whole file longer than {real} bytes"),
        ([*run, str(small), "--config", str(config)], f"{config}:2: a whole file longer than {real} bytes"),
        (["serve", "--tools-dir", str(tools), "--stdio"], f"{tools / 'tool.yaml'}:3: a whole file longer than {real} bytes"),
        ([*run, str(small), "--replay", str(rec)], f"{rec}:2: a line longer than {real} bytes"),
        (["serve", "--kg-file", str(kg), "--stdio"], f"{kg}:2: a line longer than {real} bytes"),
        ([*run, str(small), "--kg", str(kg)], f"{kg}:2: a line longer than {real} bytes"),  # last
    ):
        proc = _evals(*args, cwd=tmp_path)
        assert proc.returncode == 2, (args, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
        said = [line for line in proc.stderr.splitlines() if where in line]
        assert len(said) == 1, proc.stderr[-2000:]
        assert "--kg" in args or not (tmp_path / "run").exists(), (args, list((tmp_path / "run").rglob("*")))
