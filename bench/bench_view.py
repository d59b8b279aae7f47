"""How fast ``evals view`` is on a big run (not a test): a synthetic run of N episodes, timed page by page.

The run (``--episodes``, default 10,000) is written the way ``evals run`` writes one: ``config.json``,
``traces.jsonl`` through the recorder (:class:`client.runs.EpisodeRecorder`: each line is a header and
its events: a request with a system and a user message and a tool list, ``--turns`` model responses
with a tool call each, their tool results of ``--result-chars`` characters, a final answer) and
``scores.jsonl`` (three pass/fail metrics, two breakdowns). Its benchmark is not registered, so the
viewer shows its stored scores with generic labels (as for a user's own benchmark).

Timed, each the median of ``--repeats``:

* ``index``: reading the run cold (:class:`evals.view.RunIndex`: trace headers by byte offset and the
  first user message, the scores);
* ``runs list``: the runs page's data (the summary with every metric, breakdowns, headline);
* ``tasks table``: the run's tasks table (every task's metrics, turns, tokens, latency, error, query);
* ``transcript``: one episode read from its offset and laid out (a task in the middle of the file);
* ``refresh, nothing new`` and ``refresh, 100 new episodes``: what a page of a run in progress costs;
* ``compare``: two such runs (the second with other answers), paired statistics on every metric.

Wall and CPU seconds of this process are printed (on a shared machine the CPU time is the steadier).

Usage: ``python bench/bench_view.py [--episodes 10000] [--dir DIR] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from client.runs import EpisodeRecorder

BENCHMARK = "synthetic-bench"


def _write_run(path: Path, episodes: int, turns: int, result_chars: int, seed: int, start: int = 0) -> None:
    rng = random.Random(seed)
    path.mkdir(parents=True, exist_ok=True)
    if start == 0:
        (path / "config.json").write_text(json.dumps({
            "benchmark": BENCHMARK, "model": f"synthetic:model-{seed}", "strategy": "agent",
            "created_at": "2026-01-01T00:00:00+00:00", "options": {"temperature": 0.0}, "run": {"limit": episodes}}))
    tools = [{"name": f"tool_{i}", "description": "a tool " * 20,
              "input_schema": {"type": "object", "properties": {"x": {"type": "string"}}}} for i in range(8)]
    with open(path / "traces.jsonl", "a", encoding="utf-8") as traces, open(path / "scores.jsonl", "a", encoding="utf-8") as scores:
        for n in range(start, start + episodes):
            tid = f"task_{n:05d}"
            rec = EpisodeRecorder(tid)
            msgs: list[dict[str, Any]] = [{"role": "system", "text": "You are a helpful assistant. " * 10},
                                          {"role": "user", "text": f"Question {n}: find the value for item {n} " + "and so on " * 5}]
            for t in range(turns):
                rec.model_request(msgs, tools)
                call: dict[str, Any] = {"id": f"c{t}", "name": f"tool_{t % 8}", "arguments": {"x": f"v{n}-{t}"}}
                rec.model_response({"text": None, "tool_calls": [call], "usage": {"input_tokens": 500 + t, "output_tokens": 30}},
                                   latency_s=0.5, cost_usd=0.001)
                result = ("r" * result_chars)
                rec.tool_call(call["name"], call["arguments"], result, is_error=rng.random() < 0.05, latency_s=0.01, call_id=call["id"])
                msgs = msgs + [{"role": "assistant", "tool_calls": [call]}, {"role": "tool", "tool_call_id": call["id"], "content": result}]
            rec.final_answer(f"The answer is {n}.")
            traces.write(rec.build_record("completed") + "\n")
            ok = [rng.random() < p for p in (0.6, 0.8, 0.4)]
            scores.write(json.dumps({"task_id": tid, "episode_id": rec.episode_id, "judge": [], "score": {
                "samples": {"accuracy": [float(ok[0]), 1.0], "tool_acc": [float(ok[1]), 1.0], "strict": [float(ok[2]), 1.0]},
                "groups": {"hops": str(2 + n % 5), "domain": f"d{n % 7}"}, "details": {}}}) + "\n")


CPU: dict[str, float] = {}


def _median(fn: Callable[[], Any], repeats: int, name: str = "") -> tuple[float, Any]:
    """The median wall time of ``fn`` (and its median CPU time in :data:`CPU` under ``name``)."""
    times, cpus, out = [], [], None
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    CPU[name] = statistics.median(cpus)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=int, default=10_000)
    ap.add_argument("--turns", type=int, default=4)
    ap.add_argument("--result-chars", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dir", help="where to write the runs (default: a temporary directory)")
    args = ap.parse_args()

    from evals.view.compare import compare_runs
    from evals.view.index import RunIndex
    from evals.view.runs import RunView
    from evals.view.site import Site
    from evals.view.transcript import episode

    root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bench-view-"))
    a, b = root / "run-a", root / "run-b"
    t0 = time.perf_counter()
    for p, seed in ((a, 1), (b, 2)):
        if not (p / "traces.jsonl").exists():
            _write_run(p, args.episodes, args.turns, args.result_chars, seed)
    written = time.perf_counter() - t0
    size = (a / "traces.jsonl").stat().st_size

    rows: list[tuple[str, float, float, str]] = []
    t_index, index = _median(lambda: RunIndex.open(a), args.repeats, "index")
    rows.append(("index (cold read of the run)", t_index, CPU["index"], f"{len(index.traces)} episodes"))
    t_runs, _ = _median(lambda: Site([a], load_benchmarks=False).runs(), args.repeats, "runs")
    rows.append(("runs list (index + summary)", t_runs, CPU["runs"], "what the first page waits for"))
    view = RunView("run-a", index)
    t_tasks, tasks = _median(lambda: RunView("run-a", index).task_rows(), args.repeats, "tasks")
    rows.append(("tasks table (from the index)", t_tasks, CPU["tasks"], f"{len(tasks['tasks'])} rows"))
    mid = f"task_{args.episodes // 2:05d}"
    t_ep, ep = _median(lambda: episode(view, mid), args.repeats, "ep")
    rows.append(("transcript of one episode", t_ep, CPU["ep"], f"{len(ep['items'])} items" if ep else "missing"))
    t_ref, _ = _median(index.refresh, args.repeats, "ref")
    rows.append(("refresh, nothing new", t_ref, CPU["ref"], ""))
    _write_run(a, 100, args.turns, args.result_chars, 3, start=args.episodes)
    t0, c0 = time.perf_counter(), time.process_time()
    index.refresh()
    rows.append(("refresh, 100 new episodes", time.perf_counter() - t0, time.process_time() - c0,
                 f"{len(index.traces)} episodes"))
    vb = RunView("run-b", RunIndex.open(b))
    t_cmp, cmp = _median(lambda: compare_runs([RunView("run-a", index), vb]), 1, "cmp")
    rows.append(("compare two runs (3 metrics, bootstrap)", t_cmp, CPU["cmp"], f"{len(cmp['tasks'])} tasks"))

    print(f"synthetic runs in {root} ({args.episodes} episodes each, traces.jsonl {size / 1e6:.1f} MB, "
          f"written in {written:.1f} s); median of {args.repeats}")
    print(f"{'step':44} {'wall s':>8} {'cpu s':>8}  note")
    for name, secs, cpu, note in rows:
        print(f"{name:44} {secs:8.4f} {cpu:8.4f}  {note}")


if __name__ == "__main__":
    main()
