"""BFCL's name, its data file (the pinned ``bfcl-eval`` wheel), its categories, and the names tools are served under."""

from __future__ import annotations

from ...core.data import RemoteFile

__all__ = ["ALL_CATEGORIES", "FORMAT_SENSITIVITY", "MEMORY_SERVED", "MEMORY_VECTOR", "MULTI_TURN", "NAME", "NO_ANSWER", "REFUSED", "SERVED",
           "SINGLE_TURN", "WEB_SEARCH", "SOURCES", "VERSION", "WHEEL", "language", "served_name"]

NAME = "bfcl"  # the registry name; also the folder of its files under the data directory
VERSION = "2026.3.23"  # PyPI bfcl-eval (Apache-2.0): BFCL v4's test files and its own checkers
WHEEL = (NAME, f"bfcl_eval-{VERSION}-py3-none-any.whl")

# PyPI's files URL of the wheel; the data is read straight out of it (never unpacked, never imported)
_PYPI = "https://files.pythonhosted.org/packages/ba/41/ed458527c770c50225b60bae3b0c3444b26804ee455fa2d8f187018d2cb2"
SOURCES: dict[str, tuple[RemoteFile, ...]] = {
    NAME: (
        RemoteFile(f"{NAME}/{WHEEL[1]}", f"{_PYPI}/{WHEEL[1]}",
                   "3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a", 1925664,
                   pinned_path=WHEEL[1]),
    ),
}

# The single-turn categories: served and scored by the AST checker's (and the relevance) rules.
SINGLE_TURN = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance",
               "simple_java", "simple_javascript",
               "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple", "live_irrelevance",
               "live_relevance")
# The categories whose wheel has no possible answers: only whether a call is made is scored.
NO_ANSWER = ("irrelevance", "live_irrelevance", "live_relevance")
# The multi-turn categories: BFCL's stateful backends behind the tools, scored by its multi-turn checker.
# the name of BFCL's result files' format (`evals score --format`, `evals export --format`)
FORMAT = "bfcl-official"
MULTI_TURN = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")
SERVED = SINGLE_TURN + MULTI_TURN
# The agentic memory categories served (each over its own BFCL backend; module .memory says why these two).
MEMORY_SERVED = ("memory_kv", "memory_rec_sum")
# Served when named and its embedding model is a local folder (.memory_vector)
MEMORY_VECTOR = "memory_vector"
# The web-search categories: served when BFCL's backend can run (its packages and a SerpAPI key; .web_search)
WEB_SEARCH = ("web_search_base", "web_search_no_snippet")
# Categories refused by name, each with the one-line reason (none now: web search and memory_vector run when
# named and the user can run them, .web_search and .memory_vector; their result files are read as memory's)
REFUSED: dict[str, str] = {}
# Served with the prompting strategy only (BFCL runs it only for prompting models, each entry under one of
# its 26 system-prompt configurations); BFCL's evaluator skips it for function-calling models.
FORMAT_SENSITIVITY = "format_sensitivity"
ALL_CATEGORIES = SERVED + MEMORY_SERVED + (FORMAT_SENSITIVITY,) + tuple(REFUSED)


def served_name(name: str) -> str:
    """The tool name a function is served under: BFCL's FC handlers replace every ``.`` with ``_``
    (OpenAI-style APIs allow ``^[a-zA-Z0-9_-]{1,64}$``); its checker compares names so converted."""
    return name.replace(".", "_")


def language(category: str) -> str:
    """The language a category's functions are written in, as BFCL tells them apart by name:
    ``java`` (but not ``javascript``), ``javascript``, else ``python``."""
    if "javascript" in category:
        return "javascript"
    return "java" if "java" in category else "python"
