"""Benchmark registry: names the CLI and server accept, and how to load each one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tool_specs import Catalog

if TYPE_CHECKING:
    from .base import BenchmarkPlugin

FAMILYTOOL = ("familytool-b", "familytool-e")


@dataclass(frozen=True)
class BenchmarkInfo:
    name: str
    description: str
    has_kg: bool
    load_catalog: Callable[[], Catalog]
    load_plugin: Callable[[], BenchmarkPlugin] | None = None  # None: served, but not runnable by evals run


def _familytool(name: str) -> BenchmarkInfo:
    def load() -> Catalog:
        from .familytool import FamilyToolCatalog

        return FamilyToolCatalog(name)

    def plugin() -> BenchmarkPlugin:
        from .familytool_plugin import FamilyToolPlugin

        return FamilyToolPlugin(name)

    kind = "base" if name.endswith("-b") else "extended"
    return BenchmarkInfo(name, f"FamilyTool ({kind}): one call needing 1-6 hops over a family KG", True, load, plugin)


def _toolhop() -> BenchmarkInfo:
    def load() -> Catalog:
        from .toolhop import ToolHopCatalog

        return ToolHopCatalog()

    def plugin() -> BenchmarkPlugin:
        from .toolhop_plugin import ToolHopPlugin

        return ToolHopPlugin()

    return BenchmarkInfo(
        "toolhop",
        "ToolHop: 3-7 dependent calls of real Python tools run in a sandbox (the full file when "
        "fetched, else the 100-query subset; $EVALS_TOOLHOP=full|subset forces one)",
        False, load, plugin,
    )


BENCHMARKS: dict[str, BenchmarkInfo] = {n: _familytool(n) for n in FAMILYTOOL}
BENCHMARKS["toolhop"] = _toolhop()


def runnable() -> list[str]:
    """Benchmarks ``evals run`` can drive."""
    return [n for n, b in BENCHMARKS.items() if b.load_plugin is not None]


def get_plugin(name: str) -> BenchmarkPlugin:
    info = get_benchmark(name)
    if info.load_plugin is None:
        raise KeyError(f"benchmark {name!r} can be served but not run yet; runnable: {', '.join(runnable())}")
    return info.load_plugin()


def get_benchmark(name: str) -> BenchmarkInfo:
    try:
        return BENCHMARKS[name]
    except KeyError:
        raise KeyError(f"unknown benchmark {name!r}; known: {', '.join(BENCHMARKS)}") from None
