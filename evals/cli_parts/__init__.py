"""Parts of the ``evals`` command line kept apart from :mod:`evals.cli`: the parser's behaviour
(:mod:`.parser`: help with defaults, typo suggestions, sub-commands built on use) and ``evals list``
/ ``--version`` (:mod:`.listing`), ``evals data`` and the first-use download (:mod:`.data`), what a
summary says beside its numbers (:mod:`.summary`), ``evals serve`` (:mod:`.serve`), ``evals run`` and
its exit statuses (:mod:`.run`)."""

from .data import build_data_parser, cmd_data_fetch, cmd_data_stats, ensure_benchmark_data, json_line
from .listing import (
    VersionAction,
    add_list_parser,
    add_serve_option_groups,
    benchmark_listing,
    cmd_list,
    version_string,
)
from .parser import (
    DefaultsHelpFormatter,
    EvalsParser,
    LazySubParsers,
    RawDefaultsHelpFormatter,
    build_all,
    suggest,
)

__all__ = [
    "build_data_parser",
    "cmd_data_fetch",
    "cmd_data_stats",
    "ensure_benchmark_data",
    "json_line",
    "DefaultsHelpFormatter",
    "EvalsParser",
    "LazySubParsers",
    "RawDefaultsHelpFormatter",
    "VersionAction",
    "add_list_parser",
    "add_serve_option_groups",
    "benchmark_listing",
    "build_all",
    "cmd_list",
    "suggest",
    "version_string",
]
