"""BFCL's own result files (the ``bfcl-official`` format): what ``bfcl generate`` writes and ``bfcl evaluate`` reads.

BFCL writes one JSON Lines file per category, ``result/<model>/<group>/BFCL_v4_<category>_result.json``
(``<group>``: ``non_live``, ``live``, ...), one line per entry: ``{"id", "result", ...}`` plus token counts,
latency and logs. For a function-calling (``-FC``) model ``result`` is what its handler parsed from the
reply: a list of ``{function name: arguments as JSON text}`` (its tool calls), or the reply's text when it
made none (an inference error is the text ``"Error during inference: ..."``).

Read here (``evals score PATH --format bfcl-official --benchmark bfcl``; PATH a result file or a folder
holding them, e.g. ``result/<model>``), each single-turn line is decoded as the model's handler decodes it
(:mod:`.handlers`: the model folder's name picks the handler through BFCL's own registry, read from the
wheel; ``--bfcl-model`` names a model or a kind when BFCL does not know the folder): FC with arguments as
JSON text, FC with arguments as objects, or prompting (the text parsed by BFCL's own decoders, each
format_sensitivity entry in its configuration's format). What the decoding raises is BFCL's
``decoder_failed``, a value that is not a list of ``{name: {arguments}}`` its ``decoder_wrong_output_format``;
the calls, names as the model wrote them, are then scored by :mod:`.checker` with the model's
``underscore_to_dot`` (only the expected names are rewritten). A folder of two models is refused naming
both; files of categories not read here are listed in a warning and skipped; when most of a file's
results do not decode, a warning names the file and the shape expected.

The run covers the entries the files hold (``--partial-eval``'s reading); a category with fewer
lines than BFCL has entries makes the run a subset (not comparable with the leaderboard), and a
grouped score appears only when every category it needs is in the files (:mod:`.scores`).
Malformed input is refused with ``FILE:LINE``: a line that is not JSON (or nested too deeply to read),
has no string ``id`` or no ``result``, an id of another category or that the category does not have, an
id given twice.

Multi-turn and memory files (``result/<model>/multi_turn/``, ``result/<model>/agentic/memory/<backend>/``),
for an FC model with JSON-text arguments, hold what BFCL's ``inference_multi_turn_FC`` records: ``result`` is, per user turn, the model's steps
(one per response), each the decoded calls (a list of ``{name: arguments as JSON text}``) or the reply's
text; an inference error is the error's text. Each step is decoded as BFCL's eval runner decodes it
with an FC handler's ``decode_execute`` (``convert_to_function_call``: a lone object is one item;
every key of an item is a call; a text value is ``json.loads``-ed and must give an object; anything
else does not decode), and it is scored as a live episode is:

* multi-turn: a ``result`` that is not a list is ``multi_turn:inference_error`` (the episode is
  recorded as failed); each turn keeps only its steps that decode to at least one call, in the shape
  :func:`.multi_turn_episode.turns_from_trace` reads (a turn that is a text or an object has no such
  step, as BFCL iterates it); fewer turns than the ground truth is ``force_terminated``; the calls
  then run again on fresh backends (:mod:`.multi_turn_checker`). A generic prompting model's multi-turn
  file (each step the reply's text) is read the same way, each step decoded by BFCL's own
  ``default_decode_execute_prompting`` (:func:`.prompting_turns.decode_execute`) and replayed as the
  texts it gives (so are a generic prompting model's memory and web-search files). Every other handler's
  steps are decoded as its own ``decode_execute`` does (:func:`_step_decoder`): Gemini's and Nemotron's
  prompting text unwrapped first (:func:`.handlers.unwrapped`); Nova's and Mistral-FC's only a list;
  Gemini-FC's iterated, objects only; a handler with a decoder of its own by that method
  (:func:`.decoder_guard.own_step`);
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

import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from client.runs import dumps_line

from ...core.formats import has_lone_surrogate, imported_trace, surrogate_free
from .agentic import read_memory
from .backend_host import prestart
from .checker import drop_handed, hand_over
from .data import load_entries
from .decoder_guard import json_arguments  # a prompting text's bytes or complex values: as their repr
from .files import (
    FORMAT,
    FORMAT_SENSITIVITY,
    MEMORY_SERVED,
    MEMORY_VECTOR,
    MULTI_TURN,
    REFUSED,
    SINGLE_TURN,
    WEB_SEARCH,
)
from .format_sensitivity import format_sensitivity_ids
from .handlers import (
    Decoding,
    Undecodable,
    config_format,
    decode,
    decoding_for,
    fc_format,
    language_format,
    own_handler,
    split_calls,
    unwrapped,
)
from .multi_turn import MultiTurnEntry, load_multi_turn
from .multi_turn_checker import cancel_prefetch, prefetch

if TYPE_CHECKING:

    from ...core.formats import ImportedPredictions, OfficialLines
    from .results_split import Row, VerdictOf

__all__ = ["FORMAT", "decode_result", "decode_step", "last_message", "read_results",
           "result_lines"]

FILE_NAME = re.compile(r"BFCL_v4_(\w+?)_result\.json")
_GROUPS = frozenset({"non_live", "live", "multi_turn", "agentic", "format_sensitivity"})
AGENTIC = (*MEMORY_SERVED, MEMORY_VECTOR, *WEB_SEARCH)  # each read as one turn's steps, its last message checked
READ = SINGLE_TURN + MULTI_TURN + AGENTIC  # the categories whose result files are read
_NOT_ITERABLE = "BFCL's eval runner cannot iterate it"
FC_TEXT = Decoding("fc-json-text", True, "an FC model with JSON-text arguments", "fc-json-text")


def decode_result(result: Any, decoding: Decoding = FC_TEXT, category: str = "simple_python",
                  config: str | None = None) -> tuple[list[dict[str, Any]], str, str | None]:
    """``(calls, status, text)``: ``result`` decoded as the model's handler decodes it (:mod:`.handlers`);
    ``status`` is ``ok`` (the calls, ``{"name", "arguments", "turn": 1}``, names as the model wrote them),
    ``failed`` (the decoding raised: BFCL's ``decoder_failed``) or ``wrong_format`` (it gave something that
    is not a list of ``{name: {arguments}}``); ``text`` is ``result`` when it is a text. ``config``: a
    format_sensitivity entry's configuration (its return format and tags)."""
    text = result if isinstance(result, str) else None
    fmt, tag = language_format(category), False
    if config is not None:
        fmt, tag = config_format(config)
    try:
        decoded = decode(decoding, result, fmt, tag)
    except Undecodable:
        return [], "failed", text
    if not fc_format(decoded):
        return [], "wrong_format", text
    calls: list[dict[str, Any]] = []
    for name, arguments in split_calls(decoded):
        call = {"name": name, "arguments": json_arguments(arguments)[0], "turn": 1}
        tuples = sorted(k for k, v in arguments.items() if type(v) is tuple) if isinstance(arguments, dict) else []
        if tuples:  # Python's (a, b): a list in the trace's JSON, a tuple to BFCL's checker (single_turn.calls_from_trace)
            call["tuple_params"] = tuples
        calls.append(call)
    return calls, "ok", text


def decode_step(step: Any) -> list[dict[str, Any]] | None:
    """One step of a multi-turn or memory result as BFCL's FC ``decode_execute`` decodes it
    (``convert_to_function_call``): its calls ``{"name", "arguments"}`` (``[]``: none), or None when
    the decoding raises."""
    items = [step] if isinstance(step, dict) else step
    if isinstance(items, str):
        return [] if not items else None  # a text's characters are not call objects
    if not isinstance(items, list):
        return None
    return _calls(items, json_text=True)


def _calls(items: Iterable[Any], json_text: bool) -> list[dict[str, Any]] | None:
    """Every ``{name: arguments}`` of every item a call (``json_text``: a text value ``json.loads``-ed first);
    None where an item is not an object or arguments are not one (BFCL's decoding raises there)."""
    calls = []
    for item in items:
        if not isinstance(item, dict):
            return None
        for name, value in item.items():
            if json_text and isinstance(value, str):
                try:
                    value = json.loads(value)
                except (ValueError, RecursionError):  # BFCL's runner skips a step whose decoding raises
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


def _step_decoder(decoding: Decoding) -> Callable[[Any], list[dict[str, Any]] | None]:
    """How a step of a multi-turn, memory or web-search result is decoded: as the model's handler's
    ``decode_execute`` decodes it (module docstring)."""
    if decoding.handler:  # the handler's own decode_execute (:mod:`.decoder_guard`)
        from .decoder_guard import own_step

        return functools.partial(own_step, own_handler(decoding))
    if decoding.prompting:
        from .prompting_turns import decode_execute

        if decoding.kind == "prompting":
            return decode_execute
        return functools.partial(_unwrapped_step, decoding.kind, decode_execute)
    return {"fc-object": _object_step, "fc-object-or-one": _gemini_fc_step}.get(decoding.kind, decode_step)


def _unwrapped_step(kind: str, decode_execute: Callable[[Any], list[dict[str, Any]] | None],
                    step: Any) -> list[dict[str, Any]] | None:
    """A step of Gemini's or Nemotron's prompting handler: its text unwrapped as the handler does
    (:func:`.handlers.unwrapped`: none inside ``<TOOLCALL>`` tags is no call), then BFCL's generic decoding."""
    try:
        text = unwrapped(kind, step)
    except Exception:  # noqa: BLE001 - the handler raises on a value that is not a text: BFCL skips the step
        return None
    return [] if text is None else decode_execute(text)


def _object_step(step: Any) -> list[dict[str, Any]] | None:
    """A step of an FC handler storing arguments as objects (Nova, Mistral-FC): not a list does not decode,
    else ``convert_to_function_call`` as for JSON text."""
    return decode_step(step) if isinstance(step, list) else None


def _gemini_fc_step(step: Any) -> list[dict[str, Any]] | None:
    """A step of Gemini's FC handler (its ``decode_execute``): the step iterated (a text's characters, an
    object's keys), each item's every ``{name: arguments}`` a call; arguments that are not an object (JSON text
    included: it is not read) do not decode."""
    return _calls(step, json_text=False) if isinstance(step, str | dict | list) else None


def _turns(result: Any, where: str, decoding: Decoding = FC_TEXT) -> list[list[list[dict[str, Any]]]] | None:
    """A multi-turn ``result`` as the per-turn steps with calls (None: not a list, an inference error)."""
    if not isinstance(result, list):
        return None
    decode_one = _step_decoder(decoding)
    turns = []
    for index, turn in enumerate(result):
        steps = [decode_one(step) for step in _iterated(turn, where, f"turn {index}")]
        turns.append([s for s in steps if s])
    return turns


def last_message(result: Any, where: str, decoding: Decoding = FC_TEXT) -> tuple[bool, str | None]:
    """A memory ``result`` as ``(inference error, the checked message)`` (module docstring); the
    message is None when there is none."""
    if not isinstance(result, list) or len(result) != 1:
        return True, None
    decode_one = _step_decoder(decoding)
    last: Any = None
    for step in _iterated(result[0], where, "the question's turn"):
        if not decode_one(step):
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
    return _entries(categories)[0]


def _entries(categories: Sequence[str]) -> tuple[dict[str, str], dict[str, MultiTurnEntry]]:
    """Every entry id of ``categories`` -> its category; the multi-turn entries by id."""
    known = {e.id: e.category for e in load_entries(tuple(c for c in SINGLE_TURN if c in categories))}
    multi = {e.id: e for e in load_multi_turn(tuple(c for c in MULTI_TURN if c in categories))}
    known.update((i, e.category) for i, e in multi.items())
    for category in (c for c in (*MEMORY_SERVED, MEMORY_VECTOR) if c in categories):
        known.update((e.id, e.category) for e in read_memory(category)[0])
    if any(c in WEB_SEARCH for c in categories):
        from .web_search import read_web_search

        for category in (c for c in WEB_SEARCH if c in categories):
            known.update((e.id, e.category) for e in read_web_search(category))
    if FORMAT_SENSITIVITY in categories:
        known.update((i, FORMAT_SENSITIVITY) for i in format_sensitivity_ids())
    return known, multi


def _config_of(entry_id: str) -> str | None:
    """A format_sensitivity id's configuration (``format_sensitivity_<n>:<config>:<id>``)."""
    parts = entry_id.split(":")
    return parts[1] if len(parts) == 3 else None


def _trace(entry_id: str, category: str, result: Any, where: str, source: str,
           decoding: Decoding) -> tuple[dict[str, Any], str]:
    """One line's trace, and how its single-turn result decoded (``ok``, ``failed``, ``wrong_format``)."""
    outcome: dict[str, Any] = {"category": category, "bfcl_result": result}
    if category in SINGLE_TURN or category == FORMAT_SENSITIVITY:
        config = _config_of(entry_id) if category == FORMAT_SENSITIVITY else None
        calls, status, text = decode_result(result, decoding, category, config)
        outcome.update(calls=calls, bfcl_decode=status, underscore_to_dot=decoding.underscore_to_dot)
        return imported_trace(entry_id, outcome, final_answer=text, source=source), status
    if category in MULTI_TURN:
        turns = _turns(result, where, decoding)
        trace = imported_trace(entry_id, {**outcome, "turns": turns}, source=source)
        failed, shape = turns is None, "a list of turns"
    else:
        failed, message = last_message(result, where, decoding)
        trace = imported_trace(entry_id, {**outcome, "stop": "max_turns" if message is None else "final_answer",
                                          "bfcl_last_message": message}, final_answer=message, source=source)
        shape = "a list of one turn"
    if failed:  # BFCL's inference_error: recorded as a failed episode, as a live one is
        trace.update(status="errored", error={"type": "InferenceError", "retryable": False,
                                              "message": f"BFCL's result is not {shape}: {str(result)[:300]}"})
    return trace, "ok"


_SHAPES = {"fc-json-text": "a list of {function name: arguments as JSON text}",
           "fc-own": "what its own decoder reads", "prompting-own": "what its own decoder reads",
           "fc-object": "a list of {function name: {arguments}}",
           "fc-object-or-one": "a list of {function name: {arguments}}"}


def _skip_reason(category: str, decoding: Decoding) -> str | None:
    """Why a category's file is not read (None: it is)."""
    if category in REFUSED and category != FORMAT_SENSITIVITY:
        return REFUSED[category]
    if category not in READ and category != FORMAT_SENSITIVITY:
        return "no BFCL v4 category of that name"
    if category == FORMAT_SENSITIVITY and not decoding.prompting:
        return "BFCL scores it only for prompting models (it skips it for FC ones)"
    if decoding.handler and category in MULTI_TURN:
        from .decoder_guard import MULTI_TURN_REFUSED

        return MULTI_TURN_REFUSED.get(decoding.handler)
    return None


def _model_folder(files: Sequence[Path]) -> str:
    models = sorted({_model_of(f) for f in files})
    if len(models) > 1:
        raise ValueError(f"the folder holds the results of {len(models)} models ({', '.join(models)}): score each "
                         "model's folder (result/<model>) on its own")
    return models[0]


def _row(entry_id: str, category: str, result: Any, where: str, source: str, decoding: Decoding) -> Row:
    """One line's work: ``(trace, status, line, reads back, holds a lone surrogate, holds an integer beyond a
    float, verdict)``: the trace and how its single-turn result decoded (:func:`_trace`), its line of
    ``traces.jsonl``, whether ``json.loads`` of the line gives the trace as it is (:func:`_calls_scan`,
    :func:`_reads_back`), and what the warnings count; the verdict is None here (:mod:`.results_split`, which runs
    this in two processes, gives the other process's). It depends on nothing but its arguments."""
    trace, status = _trace(entry_id, category, result, where, source, decoding)
    return (trace, status, *_facts(trace, decoding), None)


def _facts(trace: dict[str, Any], decoding: Decoding) -> tuple[str, bool, bool, bool]:
    """A trace's line, whether it reads back as the trace, whether it holds a lone surrogate (in the result or what
    it decodes to) and an integer beyond a float (see :func:`_row`)."""
    line = dumps_line(trace)
    marked = has_lone_surrogate(line)  # searched once: none in the line, none in the trace
    closed, huge = _calls_scan(trace["outcome"].get("calls"))
    surrogate = marked and not surrogate_free(trace.get("outcome"))
    return line, closed and not marked and _reads_back(trace, line, decoding), surrogate, huge


def _add_facts(got: Mapping[str, dict[str, Any]], noted: dict[str, list[str]], texts: dict[str, tuple[str, bool]],
               seen: Mapping[str, str], decoding: Decoding) -> None:
    """A multi-turn file's lines and what the warnings count, made after its replays were started."""
    for entry_id, trace in got.items():
        line, same, surrogate, huge = _facts(trace, decoding)
        texts[entry_id] = line, same
        if surrogate:
            noted["surrogate"].append(seen[entry_id])
        if huge:
            noted["huge"].append(seen[entry_id])


def _read_lines(file: Path, category: str, known: Mapping[str, str], seen: dict[str, str], decoding: Decoding,
                lines: OfficialLines | None = None, done: Mapping[int, Row] | None = None,
                ) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]], dict[str, tuple[str, bool]]]:
    """One file's traces, and where its single-turn results were texts / did not decode / held a lone surrogate;
    its blank lines; each trace's line of ``traces.jsonl`` (made here once: its text is searched for what a
    walk over the trace would look for) and whether reading the line back gives the trace as it is
    (:func:`_reads_back`). Read as BFCL's ``load_file`` reads it (``readlines()``, ``json.loads``
    of each line: :func:`official_jsonl`): what that stops on is refused with FILE:LINE, blank lines are warned
    about. ``lines``: the file as read already; ``done``: the rows' work done already (:func:`_row`), by index."""
    from ...core.formats import official_jsonl

    traces: dict[str, dict[str, Any]] = {}
    texts: dict[str, tuple[str, bool]] = {}
    noted: dict[str, list[str]] = {"text": [], "undecoded": [], "surrogate": [], "blank": [], "huge": []}
    lines = official_jsonl(file) if lines is None else lines
    noted["blank"] = [f"{file}:{n}" for n in lines.blank]
    for index, (number, row) in enumerate(lines.rows):
        where = f"{file}:{number}"
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
        made = done.get(index) if done else None
        if category in MULTI_TURN:  # its line made after its replays are started (read_results: _add_facts)
            traces[entry_id], status = _trace(entry_id, category, row["result"], where, str(file), decoding)
        else:
            trace, status, line, same, surrogate, huge, verdict = made or _row(entry_id, category, row["result"],
                                                                               where, str(file), decoding)
            traces[entry_id] = trace
            if verdict is not None:  # made of this very trace while the folder was read (.results_split)
                hand_over(entry_id, traces[entry_id], verdict)
            texts[entry_id] = line, same
            if surrogate:
                noted["surrogate"].append(where)
            if huge:
                noted["huge"].append(where)
        text = row["result"]
        if isinstance(text, str) and text.strip() and not text.startswith("Error during inference") \
                and not decoding.prompting:
            noted["text"].append(where)
        if status != "ok":
            noted["undecoded"].append(where)
    return traces, noted, texts


def _calls_scan(calls: Any) -> tuple[bool, bool]:
    """``(closed, huge)`` of a trace's decoded calls, in one walk: whether they are JSON values only (dicts with
    text keys, lists, texts, numbers, booleans, None: ``json.loads`` of their JSON gives them back as they are; a
    tuple, a set, a key that is not a text do not), and whether they hold an integer ``float()`` cannot take
    (:func:`_beyond_float`: BFCL's checker stops on one given for a float parameter)."""
    closed, huge = True, False
    stack = [calls]
    while stack:  # iteratively: a value may be nested as deep as the decoder allows
        item = stack.pop()
        kind = type(item)
        if kind is str or kind is float or kind is bool or item is None:
            continue
        if kind is int:
            huge = huge or item.bit_length() > 1023 and _beyond_float(item)  # a float's range ends below 2**1024
        elif kind is dict:
            closed = closed and all(type(k) is str for k in item)
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        else:  # a tuple (kept by decode_result for BFCL's checker), a set, a subclass: walked as _beyond_float walks it
            closed = False
            huge = huge or _beyond_float(item)
    return closed, huge


def _reads_back(trace: Mapping[str, Any], line: str, decoding: Decoding) -> bool:
    """Whether ``json.loads`` of the trace's ``line`` (as ``traces.jsonl`` holds it; the caller has found no lone
    surrogate in it, which is written as U+FFFD) gives ``trace`` as it is, its calls being JSON values only
    (:func:`_calls_scan`): no NaN or infinity (a new float object; any ``NaN`` or ``Infinity`` in the text counts),
    and a prompting model's multi-turn steps of JSON values only (:func:`_calls_scan`'s first answer; an FC
    handler's are ``json.loads`` of its texts)."""
    if "NaN" in line or "Infinity" in line:
        return False
    return not decoding.prompting or _calls_scan((trace.get("outcome") or {}).get("turns"))[0]


def _beyond_float(value: Any) -> bool:
    """Whether decoded calls hold an integer ``float()`` cannot take (BFCL's checker stops on one given for a
    float parameter: ``OverflowError``)."""
    stack = [value]
    while stack:  # iteratively: a value may be nested as deep as json.loads allows
        item = stack.pop()
        if isinstance(item, int) and not isinstance(item, bool):
            try:
                float(item)
            except OverflowError:
                return True
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return False


def _shown(places: Sequence[str]) -> str:
    return ", ".join(places[:5]) + (f", ... ({len(places)} in all)" if len(places) > 5 else "")


def read_results(path: Path, options: Mapping[str, Any] | None = None,
                 verdict_of: VerdictOf | None = None) -> ImportedPredictions:
    """BFCL result files (a file, or every one under a folder) as traces (see the module docstring);
    ``options``: ``bfcl_model`` (the BFCL model or kind to decode as, for a folder BFCL does not know);
    ``verdict_of``: a single-turn entry's verdict of a trace (:func:`.single_turn.entry_verdict`): given, the verdicts
    of a large folder are made while it is read, in two processes (:mod:`.results_split`), and handed to the
    scoring (:func:`.checker.hand_over`)."""
    from ...core.formats import ImportedPredictions

    drop_handed()  # the verdicts of a folder read before (their traces are not kept for them)
    found = _files(path)
    model = _model_folder(found)
    decoding = decoding_for(model, (options or {}).get("bfcl_model"))
    files, categories = [], []
    skipped: list[tuple[str, str]] = []
    for file in found:
        category = FILE_NAME.fullmatch(file.name).group(1)  # type: ignore[union-attr]
        if category.endswith("_prereq") and category.removesuffix("_prereq") in (*MEMORY_SERVED, MEMORY_VECTOR):
            continue  # the prerequisite conversations (BFCL_v4_memory_<backend>_prereq_result.json): not scored
        reason = _skip_reason(category, decoding)
        if reason is not None:
            skipped.append((category, reason))
            continue
        files.append(file)
        categories.append(category)
    listed = "; ".join(f"{c!r} is not served here: {r}" for c, r in skipped)
    if not files:
        raise ValueError(f"{path}: no BFCL result file of a category read here" + (f": {listed}" if listed else
                                                                                   " (only prerequisite conversations)"))
    replays = any(c in MULTI_TURN for c in categories)
    if replays:  # the holders' zygote imports BFCL's modules while the files are read
        prestart()
    # with multi-turn files, the other categories' entries are loaded after their replays are started (an id of
    # another category is refused in a multi-turn file all the same: it is not one of the file's category)
    known, multi = _entries([c for c in categories if c in MULTI_TURN] if replays else categories)
    others = [c for c in categories if c not in MULTI_TURN] if replays else []
    parsed: dict[int, OfficialLines] = {}
    done: dict[int, dict[int, Row]] = {}
    if not replays:  # a large folder's single-turn lines decoded in two processes (no replay's threads to fork)
        from .results_split import split_rows

        parsed, done = split_rows(files, categories, known, decoding, _row, verdict_of)
    traces: dict[str, dict[str, Any]] = {}
    seen: dict[str, str] = {}
    warnings = [f"{len(skipped)} result files skipped: {listed}"] if skipped else []
    texts: list[str] = []
    # the multi-turn files first (each category's files in their order): their replays start in the holders while
    # the rest is read and scored; what a file holds does not depend on the other categories' files, and a bad
    # file is reported as reading them in order reports it (the first one)
    surrogates: list[str] = []
    blank: list[str] = []
    huge: list[str] = []
    read: dict[int, tuple[dict[str, dict[str, Any]], dict[str, list[str]], dict[str, tuple[str, bool]]] | Exception] = {}
    try:
        for n in sorted(range(len(files)), key=lambda n: categories[n] not in MULTI_TURN):
            if others and categories[n] not in MULTI_TURN:
                known.update(_entries(others)[0])
                others = []
            try:
                read[n] = got, noted, lines_of = _read_lines(files[n], categories[n], known, seen, decoding,
                                                             parsed.get(n), done.get(n))
            except Exception as exc:  # noqa: BLE001 - raised below, if no earlier file is bad
                read[n] = exc
                continue
            if categories[n] in MULTI_TURN and not any(isinstance(r, Exception) for r in read.values()):
                prefetch([(multi[i], (t.get("outcome") or {}).get("turns") if t.get("status") == "completed" else None)
                          for i, t in got.items()])
            if categories[n] in MULTI_TURN:
                _add_facts(got, noted, lines_of, seen, decoding)
        bad = next((r for _, r in sorted(read.items()) if isinstance(r, Exception)), None)
        if bad is not None:
            raise bad
    except BaseException:
        if replays:
            cancel_prefetch()
        raise
    lines: dict[str, str] = {}
    exact: set[str] = set()
    for n, (file, category) in enumerate(zip(files, categories, strict=True)):
        got, noted, texts_of = read[n]  # type: ignore[misc]
        traces.update(got)
        lines.update((i, line) for i, (line, _) in texts_of.items())
        exact.update(i for i, (_, same) in texts_of.items() if same)
        texts += noted["text"]
        surrogates += noted["surrogate"]
        blank += noted["blank"]
        huge += noted["huge"]
        if "relevance" not in category and 2 * len(noted["undecoded"]) > len(got):
            warnings.append(f"{file}: {len(noted['undecoded'])} of {len(got)} results do not decode as "
                            f"{decoding.source} decodes them ({_SHAPES.get(decoding.kind, 'the text of calls')}"
                            f"{', in ' + language_format(category) + ' call syntax' if decoding.prompting and not decoding.handler else ''}): "
                            "check --bfcl-model; they count as BFCL counts them (ast_decoder errors)")
    if blank:
        warnings.append(f"blank lines ({_shown(blank)}): bfcl evaluate stops at the first (json.loads of an empty "
                        "line) and prints no number; skipped here")
    if surrogates:
        warnings.append(f"{len(surrogates)} results hold or decode to a lone surrogate ({_shown(surrogates)}): bfcl evaluate stops "
                        "when such an entry is wrong (UnicodeEncodeError writing its score file) and prints no number; "
                        "scored here")
    if huge:
        warnings.append(f"{len(huge)} results hold an integer beyond a float's range ({_shown(huge)}): bfcl evaluate "
                        "stops on one given for a float parameter (OverflowError in its checker) and prints no number; "
                        "scored here as a type error")
    if texts:
        warnings.append(f"{len(texts)} results are a text, not tool calls ({_shown(texts)}): scored as BFCL scores an "
                        "FC model's reply without a call")
    chosen = [c for c in (*READ, FORMAT_SENSITIVITY) if c in categories]
    return ImportedPredictions(traces=traces, strategy="prompting" if decoding.prompting else "fc",
                               options={"category": chosen, "bfcl_model": decoding.name}, model=model,
                               warnings=tuple(warnings), lines=lines, json_exact=frozenset(exact))


CallsOf = Callable[[Mapping[str, Any]], list[tuple[str, Any]]]  # a trace -> the scored calls (the plugin's)


def result_lines(traces: Mapping[str, Mapping[str, Any]], ids: Sequence[str], calls_of: CallsOf) -> list[dict[str, Any]]:
    """A run's entries as BFCL result lines ``{"id", "result"}``: the scored calls (``calls_of``) with their
    arguments as JSON text (a call whose arguments were not JSON: its text as sent, else ``""``), or the
    final answer's text when the model made no call; a prompting episode's reply text, or an imported
    line's ``result``, as it was."""
    out = []
    for entry_id in ids:
        trace = traces.get(entry_id)
        if trace is None:
            continue
        outcome = trace.get("outcome") or {}
        if "bfcl_result" in outcome and trace.get("status") == "completed":
            out.append({"id": entry_id, "result": outcome["bfcl_result"]})  # a prompting reply's text; an import's result
            continue
        calls = calls_of(trace)
        raw = [c for c in outcome.get("calls") or [] if isinstance(c, dict)]
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
