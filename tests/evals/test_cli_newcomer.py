"""A newcomer's first commands: ``--version``, ``evals list``, help that explains every flag, typo
suggestions, task selection, the data directory rule, ``serve --tools-dir`` alone, and summaries
whose numbers never mislead (subset, partial, nothing completed, the papers' strategy)."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2 as httpx
import pytest

from evals.cli import build_parser, main, sub_parser
from evals.cli_parts.parser import build_all, suggest
from evals.cli_parts.summary import paper_hint, summary_notes
from evals.core.selection import parse_task_ids, select_tasks

ROOT = Path(__file__).resolve().parents[2]


def _evals(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 600):
    return subprocess.run([sys.executable, "-m", "evals.cli", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "COLUMNS": "200", **(env or {})}, cwd=cwd)


def _last_json(proc: subprocess.CompletedProcess) -> object:
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---- help, version, suggestions -------------------------------------------------------------------
def test_version_names_the_installed_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert re.match(r"evals \d+\.\d+\.\d+ \(Python 3\.\d+", capsys.readouterr().out)


def test_only_version_reads_the_distributions_metadata():
    """Building the parser (every command does) reads no package metadata: ``--version`` reads it
    when asked (importlib.metadata costs tens of milliseconds of every start-up)."""
    code = ("import sys; from evals.cli import build_parser; p = build_parser(); "
            "print('importlib.metadata' in sys.modules); p.parse_args(['--version'])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()
    assert first == "False"
    assert re.match(r"evals \d+\.\d+\.\d+ \(Python 3\.\d+", second)


def _flags(parser: argparse.ArgumentParser, path: str = "evals"):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _flags(child, f"{path} {name}")
        elif action.option_strings and action.help != argparse.SUPPRESS:
            yield path, parser, action


def test_every_flag_has_help_and_shows_its_default():
    parser = build_parser()
    build_all(parser)  # every sub-command's flags, every benchmark's options
    flags = list(_flags(parser))
    assert len(flags) > 200
    for path, sub, action in flags:
        assert action.help, f"{path} {action.option_strings[0]} has no help text"
        takes_value = action.nargs != 0
        if takes_value and action.default not in (None, argparse.SUPPRESS, [], ""):
            shown = sub._get_formatter()._get_help_string(action) or ""
            assert "default" in shown.lower(), f"{path} {action.option_strings[0]}: {shown!r} hides its default"
    run_help = sub_parser(build_parser(), "run", "toolhop").format_help().split("\noptions:\n", 1)[1]
    for flag, default in (("--concurrency", "4"), ("--max-turns", "10"), ("--max-tokens", "1024"), ("--temperature", "0.0")):
        text = " ".join(run_help.split(flag, 1)[1].split("\n  --", 1)[0].split())
        assert f"(default: {default})" in text, (flag, text)
    serve_help = " ".join(sub_parser(build_parser(), "serve").format_help().split())
    assert "port to listen on (default: 8765)" in serve_help


def test_serve_help_groups_each_benchmarks_options_under_its_name():
    text = sub_parser(build_parser(), "serve").format_help()
    groups = re.findall(r"^(\S[^\n]*) options:$", text, flags=re.M)
    assert {"toolhop", "nestools", "familytool-b, familytool-e"} <= set(groups), groups
    nestools = text.split("\nnestools options:", 1)[1].split("\n\n", 1)[0]
    assert "--seed" in nestools and "--kg-search" not in nestools


def test_a_misspelled_flag_or_choice_gets_the_closest_one():
    assert suggest("--concurency", ["--concurrency", "--config", "--cache"]) == "--concurrency"
    assert suggest("--zzz", ["--concurrency"]) is None
    proc = _evals("run", "toolhop", "--model", "oracle", "--concurency", "8")
    assert proc.returncode == 2 and "--concurency -> --concurrency" in proc.stderr
    proc = _evals("run", "toolhpo", "--model", "oracle")
    assert proc.returncode == 2 and "did you mean 'toolhop'?" in proc.stderr
    proc = _evals("serve", "--tool-dir", "x")
    assert proc.returncode == 2 and "--tools-dir" in proc.stderr


def test_help_imports_no_sub_commands_code():
    """`evals --help` and `evals run NAME --help` load neither the MCP SDK nor the server (start-up time:
    bench/bench_cli_startup.py measures it)."""
    code = ("import sys\nfrom evals.cli import main\nfor argv in (['--help'], ['run', 'toolhop', '--help']):\n"
            "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
            "print(sorted(m for m in ('mcp', 'server', 'openai', 'anthropic', 'httpx2', 'numpy') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


# ---- evals list, data stats / fetch all ----------------------------------------------------------------
def test_list_shows_every_benchmark_with_its_size_data_and_strategies(data_dir):
    rows = _last_json(_evals("list", "--json"))
    by_name = {r["name"]: r for r in rows}  # type: ignore[union-attr]
    from evals.core.registry import all_benchmarks

    assert set(by_name) == set(all_benchmarks())
    ft = by_name["familytool-b"]
    assert ft["tasks"] == 483 and ft["data"] == "present" and ft["strategies"][0] == ft["default_strategy"] == "agent"
    assert set(ft["strategies"]) == {"agent", "kgetool", "golden-kg", "full-kg"}
    ids = _last_json(_evals("list", "toolhop", "--json"))
    assert ids["benchmark"] == "toolhop" and len(ids["task_ids"]) == by_name["toolhop"]["tasks"]  # type: ignore[index]
    bad = _evals("list", "nosuch")
    assert bad.returncode == 2 and "unknown benchmark" in bad.stderr


def test_list_cuts_no_name_or_word_on_an_80_column_terminal(tmp_path):
    """Issue 37 item 10: at COLUMNS=80 the names were cut ("complexfuncben…")."""
    from evals.core.registry import all_benchmarks

    proc = _evals("list", env={"COLUMNS": "80", "EVALS_DATA_DIR": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert "…" not in proc.stdout, proc.stdout
    assert all(len(line) <= 80 for line in proc.stdout.splitlines())
    names = {cells[1].strip() for line in proc.stdout.splitlines() if len(cells := line.split("│")) > 2}
    assert set(all_benchmarks()) <= names, names


def test_a_mistyped_flag_shows_the_usage_of_its_sub_command(capsys):
    """Issue 37 item 10: ``evals serve --prot`` printed ``evals``'s usage, not ``evals serve``'s."""
    for argv, prog, hint in ((["serve", "--prot", "9000"], "evals serve", "--prot -> --port"),
                             (["data", "stats", "--jsn"], "evals data stats", "--jsn -> --json"),
                             (["list", "--jsonn"], "evals list", "--jsonn -> --json")):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith(f"usage: {prog} "), err
        assert f"{prog}: error: unrecognized arguments: " in err and hint in err, err


def test_list_says_what_first_use_would_download(tmp_path):
    proc = _evals("list", "--json", env={"EVALS_DATA_DIR": str(tmp_path)})
    rows = _last_json(proc)
    fetched = [r for r in rows if not r["data"].startswith("none needed")]  # type: ignore[union-attr,index]
    assert len(fetched) >= 5 and all(r["data"].startswith("missing: ") and r["tasks"] is None for r in fetched)  # type: ignore[index]
    # a benchmark defined by the user's task file has nothing to download and no size of its own
    assert all(r["tasks"] is None for r in rows)  # type: ignore[index]


def test_data_stats_covers_every_benchmark(data_dir):
    stats = _last_json(_evals("data", "stats", "all", "--json"))
    from evals.core.fetch import needed_files
    from evals.core.registry import all_benchmarks

    # every benchmark whose data is here (../shared/data holds all but BFCL's wheel: .ci/run fetches that)
    assert set(stats) == {n for n in all_benchmarks() if not needed_files(n, data_dir)}  # type: ignore[arg-type]
    assert stats["familytool-b"]["tasks"] == 483 and stats["familytool-b"]["kg_triples"] > 0  # type: ignore[index]
    listed = {r["name"]: r["tasks"] for r in _last_json(_evals("list", "--json"))}  # type: ignore[union-attr]
    sized = [n for n in listed if listed[n] is not None]  # not the benchmark of a task file you name
    assert len(sized) >= 5 and all(stats[n].get("tasks", stats[n].get("samples")) == listed[n] for n in sized)  # type: ignore[index]


def test_data_fetch_all_fetches_every_source(tmp_path):
    """Every source's files, into --data-dir; here from a mirror that holds none: the first source's
    missing file fails the command, named, with exit status 1 (the real downloads are
    tests/evals/test_data_fetch.py's)."""
    proc = _evals("data", "fetch", "all", "--data-dir", str(tmp_path / "d"), "--url-prefix", "http://127.0.0.1:9/x")
    assert proc.returncode == 1 and "127.0.0.1:9" in proc.stderr
    help_text = " ".join(_evals("data", "fetch", "--help").stdout.split())
    assert "or all (every source)" in help_text


# ---- task selection -------------------------------------------------------------------------------------
def test_select_tasks_named_sampled_and_limited(tmp_path):
    ids = [str(i) for i in range(20)]
    assert select_tasks(ids, task_ids=["7", "3"]) == ["3", "7"]  # the benchmark's order
    with pytest.raises(ValueError, match="no such task.*'x'"):
        select_tasks(ids, task_ids=["3", "x"])
    a, b = select_tasks(ids, sample=5, seed=1), select_tasks(ids, sample=5, seed=2)
    assert len(a) == 5 and a == select_tasks(ids, sample=5, seed=1) and a != b and a == sorted(a, key=int)
    assert select_tasks(ids, sample=5, seed=1, limit=2) == a[:2]
    assert select_tasks(ids, sample=50) == ids
    with pytest.raises(ValueError, match="--limit"):
        select_tasks(ids, limit=0)
    f = tmp_path / "ids.txt"
    f.write_text("# mine\n3\n\n7  # the second\n3\n", encoding="utf-8")
    assert parse_task_ids(f"@{f}") == ["3", "7"] and parse_task_ids("a, b,,a") == ["a", "b"]
    with pytest.raises(ValueError, match="cannot read"):
        parse_task_ids(f"@{tmp_path / 'none'}")


def test_a_sample_is_recorded_and_rescored_over_the_same_tasks(data_dir, tmp_path):
    run = tmp_path / "r"
    summary = _last_json(_evals("run", "toolhop", "--model", "oracle", "--sample", "3", "--sample-seed", "5",
                                "--run-dir", str(run), "--no-progress", "--json"))
    config = json.loads((run / "config.json").read_text(encoding="utf-8"))
    assert config["run"]["sample"] == 3 and config["run"]["sample_seed"] == 5
    assert summary["tasks"] == summary["completed"] == 3  # type: ignore[index]
    total = summary["benchmark_tasks"]  # type: ignore[index]
    assert summary["subset_note"].startswith(f"3 of {total} tasks: not comparable")  # type: ignore[index]
    again = _last_json(_evals("score", str(run), "--json"))
    assert again["tasks"] == 3 and again["metrics"] == summary["metrics"]  # type: ignore[index]
    traced = {json.loads(line)["task_id"] for line in (run / "traces.jsonl").read_text(encoding="utf-8").splitlines()}
    named = ",".join(sorted(traced))
    chosen = _last_json(_evals("run", "toolhop", "--model", "oracle", "--task-ids", named, "--run-dir", str(tmp_path / "n"),
                               "--no-progress", "--json"))
    assert chosen["tasks"] == 3 and chosen["metrics"] == summary["metrics"]  # type: ignore[index]
    bad = _evals("run", "toolhop", "--model", "oracle", "--task-ids", "no-such-task", "--run-dir", str(tmp_path / "b"))
    assert bad.returncode == 2 and "no-such-task" in bad.stderr and "Traceback" not in bad.stderr


# ---- numbers that never mislead -----------------------------------------------------------------------
async def test_a_partial_run_is_scored_over_the_tasks_that_ran(data_dir, tmp_path):
    """Two of four selected tasks ran (an interrupted run): the metrics are over those two, not zeros for the rest."""
    from client.runs import RunDir
    from evals.core.registry import load_benchmark
    from evals.core.run import RunOptions, run_benchmark
    from evals.core.scoring import summarize

    bench = load_benchmark("toolhop")
    ids = bench.task_ids()[:4]
    _, done = await run_benchmark(RunOptions(benchmark="toolhop", model="oracle", task_ids=ids[:2],
                                             run_dir=tmp_path / "r", progress=False))
    summary = await summarize(RunDir.open(tmp_path / "r"), bench, ids)
    assert summary["partial"] is True and summary["tasks"] == 4 and summary["tasks_ran"] == 2
    assert summary["metrics"]["answer_accuracy"] == done["metrics"]["answer_accuracy"] == 100.0
    notes = summary_notes(summary)
    assert any("partial: 2 of 4" in n for n in notes), notes
    assert done["partial"] is False


def test_a_run_that_reached_no_model_prints_no_table_of_zeros(data_dir, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    proc = _evals("run", "toolhop", "--model", "openai:m", "--base-url", f"http://127.0.0.1:{port}/v1",
                  "--api-key-env", "PATH", "--max-attempts", "1", "--limit", "6", "--run-dir", str(tmp_path / "r"),
                  "--no-progress")
    assert proc.returncode == 3, proc.stderr[-2000:]
    out = proc.stdout + proc.stderr
    assert re.search(r"no task completed \(\d errored, \d not run\): no metrics to show", out), out[-2000:]
    assert "answer_accuracy" not in out and "not comparable" not in out


def test_the_default_strategy_says_which_strategy_the_papers_used(data_dir, tmp_path):
    proc = _evals("run", "familytool-b", "--model", "oracle", "--limit", "2", "--run-dir", str(tmp_path / "r"),
                  "--no-progress")
    assert proc.returncode == 0, proc.stderr[-2000:]
    flat = " ".join((proc.stdout + proc.stderr).split())
    assert "2 of 483 tasks: not comparable" in flat
    assert "no familytool-b numbers for strategy 'agent'" in flat and "--strategy kgetool" in flat
    kgetool = {"benchmark": "familytool-b", "model": "oracle", "strategy": "kgetool", "options": {}}
    assert paper_hint(kgetool) is None  # the papers' own setting: nothing to add


def test_the_report_never_sets_a_subset_under_a_papers_row_in_bold():
    from evals.report import load_paper_numbers, render_markdown

    base = {"run_dir": "r", "benchmark": "familytool-b", "model": "openai:gpt-4o", "strategy": "kgetool",
            "completed": 20, "errored": 0, "options": {}, "metrics": {"tool_em": 90.0}}
    full = render_markdown([{**base, "tasks": 483, "benchmark_tasks": 483}], load_paper_numbers())
    part = render_markdown([{**base, "tasks": 20, "benchmark_tasks": 483}], load_paper_numbers())
    assert "**this run: openai:gpt-4o · kgetool**" in full
    row = next(line for line in part.splitlines() if "this run: openai:gpt-4o" in line and "90.00" in line)
    assert "20 of 483 tasks: not comparable" in row and "**" not in row
    partial = render_markdown([{**base, "tasks": 483, "benchmark_tasks": 483, "partial": True, "tasks_ran": 20}],
                              load_paper_numbers())
    row = next(line for line in partial.splitlines() if "this run: openai:gpt-4o" in line and "90.00" in line)
    assert "partial: 20 of 483 tasks ran: not comparable" in row and "**" not in row


# ---- the data directory, relative paths, --tools-dir alone ------------------------------------------------
def test_evals_finds_shared_data_beside_the_checkout_without_the_environment(tmp_path):
    from evals.core.data import shared_data_dir

    env = {k: v for k, v in os.environ.items() if k != "EVALS_DATA_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    proc = subprocess.run([sys.executable, "-c", "from evals.core.data import data_dir; print(data_dir())"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    shared = shared_data_dir()
    assert shared == ROOT.parent / "shared" / "data"
    want = shared if shared.is_dir() else tmp_path / "cache" / "mcp-multihop-evals" / "data"
    assert proc.stdout.strip() == str(want)


def test_run_sh_runs_evals_in_the_callers_directory(tmp_path):
    """./run.sh sets up in the checkout, then runs evals where the user typed it (a relative --run-dir
    lands there). A copy of run.sh with a stand-in venv and env.sh records evals' directory and arguments."""
    checkout = tmp_path / "checkout"
    (checkout / "scripts").mkdir(parents=True)
    (checkout / ".venv" / "bin").mkdir(parents=True)
    shutil.copy(ROOT / "run.sh", checkout / "run.sh")
    (checkout / "scripts" / "env.sh").write_text('setup_venv() { [ "$(pwd)" = "$CHECKOUT" ] || exit 9; }\n',
                                                  encoding="utf-8")
    evals = checkout / ".venv" / "bin" / "evals"
    evals.write_text('#!/usr/bin/env bash\necho "$(pwd)|$*"\n', encoding="utf-8")
    evals.chmod(0o755)
    user = tmp_path / "user"
    user.mkdir()
    proc = subprocess.run(["bash", str(checkout / "run.sh"), "run", "toolhop", "--run-dir", "mine"], cwd=user,
                          capture_output=True, text=True, env={**os.environ, "CHECKOUT": str(checkout)}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"{user}|run toolhop --run-dir mine"


def test_serve_tools_dir_alone_serves_only_the_users_tools(tmp_path):
    """No benchmark data, an unreachable mirror: `--tools-dir` alone starts at once, without "task endpoints"."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "EVALS_DATA_DIR": str(tmp_path / "empty"), "EVALS_DATA_URL_PREFIX": "http://127.0.0.1:9/x",
           "COLUMNS": "200"}
    proc = subprocess.Popen([sys.executable, "-m", "evals.cli", "serve", "--tools-dir", str(ROOT / "tool_specs" / "examples"),
                             "--port", str(port)], stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 120
        health = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).json()
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        assert health is not None, "the server did not start"
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=60)
    assert "custom" in json.dumps(health)
    assert "task endpoints" not in stderr and "not serving" not in stderr and "Downloading" not in stderr
    assert f"http://127.0.0.1:{port}/mcp/custom" in stderr


def test_a_run_over_toolhops_subset_is_not_set_under_the_995_query_rows():
    from evals.report import load_paper_numbers, render_markdown

    base = {"run_dir": "r", "benchmark": "toolhop", "model": "openai:gpt-4o", "strategy": "free", "tasks": 100,
            "benchmark_tasks": 100, "completed": 100, "errored": 0, "metrics": {"answer_accuracy": 40.0}}
    full = render_markdown([{**base, "options": {"dataset": "full"}}], load_paper_numbers())
    assert "**this run: openai:gpt-4o · free**" in full
    subset = {**base, "options": {"dataset": "subset"}, "full_set": False, "dataset_note": "the 100-query subset"}
    md = render_markdown([subset], load_paper_numbers())
    assert "**this run" not in md and "Published numbers (ToolHop" not in md  # the subset has no published rows
    assert any("not comparable" in n for n in summary_notes(subset))
