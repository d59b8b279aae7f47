"""What a run derives from files that rarely change (a benchmark's task index, a parsed YAML file),
kept in the user cache so the next process reads it instead of deriving it again.

An entry is one file under ``<cache>/derived/`` (:func:`cache_dir`): a header (:data:`MAGIC`, the
format, the Python version, the payload's length and SHA-256) then the payload, in :mod:`marshal`
form (what the KG's saved adjacency uses), ``(signature, value)``. The signature is each source
file's resolved path, size, modification time and SHA-256 (:func:`kg_store.digest.file_sha256`: read
once per version of the file and process), and the same for the code that derives the value (the
deriving modules' own files: editing one derives again). An entry is used only when
its signature is the sources' signature now; anything else (another signature, another format, a
truncated or damaged file, a value its reader refuses) is ignored and derived again, then written
over (atomically: a reader never sees half a file). A value that :mod:`marshal` cannot hold, or a
cache directory that cannot be written, goes without a cache.

Reading is bounded: an entry is opened with ``O_NOFOLLOW | O_NONBLOCK`` (a link, a FIFO, a device
is not read), must be a regular file of at most :data:`MAX_ENTRY_BYTES`, and its payload is decoded
only once its length and SHA-256 are the header's: :mod:`marshal` sizes a list by the count it
reads, so five damaged bytes could ask for 16 GB; bytes that hash right are bytes this module
wrote. Any failure to read is a damaged entry: derived again, with one warning per entry (an
entry of another format or Python version is derived again without one).

Trust is the user's own (as ssh treats ``~/.ssh``): the cache root, the ``derived`` folder and each
entry must belong to the user (or root) and be writable by nobody else; otherwise the cache is not
used (one warning) and the value is derived. The signature is public (paths, sizes, hashes of
public files), so an entry another user could write is one they could forge; an entry this user's
files hold was written by this user. (No secret key is needed, none is kept.)

Values are built-in types only (``None``, bool, int, float, str, bytes, tuple, list, dict, set):
the caller turns its objects into them and back (``encode`` / ``decode``).
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import stat
import struct
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["CACHE_ENV", "FORMAT", "MAGIC", "MAX_ENTRY_BYTES", "cache_dir", "cached_derivation", "derived_cache_path",
           "encode_entry", "normalization_code", "source_signature", "with_cached_normalizations"]

FORMAT = 2
"""Of the entry files; another number: the file is not used."""

MAGIC = b"EVDC"
MAX_ENTRY_BYTES = 1 << 30
"""The largest entry read or written (the largest today, a 60 MB JSON Lines file's rows, is ~2 MB)."""

CACHE_ENV = "EVALS_CACHE_DIR"

_HEADER = struct.Struct("<4sHBBQ32s")  # magic, format, Python major, minor, payload length, payload SHA-256
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_warned: set[str] = set()

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
    from kg_store.digest import file_sha256  # every run imports kg_store (the server's KG tools)

    sig = []
    for p in paths:
        path = Path(p).resolve()
        st = path.stat()
        sig.append((str(path), st.st_size, st.st_mtime_ns, file_sha256(path)))
    return sig


def derived_cache_path(name: str, sources: Sequence[str | Path]) -> Path:
    """The entry file of ``name`` derived from ``sources`` (one file per name and source paths)."""
    key = hashlib.sha256("\0".join(str(Path(p).resolve()) for p in sources).encode("utf-8")).hexdigest()[:16]
    return cache_dir() / "derived" / f"{name}-{key}.marshal"


def _warn(path: Path, why: str) -> None:
    """One line on stderr, once per path and process."""
    if str(path) not in _warned:
        _warned.add(str(path))
        sys.stderr.write(f"warning: derived-data cache: {path}: {why}\n")


def _untrusted(st: os.stat_result) -> str | None:
    """Why a file or folder with this status is not the user's own (None: it is)."""
    if st.st_uid not in (os.geteuid(), 0):
        return f"owned by another user (uid {st.st_uid}); not used"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"writable by other users (mode {stat.S_IMODE(st.st_mode):o}); not used"
    return None


def _trusted_folders(entry: Path) -> bool:
    """Are the cache root and its ``derived`` folder (when they exist) the user's own? A warning when
    not. A ``derived`` folder of the user's that others may write (an older version made it with the
    umask's mode) is made 0700; the root's mode is its own business (it holds the other caches)."""
    for folder in (entry.parent.parent, entry.parent):
        try:
            st = os.stat(folder)
        except OSError:
            return True  # nothing there yet: created by this user (``derived`` with mode 0700)
        why = _untrusted(st)
        if why is not None and st.st_uid in (os.geteuid(), 0):
            if folder == entry.parent.parent:
                continue
            try:
                os.chmod(folder, 0o700)
                continue
            except OSError:
                pass
        if why is not None:
            _warn(folder, why)
            return False
    return True


def encode_entry(signature: Signature, value: Any) -> bytes:
    """An entry file's bytes (``ValueError``: a value :mod:`marshal` cannot hold)."""
    payload = marshal.dumps((signature, value))
    return _HEADER.pack(MAGIC, FORMAT, *sys.version_info[:2], len(payload), hashlib.sha256(payload).digest()) + payload


def _read_bounded(path: Path) -> bytes | None:
    """The bytes of the regular file ``path`` (None: missing). ``ValueError``/``OSError``: not one to read."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except (FileNotFoundError, NotADirectoryError):
        return None
    with os.fdopen(fd, "rb", buffering=0) as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("not a regular file")
        why = _untrusted(st)
        if why is not None:
            raise ValueError(why)
        if st.st_size > MAX_ENTRY_BYTES:
            raise ValueError(f"{st.st_size} bytes, over the {MAX_ENTRY_BYTES} a cache entry may hold")
        data = f.read(st.st_size + 1)  # one more: a file that grows while read is not used either
    if len(data) != st.st_size:
        raise ValueError("changed while read")
    return data


class _OtherFormat(ValueError):
    """An entry of another version of this module or of Python: derived again without a warning."""


def _decode_entry(data: bytes) -> tuple[Any, Any]:
    """``(signature, value)`` of an entry's bytes; ``ValueError`` when they are not an entry of this format."""
    if len(data) < _HEADER.size:
        raise ValueError("shorter than its header")
    magic, fmt, major, minor, length, digest = _HEADER.unpack_from(data)
    if magic != MAGIC or fmt != FORMAT or (major, minor) != sys.version_info[:2]:
        raise _OtherFormat("another format")
    payload = memoryview(data)[_HEADER.size:]
    if length != len(payload) or hashlib.sha256(payload).digest() != digest:
        raise ValueError("its length or checksum is not its header's")
    from kg_store.triples import gc_paused  # every run imports kg_store (the server's KG tools)

    with gc_paused():
        decoded = marshal.loads(payload)  # bytes this module wrote (their SHA-256 is the header's)
    if not (isinstance(decoded, tuple) and len(decoded) == 2):
        raise ValueError("not (signature, value)")
    return decoded[0], decoded[1]


def _read(path: Path, signature: Signature) -> tuple[bool, Any]:
    if not _trusted_folders(path):
        return False, None
    try:
        data = _read_bounded(path)
        if data is None:
            return False, None
        found, value = _decode_entry(data)
    except _OtherFormat:
        return False, None
    except Exception as exc:  # noqa: BLE001 - any failure to read an entry is a damaged entry: derived again
        _warn(path, f"{exc or type(exc).__name__}; derived again")
        return False, None
    if found != signature:
        return False, None
    return True, value


def _write(path: Path, signature: Signature, value: Any) -> None:
    try:
        data = encode_entry(signature, value)
    except ValueError:  # a value marshal cannot hold: no cache
        return
    if len(data) > MAX_ENTRY_BYTES:
        return
    import tempfile  # on use: evals.core.data (and `evals --help`) import this module

    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _trusted_folders(path):
            return
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
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
