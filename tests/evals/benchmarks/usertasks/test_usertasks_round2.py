"""Issue 37 items 2, 5, 6 and 8: arguments matched as a person would (schema defaults, per-argument
rules, a reason naming the argument), ``replay:`` listed in ``--model``'s help, ``${NAME}`` variables
in task files (``--var``, the environment as a digest in config.json, undefined ones at their line),
and every task-file problem plus unknown tool names with a did-you-mean in one pass, before anything runs."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from evals.benchmarks.usertasks.taskfile import load_task_file
from evals.cli import main
from tool_specs.argument_matching import param_matches
from tool_specs.matching import RuleMatcher, argument_cost, decide

LOG_SCHEMA = {"type": "object", "properties": {"repo_path": {"type": "string"}, "max_count": {"type": "integer", "default": 10},
                                               "ratio": {"type": "number"}, "who": {"type": "string"}}}
TOOLS = Path(__file__).resolve().parents[4] / "docs" / "examples" / "family" / "tools"


def decide_rule(pred: dict[str, Any], gold: dict[str, Any]) -> Any:
    import asyncio

    matcher = RuleMatcher(lambda _n: LOG_SCHEMA, fill_defaults=True, argument_rules=True)
    return asyncio.run(decide(pred, gold, [matcher]))


# ---- item 2 ------------------------------------------------------------------------------------
def test_rule_matcher_fills_schema_defaults_applies_per_argument_rules_and_names_the_argument() -> None:
    gold = {"name": "git_log", "arguments": {"repo_path": "/r"}}
    assert decide_rule({"name": "git_log", "arguments": {"repo_path": "/r", "max_count": 10}}, gold).matched
    assert decide_rule({"name": "git_log", "arguments": {"repo_path": "/r"}},
                       {"name": "git_log", "arguments": {"repo_path": "/r", "max_count": "10"}}).matched
    other = decide_rule({"name": "git_log", "arguments": {"repo_path": "/r", "max_count": 20}}, gold)
    assert not other.matched and 'max_count: 20 (gold 10)' in other.reason
    # a trailing slash is a different argument unless the gold call says the argument is a path
    slash = {"name": "git_log", "arguments": {"repo_path": "/r/"}}
    missed = decide_rule(slash, gold)
    assert not missed.matched and 'repo_path: "/r/" (gold "/r")' in missed.reason
    rules = {"repo_path": "path", "who": ["case", "whitespace"], "ratio": {"tolerance": 0.01}}
    assert decide_rule(slash, {**gold, "match": rules}).matched
    assert decide_rule({"name": "git_log", "arguments": {"repo_path": "/r//./", "who": " ADA  Lovelace", "ratio": 0.505}},
                       {"name": "git_log", "arguments": {"repo_path": "/r", "who": "ada lovelace", "ratio": 0.5}, "match": rules}).matched
    assert not decide_rule({"name": "git_log", "arguments": {"repo_path": "/r", "ratio": 0.52}},
                           {"name": "git_log", "arguments": {"repo_path": "/r", "ratio": 0.5}, "match": rules}).matched
    assert param_matches({"repo_path": "/r/"}, {"repo_path": "/r"}, LOG_SCHEMA, rules={"repo_path": ["path"]}) == {"repo_path": True}
    # the options are off by default: the built-in benchmarks' checkers keep their official rule
    assert not __import__("asyncio").run(decide(slash | {"arguments": {"repo_path": "/r", "max_count": 10}}, gold,
                                                [RuleMatcher(lambda _n: LOG_SCHEMA)])).matched
    assert argument_cost(lambda _n: LOG_SCHEMA, fill_defaults=True)({"name": "git_log", "arguments": {"repo_path": "/r", "max_count": 10}}, gold) == 0.0


def test_a_task_file_run_counts_an_explicit_default_and_a_declared_path_rule_as_exact(tmp_path: Path, capsys) -> None:
    from fake_providers import FakeProviderServer, openai_chat

    tasks = [
        {"id": "d", "query": "Book restaurant_0001 for two at 19:00.",  # 19:00 is the schema default of time
         "calls": [{"name": "book_restaurant", "arguments": {"restaurant": "restaurant_0001", "people": 2}}]},
        {"id": "p", "query": "Text phone_0001: hi",
         "calls": [{"name": "send_message", "arguments": {"phone": "phone_0001", "text": "hi"}, "match": {"text": ["case"]}}]},
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    said = {"Book restaurant_0001 for two at 19:00.": ("book_restaurant", {"restaurant": "restaurant_0001", "people": 2, "time": "19:00"}),
            "Text phone_0001: hi": ("send_message", {"phone": "phone_0001", "text": "HI"})}

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        user = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
        done = any(m["role"] == "tool" for m in body["messages"])
        return openai_chat("Done.") if done else openai_chat(tool_calls=[said[user]])

    with FakeProviderServer() as fake:
        fake.openai.respond_with(respond)
        capsys.readouterr()
        assert main(["run", "taskfile", "--tasks", str(path), "--tools-dir", str(TOOLS), "--model", "openai:m",
                     "--base-url", fake.openai_base_url, "--api-key-env", "PATH", "--run-dir", str(tmp_path / "run"),
                     "--no-progress", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["metrics"]["call_exact_match"] == 100.0 and summary["metrics"]["argument_accuracy"] == 100.0


# ---- item 5 ------------------------------------------------------------------------------------
def test_model_help_lists_the_replay_scripted_model(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["run", "taskfile", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "replay:FILE" in text


# ---- item 6 ------------------------------------------------------------------------------------
def test_variables_substitute_from_var_and_environment_and_config_records_a_digest(tmp_path: Path, capsys, monkeypatch) -> None:
    path = tmp_path / "v.yaml"
    path.write_text("- id: a\n  query: Book ${PLACE} for ${N} people.\n"
                    "  calls: [{name: book_restaurant, arguments: {restaurant: '${PLACE}', people: 2}}]\n"
                    "  answer: {type: exact, value: 'Booked ${PLACE}.', example: 'Booked ${PLACE}.'}\n"
                    "- id: b\n  query: Literal $${PLACE} stays.\n  answer: x\n")
    monkeypatch.setenv("N", "2")
    tasks = load_task_file(path, {"PLACE": "restaurant_0001", "N": "2"}.get)
    assert tasks[0].query == "Book restaurant_0001 for 2 people." and tasks[0].calls is not None
    assert tasks[0].calls[0].arguments["restaurant"] == "restaurant_0001" and tasks[0].answer == {
        "type": "exact", "value": "Booked restaurant_0001.", "example": "Booked restaurant_0001."}
    assert tasks[1].query == "Literal ${PLACE} stays."
    capsys.readouterr()
    assert main(["run", "taskfile", "--tasks", str(path), "--tools-dir", str(TOOLS), "--var", "PLACE=restaurant_0001",
                 "--allow-env", "N", "--model", "oracle", "--run-dir", str(tmp_path / "run"), "--no-progress", "--json"]) == 0
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["options"]["var"] == ["PLACE=restaurant_0001"]
    assert config["variables"] == {"PLACE": {"from": "--var", "value": "restaurant_0001"},
                                   "N": {"from": "environment", "sha256": hashlib.sha256(b"2").hexdigest()}}
    assert "\"2\"" not in json.dumps(config["variables"])


def test_an_undefined_or_secret_like_variable_is_a_file_line_error_exit_2(tmp_path: Path, capsys, monkeypatch) -> None:
    path = tmp_path / "u.jsonl"
    path.write_text(json.dumps({"id": "a", "query": "hi", "answer": "x"}) + "\n"
                    + json.dumps({"id": "b", "query": "at ${NOPE_NOT_SET}", "answer": "x"}) + "\n"
                    + json.dumps({"id": "c", "query": "key ${MY_API_KEY}", "answer": "x"}) + "\n")
    monkeypatch.delenv("NOPE_NOT_SET", raising=False)
    monkeypatch.setenv("MY_API_KEY", "sk-do-not-write")
    capsys.readouterr()
    assert main(["run", "taskfile", "--tasks", str(path), "--model", "oracle", "--run-dir", str(tmp_path / "r"),
                 "--no-progress"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"{path}:2: task 'b': query: ${{NOPE_NOT_SET}} is not defined" in err
    assert f"{path}:3: task 'c': query: ${{MY_API_KEY}} looks like a secret" in err and "sk-do-not-write" not in err
    assert "Traceback" not in err and not (tmp_path / "r").exists()
    with pytest.raises(SystemExit) as bad:  # argparse: exit 2 with the flag's one-line error
        main(["run", "taskfile", "--tasks", str(path), "--var", "1BAD=x", "--model", "oracle", "--run-dir", str(tmp_path / "r")])
    assert bad.value.code == 2 and "'1BAD' is not a variable name" in capsys.readouterr().err
    # a secret-like name given with --var is refused too: config.json would hold it (nothing is written)
    with pytest.raises(SystemExit) as bad:
        main(["run", "taskfile", "--tasks", str(path), "--var", "MY_API_KEY=sk-given-on-the-line", "--model", "oracle",
              "--run-dir", str(tmp_path / "r2")])
    err = capsys.readouterr().err
    assert bad.value.code == 2 and "'MY_API_KEY' looks like a secret's name" in err and "sk-given-on-the-line" not in err
    assert not (tmp_path / "r2").exists()


def test_mcp_server_command_lines_expand_variables(tmp_path: Path) -> None:
    from evals.benchmarks.usertasks.sources import mcp_sources

    (tmp_path / "c.json").write_text(json.dumps({"mcpServers": {"git": {"command": "mcp-server-git", "args": ["-r", "${REPO}"],
                                                                        "env": {"X": "${REPO}"}}}}))
    got = mcp_sources({"mcp_config": str(tmp_path / "c.json"), "mcp_server": "t=mcp-server-time --tz ${TZ_NAME}"},
                      {"REPO": "/r", "TZ_NAME": "UTC"}.get)
    assert got[0].args == ("-r", "/r") and got[0].env == {"X": "/r"} and got[1].args[-1] == "UTC"  # env too (issue 49)
    with pytest.raises(ValueError, match=r"--mcp-server: \$\{TZ_NAME\} is not defined"):
        mcp_sources({"mcp_server": "t=mcp-server-time --tz ${TZ_NAME}"}, {}.get)


# ---- item 8 ------------------------------------------------------------------------------------
def test_every_problem_and_unknown_tool_names_with_suggestions_in_one_pass(tmp_path: Path, capsys) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(json.dumps(t) for t in [
        {"id": "a", "query": "q", "calls": [{"name": "book_restaurant", "argumentz": {}}]},  # a schema error
        {"id": "a", "query": "q", "calls": [{"name": "send_message", "arguments": {"phone": "p", "text": "t"}}]},  # same id
        {"id": "c", "query": "q", "calls": [{"name": "book_restaurnat", "arguments": {}}]},  # misspelt tool
        {"id": "d", "query": "q", "tools": ["send_mesage"], "answer": "x"},  # misspelt tool in the list
        {"id": "e", "query": "q", "calls": [{"name": "send_message", "arguments": {"phone": "p"}, "match": {"phnoe": "case"}}]},
    ]) + "\n")
    capsys.readouterr()
    assert main(["run", "taskfile", "--tasks", str(path), "--tools-dir", str(TOOLS), "--model", "oracle",
                 "--run-dir", str(tmp_path / "r"), "--no-progress"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "argumentz" in err
    assert f"{path}:2: task 'a': id: task id 'a' is used twice (first at line 1)" in err
    assert f"{path}:3: task 'c': calls[0].name: tool 'book_restaurnat' is offered by no tool source. Did you mean 'book_restaurant'?" in err
    assert f"{path}:4: task 'd': tools[0]: tool 'send_mesage' is offered by no tool source. Did you mean 'send_message'?" in err
    assert f"{path}:5: task 'e': calls[0].match.phnoe: a rule for 'phnoe'" in err and "Did you mean 'phone'?" in err
    assert "Traceback" not in err and not (tmp_path / "r").exists()


def test_unknown_tool_names_alone_are_reported_before_anything_runs(tmp_path: Path, capsys) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("- id: a\n  query: q\n  calls:\n    - name: kg_neighbours\n      arguments: {entity: Maya}\n")
    capsys.readouterr()
    assert main(["run", "taskfile", "--tasks", str(path), "--tools-dir", str(TOOLS), "--model", "oracle",
                 "--run-dir", str(tmp_path / "r"), "--no-progress"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"{path}:4: task 'a': calls[0].name: tool 'kg_neighbours' is offered by no tool source." in err
    assert not list((tmp_path / "r").glob("traces*"))
