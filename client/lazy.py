"""A package's public names exported without importing their modules until first use (PEP 562).

A package names the modules it re-exports; each module's own ``__all__`` says which names it exports
(read from its source, not imported), so every name is listed once, where it is defined. The package's
``__getattr__`` imports a module on the first use of one of its names (``evals --help`` then registers
the sub-commands without the web app, numpy or the MCP SDK; ``import client.runs`` loads no SDK).

>>> _exports = LazyExports(__name__, ("runs", "messages"))   # doctest: +SKIP
>>> __all__ = _exports.names
>>> __getattr__ = _exports.attribute
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["LazyExports", "declared_all"]

_ALL = re.compile(r"^__all__\b[^=\n]*=\s*([\[(]?)", re.M)


def declared_all(path: Path) -> list[str]:
    """The names a module's top-level ``__all__ = [...]`` (a literal list or tuple of strings) lists,
    read from its source without importing it. ``ValueError`` names the file when there is none."""
    text = path.read_text(encoding="utf-8")
    found = _ALL.search(text)
    if found is None:
        raise ValueError(f"{path}: no top-level __all__")
    line = text.count("\n", 0, found.start()) + 1
    closing = text.find("]" if found.group(1) == "[" else ")", found.end())
    try:  # a list of names holds no bracket: the first closing one ends it
        names = ast.literal_eval(text[found.end() - 1:closing + 1]) if found.group(1) and closing > 0 else None
    except (SyntaxError, ValueError):
        names = None
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        raise ValueError(f"{path}:{line}: __all__ is not a literal list of names")
    return list(names)


class LazyExports:
    """The public names of ``package``'s ``modules`` (submodule names, relative to ``package``), each
    imported from its module on first use. ``names`` is the package's ``__all__`` (in module order);
    ``attribute`` its module-level ``__getattr__``. A name that two modules export (one re-exports the
    other's object) comes from the first module listed. A name may not be a module's name as well:
    once ``package.<name>`` is imported, Python sets the package's attribute to the module, so what
    ``from package import name`` gives would depend on what was imported before."""

    def __init__(self, package: str, modules: Sequence[str]) -> None:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise ValueError(f"{package!r} is not a package")
        folder = Path(next(iter(spec.submodule_search_locations)))
        self.package = package
        self.home: dict[str, str] = {}
        for module in modules:
            path = folder / f"{module}.py"
            for name in declared_all(path if path.is_file() else folder / module / "__init__.py"):
                self.home.setdefault(name, module)
        clash = sorted(set(self.home) & {p.stem for p in folder.glob("*.py")} | set(self.home) & set(modules))
        if clash:
            raise ValueError(f"{package}: {', '.join(clash)} is both an exported name and a module of the package")
        self.names = list(self.home)

    def attribute(self, name: str) -> Any:
        """``package``'s attribute ``name``, from its module imported now; ``AttributeError`` otherwise."""
        home = self.home.get(name)
        if home is None:
            raise AttributeError(f"module {self.package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{self.package}.{home}"), name)
        setattr(importlib.import_module(self.package), name, value)  # the next lookup does not come here
        return value
