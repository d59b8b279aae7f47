"""The run directory against a full disk, a second writer and a huge tool response (issue 16, item 7).

The full disk is real: a 1 MiB tmpfs mounted in a private mount namespace (``unshare``), skipped where
that is not allowed. ``evals run`` goes through the real SDKs against the local provider stand-in.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
from fake_providers import FakeProviderServer, openai_chat

from client.agent import AgentConfig, run_agent
from client.mcp_session import connect
from client.messages import ModelResponse, ToolCall, Usage
from client.runner import run_episodes
from client.runs import RunDir, request_history
from server import BenchmarkMount, EndpointRef, ToolServer
from tool_specs import StaticCatalog, ToolSpec


def _evals_run(fake_url: str, run_dir: str, limit: int = 12) -> list[str]:
    return [sys.executable, "-m", "evals.cli", "run", "familytool-b", "--model", "openai:m", "--base-url", fake_url,
            "--strategy", "golden-kg", "--limit", str(limit), "--concurrency", "2", "--run-dir", run_dir,
            "--no-progress"]


def _answer(body: dict) -> dict:
    return openai_chat(text="an answer " + "padding " * 400, usage=(400, 20))  # ~3 KB per trace


def _can_mount_tmpfs(where) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size=64k tmpfs {where}"],
                           capture_output=True)
    return probe.returncode == 0


def test_a_full_disk_stops_the_run_with_a_message_leaves_nothing_behind_and_the_run_resumes(data_dir, tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    if not _can_mount_tmpfs(disk):
        pytest.skip("cannot mount a tmpfs in a private mount namespace here (unshare -rm)")
    out = tmp_path / "out"
    out.mkdir()
    with FakeProviderServer() as fake:
        fake.openai.respond_with(_answer)
        run = disk / "run"
        cmd = " ".join(map(repr, _evals_run(fake.openai_base_url, str(run))))
        script = textwrap.dedent(f"""\
            set -u
            mount -t tmpfs -o size=1m tmpfs {disk}
            # 1. the disk is full before the run starts: config.json cannot be written
            head -c 1048576 /dev/zero > {disk}/filler 2>/dev/null
            {cmd} > {out}/1.out 2> {out}/1.err; echo $? > {out}/1.rc
            ls -A {disk} {run} > {out}/1.ls 2>&1
            # 2. room for the config and a few traces, then full
            rm {disk}/filler; rm -rf {run}
            head -c $((1048576 - 163840)) /dev/zero > {disk}/filler
            {cmd} > {out}/2.out 2> {out}/2.err; echo $? > {out}/2.rc
            ls -A {run} > {out}/2.ls
            cp {run}/traces.jsonl {out}/2.traces
            # 3. space again: the same command resumes the run
            rm {disk}/filler
            {cmd} > {out}/3.out 2> {out}/3.err; echo $? > {out}/3.rc
            cp {run}/traces.jsonl {out}/3.traces
            ls -A {run} > {out}/3.ls
            """)
        subprocess.run(["unshare", "-rm", "sh", "-c", script], timeout=600, check=True)

    def read(name: str) -> str:
        return (out / name).read_text()

    for step in ("1", "2"):
        err = " ".join(read(f"{step}.err").split())  # unwrapped
        assert read(f"{step}.rc").strip() == "1", err[-3000:]
        assert "Traceback" not in err, err[-3000:]
        assert "no space left on the device" in err and "run the same command again to resume" in err, err[-2000:]
        assert ".tmp" not in read(f"{step}.ls"), read(f"{step}.ls")
    # nothing half-written: every line of the traces is a whole record
    lines = read("2.traces").splitlines(keepends=True)
    assert all(line.endswith("\n") and json.loads(line)["status"] == "completed" for line in lines)
    assert 0 < len(lines) < 12
    # resumed: the finished episodes are kept, the others run now; nothing is lost or run twice
    assert read("3.rc").strip() == "0", read("3.err")[-3000:]
    final = [json.loads(line) for line in read("3.traces").splitlines()]
    assert final[: len(lines)] == [json.loads(line) for line in lines]
    assert len(final) == 12 and len({r["task_id"] for r in final}) == 12
    assert "traces.torn.jsonl" not in read("3.ls")


def test_a_locked_run_directory_names_the_process_that_holds_it(data_dir, tmp_path):
    run = tmp_path / "run"
    with FakeProviderServer() as fake:
        fake.openai.respond_with(_answer)
        holder = RunDir(run)
        holder.open_for_writing()
        try:
            proc = subprocess.run(_evals_run(fake.openai_base_url, str(run), limit=2), capture_output=True,
                                  text=True, timeout=300)
        finally:
            holder.close()
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    message = " ".join(proc.stderr.split())
    assert f"being written by another process (pid {os.getpid()} since " in message
    assert "pytest" in message or "python" in message  # the holder's command line


# ---- a 10 MB tool response ------------------------------------------------------------------------
BIG = "TOOL-OUTPUT-START " + "x" * 10_000_000


class TwoTurns:
    """Calls ``dump`` once, then answers."""

    name, provider, model = "scripted:two-turns", "scripted", "two-turns"

    async def complete(self, messages, tools, tool_choice="auto", params=None):
        if messages[-1].role == "tool":
            return ModelResponse("done", [], None, Usage(10, 1), "end_turn", 0.0, self.model, {})
        call = ToolCall(id="c1", name="dump", arguments={}, raw_arguments="{}")
        return ModelResponse(None, [call], None, Usage(10, 1), "tool_calls", 0.0, self.model, {})

    async def aclose(self) -> None:
        return None


async def test_a_huge_tool_response_is_stored_once(tmp_path):
    dump = ToolSpec(name="dump", description="Dump everything.", input_schema={"type": "object"},
                    executor={"kind": "replay", "calls": [{"arguments": {}, "response": BIG}]})
    ts = ToolServer([BenchmarkMount(StaticCatalog("big", {"t1": [dump]}))])
    run_dir = RunDir(tmp_path / "run", {"benchmark": "big"})

    async def episode(task_id, recorder):
        async with connect(ts.mcp_server(EndpointRef("big", task_id))) as session:
            return await run_agent(TwoTurns(), session, "dump it", recorder, AgentConfig(max_turns=3))

    result = await run_episodes(run_dir, ["t1"], episode, progress=False)
    assert result.completed == 1
    stored = sum((tmp_path / "run" / name).read_bytes().count(b"TOOL-OUTPUT-START")
                 for name in ("traces.jsonl", "events.jsonl"))
    assert stored == 1
    size = sum(f.stat().st_size for f in (tmp_path / "run").iterdir())
    assert size < 1.2 * len(BIG)
    # the trace still says everything: the second request, rebuilt, carries the tool's answer
    trace = run_dir.latest_traces()["t1"]
    requests = request_history(trace)
    assert requests[1]["messages"][-1]["content"] == BIG
    call = next(e for e in trace["events"] if e["kind"] == "tool_call")
    assert call["result_text"] == BIG
