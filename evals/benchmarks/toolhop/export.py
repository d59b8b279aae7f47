"""The ``toolhop-official`` format: the output file of ToolHop's official evaluation scripts
(``code/evaluation_closed.py`` / ``evaluation_open.py``: one sample per line, with its ``messages`` and
``answer_correct``), read for ``evals score FILE --format toolhop-official --benchmark toolhop``.

The file is scored alone, as the official scripts score it (see :mod:`.official`): one task per line
(a repeated id counts on each of its lines, ``<id>@<k>``), unreported placeholders up to 995, and two
metrics: ``official_result`` (what ``evaluation_closed.py`` prints) and ``official_answer_rule``
(``sample_process``'s rule re-applied to every line's messages: predictions made elsewhere, without
``answer_correct``, are matched as the official code matches them). A run's own traces are not
written in this format (there is no export: our episodes do not keep the official message list).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...core.formats import ImportedPredictions, PredictionFormat, imported_trace
from .official import addable, read_output_file, rule, stop_reasons

__all__ = ["FORMAT", "official_format", "read_official"]

FORMAT = "toolhop-official"


def read_official(path: Path) -> ImportedPredictions:
    records = read_output_file(path)
    traces: dict[str, dict[str, Any]] = {}
    for r in records:
        decision, stop = rule(r.record)
        msgs = r.record.get("messages")
        last = msgs[-1] if isinstance(msgs, list) and msgs and isinstance(msgs[-1], dict) else {}
        final = last.get("content") if isinstance(last.get("content"), str) else None
        outcome = {"official": {"recorded": addable(r.recorded), "rule": decision, "rule_stop": stop, "line": r.line}}
        traces[r.key] = imported_trace(r.key, outcome, final_answer=final, source=str(path))
    return ImportedPredictions(traces, strategy=None, options={"results_file": str(path.resolve())}, covers_all=True,
                               warnings=tuple(stop_reasons(path, records)))


def _no_export(run_dir: Any, out: Path) -> list[Path]:
    raise ValueError(f"{FORMAT} is read only (`evals score FILE --format {FORMAT}`): a run's traces do not keep the "
                     f"official scripts' message lists")


def official_format() -> PredictionFormat:
    return PredictionFormat(FORMAT, "the official evaluation_closed.py / evaluation_open.py output file (one sample "
                            "per line: id, messages, answer, answer_correct); read only", _no_export, read_official)
