"""Typed, validated options: the core's and each benchmark's, as flags and in a config file.

A benchmark declares its settings as :class:`Option` values; ``evals run NAME`` adds them as flags
(with their help text) next to the core's, ``evals run NAME --help`` lists them, a YAML/JSON config
file (``--config``) may give any of them, and the run's ``config.json`` records every value. An
option that changes results (``affects_results``, the default) must match when a run is resumed.
Options with ``serve=True`` shape the served tools, so ``evals serve`` takes them too; options with
``scoring=True`` change only how finished traces are scored, so ``evals score`` takes them and
re-scores a run offline with another value (no model is called).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Option", "OptionError", "add_options", "load_config_file", "resolve_options"]


class OptionError(ValueError):
    """An option value is missing, of the wrong type, or not allowed; the message names it."""


_TYPES: dict[type, str] = {str: "text", int: "integer", float: "number", bool: "true/false"}


@dataclass(frozen=True)
class Option:
    """One setting: its name (``kg_search``; the flag is ``--kg-search``), type, default and help."""

    name: str
    type: type
    default: Any
    help: str
    choices: tuple[Any, ...] | None = None
    affects_results: bool = True  # recorded in the run's result config; a resume must match it
    serve: bool = False  # shapes the served tools: `evals serve` takes it too
    scoring: bool = False  # changes only how traces are scored: `evals score` takes it (re-scores offline)
    run: bool = True  # `evals run` takes it (False: a serve-only option)
    check: Callable[[Any], str | None] | None = None  # extra validation: an error message, or None
    model: bool = False  # the value names a model (``openai:...``): the core opens it like --model
    aliases: tuple[tuple[Any, Any], ...] = ()  # (old or other spelling, value): accepted and mapped
    metavar: str | None = None
    multiple: bool = False  # the flag may be repeated; the value is a list (None when never given)

    def __post_init__(self) -> None:
        if self.type not in _TYPES:
            raise TypeError(f"option {self.name!r}: type must be one of str, int, float, bool")
        if not self.name.isidentifier():
            raise ValueError(f"option name {self.name!r} is not an identifier")

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def convert(self, value: Any) -> Any:
        """``value`` (from a flag's text or a config file) as this option's type; raises :class:`OptionError`."""
        if self.multiple and value is not None:
            items = value if isinstance(value, list | tuple) else [value]
            return [self._convert_one(v) for v in items]
        return self._convert_one(value)

    def _convert_one(self, value: Any) -> Any:
        if value is None:
            if self.default is None:
                return None
            raise OptionError(f"{self.flag} needs a value ({_TYPES[self.type]})")
        if self.type is bool:
            if isinstance(value, bool):
                out: Any = value
            elif isinstance(value, str) and value.strip().lower() in ("true", "yes", "1", "on"):
                out = True
            elif isinstance(value, str) and value.strip().lower() in ("false", "no", "0", "off"):
                out = False
            else:
                raise OptionError(f"{self.flag} expects true or false, got {value!r}")
        elif self.type is int:
            if isinstance(value, bool) or not isinstance(value, int | str):
                raise OptionError(f"{self.flag} expects an integer, got {value!r}")
            try:
                out = int(value)
            except ValueError:
                raise OptionError(f"{self.flag} expects an integer, got {value!r}") from None
        elif self.type is float:
            if isinstance(value, bool) or not isinstance(value, int | float | str):
                raise OptionError(f"{self.flag} expects a number, got {value!r}")
            try:
                out = float(value)
            except ValueError:
                raise OptionError(f"{self.flag} expects a number, got {value!r}") from None
        else:
            if not isinstance(value, str):
                raise OptionError(f"{self.flag} expects text, got {value!r}")
            out = value
        out = dict(self.aliases).get(out, out)
        if self.choices is not None and out not in self.choices:
            raise OptionError(f"{self.flag} must be one of {', '.join(map(str, self.choices))}; got {out!r}")
        if self.check is not None:
            problem = self.check(out)
            if problem:
                raise OptionError(f"{self.flag}: {problem}")
        return out

    def add_to(self, parser: argparse.ArgumentParser | Any) -> None:
        """Add this option as a flag to an argparse parser (or argument group)."""
        help_text = self.help + ("" if self.default is None else f" (default: {self.default})")
        if self.type is bool and self.default is False:
            parser.add_argument(self.flag, dest=self.name, action="store_true", default=argparse.SUPPRESS, help=help_text)
            return

        def parse(text: str) -> Any:
            try:
                return self._convert_one(text)
            except OptionError as exc:
                raise argparse.ArgumentTypeError(str(exc)) from None

        parser.add_argument(
            self.flag, dest=self.name, type=parse, default=argparse.SUPPRESS, help=help_text,
            action="append" if self.multiple else "store",
            metavar=self.metavar or ("{" + ",".join(map(str, self.choices)) + "}" if self.choices else _TYPES[self.type].upper()),
        )


def add_options(parser: argparse.ArgumentParser | Any, options: Iterable[Option]) -> None:
    """Add every option as a flag; a flag left out keeps the option's default (see :func:`resolve_options`)."""
    for option in options:
        option.add_to(parser)


def resolve_options(options: Sequence[Option], given: Mapping[str, Any], *, where: str = "") -> dict[str, Any]:
    """Every option's value: ``given`` (converted and checked) or its default. Unknown names are refused."""
    known = {o.name: o for o in options}
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise OptionError(
            f"unknown option(s) {', '.join(unknown)}{' for ' + where if where else ''}; "
            f"known: {', '.join(sorted(known)) or 'none'}"
        )
    return {name: (o.convert(given[name]) if name in given else o.default) for name, o in known.items()}


def load_config_file(path: str | Path) -> dict[str, Any]:
    """A run's settings from a YAML or JSON file: a mapping of option names (``kg_search`` or ``kg-search``)."""
    from tool_specs import load_yaml
    from tool_specs.bounded_read import bounded_text

    p = Path(path)
    try:
        data = load_yaml(bounded_text(p), p)[0]  # untrusted: no more than MAX_LINE_BYTES read
    except OSError as exc:
        raise OptionError(f"cannot read the config file {p}: {exc}") from None
    except ValueError as exc:  # past the bound (LineTooLong), not UTF-8, DocumentError: FILE:LINE
        raise OptionError(str(exc)) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise OptionError(f"the config file {p} must hold a mapping of option names to values, not {type(data).__name__}")
    return {str(k).replace("-", "_"): v for k, v in data.items()}
