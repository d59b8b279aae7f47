"""Issue 46 items 1 and 2: a BFCL backend call can no longer freeze a server or a scoring.

``MathAPI.square_root(2, precision=3000000)`` held a server process 70-100 s (BFCL's backends ran
in its event loop). Numbers whose cost BFCL leaves unbounded are refused before its code sees them;
every call runs in the session's own holder process under a deadline, stopped past it with the
session's state as it was before the call; scoring re-executes recorded calls under the same rules.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

from evals.benchmarks.bfcl import backend_calls, backend_host
from evals.benchmarks.bfcl.multi_turn import gold_steps, read_multi_turn
from evals.benchmarks.bfcl.multi_turn_checker import check_multi_turn

ENTRY = "multi_turn_base_15"  # GorillaFileSystem and MathAPI
HUGE = {"number": 2, "precision": 3_000_000}  # 70-100 s of Decimal.sqrt, in C


def _entry() -> Any:
    return next(e for e in read_multi_turn("multi_turn_base") if e.id == ENTRY)


def _sessions() -> Any:
    from evals.benchmarks.bfcl.kinds import BfclCatalog
    from evals.benchmarks.bfcl.multi_turn_episode import MultiTurnKind
    from evals.core.transport import MemorySessions
    from server import BenchmarkMount, ToolServer

    catalog = BfclCatalog([MultiTurnKind(("multi_turn_base",))])
    return MemorySessions(ToolServer([BenchmarkMount(catalog=catalog)]))


def _text(result: Any) -> str:
    return str(result.content[0].text)


async def test_numbers_past_their_bound_are_refused_before_bfcls_code_runs(bfcl_data: Any) -> None:
    async with _sessions().session("bfcl", ENTRY) as s:
        for name, arguments, bound in [
            ("square_root", HUGE, "precision=3000000 is over the bound of 10000 digits"),
            ("logarithm", {"value": 2, "base": 3, "precision": 10**7}, "precision=10000000 is over the bound"),
            ("power", {"base": 10, "exponent": 10**9}, "bits, over the bound"),
            ("round_number", {"number": 5, "decimal_places": -10**9}, "decimal_places=-1000000000 is over the bound"),
        ]:
            got = await s.call_tool(name, arguments)
            assert got.is_error and bound in _text(got), _text(got)
        fine = await s.call_tool("square_root", {"number": 2, "precision": 10})
        assert not fine.is_error and "1.414213562" in _text(fine)


async def test_a_call_past_its_deadline_is_stopped_and_holds_no_other_session(bfcl_data: Any,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backend_calls, "MAX_PRECISION", 10**8)  # let the slow call through the bound: the deadline stops it
    monkeypatch.setattr(backend_host, "CALL_DEADLINE_S", 3.0)
    sessions = _sessions()
    async with sessions.session("bfcl", ENTRY) as a, sessions.session("bfcl", ENTRY) as b:
        assert not (await a.call_tool("mkdir", {"dir_name": "kept"})).is_error
        assert "kept" not in _text(await b.call_tool("ls", {}))  # each session its own instances (and process)
        stuck = asyncio.ensure_future(a.call_tool("square_root", HUGE))
        await asyncio.sleep(0)
        other = await b.call_tool("mkdir", {"dir_name": "other"})  # answered while a's call runs
        assert not other.is_error and not stuck.done()
        got = await stuck
        assert got.is_error and "stopped after 3 s" in _text(got) and "changed nothing" in _text(got)
        after = await a.call_tool("ls", {})  # the session's state is as it was before the stopped call
        assert not after.is_error and "kept" in _text(after) and "other" not in _text(after)


def test_scoring_runs_recorded_calls_under_the_same_bound_and_deadline(bfcl_data: Any,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    entry = _entry()
    gold = gold_steps(entry)
    hostile = {"name": "square_root", "arguments": HUGE}
    turns: list[Any] = [[[*gold[0], hostile]] if gold[0] else [[hostile]], *[[s] if s else [] for s in gold[1:]]]
    assert check_multi_turn(entry, turns).valid  # refused at its bound: an error call, the rest as recorded
    monkeypatch.setattr(backend_calls, "MAX_PRECISION", 10**8)
    monkeypatch.setattr(backend_host, "CALL_DEADLINE_S", 1.0)
    # past the deadline: stopped, an error call; the model's instances keep the state of the calls before it
    assert check_multi_turn(entry, turns).valid
    wrong = [[[hostile]], *[[s] if s else [] for s in gold[1:]]]
    verdict = check_multi_turn(entry, wrong)
    assert not verdict.valid and verdict.turn == 0


def test_a_replay_names_the_unit_past_its_deadline_and_runs_no_fixed_unit(bfcl_data: Any) -> None:
    """Scoring replays an entry in one operation; the holder marks each unit (a call, a comparison) as it
    starts, so a call past its deadline is stopped as a call of its own was, and named; sent again
    with that unit's result fixed, the replay runs in a fresh process without it."""
    from evals.benchmarks.bfcl.backends import call_text
    from evals.benchmarks.bfcl.multi_turn_replay import units

    entry = _entry()
    truth = [list(t) for t in entry.ground_truth]
    rest = [[[call_text(c["name"], c["arguments"]) for c in step]] if step else [] for step in gold_steps(entry)[1:]]
    decoded = [[[call_text("square_root", HUGE)]], *rest]  # past any deadline: no bound in the holder
    plan = units(decoded, truth)
    assert plan[1] == ("call", "square_root(number=2,precision=3000000)")
    one = {**entry.make_op(), "op": "replay", "turns": decoded, "truth": truth, "fixed": {}}
    op = {"op": "replay", "entries": [one]}
    holder = backend_host.Holder()
    try:
        with pytest.raises(backend_host.UnitStopped) as stopped:
            holder.request_units(op, [60.0] + [1.0] * (len(plan) - 1))
        assert stopped.value.unit == 1 and "stopped after 1 s" in str(stopped.value)
        one["fixed"] = {"1": "Error during execution: stopped"}
        # every unit now finishes: deadlines a loaded machine meets (the 1 s above only had to stop unit 1)
        verdict = holder.request_units(op, [60.0] * len(plan))["answers"][0]["verdict"]
        assert not verdict["valid"] and verdict["turn"] == 0  # turn 0's gold calls never made
    finally:
        holder.close()


async def test_clients_that_name_no_session_never_share_bfcl_state(bfcl_data: Any) -> None:
    """Issue 46 item 9: requests that name no session shared one BFCL state per endpoint between
    clients; each client connection now has its own."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from evals.benchmarks.bfcl.kinds import BfclCatalog
    from evals.benchmarks.bfcl.multi_turn_episode import MultiTurnKind
    from server import BenchmarkMount, ToolServer, create_app, serve_in_background

    server = ToolServer([BenchmarkMount(catalog=BfclCatalog([MultiTurnKind(("multi_turn_base",))]))])
    async with serve_in_background(create_app(server, json_response=True)) as url:
        endpoint = f"{url}/mcp/bfcl/{ENTRY}"
        async with httpx2.AsyncClient(timeout=60) as one, httpx2.AsyncClient(timeout=60) as two, \
                Client(streamable_http_client(endpoint, http_client=one)) as a, \
                Client(streamable_http_client(endpoint, http_client=two)) as b:
            assert not (await a.call_tool("mkdir", {"dir_name": "mine"})).is_error
            assert "mine" in _text(await a.call_tool("ls", {}))  # one client's requests keep their state
            assert "mine" not in _text(await b.call_tool("ls", {}))  # another client never sees it


async def test_evals_score_of_a_run_with_a_hostile_recorded_call_finishes(bfcl_data: Any, tmp_path: Any) -> None:
    """Item 2 through ``evals score``: a run directory whose trace records a call past a bound is
    scored (the call an error call) instead of stalling the command."""
    import json

    from evals.core.run import RunOptions, run_benchmark, score_run_dir

    run = tmp_path / "run"
    opts = RunOptions(benchmark="bfcl", model="oracle", run_dir=run, task_ids=[ENTRY], transport="memory",
                      progress=False, benchmark_options={"category": ["multi_turn_base"]})
    _, summary = await run_benchmark(opts)
    assert summary["metrics"]["multi_turn_base"] == 100.0
    traces = run / "traces.jsonl"
    trace = json.loads(traces.read_text().splitlines()[0])
    trace["outcome"]["turns"][0].insert(0, [{"name": "square_root", "arguments": HUGE}])  # a hostile step first
    traces.write_text(json.dumps(trace) + "\n")
    scored = await score_run_dir(run)
    assert scored["metrics"]["multi_turn_base"] == 100.0  # refused at its bound: an error call, the rest as recorded


def test_a_holder_whose_state_cannot_be_rebuilt_starts_empty_and_says_so(bfcl_data: Any) -> None:
    """A holder's process ended (past a deadline, or to make room) is rebuilt by replaying its log on
    next use; a replay that fails leaves a fresh, empty process and a note, never a broken holder."""
    holder = backend_host.Holder()
    assert holder.request(dict(_entry().make_op(), key="i"), log=True) == {}
    assert "text" in holder.request({"op": "call", "key": "i", "text": "mkdir(dir_name='x')"}, log=True)
    holder._drop()  # as past a deadline: the log is kept, the state comes back by replay
    assert "x" in holder.request({"op": "call", "key": "i", "text": "ls()"})["text"] and not holder.take_lost()
    holder.log.append(({"op": "call", "key": "gone", "text": "ls()"}, 10.0))  # a step that cannot be replayed
    holder._drop()
    assert holder.request({"op": "call", "key": "i", "text": "ls()"}) == {"error": "no instances named 'i'"}
    assert "could not be rebuilt" in holder.take_lost() and holder.log == []
    holder.close()


def _maps_numpy(pid: int) -> bool:
    """Whether the process has numpy's compiled core mapped (Linux ``/proc``)."""
    with open(f"/proc/{pid}/maps") as f:
        return "_multiarray_umath" in f.read()


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="reads /proc/<pid>/maps")
def test_the_zygote_imports_the_memory_backends_only_when_a_holder_needs_them(bfcl_data: Any,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 50 item 4: a run without memory entries forks its holders from a zygote without numpy
    (a smaller process, cheaper to fork per MCP session); a memory holder gets a zygote with them
    (asked for on the control socket), and a holder of the lean zygote runs a memory call all the same."""
    zygote = backend_host._Zygote()
    monkeypatch.setattr(backend_host, "_zygote", zygote)  # a zygote of this test's own, started lean
    op = {"op": "memory_call", "key": "m", "backend": "kv", "name": "core_memory_add",
          "arguments": {"key": "k", "value": "v"}}
    holders = [backend_host.Holder(), backend_host.Holder(), backend_host.Holder(memory=True)]

    def asked() -> bool:  # read again after each request
        return zygote.memory

    try:
        plain, lazy, memory = holders
        assert plain.request(dict(_entry().make_op(), key="i"), log=True) == {}
        assert zygote.proc is not None and not asked()
        assert not _maps_numpy(zygote.proc.pid) and not _maps_numpy(plain.pid)
        assert lazy.request(op) == memory.request(op) and "error" not in memory.request(op)  # imported in the child
        assert asked() and _maps_numpy(zygote.proc.pid) and _maps_numpy(memory.pid)
        assert "text" in plain.request({"op": "call", "key": "i", "text": "ls()"})
    finally:
        for holder in holders:
            holder.close()
        zygote._close()


def test_the_zygotes_warm_up_changes_no_state_of_bfcls_modules(bfcl_data: Any) -> None:
    """The zygote runs each holder's first steps once before forking (issue 50 item 4: 300 holders of
    make + 10 calls took 251k page faults without it, 204k with it); the holders inherit its memory,
    so it may fill caches but must leave BFCL's modules as they were: no method of BFCL's runs."""
    import decimal
    import pickle

    from evals.benchmarks.bfcl.wheel_code import import_module

    backend_calls.preload(memory=False)
    config = import_module("bfcl_eval.constants.executable_backend_config")
    modules = [import_module(m) for c, m in config.CLASS_FILE_PATH_MAPPING.items()
               if c not in backend_calls._UNSERVED and not c.startswith("MemoryAPI")]

    def state() -> list[bytes]:
        out = []
        for module in modules:
            for name, value in sorted(vars(module).items()):
                if isinstance(value, dict | list | set | str | int | float):
                    out.append(pickle.dumps((module.__name__, name, value)))
        return out

    mpmath = import_module("bfcl_eval.eval_checker.multi_turn_eval.func_source_code.math_api").mpmath
    before = (state(), decimal.getcontext().prec, mpmath.mp.dps)
    backend_calls.warm_up()
    assert (state(), decimal.getcontext().prec, mpmath.mp.dps) == before
    assert backend_calls._method_names  # the caches a holder fills first are filled


def test_a_kept_parse_gives_each_call_arguments_of_its_own_and_the_same_errors() -> None:
    """The parse of a call text is kept (the holders run the same texts over and over): a list, dict or
    set argument is still a new object at every call (a method may change it), and every text answers
    as it did when each call parsed its text anew (the long texts, not kept, are that path)."""
    seen: list[Any] = []

    def grow(items: list[int], more: dict[str, set[int]], label: str = "") -> str:
        items.append(len(items))
        more.setdefault("s", set()).add(len(items))
        seen.append((items, more, label))
        return f"{items} {sorted(more['s'])} {label}"

    table = {"grow": grow}
    text = "grow([0], {'s': {1}}, label='x')"
    assert [backend_calls.execute_text({}, text, table) for _ in range(2)] == ["[0, 1] [1, 2] x"] * 2
    assert seen[0][0] is not seen[1][0] and seen[0][1] is not seen[1][1]
    pad = " " * backend_calls._KEPT_SHAPE_CHARS  # the same call, past the length whose parse is kept
    for bad in ("grow(**{'items': [0]})", "grow([x])", "grow([0], {}, label=(1, [2]))", "grow(",
                "grow([0], {}, label=-1.5, **{})", "grow(b'\\x00', {'s': set()})"):
        kept = [_unplaced(backend_calls.execute_text({}, bad, table)) for _ in range(2)]
        anew = _unplaced(backend_calls.execute_text({}, bad + pad if bad.endswith(")") else bad, table))
        assert kept[0] == kept[1] == anew, bad
    assert backend_calls.execute_text({}, "grow([0], {}, label=(1, [2]))", table) == "[0, 1] [2] (1, [2])"
    assert [backend_calls.execute_text({}, "x.y()", table) for _ in range(2)] == [
        f"{backend_calls.ERROR_PREFIX}not a plain function call: x.y()"] * 2


def _unplaced(text: str) -> str:
    """An error text without the addresses of the objects it names (``<ast.Name object at 0x...>``)."""
    import re

    return re.sub(r" at 0x[0-9a-f]+", " at 0x", text)


def test_a_replay_that_finds_no_process_says_why(bfcl_data: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scoring said "its backends could not be loaded" of every failure of the holder; a backend
    process that does not start is now said as what it is (and its reason)."""
    from evals.benchmarks.bfcl.multi_turn_checker import _replay_batch, decode_steps

    entry = _entry()
    decoded = [decode_steps([s] if s else []) for s in gold_steps(entry)]
    monkeypatch.setattr(backend_host, "_zygote", backend_host._Zygote())  # one of this test's, started below
    monkeypatch.setenv("EVALS_DATA_DIR", str(tmp_path))  # no wheel there: the zygote cannot import BFCL's modules
    holder = backend_host.Holder()
    try:
        (got,) = _replay_batch(holder, [(entry, decoded)])
    finally:
        holder.close()
        backend_host._zygote._close()
    assert isinstance(got, RuntimeError)
    assert str(got).startswith(f"BFCL entry {entry.id}: it could not be replayed: BFCL's backend process did not start: ")
    assert "could not be loaded" not in str(got), got
