"""--matcher rule | response | llm (recorded in the config), judged answers, and `evals score` reusing
the stored judge decisions; the model and the judge are the real `openai` SDK against a local stand-in."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_providers import FakeProviderServer, openai_chat

from evals.cli import main

TOOLS = Path(__file__).resolve().parents[4] / "docs" / "examples" / "family" / "tools"
TASKS = [
    {"id": "m1", "query": "Book restaurant_0001 for two at 19:00.",
     "calls": [{"name": "book_restaurant", "arguments": {"restaurant": "restaurant_0001", "people": 2, "time": "19:00"}}]},
    {"id": "m2", "query": "Text phone_0001: Happy birthday!",
     "calls": [{"name": "send_message", "arguments": {"phone": "phone_0001", "text": "Happy birthday!"}}]},
    {"id": "m3", "query": "Say that the table is booked.", "calls": [],
     "answer": {"type": "judge", "rubric": "Says the table is booked.", "example": "The table is booked."}},
]
MODEL_CALLS = {  # what the model does: m1 leaves out the default time (the rule matcher of a task file fills in
    # schema defaults on both sides, so it matches), m2 writes the text differently (only the judge accepts it)
    "Book restaurant_0001 for two at 19:00.": ("book_restaurant", {"restaurant": "restaurant_0001", "people": 2}),
    "Text phone_0001: Happy birthday!": ("send_message", {"phone": "phone_0001", "text": "happy birthday"}),
}


def respond(body: dict[str, Any]) -> dict[str, Any]:
    system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
    if system.startswith("You judge tool calls"):
        return openai_chat("EQUIVALENT")
    if system.startswith("You grade the final answer"):
        return openai_chat("It does.\nPASS")
    user = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    done = any(m["role"] == "tool" for m in body["messages"])
    if user in MODEL_CALLS and not done:
        return openai_chat(tool_calls=[MODEL_CALLS[user]])
    return openai_chat("Booked, the table is yours.")


@pytest.mark.parametrize(("matcher", "exact", "judged"), [("rule", 200 / 3, False), ("response", 200 / 3, False),
                                                          ("llm", 100.0, True)])
def test_each_matcher_of_the_cascade(tmp_path: Path, capsys, matcher: str, exact: float, judged: bool) -> None:
    tasks = tmp_path / "m.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    run = tmp_path / "run"
    with FakeProviderServer() as fake:
        fake.openai.respond_with(respond)
        argv = ["run", "taskfile", "--tasks", str(tasks), "--tools-dir", str(TOOLS), "--matcher", matcher,
                "--model", "openai:m", "--base-url", fake.openai_base_url, "--api-key-env", "PATH",
                "--run-dir", str(run), "--no-progress", "--json"]
        if judged:
            argv += ["--judge", "openai:judge"]
        capsys.readouterr()
        assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["metrics"]["call_exact_match"] == round(exact, 2)
    assert json.loads((run / "config.json").read_text())["options"]["matcher"] == matcher
    scores = {json.loads(x)["task_id"]: json.loads(x)["score"] for x in (run / "scores.jsonl").open()}
    deciders = [scores[t]["details"]["calls"]["alignment"]["pairs"][0]["decision"]["matcher"] for t in ("m1", "m2")]
    assert deciders == {"rule": ["rule", None], "response": ["rule", None], "llm": ["rule", "llm"]}[matcher]
    reason = scores["m2"]["details"]["calls"]["alignment"]["pairs"][0]["decision"]["reason"]
    if not judged:  # the rejection names the argument and both values
        assert 'text: "happy birthday" (gold "Happy birthday!")' in reason
    if judged:  # the judged answer counts; `evals score` without --judge reuses the stored decisions
        assert summary["metrics"]["answer_accuracy"] == 100.0
        capsys.readouterr()
        assert main(["score", str(run), "--json"]) == 0
        again = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert again["metrics"] == summary["metrics"]
    else:  # no judge: the judged answer is left out (counted as missing), not guessed
        assert "answer_accuracy" not in summary["metrics"]
