"""The summary's ``anomalies``: what was unusual in a run or an import, and how it was counted.

Every entry is ``{kind, source, message, count, where, counted_as, official}``:

* ``kind``: a short name (``repeated_id``, ``errored_episodes``, a metric's key, or ``warning`` for a
  plain line that says no more);
* ``source``: ``import`` (what a prediction reader noticed in its files), ``run`` (how the run went:
  errored episodes, tasks not run, a subset, missing trials) or ``scoring`` (what the scores counted);
* ``message``: the line, as the summary's ``warnings`` (kept beside it, strings) say it;
* ``count``: the records (tasks, lines, answers) affected, when known;
* ``where``: ``FILE:LINE`` s or task ids, at most :data:`WHERE_CAP` of them;
* ``counted_as``: how this project counted them; ``official``: what the official code does with them,
  when known.

The core names no benchmark: a benchmark contributes entries through the existing mechanisms, a
prediction reader's ``warnings`` (a plain string, or an :class:`Anomaly` for the structured fields)
and a metric declared with ``warn`` (its ``warn_counted_as`` and ``warn_official``); ``--epochs``
adds its missing trials. The run's own
entries are read from the summary (``errored``, ``partial``, ``subset_note``, ``dataset_note``,
the judge's ``missing`` decisions, ``rescored_with``) and the run's ``config.json``.
A value read back from a config is checked and bounded (it may come from another machine).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["WHERE_CAP", "Anomaly", "anomaly_entry", "gather_anomalies", "refresh_anomalies"]

WHERE_CAP = 10  # places listed per entry; ``count`` says how many there are
_TEXT_CAP = 2000  # characters kept of a text field read back from a config
Source = Literal["import", "run", "scoring"]
_SOURCES = ("import", "run", "scoring")


@dataclass(frozen=True)
class Anomaly:
    """One unusual thing, as a reader or a scorer says it (see the module's docstring)."""

    kind: str
    message: str
    count: int | None = None
    where: tuple[str, ...] = ()
    counted_as: str = ""
    official: str = ""

    def __str__(self) -> str:  # the warning line
        return self.message

    def to_dict(self, source: Source) -> dict[str, Any]:
        return {"kind": self.kind, "source": source, "message": self.message, "count": self.count,
                "where": list(self.where[:WHERE_CAP]), "counted_as": self.counted_as or None,
                "official": self.official or None}


def _text(value: Any) -> str | None:
    if value is None or value == "":
        return None
    text = " ".join(str(value).split())
    return text if len(text) <= _TEXT_CAP else text[: _TEXT_CAP - 1] + "…"


def anomaly_entry(item: Any, source: Source) -> dict[str, Any]:
    """An entry of ``item``: an :class:`Anomaly`, a mapping (e.g. read back from a config: checked,
    bounded) or a plain line (``{kind: "warning", message}``)."""
    if isinstance(item, Anomaly):
        return item.to_dict(source)
    if not isinstance(item, Mapping):
        return Anomaly("warning", _text(item) or "").to_dict(source)
    count = item.get("count")
    where = item.get("where")
    return {"kind": _text(item.get("kind")) or "warning", "source": source, "message": _text(item.get("message")) or "",
            "count": count if isinstance(count, int) and not isinstance(count, bool) and count >= 0 else None,
            "where": [t for w in where[:WHERE_CAP] if (t := _text(w))] if isinstance(where, list) else [],
            "counted_as": _text(item.get("counted_as")), "official": _text(item.get("official"))}


def _imported(config: Mapping[str, Any]) -> list[dict[str, Any]]:
    imported = config.get("imported")
    if not isinstance(imported, Mapping):
        return []
    items = imported.get("anomalies")
    if not isinstance(items, list):  # an import made before the field: its plain warnings
        items = imported.get("warnings")
    return [anomaly_entry(i, "import") for i in items] if isinstance(items, list) else []


def _ids(ids: Iterable[str]) -> tuple[str, ...]:
    return tuple(list(ids)[:WHERE_CAP])


def _run_entries(summary: Mapping[str, Any], config: Mapping[str, Any], errored_ids: Sequence[str],
                 untraced_ids: Sequence[str]) -> list[dict[str, Any]]:
    out: list[Anomaly | dict[str, Any]] = []
    imported = isinstance(config.get("imported"), Mapping)
    tasks = int(summary.get("tasks") or 0)
    errored = int(summary.get("errored") or 0)
    if errored and imported:
        out.append(Anomaly("no_prediction", f"{errored} of {tasks} tasks have no prediction in the imported files",
                           errored, _ids(errored_ids), "failed (scored from an empty prediction)"))
    elif errored:
        first = summary.get("first_error") or {}
        brief = f" (first: {first.get('type')}: {first.get('message')})" if first else ""
        out.append(Anomaly("errored_episodes", f"{errored} of {tasks} episodes errored{brief}", errored,
                           _ids(errored_ids), "scored from the trace the episode left: a task without an answer "
                           "counts as failed"))
    if untraced_ids and imported:
        out.append(Anomaly("no_prediction", f"{len(untraced_ids)} of {tasks} tasks have no prediction in the imported "
                           "files", len(untraced_ids), _ids(untraced_ids),
                           "failed: the run covers every task, as the official script divides by the full set's size"))
    elif untraced_ids:
        ran = tasks - len(untraced_ids)
        out.append(Anomaly("not_run", f"partial run: {len(untraced_ids)} of {tasks} selected tasks did not run "
                           f"(stopped, or still in progress)", len(untraced_ids), _ids(untraced_ids),
                           f"left out: the metrics are over the {ran} tasks that ran" if ran else "no metrics",
                           "the papers' numbers are over every task: not comparable"))
    if summary.get("subset_note"):
        total, n = summary.get("benchmark_tasks"), summary.get("tasks")
        left = total - n if isinstance(total, int) and isinstance(n, int) else None
        out.append(Anomaly("subset", str(summary["subset_note"]), left, (), "left out of every metric",
                           "the papers' numbers are over every task"))
    if summary.get("full_set") is False or summary.get("dataset_note"):
        out.append(Anomaly("dataset", str(summary.get("dataset_note") or "not the paper's full set: not comparable")))
    return [anomaly_entry(a, "run") for a in out]


def _scoring_entries(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    out: list[Anomaly] = []
    missing = ((summary.get("totals") or {}).get("judge") or {}).get("missing")
    if missing:
        out.append(Anomaly("judge_missing", f"{missing} judge decision(s) needed but neither stored nor asked (no "
                           "--judge)", int(missing), (), "left out of the metrics the judge decides "
                           "(`evals score RUN --judge MODEL` asks for them)"))
    again = summary.get("rescored_with")
    if isinstance(again, Mapping) and again:
        said = ", ".join(f"{k}={v}" for k, v in again.items())
        out.append(Anomaly("rescored", f"scored with {said}, not the run's own options", None, (),
                           "the traces read with these scoring options; no episode was run again"))
    return [a.to_dict("scoring") for a in out]


# the kinds gather_anomalies derives from the summary and the config (the others are added by their makers)
_DERIVED = frozenset({"no_prediction", "errored_episodes", "not_run", "subset", "dataset", "judge_missing", "rescored"})


def gather_anomalies(summary: Mapping[str, Any], config: Mapping[str, Any], added: Sequence[Mapping[str, Any]] = (),
                     *, errored_ids: Sequence[str] = (), untraced_ids: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The ``anomalies`` of a summary: the import's, the run's, then ``added`` (those their makers
    add: the metric counts declared with ``warn``, the epochs' missing trials) and the scoring's own
    (judge decisions missing, a re-scoring)."""
    return [*_imported(config), *_run_entries(summary, config, errored_ids, untraced_ids),
            *(dict(s) for s in added), *_scoring_entries(summary)]


def refresh_anomalies(summary: dict[str, Any], config: Mapping[str, Any], traces: Mapping[str, Mapping[str, Any]],
                      task_ids: Sequence[str]) -> None:
    """Gather the summary's ``anomalies`` (again, after blocks were added to it: a subset's note, the
    epochs, a benchmark's ``dataset_note``, ``rescored_with``); the entries added by their makers are kept."""
    kept = [a for a in summary.get("anomalies") or [] if a.get("source") != "import" and a.get("kind") not in _DERIVED]
    errored = [t for t in task_ids if (traces.get(t) or {}).get("status") == "errored"]
    untraced = [t for t in task_ids if t not in traces]
    summary["anomalies"] = gather_anomalies(summary, config, kept, errored_ids=errored, untraced_ids=untraced)
