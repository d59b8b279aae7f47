"""What ``evals score PATH --format bfcl-official`` does besides scoring (bench/bench_bfcl_score.py measures its
speed): it imports no MCP code (the SDK's models alone cost about half a second), and the multi-turn entries'
replays it starts in the holders while the files are read (:func:`.multi_turn_checker.prefetch`) give the
verdicts a scoring gets when it replays them itself."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from evals.benchmarks.bfcl import multi_turn_checker
from evals.benchmarks.bfcl.data import load_entries
from evals.benchmarks.bfcl.multi_turn import gold_steps, read_multi_turn
from evals.benchmarks.bfcl.results import read_results
from evals.benchmarks.bfcl.single_turn import gold_calls

ROOT = Path(__file__).resolve().parents[4]
MCP_MODULES = ("mcp", "mcp_types", "server")


def _folder(root: Path) -> Path:
    """A model folder: a few simple_python lines and multi_turn_base lines of several outcomes."""
    folder = root / "result" / "gpt-4o-2024-11-20-FC"
    lines = []
    for n, entry in enumerate(list(load_entries(("simple_python",)))[:6]):
        calls = [{c["name"]: json.dumps(c["arguments"])} for c in gold_calls(entry) or []]
        lines.append({"id": entry.id, "result": calls if n % 2 else "I cannot help with that."})
    (folder / "non_live").mkdir(parents=True)
    (folder / "non_live" / "BFCL_v4_simple_python_result.json").write_text("".join(json.dumps(x) + "\n" for x in lines))
    lines = []
    for n, entry in enumerate(read_multi_turn("multi_turn_base")[:8]):
        turns: list[Any] = [[[{c["name"]: json.dumps(c["arguments"])} for c in step]] for step in gold_steps(entry)]
        if n % 4 == 1:
            turns = turns[:-1]  # force-terminated: no replay
        elif n % 4 == 2:
            turns[-1] = [[{"ls": "{}"}]]  # a wrong last turn: replayed, fails
        lines.append({"id": entry.id, "result": turns})
    (folder / "multi_turn").mkdir()
    (folder / "multi_turn" / "BFCL_v4_multi_turn_base_result.json").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return folder


def _imported_by_score(folder: Path, out: Path, which: str) -> list[str]:
    """The modules of ``sys.modules`` that ``which`` (an expression over ``m``, a module's name) keeps, once
    ``evals score FOLDER --format bfcl-official`` has run in a fresh interpreter (it must exit 0)."""
    code = ("import json, sys\nfrom evals.cli import main\n"
            f"rc = main(['score', {str(folder)!r}, '--format', 'bfcl-official', '--benchmark', 'bfcl', '--out', "
            f"{str(out)!r}])\n"
            f"print(json.dumps([rc, sorted({{m for m in sys.modules if {which}}})]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    rc, imported = json.loads(done.stdout.strip().splitlines()[-1])
    assert rc == 0, done.stderr[-2000:]
    return [str(m) for m in imported]


def test_scoring_a_result_folder_imports_no_mcp_code(bfcl_data, tmp_path):
    folder = _folder(tmp_path)
    imported = _imported_by_score(folder, tmp_path / "run", f"m.split('.')[0] in {MCP_MODULES!r}")
    assert imported == []  # the scoring path imports the SDK nowhere (it would cost ~0.5 s of a ~1 s command)
    scores = [json.loads(line) for line in (tmp_path / "run" / "scores.jsonl").read_text().splitlines()]
    verdicts = {s["task_id"]: s["score"]["details"]["verdict"]["error_type"] for s in scores}
    assert verdicts["multi_turn_base_0"] == "" and verdicts["multi_turn_base_4"] == ""  # replayed, right
    assert verdicts["multi_turn_base_1"] == "multi_turn:force_terminated"
    assert verdicts["multi_turn_base_2"].startswith("multi_turn:")  # replayed, wrong


EPISODE_MODULES = ("client.agent", "evals.benchmarks.bfcl.memory_run", "evals.benchmarks.bfcl.multi_turn_episode")


def test_scoring_a_single_turn_folder_imports_no_episode_code(bfcl_data, tmp_path):
    folder = _folder(tmp_path)
    shutil.rmtree(folder / "multi_turn")
    assert _imported_by_score(folder, tmp_path / "run", f"m in {EPISODE_MODULES!r}") == []  # the agent loop and the multi-turn and memory kinds: imported where episodes run (~30 ms)


def test_prefetched_replays_give_the_verdicts_of_replays_done_at_scoring(bfcl_data, tmp_path):
    multi_turn_checker.cancel_prefetch()  # what other tests of this process left
    multi_turn_checker._verdicts.clear()
    got = read_results(_folder(tmp_path))
    multi = {e.id: e for e in read_multi_turn("multi_turn_base")}
    turns = {i: t["outcome"]["turns"] for i, t in got.traces.items()
             if i in multi and t["status"] == "completed" and t["outcome"]["turns"] is not None}
    started = dict(multi_turn_checker._prefetched)
    assert len(started) == sum(len(t) == len(multi[i].ground_truth) for i, t in turns.items()) == 6  # the replays
    prefetched = {i: multi_turn_checker.check_multi_turn(multi[i], t) for i, t in turns.items()}
    assert not multi_turn_checker._prefetched  # each taken once
    multi_turn_checker._verdicts.clear()
    replayed = {i: multi_turn_checker.check_multi_turn(multi[i], t) for i, t in turns.items()}
    assert prefetched == replayed
    assert sum(v.valid for v in replayed.values()) == 4  # entries 0, 3, 4, 7 right; 2 and 6 fail a turn


def test_the_zygote_is_asked_for_before_the_plugin_loads_when_a_multi_turn_file_is_there(bfcl_data, tmp_path):
    """``evals score PATH --format bfcl-official`` calls BFCL's ``score_start`` first (the core's hook,
    :class:`~evals.core.plugin.BenchmarkInfo`): the holders' zygote is started before anything heavy is imported,
    when PATH holds a multi-turn result file, and not for a folder or file without one (nor another format)."""
    folder = _folder(tmp_path)
    single = folder / "non_live" / "BFCL_v4_simple_python_result.json"
    code = ("import json, sys\nfrom evals.benchmarks.bfcl import backend_host\nasked = []\n"
            "backend_host.prestart = lambda memory=False: asked.append(sorted(m for m in sys.modules "
            "if m.startswith('evals.benchmarks.bfcl.')))\n"
            "from evals.cli import main\n"
            "for path, fmt in json.loads(sys.argv[1]):\n"
            "    n = len(asked)\n"
            "    main(['score', path, '--format', fmt, '--benchmark', 'bfcl', '--out', sys.argv[2] + str(n)])\n"
            "    print('asked:', json.dumps(asked[n] if len(asked) > n else None))\n")
    cases = [(str(folder), "bfcl-official"), (str(single), "bfcl-official"), (str(folder), "no-such-format")]
    done = subprocess.run([sys.executable, "-c", code, json.dumps(cases), str(tmp_path / "run")], capture_output=True,
                          text=True, timeout=300, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    first, single_file, other_format = (json.loads(line.removeprefix("asked:")) for line in done.stdout.splitlines()
                                        if line.startswith("asked:"))
    assert first is not None and "evals.benchmarks.bfcl.plugin" not in first  # asked for first: nothing heavy yet
    assert "evals.benchmarks.bfcl.results" not in first
    assert single_file is None and other_format is None
    assert (tmp_path / "run0" / "scores.jsonl").is_file()  # and the folder is scored all the same (read_results asks too)
