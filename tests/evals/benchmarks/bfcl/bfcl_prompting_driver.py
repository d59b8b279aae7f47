"""Runs BFCL's own prompting inference loop (``BaseHandler.inference``, hence ``inference_multi_turn_prompting``)
with scripted replies, in .ci/bfcl-venv, and prints every request it sends and the result it records.

Run by that venv's python (never imported by the project's tests):
    python bfcl_prompting_driver.py SCRIPT_JSON
``SCRIPT_JSON``: ``{"replies": {entry id: [reply text, ...]}}``, the replies given in order to the entry's
requests; the entries run in that order (a memory scenario's prerequisite conversations first, each leaving
BFCL's memory snapshot for the next, as BFCL's generation orders them). The handler is BFCL's ``OpenAICompletionsHandler`` in prompting mode (``is_fc_model=False``: its own
``_pre_query_processing_prompting``, message handling and ``decode_execute``), with one method of ours: the
API call (``generate_with_backoff``) answers the next scripted reply as a chat completion would. The entries
are BFCL's own (``load_dataset_entry``: its loader, language hints and held-out functions), and the calls run
on BFCL's own backends. Printed on stdout, as JSON: {entry id: {"requests": [[[role, content], ...] per request],
"result": the model result BFCL's handler returns (what it writes to its result file)}}.

The SDKs the handler module imports and are not installed are stand-ins (``bfcl_evaluate_driver``'s).
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bfcl_evaluate_driver import _StandInFinder  # noqa: E402


class _Message(dict):  # a chat completion's message: attribute access, and a dict in the chat history
    def __getattr__(self, name: str) -> Any:
        if name not in self:
            raise AttributeError(name)
        return self[name]


def main() -> None:
    script = json.loads(Path(sys.argv[1]).read_text())
    os.environ.setdefault("BFCL_PROJECT_ROOT", tempfile.mkdtemp(prefix="bfcl-project-"))
    os.environ.setdefault("OPENAI_API_KEY", "placeholder")
    sys.meta_path.append(_StandInFinder())
    out: dict[str, Any] = {}
    with contextlib.redirect_stdout(sys.stderr):  # BFCL prints its progress
        from bfcl_eval.model_handler.api_inference.openai_completion import OpenAICompletionsHandler
        from bfcl_eval.utils import (
            extract_test_category_from_id,
            load_dataset_entry,
            populate_initial_settings_for_memory_test_cases,
        )

        wanted = script["replies"]
        categories = dict.fromkeys(extract_test_category_from_id(i).removesuffix("_prereq") for i in wanted)
        entries = {e["id"]: e for c in categories for e in load_dataset_entry(c) if e["id"] in wanted}
        # memory: the backend's snapshots in a result folder of BFCL's layout, as its generation sets it
        folder = Path(os.environ["BFCL_PROJECT_ROOT"]) / "result" / "scripted"
        populate_initial_settings_for_memory_test_cases(list(entries.values()), folder)
        for entry_id, replies in wanted.items():
            requests: list[Any] = []
            left = list(replies)

            def reply(messages: list[Any], requests: list[Any] = requests, left: list[str] = left,
                      **_: Any) -> Any:
                requests.append([[m["role"], m["content"]] for m in copy.deepcopy(messages)])
                text = left.pop(0)
                response = SimpleNamespace(choices=[SimpleNamespace(message=_Message(role="assistant", content=text))],
                                           usage=SimpleNamespace(prompt_tokens=0, completion_tokens=0))
                return response, 0.0  # as its retry_with_backoff wrapper returns: (response, latency)

            handler = OpenAICompletionsHandler("scripted", 0.0, "scripted", False)
            handler.generate_with_backoff = reply  # type: ignore[method-assign]
            result, _ = handler.inference(copy.deepcopy(entries[entry_id]), False, True)
            out[entry_id] = {"requests": requests, "result": result}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
