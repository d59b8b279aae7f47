"""Reading the YAML and JSON files that come from outside (task files, spec files, configs,
recordings) without letting them grow: every reader of the project parses through here.

* **YAML** (:func:`load_yaml`): :class:`SafeFileLoader`, a ``yaml.SafeLoader`` that refuses

  - aliases that expand past :data:`MAX_ALIAS_NODES` nodes in one document (a "billion laughs"
    file of a kilobyte composes as a small graph, but every reader that walks it as a tree, the
    schema check included, would walk billions of nodes), and an alias inside its own anchor;
  - nesting past :data:`MAX_FILE_DEPTH` levels of mappings and lists (aliases counted where they land),
    before the parser's recursion can run out;
  - a key given twice in one mapping (YAML keeps the last one silently); ``<<`` merges may still
    override.

* **JSON** (:func:`load_json`): the standard parser, after the same depth bound (a linear scan), with
  duplicate keys refused and ``NaN``/``Infinity`` (not JSON) refused unless asked for.

Every refusal, and every syntax error, is a :class:`DocumentError` whose message starts with
``FILE:LINE:`` (1-based).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import yaml

__all__ = ["MAX_ALIAS_NODES", "MAX_FILE_DEPTH", "DocumentError", "SafeFileLoader", "load_json", "load_yaml"]

#: the most nodes that the aliases of one YAML document may expand to, all together
MAX_ALIAS_NODES = 10_000
#: the deepest nesting of mappings and lists a file may have (a tool schema nested the 64 levels
#: that :func:`~tool_specs.normalize_schema` takes needs about 130)
MAX_FILE_DEPTH = 160


class DocumentError(ValueError):
    """A YAML or JSON file that cannot be read or is refused; ``str()`` is ``FILE:LINE: problem``."""

    def __init__(self, problem: str, *, path: str | Path | None = None, line: int | None = None) -> None:
        self.problem = problem
        self.path = Path(path) if path is not None else None
        self.line = line
        where = f"{path}:{line}" if path is not None and line is not None else str(path or (f"line {line}" if line else ""))
        super().__init__(f"{where}: {problem}" if where else problem)


class _Refused(yaml.YAMLError):
    def __init__(self, problem: str, mark: Any) -> None:
        super().__init__(problem)
        self.problem = problem
        self.problem_mark = mark


class SafeFileLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` with the bounds of the module docstring (alias expansion, depth, duplicate keys)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._alias_nodes = 0
        self._depth = 0
        self._open_anchors: set[str] = set()
        self._shape: dict[int, tuple[int, int]] = {}  # id(node) -> (nodes when expanded, height)

    def _expanded(self, node: yaml.Node) -> tuple[int, int]:
        """How many nodes ``node`` is when its aliases are expanded, and how deep it goes."""
        known = self._shape.get(id(node))
        if known is not None:
            return known
        size, height = 1, 0
        children: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        for child in children:
            s, h = self._expanded(child)
            size, height = size + s, max(height, h + 1)
        self._shape[id(node)] = (size, height)
        return size, height

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent):
            anchor = str(event.anchor)
            if anchor in self._open_anchors:
                raise _Refused(f"alias *{anchor} is used inside its own anchor (a recursive alias)", event.start_mark)
            target = self.anchors.get(anchor)
            if target is not None:
                size, height = self._expanded(target)
                self._alias_nodes += size
                if self._alias_nodes > MAX_ALIAS_NODES:
                    raise _Refused(f"aliases expand to more than {MAX_ALIAS_NODES} nodes (at *{anchor}); "
                                   "write the values out, or use fewer aliases", event.start_mark)
                if self._depth + height >= MAX_FILE_DEPTH:
                    raise _Refused(f"nested more than {MAX_FILE_DEPTH} levels deep (through *{anchor})", event.start_mark)
            return super().compose_node(parent, index)
        if isinstance(event, yaml.CollectionStartEvent):
            self._depth += 1
            if self._depth > MAX_FILE_DEPTH:
                raise _Refused(f"nested more than {MAX_FILE_DEPTH} levels deep", event.start_mark)
        opened = getattr(event, "anchor", None)
        if opened is not None:
            self._open_anchors.add(str(opened))
        try:
            return super().compose_node(parent, index)
        finally:
            if opened is not None:
                self._open_anchors.discard(str(opened))
            if isinstance(event, yaml.CollectionStartEvent):
                self._depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, Hashable):
                continue  # the base constructor says what is wrong with it
            if key in seen:
                raise _Refused(f"key {key!r} is given twice in one mapping", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str, path: str | Path | None = None) -> tuple[Any, yaml.Node | None]:
    """The first document of ``text`` and its composed node tree (for line numbers; ``None`` for an
    empty file), read with :class:`SafeFileLoader`.

    Raises:
        DocumentError: a syntax error or a refusal, ``FILE:LINE: ...``.
    """
    loader = SafeFileLoader(text)
    try:
        node = loader.get_single_node()
        document = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if not isinstance(exc, _Refused):
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
            problem = f"invalid YAML{where}: {problem}"
        raise DocumentError(problem, path=path, line=None if mark is None else mark.line + 1) from None
    except RecursionError:  # not reached within MAX_FILE_DEPTH; a last guard for a caller already deep in its stack
        raise DocumentError(f"nested too deeply to read (the limit is {MAX_FILE_DEPTH} levels)", path=path) from None
    finally:
        loader.dispose()
    return document, node


_JSON_TOKENS = re.compile(r'"(?:[^"\\\n]|\\.)*"|[\[\]{}\n]|-?Infinity|NaN')


def _scan(text: str, *, want: str | None = None) -> tuple[int, int] | None:
    """``(line, depth)`` where ``text`` first nests deeper than :data:`MAX_FILE_DEPTH`, or where the
    token ``want`` (NaN, Infinity) first stands outside a string; None if nowhere."""
    line, depth = 1, 0
    for m in _JSON_TOKENS.finditer(text):
        token = m.group()
        if token == "\n":
            line += 1
        elif token in "[{":
            depth += 1
            if want is None and depth > MAX_FILE_DEPTH:
                return line, depth
        elif token in "]}":
            depth -= 1
        elif want is not None and token.lstrip("-") == want:
            return line, depth
    return None


class _Constant(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _Constant(name)


def load_json(text: str, path: str | Path | None = None, *, line: int = 1, allow_nan: bool = False,
              allow_duplicates: bool = False) -> Any:
    """``text`` parsed as JSON, within :data:`MAX_FILE_DEPTH` levels, no key twice in an object (unless
    ``allow_duplicates``: the last one is kept), and no ``NaN``/``Infinity`` unless ``allow_nan``.
    ``line``: the line of the file ``text`` starts on (a JSON Lines record).

    Raises:
        DocumentError: invalid JSON or a refusal, ``FILE:LINE: ...``.
    """
    if text.count("[") + text.count("{") > MAX_FILE_DEPTH:  # else it cannot nest that deep: skip the scan
        deep = _scan(text)
        if deep is not None:
            raise DocumentError(f"nested more than {MAX_FILE_DEPTH} levels deep", path=path, line=line + deep[0] - 1)
    duplicate: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(items)
        if len(out) != len(items) and not duplicate:
            keys = [k for k, _ in items]
            duplicate.append(next(k for k in keys if keys.count(k) > 1))
        return out

    try:
        value = json.loads(text, object_pairs_hook=None if allow_duplicates else pairs,
                           parse_constant=None if allow_nan else _refuse_constant)
    except _Constant as exc:
        found = _scan(text, want=str(exc).lstrip("-"))
        at = line + found[0] - 1 if found else line
        raise DocumentError(f"{exc} is not a JSON number (give a finite number)", path=path, line=at) from None
    except json.JSONDecodeError as exc:
        at = line + exc.lineno - 1
        raise DocumentError(f"invalid JSON at line {at}, column {exc.colno}: {exc.msg}", path=path, line=at) from None
    except RecursionError:
        raise DocumentError(f"nested too deeply to read (the limit is {MAX_FILE_DEPTH} levels)", path=path, line=line) from None
    except ValueError:  # Python's bound on integer digits (sys.get_int_max_str_digits)
        bound = sys.get_int_max_str_digits()
        long = re.search(rf"\d{{{bound + 1},}}", text) if bound else None
        at = line + text.count("\n", 0, long.start()) if long else line
        digits = f"{len(long.group())} digits" if long else "too many digits"
        raise DocumentError(f"an integer of {digits}: more than the {bound} digits "
                            "Python reads in a number", path=path, line=at) from None
    if duplicate:
        raise DocumentError(f"key {duplicate[0]!r} is given twice in one object", path=path,
                            line=line + _duplicate_line(text) - 1)
    return value


def _duplicate_line(text: str) -> int:
    """The line of the first key given twice in a mapping of ``text`` (JSON read as YAML), else 1."""
    try:
        load_yaml(text)
    except DocumentError as exc:
        if exc.line is not None and "twice" in exc.problem:
            return exc.line
    return 1
