"""A user's KG at scale (not a test): build time, peak memory, open time and 2-hop query latency by size.

Generates triple files of N edges (FamilyTool's format, one ``['head', 'relation', 'tail']`` per
line; N/10 entities, 20 relation types, fixed seed) and, for each size, measures in fresh child
processes (so each peak RSS is that step's own):

* ``build``: ``KGStore.build`` of the file into an empty directory, and the child's peak RSS;
* ``open cold``: a read-only ``KGStore.open`` plus loading its in-memory adjacency (the first query),
  on a database no store has opened yet;
* ``open warm``: the same again (a store that saved its adjacency is opened from that file);
* ``2-hop p50``: ``KGStore.search`` of existing 2-hop relation paths in ``greedy`` mode (what the
  ``kg_search_path`` tool calls), after a warm open.

Rows, interleaved per repetition so that a loaded machine slows them alike:

* ``this checkout``: the kg_store of this working tree;
* ``REF`` (``--compare-ref REF``, e.g. the commit before a change): the kg_store of that git commit,
  exported with ``git archive`` and run the same way; the ``x REF`` columns are this checkout's
  figure over REF's (below 1: this checkout is faster / smaller);
* ``dict walk``: a bare Python baseline that splits each line and walks a dict of lists (no
  validation, no database): what a query cannot beat.

    python bench/bench_kg_scale.py                                    # 10k, 100k, 1M edges
    python bench/bench_kg_scale.py --sizes 1000000 --compare-ref 8c496d6 --repeats 3
    python bench/bench_kg_scale.py --json                             # last line: one JSON object

The files are written under a temporary directory (about 47 bytes per edge). The engine is
``$EVALS_KG_ENGINE`` (or ``--engine``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from io import BytesIO
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
Query = tuple[str, list[str]]


# ---- generator ------------------------------------------------------------------------------------
def generate(edges: int, path: Path, *, seed: int = 20250526, queries: int = 500) -> list[Query]:
    """Write a triple file of ``edges`` lines; return existing 2-hop (start, [r1, r2]) queries."""
    rng = random.Random(seed)
    names = [f"person_{i:07d}" for i in range(max(10, edges // 10))]
    rels = [f"relation_{i:02d}" for i in range(20)]
    out: dict[str, list[tuple[str, str]]] = {}
    with path.open("w", encoding="utf-8") as f:
        for _ in range(edges):
            h, r, t = rng.choice(names), rng.choice(rels), rng.choice(names)
            out.setdefault(h, []).append((r, t))
            f.write(f"['{h}', '{r}', '{t}']\n")
    heads = sorted(out)
    found: list[Query] = []
    while len(found) < queries:
        h = rng.choice(heads)
        r1, mid = rng.choice(out[h])
        if mid in out:
            found.append((h, [r1, rng.choice(out[mid])[0]]))
    return found


# ---- the measured steps, each in its own child process --------------------------------------------
def child(argv: Sequence[str]) -> None:
    """``--child STEP ROOT FILE DB QUERIES``: run one step with the kg_store under ROOT; print JSON."""
    step, root, triples, db, queries_file = argv
    if step == "dict":
        print(json.dumps(dict_walk(Path(triples), json.loads(Path(queries_file).read_text()))))
        return
    sys.path.insert(0, root)
    from kg_store import KGStore

    result: dict[str, Any] = {}
    t0 = time.perf_counter()
    if step == "build":
        KGStore.build(db, triples, cache=False).close()
        result["s"] = time.perf_counter() - t0
    else:
        with KGStore.open(db, read_only=True) as store:
            store.relations()  # loads the adjacency
            result["s"] = time.perf_counter() - t0
            if step == "query":
                queries = json.loads(Path(queries_file).read_text())
                result["p50_ms"] = p50(lambda s, p: store.search(s, p, mode="greedy", top_k=3), queries)
    print(json.dumps(result))


def p50(fn: Any, queries: Sequence[Query], calls: int = 3000) -> float:
    """Median latency (ms) of ``calls`` calls cycling through ``queries``, after a warm-up."""
    from bench_kg import pct, time_calls  # here: after the child put its kg_store first on the path

    return pct(time_calls(fn, queries, calls), 50)


def dict_walk(triples: Path, queries: list[Query]) -> dict[str, float]:
    """The bare baseline: split each line, a dict of lists, a 2-hop walk."""
    t0 = time.perf_counter()
    out: dict[str, list[tuple[str, str]]] = {}
    with triples.open(encoding="utf-8") as f:
        for line in f:
            _, h, _, r, _, t, _ = line.split("'")
            out.setdefault(h, []).append((r, t))
    build_s = time.perf_counter() - t0

    def walk(start: str, path: list[str]) -> list[list[tuple[str, str, str]]]:
        paths: list[list[tuple[str, str, str]]] = [[]]
        for rel in path:
            paths = [p + [(p[-1][2] if p else start, r, t)] for p in paths
                     for r, t in out.get(p[-1][2] if p else start, ()) if r == rel]
        return paths

    return {"build_s": build_s, "p50_ms": p50(walk, queries)}


def run_child(step: str, root: Path, triples: Path, db: Path, queries: Path) -> tuple[dict[str, Any], float]:
    """Run one step in a child process; its JSON result and its peak RSS in MB."""
    env = {**os.environ, "PYTHONPATH": ""}
    proc = subprocess.Popen(
        [sys.executable, __file__, "--child", step, str(root), str(triples), str(db), str(queries)],
        stdout=subprocess.PIPE, env=env,
    )
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"child {step} ({root}) exited with status {proc.returncode}")
    return json.loads(out.decode().strip().splitlines()[-1]), usage.ru_maxrss / 1024.0


def export_ref(ref: str, dest: Path) -> Path:
    """``git archive`` the kg_store package of ``ref`` into ``dest``."""
    data = subprocess.run(["git", "-C", str(REPO), "archive", ref, "kg_store"], check=True,
                          capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")
    return dest


# ---- the table ------------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["--child"]:
        child(args_list[1:])
        return 0
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000], metavar="N")
    parser.add_argument("--repeats", type=int, default=1, help="repetitions per size (medians are shown)")
    parser.add_argument("--compare-ref", metavar="REF", help="also run the kg_store of this git commit")
    parser.add_argument("--engine", choices=["kuzu", "ladybug"], help="default $EVALS_KG_ENGINE or kuzu")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = parser.parse_args(args_list)
    if args.engine:
        os.environ["EVALS_KG_ENGINE"] = args.engine
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench_kg_scale_") as tmp_name:
        tmp = Path(tmp_name)
        impls = {"this checkout": REPO}
        if args.compare_ref:
            impls[args.compare_ref] = export_ref(args.compare_ref, tmp / "ref")
        for size in args.sizes:
            triples, queries_file = tmp / f"kg-{size}.txt", tmp / f"queries-{size}.json"
            queries_file.write_text(json.dumps(generate(size, triples)))
            samples: dict[str, dict[str, list[float]]] = {name: {} for name in [*impls, "dict walk"]}
            for rep in range(args.repeats):
                for name, root in impls.items():
                    db = tmp / f"db-{size}-{rep}-{len(name)}"
                    got = samples[name]
                    build, rss = run_child("build", root, triples, db, queries_file)
                    got.setdefault("build_s", []).append(build["s"])
                    got.setdefault("build_rss_mb", []).append(rss)
                    cold, rss = run_child("open", root, triples, db, queries_file)
                    got.setdefault("open_cold_s", []).append(cold["s"])
                    got.setdefault("open_rss_mb", []).append(rss)
                    warm, _ = run_child("query", root, triples, db, queries_file)
                    got.setdefault("open_warm_s", []).append(warm["s"])
                    got.setdefault("p50_ms", []).append(warm["p50_ms"])
                base, rss = run_child("dict", REPO, triples, tmp, queries_file)
                samples["dict walk"].setdefault("build_s", []).append(base["build_s"])
                samples["dict walk"].setdefault("build_rss_mb", []).append(rss)
                samples["dict walk"].setdefault("p50_ms", []).append(base["p50_ms"])
            for name, got in samples.items():
                rows.append({"edges": size, "impl": name, **{k: statistics.median(v) for k, v in got.items()}})
    print_table(rows, args.compare_ref, args.repeats)
    if args.json:
        print(json.dumps({"rows": rows, "compare_ref": args.compare_ref}, sort_keys=True))
    return 0


def print_table(rows: list[dict[str, Any]], ref: str | None, repeats: int) -> None:
    from rich.console import Console
    from rich.table import Table

    cols = [("build_s", "build s"), ("build_rss_mb", "build peak MB"), ("open_cold_s", "open cold s"),
            ("open_warm_s", "open warm s"), ("open_rss_mb", "open peak MB"), ("p50_ms", "2-hop p50 ms")]
    table = Table(title=f"KG scale: medians of {repeats} run(s), each step in a fresh process "
                        f"({os.cpu_count()} CPUs; the machine may be loaded: compare rows, not runs)")
    table.add_column("edges", justify="right")
    table.add_column("kg_store")
    for _, label in cols:
        table.add_column(label, justify="right")
    if ref:
        for label in ("build", "peak", "open warm", "p50"):
            table.add_column(f"{label} x {ref}", justify="right")
    by = {(r["edges"], r["impl"]): r for r in rows}
    for r in rows:
        cells = [f"{r['edges']:,}", r["impl"]]
        cells += [f"{r[k]:.4f}" if k == "p50_ms" else f"{r[k]:.2f}" if k in r else "" for k, _ in cols]
        if ref:
            other = by.get((r["edges"], ref))
            if r["impl"] == "this checkout" and other:
                cells += [f"{r[k] / other[k]:.2f}" for k in ("build_s", "build_rss_mb", "open_warm_s", "p50_ms")]
            else:
                cells += [""] * 4
        table.add_row(*cells)
    Console(width=200).print(table)


if __name__ == "__main__":
    raise SystemExit(main())
