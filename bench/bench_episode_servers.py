"""What isolating episodes costs (issue 49): the same oracle run of a task file over a stdio MCP server,
with the server shared by all episodes, and started afresh for each (``--fresh-servers``).

The server is the tests' ``notes_server.py`` (Python, the MCP SDK); each task copies a notes file into
its episode's folder (``setup.files``) and reads one note. Each mode runs ``--repeat`` times, the two
interleaved so that a loaded machine slows both alike; prints the median and minimum wall time of the
whole command per mode, the fresh mode's median over the shared one's, and the cost per episode.

    python bench/bench_episode_servers.py                 # 10 tasks, 5 runs of each
    python bench/bench_episode_servers.py --tasks 20 --repeat 3

Not a test: nothing is asserted (compare the rows of one run, and read the load average it prints).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTES_SERVER = ROOT / "tests" / "evals" / "benchmarks" / "usertasks" / "notes_server.py"


def write_case(folder: Path, n: int) -> tuple[Path, Path]:
    (folder / "notes.json").write_text(json.dumps({f"k{i}": f"v{i}" for i in range(n)}))
    tasks = folder / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"id": f"t{i}", "query": f"What does note k{i} say?", "setup": {"files": ["notes.json"]},
                                         "calls": [{"name": "get_note", "arguments": {"key": f"k{i}"}}],
                                         "answer": f"v{i}"}) + "\n" for i in range(n)))
    config = folder / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"notes": {"command": sys.executable, "args": [str(NOTES_SERVER)],
                                                           "env": {"NOTES_FILE": str(folder / "notes.json")}}}}))
    return tasks, config


def one(tasks: Path, config: Path, run_dir: Path, fresh: bool) -> float:
    argv = [sys.executable, "-m", "evals.cli", "run", "taskfile", "--tasks", str(tasks), "--mcp-config", str(config),
            "--model", "oracle", "--run-dir", str(run_dir), "--no-progress", "--json"]
    start = time.perf_counter()
    done = subprocess.run([*argv, *(["--fresh-servers"] if fresh else [])], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"evals run failed ({done.returncode}): {done.stderr[-2000:]}")
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    times: dict[bool, list[float]] = {False: [], True: []}
    with tempfile.TemporaryDirectory(prefix="bench-episodes-") as tmp:
        tasks, config = write_case(Path(tmp), args.tasks)
        one(tasks, config, Path(tmp) / "warm", False)
        for r in range(args.repeat):
            for new in (False, True):
                times[new].append(one(tasks, config, Path(tmp) / f"run-{r}-{new}", new))
    shared, fresh = statistics.median(times[False]), statistics.median(times[True])
    print(f"{args.tasks} tasks, {args.repeat} runs of each; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"{'server':<28}{'median s':>10}{'min s':>10}")
    print(f"{'shared by all episodes':<28}{shared:>10.2f}{min(times[False]):>10.2f}")
    print(f"{'one per episode':<28}{fresh:>10.2f}{min(times[True]):>10.2f}")
    print(f"one per episode / shared: {fresh / shared:.2f}x; {(fresh - shared) / args.tasks:.3f} s more per episode")


if __name__ == "__main__":
    main()
