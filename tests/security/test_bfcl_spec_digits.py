"""Issue 46 item 13 (BFCL part): a 5000-digit integer in a BFCL function-doc file (``--tools-dir``)
ended in a traceback (``ValueError: Exceeds the limit (4300 digits)``); it is a one-line error
naming the file and line, exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tool_specs import SpecLoadError
from tool_specs.spec_formats import load_tool_file

ROOT = Path(__file__).resolve().parents[2]
DOC = '{"name": "f", "description": "d", "parameters": {"type": "dict", "properties": {"x": {"type": "integer", "default": %s}}}}'


def _write(folder: Path, suffix: str) -> Path:
    folder.mkdir()
    path = folder / f"tools{suffix}"
    ok = DOC % "1"
    path.write_text(ok + "\n" + DOC % ("9" * 5000) + "\n" if suffix == ".jsonl" else "[\n" + ok + ",\n" + DOC % ("9" * 5000) + "\n]\n")
    return path


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_a_5000_digit_integer_in_a_bfcl_doc_file_is_a_one_line_error(tmp_path: Path, suffix: str) -> None:
    path = _write(tmp_path / "tools", suffix)
    where = f"{path}:{2 if suffix == '.jsonl' else 3}"  # the line holding the integer
    with pytest.raises(SpecLoadError) as caught:
        load_tool_file(path)
    assert f"{where}:" in str(caught.value) and "an integer of 5000 digits" in str(caught.value)
    done = subprocess.run([sys.executable, "-m", "evals.cli", "serve", "--tools-dir", str(path.parent), "--stdio"],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert len(done.stderr.strip().splitlines()) == 1 and f"{where}: an integer of 5000 digits" in done.stderr
