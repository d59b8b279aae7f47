"""BFCL's name, its data file (the pinned ``bfcl-eval`` wheel), its categories, and the names tools are served under."""

from __future__ import annotations

from ...core.data import RemoteFile

__all__ = ["ALL_CATEGORIES", "LATER", "MULTI_TURN", "NAME", "SERVED", "SINGLE_TURN", "SOURCES", "VERSION", "WHEEL", "served_name"]

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

# The single-turn, non-live Python categories: served and scored by the AST checker's rules.
SINGLE_TURN = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance")
# The multi-turn categories: BFCL's stateful backends behind the tools, scored by its multi-turn checker.
MULTI_TURN = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")
SERVED = SINGLE_TURN + MULTI_TURN
# BFCL v4's other categories: named so that asking for one says "not served yet" instead of "unknown".
LATER = (
    "simple_java", "simple_javascript",
    "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple", "live_irrelevance", "live_relevance",
    "memory", "web_search", "format_sensitivity",
)
ALL_CATEGORIES = SERVED + LATER


def served_name(name: str) -> str:
    """The tool name a function is served under: BFCL's FC handlers replace every ``.`` with ``_``
    (OpenAI-style APIs allow ``^[a-zA-Z0-9_-]{1,64}$``); its checker compares names so converted."""
    return name.replace(".", "_")
