"""The ``evals`` argument parser's behaviour: help that shows every default, suggestions for typos.

:class:`EvalsParser` is the parser class of ``evals`` and of every sub-command: its help formatter
appends ``(default: X)`` to a flag's help where the text does not state its default already, and
an unknown flag or choice gets the closest known one (``--concurency`` -> ``--concurrency``,
:mod:`difflib`), looked up among the flags of the sub-command the command line selected.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

__all__ = [
    "DefaultsHelpFormatter", "EvalsParser", "LazySubParsers", "RawDefaultsHelpFormatter", "build_all", "suggest",
    "workers_arg",
]

_STATED = re.compile(r"\bdefault\b|%\(default\)", re.IGNORECASE)


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Appends ``(default: X)`` to the help of a flag that takes a value and has a default the text
    does not state (``--port`` -> ``(default: 8765)``)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (action.option_strings and action.nargs != 0 and default not in (None, argparse.SUPPRESS, [], "")
                and not _STATED.search(text)):
            shown = ",".join(map(str, default)) if isinstance(default, list | tuple) else str(default)
            text = f"{text} (default: {shown})" if text else f"(default: {shown})"
        return text.replace("%", "%%") if "%(" not in text else text


class RawDefaultsHelpFormatter(argparse.RawDescriptionHelpFormatter, DefaultsHelpFormatter):
    """:class:`DefaultsHelpFormatter` that keeps descriptions and epilogs as written."""


def suggest(word: str, candidates: Sequence[str]) -> str | None:
    """The candidate closest to ``word`` (difflib), or None when none is close."""
    found = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return found[0] if found else None


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction[Any] | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


class EvalsParser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` with :class:`DefaultsHelpFormatter` and typo suggestions."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fmt = kwargs.get("formatter_class")
        if fmt is None or fmt is argparse.HelpFormatter:
            kwargs["formatter_class"] = DefaultsHelpFormatter
        elif fmt is argparse.RawDescriptionHelpFormatter:
            kwargs["formatter_class"] = RawDefaultsHelpFormatter
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", LazySubParsers)
        self._argv: list[str] = []

    def parse_known_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        self._argv = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def _selected(self) -> argparse.ArgumentParser:
        """The deepest sub-command parser the command line names (``run NAME`` -> its parser)."""
        parser: argparse.ArgumentParser = self
        for token in self._argv:
            sub = _subparsers(parser)
            if sub is None:
                break
            if token in sub.choices:
                parser = sub.choices[token]
        return parser

    def error(self, message: str) -> NoReturn:
        hint = self._hint(message)
        # argparse reports a sub-command's unknown flags from the top-level parser: show the usage
        # of the sub-command the command line selected (``evals serve --prot`` -> ``evals serve``'s)
        target = self._selected() if self._argv and message.startswith("unrecognized arguments:") else self
        argparse.ArgumentParser.error(target, f"{message}{hint}")

    def _hint(self, message: str) -> str:
        if message.startswith("unrecognized arguments:"):
            parser = self._selected() if self._argv else self
            known = [s for a in parser._actions for s in a.option_strings if s.startswith("--")]
            hints = []
            for token in message.partition(":")[2].split():
                if token.startswith("-"):
                    flag = token.split("=", 1)[0]
                    close = suggest(flag, known)
                    if close:
                        hints.append(f"{flag} -> {close}")
            return f" (did you mean: {'; '.join(hints)}?)" if hints else ""
        m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m:
            choices = [c.strip().strip("'") for c in m.group(2).split(",")]
            close = suggest(m.group(1), choices)
            return f" (did you mean {close!r}?)" if close else ""
        return ""


class LazySubParsers(argparse._SubParsersAction):  # type: ignore[type-arg]
    """Sub-commands whose arguments are added only when the command line selects them
    (:meth:`add_lazy`), so ``evals --help`` imports nothing a sub-command needs. Registered on
    :class:`EvalsParser` as the ``parsers`` action: ``add_subparsers()`` makes one."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.builders: dict[str, Callable[[argparse.ArgumentParser], None]] = {}

    def add_lazy(self, name: str, build: Callable[[argparse.ArgumentParser], None], **kwargs: Any) -> argparse.ArgumentParser:
        """A sub-command ``name`` (``help``, ``description``, ... as for ``add_parser``) whose
        arguments ``build(parser)`` adds when it is first needed."""
        parser: argparse.ArgumentParser = self.add_parser(name, **kwargs)
        self.builders[name] = build
        return parser

    def build(self, name: str) -> argparse.ArgumentParser:
        """Sub-command ``name``'s parser with its arguments (built on the first call)."""
        parser: argparse.ArgumentParser = self.choices[name]
        builder = self.builders.pop(name, None)
        if builder is not None:
            builder(parser)
        return parser

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if values and values[0] in self.choices:
            self.build(values[0])
        super().__call__(parser, namespace, values, option_string)


def build_all(parser: argparse.ArgumentParser) -> None:
    """Build every lazy sub-command of ``parser``, recursively (for tests and documentation)."""
    sub = _subparsers(parser)
    if sub is None:
        return
    for name in list(sub.choices):
        child = sub.build(name) if isinstance(sub, LazySubParsers) else sub.choices[name]
        build_all(child)


def workers_arg(value: str) -> int | None:
    """``--workers N|auto`` (of ``evals run`` and ``evals serve``): N, or None for auto."""
    if value == "auto":
        return None
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of workers or 'auto', got {value!r}") from None
