"""``evals view --export DIR``: the viewer's pages as a static site that opens from disk.

The same page and script as the app (:mod:`.app`); the data of every path (:mod:`.site`) is written
as a small script, ``data/<name>.js``, that hands it to the page (``EVALS_DATA(path, data)``): a page
opened from ``file://`` may load scripts beside it but not fetch files. Written: the runs list, the
leaderboard, every run, its tasks and every episode, and the comparisons of each benchmark's runs
(all of them together, and each pair, in the runs list's order).
"""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path
from typing import Any

from .app import STATIC_DIR
from .compare import CompareError
from .site import Site

__all__ = ["MAX_PAIRWISE", "export_site", "static_name"]

MAX_PAIRWISE = 8  # a benchmark with more runs gets the comparison of all of them only


def static_name(path: str) -> str:
    """The file name of a path's data: letters, digits and ``-`` kept, any other character as ``_<hex>_``
    (the page computes the same name)."""
    return "".join(c if (c.isascii() and (c.isalnum() or c == "-")) else f"_{ord(c):x}_" for c in path)


def _write(data_dir: Path, path: str, data: Any) -> None:
    text = json.dumps(data, ensure_ascii=False, default=str, allow_nan=False)
    (data_dir / f"{static_name(path)}.js").write_text(f"EVALS_DATA({json.dumps(path)}, {text});\n", encoding="utf-8")


def export_site(site: Site, out: str | Path) -> dict[str, Any]:
    """Write the site into ``out`` (created; the files it writes are replaced). Returns counts."""
    out = Path(out)
    data_dir = out / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    (out / "static").mkdir(exist_ok=True)
    for name in ("app.js", "style.css"):
        shutil.copyfile(STATIC_DIR / name, out / "static" / name)
    page = (STATIC_DIR / "index.html").read_text(encoding="utf-8")
    page = page.replace("<!--DATA-->", '<script src="data/site.js"></script>')
    (out / "index.html").write_text(page, encoding="utf-8")
    (data_dir / "site.js").write_text("window.EVALS_STATIC = {exported: true};\n", encoding="utf-8")

    counts = {"runs": 0, "episodes": 0, "comparisons": 0}
    runs = site.runs()
    _write(data_dir, "runs", runs)
    _write(data_dir, "leaderboard", site.leaderboard())
    for rid in site.views:
        _write(data_dir, f"run/{rid}", site.run(rid))
        tasks = site.tasks(rid)
        _write(data_dir, f"run/{rid}/tasks", tasks)
        counts["runs"] += 1
        for t in tasks["tasks"]:
            _write(data_dir, f"run/{rid}/episode/{t['id']}", site.episode(rid, t["id"]))
            counts["episodes"] += 1
    by_bench: dict[str, list[str]] = {}
    for r in runs["runs"]:
        by_bench.setdefault(str(r["benchmark"]), []).append(r["id"])
    for ids in by_bench.values():
        combos = [ids] if len(ids) >= 2 else []
        if 2 < len(ids) <= MAX_PAIRWISE:
            combos += [list(p) for p in itertools.combinations(ids, 2)]
        for combo in combos:
            try:
                data = site.compare(combo)
            except CompareError:
                continue
            _write(data_dir, "compare/" + ",".join(combo), data)
            counts["comparisons"] += 1
    return {"out_dir": str(out), "index": str(out / "index.html"), **counts}
