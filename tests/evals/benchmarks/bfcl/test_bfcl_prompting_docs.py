"""The function docs the model is given, per kind of entry, equal what BFCL's own loader gives its handlers
(``load_dataset_entry``: its language hint, " Note that the provided function is in Python 3 syntax.", on
every multi-turn, memory and web-search doc; the held-out docs of ``multi_turn_miss_func`` without it,
since BFCL moves them out of the list before it adds the hint).

Compared: each function's name, description and its parameters' descriptions, as served by the entry's
endpoint (the tools an FC model is sent; a prompting model's system prompt is written from the same docs),
against BFCL's loader run in .ci/bfcl-venv. BFCL's answer is also committed
(``fixtures/bfcl_loader_docs.json``, a digest per entry), made by

    EVALS_DATA_DIR=... PYTHONPATH=. python tests/evals/benchmarks/bfcl/test_bfcl_prompting_docs.py
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
FIXTURE = HERE / "fixtures" / "bfcl_loader_docs.json"
# entries of each kind: a multi-turn one with a held-out function, memory questions and a prerequisite
# conversation of each backend, a web-search question
ENTRIES = {"multi_turn_base": ["multi_turn_base_0"], "multi_turn_miss_func": ["multi_turn_miss_func_0"],
           "memory_kv": ["memory_kv_0-customer-0", "memory_kv_prereq_0-customer-0"],
           "memory_rec_sum": ["memory_rec_sum_0-customer-0"], "memory_vector": ["memory_vector_0-customer-0"],
           "web_search_base": ["web_search_base_0"]}

_LOADER = """
import json, sys
from bfcl_eval.utils import load_dataset_entry
wanted = json.loads(sys.argv[1])
out = {}
for category, ids in wanted.items():
    for entry in load_dataset_entry(category):
        if entry["id"] in ids:
            held = [d for docs in (entry.get("missed_function") or {}).values() for d in docs]
            out[entry["id"]] = {"shown": entry["function"], "held_out": held}
print(json.dumps(out))
"""


def _summary(docs: Any) -> list[list[Any]]:
    """[name, description, {parameter: description}] of each doc."""
    return [[d["name"], d["description"], {k: v.get("description") for k, v in
                                          ((d.get("parameters") or {}).get("properties") or {}).items()}]
            for d in docs]


def _served(spec: Any) -> list[Any]:
    props = spec.input_schema.get("properties") or {}
    return [spec.annotations.get("bfcl_name", spec.name), spec.description,
            {k: v.get("description") for k, v in props.items()}]


def ours() -> dict[str, dict[str, Any]]:
    """Each entry's served docs: {"shown": [...], "held_out": [...]} as :func:`_summary` writes them."""
    from evals.benchmarks.bfcl.memory import HIDDEN_TOOLS, memory_tools, read_docs
    from evals.benchmarks.bfcl.multi_turn_episode import MultiTurnKind
    from evals.benchmarks.bfcl.web_search import WebSearchKind

    out: dict[str, dict[str, Any]] = {}
    multi = MultiTurnKind(("multi_turn_base", "multi_turn_miss_func"))
    for entry_id in ENTRIES["multi_turn_base"] + ENTRIES["multi_turn_miss_func"]:
        entry = multi.entries[entry_id]
        tools = {t.annotations["bfcl_name"]: t for t in multi.task_tools(entry_id)}
        held = [str(d["name"]) for turn in sorted(entry.missed) for d in entry.missed[turn]]
        out[entry_id] = {"shown": [_served(tools[str(d["name"])]) for d in entry.functions],
                         "held_out": [_served(tools[name]) for name in held]}
    for category in ("memory_kv", "memory_rec_sum", "memory_vector"):
        backend = category.removeprefix("memory_")
        for entry_id in ENTRIES[category]:
            tools = [t for t in memory_tools(backend, read_docs(backend), entry_id) if t.name not in HIDDEN_TOOLS]
            out[entry_id] = {"shown": [_served(t) for t in tools], "held_out": []}
    web = WebSearchKind(("web_search_base",))
    web.serve()
    for entry_id in ENTRIES["web_search_base"]:
        out[entry_id] = {"shown": [_served(t) for t in web.task_tools(entry_id)], "held_out": []}
    return out


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def bfcl_docs(bfcl_python: Path, tmp: Path) -> dict[str, dict[str, Any]]:
    done = subprocess.run([str(bfcl_python), "-c", _LOADER, json.dumps(ENTRIES)], capture_output=True, text=True,
                          timeout=600, check=False, env={**os.environ, "BFCL_PROJECT_ROOT": str(tmp / "bfcl-project")})
    assert done.returncode == 0, done.stderr[-3000:]
    theirs = json.loads(done.stdout.strip().splitlines()[-1])
    return {i: {"shown": _summary(v["shown"]), "held_out": _summary(v["held_out"])} for i, v in theirs.items()}


def test_every_kind_gives_the_docs_bfcls_loader_gives(bfcl_data, bfcl_python, tmp_path):
    mine, theirs = ours(), bfcl_docs(bfcl_python, tmp_path)
    assert set(theirs) == {i for ids in ENTRIES.values() for i in ids}
    for entry_id, docs in theirs.items():
        assert mine[entry_id] == docs, entry_id
    hint = " Note that the provided function is in Python 3 syntax."
    assert all(d[1].endswith(hint) for v in theirs.values() for d in v["shown"])
    assert theirs["multi_turn_miss_func_0"]["held_out"] and not any(
        d[1].endswith(hint) for d in theirs["multi_turn_miss_func_0"]["held_out"])


def test_the_committed_loader_docs_hold_without_bfcls_venv(bfcl_data):
    committed = json.loads(FIXTURE.read_text())["docs_sha256"]
    assert {i: digest(v) for i, v in ours().items()} == committed


def main() -> None:
    import tempfile

    venv = HERE.parents[3] / ".ci" / "bfcl-venv" / "bin" / "python"
    with tempfile.TemporaryDirectory() as folder:
        theirs = bfcl_docs(venv, Path(folder))
    FIXTURE.write_text(json.dumps({
        "made_by": "EVALS_DATA_DIR=... PYTHONPATH=. python tests/evals/benchmarks/bfcl/test_bfcl_prompting_docs.py",
        "docs_sha256": {i: digest(v) for i, v in theirs.items()}}, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    sys.exit(main())
