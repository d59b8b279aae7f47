"""Parts of the ``evals`` command line kept apart from :mod:`evals.cli`: the parser's behaviour
(:mod:`.parser`: help with defaults, typo suggestions, sub-commands built on use) and ``evals list``
/ ``--version`` (:mod:`.listing`), ``evals data`` (:mod:`.data`), what a summary says beside its
numbers (:mod:`.summary`)."""

from .data import build_data_parser, cmd_data_fetch, cmd_data_stats, json_line
from .listing import add_list_parser, add_serve_option_groups, benchmark_listing, cmd_list, version_string
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
    "json_line",
    "DefaultsHelpFormatter",
    "EvalsParser",
    "LazySubParsers",
    "RawDefaultsHelpFormatter",
    "add_list_parser",
    "add_serve_option_groups",
    "benchmark_listing",
    "build_all",
    "cmd_list",
    "suggest",
    "version_string",
]
