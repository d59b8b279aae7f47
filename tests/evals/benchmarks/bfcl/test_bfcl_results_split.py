"""A large result folder's single-turn lines are decoded in two processes (:mod:`evals.benchmarks.bfcl.results_split`):
what is read is what one process reads (each trace, its line, whether it reads back, every warning), and a bad line
is refused as one process refuses it, with the first bad FILE:LINE."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[4]

# prompting (Python call syntax) results: right and wrong calls, texts, and values that do not read back from JSON
# as they were (a tuple, a key that is not a text, a set, bytes, a lone surrogate, NaN, an integer beyond a float)
RESULTS = ["[calculate_triangle_area(base=10, height=5)]", "[calculate_triangle_area(base=(10, 5), height={1: 2})]",
           "[math.factorial(number={1, 2})]", "[f(a='\\ud800')]", "[f(a=float('nan'))]", "[f(a=1e400)]",
           "[f(a=" + "9" * 400 + ")]", "[f(a=b'xy', c=1j)]", "I cannot help with that.", "text \ud83d", "[f(",
           "[f(a=[(1, 2), {'k': (3,)}], b={None: 1, True: 2})]", "[f(a='NaN')]", ""]


def _folder(root: Path, extra: list[str] | None = None) -> Path:
    model = root / "result" / "Qwen_Qwen3-8B"
    for category, count in (("simple_python", 400), ("multiple", 200)):
        path = model / "non_live" / f"BFCL_v4_{category}_result.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = [json.dumps({"id": f"{category}_{n}", "result": RESULTS[n % len(RESULTS)]}) for n in range(count)]
        if category == "multiple" and extra:
            lines += extra
        path.write_text("\n".join(lines) + "\n")
    return model


# run in a fresh interpreter: the fork is taken only while no other thread runs (an earlier test's replays may)
_READ = """
import json, os, sys
from pathlib import Path
from evals.benchmarks.bfcl import checker, results_split, single_turn
from evals.benchmarks.bfcl.data import load_entries
from evals.benchmarks.bfcl.results import read_results
results_split.MIN_ROWS = int(sys.argv[2])
results_split.spare_cpu = lambda: True  # whatever the machine's load
forks = []
fork = os.fork
def counted():
    forks.append(1)
    return fork()
os.fork = counted
try:
    got = read_results(Path(sys.argv[1]), None, single_turn.entry_verdict)  # as the plugin reads a folder
except ValueError as exc:
    print(json.dumps({"error": str(exc), "forks": len(forks)}))
    sys.exit(0)
entries = {e.id: e for e in load_entries(("simple_python", "multiple"))}
handed = [(i, t) for i, t in got.traces.items() if id(t) in checker._handed]
print(json.dumps({
    "traces": {k: {**t, "episode_id": None} for k, t in got.traces.items()},
    "typed": {k: repr({**t, "episode_id": None}) for k, t in got.traces.items()},  # a tuple is no list, 1 no 1.0
    "lines": {k: json.dumps({**json.loads(line), "episode_id": None}) for k, line in got.lines.items()},
    "exact": sorted(got.json_exact), "warnings": [str(w) for w in got.warnings], "forks": len(forks),
    "handed": len(handed), "handed_wrong": len([1 for i, t in handed
                                                if checker._handed[id(t)][2] != single_turn.entry_verdict(entries[i], t)]),
    "handed_invalid": len([1 for i, t in handed if not checker._handed[id(t)][2].valid]),
}, default=repr))
"""


def _read(path: Path, rows: int) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", _READ, str(path), str(rows)], capture_output=True, text=True,
                          timeout=120, check=False, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_two_processes_read_what_one_reads(bfcl_data, tmp_path):
    folder = _folder(tmp_path)
    alone, split = _read(folder, 10**9), _read(folder, 100)
    assert (alone["forks"], split["forks"]) == (0, 1)
    assert alone["handed"] == 0
    assert {k: v for k, v in split.items() if not k.startswith(("forks", "handed"))} == \
        {k: v for k, v in alone.items() if not k.startswith(("forks", "handed"))}
    assert 0 < len(alone["exact"]) < len(alone["traces"])  # lines that read back as their traces, and lines that do not
    # the verdicts made while reading, handed to the scoring with the very trace objects, are the ones made again
    assert split["handed"] == len(alone["exact"]) and split["handed_wrong"] == 0 and split["handed_invalid"] > 0


@pytest.mark.parametrize("extra", [['{"id": "multiple_0", "result": "[f()]"}', '{"id": "multiple_1", "result": 1}'],
                                   ['{"id": "simple_python_3", "result": "[f()]"}'], ['{"id": "multiple_9"}']])
def test_two_processes_refuse_the_first_bad_line_as_one_does(bfcl_data, tmp_path, extra):
    folder = _folder(tmp_path, extra)
    alone, split = _read(folder, 10**9), _read(folder, 100)
    assert (alone["forks"], split["forks"]) == (0, 1)
    assert split["error"] == alone["error"] and ":201:" in alone["error"]
