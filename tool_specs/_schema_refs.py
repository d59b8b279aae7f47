"""Schemas never reach the network or the disk.

A tool's schema comes from outside (a spec file, an MCP server's listing, a recording of one), and
JSON Schema lets it name other documents: ``{"$ref": "http://127.0.0.1:8080/x"}`` or
``{"$ref": "file:///etc/passwd"}``. ``jsonschema`` fetches such references by default when it
validates, so a schema would be a network client. Two rules contain it:

* every validator resolves references through :data:`NO_RETRIEVAL`, a registry that knows only the
  JSON Schema meta-schemas and retrieves nothing (an unknown URI is an error, never a request);
* every reference must be local (``#``, ``#/$defs/x``, ``#anchor``): :func:`nonlocal_refs` finds
  the others, and a schema holding one is refused where it is loaded (normalisation, the spec-file
  checks), with a message naming it (:func:`nonlocal_ref_message`).

A leaf module: it imports nothing of the package.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource

__all__ = ["NO_RETRIEVAL", "REFERENCE_KEYWORDS", "nonlocal_ref_message", "nonlocal_refs"]

#: The keywords whose value is a reference to another schema (``$recursiveRef`` is draft 2019-09's).
REFERENCE_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")
#: Keywords whose value is data, not a schema: a ``{"$ref": ...}`` inside one is not a reference.
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})
_MAX_DEPTH = 256
_MAX_FOUND = 20


def _refuse(uri: str) -> Resource[Any]:
    """A registry's retrieve function that retrieves nothing: every URI is unknown."""
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]  # an attrs class


NO_RETRIEVAL: Registry[Any] = Registry(retrieve=_refuse)  # type: ignore[call-arg]  # an attrs alias
"""The registry every validator of a tool schema uses: meta-schemas only (jsonschema adds them), no fetching."""


def nonlocal_refs(schema: object) -> list[tuple[list[str | int], str]]:
    """``(path to the keyword, its value)`` for every ``$ref``/``$dynamicRef``/``$recursiveRef`` of
    ``schema`` that is not a local reference (a string starting with ``#``); at most 20. Values of
    ``enum``, ``const``, ``default`` and ``examples`` are data and are not looked into."""
    found: list[tuple[list[str | int], str]] = []
    stack: list[tuple[object, list[str | int]]] = [(schema, [])]
    while stack and len(found) < _MAX_FOUND:
        node, path = stack.pop()
        if len(path) > _MAX_DEPTH:
            continue
        if isinstance(node, Mapping):
            for key, value in node.items():
                if key in REFERENCE_KEYWORDS and isinstance(value, str):
                    if not value.startswith("#"):
                        found.append(([*path, key], value))
                elif key not in _DATA_KEYWORDS and isinstance(value, Mapping | list):
                    stack.append((value, [*path, str(key)]))
        elif isinstance(node, list):
            stack.extend((item, [*path, index]) for index, item in enumerate(node) if isinstance(item, Mapping | list))
    found.sort(key=lambda item: [str(p) for p in item[0]])
    return found


def nonlocal_ref_message(keyword: str, ref: str) -> str:
    """Why a non-local reference is refused, in one sentence naming it."""
    shown = ref if len(ref) <= 120 else ref[:117] + "..."
    return (f"{keyword} {shown!r} points outside the schema; only local references ('#...') are allowed "
            "(a schema is never fetched from a URL or a file)")
