"""ComplexFuncBench: multi-step, parallel, constrained calls over Booking.com APIs, replayed with the
official decisions

The benchmark's folder, low to high:

* ``files``: its name, data files and their pinned sources;
* ``data``: the official record format, the tool schemas, the exact-value list, the first-turn
  gold calls; the valid aliases of the two API names tool-calling APIs reject;
* ``procedure``: the official decision procedure of one episode (pairing, format check, rule,
  exact values, response and LLM matchers; the pending gold list; the final result);
* ``prompts``, ``judging``: the official judge prompts (read from the official files) asked through
  the core's judge; ``rapidapi``: the live response-based matcher (off by default);
* ``tools``: the replay endpoints (one per sample; a session is an episode);
* ``metrics``: success rate, call accuracy, completeness, correctness, per domain;
* ``plugin``: the ``evals run`` plugin; ``export``: the official result format.

This module only declares it (no data is read).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...core.data import RemoteFile
from ...core.options import Option
from ...core.plugin import BenchmarkInfo, PaperNumbers
from .files import EXACT_MATCH, FULL, NAME, PROMPTS_COMPARE, PROMPTS_RESPONSE, SAMPLE, SOURCES, TOOL_INFO
from .metrics import METRICS

OPTIONS: tuple[Option, ...] = (
    Option("sample_set", str, "auto", "the official 1,000 samples (full), the one complete sample held (sample), or "
           "the full file when it is there and else the sample (auto)", choices=("auto", "full", "sample"), serve=True),
    Option("samples_file", str, "", "read the samples from these files instead (comma-separated; the official record "
           "format, .jsonl or .json)", serve=True, metavar="FILES"),
    Option("results_file", str, "", "score this official result file (result.jsonl, or a folder of them) without "
           "the dataset, as print_results.py does; set by `evals score FILE --format complexfuncbench-official` "
           "when the dataset is absent (ignored with --samples-file)", metavar="FILE", run=False),
    Option("call_judge", str, None, "the LLM judge of the official call comparison (the official code uses "
           "openai:gpt-4o-2024-05-13); without one, a call that only the judge could accept does not match",
           serve=True, metavar="MODEL"),
    Option("call_judge_base_url", str, "", "base URL of the call judge's provider (an OpenAI-compatible server)",
           serve=True, affects_results=False, metavar="URL"),
    Option("rapidapi_matcher", bool, False, "the official response-based matcher: send both calls to the live "
           "Booking API (RapidAPI; costs money; key in $RAPID_API_KEY) and match equal answers", serve=True),
    Option("rapidapi_url", str, "", "send the Booking API requests to this base URL instead of RapidAPI's",
           serve=True, affects_results=False, metavar="URL"),
)


def needed_files(options: Mapping[str, Any], data_dir: Path) -> list[tuple[str, RemoteFile]]:
    """What the loader and the chosen matchers read and ``data_dir`` lacks: the exact-value list; the
    call-comparison prompts with ``--call-judge``; the API map with ``--rapidapi-matcher``; the full
    file when asked for (the held sample cannot be downloaded: it is cut from a third-party file).
    The answer judge's prompts are read when a run is scored with ``--judge``."""
    wanted = {"/".join(EXACT_MATCH)}
    if options.get("call_judge"):
        wanted.add("/".join(PROMPTS_COMPARE))
    if options.get("rapidapi_matcher"):
        wanted.add("/".join(TOOL_INFO))
    out = [(f"{NAME}-official", f) for f in SOURCES[f"{NAME}-official"]
           if f.dest in wanted and not (data_dir / f.dest).is_file()]
    if not options.get("samples_file") and options.get("sample_set") == "full" and not data_dir.joinpath(*FULL).is_file():
        out.extend((NAME, f) for f in SOURCES[NAME])
    return out


def _paper_setting(summary: Mapping[str, Any]) -> dict[str, Any]:
    return {"dataset": NAME if summary.get("full_set") else f"{NAME}-partial", "strategy": "agent"}


INFO = BenchmarkInfo(
    name=NAME, plugin=".plugin:ComplexFuncBenchBenchmark", scorer_version=2,  # CHANGELOG.md
    options=OPTIONS, metrics=METRICS, uses_judge=True,
    data_sources=SOURCES, needed_files=needed_files,
    paper_numbers=PaperNumbers(_paper_setting, "success_rate"),
)
BENCHMARKS = (INFO,)

__all__ = ["BENCHMARKS", "EXACT_MATCH", "FULL", "INFO", "PROMPTS_COMPARE", "PROMPTS_RESPONSE", "SAMPLE", "TOOL_INFO"]
