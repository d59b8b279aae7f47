"""Names a package exports without importing their modules until first use (PEP 562).

A package lists each public name with the module that defines it and hands its module-level
``__getattr__`` to :func:`lazy_attribute`; ``evals --help`` then registers the sub-commands without
loading the web app, numpy, scipy or the judge's MCP stack."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

__all__ = ["lazy_attribute"]


def lazy_attribute(package: str, homes: Mapping[str, str], name: str) -> Any:
    """``package``'s attribute ``name``, from its module ``homes[name]`` (a submodule's name, relative
    to ``package``) imported now; ``AttributeError`` for a name ``homes`` does not list."""
    home = homes.get(name)
    if home is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{package}.{home}"), name)
