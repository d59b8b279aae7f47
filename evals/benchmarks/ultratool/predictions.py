"""Reading the published runs' prediction files (the ``ultratool-official`` format's reader) into traces.

A file is read as the official evaluation loops read it, record after record (:func:`.parsing.read_file`):
each record is matched to its test record by content, in the English or the Chinese test set, and the
readings that depend on the records before, the records the official script stops on, repeated records
and odd judgments are warned about with their lines. The writer (``evals export``) is the plugin's.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.formats import surrogate_free
from .files import LANGUAGES
from .metrics import usage_stop
from .parsing import ParseKind, read_file
from .tasks import Record, load_records

if TYPE_CHECKING:
    from ...core.formats import ImportedPredictions

__all__ = ["read_official"]


_OFFICIAL_FILES = {"planning.json": "planning", "planning_eval.json": "planning", "tool_usage.json": "tool_usage",
                   "tool_usage_awareness.json": "tool_usage_awareness", "tool_creation.json": "tool_creation"}


def _canonical(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, sort_keys=True)


def _row_data(row: Mapping[str, Any], evaluated: bool) -> Any:
    if evaluated:
        row = row.get("data") or {}
    return row.get("data") if "data" in row else row.get("question")


_LANGUAGE_NAMES = {"en": "English", "zh": "Chinese"}
_PARSED = {"tool_usage": "param", "tool_usage_awareness": "label"}  # files the official collect_* loops read


@functools.lru_cache(maxsize=16)
def _by_content(task: str, language: str) -> dict[str, Record]:
    """A test set's records by their canonical text (kept per process: building it is about 0.5 s)."""
    return {_canonical(r.data): r for r in load_records(task, language=language)}


def _language_of(rows: Sequence[Mapping[str, Any]], task: str, evaluated: bool) -> tuple[str, dict[str, Record]]:
    """The test set a file's records come from and its ``{record: Record}`` map: the language most of
    its records are found in (by content), or for a file none of whose records is found, the one its
    text is written in (Chinese when it holds CJK characters)."""
    best: tuple[int, str, dict[str, Record]] | None = None
    keys = [_canonical(_row_data(r, evaluated)) for r in rows]
    for language in LANGUAGES:
        try:
            ids = _by_content(task, language)
        except FileNotFoundError:  # that language's test set is not in the data directory
            continue
        hits = sum(k in ids for k in keys)
        if best is None or hits > best[0]:
            best = (hits, language, ids)
    if best is None:
        raise FileNotFoundError(f"no UltraTool {task} test file in the data directory (`evals data fetch ultratool`"
                                " / `evals data fetch ultratool-zh`)")
    if best[0] == 0 and keys:
        written = "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in keys[0]) else "en"
        if written != best[1] and written in LANGUAGES:
            with contextlib.suppress(FileNotFoundError):
                return written, _by_content(task, written)
    return best[1], best[2]


def _lines(numbers: Sequence[int]) -> str:
    shown = ", ".join(map(str, numbers[:10]))
    more = f", ... ({len(numbers)} in all)" if len(numbers) > 10 else ""
    return f"line{'s' if len(numbers) > 1 else ''} {shown}{more}"


def _records(n: int) -> str:
    return f"{n} record{'s' if n != 1 else ''}"


def _official_answer(row: Mapping[str, Any]) -> tuple[Any, str]:
    """The answer the official loop reads from a row (``pred_``), or the error it stops with."""
    if "data" in row:
        return row.get("init output"), "" if "init output" in row else "KeyError: the row has no 'init output'"
    init = (row.get("total output") or {}).get("init output") if isinstance(row.get("total output"), dict) else None
    if not isinstance(init, list) or not init:
        return init, "the row's total output has no 'init output' list to take [0] of"
    return init[0], ""


#: ``(quirk, what the warning says, whether it shows the line each record was read from)``, in the
#: order the warnings are given
_QUIRK_WARNINGS: tuple[tuple[str, str, bool], ...] = (
    ("previous", "the answer is a JSON dict, null or number, not text: the official code keeps the previous "
     "record's reading for it (an empty list after an unreadable one), and so is it scored here", True),
    ("list", "the answer is a JSON list of steps, not text: scored as it is, without the text rewrites, as the "
     "official code does (an empty list after an unreadable record)", False),
    ("carried", "the answer is empty once cleaned: the official parser reads it from the previous record's last "
     "repair text (a variable it reuses), and so is it scored here", True),
    ("expression", "a repair candidate is a Python expression that is not a literal (e.g. 3*2): the official code "
     "eval()s it and may read a value from it; this project reads literals only (ast.literal_eval)", False),
)


def _read_answers(path: Path, task: str, rows: Sequence[tuple[int, Mapping[str, Any]]], records: Sequence[Record | None],
                  open_model: bool) -> tuple[list[dict[str, Any]], list[str]]:
    """Each row's extra outcome fields (how the official loop reads it, where that is not the answer read
    alone) and the warnings naming the rows whose reading depends on the rows before them, or that stop
    the official script."""
    kind: ParseKind = "param" if task == "tool_usage" else "label"
    answers = [_official_answer(row) for _, row in rows]
    readings = read_file([a for a, _ in answers], kind, multiple_lists=open_model)
    extra: list[dict[str, Any]] = []
    found: dict[str, list[int]] = {quirk: [] for quirk, _, _ in _QUIRK_WARNINGS}
    stops: list[tuple[int, str]] = []
    surrogates: list[int] = []
    for (n, _), (answer, missing), reading, record in zip(rows, answers, readings, records, strict=True):
        fields: dict[str, Any] = {}
        if not isinstance(answer, str) or reading.quirk or reading.error or missing:
            fields["official_read"] = reading.replay
        if not surrogate_free(reading.replay):
            # the trace file would store U+FFFD for the lone surrogate, and the text would read differently
            # from the official eval (which fails on any candidate holding one): its reading is kept instead
            fields["official_read"] = {"value": reading.value}
            surrogates.append(n)
        error = missing or reading.error
        if not error and record is not None and task == "tool_usage":
            error = usage_stop(reading.value, record.reference)
        if error:
            fields["official_error"] = error
            stops.append((n, error))
        if reading.quirk in found:
            found[reading.quirk].append(n)
        if reading.expression:
            found["expression"].append(n)
        extra.append(fields)
    line_of = [n for n, _ in rows]

    def before(quirk: str) -> str:
        pairs = [f"{n}<-{line_of[r.previous]}" for (n, _), r in zip(rows, readings, strict=True)
                 if r.quirk == quirk and r.previous is not None][:10]
        return f" (line<-line read: {', '.join(pairs)})" if pairs else ""

    warnings = []
    if surrogates:
        warnings.append(f"{path}: {_lines(surrogates)} ({_records(len(surrogates))}): the answer holds a lone surrogate "
                        "(\\ud800-\\udfff, not encodable as UTF-8): the official eval of any text holding one fails "
                        "(UnicodeEncodeError), and so is it read here (the run's trace shows it as U+FFFD)")
    for quirk, text, shows_source in _QUIRK_WARNINGS:
        if ns := found[quirk]:
            warnings.append(f"{path}: {_lines(ns)} ({_records(len(ns))}): {text}{before(quirk) if shows_source else ''}")
    if stops:
        first_n, first = stops[0]
        warnings.append(f"{path}: {_lines([n for n, _ in stops])} ({_records(len(stops))}): the official script stops "
                        f"with an error there and prints no number for the file (line {first_n}: {first}); "
                        "scored 0 here")
    return extra, warnings


def read_official(path: Path) -> ImportedPredictions:
    """A published (or official-format) prediction file as traces: ``<model>/<task>.json`` (records
    ``{data, 'init output'}``, or an open model's ``{question, 'total output'}``), or
    ``<model>/eval/planning_eval.json`` (planning with the judge's outputs, scored from those). Each
    record is matched to its test record by content, in the English or the Chinese test set (the
    run's ``language`` is the one whose records the file holds); the strategy is ``paper``.

    The official loops read a file record after record, and some readings depend on the records
    before (:func:`.parsing.read_file`): those are scored as the official code scores them, and
    warned about with their lines, as are the records the official script stops on, repeated
    records (the official code scores each line; here the last one counts), judgments without an
    ``eval`` field and judgments that give a score as true/false."""
    from ...core.formats import ImportedPredictions, blank_lines_warning, imported_trace, official_jsonl

    if path.is_dir():
        raise ValueError(f"{path} is a folder: give one prediction file (e.g. .../gpt-4/tool_usage.json)")
    task = _OFFICIAL_FILES.get(path.name)
    if task is None:
        raise ValueError(f"{path.name}: not an UltraTool prediction file (expected one of {', '.join(_OFFICIAL_FILES)})")
    evaluated = path.name == "planning_eval.json"
    model_dir = path.parent.parent if evaluated else path.parent
    read = official_jsonl(path)  # the official read_data's lines: a line per \n, json.loads of each
    if not read.rows:
        raise ValueError(f"{path}: no records (the official script prints nan or stops dividing by zero)")
    rows: list[tuple[int, dict[str, Any]]] = []
    for n, row in read.rows:
        if not isinstance(row, dict):
            raise ValueError(f"{path}:{n}: not a JSON object")
        if evaluated and not isinstance(row.get("data"), dict):
            raise ValueError(f"{path}:{n}: a planning_eval.json row is {{data, eval}}; this one has no 'data' object")
        inner = row["data"] if evaluated else row
        if "data" not in inner and not ("question" in inner and "total output" in inner):
            raise ValueError(f"{path}:{n}: neither {{data, 'init output'}} nor {{question, 'total output'}}")
        rows.append((n, row))
    language, by_content = _language_of([r for _, r in rows], task, evaluated)
    open_model = any("data" not in (row["data"] if evaluated else row) for _, row in rows[:1])
    records: list[Record] = []
    for n, row in rows:
        record = by_content.get(_canonical(_row_data(row, evaluated)))
        if record is None:
            raise ValueError(f"{path}:{n}: this record is not in UltraTool's {task} test file of the "
                             f"{_LANGUAGE_NAMES.get(language, language)} test set (the file's language): its text "
                             "differs from every test record's (was it edited?)")
        records.append(record)
    extra: list[dict[str, Any]] = [{} for _ in rows]
    warnings: list[str] = []
    if task in _PARSED and not evaluated:
        extra, warnings = _read_answers(path, task, rows, records, open_model)
    if read.blank:
        warnings.insert(0, blank_lines_warning(path, read.blank))
    traces: dict[str, dict[str, Any]] = {}
    seen: dict[str, list[int]] = {}
    no_eval: list[int] = []
    boolean: list[int] = []
    for (n, row), record, fields in zip(rows, records, extra, strict=True):
        judgement = row.get("eval") if evaluated else None
        inner = row["data"] if evaluated else row
        total = inner.get("total output")
        answer = inner.get("init output") if "data" in inner else (total.get("init output") if isinstance(total, dict) else None)
        if isinstance(answer, list) and answer and isinstance(answer[0], str):
            answer = answer[0]
        outcome: dict[str, Any] = {"task": task, "strategy": "paper", **fields}
        if evaluated and judgement is None:  # the official cal_plan_res stops on it (res['eval'])
            outcome["judgement_missing"] = True
            no_eval.append(n)
        elif judgement is not None:
            outcome["judgement"] = judgement
            if isinstance(judgement, list) and any(isinstance(v, bool) for item in judgement if isinstance(item, dict)
                                                   for v in item.values()):
                boolean.append(n)
        final = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
        seen.setdefault(record.id, []).append(n)
        traces[record.id] = imported_trace(record.id, outcome, final_answer=final, source=str(path))
    repeated = {k: v for k, v in seen.items() if len(v) > 1}
    if repeated:
        extra_lines = sum(len(v) - 1 for v in repeated.values())
        pairs = "; ".join(f"record {k}: {_lines(v)}" for k, v in list(repeated.items())[:10])
        warnings.append(f"{path}: {_records(len(repeated))} repeated ({extra_lines} extra line{'s' if extra_lines != 1 else ''}: "
                        f"{pairs}): the last line of each is scored here, once; the official code scores every "
                        "line, so each repeat counts again in its mean")
    if no_eval:
        warnings.append(f"{path}: {_lines(no_eval)} ({_records(len(no_eval))}): no eval field: the official "
                        "cal_plan_res stops with a KeyError there and prints no number; counted in judge_unreadable "
                        "here and left out of the judge's scores")
    if boolean:
        warnings.append(f"{path}: {_lines(boolean)} ({_records(len(boolean))}): a score is given as true/false: "
                        "counted 1/0, as the official code's np.mean counts it")
    options = {"task": task, "parser": "open" if open_model else "gpt", "language": language}
    return ImportedPredictions(traces=traces, strategy="paper", options=options, model=model_dir.name,
                               warnings=tuple(warnings))
