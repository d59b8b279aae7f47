"""Predictions in other harnesses' formats: ``evals export`` writes a run's, ``evals score --format``
scores predictions made elsewhere.

A benchmark may offer :class:`PredictionFormat` s (its optional ``formats()`` method, see
:mod:`evals.core.plugin`); the core never knows what is in them. A format has

* ``export(run_dir, out)``: write the run's predictions under ``out`` (a file or a folder, the
  format's choice) so that the benchmark's official scripts can read them; returns the files written;
* ``read(path)`` (optional): turn predictions in that format into one trace per task, in the shape
  the benchmark's ``score`` reads (:func:`imported_trace` builds one), plus the strategy and options
  they were made with when the files say so.

``evals score PATH --format NAME --benchmark B`` writes the imported traces into a new run
directory (``config.json`` names the format and the source) and scores it like any run, so the
report, ``evals score`` and ``evals export`` then work on it as well. The traces it wrote go to the
scoring as they are, not read back from the file (:func:`import_run`): those the reader says read back
unchanged from their JSON (``ImportedPredictions.json_exact``), the others parsed from their lines; what
is scored is what a later ``evals score`` of the run folder scores. The run covers exactly the
tasks the predictions are for (``run.only_traced`` in its config), as the official scripts score
the predictions they are given; a reader whose official script divides by the full set's size
says ``covers_all`` and the tasks without a prediction count as failed. What a reader noticed in
the files (``warnings``: e.g. repeated ids) is kept in the config and shown in the summary.

Readers of an official script's JSON-lines file read it with :func:`official_jsonl`, the official
scripts' own reading rule (``open(path, encoding="utf-8")``, a line per ``\\n``, ``json.loads`` of each
line): lines end at ``\\n``, ``\\r\\n`` and ``\\r`` only (Python's universal newlines), never at a form
feed, a record separator or U+2028 as ``str.splitlines`` would; a line ``json.loads`` refuses (a
control character at its end, a byte-order mark, nesting too deep) and bytes that are not UTF-8 stop
the official script, so they are refused with FILE:LINE; blank lines (which stop it too) are returned
for the reader to warn about (:func:`blank_lines_warning`).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .anomalies import Anomaly, anomaly_entry
from .lines import universal_lines

if TYPE_CHECKING:
    from client.runs import RunDir

    from .plugin import Benchmark

__all__ = [
    "ImportedPredictions",
    "OfficialLines",
    "PredictionFormat",
    "blank_lines_warning",
    "export_run",
    "find_format",
    "formats_of",
    "import_predictions",
    "import_run",
    "imported_trace",
    "official_jsonl",
    "surrogate_free",
]


@dataclass(frozen=True)
class ImportedPredictions:
    """What :attr:`PredictionFormat.read` made of external predictions."""

    traces: dict[str, dict[str, Any]]  # task id -> trace record (see imported_trace)
    strategy: str | None = None  # the strategy the predictions were made with, when known
    options: Mapping[str, Any] = field(default_factory=dict)  # benchmark options they were made with
    model: str | None = None  # who made them, when the files say
    # what the reader noticed (e.g. repeated ids): kept in the config, shown in the summary's ``warnings``
    # (the line) and ``anomalies`` (an Anomaly's kind, count, places, how it was counted, what the official code does)
    warnings: tuple[str | Anomaly, ...] = ()
    # the run covers every task of the benchmark, a task without a prediction counting as failed (as an
    # official script that divides by the full set's size counts it); default: only the predicted tasks
    covers_all: bool = False
    # task id -> its trace's line of traces.jsonl (``client.runs.dumps_line`` of the trace), where the reader made
    # it already (e.g. to look at it): written as it is, not made again
    lines: Mapping[str, str] = field(default_factory=dict)
    # the task ids whose trace reads back from its line as it is (the reader knows it holds no tuple, no key that is
    # not a text, no lone surrogate, no NaN or infinity): scored as it is, without reading traces.jsonl again
    json_exact: frozenset[str] = frozenset()


@dataclass(frozen=True)
class PredictionFormat:
    """One way to write a run's predictions for (or read them from) another harness."""

    name: str  # e.g. "<benchmark>-official"; unique within a benchmark
    description: str  # one line: which scripts read it, what files it writes
    export: Callable[[RunDir, Path], list[Path]]  # (the run, where to write) -> the files written
    read: Callable[[Path], ImportedPredictions] | None = None  # external predictions -> traces
    # for a format whose files are named after a model the official scripts look up (e.g. a leaderboard's model
    # registry): export under the name the user gives (``evals export --model-name NAME``)
    export_as: Callable[[RunDir, Path, str], list[Path]] | None = None


@dataclass(frozen=True)
class OfficialLines:
    """A JSON-lines file as the official scripts read it (:func:`official_jsonl`)."""

    rows: list[tuple[int, Any]]  # (line number, the line's JSON value), blank lines left out
    blank: list[int]  # the blank lines (only JSON whitespace): the official json.loads stops at the first


def official_jsonl(path: Path) -> OfficialLines:
    """``path`` read line by line as the official scripts read a JSON-lines file (``open(path,
    encoding="utf-8")``, iterated or ``readlines()``, ``json.loads`` of each line). A ``ValueError``
    naming FILE:LINE for what stops them before any number: bytes that are not UTF-8, a line that
    ``json.loads`` refuses (a control character or text after the value, a byte-order mark, nesting
    too deep for it). Blank lines stop them too (``json.loads`` of an empty line): they are returned
    in :attr:`OfficialLines.blank` for the reader to warn about (:func:`blank_lines_warning`)."""
    rows: list[tuple[int, Any]] = []
    blank: list[int] = []
    refused: ValueError | None = None  # the first line json.loads refuses; bytes not UTF-8 anywhere come first
    for n, raw, _end in universal_lines(path):  # chunked, no line past MAX_LINE_BYTES (FILE:LINE otherwise)
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}:{n}: not UTF-8 ({exc.reason} at byte {exc.start} of the line); the "
                             "official script stops reading the file there") from None
        if refused:
            continue
        if not line.strip(" \t\n\r"):
            blank.append(n)
            continue
        try:
            value = json.loads(line)
        except (ValueError, RecursionError) as exc:
            shown = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"
                            for ch in line[:60])
            refused = ValueError(f"{path}:{n}: not a JSON line for the official reader (json.loads: "
                                 f"{str(exc) or type(exc).__name__}; the line begins '{shown}'): the official script "
                                 "stops there and prints no number")
            continue
        rows.append((n, value))
    if refused:
        raise refused
    return OfficialLines(rows, blank)


def blank_lines_warning(path: Path, blank: Sequence[int]) -> str:
    """The warning for a file's blank lines (the official ``json.loads`` stops at the first)."""
    shown = ", ".join(map(str, blank[:10])) + (f", ... ({len(blank)} in all)" if len(blank) > 10 else "")
    return (f"{path}: blank line{'s' if len(blank) > 1 else ''} {shown}: the official script stops at the first "
            f"(json.loads of an empty line) and prints no number for the file; skipped here")


_SURROGATE = re.compile("[\ud800-\udfff]")


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (one regex search; none in an ASCII text)."""
    return not text.isascii() and _SURROGATE.search(text) is not None


def surrogate_free(value: Any, text: str | None = None) -> bool:
    """Whether ``value`` (JSON-like) holds no lone surrogate (``"\\ud800"`` in the file's JSON): a string
    with one cannot be encoded as UTF-8, so the official ``eval``/``ast`` of it fails, and a run's trace
    file stores it as U+FFFD. ``text``: the JSON text of ``value``, or of a value holding it, with non-ASCII
    characters kept (``client.runs.dumps_line``): where it has no lone surrogate, ``value`` has none (each of its
    texts is in it as it is), and one regex search stands for the walk over every item."""
    if text is not None and not has_lone_surrogate(text):
        return True
    stack = [value]
    while stack:  # iteratively: a value may be nested as deep as json.loads allows
        item = stack.pop()
        if isinstance(item, str):
            if has_lone_surrogate(item):
                return False
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
    return True


def formats_of(bench: Benchmark) -> dict[str, PredictionFormat]:
    """The formats a loaded benchmark offers (none when it has no ``formats()``)."""
    method = getattr(bench, "formats", None)
    found = list(method()) if callable(method) else []
    return {f.name: f for f in found}


def find_format(bench: Benchmark, name: str, *, reading: bool = False) -> PredictionFormat:
    """The format ``name`` of ``bench``; a ``ValueError`` naming the ones it has otherwise."""
    formats = formats_of(bench)
    fmt = formats.get(name)
    if fmt is None:
        have = ", ".join(sorted(formats)) or "none"
        raise ValueError(f"{bench.info.name} has no prediction format {name!r} (it has: {have})")
    if reading and fmt.read is None:
        raise ValueError(f"prediction format {name!r} of {bench.info.name} can only be exported, not read")
    return fmt


_ids: tuple[str, Iterator[int]] | None = None  # (a random prefix, a counter)


def _episode_id() -> str:
    """A unique episode id (32 hex digits, as ``uuid4().hex``): one random prefix per process and a counter, not an
    ``os.urandom`` call per trace (a result folder of 8,000 lines: about 30 ms). A forked process draws its own."""
    global _ids
    if _ids is None:
        _ids = (uuid.uuid4().hex[:20], itertools.count())
    return f"{_ids[0]}{next(_ids[1]):012x}"


def _forked() -> None:
    global _ids
    _ids = None


os.register_at_fork(after_in_child=_forked)


def imported_trace(
    task_id: str, outcome: Mapping[str, Any] | None, *, final_answer: str | None = None, source: str | None = None
) -> dict[str, Any]:
    """A trace record for one imported prediction: ``completed`` with ``outcome``, or ``errored``
    when ``outcome`` is None (the external run has no prediction for the task)."""
    from client.runs import SCHEMA_VERSION

    done = outcome is not None
    return {
        "schema_version": SCHEMA_VERSION,
        "task_id": task_id,
        "episode_id": _episode_id(),
        "run_attempt": 1,
        "status": "completed" if done else "errored",
        "final_answer": final_answer,
        "error": None if done else {"type": "NoPrediction", "message": "no prediction for this task", "retryable": False},
        "totals": {"cost_known": False},  # the external run's cost is not known here (not 0)
        "outcome": dict(outcome) if outcome is not None else None,
        "events": [],
        "imported_from": source,
    }


def export_run(run_path: str | Path, format_name: str, out: str | Path | None = None,
               model_name: str | None = None) -> list[Path]:
    """``evals export``: write run ``run_path``'s predictions in ``format_name`` (default: a folder
    ``export-<format>`` inside the run directory), under ``model_name`` where the format names its files
    after a model (``export_as``); returns the files written. They are written into a fresh folder, then
    moved into place without following a link there (:func:`client.runs.fresh_output`)."""
    from client.runs import RunDir, fresh_output

    from .registry import load_benchmark, own_options

    run_dir = RunDir.open(run_path)
    config = run_dir.config or {}
    if "benchmark" not in config:
        raise ValueError(f"{run_dir.path}: config.json names no benchmark; is this an evals run directory?")
    bench = load_benchmark(config["benchmark"], own_options(config["benchmark"], config.get("options") or {}))
    fmt = find_format(bench, format_name)
    target = Path(out) if out is not None else run_dir.path / f"export-{format_name}"
    export_as = fmt.export_as
    if model_name is not None and export_as is None:
        raise ValueError(f"prediction format {format_name!r} names no model in its files: --model-name does not apply")
    with fresh_output(target) as fresh:
        if model_name is None or export_as is None:
            written = fmt.export(run_dir, fresh)
        else:
            written = export_as(run_dir, fresh, model_name)
    return [target.parent / Path(f).relative_to(fresh.parent) for f in written]


def import_predictions(
    path: str | Path,
    format_name: str,
    benchmark: str,
    run_path: str | Path,
    *,
    strategy: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> Path:
    """Read predictions in ``format_name`` into a new run directory ``run_path`` (its traces and
    ``config.json``), ready for scoring. ``strategy``/``options`` override what the files say."""
    return import_run(path, format_name, benchmark, run_path, strategy=strategy, options=options).path


def import_run(
    path: str | Path,
    format_name: str,
    benchmark: str,
    run_path: str | Path,
    *,
    strategy: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> RunDir:
    """:func:`import_predictions`, giving the run directory written (closed): its scan of the traces is the
    traces as written (``ImportedPredictions.json_exact``, the other lines parsed), which
    ``score_run_dir`` takes (:meth:`client.runs.RunDir.share_scan`) instead of reading the file again."""
    from client.runs import RunDir

    from .registry import load_benchmark
    from .versions import versions

    src = Path(path)
    if not src.exists():
        raise FileNotFoundError(f"{str(src)!r} does not exist")
    bench = load_benchmark(benchmark, options or {})
    fmt = find_format(bench, format_name, reading=True)
    assert fmt.read is not None
    got = fmt.read(src)
    chosen = strategy or got.strategy or bench.info.default_strategy
    if chosen not in bench.info.strategies:
        raise ValueError(f"{benchmark} has no strategy {chosen!r}; available: {', '.join(bench.info.strategies)}")
    made = load_benchmark(benchmark, {**got.options, **(options or {})})  # e.g. the files' language
    merged = made.options
    ids = made.task_ids()
    known = set(ids)
    unknown = [t for t in got.traces if t not in known]
    if unknown:
        raise ValueError(f"{len(unknown)} predictions name tasks {benchmark} does not have, e.g. {unknown[0]!r}")
    out = Path(run_path)
    if (out / "traces.jsonl").exists():
        raise ValueError(f"{str(out)!r} already holds a run; give another --out")
    config = {
        "benchmark": benchmark,
        "model": got.model or f"imported:{format_name}",
        "strategy": chosen,
        "options": dict(merged),
        "imported": {"format": format_name, "source": str(src.resolve()),
                     **({"warnings": [str(w) for w in got.warnings],
                         "anomalies": [anomaly_entry(w, "import") for w in got.warnings]} if got.warnings else {})},
        # the run covers the tasks the predictions are for (or, covers_all, every task)
        "run": {"only_traced": not got.covers_all},
        "versions": versions(made),  # the scorer that scores it now
    }
    run_dir = RunDir(out, config)
    written = [task_id for task_id in ids if task_id in got.traces]
    try:
        run_dir.append_traces([got.lines.get(task_id) or got.traces[task_id] for task_id in written],
                              read_back=[got.traces[task_id] if task_id in got.json_exact else None for task_id in written])
    finally:
        run_dir.close()
    return run_dir
