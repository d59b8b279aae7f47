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

``evals export RUN --format bfcl-official`` writes a run's calls in the same shape, for BFCL's own
``bfcl evaluate``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .data import load_entries
from .files import SINGLE_TURN, served_name

if TYPE_CHECKING:
    from client.runs import RunDir

    from ...core.formats import ImportedPredictions, PredictionFormat

__all__ = ["FORMAT", "decode_result", "official_format", "read_results", "result_lines"]

FORMAT = "bfcl-official"
FILE_NAME = re.compile(r"BFCL_v4_(\w+?)_result\.json")
_GROUPS = frozenset({"non_live", "live", "multi_turn", "agentic", "format_sensitivity"})


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
    return parent.parent.name if parent.name in _GROUPS else parent.name


def read_results(path: Path) -> ImportedPredictions:
    """BFCL result files (a file, or every one under a folder) as traces (see the module docstring)."""
    from ...core.formats import ImportedPredictions, imported_trace

    files = _files(path)
    categories = []
    for file in files:
        category = FILE_NAME.fullmatch(file.name).group(1)  # type: ignore[union-attr]
        if category not in SINGLE_TURN:
            raise ValueError(f"{file}: BFCL category {category!r} is not read yet (read: {', '.join(SINGLE_TURN)})")
        categories.append(category)
    known = {e.id: e.category for e in load_entries(tuple(c for c in SINGLE_TURN if c in categories))}
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
            calls, text = decode_result(row["result"])
            if text is not None and text.strip() and not text.startswith("Error during inference"):
                texts.append(where)
            outcome = {"category": category, "calls": calls, "bfcl_result": row["result"]}
            traces[entry_id] = imported_trace(entry_id, outcome, final_answer=text, source=str(file))
    warnings = []
    if texts:
        shown = ", ".join(texts[:5]) + (f", ... ({len(texts)} in all)" if len(texts) > 5 else "")
        warnings.append(f"{len(texts)} results are a text, not tool calls ({shown}): scored as BFCL scores an FC "
                        "model's reply without a call; a prompting (non-FC) model's calls written as text are not "
                        "decoded here")
    chosen = [c for c in SINGLE_TURN if c in categories]
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


def _group(category: str) -> str:
    return "live" if category.startswith("live_") else "non_live"


def _export(run_dir: RunDir, out: Path, calls_of: CallsOf) -> list[Path]:
    config = run_dir.config or {}
    model = re.sub(r"[^A-Za-z0-9._-]+", "_", str(config.get("model") or "model")).strip("_") or "model"
    traces = run_dir.latest_traces()
    by_category: dict[str, list[str]] = {}
    for entry in load_entries(tuple(c for c in SINGLE_TURN if c in set((config.get("options") or {}).get("category") or SINGLE_TURN))):
        by_category.setdefault(entry.category, []).append(entry.id)
    written = []
    for category, ids in by_category.items():
        lines = result_lines(traces, ids, calls_of)
        if not lines:
            continue
        target = out / model / _group(category) / f"BFCL_v4_{category}_result.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
        written.append(target)
    return written


def official_format(calls_of: CallsOf) -> PredictionFormat:
    """The format; ``calls_of`` reads the calls a trace is scored by (the plugin's ``calls_from_trace``)."""
    from ...core.formats import PredictionFormat

    return PredictionFormat(
        FORMAT,
        "BFCL's own result files (result/<model>/<group>/BFCL_v4_<category>_result.json: {id, result} per line, "
        "an FC model's tool calls), read by `bfcl evaluate`",
        lambda run_dir, out: _export(run_dir, out, calls_of),
        read_results,
    )
