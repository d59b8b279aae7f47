"""Runs the official ToolHop scoring on every file of ``files/`` and writes ``expected.json`` (see
README.md): per file the numbers it printed or decided, or the error it stopped on. It uses the
fuzzer's own runner of the official code (``bench/fuzz/toolhop.py``: the official
``code/evaluation_closed.py`` at the pinned commit, unchanged, run by the system Python).

    PYTHONPATH=. python tests/evals/toolhop_official/official_numbers.py /tmp/evals-fuzz/toolhop
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bench.fuzz import toolhop

HERE = Path(__file__).resolve().parent


def main(work: Path) -> None:
    work.mkdir(parents=True, exist_ok=True)
    toolhop.prepare(work)
    out = {}
    for f in sorted((HERE / "files").glob("*.jsonl")):
        got = toolhop.run_official(work, f)
        out[f.name] = {"stops": got.note} if got.stopped else {"numbers": got.numbers}
    (HERE / "expected.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
