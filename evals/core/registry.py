"""The benchmarks: every package under ``evals/benchmarks/`` that lists :class:`BenchmarkInfo` entries.

A benchmark folder's ``__init__.py`` defines ``BENCHMARKS`` (a sequence of
:class:`~evals.core.plugin.BenchmarkInfo`); importing it must be cheap (no data is read until an
entry's ``load()``). Adding a benchmark is adding a folder: nothing here names one.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from functools import cache
from typing import Any

from .options import Option, resolve_options
from .plugin import Benchmark, BenchmarkInfo

__all__ = ["CORE_OPTION_NAMES", "all_benchmarks", "get_benchmark", "load_benchmark", "own_options", "scoring_options",
           "serve_options"]

PACKAGE = "evals.benchmarks"
# names the core uses in a run's ``options``: a benchmark's option may not take one of them
CORE_OPTION_NAMES = frozenset({
    "max_turns", "tool_choice", "max_tokens", "temperature", "base_url", "model_args", "judge_model",
    "trace_max_value_bytes",
})


def _check(info: BenchmarkInfo, where: str) -> None:
    if info.default_strategy not in info.strategies:
        raise ValueError(f"{where}: {info.name}'s default strategy {info.default_strategy!r} is not one of its strategies")
    names = [o.name for o in info.options]
    if len(set(names)) != len(names) or CORE_OPTION_NAMES & set(names):
        raise ValueError(f"{where}: {info.name}'s options repeat a name or take a core one: {names}")


@cache
def all_benchmarks() -> dict[str, BenchmarkInfo]:
    """Every registered benchmark by name, in folder order."""
    package = importlib.import_module(PACKAGE)
    out: dict[str, BenchmarkInfo] = {}
    for module in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if not module.ispkg:
            continue
        mod = importlib.import_module(f"{PACKAGE}.{module.name}")
        for info in getattr(mod, "BENCHMARKS", ()):
            if not isinstance(info, BenchmarkInfo):
                raise TypeError(f"{mod.__name__}.BENCHMARKS holds {type(info).__name__}, not BenchmarkInfo")
            if info.name in out:
                raise ValueError(f"benchmark {info.name!r} is registered twice ({mod.__name__})")
            _check(info, mod.__name__)
            out[info.name] = info
    return out


def get_benchmark(name: str) -> BenchmarkInfo:
    """The registry entry of ``name``; ``KeyError`` names the known ones."""
    known = all_benchmarks()
    try:
        return known[name]
    except KeyError:
        raise KeyError(f"unknown benchmark {name!r}; known: {', '.join(known)}") from None


def load_benchmark(name: str, options: Mapping[str, Any] | None = None) -> Benchmark:
    """A loaded benchmark with its ``options`` (checked; defaults for the rest). A new one per call;
    its loaders cache the data they read."""
    info = get_benchmark(name)
    return info.load(resolve_options(info.options, options or {}, where=name))


def own_options(name: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of ``options`` (e.g. a run config's) that benchmark ``name`` declares."""
    own = {o.name for o in get_benchmark(name).options}
    return {k: v for k, v in options.items() if k in own}


def serve_options() -> list[Option]:
    """The options that shape served tools, over every benchmark (one per name)."""
    seen: dict[str, Option] = {}
    for info in all_benchmarks().values():
        for option in info.serve_options:
            other = seen.setdefault(option.name, option)
            if other != option:
                raise ValueError(f"two benchmarks declare the serve option {option.name!r} differently")
    return list(seen.values())


def scoring_options() -> list[Option]:
    """The options that change only scoring (``evals score`` takes them), over every benchmark (one per name)."""
    seen: dict[str, Option] = {}
    for info in all_benchmarks().values():
        for option in info.options:
            if option.scoring and seen.setdefault(option.name, option) != option:
                raise ValueError(f"two benchmarks declare the scoring option {option.name!r} differently")
    return list(seen.values())
