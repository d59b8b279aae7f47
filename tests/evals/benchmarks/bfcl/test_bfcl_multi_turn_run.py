"""BFCL's multi-turn categories through the real MCP server: the oracle scores 100 in each, a scripted
model with known mistakes gets the hand-computed verdicts (the viewer shows the failing turn's state
differences), and backend state never leaks between sessions of one ``evals serve``."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from client.agent import result_text
from evals.benchmarks.bfcl.files import MULTI_TURN
from evals.benchmarks.bfcl.multi_turn import gold_steps, read_multi_turn, step_limit
from evals.core.registry import load_benchmark
from evals.core.run import RunOptions, run_benchmark, score_run_dir

ROOT = Path(__file__).resolve().parents[4]


@pytest.mark.parametrize("category", MULTI_TURN)
async def test_the_oracle_scores_100_in_every_multi_turn_category(bfcl_code_data, category, tmp_path):
    opts = RunOptions(benchmark="bfcl", model="oracle", run_dir=tmp_path / "run", limit=4, transport="http",
                      concurrency=4, progress=False, benchmark_options={"category": [category]})
    _, summary = await run_benchmark(opts)
    assert summary["completed"] == 4 and summary["metrics"][category] == 100.0
    assert await score_run_dir(tmp_path / "run") == summary | {"run_dir": summary["run_dir"]}
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert '"bfcl_step_limit": 20' in json.dumps(config)  # BFCL's per-turn limit, recorded with the run


async def test_an_episode_lists_its_tools_once_and_shows_held_out_ones_at_their_turn(bfcl_code_data, tmp_path,
                                                                                    monkeypatch):
    """``run_agent`` lists the session's tools for each user turn; an entry's endpoint offers the same
    tools all along (the held-out ones too), so an episode asks the server once."""
    from server.core import ToolServer

    listed: list[Any] = []
    original = ToolServer._list_tools

    def counted(self: Any, ref: Any, params: Any) -> Any:
        listed.append(ref)
        return original(self, ref, params)

    monkeypatch.setattr(ToolServer, "_list_tools", counted)
    opts = RunOptions(benchmark="bfcl", model="oracle", run_dir=tmp_path / "run", limit=3, transport="memory",
                      concurrency=2, progress=False, benchmark_options={"category": ["multi_turn_miss_func"]})
    _, summary = await run_benchmark(opts)
    assert summary["completed"] == 3 and summary["metrics"]["multi_turn_miss_func"] == 100.0
    assert len(listed) == 3  # one listing per episode, of 2-6 user turns each


async def test_concurrent_scorings_replay_together_and_get_the_verdicts_of_one_at_a_time(bfcl_data, monkeypatch):
    """``evals score`` scores several entries at once: their replays go to the holder as one operation,
    with the verdicts each would get alone."""
    from evals.benchmarks.bfcl import multi_turn_checker as mc

    entries = read_multi_turn("multi_turn_base")[:6]
    turns = [[[s] if s else [] for s in gold_steps(e)] for e in entries]
    turns[1] = [turns[1][0], *([] for _ in turns[1][1:])]  # the later turns left empty
    turns[2] = [[], *turns[2][1:]]
    alone = [mc.check_multi_turn(e, t) for e, t in zip(entries, turns, strict=True)]
    assert [v.valid for v in alone] == [True, False, False, True, True, True]
    mc._verdicts.clear()
    batches: list[int] = []
    original = mc._replay_batch

    def counted(holder: Any, items: Any) -> Any:
        batches.append(len(items))
        return original(holder, items)

    monkeypatch.setattr(mc, "_replay_batch", counted)
    together = await asyncio.gather(*(mc.acheck_multi_turn(e, t) for e, t in zip(entries, turns, strict=True)))
    assert list(together) == alone and batches == [6]


def _conversation(entry_turns: list[list[dict[str, Any]]], texts: list[str], replies: list[list[list[dict]]]) -> dict:
    """A replay record: per user turn, the model's responses with calls, then a text reply."""
    messages: list[dict[str, Any]] = []
    for text, responses in zip(texts, replies, strict=True):
        messages.append({"role": "user", "content": text})
        messages += [{"role": "assistant", "function_call": r} for r in responses]
        messages.append({"role": "assistant", "content": "Done."})
    return {"messages": messages}


async def test_a_scripted_model_with_known_mistakes_gets_the_hand_computed_verdicts(bfcl_code_data, tmp_path):
    entries = {e.id: e for e in read_multi_turn("multi_turn_base")[:4]}
    gold = {k: gold_steps(e) for k, e in entries.items()}
    texts = {k: [str(t[0]["content"]) for t in e.turns] for k, e in entries.items()}
    replies = {
        "multi_turn_base_0": [[g] for g in gold["multi_turn_base_0"]],  # right
        "multi_turn_base_1": [[g] if i != 2 else [] for i, g in enumerate(gold["multi_turn_base_1"])],  # turn 2 empty
        "multi_turn_base_2": [[g] for g in gold["multi_turn_base_2"]],  # a wrong file name in turn 0: state differs
        # turn 0: one response with calls more than the step limit: force-terminated
        "multi_turn_base_3": [[[{"name": "pwd", "arguments": {}}]] * (step_limit() + 1), [gold["multi_turn_base_3"][1]]],
    }
    replies["multi_turn_base_2"][0][0] = [{"name": "cd", "arguments": {"folder": "documents"}},
                                          {"name": "touch", "arguments": {"file_name": "TeamNotes.md"}}]
    script = tmp_path / "script.jsonl"
    script.write_text("".join(json.dumps(_conversation([], texts[k], r)) + "\n" for k, r in replies.items()))
    opts = RunOptions(benchmark="bfcl", model=f"replay:{script}", run_dir=tmp_path / "run", transport="http",
                      task_ids=list(replies), concurrency=4, progress=False,
                      benchmark_options={"category": ["multi_turn_base"]})
    _, summary = await run_benchmark(opts)
    assert summary["completed"] == 4 and summary["metrics"]["failed_episodes"] == 0
    assert summary["metrics"]["multi_turn_base"] == 25.0
    scores = {json.loads(x)["task_id"]: json.loads(x) for x in (tmp_path / "run" / "scores.jsonl").read_text().splitlines()}
    verdicts = {k: s["score"]["details"]["verdict"] for k, s in scores.items()}
    assert verdicts["multi_turn_base_0"]["valid"] is True
    assert (verdicts["multi_turn_base_1"]["error_type"], verdicts["multi_turn_base_1"]["turn"]) == \
        ("multi_turn:empty_turn_model_response", 2)
    assert (verdicts["multi_turn_base_2"]["error_type"], verdicts["multi_turn_base_2"]["turn"]) == \
        ("multi_turn:instance_state_mismatch", 0)
    assert verdicts["multi_turn_base_3"]["error_type"] == "multi_turn:force_terminated"
    # the viewer's sections: the turns, and the state differences of the failing turn
    traces = {json.loads(x)["task_id"]: json.loads(x) for x in (tmp_path / "run" / "traces.jsonl").read_text().splitlines()}
    bench = load_benchmark("bfcl", {"category": ["multi_turn_base"]})
    sections = bench.episode_view("multi_turn_base_2", traces["multi_turn_base_2"], scores["multi_turn_base_2"])
    titles = [s["title"] for s in sections]
    assert titles[0].startswith("Turns") and len(sections[0]["rows"]) == len(entries["multi_turn_base_2"].turns) == 5
    assert "touch(file_name='TeamNotes.md')" in sections[0]["rows"][0][2]
    diff = next(s for s in sections if s["title"].startswith("State differences after turn 0"))
    # only the differing paths, not two whole file-system trees
    assert [(r[0], r[1] == "(absent)", r[2] == "(absent)") for r in diff["rows"]] == [
        ('root.contents.documents.contents["TeamNotes.txt"]', True, False),
        ('root.contents.documents.contents["TeamNotes.md"]', False, True)]
    assert json.loads(diff["rows"][1][1])["name"] == "TeamNotes.md"
    assert bench.episode_view("multi_turn_base_0", traces["multi_turn_base_0"], scores["multi_turn_base_0"])[1:] == []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _call(client: Client, name: str, arguments: dict[str, Any]) -> str:
    return result_text(await client.call_tool(name, arguments))


async def test_backend_state_never_leaks_between_sessions_of_one_evals_serve(bfcl_code_data, tmp_path):
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "evals.cli", "serve", "--benchmark", "bfcl", "--category",
                             "multi_turn_base", "--port", str(port)], env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/mcp/bfcl"
    try:
        async with httpx2.AsyncClient(timeout=30) as http:
            for _ in range(240):  # up to 60 s for the server to listen
                if proc.poll() is not None:
                    pytest.fail(f"evals serve exited: {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}")
                try:
                    await http.get(f"http://127.0.0.1:{port}/")
                    break
                except httpx2.TransportError:
                    await asyncio.sleep(0.25)
            # each client names its episode (?session=, as evals run does; unnamed requests share the endpoint's)
            async with Client(streamable_http_client(f"{url}/multi_turn_base_0?session=a", http_client=http)) as a, \
                    Client(streamable_http_client(f"{url}/multi_turn_base_0?session=b", http_client=http)) as b, \
                    Client(streamable_http_client(f"{url}/multi_turn_base_1?session=a", http_client=http)) as c, \
                    Client(streamable_http_client(f"{url}/multi_turn_base_0", http_client=http), mode="legacy") as d:
                # two sessions of one task, concurrently: each has its own file system
                made, seen = await asyncio.gather(
                    asyncio.wait_for(_call(a, "cd", {"folder": "document"}), 30),
                    asyncio.wait_for(_call(b, "cd", {"folder": "document"}), 30))
                assert made == seen
                assert "temp" not in await _call(b, "ls", {})
                await _call(a, "mkdir", {"dir_name": "temp"})
                assert "temp" in await _call(a, "ls", {})
                assert "temp" not in await _call(b, "ls", {})
                assert "temp" not in await _call(c, "ls", {"a": True})  # another task, another entry's state
                await _call(d, "cd", {"folder": "document"})  # a handshake-protocol session: its own state too
                assert "temp" not in await _call(d, "ls", {})
            async with Client(streamable_http_client(f"{url}/multi_turn_base_0?session=c", http_client=http)) as again:
                await _call(again, "cd", {"folder": "document"})
                assert "temp" not in await _call(again, "ls", {})  # a new session starts from the initial config
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)


def test_multi_turn_entries_and_the_step_limit_from_the_user_cache_are_the_wheels(bfcl_data, tmp_path, monkeypatch):
    from evals.benchmarks.bfcl import multi_turn
    from evals.benchmarks.bfcl.data import verified_wheel

    monkeypatch.setenv("EVALS_CACHE_DIR", str(tmp_path / "cache"))
    multi_turn._memo.cache_clear()  # the process's own memo, which an earlier test may have filled
    parsed = multi_turn._read_multi_turn("multi_turn_miss_func", verified_wheel())
    assert any(e.missed for e in parsed)  # the held-out functions (int-keyed) make the round trip too
    assert multi_turn.read_multi_turn("multi_turn_miss_func") == parsed
    multi_turn._memo.cache_clear()
    assert multi_turn.read_multi_turn("multi_turn_miss_func") == parsed  # from the cache
    multi_turn.step_limit.cache_clear()  # kept per process once read: read it here, through the user cache
    assert multi_turn.step_limit() == multi_turn.step_limit() == int(multi_turn._prompts().MAXIMUM_STEP_LIMIT)
    assert {p.name.split("-")[1] for p in (tmp_path / "cache" / "derived").glob("bfcl-*.marshal")} == {
        "multi_turn_miss_func", "step"}
