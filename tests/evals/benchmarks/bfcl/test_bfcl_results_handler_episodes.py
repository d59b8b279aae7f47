"""Multi-turn, memory and web-search result files of the handlers with a decoding of their own, scored by
``bfcl evaluate`` itself beside ``evals score``: every entry's verdict and error type equal.

The models (BFCL's registry picks each one's handler from the folder's name): Gemini's prompting handler
(each step a text, its ````tool_code`` fence dropped before BFCL's generic decoding), Nemotron's (the text
inside its first ``<TOOLCALL>`` tags; none: no call), Nova's FC handler (each step a list of ``{name:
arguments as an object}``, JSON text read too; anything but a list does not decode) and Gemini's FC handler
(each step iterated, every item's arguments an object; JSON text does not decode). For each, a crafted folder
(``crafted_folder``: a few entries of every multi-turn category, memory questions, web-search questions, each
line one of the shapes below, right and wrong, from the entry's ground truth) is scored by BFCL's
``eval_runner.main`` (.ci/bfcl-venv, ``bfcl_evaluate_driver.py``) and by ``evals score --format bfcl-official``.
BFCL's answers are committed (``fixtures/bfcl_handler_episodes.json``), made by

    EVALS_DATA_DIR=... PYTHONPATH=. python tests/evals/benchmarks/bfcl/test_bfcl_results_handler_episodes.py OUT_DIR

so the comparison holds where the venv is not made (BFCL's replays need its venv's mpmath, as
``test_bfcl_results_episodes.py`` says).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from handler_folders import equal_to_bfcl, equal_to_committed, write_fixture, write_rows

from evals.benchmarks.bfcl.agentic import read_memory
from evals.benchmarks.bfcl.files import MEMORY_SERVED, MULTI_TURN, WEB_SEARCH
from evals.benchmarks.bfcl.multi_turn import gold_steps, read_multi_turn
from evals.benchmarks.bfcl.prompting import oracle_text
from evals.benchmarks.bfcl.web_search import read_web_search

HERE = Path(__file__).parent
FIXTURE = HERE / "fixtures" / "bfcl_handler_episodes.json"

# model (BFCL registry name) -> the shape its steps take
MODELS = {
    "gemini-2.5-flash": "tool-code",  # GeminiHandler, prompting
    "nvidia/llama-3.1-nemotron-ultra-253b-v1": "toolcall",  # NemotronHandler
    "nova-pro-v1.0": "object",  # NovaHandler
    "gemini-2.5-flash-FC": "object-or-one",  # GeminiHandler, FC
}
MULTI_PER_CATEGORY = 6  # each replays BFCL's backends on both sides
AGENTIC_PER_CATEGORY = 14


def _text(kind: str, calls: list[dict[str, Any]]) -> str:
    text = oracle_text(calls, "python", False)
    return {"tool-code": f"```tool_code\n{text}\n```", "toolcall": f"<TOOLCALL>{text}</TOOLCALL>"}[kind]


def _step(kind: str, calls: list[dict[str, Any]], k: int) -> Any:
    """One step holding ``calls`` in the model's shape, right (k == 0) or in another shape (by ``k``)."""
    if kind in ("tool-code", "toolcall"):
        plain = oracle_text(calls, "python", False)
        shapes: list[Any] = [_text(kind, calls), plain, f"```tool_code\n{plain}\n```", f"<TOOLCALL>{plain}</TOOLCALL>",
                             f"<TOOLCALL>{plain}</TOOLCALL> and <TOOLCALL>[]</TOOLCALL>", "<TOOLCALL>oops</TOOLCALL>",
                             [{c["name"]: c["arguments"]} for c in calls], _text(kind, calls)[:-3]]
        return shapes[k % len(shapes)]
    objects = [{c["name"]: c["arguments"]} for c in calls]
    shapes = [objects, [{c["name"]: json.dumps(c["arguments"])} for c in calls], objects[0] if objects else {},
              [{k: v for o in objects for k, v in o.items()}], "I did it.", [objects]]
    return shapes[k % len(shapes)]


def _multi_turn_result(kind: str, gold: list[list[dict[str, Any]]], k: int) -> Any:
    busy = next(i for i, s in enumerate(gold) if s)
    right = [[_step(kind, s, 0), "Done."] if s else ["Nothing to do."] for s in gold]
    if k % 7 == 0:
        return right
    if k % 7 == 1:
        return right[:-1]  # a turn too few
    if k % 7 == 2:
        return "Error during inference: boom"
    if k % 7 == 3:  # the busy turn's calls one step each, in the right shape
        return [[*(_step(kind, [c], 0) for c in s)] if i == busy else r for i, (s, r) in enumerate(zip(gold, right, strict=True))]
    if k % 7 == 4:  # the busy turn's last call dropped
        return [[_step(kind, s[:-1], 0)] if i == busy and len(s) > 1 else r for i, (s, r) in enumerate(zip(gold, right, strict=True))]
    # the busy turn's step in another shape (by k), the right one after it or not
    other = [_step(kind, gold[busy], 1 + (k // 7 + k) % 7)]
    return [[*other, *(r if k % 7 == 5 else [])] if i == busy else r for i, r in enumerate(right)]


def _agentic_result(kind: str, answer: str, k: int) -> Any:
    call = [{"name": "core_memory_list_keys", "arguments": {}}]
    step = _step(kind, call, 0)
    reply = f"It is {answer}."
    prompting = kind in ("tool-code", "toolcall")
    shapes: list[Any] = [
        [[step, reply]], [[reply]], [[step, step]], [[step, _step(kind, call, 1 + k // 13)]], [[step, ""]],
        [[step, [reply]]], "Error during inference: boom", [[reply], [reply]], [[reply, step]],
        [[step, _text(kind, call) if prompting else {}]], [[step, f"<TOOLCALL>{answer}</TOOLCALL>"]],
        [[step, f"```tool_code\n{answer}\n```"]], [[step, None]],
    ]
    return shapes[k % len(shapes)]


def crafted_folder(root: Path, model: str) -> list[str]:
    """result/<model>/... for ``model`` (the module docstring); returns the ids written."""
    kind = MODELS[model]
    folder = root / model.replace("/", "_")
    ids: list[str] = []
    n = 0

    def write(path: Path, rows: list[tuple[str, Any]]) -> None:
        write_rows(path, rows, ids)

    for category in MULTI_TURN:
        rows = []
        for entry in read_multi_turn(category)[:MULTI_PER_CATEGORY]:
            rows.append((entry.id, _multi_turn_result(kind, gold_steps(entry), n)))
            n += 1
        write(folder / "multi_turn" / f"BFCL_v4_{category}_result.json", rows)
    for category in MEMORY_SERVED:
        rows = []
        for memory in read_memory(category)[0][:AGENTIC_PER_CATEGORY]:
            rows.append((memory.id, _agentic_result(kind, memory.answers[0], n)))
            n += 1
        backend = category.removeprefix("memory_")
        write(folder / "agentic" / "memory" / backend / f"BFCL_v4_{category}_result.json", rows)
    for category in WEB_SEARCH:
        rows = []
        for web in read_web_search(category)[:AGENTIC_PER_CATEGORY]:
            rows.append((web.id, _agentic_result(kind, web.answers[0], n)))
            n += 1
        write(folder / "agentic" / f"BFCL_v4_{category}_result.json", rows)
    return ids


def _categories(model: str) -> list[str]:
    return [*MULTI_TURN, *MEMORY_SERVED, *WEB_SEARCH]


@pytest.mark.parametrize("model", list(MODELS))
def test_handler_episodes_get_bfcls_own_verdicts_and_error_types(bfcl_code_data, bfcl_python, model, tmp_path):
    _, summary = equal_to_bfcl(bfcl_python, tmp_path, model, crafted_folder, _categories(model), FIXTURE)
    assert not any("skipped" in w for w in summary.get("warnings") or [])


@pytest.mark.parametrize("model", list(MODELS))
def test_the_committed_handler_episode_verdicts_hold_without_bfcls_venv(bfcl_code_data, model, tmp_path):
    committed = equal_to_committed(tmp_path, model, crafted_folder, FIXTURE)
    kinds = set(committed.values())
    assert {"", "multi_turn:force_terminated", "multi_turn:inference_error", "agentic:answer_not_found",
            "agentic:no_last_message", "agentic:inference_error"} <= kinds, kinds
    assert len({v for k, v in committed.items() if k.startswith("multi_turn")}) >= 4


def main() -> None:
    """Writes the fixture: BFCL's verdicts on every model's crafted folder (the module docstring)."""
    write_fixture(FIXTURE, Path(sys.argv[1]), MODELS, crafted_folder, _categories)


if __name__ == "__main__":
    main()


def test_nemotrons_toolcall_tags_are_found_as_its_regex_finds_them_in_linear_time():
    import random
    import re

    from evals.benchmarks.bfcl.handlers import unwrapped

    rng = random.Random(7)
    pieces = ["<TOOLCALL>", "</TOOLCALL>", "<TOOL", "CALL>", "</", "x", "\n", "[f(a=1)]", "<toolcall>"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(8)))
        match = re.search(r"<TOOLCALL>(.*?)</TOOLCALL>", text, re.DOTALL)
        assert unwrapped("prompting-in-toolcall", text) == (match.group(1) if match else None), text
    # what the regex takes quadratic time on (about 5 s here): many opening tags, no closing one
    assert unwrapped("prompting-in-toolcall", "<TOOLCALL>" * 5000) is None
    with pytest.raises(TypeError):
        unwrapped("prompting-in-toolcall", None)
