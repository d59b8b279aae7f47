"""Parts of the ``evals`` command line kept apart from :mod:`evals.cli`: the parser's behaviour
(:mod:`.parser`: help with defaults, typo suggestions, sub-commands built on use) and ``evals list``
/ ``--version`` (:mod:`.listing`)."""

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
