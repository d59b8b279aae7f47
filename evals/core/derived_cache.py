"""What a run derives from files that rarely change (a benchmark's task index, a parsed YAML file),
kept in the user cache so the next process reads it instead of deriving it again.

An entry is one file under ``<cache>/derived/`` (:func:`cache_dir`) holding, in
:mod:`marshal` form (what the KG's saved adjacency uses), ``(FORMAT, signature, value)``. The
signature is each source file's resolved path, size, modification time and SHA-256, and the same for
the code that derives the value (the deriving modules' own files: editing one derives again). An
entry is used only when its signature is the sources' signature now; anything else (another
signature, another format, a truncated or damaged file, a value its reader refuses) is ignored and
derived again, then written over (atomically: a reader never sees half a file). A value that
:mod:`marshal` cannot hold, or a cache directory that cannot be written, goes without a cache.

Values are built-in types only (``None``, bool, int, float, str, bytes, tuple, list, dict, set):
the caller turns its objects into them and back (``encode`` / ``decode``).
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["CACHE_ENV", "FORMAT", "cache_dir", "cached_derivation", "derived_cache_path", "normalization_code", "source_signature",
           "with_cached_normalizations"]

FORMAT = 1
"""Of the entry files; another number: the file is not used."""

CACHE_ENV = "EVALS_CACHE_DIR"

T = TypeVar("T")
Signature = list[tuple[str, int, int, str]]


def cache_dir() -> Path:
    """Root of the project's per-user cache (KG databases, downloads, derived values):
    ``$EVALS_CACHE_DIR``, else ``$XDG_CACHE_HOME/mcp-multihop-evals`` (default ``~/.cache/...``)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "mcp-multihop-evals"


def source_signature(paths: Sequence[str | Path]) -> Signature:
    """``(resolved path, size, mtime_ns, sha256)`` of each file, in the order given.

    Raises:
        OSError: a file cannot be read (the caller's own read would fail too).
    """
    sig = []
    for p in paths:
        path = Path(p).resolve()
        st = path.stat()
        sig.append((str(path), st.st_size, st.st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest()))
    return sig


def derived_cache_path(name: str, sources: Sequence[str | Path]) -> Path:
    """The entry file of ``name`` derived from ``sources`` (one file per name and source paths)."""
    key = hashlib.sha256("\0".join(str(Path(p).resolve()) for p in sources).encode("utf-8")).hexdigest()[:16]
    return cache_dir() / "derived" / f"{name}-{key}.marshal"


def _read(path: Path, signature: Signature) -> tuple[bool, Any]:
    try:
        from kg_store.triples import gc_paused  # every run imports kg_store (the server's KG tools)

        with gc_paused():
            data = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return False, None
    if not (isinstance(data, tuple) and len(data) == 3 and data[0] == FORMAT and data[1] == signature):
        return False, None
    return True, data[2]


def _write(path: Path, signature: Signature, value: Any) -> None:
    try:
        payload = marshal.dumps((FORMAT, signature, value))
    except ValueError:  # a value marshal cannot hold: no cache
        return
    import tempfile  # on use: evals.core.data (and `evals --help`) import this module

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def cached_derivation(
    name: str,
    sources: Sequence[str | Path],
    build: Callable[[], T],
    *,
    code: Sequence[str | Path] = (),
    encode: Callable[[T], Any] = lambda value: value,
    decode: Callable[[Any], T] = lambda raw: raw,
) -> T:
    """``build()``, or what it returned last time for the same ``sources`` and ``code`` (files).

    ``encode`` turns the value into built-in types for the cache, ``decode`` turns them back (it may
    raise ``ValueError``, ``TypeError``, ``KeyError`` or ``IndexError`` on a value it does not take:
    the entry is then ignored). An exception of ``build`` propagates and nothing is cached.
    """
    files = [*sources, *code]
    signature = source_signature(files)
    path = derived_cache_path(name, files)
    found, raw = _read(path, signature)
    if found:
        try:
            return decode(raw)
        except (ValueError, TypeError, KeyError, IndexError):
            pass
    value = build()
    _write(path, signature, encode(value))
    return value


def normalization_code() -> list[Path]:
    """The files whose code decides a schema normalisation's result: tool_specs' schema modules and
    the JSON Schema library's validators (its meta-schema check repairs schemas)."""
    import jsonschema

    from tool_specs import schema

    here = Path(schema.__file__)
    lib = Path(jsonschema.__file__).parent
    return [here, *sorted(here.parent.glob("_schema*.py")), lib / "validators.py", lib / "_keywords.py"]


def with_cached_normalizations(name: str, sources: Sequence[str | Path], build: Callable[[], T]) -> T:
    """``build()`` (which builds tool specs from ``sources``), with the schema normalisations it does
    (:func:`tool_specs.normalize_schema`, the bulk of building many specs) remembered from the last
    process that built from the same ``sources`` with the same code, or kept for the next one."""
    from tool_specs.schema import remember_normalizations, remembered_normalizations

    built: list[T] = []

    def record() -> Any:
        before = [{key for key, _ in items} for items in remembered_normalizations()]
        built.append(build())
        return tuple([item for item in items if item[0] not in seen]
                     for items, seen in zip(remembered_normalizations(), before, strict=True))

    cached_derivation(name, sources, record, code=normalization_code(), decode=remember_normalizations)
    return built[0] if built else build()
