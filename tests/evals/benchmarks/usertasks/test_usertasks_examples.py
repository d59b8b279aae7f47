"""The worked examples of docs/your-own-tasks.md, end to end through ``evals``: ten tasks over a real
third-party MCP server from PyPI (``mcp-server-time``, started over stdio) and ten over the family KG
tools with two spec-file actions. The oracle scores 100; a scripted model (the real ``openai`` SDK
against a local stand-in) with known mistakes scores known numbers; a recorded run replayed offline
gives the same numbers; ``evals score``, ``evals report``, ``evals export`` and ``--workers 2`` work."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_providers import FakeProviderServer
from scripted_tasks import scripted

from evals.benchmarks.usertasks.taskfile import load_task_file
from evals.cli import main

EXAMPLES = Path(__file__).resolve().parents[4] / "docs" / "examples"
FAMILY = ["--tasks", str(EXAMPLES / "family" / "family_tasks.yaml"), "--kg", str(EXAMPLES / "family" / "family.triples"),
          "--tools-dir", str(EXAMPLES / "family" / "tools")]
TIME_TASKS = ["--tasks", str(EXAMPLES / "time" / "time_tasks.jsonl")]
TIME_SERVER = ["--mcp-server", f"time={sys.executable} -m mcp_server_time --local-timezone UTC"]
METRICS = ("call_exact_match", "tool_accuracy", "argument_accuracy", "answer_accuracy")


def evals_json(capsys: pytest.CaptureFixture[str], *argv: str, status: int = 0) -> dict[str, Any]:
    capsys.readouterr()
    assert main(list(argv)) == status, capsys.readouterr().err
    out: dict[str, Any] = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    return out


FAMILY_MISTAKES: dict[str, dict[str, Any]] = {
    "f01": {"answer": "Rosa"},  # wrong answer, right call
    "f03": {"turns": [[{"id": "find", "name": "kg_search_path", "arguments": {"start": "Maya", "path": ["mother", "prefer_restaurant"]}}],
                      [{"name": "book_restaurant", "arguments": {"restaurant": {"$from": "find", "path": "paths.0.1.2"}, "people": 3}}]]},
    "f06": {"turns": [[{"name": "kg_neighbors", "arguments": {"entity": "Lena"}}]]},  # another tool
    "f08": {"turns": [[{"name": "kg_search_path", "arguments": {"start": "Maya", "path": ["father"]}}],
                      [{"name": "kg_search_path", "arguments": {"start": "Maya", "path": ["mother"]}}]]},  # unordered: fine
    "f10": {"turns": [[{"name": "kg_list_relations", "arguments": {}}], [{"name": "kg_neighbors", "arguments": {"entity": "Theo"}}]]},
}
# 10 tasks, 15 gold calls, 27 gold arguments, 6 answers: exact 7/10 (f03, f06, f10), tools 14/15 (f06),
# arguments 24/27 (f03's people, f06's start and path), answers 5/6 (f01)
FAMILY_EXPECTED = {"call_exact_match": 70.0, "tool_accuracy": 93.33, "argument_accuracy": 88.89, "answer_accuracy": 83.33}

TIME_MISTAKES: dict[str, dict[str, Any]] = {
    "t01": {"turns": [[{"name": "convert_time", "arguments": {"source_timezone": "Asia/Kolkata", "time": "09:30",
                                                                "target_timezone": "Asia/Seoul"}}]]},
    "t05": {"answer": "It is 08:00 in Tokyo."},
    "t07": {"turns": [], "answer": "It is 10:42 in Tokyo."},  # no call: answers from memory
    "t09": {"turns": [[{"name": "convert_time", "arguments": {"source_timezone": "Africa/Nairobi", "time": "10:00", "target_timezone": "Asia/Shanghai"}}],
                      [{"name": "convert_time", "arguments": {"source_timezone": "Africa/Nairobi", "time": "10:00", "target_timezone": "America/Bogota"}}]]},
}
# 10 tasks, 12 gold calls, 32 gold arguments, 9 answers: exact 8/10 (t01, t07), tools 11/12 (t07),
# arguments 30/32 (t01's target, t07's timezone), answers 8/9 (t05)
TIME_EXPECTED = {"call_exact_match": 80.0, "tool_accuracy": 91.67, "argument_accuracy": 93.75, "answer_accuracy": 88.89}


def metrics(summary: dict[str, Any]) -> dict[str, float]:
    return {k: summary["metrics"][k] for k in METRICS}


def test_family_example_oracle_scripted_model_score_report_export_and_workers(tmp_path: Path, capsys) -> None:
    oracle = evals_json(capsys, "run", "taskfile", *FAMILY, "--model", "oracle", "--run-dir", str(tmp_path / "oracle"),
                        "--no-progress", "--json")
    assert oracle["completed"] == 10 and metrics(oracle) == dict.fromkeys(METRICS, 100.0)
    assert oracle["metric_stats"]["tool_accuracy"]["samples"] == 15 and oracle["metric_stats"]["answer_accuracy"]["tasks"] == 6
    assert set(oracle["breakdowns"]) == {"hops", "kind"} and oracle["breakdowns"]["hops"]["3"]["tasks"] == 2

    tasks = load_task_file(EXAMPLES / "family" / "family_tasks.yaml")
    with FakeProviderServer() as fake:
        fake.openai.respond_with(scripted(tasks, FAMILY_MISTAKES))
        model = ["--model", "openai:m", "--base-url", fake.openai_base_url, "--api-key-env", "PATH"]
        run = evals_json(capsys, "run", "taskfile", *FAMILY, *model, "--run-dir", str(tmp_path / "model"), "--no-progress", "--json")
        first = next(b for b in fake.openai.bodies if b["messages"][-1]["content"].startswith("Send him the message"))
        f01 = next(b for b in fake.openai.bodies if b["messages"][-1]["content"] == "Who is Maya's mother?")
    assert {t["function"]["name"] for t in f01["tools"]} == {"kg_list_relations", "kg_neighbors", "kg_search_path"}
    # a task given as a conversation reaches the model as one: its system message, earlier turns, last question
    assert [m["role"] for m in first["messages"]] == ["system", "user", "assistant", "user"]
    assert first["messages"][2]["content"] == "Sure, what should I tell him?"
    assert {t["function"]["name"] for t in first["tools"]} == {"kg_list_relations", "kg_neighbors", "kg_search_path",
                                                               "book_restaurant", "send_message"}
    assert metrics(run) == FAMILY_EXPECTED
    assert run["metric_stats"]["call_exact_match"]["stderr"] == pytest.approx(100 * ((7 * 0.3**2 + 3 * 0.7**2) / 9 / 10) ** 0.5, abs=1e-3)  # s / sqrt(n)
    assert run["breakdowns"]["kind"]["action"]["call_exact_match"] == 75.0  # f03 of f03, f04, f05, f09
    scores = {json.loads(line)["task_id"]: json.loads(line)["score"] for line in (tmp_path / "model" / "scores.jsonl").open()}
    f03 = scores["f03"]["details"]["calls"]
    assert f03["gold"][1]["arguments"] == {"restaurant": "restaurant_0007", "people": 2}  # the reference, resolved
    assert [p["decision"]["matched"] for p in f03["alignment"]["pairs"]] == [True, False]
    assert scores["f08"]["details"]["calls"]["in_order"] is False and scores["f08"]["details"]["calls"]["exact"] is True

    rescored = evals_json(capsys, "score", str(tmp_path / "model"), "--json")
    assert metrics(rescored) == FAMILY_EXPECTED
    assert main(["report", str(tmp_path / "model"), "--out", str(tmp_path / "report")]) == 0
    assert "call_exact_match" in (tmp_path / "report" / "report.md").read_text() or "Call exact match" in (tmp_path / "report" / "report.md").read_text()
    assert main(["export", str(tmp_path / "model"), "--format", "jsonl", "-o", str(tmp_path / "preds.jsonl")]) == 0
    lines = [json.loads(line) for line in (tmp_path / "preds.jsonl").open()]
    assert [x["id"] for x in lines] == [t.id for t in tasks] and lines[0]["answer"] == "Rosa"
    assert lines[2]["calls"][1]["arguments"] == {"restaurant": "restaurant_0007", "people": 3}

    workers = evals_json(capsys, "run", "taskfile", *FAMILY, "--model", "oracle", "--workers", "2", "--concurrency", "4",
                         "--run-dir", str(tmp_path / "workers"), "--no-progress", "--json")
    assert metrics(workers) == dict.fromkeys(METRICS, 100.0)


def test_time_server_example_oracle_scripted_model_record_and_replay(tmp_path: Path, capsys) -> None:
    tasks = load_task_file(EXAMPLES / "time" / "time_tasks.jsonl")
    rec = tmp_path / "time.recording.jsonl"
    oracle = evals_json(capsys, "run", "taskfile", *TIME_TASKS, *TIME_SERVER, "--record", str(rec), "--model", "oracle",
                        "--run-dir", str(tmp_path / "oracle"), "--no-progress", "--json")
    assert oracle["completed"] == 10 and metrics(oracle) == dict.fromkeys(METRICS, 100.0)
    with FakeProviderServer() as fake:
        fake.openai.respond_with(scripted(tasks, TIME_MISTAKES))
        model = ["--model", "openai:m", "--base-url", fake.openai_base_url, "--api-key-env", "PATH"]
        live = evals_json(capsys, "run", "taskfile", *TIME_TASKS, *TIME_SERVER, "--record", str(rec), *model,
                          "--run-dir", str(tmp_path / "live"), "--no-progress", "--json")
        assert metrics(live) == TIME_EXPECTED
        # offline: no server is started (a command that does not exist would fail), the recording answers
        replayed = evals_json(capsys, "run", "taskfile", *TIME_TASKS, "--replay", str(rec), *model,
                              "--run-dir", str(tmp_path / "replay"), "--no-progress", "--json")
    assert metrics(replayed) == TIME_EXPECTED and replayed["breakdowns"] == live["breakdowns"]
    oracle_replayed = evals_json(capsys, "run", "taskfile", *TIME_TASKS, "--replay", str(rec), "--model", "oracle",
                                 "--run-dir", str(tmp_path / "oracle-replay"), "--no-progress", "--json")
    assert metrics(oracle_replayed) == dict.fromkeys(METRICS, 100.0)
    # a recording without the tools of a server the run names is refused before the run folder is made
    capsys.readouterr()
    refused = ["run", "taskfile", *TIME_TASKS, "--replay", str(rec), "--mcp-server", "other=no-such-command",
               "--model", "oracle", "--run-dir", str(tmp_path / "refused"), "--no-progress"]
    assert main(refused) == 2
    err = capsys.readouterr().err
    assert "no recorded tools of MCP server(s) other (it has: time)" in err and "Traceback" not in err, err
    assert not (tmp_path / "refused").exists()
    config = json.loads((tmp_path / "live" / "config.json").read_text())
    assert config["options"]["matcher"] == "rule" and "time_tasks.jsonl" in config["data"]


GIT = EXAMPLES / "git"
GIT_SERVER = ["--mcp-server", f"git={sys.executable} -m mcp_server_git"]
# the scripted model of docs/examples/git/git_mistakes.jsonl: 10 tasks, 13 gold calls, 22 gold arguments,
# 10 answers. Exact 6/10 (g03 wrong revision, g04 wrong branch_type, g05 skips git_log, g06 another tool);
# tools 11/13 (g05's git_log, g06); arguments 17/22 (g03 revision, g04 branch_type, g05's git_log repo_path
# and contains, g06 repo_path); answers 8/10 (g03, g07). g01 (repo_path with a trailing /, forgiven by the
# task's `match: {repo_path: path}`) and g08 (max_count 10, the schema default, given) count as right.
GIT_EXPECTED = {"call_exact_match": 60.0, "tool_accuracy": 84.62, "argument_accuracy": 77.27, "answer_accuracy": 80.0}


def test_git_server_example_with_a_path_variable_oracle_and_scripted_replay_model(tmp_path: Path, capsys, monkeypatch) -> None:
    import hashlib
    import subprocess

    repo = tmp_path / "demo-repo"
    subprocess.run(["bash", str(GIT / "make_repo.sh"), str(repo)], check=True, timeout=60, capture_output=True)
    tasks = ["--tasks", str(GIT / "git_tasks.yaml")]
    oracle = evals_json(capsys, "run", "taskfile", *tasks, *GIT_SERVER, "--var", f"REPO={repo}", "--model", "oracle",
                        "--run-dir", str(tmp_path / "oracle"), "--no-progress", "--json")
    assert oracle["completed"] == 10 and metrics(oracle) == dict.fromkeys(METRICS, 100.0)
    config = json.loads((tmp_path / "oracle" / "config.json").read_text())
    assert config["options"]["var"] == [f"REPO={repo}"] and config["variables"]["REPO"] == {"from": "--var", "value": str(repo)}

    # the scripted model's file uses ${REPO} too; here both take it from the environment
    monkeypatch.setenv("REPO", str(repo))
    scripted_run = evals_json(capsys, "run", "taskfile", *tasks, *GIT_SERVER, "--allow-env", "REPO",
                              "--model", f"replay:{GIT / 'git_mistakes.jsonl'}", "--model-arg", 'allow_env=["REPO"]',
                              "--run-dir", str(tmp_path / "scripted"), "--no-progress", "--json")
    assert metrics(scripted_run) == GIT_EXPECTED
    config = json.loads((tmp_path / "scripted" / "config.json").read_text())
    assert config["variables"] == {"REPO": {"from": "environment", "sha256": hashlib.sha256(str(repo).encode()).hexdigest()}}
    assert str(repo) not in json.dumps(config["options"])
    scores = {json.loads(x)["task_id"]: json.loads(x)["score"] for x in (tmp_path / "scripted" / "scores.jsonl").open()}
    assert scores["g01"]["details"]["calls"]["exact"] and scores["g08"]["details"]["calls"]["exact"]
    g03 = scores["g03"]["details"]["calls"]["alignment"]["pairs"][0]["decision"]["reason"]
    assert 'revision: "HEAD:version" (gold "HEAD:VERSION")' in g03
    assert scores["g02"]["details"]["calls"]["gold"][1]["arguments"]["revision"] == "7468a118f6d9729e2204a5e00e35ce9cc3abf839"


def test_time_example_as_documented_finds_the_server_beside_python_without_venv_bin_on_path(tmp_path: Path) -> None:
    """Issue 37 item 7: after ``./run.sh`` (``.venv/bin`` not on PATH) the documented command names the
    server by its bare script name; it is found beside the running interpreter, where pip put it."""
    import os
    import shutil
    import subprocess

    pytest.importorskip("mcp_server_time")
    beside = os.path.dirname(sys.executable)
    if shutil.which("mcp-server-time", path=beside) is None:
        pytest.skip("mcp-server-time is not installed beside this interpreter (the dev extra installs it)")
    path = os.pathsep.join(p for p in os.environ.get("PATH", os.defpath).split(os.pathsep)
                           if p and os.path.realpath(p) != os.path.realpath(beside))
    assert shutil.which("mcp-server-time", path=path) is None  # the situation of the issue
    env = {**os.environ, "PATH": path}
    done = subprocess.run(
        [sys.executable, "-m", "evals.cli", "run", "taskfile", *TIME_TASKS, "--mcp-server",
         "time=mcp-server-time --local-timezone UTC", "--model", "oracle", "--limit", "2",
         "--run-dir", str(tmp_path / "run"), "--json"],
        env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["completed"] == 2
    # a name found nowhere: one line naming the command and where it was looked for, exit 2
    done = subprocess.run(
        [sys.executable, "-m", "evals.cli", "run", "taskfile", *TIME_TASKS, "--mcp-server", "time=no-such-mcp-server-x",
         "--model", "oracle", "--run-dir", str(tmp_path / "nope")],
        env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
    line = done.stderr.strip().splitlines()[-1]
    assert "'no-such-mcp-server-x' not found on PATH or in " + beside in line


FILES = EXAMPLES / "files"
FILES_NPM_BIN = EXAMPLES.parents[1] / ".ci" / "node_modules" / ".bin"
# docs/examples/files/files_mistakes.jsonl: 10 tasks, 11 gold calls, 16 gold arguments, 5 answers, 5 tasks with
# state checks. exact 7/10 (f04 a wrong content, f05 another tool, f06 a call missing); tools 9/11 (f05's edit_file,
# f06's create_directory); arguments 12/16 (f04's content, f05's two, f06's path); answers 3/5 (f03 hedged, f10 a wrong
# count); state 3/5 (f04 "All done.", f06 nothing moved; f05's other tool leaves the right state); 10 of 11 results
# with content (f06's move_file is an error)
FILES_EXPECTED = {"call_exact_match": 70.0, "tool_accuracy": 81.82, "argument_accuracy": 75.0, "answer_accuracy": 60.0,
                  "state_accuracy": 60.0, "informative_results": 90.91}


def test_filesystem_example_with_state_checks_and_a_server_per_episode(tmp_path: Path, capsys, monkeypatch) -> None:
    """Issue 49's worked example: npm's filesystem server started per episode in the episode's own copy of
    workspace/; writes checked by state checks; the same numbers on a second run and on resume."""
    import hashlib
    import os
    import shutil

    found = shutil.which("mcp-server-filesystem", path=str(FILES_NPM_BIN)) or shutil.which("mcp-server-filesystem")
    if found is None:
        if os.environ.get("EVALS_REQUIRE_NPM_TOOLS") == "1":
            pytest.fail(f"mcp-server-filesystem is missing from {FILES_NPM_BIN}: .ci/run installs it (npm install --prefix .ci)")
        pytest.skip("npm's @modelcontextprotocol/server-filesystem is not installed (.ci/run: npm install --prefix .ci)")
    monkeypatch.setenv("PATH", f"{Path(found).parent}{os.pathsep}{os.environ.get('PATH', '')}")

    def digest() -> str:
        return hashlib.sha256(b"".join(p.read_bytes() for p in sorted((FILES / "workspace").rglob("*")) if p.is_file())).hexdigest()

    before = digest()
    args = ["run", "taskfile", "--tasks", str(FILES / "files_tasks.yaml"), "--mcp-config", str(FILES / "files_servers.json"),
            "--no-progress", "--json"]
    oracle = evals_json(capsys, *args, "--model", "oracle", "--run-dir", str(tmp_path / "oracle"))
    assert oracle["completed"] == 10 and {k: oracle["metrics"][k] for k in FILES_EXPECTED} == dict.fromkeys(FILES_EXPECTED, 100.0)
    assert "oracle_failures" not in oracle["metrics"] and not oracle["warnings"]
    assert set(oracle["breakdowns"]["kind"]) == {"read", "write"}

    model = [*args, "--model", f"replay:{FILES / 'files_mistakes.jsonl'}"]
    first = evals_json(capsys, *model, "--run-dir", str(tmp_path / "model"))
    assert {k: first["metrics"][k] for k in FILES_EXPECTED} == FILES_EXPECTED
    assert first["breakdowns"]["kind"]["write"]["state_accuracy"] == 60.0
    second = evals_json(capsys, *model, "--run-dir", str(tmp_path / "model2"))  # again: the same start, the same numbers
    assert {k: second["metrics"][k] for k in FILES_EXPECTED} == FILES_EXPECTED
    (tmp_path / "model" / "scores.jsonl").unlink()  # resumed (nothing left to run): scored again, the same numbers
    resumed = evals_json(capsys, *model, "--run-dir", str(tmp_path / "model"))
    assert {k: resumed["metrics"][k] for k in FILES_EXPECTED} == FILES_EXPECTED
    assert digest() == before  # every episode worked on its own copy

    scores = {json.loads(x)["task_id"]: json.loads(x)["score"] for x in (tmp_path / "model" / "scores.jsonl").open()}
    f04 = scores["f04"]["details"]["checks"][0]
    assert (f04["ok"], f04["got"], f04["want"]) == (False, "All done.", {"equals": "all done"})
    assert [e["ok"] for e in scores["f06"]["details"]["checks"]] == [False, False]
    assert scores["f05"]["details"]["checks"][0]["ok"] and not scores["f05"]["details"]["calls"]["exact"]
    assert scores["f08"]["details"]["calls"]["exact"]  # the paths in the other order: match: unordered
