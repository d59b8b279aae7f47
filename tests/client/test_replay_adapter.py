"""The replay adapter (client/adapters/replay.py): a request for a conversation the file does not hold names the
user message it looked for and the closest one the file holds, with its line."""

from __future__ import annotations

import json

import pytest

from client.adapters.errors import ModelError
from client.adapters.replay import ReplayAdapter
from client.messages import UserMessage


def _file(tmp_path, users):
    path = tmp_path / "script.jsonl"
    path.write_text("".join(json.dumps({"messages": [{"role": "user", "content": u},
                                                     {"role": "assistant", "content": "ok"}]}) + "\n" for u in users))
    return path


async def test_an_unknown_message_names_the_closest_held_one(tmp_path):
    adapter = ReplayAdapter(str(_file(tmp_path, ["Book a table for two in Paris.", "What is the weather in Rome?",
                                                 "Send the report to Alice."])))
    assert (await adapter.complete([UserMessage("What is the weather in Rome?")], [])).text == "ok"
    with pytest.raises(ModelError) as caught:
        await adapter.complete([UserMessage("What is the weather in Rome today?")], [])
    message = str(caught.value)
    assert "'What is the weather in Rome today?'" in message
    assert "the closest it holds (line 2): 'What is the weather in Rome?'" in message


async def test_a_long_message_is_cut_and_an_empty_file_says_so(tmp_path):
    adapter = ReplayAdapter(str(_file(tmp_path, ["x" * 5000])))
    with pytest.raises(ModelError) as caught:
        await adapter.complete([UserMessage("y" * 5000)], [])
    assert len(str(caught.value)) < 600 and "(line 1)" in str(caught.value)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(ModelError, match="it holds none"):
        await ReplayAdapter(str(empty)).complete([UserMessage("hi")], [])
