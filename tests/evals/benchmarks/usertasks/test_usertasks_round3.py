"""Issue 49: what the server did (state checks), each episode in its own world (a folder, a server started
per episode, set-up calls), an oracle that proves the data, server settings without tricks (``env``
expanded, relative paths), and matching (unordered lists, strict numbers).

The server is ``notes_server.py`` (a small MCP server over stdio whose notes live in a JSON file named by
``$NOTES_FILE``, or in memory without it); the model is the oracle or ``replay:FILE``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from evals.benchmarks.usertasks.answers import match_answer
from evals.benchmarks.usertasks.checks import evaluate_checks, is_empty
from evals.benchmarks.usertasks.taskfile import read_task_file, task_schema
from evals.cli import main
from tool_specs.argument_matching import argument_rules, param_matches

NOTES_SERVER = str(Path(__file__).with_name("notes_server.py"))
DATA = {"color": "blue", "size": "3"}
METRICS = ("call_exact_match", "tool_accuracy", "argument_accuracy", "answer_accuracy", "state_accuracy")

TASKS: list[dict[str, Any]] = [
    {"id": "w1", "query": "Set the note color to red.",
     "calls": [{"name": "put_notes", "arguments": {"notes": [{"key": "color", "value": "red"}]}}],
     "checks": [{"name": "get_note", "arguments": {"key": "color"}, "expect": [{"path": "value", "equals": "red"}]},
                {"id": "kept", "name": "list_notes", "expect": [{"path": "notes", "contains": {"key": "size", "value": "3"}}]}]},
    {"id": "w2", "query": "Write the notes a=1 and b=2.",
     "calls": [{"name": "put_notes", "arguments": {"notes": [{"key": "a", "value": "1"}, {"key": "b", "value": "2"}]},
                "match": {"notes": "unordered"}}],
     "checks": [{"name": "list_notes", "expect": [{"path": "notes.0", "equals": {"key": "a", "value": "1"}},
                                                   {"path": "notes", "pattern": '"b".*"2"'}]}]},
    {"id": "r1", "query": "What does the note size say?", "calls": [{"name": "get_note", "arguments": {"key": "size"}}],
     "answer": {"type": "number", "value": 3, "strict": True}},
    {"id": "d1", "query": "Delete the note color.", "calls": [{"name": "delete_note", "arguments": {"key": "color"}}],
     "checks": [{"name": "get_note", "arguments": {"key": "color"}, "expect": [{"path": "value", "equals": None}]}]},
    {"id": "d2", "query": "Add the note tmp=1, then delete it.", "order": "unordered",
     "calls": [{"name": "put_notes", "arguments": {"notes": [{"key": "tmp", "value": "1"}]}},
               {"name": "delete_note", "arguments": {"key": "tmp"}}],
     "checks": [{"name": "list_notes", "expect": [{"path": "notes", "number": 2}, {"path": "notes.1.key", "equals": "size"}]}]},
]
for _t in TASKS:
    _t["setup"] = {"files": ["notes.json"]}


def _turns(*turns: Any) -> list[dict[str, Any]]:
    return [{"role": "assistant", "function_call": t} if isinstance(t, list) else {"role": "assistant", "content": t} for t in turns]


# known mistakes: w1 the wrong value (its call and its state check fail); w2 the batch in the other order
# (forgiven by match: unordered); r1 a hedged number (strict: fails); d2 the right calls in the wrong order
# (an unordered task: the calls match) that leave the wrong state (its check fails)
SCRIPT = [
    ("w1", _turns([{"name": "put_notes", "arguments": {"notes": [{"key": "color", "value": "Red"}]}}], "Done.")),
    ("w2", _turns([{"name": "put_notes", "arguments": {"notes": [{"key": "b", "value": "2"}, {"key": "a", "value": "1"}]}}], "Done.")),
    ("r1", _turns([{"name": "get_note", "arguments": {"key": "size"}}], "Either 2, 3, 4 or 5.")),
    ("d1", _turns([{"name": "delete_note", "arguments": {"key": "color"}}], "Deleted.")),
    ("d2", _turns([{"name": "delete_note", "arguments": {"key": "tmp"}}],
                  [{"name": "put_notes", "arguments": {"notes": [{"key": "tmp", "value": "1"}]}}], "Done.")),
]
# 5 tasks with calls: exact 4/5 (w1); 6 gold calls all paired; 6 gold arguments, 5 right (w1's notes);
# 1 answer, wrong (r1); 4 tasks with checks, 2 hold (w1: color is "Red"; d2: tmp is still there)
SCRIPT_EXPECTED = {"call_exact_match": 80.0, "tool_accuracy": 100.0, "argument_accuracy": 83.33, "answer_accuracy": 0.0,
                   "state_accuracy": 50.0}


def write_case(tmp_path: Path, tasks: list[dict[str, Any]] = TASKS, env: dict[str, str] | None = None) -> tuple[Path, Path]:
    """The task file (YAML, with notes.json beside it) and an mcpServers file for the notes server."""
    (tmp_path / "notes.json").write_text(json.dumps(DATA))
    path = tmp_path / "tasks.yaml"
    path.write_text(yaml.safe_dump({"tasks": tasks}, sort_keys=False))
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"notes": {
        "command": sys.executable, "args": [NOTES_SERVER],
        "env": env if env is not None else {"NOTES_FILE": "${EPISODE_DIR}/notes.json"}}}}))
    return path, config


def evals_json(capsys: pytest.CaptureFixture[str], *argv: str, status: int = 0) -> dict[str, Any]:
    capsys.readouterr()
    assert main(list(argv)) == status, capsys.readouterr().err
    out: dict[str, Any] = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    return out


def run(capsys: pytest.CaptureFixture[str], tasks: Path, config: Path, run_dir: Path, *extra: str, model: str = "oracle") -> dict[str, Any]:
    return evals_json(capsys, "run", "taskfile", "--tasks", str(tasks), "--mcp-config", str(config), "--model", model,
                      "--run-dir", str(run_dir), "--no-progress", "--json", *extra)


def metrics(summary: dict[str, Any]) -> dict[str, float]:
    return {k: summary["metrics"][k] for k in METRICS}


def scores(run_dir: Path) -> dict[str, dict[str, Any]]:
    rows = [json.loads(line) for line in (run_dir / "scores.jsonl").read_text().splitlines() if line.strip()]
    return {r["task_id"]: r for r in rows}


def test_state_checks_isolated_episodes_and_a_scripted_model_with_known_mistakes(tmp_path: Path, capsys) -> None:
    tasks, config = write_case(tmp_path)
    oracle = run(capsys, tasks, config, tmp_path / "oracle")
    assert oracle["completed"] == 5 and metrics(oracle) == dict.fromkeys(METRICS, 100.0)
    assert oracle["metric_stats"]["state_accuracy"]["tasks"] == 4 and "oracle_failures" not in oracle["metrics"]
    assert not oracle["warnings"]
    # every episode started from notes.json as written: the file beside the task file is never changed
    assert json.loads((tmp_path / "notes.json").read_text()) == DATA

    script = tmp_path / "mistakes.jsonl"
    by_id = {t["id"]: t for t in TASKS}
    script.write_text("".join(json.dumps({"messages": [{"role": "user", "content": by_id[i]["query"]}, *turns]}) + "\n"
                      for i, turns in SCRIPT))
    model = run(capsys, tasks, config, tmp_path / "model", model=f"replay:{script}")
    assert metrics(model) == SCRIPT_EXPECTED
    assert model["metric_stats"]["argument_accuracy"]["samples"] == 6
    got = scores(tmp_path / "model")
    w1 = {(e["check"], e["test"]): e for e in got["w1"]["score"]["details"]["checks"]}
    assert w1[("0", "equals")]["ok"] is False and w1[("0", "equals")]["got"] == "Red" and w1[("0", "equals")]["want"] == {"equals": "red"}
    assert w1[("kept", "contains")]["ok"] is True
    assert [e["ok"] for e in got["d2"]["score"]["details"]["checks"]] == [False, True]  # 3 notes; notes.1 is still size
    assert got["d2"]["score"]["details"]["calls"]["exact"] is True  # right calls, wrong state

    # the same task file again, and resumed: the same numbers (each episode starts from the same state)
    again = run(capsys, tasks, config, tmp_path / "model2", model=f"replay:{script}")
    assert metrics(again) == SCRIPT_EXPECTED
    resumed = run(capsys, tasks, config, tmp_path / "model", model=f"replay:{script}")
    assert metrics(resumed) == SCRIPT_EXPECTED

    # the viewer shows each expectation with both values next to the transcript
    from evals.benchmarks.usertasks.taskfile import load_task_file
    from evals.benchmarks.usertasks.view import episode_sections

    task = next(t for t in load_task_file(tasks) if t.id == "w1")
    sections = episode_sections(task, None, got["w1"])
    state = next(s for s in sections if s["title"] == "State checks")
    failed = state["rows"][0]
    assert failed[:2] == ["0", 'get_note {"key": "color"}'] and failed[2:] == ["value", 'equals "red"', '"Red"', False]
    assert state["note"].endswith("1 of 2 expectation(s) failed")


def test_the_oracle_proves_the_data_and_an_empty_server_is_reported_for_any_model(tmp_path: Path, capsys) -> None:
    # the server started without its data (NOTES_FILE not passed): every note is missing
    tasks, config = write_case(tmp_path, env={})
    oracle = run(capsys, tasks, config, tmp_path / "oracle", "--fresh-servers")  # each episode: an empty server
    # w1: a state check (size is gone); r1: the answer is not in the results; d1: an error; d2: a state check
    assert oracle["metrics"]["oracle_failures"] == 4
    assert oracle["metrics"]["answer_accuracy"] == 0.0 and oracle["metrics"]["call_exact_match"] == 80.0
    assert any(w.startswith("oracle_failures: the oracle failed 4 task(s)") for w in oracle["warnings"])
    why = {k: v["score"]["details"].get("oracle") for k, v in scores(tmp_path / "oracle").items()}
    assert "the gold answer 3 is not in what the gold calls returned" in why["r1"][0]
    assert "gold call 1 (delete_note) returned an error" in why["d1"][0]
    assert why["w1"] == ['state check kept (list_notes) failed: notes contains {"key": "size", "value": "3"}, got '
                         '[{"key": "color", "value": "red"}]']
    assert why["w2"] is None

    # only reads, against the empty server: every result is empty, which any model's run says loudly
    reads = [{"id": "r2", "query": "List the notes.", "calls": [{"name": "list_notes", "arguments": {}}],
              "answer": {"type": "exact", "value": "size", "contains": True}},
             {"id": "r3", "query": "How many notes are there?", "calls": [{"name": "list_notes", "arguments": {}}],
              "answer": {"type": "number", "value": 2, "derived": True}}]
    (tmp_path / "reads").mkdir()
    tasks, config = write_case(tmp_path / "reads", reads, env={})
    script = tmp_path / "reads.jsonl"
    script.write_text("".join(json.dumps({"messages": [{"role": "user", "content": t["query"]},
                                                       *_turns([{"name": "list_notes", "arguments": {}}], "2: color and size")]}) + "\n"
                              for t in reads))
    for model in ("oracle", f"replay:{script}"):
        summary = run(capsys, tasks, config, tmp_path / "reads" / model.split(":")[0], "--fresh-servers", model=model)
        assert summary["metrics"]["informative_results"] == 0.0
        assert any(w.startswith("uninformative_run: every tool result of the run was empty") for w in summary["warnings"])
    # r3's answer is derived (a count): the oracle does not look for it in the results; r2's is read, and missing
    why = {k: v["score"]["details"].get("oracle") for k, v in scores(tmp_path / "reads" / "oracle").items()}
    assert why["r3"] is None and 'the gold answer "size" is not in what the gold calls returned' in why["r2"][0]



def test_fresh_servers_and_set_up_calls_give_every_episode_the_same_start(tmp_path: Path, capsys) -> None:
    # an in-memory server (no file): the state comes from set-up calls; shared, the writes would pile up
    tasks = [{"id": f"c{i}", "query": f"Add the note k{i}=v, then say how many notes there are.",
              "setup": {"calls": [{"name": "put_notes", "arguments": {"notes": [{"key": "base", "value": "x"}]}}]},
              "calls": [{"name": "put_notes", "arguments": {"notes": [{"key": f"k{i}", "value": "v"}]}}, {"name": "list_notes"}],
              "answer": {"type": "number", "value": 2, "strict": True, "derived": True},
              "checks": [{"name": "list_notes", "expect": [{"path": "notes", "number": 2}]}]} for i in range(3)]
    path, config = write_case(tmp_path, tasks, env={})
    fresh = run(capsys, path, config, tmp_path / "fresh", "--fresh-servers")
    assert metrics(fresh)["state_accuracy"] == 100.0 and metrics(fresh)["answer_accuracy"] == 100.0
    # two trials of each task (--epochs 2), six episodes at once: each trial has its own server (a task's trials take turns)
    trials = run(capsys, path, config, tmp_path / "trials", "--fresh-servers", "--epochs", "2", "--concurrency", "6")
    assert metrics(trials)["state_accuracy"] == 100.0
    per_trial = scores(tmp_path / "trials")
    assert len(per_trial) == 6 and all(r["score"]["samples"]["state_accuracy"] == [1.0, 1.0] for r in per_trial.values())
    shared = run(capsys, path, config, tmp_path / "shared")
    assert shared["metrics"]["state_accuracy"] < 100.0 and shared["metrics"]["oracle_failures"] >= 2
    assert json.loads((tmp_path / "fresh" / "config.json").read_text())["options"]["fresh_servers"] is True


def test_a_set_up_call_that_fails_fails_the_episode(tmp_path: Path, capsys) -> None:
    tasks = [{"id": "s", "query": "What is x?", "setup": {"calls": [{"name": "delete_note", "arguments": {"key": "nope"}}]},
              "calls": [{"name": "get_note", "arguments": {"key": "x"}}]}]
    path, config = write_case(tmp_path, tasks)
    capsys.readouterr()
    status = main(["run", "taskfile", "--tasks", str(path), "--mcp-config", str(config), "--model", "oracle",
                   "--run-dir", str(tmp_path / "r"), "--no-progress", "--json"])
    assert status != 0
    trace = json.loads((tmp_path / "r" / "traces.jsonl").read_text().splitlines()[-1]) if (tmp_path / "r" / "traces.jsonl").exists() else None
    text = json.dumps(trace) + capsys.readouterr().err
    assert "set-up call delete_note returned an error" in text


def test_server_env_expands_variables_and_resolves_paths_against_the_config_file(tmp_path: Path, capsys, monkeypatch) -> None:
    from evals.benchmarks.usertasks.sources import mcp_sources
    from evals.benchmarks.usertasks.variables import TaskVariables

    (tmp_path / "cfg").mkdir()
    config = tmp_path / "cfg" / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"notes": {"command": "python3", "args": ["./server.py"],
                                                           "env": {"NOTES_FILE": "./${NAME}.json", "API_TOKEN": "${MY_TOKEN}"}}}}))
    monkeypatch.setenv("MY_TOKEN", "tok-123")
    variables = TaskVariables(["NAME=notes"], task_dir=str(tmp_path))
    [src] = mcp_sources({"mcp_config": str(config)}, variables)
    assert src.args == (str(tmp_path / "cfg" / "server.py"),)
    assert src.env == {"NOTES_FILE": str(tmp_path / "cfg" / "notes.json"), "API_TOKEN": "tok-123"}
    assert "MY_TOKEN" not in json.dumps(variables.recorded())  # a secret in env is used, never recorded

    # end to end: the data file named relative to the config file, through env, read by the server
    tasks, _ = write_case(tmp_path, [t for t in TASKS if t["id"] == "r1"])
    (tmp_path / "cfg" / "notes.json").write_text(json.dumps(DATA))
    config.write_text(json.dumps({"mcpServers": {"notes": {"command": sys.executable, "args": [NOTES_SERVER],
                                                           "env": {"NOTES_FILE": "./${NAME}.json"}}}}))
    summary = run(capsys, tasks, config, tmp_path / "r", "--var", "NAME=notes")
    assert summary["metrics"]["answer_accuracy"] == 100.0 and "oracle_failures" not in summary["metrics"]


def test_unordered_lists_and_strict_numbers() -> None:
    schema = {"type": "object", "properties": {"notes": {"type": "array"}, "ids": {"type": "array"}, "spec": {"type": "object"}}}
    gold = {"notes": [{"key": "a", "tags": ["x", "y"]}, {"key": "b", "tags": []}], "ids": [1, 2, 3], "spec": {"ids": [3, 4]}}
    pred = {"notes": [{"key": "b", "tags": []}, {"key": "a", "tags": ["y", "x"]}], "ids": [3, 2, 1], "spec": {"ids": [4, 3]}}
    assert param_matches(pred, gold, schema) == {"notes": False, "ids": False, "spec": False}  # in order by default
    rules = argument_rules({"notes": "unordered", "ids": "unordered", "spec": "unordered"})
    assert param_matches(pred, gold, schema, rules=rules) == {"notes": True, "ids": True, "spec": True}
    assert param_matches({**pred, "ids": [1, 2]}, gold, schema, rules=rules)["ids"] is False  # a multiset: counts matter
    assert param_matches({**pred, "ids": [1, 1, 2, 3]}, gold, schema, rules=rules)["ids"] is False

    strict = {"type": "number", "value": 3, "strict": True}
    assert match_answer(strict, "Either 2, 3, 4 or 5.") is False and match_answer(strict, "There are 3.") is True
    assert match_answer(strict, "3, that is 3.0 notes") is True  # one number, written twice
    assert match_answer({"type": "number", "value": 3}, "Either 2, 3, 4 or 5.") is True  # the default: any number


def test_checks_expectations_and_task_file_problems(tmp_path: Path) -> None:
    timeouts: list[str] = []
    checks = [{"id": "c", "name": "t", "expect": [{"path": "a.0", "equals": 1}, {"path": "a", "contains": 2}, {"path": "s", "pattern": "^h"},
                                                  {"path": "s", "number": 4.5, "tolerance": 0.1}, {"path": "nope", "equals": 1}]}]
    found = evaluate_checks(checks, [{"value": {"a": [1, 2], "s": "hello 4.52"}, "is_error": False}], timeouts)
    assert [e["ok"] for e in found] == [True, True, True, True, False] and found[-1]["got"] == "<no such path in the result>"
    errored = evaluate_checks(checks, [{"value": None, "is_error": True, "text": "boom"}], timeouts)
    assert not any(e["ok"] for e in errored) and errored[0]["got"] == "<error> boom"
    assert is_empty({"entities": [], "relations": []}) and not is_empty({"n": 0})

    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump([
        {"id": "a", "query": "q", "answer": "x", "setup": {"files": ["missing.json"]}},
        {"id": "b", "query": "q", "answer": "x", "checks": [{"name": "t", "expect": [{"equals": 1, "pattern": "x"}]}]},
        {"id": "c", "query": "q", "answer": {"type": "normalized", "value": "x", "strict": True}},
        {"id": "d", "query": "q", "answer": "x", "setup": {"files": [{"from": "bad.yaml", "to": "../out"}]}},
        {"id": "e", "query": "q", "answer": "x", "checks": [{"name": "t", "expect": [{"equals": 1}]}] * 51},
    ], sort_keys=False))
    _, problems = read_task_file(path)
    text = "\n".join(problems)
    assert "task 'a': setup.files[0]: no such file or folder" in text
    assert "task 'b': checks[0].expect[0]: give exactly one of equals, contains, pattern, number" in text
    assert "task 'c': answer.strict: strict goes with a number answer" in text
    assert "task 'd': setup.files[0]: 'to' must be a relative path" in text
    assert "task 'e': checks: " in text and "is too long" in text  # at most 50 (a task file is untrusted)
    from jsonschema import Draft202012Validator

    Draft202012Validator(task_schema()).validate(TASKS[0])


def test_set_up_files_come_from_the_task_files_folder_within_bounds(tmp_path: Path, monkeypatch) -> None:
    """A task file is untrusted: it cannot have a file of yours (outside its folder, or through a link)
    copied where a model reads it, nor copy without end."""
    from evals.benchmarks.usertasks import taskfile

    (tmp_path / "secret.txt").write_text("s3cret")
    (tmp_path / "case" / "data").mkdir(parents=True)
    (tmp_path / "case" / "data" / "a.txt").write_text("a")
    (tmp_path / "case" / "linked").mkdir()
    (tmp_path / "case" / "linked" / "key").symlink_to(tmp_path / "secret.txt")
    (tmp_path / "case" / "big").mkdir()
    for i in range(5):
        (tmp_path / "case" / "big" / f"{i}.bin").write_bytes(b"x" * 100)
    monkeypatch.setattr(taskfile, "MAX_SETUP_BYTES", 300)
    taskfile._tree_size.cache_clear()
    path = tmp_path / "case" / "t.yaml"
    path.write_text(yaml.safe_dump([
        {"id": "a", "query": "q", "answer": "x", "setup": {"files": ["../secret.txt", str(tmp_path / "secret.txt")]}},
        {"id": "b", "query": "q", "answer": "x", "setup": {"files": ["linked"]}},
        {"id": "c", "query": "q", "answer": "x", "setup": {"files": ["big"]}},
        {"id": "d", "query": "q", "answer": "x", "setup": {"files": ["data", {"from": "data/a.txt", "to": "b/c.txt"}]}},
    ], sort_keys=False))
    tasks, problems = read_task_file(path)
    text = "\n".join(problems)
    assert text.count("is outside the task file's folder") == 2
    assert "task 'b': setup.files[0]: " + str(tmp_path / "case" / "linked" / "key") + " is a symbolic link to a place outside" in text
    assert "task 'c': setup.files[0]: the task's set-up files pass the bounds" in text
    assert [t.id for t in tasks] == ["d"] and tasks[0].setup_files == (
        (str(tmp_path / "case" / "data"), "data"), (str(tmp_path / "case" / "data" / "a.txt"), "b/c.txt"))
    taskfile._tree_size.cache_clear()


def test_a_yaml_task_file_declares_its_servers_with_env_and_paths_relative_to_it(tmp_path: Path, capsys) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "notes.json").write_text(json.dumps(DATA))
    path = tmp_path / "tasks.yaml"
    path.write_text(yaml.safe_dump({
        "servers": {"notes": {"command": sys.executable, "args": [NOTES_SERVER], "env": {"NOTES_FILE": "./data/${WHICH}.json"}}},
        "tasks": [{k: v for k, v in t.items() if k != "setup"} for t in TASKS if t["id"] == "r1"]}, sort_keys=False))
    # the servers are commands the file would run: refused unless the user trusts the file
    capsys.readouterr()
    assert main(["run", "taskfile", "--tasks", str(path), "--var", "WHICH=notes", "--model", "oracle",
                 "--run-dir", str(tmp_path / "untrusted"), "--no-progress"]) == 2
    refused = capsys.readouterr().err
    assert "declares MCP servers (notes)" in refused and "--trust-task-servers" in refused
    assert not (tmp_path / "untrusted" / "traces.jsonl").exists()
    summary = evals_json(capsys, "run", "taskfile", "--tasks", str(path), "--var", "WHICH=notes", "--model", "oracle",
                         "--trust-task-servers", "--run-dir", str(tmp_path / "r"), "--no-progress", "--json")
    assert summary["metrics"]["answer_accuracy"] == 100.0 and "oracle_failures" not in summary["metrics"]
    path.write_text(path.read_text().replace("servers:", "servers: 3\nnope:"))
    capsys.readouterr()
    assert main(["run", "taskfile", "--tasks", str(path), "--model", "oracle", "--run-dir", str(tmp_path / "r2"), "--no-progress"]) == 2
    assert "holds only 'servers' besides, but it also has nope" in capsys.readouterr().err


def test_per_episode_is_refused_where_there_are_no_episodes_or_no_process_to_start(tmp_path: Path, capsys) -> None:
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"mcpServers": {"notes": {"command": sys.executable, "args": [NOTES_SERVER], "per_episode": True}}}))
    capsys.readouterr()
    assert main(["serve", "--mcp-config", str(config)]) == 2
    assert "per_episode goes with `evals run taskfile`" in capsys.readouterr().err
    config.write_text(json.dumps({"mcpServers": {"r": {"url": "http://127.0.0.1:9/mcp", "per_episode": True}}}))
    tasks = tmp_path / "t.jsonl"
    tasks.write_text(json.dumps({"id": "a", "query": "q", "answer": "x"}) + "\n")
    assert main(["run", "taskfile", "--tasks", str(tasks), "--mcp-config", str(config), "--model", "oracle",
                 "--run-dir", str(tmp_path / "r")]) == 2
    assert "only a stdio server (a command) can be started per episode" in capsys.readouterr().err
