"""Reading an official result file, and scoring it from the file alone as ``print_results.py`` does.

The official ``print_results.basic_metric`` reads only the result file: each line's ``id`` (its
domain is the id up to its last ``-``), ``message``, ``count_dict`` and ``resp_eval``. It counts
every line (an id on two lines counts twice), divides the success counts by fixed sizes (150 per
domain other than Cross, whatever its name, 400 for Cross, 1,000 overall, however many lines the
file has) and leaves a record whose ``resp_eval`` is null out of completeness and correctness. So a
published result file is scored here without the 40 MB dataset (``--results-file``, set by ``evals
score FILE --format complexfuncbench-official`` when the dataset is absent):

* every line is a task: the first line of an id is the id, a further line of the same id is
  ``<id>@<k>`` (:func:`read_result_file`), so a repeated id counts on each of its lines;
* per domain, as many *unreported* placeholders (``<domain>-unreported<k>``) as the file lacks of
  the full set's size: they have no result, so they count as failed in the success rates, as the
  official division by 150 / 400 / 1,000 counts them, and are left out of call accuracy, as the
  official sums leave them out;
* a line beyond its domain's size (a domain with more lines than samples) and a line of an id
  outside the five domains count their successes with no weight in the division
  (:attr:`ResultSample.divides`), so the rates still divide by 150 / 400 / 1,000; the official
  per-domain numbers of the foreign domains are :func:`foreign_domains`;
* a record's gold-call count is its ``count_dict.total_call_num`` (what the official call accuracy
  divides by).

:func:`file_warnings` says what the official script does differently with a file or stops on
(:func:`official_stops`), for the summary's ``warnings``.

What needs the dataset (:data:`NEEDS_DATASET`): judging an answer the file holds no ``resp_eval`` for
(the judge is shown the sample's conversation), deciding calls again, and running episodes.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...core.anomalies import Anomaly
from ...core.lines import text_mode_lines
from .data import DOMAINS, domain_of
from .metrics import count_value

__all__ = ["DOMAIN_SIZES", "NEEDS_DATASET", "ResultRecord", "ResultSample", "file_warnings", "foreign_domains",
           "load_result_samples", "official_stops", "read_result_file"]

# the full set's samples per domain: what print_results.py divides each domain's successes by
DOMAIN_SIZES = {d: (400 if d == "Cross" else 150) for d in DOMAINS}
OTHER_SIZE = 150  # what it divides a domain outside the five by ("Cross" is the only other size)
FULL_SET = 1000  # what it divides the overall success by
NEEDS_DATASET = ("judging answers the file holds no resp_eval for (completeness, correctness of those samples; "
                 "print_results.py leaves them out too), deciding the calls again, and running episodes")
REPEAT = "@"  # <id>@<k>: the k-th line (k >= 2) of an id
_COUNTS = ("success_turn_num", "total_turn_num", "correct_call_num", "total_call_num")
_USED = ("correct_call_num", "total_call_num")  # the counts our metrics read


@dataclass(frozen=True)
class ResultRecord:
    """One line of a result file: its task key (the id, or ``<id>@<k>`` for the id's k-th line)."""

    key: str
    id: str
    file: Path
    line: int
    record: Mapping[str, Any]

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class ResultSample:
    """A task of a result file: its id, domain and gold-call count (0 for an unreported placeholder);
    ``divides``: whether it is one of the 150 / 400 / 1,000 the success rates divide by."""

    id: str
    domain: str
    gold_calls: int
    reported: bool = True
    divides: bool = True

    @property
    def foreign(self) -> bool:
        return self.domain not in DOMAIN_SIZES


def _files(path: Path) -> list[Path]:
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    if not files or not all(f.is_file() for f in files):
        raise FileNotFoundError(f"no official result file at {str(path)!r}")
    return files


def _number(value: Any) -> float | None:
    """A count as print_results.py can add it (a number), or as we read it (a numeric string too)."""
    if isinstance(value, bool | int | float):
        return count_value(value)
    if isinstance(value, str):
        try:
            got = float(value)
        except ValueError:
            return None
        return got if math.isfinite(got) else None
    return None


def _plain(value: Any) -> bool:
    """A count whose float sums and ratios are exactly print_results.py's Python-number ones: a whole
    number below 2**53 (a huge integer, a non-finite or a fractional count is not)."""
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return abs(value) < 2**53
    return isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) < 2**53


def official_lines(f: Path) -> Iterator[tuple[int, str]]:
    """The lines of ``f`` as ``print_results.py`` reads them (``for line in open(f)``: text mode, so
    split at ``\n``, ``\r\n`` and ``\r`` only; a form feed, a record separator or U+2028 is part of
    its line), each with its number."""
    return text_mode_lines(f, "print_results.py")  # chunked, no line past MAX_LINE_BYTES (FILE:LINE otherwise)


def read_result_file(path: Path) -> list[ResultRecord]:
    """Every line of a result file (or of the ``*.jsonl`` files of a folder) in order, split and parsed
    as ``print_results.py`` does (:func:`official_lines`, ``json.loads``); a blank line is skipped
    (warned by :func:`file_warnings`); any other line that is not a record we can read is a
    ``ValueError`` naming FILE:LINE."""
    out: list[ResultRecord] = []
    seen: Counter[str] = Counter()
    for f in _files(path):
        for n, line in official_lines(f):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError as exc:  # JSONDecodeError, or an integer of more than 4,300 digits
                raise ValueError(f"{f}:{n}: not JSON (print_results.py stops on it too): {str(exc)[:80]}") from None
            except RecursionError:
                raise ValueError(f"{f}:{n}: nested too deeply to read (print_results.py stops on it too)") from None
            if not isinstance(rec, dict) or not isinstance(rec.get("id"), str) or not isinstance(rec.get("count_dict"), dict):
                raise ValueError(f"{f}:{n}: not an official result record (needs 'id' and 'count_dict')")
            for name in _USED:
                if name in rec["count_dict"] and _number(rec["count_dict"][name]) is None \
                        and not isinstance(rec["count_dict"][name], bool | int | float):
                    raise ValueError(f"{f}:{n}: count_dict.{name} is not a number: {str(rec['count_dict'][name])[:60]!r}")
            rid = rec["id"]
            seen[rid] += 1
            key = rid if seen[rid] == 1 else f"{rid}{REPEAT}{seen[rid]}"
            while key in seen and key != rid:  # an id of the file itself spelled '<id>@<k>'
                key += REPEAT
            out.append(ResultRecord(key, rid, f, n, rec))
    return out


def gold_calls(record: Mapping[str, Any]) -> int:
    return int(_number(record["count_dict"].get("total_call_num")) or 0)


def load_result_samples(records: Sequence[ResultRecord]) -> list[ResultSample]:
    """One sample per line in file order, then the unreported placeholders per domain."""
    out: list[ResultSample] = []
    lines: Counter[str] = Counter()
    for r in records:
        domain = domain_of(r.id)
        lines[domain] += 1
        divides = domain in DOMAIN_SIZES and lines[domain] <= DOMAIN_SIZES[domain]
        out.append(ResultSample(r.key, domain, gold_calls(r.record), divides=divides))
    for domain, size in DOMAIN_SIZES.items():
        for k in range(1, size - lines[domain] + 1):
            out.append(ResultSample(f"{domain}-unreported{k}", domain, 0, reported=False))
    return out


def foreign_domains(records: Sequence[ResultRecord]) -> dict[str, dict[str, Any]]:
    """The per-domain numbers print_results.py prints for the domains outside the five: lines,
    success rate (successes over 150) and call accuracy, rounded as our metrics are."""
    out: dict[str, list[float]] = {}
    for r in records:
        domain = domain_of(r.id)
        if domain not in DOMAIN_SIZES:
            acc = out.setdefault(domain, [0, 0, 0.0, 0.0])
            counts = r.record["count_dict"]
            acc[0] += 1
            acc[1] += r.record.get("message") == "Success."
            acc[2] += _number(counts.get("correct_call_num")) or 0.0
            acc[3] += _number(counts.get("total_call_num")) or 0.0
    return {d: {"records": int(n), "success_rate": round(s / OTHER_SIZE * 100, 2),
                "call_accuracy": round(c / t * 100, 2) if t else 0.0} for d, (n, s, c, t) in out.items()}


def official_stops(record: Mapping[str, Any]) -> tuple[str, str] | None:
    """Why ``print_results.py`` stops on this record (a ``KeyError`` / ``TypeError`` it does not catch)
    and what we read instead, or ``None`` when it reads it."""
    if "message" not in record:
        return "KeyError: no 'message'", "read as a failure"
    counts = record["count_dict"]
    for name in _COUNTS:
        used = "read as 0" if name in _USED else "not used (turn accuracy is not reported)"
        if name not in counts:
            return f"KeyError: count_dict has no {name!r}", used
        if not isinstance(counts[name], bool | int | float):
            if isinstance(counts[name], str) and _number(counts[name]) is not None:
                return f"TypeError: count_dict.{name} is a string", "read as the number" if name in _USED else used
            return f"TypeError: count_dict.{name} is not a number", used
    if "resp_eval" not in record:
        return "KeyError: no 'resp_eval'", "no judgement (left out of completeness and correctness)"
    ev = record["resp_eval"]
    if ev is None:
        return None
    for part in ("complete", "correct"):
        if not isinstance(ev, dict) or not isinstance(ev.get(part), dict) or "score" not in ev[part]:
            return (f"KeyError/TypeError: resp_eval has no {part}.score",
                    "no such judgement (left out of completeness and correctness)")
        if isinstance(ev[part]["score"], dict | list):
            return f"TypeError: resp_eval.{part}.score is not hashable", "left out of completeness and correctness"
    return None


def _blank_lines(f: Path) -> list[int]:
    """The lines print_results.py reads (:func:`official_lines`) that hold no JSON: blank ones."""
    return [n for n, line in official_lines(f) if not line.strip()]


def print_results_numbers(records: Sequence[ResultRecord]) -> dict[str, Any] | str:
    """What ``print_results.basic_metric`` prints for these records (its numbers, as the Python values
    it computes: the same operations on the file's own values, in the same order), or the exception it
    stops on (``"OverflowError: ..."``). For a warning's text: our metrics read the counts as floats."""
    success: defaultdict[str, Any] = defaultdict(int)
    calls: defaultdict[str, list[Any]] = defaultdict(lambda: [0, 0])
    judged: dict[str, defaultdict[str, list[Any]]] = {p: defaultdict(lambda: [0, 0]) for p in ("complete", "correct")}
    try:
        for r in records:
            rec = r.record
            domain = domain_of(rec["id"])
            if rec["message"] == "Success.":
                success[domain] += 1
            counts = rec["count_dict"]
            for name in ("success_turn_num", "total_turn_num"):
                0 + counts[name]  # noqa: B018  (added to the turn counts, which are not printed)
            calls[domain][0] += counts["correct_call_num"]
            calls[domain][1] += counts["total_call_num"]
            if rec["resp_eval"] is None:
                continue
            for part, acc in judged.items():
                score = rec["resp_eval"][part]["score"]
                if score in {0, 1, 2}:
                    acc[domain][0] += score
                    acc[domain][1] += 1
        out: dict[str, Any] = {
            "Domain Success Rate": {k: v / 150 * 100 if k != "Cross" else v / 400 * 100 for k, v in success.items()},
            "Domain Call Accuracy": {k: v[0] / v[1] * 100 if v[1] != 0 else 0 for k, v in calls.items()},
            "Overall Success Rate": sum(success.values()) / 1000 * 100,
            "Overall Call Accuracy": sum(v[0] for v in calls.values()) / sum(v[1] for v in calls.values()) * 100,
        }
        for part, label in (("complete", "Complete Score"), ("correct", "Correct Score")):
            total, n = 0, 0
            for v in judged[part].values():
                total += v[0]
                n += v[1]
            out[label] = total / n if n != 0 else 0
    except Exception as exc:  # noqa: BLE001  (what the official script would stop on, as text)
        return f"{type(exc).__name__}: {exc}"
    return out


def _lines(records: Sequence[ResultRecord], limit: int = 5) -> str:
    shown = ", ".join(r.where for r in records[:limit])
    return shown + (f" and {len(records) - limit} more" if len(records) > limit else "")


def file_warnings(path: Path, records: Sequence[ResultRecord], *, every_line: bool) -> list[str | Anomaly]:
    """What ``print_results.py`` does differently with this file, or stops on, one line each.
    ``every_line``: these numbers count every line, as it does (scored from the file alone);
    otherwise the last line per id is kept (the dataset's tasks)."""
    out: list[str | Anomaly] = []
    src = str(path)
    if path.is_dir():
        out.append(f"{src}: a folder: print_results.py reads one file (load_json gives None for a folder and it "
                   f"stops); here its {len(_files(path))} *.jsonl files are read as one")
    elif not path.name.endswith(".jsonl"):
        out.append(f"{src}: print_results.py reads JSON lines only from a file named *.jsonl (a *.json file as one "
                   f"JSON document; another name gives None and it stops); here it is read as JSON lines")
    blank = [(f, n) for f in _files(path) for n in _blank_lines(f)]
    if blank:
        out.append(f"{src}: print_results.py stops on {len(blank)} blank line(s) (json.loads fails: "
                   f"{', '.join(f'{f}:{n}' for f, n in blank[:5])}); here they are skipped")
    stops: dict[str, tuple[str, list[ResultRecord]]] = {}
    for r in records:
        why = official_stops(r.record)
        if why is not None:
            stops.setdefault(why[0], (why[1], []))[1].append(r)
    for reason, (ours, rs) in stops.items():
        out.append(Anomaly("official_stops", f"{src}: print_results.py stops on {len(rs)} record(s) ({reason}: "
                           f"{_lines(rs)}); here: {ours}", len(rs), tuple(r.where for r in rs[:10]), ours,
                           f"print_results.py stops ({reason}) and prints no number"))
    if not records:
        out.append(f"{src}: no records: print_results.py stops on this file (ZeroDivisionError: no gold calls "
                   f"to divide the call accuracy by); here every rate is 0")
    elif sum(_number(r.record["count_dict"].get("total_call_num")) or 0.0 for r in records) == 0:
        out.append(f"{src}: all {len(records)} records' gold-call counts (count_dict.total_call_num) are 0: "
                   f"print_results.py stops on this file (ZeroDivisionError in the overall call accuracy); "
                   f"here the call accuracy is 0")
    out.extend(_unusual_counts(src, records))
    out.extend(_count_warnings(src, records, every_line=every_line))
    return out


def _unusual_counts(src: str, records: Sequence[ResultRecord]) -> list[str | Anomaly]:
    """Counts whose sums are not ours: huge integers and non-finite or fractional numbers."""
    odd = [r for r in records if any(isinstance(v, int | float) and not _plain(v)
                                     for k, v in r.record["count_dict"].items() if k in _COUNTS)]
    if not odd:
        return []
    printed = print_results_numbers(records)
    if isinstance(printed, str):
        official = f"print_results.py stops on this file ({printed[:120]})"
    else:
        official = ("print_results.py adds them as Python numbers and prints overall success "
                    f"{printed['Overall Success Rate']!r}, call accuracy {printed['Overall Call Accuracy']!r}")
    return [Anomaly("unusual_counts", f"{src}: {len(odd)} record(s) with a count that is a huge integer, non-finite or "
                    f"not a whole number ({_lines(odd)}): {official}; here such a count is read as a float (0 when "
                    f"beyond the float range or non-finite), so these numbers may differ from it",
                    len(odd), tuple(r.where for r in odd[:10]), "read as a float (0 when huge or non-finite)", official)]


def _count_warnings(src: str, records: Sequence[ResultRecord], *, every_line: bool) -> list[str | Anomaly]:
    out: list[str | Anomaly] = []
    repeated = [r for r in records if r.key != r.id]
    if repeated:
        ids = {r.id for r in repeated}
        first = next(r for r in records if r.id == repeated[0].id)
        official = 100 * sum(r.record.get("message") == "Success." for r in records) / FULL_SET
        ours = ("so do these numbers (each further line of an id is a task of its own, '<id>@<k>')" if every_line else
                f"its overall success would be {official:.2f}; these numbers keep the last line of each id (scored "
                f"without the dataset, they count every line)")
        counted = ("every line, each further line of an id a task of its own ('<id>@<k>')" if every_line else
                   "the last line of each id, once")
        out.append(Anomaly("repeated_id", f"{src}: {len(ids)} id(s) on more than one line ({len(repeated)} further "
                           f"line(s), e.g. {repeated[0].id!r} at {first.where} and {repeated[0].where}): "
                           f"print_results.py counts every line; {ours}", len(repeated),
                           tuple(r.where for r in repeated[:10]), counted, "print_results.py counts every line"))
    by_domain = Counter(domain_of(r.id) for r in records)
    foreign = {d: n for d, n in by_domain.items() if d not in DOMAIN_SIZES}
    if foreign:
        e = next(r for r in records if domain_of(r.id) in foreign)
        names = ", ".join(f"{d}: {n}" for d, n in sorted(foreign.items()))
        official = (f"print_results.py adds their successes to the overall success rate, still divided by "
                    f"{FULL_SET:,}, and their calls to the call accuracy, and prints per-domain numbers for them "
                    f"(successes over {OTHER_SIZE})")
        out.append(Anomaly("foreign_ids", f"{src}: {sum(foreign.values())} record(s) with ids outside the five domains "
                           f"({names}; e.g. {e.id!r} at {e.where}): {official}; so do these numbers (foreign_domains)",
                           sum(foreign.values()),
                           tuple(r.where for r in records if domain_of(r.id) in foreign)[:10],
                           "as print_results.py counts them (foreign_domains)", official))
    for domain, size in DOMAIN_SIZES.items():
        if by_domain[domain] > size:
            out.append(f"{src}: {domain} has {by_domain[domain]} records, more than its {size} samples: "
                       f"print_results.py still divides its success rate by {size} and the overall by {FULL_SET:,}; "
                       f"so do these numbers" + ("" if every_line else " (over the last line of each id)"))
    return out
