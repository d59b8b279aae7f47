"""``evals data fetch``: download benchmark files from their public sources, pinned by checksum.

Each file is fetched from a pinned commit, written to a temporary file, checked against its
sha256 and size, and only then moved into place; a file already present with the right checksum
is not downloaded again. Sources and checksums are those recorded in ``../shared/data/MANIFEST.md``.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx2


@dataclass(frozen=True)
class RemoteFile:
    """One pinned file: where it goes under the data dir and where it comes from."""

    dest: str  # relative to the data dir
    url: str
    sha256: str
    size: int
    pinned_path: str | None = None  # the part of ``url`` a ``url_prefix`` keeps (default: after the commit)

    def mirror_url(self, prefix: str) -> str:
        tail = self.pinned_path if self.pinned_path is not None else self.url.split("/", 6)[6]
        return prefix.rstrip("/") + "/" + tail


# ToolHop: the official file from the Hugging Face dataset at a pinned revision. The revision is the
# one local-bench built its subset from; the size and sha256 come from a Git-LFS pointer of the file
# (MananDesai54/llm-benchmarking, data/ToolHop.json) whose HF revision is not recorded, so a
# mismatch means that pointer was for another revision (see ../shared/data/MANIFEST.md).
TOOLHOP_REVISION = "b439d7279af359fda46e8117ae4f0245b75f5c6b"
_TH = f"https://huggingface.co/datasets/bytedance-research/ToolHop/resolve/{TOOLHOP_REVISION}"
_FT = "https://raw.githubusercontent.com/yxzwang/FamilyTool/c3c5fc7e2496df3db4ffa045f0dbf34114c27802"
SOURCES: dict[str, list[RemoteFile]] = {
    "familytool": [
        RemoteFile("familytool/familytool-b.jsonl", f"{_FT}/datasets/familytool-b.jsonl",
                   "fe036758285e7f5dfab272a05bb34970fea33a435808b94941e300a2fab969e8", 3872306),
        RemoteFile("familytool/familytool-e.jsonl", f"{_FT}/datasets/familytool-e.jsonl",
                   "ad81a53f62a0163c57f0a3669d1f4670a5ee17f5b93408f2987e99602dcc8dbb", 3533815),
        RemoteFile("familytool/familykg-b.txt", f"{_FT}/KG/familykg-b.txt",
                   "546daa7fe96f3b45bcdb79fc98edcc335fcd12c19b13c954cf3a2cd270f41e9e", 7088),
        RemoteFile("familytool/familykg-e.txt", f"{_FT}/KG/familykg-e.txt",
                   "732ec34b012bc0a2ec73e50514492aa4a0556e40baafd91a8520896958897e3b", 24568),
    ],
    "toolhop": [
        RemoteFile("toolhop/ToolHop.json", f"{_TH}/data/ToolHop.json",
                   "0a51f71a44b7025645e452123af3caf2e348301922af91778e268db0188a7fab", 19720396,
                   pinned_path="data/ToolHop.json"),
    ],
}


class FetchError(RuntimeError):
    """A download failed or its content did not match the pinned checksum."""


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch(
    name: str,
    data_dir: Path,
    *,
    url_prefix: str | None = None,
    timeout: float = 60.0,
    report: Callable[[str], None] = lambda _msg: None,
) -> list[Path]:
    """Download the files of benchmark ``name`` into ``data_dir``; returns their paths.

    ``url_prefix`` replaces the scheme+host+repository part of every URL up to the commit
    (for a mirror, or a local server in tests): the path after the commit (or the revision, for a
    Hugging Face file: ``data/ToolHop.json``) is kept.
    """
    try:
        files = SOURCES[name]
    except KeyError:
        raise FetchError(f"no download source for {name!r}; known: {', '.join(SOURCES)}") from None
    out: list[Path] = []
    with httpx2.Client(timeout=timeout, follow_redirects=True) as http:
        for f in files:
            dest = data_dir / f.dest
            if dest.is_file() and sha256_of(dest) == f.sha256:
                report(f"ok       {f.dest} (already present, checksum matches)")
                out.append(dest)
                continue
            url = f.url if url_prefix is None else f.mirror_url(url_prefix)
            dest.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.")
            tmp = Path(tmp_name)
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
                if h.hexdigest() != f.sha256 or size != f.size:
                    raise FetchError(
                        f"{url}: got {size} bytes with sha256 {h.hexdigest()}, expected {f.size} bytes "
                        f"with sha256 {f.sha256}; the file was not saved"
                    )
                os.replace(tmp, dest)
                report(f"fetched  {f.dest} ({size} bytes, sha256 ok)")
                out.append(dest)
            except httpx2.HTTPError as exc:
                raise FetchError(f"GET {url} failed: {type(exc).__name__}: {exc}") from exc
            finally:
                tmp.unlink(missing_ok=True)
    return out
