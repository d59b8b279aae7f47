"""BFCL's own result files (the ``bfcl-official`` format): what ``bfcl generate`` writes and ``bfcl evaluate`` reads.

BFCL writes one JSON Lines file per category, ``result/<model>/<group>/BFCL_v4_<category>_result.json``
(``<group>``: ``non_live``, ``live``, ...), one line per entry: ``{"id", "result", ...}`` plus token counts,
latency and logs. For a function-calling (``-FC``) model ``result`` is what its handler parsed from the
reply: a list of ``{function name: arguments as JSON text}`` (its tool calls), or the reply's text when it
made none (an inference error is the text ``"Error during inference: ..."``).

Read here (``evals score PATH --format bfcl-official --benchmark bfcl``; PATH a result file or a folder
holding them, e.g. ``result/<model>``), each line is decoded as BFCL's FC handlers' ``decode_ast`` decodes
it: each item's first key is the function, its value is ``json.loads``-ed; when an item cannot be decoded
(not an object, no key, a value that is not JSON text) the whole entry does not decode. A text decodes to
no call. The calls are then scored by :mod:`.checker` like a run's, so an imported file gets BFCL's
verdicts (names compared with ``.`` as ``_``, as for every FC model whose config sets
``underscore_to_dot``). A prompting (non-FC) model's ``result`` is text to be parsed as Python calls:
that parser is not reproduced; such texts count as replies without a call, with a warning.

The run covers the entries the files hold (``--partial-eval``'s reading); a category with fewer
lines than BFCL has entries makes the run a subset (not comparable with the leaderboard), and a
grouped score appears only when every category it needs is in the files (:mod:`.scores`).
Malformed input is refused with ``FILE:LINE``: a line that is not JSON, has no string ``id`` or no
``result``, an id of another category or that the category does not have, an id given twice.

Multi-turn and memory files (``result/<model>/multi_turn/``, ``result/<model>/agentic/memory/<backend>/``)
hold what BFCL's ``inference_multi_turn_FC`` records: ``result`` is, per user turn, the model's steps
(one per response), each the decoded calls (a list of ``{name: arguments as JSON text}``) or the reply's
text; an inference error is the error's text. Each step is decoded as BFCL's eval runner decodes it
with an FC handler's ``decode_execute`` (``convert_to_function_call``: a lone object is one item;
every key of an item is a call; a text value is ``json.loads``-ed and must give an object; anything
else does not decode), and it is scored as a live episode is:

* multi-turn: a ``result`` that is not a list is ``multi_turn:inference_error`` (the episode is
  recorded as failed); each turn keeps only its steps that decode to at least one call, in the shape
  :func:`.multi_turn_episode.turns_from_trace` reads (a turn that is a text or an object has no such
  step, as BFCL iterates it); fewer turns than the ground truth is ``force_terminated``; the calls
  then run again on fresh backends (:mod:`.multi_turn_checker`);
* memory: a ``result`` that is not a list of one turn is ``agentic:inference_error``; otherwise the
  last step that does not decode to a call is the checked message (a list: its first item; anything
  not a text: as Python's ``str`` writes it), none when that step is empty (``no_last_message``). The
  prerequisite conversations' files (``BFCL_v4_memory_<backend>_prereq_result.json``) are skipped, as
  ``bfcl evaluate`` skips them.

A turn or step BFCL's runner cannot iterate (a number, ``null``) is refused with ``FILE:LINE``: BFCL's
own evaluation stops there.

``evals export RUN --format bfcl-official [--model-name NAME]`` writes a run's calls in the same shapes, for
BFCL's own ``bfcl evaluate`` (:mod:`.export`: the model folder, token counts and latency, prompting text).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .agentic import read_memory
from .data import load_entries
from .files import MEMORY_SERVED, MULTI_TURN, REFUSED, SINGLE_TURN, served_name
from .multi_turn import load_multi_turn

if TYPE_CHECKING:

    from ...core.formats import ImportedPredictions

__all__ = ["FORMAT", "decode_result", "decode_step", "last_message", "read_results",
           "result_lines"]

FORMAT = "bfcl-official"
FILE_NAME = re.compile(r"BFCL_v4_(\w+?)_result\.json")
_GROUPS = frozenset({"non_live", "live", "multi_turn", "agentic", "format_sensitivity"})
READ = SINGLE_TURN + MULTI_TURN + MEMORY_SERVED  # the categories whose result files are read
_NOT_ITERABLE = "BFCL's eval runner cannot iterate it"


def decode_result(result: Any) -> tuple[list[dict[str, Any]], str | None]:
    """``(calls, text)``: the calls as BFCL's FC ``decode_ast`` reads ``result`` (``{"name", "arguments",
    "turn": 1}``; ``arguments`` None for every call when one item does not decode), and the reply's text
    when ``result`` is a text."""
    if isinstance(result, str):
        return [], result
    if not isinstance(result, list):
        return [], None  # not iterable as BFCL iterates it (or a dict of keys): it does not decode to a call
    calls: list[dict[str, Any]] = []
    decodes = True
    for item in result:
        arguments: Any = None
        name = ""
        if isinstance(item, dict) and item:
            name, text = next(iter(item.items()))
            try:
                arguments = json.loads(text) if isinstance(text, str) else None
                decodes = decodes and isinstance(text, str)
            except ValueError:
                decodes = False
        else:
            decodes = False
        calls.append({"name": served_name(str(name)), "arguments": arguments, "turn": 1})
    if not decodes:  # BFCL's decoding raises: no call of the entry is read
        for call in calls:
            call["arguments"] = None
    return calls, None


def decode_step(step: Any) -> list[dict[str, Any]] | None:
    """One step of a multi-turn or memory result as BFCL's FC ``decode_execute`` decodes it
    (``convert_to_function_call``): its calls ``{"name", "arguments"}`` (``[]``: none), or None when
    the decoding raises."""
    items = [step] if isinstance(step, dict) else step
    if isinstance(items, str):
        return [] if not items else None  # a text's characters are not call objects
    if not isinstance(items, list):
        return None
    calls = []
    for item in items:
        if not isinstance(item, dict):
            return None
        for name, value in item.items():
            if isinstance(value, str):
                try:
                    value = json.loads(value)
                except ValueError:
                    return None
            if not isinstance(value, dict):
                return None
            calls.append({"name": name, "arguments": value})
    return calls


def _iterated(value: Any, where: str, what: str) -> list[Any]:
    """``value`` as BFCL's runner iterates it (a text: its characters; an object: its keys)."""
    if isinstance(value, str | dict | list):
        return list(value)
    raise ValueError(f"{where}: {what} is {json.dumps(value)}, not a list ({_NOT_ITERABLE})")


def _turns(result: Any, where: str) -> list[list[list[dict[str, Any]]]] | None:
    """A multi-turn ``result`` as the per-turn steps with calls (None: not a list, an inference error)."""
    if not isinstance(result, list):
        return None
    turns = []
    for index, turn in enumerate(result):
        steps = [decode_step(step) for step in _iterated(turn, where, f"turn {index}")]
        turns.append([s for s in steps if s])
    return turns


def last_message(result: Any, where: str) -> tuple[bool, str | None]:
    """A memory ``result`` as ``(inference error, the checked message)`` (module docstring); the
    message is None when there is none."""
    if not isinstance(result, list) or len(result) != 1:
        return True, None
    last: Any = None
    for step in _iterated(result[0], where, "the question's turn"):
        if not decode_step(step):
            last = step
    if not last:
        return False, None
    message = last[0] if isinstance(last, list) else last
    return False, message if isinstance(message, str) else str(message)


def _files(path: Path) -> list[Path]:
    if path.is_file():
        if not FILE_NAME.fullmatch(path.name):
            raise ValueError(f"{path}: not a BFCL result file (BFCL_v4_<category>_result.json)")
        return [path]
    found = sorted(p for p in path.rglob("BFCL_v4_*_result.json") if FILE_NAME.fullmatch(p.name))
    if not found:
        raise ValueError(f"{path}: no BFCL result file (BFCL_v4_<category>_result.json) in this folder")
    return found


def _model_of(path: Path) -> str:
    parent = path.parent
    if parent.parent.name == "memory" and parent.parent.parent.name == "agentic":
        return parent.parent.parent.parent.name  # result/<model>/agentic/memory/<backend>/
    return parent.parent.name if parent.name in _GROUPS else parent.name


def _known(categories: Sequence[str]) -> dict[str, str]:
    """Every entry id of ``categories`` -> its category."""
    known = {e.id: e.category for e in load_entries(tuple(c for c in SINGLE_TURN if c in categories))}
    known.update((e.id, e.category) for e in load_multi_turn(tuple(c for c in MULTI_TURN if c in categories)))
    for category in (c for c in MEMORY_SERVED if c in categories):
        known.update((e.id, e.category) for e in read_memory(category)[0])
    return known


def _trace(entry_id: str, category: str, result: Any, where: str, source: str) -> tuple[dict[str, Any], str | None]:
    """One line's trace, and the reply's text when it is a single-turn text."""
    from ...core.formats import imported_trace

    outcome: dict[str, Any] = {"category": category, "bfcl_result": result}
    if category in SINGLE_TURN:
        calls, text = decode_result(result)
        return imported_trace(entry_id, {**outcome, "calls": calls}, final_answer=text, source=source), text
    if category in MULTI_TURN:
        turns = _turns(result, where)
        trace = imported_trace(entry_id, {**outcome, "turns": turns}, source=source)
        failed, shape = turns is None, "a list of turns"
    else:
        failed, message = last_message(result, where)
        trace = imported_trace(entry_id, {**outcome, "stop": "max_turns" if message is None else "final_answer",
                                          "bfcl_last_message": message}, final_answer=message, source=source)
        shape = "a list of one turn"
    if failed:  # BFCL's inference_error: recorded as a failed episode, as a live one is
        trace.update(status="errored", error={"type": "InferenceError", "retryable": False,
                                              "message": f"BFCL's result is not {shape}: {str(result)[:300]}"})
    return trace, None


def read_results(path: Path) -> ImportedPredictions:
    """BFCL result files (a file, or every one under a folder) as traces (see the module docstring)."""
    from ...core.formats import ImportedPredictions

    files = []
    categories = []
    for file in _files(path):
        category = FILE_NAME.fullmatch(file.name).group(1)  # type: ignore[union-attr]
        if category.endswith("_prereq") and category.removesuffix("_prereq") in MEMORY_SERVED:
            continue  # the prerequisite conversations (BFCL_v4_memory_<backend>_prereq_result.json): not scored
        if category in REFUSED:
            raise ValueError(f"{file}: BFCL category {category!r} is not served here: {REFUSED[category]}")
        if category not in READ:
            raise ValueError(f"{file}: {category!r} is no BFCL v4 category read here (read: {', '.join(READ)})")
        files.append(file)
        categories.append(category)
    if not files:
        raise ValueError(f"{path}: only prerequisite conversations, no scored BFCL result file")
    known = _known(categories)
    traces: dict[str, dict[str, Any]] = {}
    seen: dict[str, str] = {}
    texts: list[str] = []
    for file, category in zip(files, categories, strict=True):
        for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            where = f"{file}:{number}"
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise ValueError(f"{where}: not JSON ({exc})") from None
            if not isinstance(row, dict) or not isinstance(row.get("id"), str):
                raise ValueError(f"{where}: not a BFCL result line (a JSON object with a string 'id')")
            entry_id = row["id"]
            if "result" not in row:
                raise ValueError(f"{where}: entry {entry_id!r} has no 'result'")
            if known.get(entry_id) != category:
                raise ValueError(f"{where}: {entry_id!r} is not an entry of BFCL v4's {category} (the file's category)")
            if entry_id in seen:
                raise ValueError(f"{where}: entry {entry_id!r} is given twice (first at {seen[entry_id]})")
            seen[entry_id] = where
            traces[entry_id], text = _trace(entry_id, category, row["result"], where, str(file))
            if text is not None and text.strip() and not text.startswith("Error during inference"):
                texts.append(where)
    warnings = []
    if texts:
        shown = ", ".join(texts[:5]) + (f", ... ({len(texts)} in all)" if len(texts) > 5 else "")
        warnings.append(f"{len(texts)} results are a text, not tool calls ({shown}): scored as BFCL scores an FC "
                        "model's reply without a call; a prompting (non-FC) model's calls written as text are not "
                        "decoded here")
    chosen = [c for c in READ if c in categories]
    return ImportedPredictions(traces=traces, strategy="fc", options={"category": chosen},
                               model=_model_of(files[0]), warnings=tuple(warnings))


CallsOf = Callable[[Mapping[str, Any]], list[tuple[str, Any]]]  # a trace -> the scored calls (the plugin's)


def result_lines(traces: Mapping[str, Mapping[str, Any]], ids: Sequence[str], calls_of: CallsOf) -> list[dict[str, Any]]:
    """A run's entries as BFCL result lines ``{"id", "result"}``: the scored calls (``calls_of``) with their
    arguments as JSON text (a call whose arguments were not JSON: its text as sent, else ``""``), or the
    final answer's text when the model made no call."""
    out = []
    for entry_id in ids:
        trace = traces.get(entry_id)
        if trace is None:
            continue
        calls = calls_of(trace)
        raw = [c for c in (trace.get("outcome") or {}).get("calls") or [] if isinstance(c, dict)]
        if calls:
            result: Any = []
            for (name, arguments), original in zip(calls, raw, strict=False):
                sent = original.get("arguments")
                text = json.dumps(arguments) if arguments is not None else (sent if isinstance(sent, str) else "")
                result.append({name: text})
        else:
            result = str(trace.get("final_answer") or (trace.get("error") or {}).get("message") or "")
        out.append({"id": entry_id, "result": result})
    return out


def _step_result(step: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """One response's calls as BFCL records them (arguments that were not JSON: ``""``, which does not decode)."""
    return [{str(c.get("name")): json.dumps(c["arguments"]) if isinstance(c.get("arguments"), dict) else ""}
            for c in step]


def episode_result(trace: Mapping[str, Any], category: str) -> Any:
    """A multi-turn or memory episode's ``result`` as BFCL's ``inference_multi_turn_FC`` records it:
    per turn, the responses with calls (and, for memory, the final reply's text after them); a failed
    episode: its error's text. An imported trace's own ``result`` is written back as it was."""
    from .multi_turn_episode import response_steps, turns_from_trace

    outcome = trace.get("outcome") or {}
    if "bfcl_result" in outcome:
        return outcome["bfcl_result"]
    if trace.get("status") != "completed":
        return f"Error during inference: {(trace.get('error') or {}).get('message') or 'the episode failed'}"
    if category in MULTI_TURN:
        return [[_step_result(step) for step in turn] for turn in turns_from_trace(trace) or []]
    steps: list[Any] = [_step_result(step) for step in response_steps(outcome.get("calls") or [])]
    if outcome.get("stop") == "final_answer":
        steps.append(str(trace.get("final_answer") or ""))
    return [steps]
