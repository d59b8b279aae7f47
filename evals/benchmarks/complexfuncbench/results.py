"""Scoring an official result file from the file alone, as ``print_results.py`` does (no dataset).

The official ``print_results.basic_metric`` reads only the result file: each record's ``id`` (its
domain is the id up to its last ``-``), ``message``, ``count_dict`` and ``resp_eval``. It divides the
success counts by the full set's sizes (150 per single domain, 400 for Cross, 1,000 overall) and
leaves a record without ``resp_eval`` out of completeness and correctness. So a published result
file is scored here without the 40 MB dataset (``--results-file``, set by ``evals score FILE
--format complexfuncbench-official`` when the dataset is absent):

* the tasks are the file's ids, plus, per domain, as many *unreported* placeholders
  (``<domain>-unreported<k>``) as the file lacks of the full set's size: they have no result, so
  they count as failed in the success rates, as the official division by 150 / 400 / 1,000 counts
  them, and are left out of call accuracy, as the official sums leave them out;
* a record's gold-call count is its ``count_dict.total_call_num`` (what the official call accuracy
  divides by).

What needs the dataset (:data:`NEEDS_DATASET`): judging an answer the file holds no ``resp_eval`` for
(the judge is shown the sample's conversation), deciding calls again, and running episodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from client.runs import iter_jsonl

from .data import DOMAINS

__all__ = ["DOMAIN_SIZES", "NEEDS_DATASET", "ResultSample", "load_result_samples"]

# the full set's samples per domain: what print_results.py divides each domain's successes by
DOMAIN_SIZES = {d: (400 if d == "Cross" else 150) for d in DOMAINS}
NEEDS_DATASET = ("judging answers the file holds no resp_eval for (completeness, correctness of those samples; "
                 "print_results.py leaves them out too), deciding the calls again, and running episodes")


@dataclass(frozen=True)
class ResultSample:
    """A task of a result file: its id, domain and gold-call count (0 for an unreported placeholder)."""

    id: str
    domain: str
    gold_calls: int
    reported: bool = True


def _domain(sample_id: str) -> str:
    return sample_id.rsplit("-", 1)[0]  # as print_results.py


def load_result_samples(path: Path) -> list[ResultSample]:
    """The result file's samples in file order, then the unreported placeholders per domain."""
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    if not files or not all(f.is_file() for f in files):
        raise FileNotFoundError(f"--results-file: no official result file at {str(path)!r}")
    out: dict[str, ResultSample] = {}
    for f in files:
        for n, rec in iter_jsonl(f):
            if not isinstance(rec, dict) or not isinstance(rec.get("id"), str) or not isinstance(rec.get("count_dict"), dict):
                raise ValueError(f"{f}:{n}: not an official result record (needs 'id' and 'count_dict')")
            counts: dict[str, Any] = rec["count_dict"]
            out[rec["id"]] = ResultSample(rec["id"], _domain(rec["id"]), int(counts.get("total_call_num") or 0))
    seen = {d: sum(1 for s in out.values() if s.domain == d) for d in DOMAIN_SIZES}
    for domain, size in DOMAIN_SIZES.items():
        for k in range(1, size - seen[domain] + 1):
            sid = f"{domain}-unreported{k}"
            out[sid] = ResultSample(sid, domain, 0, reported=False)
    return list(out.values())
