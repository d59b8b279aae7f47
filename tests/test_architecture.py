"""The project's import graph: no import cycles, and each package imports only the packages below it.

How the graph is built (from the source, with :mod:`ast`; nothing is imported):

* Nodes are the modules of the first-party packages (``kg_store``, ``tool_specs``, ``server``,
  ``client``, ``evals``); a package is the node of its ``__init__.py`` (``tool_specs`` is
  ``tool_specs/__init__.py``); a folder without ``__init__.py`` (a namespace package) has no node
  of its own.
* Every ``import`` and ``from ... import`` statement counts, wherever it is: at module level, inside
  ``if TYPE_CHECKING:``, inside a function, inside ``try``. An import the type checker sees is a
  dependency of the design even when it is not executed. (Imports by string, such as
  ``importlib.import_module("kuzu")``, are not seen; the project uses them only for third-party
  engines.)
* ``import a.b.c`` is an edge to the longest of ``a.b.c``, ``a.b``, ``a`` that is a module of the
  project. ``from a.b import x`` is an edge to ``a.b.x`` when that is a module, else to ``a.b``.
  Relative imports are resolved against the importing module's package.
* Python runs a package's ``__init__`` before any of its submodules, but that implicit step is *not*
  an edge: an ``__init__`` importing its own submodules (to re-export their names) is therefore not a
  cycle by itself. A submodule that imports *from its own package's* ``__init__``
  (``from tool_specs import ToolSpec`` inside ``tool_specs/validation.py``) is an explicit edge, so
  submodule -> package ``__init__`` -> submodule is reported as the cycle it is at import time.

What is checked:

* (a) no cycle: no strongly connected component of more than one module. Cycles that exist today in
  ``client``/``evals`` are listed in ``KNOWN_CYCLE_EDGES``: edges taken out of the graph before the
  check, one per cycle, to be emptied as those packages are restructured. ``kg_store``,
  ``tool_specs`` and ``server`` have none and may get none.
* (b) layering, as in ``DESIGN.md``: ``kg_store`` < ``tool_specs`` < ``server`` < ``client`` <
  ``evals``, a package imports only packages before it in that order (and itself). Known
  violations are listed in ``KNOWN_LAYER_EXCEPTIONS``.
* (c) the public names of ``kg_store``, ``tool_specs`` and ``server``: every public module (a name
  without a leading underscore) of these packages declares ``__all__``, and the package's
  ``__init__`` re-exports all of it in its own ``__all__``.

An allowlist entry that no longer matches an import fails the test too, so the lists only shrink.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Low to high. A package may import itself and the packages before it.
LAYERS = ("kg_store", "tool_specs", "server", "client", "evals")

#: Packages that must have no cycle and no exception at all, and whose __init__ lists the public names.
CLEAN = ("kg_store", "tool_specs", "server")

#: Import edges (importer, imported) that close a cycle existing today; each is removed from the graph
#: before looking for cycles. Only client/evals modules may appear here. To be emptied (issue 14).
KNOWN_CYCLE_EDGES: set[tuple[str, str]] = set()

#: Imports that break the layering today, (importer, imported). Only client/evals modules may appear
#: here. To be emptied (issue 14).
KNOWN_LAYER_EXCEPTIONS: set[tuple[str, str]] = set()


# ---------------------------------------------------------------------------------------- graph


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for package in LAYERS:
        for path in sorted((ROOT / package).rglob("*.py")):
            modules[module_name(path)] = path
    return modules


def _longest_known(dotted: str, known: Iterable[str]) -> str | None:
    known_set = set(known)
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in known_set:
            return candidate
    return None


def imports_of(module: str, path: Path, known: set[str]) -> Iterator[tuple[str, int]]:
    """(imported project module, line) for every import statement of ``module``."""
    is_package = path.name == "__init__.py"
    package_parts = module.split(".") if is_package else module.split(".")[:-1]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _longest_known(alias.name, known)
                if target is not None:
                    yield target, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package_parts[: len(package_parts) - (node.level - 1)]
                base = ".".join([*base_parts, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            for alias in node.names:
                submodule = f"{base}.{alias.name}" if base else alias.name
                if submodule in known:
                    yield submodule, node.lineno
                else:
                    target = _longest_known(base, known) if base else None
                    if target is not None:
                        yield target, node.lineno


def import_graph() -> dict[str, dict[str, int]]:
    """importer -> {imported: first line}, self-imports left out."""
    modules = project_modules()
    known = set(modules)
    graph: dict[str, dict[str, int]] = {name: {} for name in modules}
    for name, path in modules.items():
        for target, line in imports_of(name, path, known):
            if target != name:
                graph[name].setdefault(target, line)
    return graph


def strongly_connected(graph: dict[str, Iterable[str]]) -> list[list[str]]:
    """Tarjan's algorithm (iterative); components of more than one node, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return sorted(out)


def _package(module: str) -> str:
    return module.split(".", 1)[0]


def _describe(graph: dict[str, dict[str, int]], component: list[str]) -> str:
    members = set(component)
    edges = [
        f"    {a} -> {b} (line {line})"
        for a in component
        for b, line in sorted(graph[a].items())
        if b in members
    ]
    return "\n".join([" <-> ".join(component), *edges])


# ---------------------------------------------------------------------------------------- tests


def test_graph_sees_the_project() -> None:
    graph = import_graph()
    assert {"kg_store", "kg_store.store", "tool_specs", "tool_specs.spec", "server.core"} <= set(graph)
    assert "tool_specs" in graph["server.core"]  # a package import: the edge goes to its __init__
    assert "tool_specs.protocols" in graph["tool_specs.matching"]  # an import under TYPE_CHECKING
    assert "kg_store.store" in graph["kg_store"]  # a relative import in an __init__


def test_strongly_connected_finds_cycles() -> None:
    graph = {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"], "e": ["e"]}
    assert strongly_connected(graph) == [["a", "b", "c"]]
    assert strongly_connected({"a": ["b"], "b": []}) == []


def test_relative_and_package_imports_resolve(tmp_path: Path) -> None:
    known = {"pkg", "pkg.inner", "pkg.inner.sub", "pkg.inner.mod", "pkg.other"}
    source = (
        "from . import sub\n"  # a submodule: pkg.inner.sub
        "from .mod import thing\n"  # a name in a module: pkg.inner.mod
        "from .. import other, name_in_init\n"  # pkg.other (a module) and pkg (a name in its __init__)
        "import pkg.inner.mod.missing\n"  # the longest known prefix: pkg.inner.mod
        "if TYPE_CHECKING:\n"
        "    from pkg import name_in_init\n"
        "def f():\n"
        "    import os\n"  # not a project module: no edge
        "    from pkg.inner import sub\n"
    )
    file = tmp_path / "mod2.py"
    file.write_text(source)
    found = sorted(target for target, _ in imports_of("pkg.inner.mod2", file, known))
    assert found == sorted(
        ["pkg.inner.sub", "pkg.inner.mod", "pkg.other", "pkg", "pkg.inner.mod", "pkg", "pkg.inner.sub"]
    )
    init = tmp_path / "__init__.py"
    init.write_text("from . import sub\nfrom .mod import thing\n")
    assert sorted(t for t, _ in imports_of("pkg.inner", init, known)) == ["pkg.inner.mod", "pkg.inner.sub"]


def test_no_import_cycles() -> None:
    graph = import_graph()
    for importer, imported in KNOWN_CYCLE_EDGES:
        assert _package(importer) not in CLEAN, f"{importer} must not be allowlisted"
        assert imported in graph.get(importer, {}), (
            f"KNOWN_CYCLE_EDGES lists {importer} -> {imported}, which no longer exists: delete the entry"
        )
    pruned = {
        a: {b: line for b, line in targets.items() if (a, b) not in KNOWN_CYCLE_EDGES}
        for a, targets in graph.items()
    }
    cycles = strongly_connected(pruned)
    assert not cycles, "import cycles:\n" + "\n\n".join(_describe(pruned, c) for c in cycles)


def test_clean_packages_have_no_cycles_even_with_the_allowlist_ignored() -> None:
    graph = import_graph()
    clean = {
        a: [b for b in targets if _package(b) in CLEAN]
        for a, targets in graph.items()
        if _package(a) in CLEAN
    }
    cycles = strongly_connected(clean)
    assert not cycles, "import cycles:\n" + "\n\n".join(_describe(graph, c) for c in cycles)


def test_layering() -> None:
    graph = import_graph()
    rank = {package: i for i, package in enumerate(LAYERS)}
    for importer, imported in KNOWN_LAYER_EXCEPTIONS:
        assert _package(importer) not in CLEAN, f"{importer} must not be allowlisted"
        assert imported in graph.get(importer, {}), (
            f"KNOWN_LAYER_EXCEPTIONS lists {importer} -> {imported}, which no longer exists: delete the entry"
        )
    violations = [
        f"{a} imports {b} (line {line}): {_package(a)} may not import {_package(b)}"
        for a, targets in sorted(graph.items())
        for b, line in sorted(targets.items())
        if rank[_package(b)] > rank[_package(a)] and (a, b) not in KNOWN_LAYER_EXCEPTIONS
    ]
    assert not violations, "layering violations:\n" + "\n".join(violations)


def _declared_all(path: Path) -> list[str] | None:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            value = ast.literal_eval(node.value)
            assert isinstance(value, list | tuple), f"{path}: __all__ must be a literal list"
            return [str(v) for v in value]
    return None


def test_packages_export_the_public_names_of_their_modules() -> None:
    for package in CLEAN:
        init_all = _declared_all(ROOT / package / "__init__.py")
        assert init_all is not None, f"{package}/__init__.py has no __all__"
        assert len(init_all) == len(set(init_all)), f"{package}.__all__ lists a name twice"
        exported = set(init_all)
        for path in sorted((ROOT / package).glob("*.py")):
            if path.name.startswith("_"):
                continue
            names = _declared_all(path)
            assert names is not None, f"{package}/{path.name} has no __all__"
            missing = sorted(set(names) - exported)
            assert not missing, f"{package}.__all__ lacks {missing} from {package}/{path.name}"
        module = importlib.import_module(package)
        absent = [name for name in init_all if not hasattr(module, name)]
        assert not absent, f"{package}.__all__ lists names it does not define: {absent}"


# ---- (d) the core never names a benchmark ------------------------------------------------------------
BENCHMARK_NAMES = ("familytool", "toolhop", "nestools", "ultratool", "complexfuncbench", "bfcl")
# "bfcl" also names a tool-file format (BFCL function docs, read by tool_specs.spec_formats for any
# benchmark's or user's tools): the module that reads it may name it, and other code may name the format
# as "BFCL function ..." (docs, help texts), never the benchmark
FORMAT_USES: dict[str, tuple[tuple[str, ...], str]] = {"bfcl": (("tool_specs/spec_formats.py",), "bfcl function")}


def test_no_file_outside_a_benchmark_folder_names_a_benchmark():
    """Adding a benchmark is adding a folder: code (and its docstrings) outside ``evals/benchmarks/<name>/``
    names no benchmark, and a benchmark's folder names no other benchmark."""
    folders = sorted(p.name for p in (ROOT / "evals" / "benchmarks").iterdir() if (p / "__init__.py").is_file())
    names = sorted(set(BENCHMARK_NAMES) | set(folders))
    offenders = []
    for package in LAYERS:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT)
            own = rel.parts[2] if rel.parts[:2] == ("evals", "benchmarks") and len(rel.parts) > 3 else None
            original = path.read_text(encoding="utf-8").lower()
            for name in names:
                files, phrase = FORMAT_USES.get(name, ((), "\0"))
                if str(rel) in files:
                    continue
                text = original.replace(phrase, "")
                if name != own and name in text:
                    line = next(i for i, line in enumerate(text.splitlines(), 1) if name in line)
                    offenders.append(f"{rel}:{line} names {name}")
    assert not offenders, "\n".join(offenders)
