"""The benchmarks: every package under ``evals/benchmarks/`` that lists :class:`BenchmarkInfo` entries.

A benchmark folder's ``__init__.py`` defines ``BENCHMARKS`` (a sequence of
:class:`~evals.core.plugin.BenchmarkInfo`); importing it must be cheap (no data is read and its plugin
module is not imported until an entry's ``load()``). The registry places each entry in the package
that declares it: a relative ``plugin`` string is found there, and paper numbers without a path
read the ``paper_numbers.yaml`` beside its ``__init__``; an entry without a description takes the first
paragraph of the package's docstring. Adding a benchmark is adding a folder: nothing here names one.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from .options import Option, resolve_options
from .plugin import PLUGIN_REF, Benchmark, BenchmarkInfo

__all__ = ["CORE_OPTION_NAMES", "all_benchmarks", "get_benchmark", "load_benchmark", "own_options", "scoring_options",
           "serve_options"]

PACKAGE = "evals.benchmarks"
# names the core uses in a run's ``options``: a benchmark's option may not take one of them
CORE_OPTION_NAMES = frozenset({
    "max_turns", "tool_choice", "max_tokens", "temperature", "base_url", "model_args", "judge_model",
    "trace_max_value_bytes",
})


def _check(info: BenchmarkInfo, where: str) -> None:
    if not info.description:
        raise ValueError(f"{where}: {info.name} has no description (give one, or a docstring to the package)")
    if not PLUGIN_REF.fullmatch(info.plugin):
        raise ValueError(f"{where}: {info.name}'s plugin {info.plugin!r} is not 'module:ClassName' (e.g. '.plugin:MyBenchmark')")
    if info.default_strategy not in info.strategies:
        raise ValueError(f"{where}: {info.name}'s default strategy {info.default_strategy!r} is not one of its strategies")
    names = [o.name for o in info.options]
    if len(set(names)) != len(names) or CORE_OPTION_NAMES & set(names):
        raise ValueError(f"{where}: {info.name}'s options repeat a name or take a core one: {names}")


def _placed(info: BenchmarkInfo, mod: ModuleType) -> BenchmarkInfo:
    """``info`` as declared by package ``mod``: its plugin found there, its paper numbers beside it, its
    description (when it states none) the first paragraph of the package's docstring."""
    paper = info.paper_numbers
    if paper is not None and paper.path is None:
        paper = dataclasses.replace(paper, path=Path(mod.__file__ or "").with_name("paper_numbers.yaml"))
    description = info.description or " ".join((mod.__doc__ or "").strip().split("\n\n")[0].split())
    return dataclasses.replace(info, package=info.package or mod.__name__, paper_numbers=paper, description=description)


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
            info = _placed(info, mod)
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
