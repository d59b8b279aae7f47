"""A large result folder's single-turn lines are decoded in two processes (:mod:`evals.benchmarks.bfcl.results_split`):
what is read is what one process reads (each trace, its line, whether it reads back, every warning), and a bad line
is refused as one process refuses it, with the first bad FILE:LINE."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from evals.benchmarks.bfcl import results_split, single_turn
from evals.benchmarks.bfcl.data import load_entries
from evals.benchmarks.bfcl.results import read_results

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


def _read(path: Path) -> Any:
    got = read_results(path)
    no_id = {k: {**t, "episode_id": None} for k, t in got.traces.items()}
    lines = {k: json.dumps({**json.loads(line), "episode_id": None}) for k, line in got.lines.items()}
    return no_id, lines, got.json_exact, got.warnings, got.options


def test_two_processes_read_what_one_reads(bfcl_data, tmp_path, monkeypatch):
    folder = _folder(tmp_path)
    monkeypatch.setattr(results_split, "MIN_ROWS", 10**9)
    alone = _read(folder)
    forks: list[int] = []
    fork = os.fork

    def counted() -> int:
        forks.append(1)
        return fork()

    monkeypatch.setattr(results_split, "MIN_ROWS", 100)
    monkeypatch.setattr(os, "fork", counted)
    split = _read(folder)
    assert forks == [1]
    assert split == alone
    assert 0 < len(alone[2]) < len(alone[0])  # lines that read back as their traces, and lines that do not
    # the other process's verdicts, handed to the scoring with the very trace objects, are the ones made here
    got = read_results(folder)
    entries = {e.id: e for e in load_entries(("simple_python", "multiple"))}
    handed = [(i, t) for i, t in got.traces.items() if id(t) in single_turn._handed]
    assert len(handed) > 50
    assert all(single_turn._handed[id(t)][2] == single_turn.entry_verdict(entries[i], t) for i, t in handed)
    assert any(not single_turn._handed[id(t)][2].valid for _, t in handed)


@pytest.mark.parametrize("extra", [['{"id": "multiple_0", "result": "[f()]"}', '{"id": "multiple_1", "result": 1}'],
                                   ['{"id": "simple_python_3", "result": "[f()]"}'], ['{"id": "multiple_9"}']])
def test_two_processes_refuse_the_first_bad_line_as_one_does(bfcl_data, tmp_path, monkeypatch, extra):
    folder = _folder(tmp_path, extra)
    errors = []
    for rows in (10**9, 100):
        monkeypatch.setattr(results_split, "MIN_ROWS", rows)
        with pytest.raises(ValueError) as caught:
            read_results(folder)
        errors.append(str(caught.value))
    assert errors[0] == errors[1] and ":201:" in errors[0]
