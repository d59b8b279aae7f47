"""``evals view --export DIR``: the viewer's pages as a static site that opens from disk.

The same page and script as the app (:mod:`.app`); the data of every path (:mod:`.site`) is written
as a small script, ``data/<name>.js`` (``<name>``: a hash of the path, :func:`static_name`), that hands it to the page (``EVALS_DATA(path, data)``): a page
opened from ``file://`` may load scripts beside it but not fetch files. Written: the runs list, the
leaderboard, every run, its tasks and every episode, and the comparisons of each benchmark's runs of one
dataset (all of them together, and each pair, in the runs list's order).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import shutil
from pathlib import Path
from typing import Any

from .app import STATIC_DIR
from .compare import MAX_COMPARED_RUNS, CompareError
from .jsonsafe import dumps_finite
from .site import Site

__all__ = ["MAX_PAIRWISE", "NAME_HEX_DIGITS", "export_site", "static_name"]

MAX_PAIRWISE = 8  # a benchmark with more runs gets the comparison of all of them only
NAME_HEX_DIGITS = 32  # 128 bits of SHA-256: no two paths share a name, whatever their ids


def static_name(path: str) -> str:
    """The file name (without ``.js``) of a path's data: the first :data:`NAME_HEX_DIGITS` hex digits
    of the SHA-256 of its UTF-8 bytes. Short and stable whatever the ids in it (a task id of any
    length or characters; a file system refuses names over 255 bytes); the page computes the same."""
    text = path.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")  # a lone surrogate: U+FFFD, as the page's TextEncoder
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:NAME_HEX_DIGITS]


def _write(data_dir: Path, path: str, data: Any) -> None:
    text = dumps_finite(data, ensure_ascii=False, default=str)
    (data_dir / f"{static_name(path)}.js").write_text(f"EVALS_DATA({json.dumps(path)}, {text});\n", encoding="utf-8")


def export_site(site: Site, out: str | Path) -> dict[str, Any]:
    """Write the site into ``out`` (created; the files it writes are replaced). Returns counts and the
    damaged runs (left out, see :attr:`Site.damaged`). The files are written into a fresh folder, then
    moved into place without following a link in ``out`` (:func:`client.runs.fresh_output`): ``out``
    or a folder in it that is a link is refused, a link in place of a file is replaced."""
    from client.runs import fresh_output

    out = Path(out)
    with fresh_output(out) as fresh:
        counts = _export_into(site, fresh)
    return {"out_dir": str(out), "index": str(out / "index.html"), **counts, "damaged": site.damaged}


def _export_into(site: Site, out: Path) -> dict[str, int]:
    data_dir = out / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    (out / "static").mkdir(exist_ok=True)
    for name in ("app.js", "style.css", "favicon.ico"):
        shutil.copyfile(STATIC_DIR / name, out / "static" / name)
    page = (STATIC_DIR / "index.html").read_text(encoding="utf-8")
    page = page.replace("<!--DATA-->", '<script src="data/site.js"></script>')
    (out / "index.html").write_text(page, encoding="utf-8")
    (data_dir / "site.js").write_text("window.EVALS_STATIC = {exported: true};\n", encoding="utf-8")

    counts = {"runs": 0, "episodes": 0, "comparisons": 0}
    for rid in list(site.views):
        try:  # a run whose pages cannot be computed is left out (not listed), the others written
            _write(data_dir, f"run/{rid}", site.run(rid))
            tasks = site.tasks(rid)
            _write(data_dir, f"run/{rid}/tasks", tasks)
            for t in tasks["tasks"]:
                _write(data_dir, f"run/{rid}/episode/{t['id']}", site.episode(rid, t["id"]))
        except OSError:
            raise  # the export directory's fault (a full disk), not the run's
        except Exception as exc:
            site.mark_damaged(rid, exc)
            continue
        counts["runs"] += 1
        counts["episodes"] += len(tasks["tasks"])
    runs = site.runs()
    _write(data_dir, "runs", runs)
    _write(data_dir, "leaderboard", site.leaderboard())
    by_group: dict[str, list[str]] = {}  # runs of one benchmark and dataset (see RunView.group)
    for r in runs["runs"]:
        by_group.setdefault(str(r["group"]), []).append(r["id"])
    for ids in by_group.values():
        combos = [ids] if 2 <= len(ids) <= MAX_COMPARED_RUNS else []
        if 2 < len(ids) <= MAX_PAIRWISE:
            combos += [list(p) for p in itertools.combinations(ids, 2)]
        for combo in combos:
            try:
                data = site.compare(combo)
            except CompareError:
                continue
            _write(data_dir, "compare/" + ",".join(combo), data)
            counts["comparisons"] += 1
    return counts
