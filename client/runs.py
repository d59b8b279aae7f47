"""Run directories, episode traces and the recorder that writes them.

A *run* is a directory (:class:`RunDir`) holding the run's ``config.json`` (written once, compared
on every re-open: :class:`RunConfigMismatch`), ``traces.jsonl`` (one record per finished episode,
fsync-ed: the source of truth for resume and scoring), ``tools.jsonl`` (each tool list the episodes were
offered, once; the traces refer to it), ``events.jsonl`` (with ``--event-log``: every event as it happens)
and a lock that keeps a second writer out. An :class:`EpisodeRecorder` logs one episode's events and
builds its trace record; :func:`request_history` rebuilds the model requests from one.

The code lives in ``client._runs`` (one module per concern: ``jsonutil``, ``records``, ``recorder``,
``sharing``, ``lines``, ``toolstore``, ``jsonl``, ``nofollow``, ``secrets``, ``config``, ``resume``, ``rundir``); every public name of those modules is re-exported
here, and this is where other code imports them from.
"""

from client._runs.config import DEFAULT_HASH_KEYS, RunConfigMismatch, config_hash, package_version
from client._runs.jsonl import RunDiskFull, TraceScan, append_line, iter_jsonl, utf8_lines
from client._runs.jsonutil import canonical_json, dumps_line, error_info, is_transient, to_jsonable
from client._runs.nofollow import (
    RunFileIsLink,
    check_run_dir,
    fresh_output,
    install_tree,
    open_run_file,
    refuse_link,
    write_run_text,
)
from client._runs.recorder import EpisodeRecorder
from client._runs.records import SCHEMA_VERSION, EpisodeOutcome, EpisodeStatus, Totals, request_history
from client._runs.resume import RunSummary, finished_task_ids, summarize_traces
from client._runs.rundir import RunDir, RunDirClosed, RunLocked, RunTracesLost, TracesRead, read_traces
from client._runs.secrets import REDACTED, redact_secrets, redact_urls, secret_paths
from client._runs.sharing import CUT_NOTE, call_arguments, outcome_raw_arguments
from client._runs.toolstore import TOOLS_FILE, ToolLists, resolve_tools
from tool_specs.bounded_read import LineTooLong, read_lines, read_text_lines

__all__ = [
    "DEFAULT_HASH_KEYS",
    "CUT_NOTE",
    "REDACTED",
    "SCHEMA_VERSION",
    "EpisodeOutcome",
    "EpisodeRecorder",
    "EpisodeStatus",
    "LineTooLong",
    "RunConfigMismatch",
    "RunDir",
    "RunDirClosed",
    "RunDiskFull",
    "RunFileIsLink",
    "RunLocked",
    "RunSummary",
    "RunTracesLost",
    "TOOLS_FILE",
    "ToolLists",
    "TraceScan",
    "TracesRead",
    "Totals",
    "append_line",
    "canonical_json",
    "dumps_line",
    "check_run_dir",
    "fresh_output",
    "install_tree",
    "is_transient",
    "open_run_file",
    "redact_urls",
    "refuse_link",
    "utf8_lines",
    "write_run_text",
    "config_hash",
    "error_info",
    "redact_secrets",
    "secret_paths",
    "finished_task_ids",
    "iter_jsonl",
    "call_arguments",
    "outcome_raw_arguments",
    "package_version",
    "read_lines",
    "read_text_lines",
    "read_traces",
    "request_history",
    "resolve_tools",
    "summarize_traces",
    "to_jsonable",
]
