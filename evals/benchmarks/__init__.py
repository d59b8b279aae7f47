"""Benchmark registry: names the CLI and server accept, and how to load each one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tool_specs import Catalog

FAMILYTOOL = ("familytool-b", "familytool-e")


@dataclass(frozen=True)
class BenchmarkInfo:
    name: str
    description: str
    has_kg: bool
    load_catalog: Callable[[], Catalog]


def _familytool(name: str) -> BenchmarkInfo:
    def load() -> Catalog:
        from .familytool import FamilyToolCatalog

        return FamilyToolCatalog(name)

    kind = "base" if name.endswith("-b") else "extended"
    return BenchmarkInfo(name, f"FamilyTool ({kind}): one call needing 1-6 hops over a family KG", True, load)


BENCHMARKS: dict[str, BenchmarkInfo] = {n: _familytool(n) for n in FAMILYTOOL}


def get_benchmark(name: str) -> BenchmarkInfo:
    try:
        return BENCHMARKS[name]
    except KeyError:
        raise KeyError(f"unknown benchmark {name!r}; known: {', '.join(BENCHMARKS)}") from None
