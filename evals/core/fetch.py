"""Download benchmark files from their public sources, pinned by checksum.

``evals data fetch NAME`` fetches one source; :func:`ensure_data` fetches, on first use, the files
``evals serve`` and ``evals run`` need that are not in the data directory yet. Each file is fetched
from a pinned commit, written to a temporary file, checked against its sha256 and size, and only
then moved into place; a file already present with the right checksum is not downloaded again.
A lock file in the data directory keeps two processes from downloading into it at once. Sources
and checksums are those recorded in ``../shared/data/MANIFEST.md``.

``$EVALS_DATA_URL_PREFIX`` (or ``--url-prefix``) downloads from a mirror instead: the path after the
commit (or the Hugging Face revision) is appended to it, e.g. ``PREFIX/datasets/<file>.jsonl``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from .data import DATA_ENV, RemoteFile, shared_data_dir

__all__ = ["URL_PREFIX_ENV", "ChecksumMismatch", "FetchError", "HostUnreachable", "Unavailable", "download_progress", "ensure_data", "fetch", "needed_files", "sources", "unavailable_message"]

URL_PREFIX_ENV = "EVALS_DATA_URL_PREFIX"


@functools.cache
def sources() -> dict[str, tuple[RemoteFile, ...]]:
    """Every download source (``evals data fetch NAME``) of every benchmark, by name (built once)."""
    from .registry import all_benchmarks

    out: dict[str, tuple[RemoteFile, ...]] = {}
    for info in all_benchmarks().values():
        for name, files in info.data_sources.items():
            if out.setdefault(name, files) != files:
                raise ValueError(f"two benchmarks declare the data source {name!r} differently")
    return out


class FetchError(RuntimeError):
    """A download failed or its content did not match the pinned checksum."""


class HostUnreachable(FetchError):
    """The host could not be reached: no network, DNS failure, connection refused, timeout."""


class ChecksumMismatch(FetchError):
    """The host answered, but not with the pinned file (another version, or a corrupt copy)."""


# Transport failures that mean "the network or the host is not there" (not: a bad URL scheme).
_UNREACHABLE = (httpx2.NetworkError, httpx2.TimeoutException, httpx2.ProxyError, httpx2.RemoteProtocolError)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def url_prefix_from_env() -> str | None:
    """The mirror URL prefix from ``$EVALS_DATA_URL_PREFIX`` (None: the pinned upstream hosts)."""
    return os.environ.get(URL_PREFIX_ENV) or None


@contextlib.contextmanager
def _fetch_lock(data_dir: Path, report: Callable[[str], None]) -> Iterator[None]:
    """Hold ``data_dir/.fetch.lock`` exclusively (POSIX ``flock``; a no-op where there is none)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with open(data_dir / ".fetch.lock", "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            report(f"waiting for another download into {data_dir} to finish")
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def fetch(
    name: str,
    data_dir: Path,
    *,
    url_prefix: str | None = None,
    timeout: float = 60.0,
    report: Callable[[str], None] = lambda _msg: None,
    only: Iterable[str] | None = None,
    progress: Progress | None = None,
) -> list[Path]:
    """Download the files of source ``name`` into ``data_dir``; returns their paths.

    ``url_prefix`` (default ``$EVALS_DATA_URL_PREFIX``) replaces the scheme+host+repository part
    of every URL up to the commit (for a mirror, or a local server in tests): the path after the
    commit (or the revision, for a Hugging Face file: ``data/<file>.json``) is kept. ``only``
    limits the download to these destinations (paths relative to ``data_dir``); ``progress`` shows
    a bar per file.

    Raises:
        HostUnreachable: the host could not be reached (the message names the URL).
        ChecksumMismatch: a download is not the pinned file; nothing was saved.
        FetchError: any other failure (an HTTP error status, an unwritable ``data_dir``).
    """
    try:
        files = list(sources()[name])
    except KeyError:
        raise FetchError(f"no download source for {name!r}; known: {', '.join(sources())}") from None
    if only is not None:
        wanted = set(only)
        files = [f for f in files if f.dest in wanted]
    if url_prefix is None:
        url_prefix = url_prefix_from_env()
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        with _fetch_lock(data_dir, report):
            return _fetch_files(files, data_dir, url_prefix=url_prefix, timeout=timeout, report=report, progress=progress)
    except OSError as exc:
        raise FetchError(f"cannot write into {data_dir}: {exc}") from exc


def _fetch_files(
    files: list[RemoteFile],
    data_dir: Path,
    *,
    url_prefix: str | None,
    timeout: float,
    report: Callable[[str], None],
    progress: Progress | None,
) -> list[Path]:
    from kg_store.digest import file_sha256

    out: list[Path] = []
    with httpx2.Client(timeout=timeout, follow_redirects=True) as http:
        for f in files:
            dest = data_dir / f.dest
            if dest.is_file() and file_sha256(dest) == f.sha256:
                report(f"ok       {f.dest} (already present, checksum matches)")
                out.append(dest)
                continue
            url = f.url if url_prefix is None else f.mirror_url(url_prefix)
            dest.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.")
            tmp = Path(tmp_name)
            bar = progress.add_task(f.dest, total=f.size) if progress is not None else None
            try:
                h = hashlib.sha256()
                size = 0
                with os.fdopen(fd, "wb") as fh, http.stream("GET", url) as resp:
                    if resp.status_code != 200:
                        raise FetchError(f"GET {url} answered HTTP {resp.status_code}")
                    for chunk in resp.iter_bytes():
                        fh.write(chunk)
                        h.update(chunk)
                        size += len(chunk)
                        if bar is not None:
                            progress.advance(bar, len(chunk))  # type: ignore[union-attr]
                if h.hexdigest() != f.sha256 or size != f.size:
                    raise ChecksumMismatch(
                        f"{url}: got {size} bytes with sha256 {h.hexdigest()}, expected {f.size} bytes "
                        f"with sha256 {f.sha256}; the file was not saved"
                    )
                os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 would hide the file from other users
                os.replace(tmp, dest)
                report(f"fetched  {f.dest} ({size} bytes, sha256 ok)")
                out.append(dest)
                bar = None  # done: its bar stays
            except _UNREACHABLE as exc:
                raise HostUnreachable(f"cannot reach {url}: {type(exc).__name__}: {exc}") from exc
            except httpx2.HTTPError as exc:
                raise FetchError(f"GET {url} failed: {type(exc).__name__}: {exc}") from exc
            finally:
                tmp.unlink(missing_ok=True)
                if bar is not None:  # failed: the error says what happened
                    progress.remove_task(bar)  # type: ignore[union-attr]
    return out


# ---- first use: the files a command needs ------------------------------------------------------
def needed_files(benchmark: str, data_dir: Path, options: Mapping[str, Any] | None = None) -> list[tuple[str, RemoteFile]]:
    """The ``(source, file)`` pairs benchmark ``benchmark`` (with ``options``) needs that are not under ``data_dir``."""
    from .registry import get_benchmark

    return get_benchmark(benchmark).missing_files(options or {}, data_dir)


@dataclass(frozen=True)
class Unavailable:
    """A benchmark whose missing data could not be downloaded, and why."""

    benchmark: str
    source: str
    error: FetchError
    data_dir: Path

    def message(self) -> str:
        return unavailable_message([self])


def _cause(error: FetchError) -> str:
    if isinstance(error, ChecksumMismatch):
        return (f"a download is not the pinned file, so it was refused and nothing was saved (the host may "
                f"serve another version now): {error}")
    if isinstance(error, HostUnreachable):
        return f"the network is unreachable: {error}"
    return f"the download failed: {error}"


def unavailable_message(items: Iterable[Unavailable]) -> str:
    """One message for benchmarks whose data could not be had: why, and the commands that fix it."""
    items = list(items)
    causes = list({id(i.error): i.error for i in items}.values())
    head = f"{', '.join(i.benchmark for i in items)}: the data is not in {items[0].data_dir} and "
    head += _cause(causes[0]) + "." if len(causes) == 1 else "could not be downloaded:" + "".join(f"\n  {_cause(e)}" for e in causes)
    by_source: dict[str, list[Unavailable]] = {}
    for i in items:
        by_source.setdefault(i.source, []).append(i)
    known = sources()
    dirs = sorted({f.dest.split("/", 1)[0] + "/" for s in by_source for f in known[s]})
    existing = f"point {DATA_ENV} at a directory that already holds {', '.join(dirs)}"
    lines = [head]
    retry = [s for s, its in by_source.items() if not all(isinstance(i.error, ChecksumMismatch) for i in its)]
    if retry:
        when = "When you are online" if any(isinstance(e, HostUnreachable) for e in causes) else "To try again"
        fetches = " or ".join(f"`evals data fetch {s}`" for s in retry)
        lines.append(f"{when}, run this command again (or {fetches}); or {existing}.")
    if any(isinstance(e, ChecksumMismatch) for e in causes):
        lines.append(f"For the refused file: {existing}, or set {URL_PREFIX_ENV} to a mirror of the pinned files.")
    return "\n".join(lines)


def download_progress(console: Any) -> Progress:
    """A rich progress display for downloads: a bar per file, bytes, speed, time left.

    Shown on a terminal only; elsewhere (a log file, CI) the ``fetched ...`` lines say the same.
    """
    return Progress(
        TextColumn("  {task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn(),
        console=console, disable=not getattr(console, "is_terminal", False),
    )


def ensure_data(
    benchmarks: Iterable[str],
    data_dir: Path,
    *,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    console: Any = None,
    url_prefix: str | None = None,
    timeout: float = 60.0,
) -> dict[str, Unavailable]:
    """Download what ``benchmarks`` need and ``data_dir`` lacks (the first use of a command).

    On ``console`` (a rich console; None: silent) it says what is downloaded from where into which
    directory, how to use an existing copy instead, and shows a progress bar per file. Returns the
    benchmarks whose data could not be had, with the reason. Once a host is unreachable, the
    remaining downloads are not tried (each would wait for the same network). ``options``: each
    benchmark's options (which files it needs may depend on them).
    """
    benchmarks = list(dict.fromkeys(benchmarks))
    needs = {b: needed_files(b, data_dir, (options or {}).get(b)) for b in benchmarks}
    by_source: dict[str, list[RemoteFile]] = {}
    for pairs in needs.values():
        for source, f in pairs:
            if f not in by_source.setdefault(source, []):
                by_source[source].append(f)
    if not by_source:
        return {}
    url_prefix = url_prefix if url_prefix is not None else url_prefix_from_env()
    files = [f for fs in by_source.values() for f in fs]
    say = console.print if console is not None else (lambda *_a, **_k: None)
    where = (f"${DATA_ENV}" if os.environ.get(DATA_ENV) else "../shared/data beside the checkout"
             if data_dir == shared_data_dir() else f"the user cache; ${DATA_ENV} overrides")
    origin = f"the mirror {url_prefix} (${URL_PREFIX_ENV})" if url_prefix else "their pinned public sources"
    say(
        f"Benchmark data for {', '.join(b for b in benchmarks if needs[b])} is not in {data_dir} ({where}).\n"
        f"Downloading it once: {len(files)} file(s), {sum(f.size for f in files) / 1e6:.1f} MB from {origin}, "
        f"sha256-checked.\nTo use a copy you already have instead, stop and set {DATA_ENV} to its directory "
        f"(the one holding {', '.join(sorted({f.dest.split('/', 1)[0] + '/' for f in files}))}).",
        highlight=False,
        markup=False,
    )
    failed: dict[str, FetchError] = {}
    progress = download_progress(console) if console is not None else None
    with progress if progress is not None else contextlib.nullcontext():
        for source, fs in by_source.items():
            if any(isinstance(e, HostUnreachable) for e in failed.values()):
                failed[source] = next(e for e in failed.values() if isinstance(e, HostUnreachable))
                continue
            try:
                fetch(source, data_dir, url_prefix=url_prefix, timeout=timeout, only=[f.dest for f in fs],
                      progress=progress, report=say)
            except FetchError as exc:
                failed[source] = exc
    out = {
        b: Unavailable(b, source, failed[source], data_dir)
        for b, pairs in needs.items()
        for source, _ in pairs
        if source in failed
    }
    if len(out) < len([b for b in benchmarks if needs[b]]):
        say(f"Saved in {data_dir}; later runs use it.", highlight=False, markup=False)
    return out
