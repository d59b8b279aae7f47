"""Runs ``bfcl evaluate`` (the body of bfcl_eval's ``evaluate`` command: ``load_dotenv``, then ``eval_runner.main``;
its typer wrapper is not installed) over a result folder, in .ci/bfcl-venv.

Run by that venv's python (never imported by the project's tests):
    python bfcl_evaluate_driver.py RESULT_DIR SCORE_DIR MODEL [CATEGORY ...]
``RESULT_DIR`` holds ``<MODEL with / as _>/<group>/BFCL_v4_<category>_result.json``. What runs is BFCL's
``eval_runner.main([MODEL], CATEGORIES or ["all"], RESULT_DIR, SCORE_DIR, partial_eval=True)`` (the entries the
files hold), unchanged: its model registry (``MODEL_CONFIG_MAPPING``) picks the model's handler, whose
``decode_ast`` decodes each result, then its eval runner and checkers. BFCL makes its ``result/``, ``score/``
and lock folders under ``BFCL_PROJECT_ROOT`` (a temporary one when it is not set). Printed on stdout, as JSON:
``csv``, {CSV file: {column: cell}} of the model's row of each CSV BFCL wrote; ``scores``, the
``*_score.json`` headers ({category: {"accuracy", "correct_count", "total_count"}}); ``verdicts``, {id:
error type, or "" when right} of every entry of the result files (each score file lists the entries that
failed). Used by ``test_bfcl_export_evaluate.py`` (an exported run), by ``handler_folders.py`` for
``test_bfcl_handlers.py``, ``test_bfcl_results_handler_episodes.py`` and ``test_bfcl_results_own_decoders.py``
(crafted result folders of eight, four and 19 registry models) and by the fuzzer (bench/fuzz/bfcl.py).

What runs is BFCL's code, the real model registry and handler classes included. The venv holds bfcl-eval
without its dependencies (the model SDKs, numpy, pandas...): a module that cannot be found is a stand-in
whose every name is a harmless class (the SDK clients a handler's constructor makes are never called:
evaluation queries no model; no decoder of the handlers used touches them). Five are given what
evaluation uses of them: ``numpy``'s ``percentile`` (the 95th-percentile latency, numpy's default "linear"
method), ``tqdm`` (iterates), ``dotenv``'s ``load_dotenv`` (nothing to load), ``overrides``' decorators
(they return the method) and ``pandas`` (only for a Weights & Biases upload that does not run).
"""

from __future__ import annotations

import contextlib
import csv
import importlib.abc
import importlib.machinery
import json
import math
import os
import sys
import tempfile
import types
from pathlib import Path
from typing import Any


class _AnyType(type):
    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return type(name, (_Anything,), {})

    def __getitem__(cls, item: Any) -> Any:
        return cls

    def __or__(cls, other: Any) -> Any:
        return cls

    def __ror__(cls, other: Any) -> Any:
        return cls


class _Anything(metaclass=_AnyType):
    """Any name of a stand-in module: a class that takes any arguments and has any attribute."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self

    def __getattr__(self, name: str) -> Any:
        return _Anything()


class _StandIn(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        made = type(name, (_Anything,), {})
        setattr(self, name, made)
        return made


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


# bfcl-eval's dependencies (its wheel's Requires-Dist, by import name) and what the SDKs import
STOOD_IN = frozenset({
    "numpy", "pandas", "huggingface_hub", "pydantic", "dotenv", "tree_sitter", "tree_sitter_java",
    "tree_sitter_javascript", "openai", "mistralai", "anthropic", "cohere", "typer", "tabulate",
    "datamodel_code_generator", "google", "qwen_agent", "writerai", "overrides", "boto3", "botocore", "bs4",
    "html2text", "rank_bm25", "serpapi", "sentence_transformers", "faiss", "networkx", "requests", "tqdm",
    "vllm", "sglang", "wandb", "transformers", "torch", "httpx",
})

_GIVEN = {
    "numpy": {"percentile": _percentile},
    "overrides": {"final": lambda f: f, "override": lambda f: f},
    "tqdm": {"tqdm": lambda iterable=None, *a, **k: iterable},
    "dotenv": {"load_dotenv": lambda *a, **k: False},
}


class _StandInLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _StandIn(spec.name)
        module.__path__ = []  # a package: its submodules are stand-ins too
        for name, value in _GIVEN.get(spec.name, {}).items():
            setattr(module, name, value)
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


class _StandInFinder(importlib.abc.MetaPathFinder):
    """Last on ``sys.meta_path``: a module of ``STOOD_IN`` that nothing else finds (is not installed)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname.split(".")[0] not in STOOD_IN:
            return None
        return importlib.machinery.ModuleSpec(fullname, _StandInLoader(), is_package=True)


def _read_scores(score_dir: Path, result_dir: Path, model: str) -> dict[str, Any]:
    from bfcl_eval.constants.model_config import MODEL_CONFIG_MAPPING

    out: dict[str, Any] = {"csv": {}, "scores": {}, "verdicts": {}}
    display = MODEL_CONFIG_MAPPING[model].display_name
    for path in sorted(score_dir.glob("data_*.csv")):
        with open(path, newline="") as f:
            rows = [r for r in csv.DictReader(f) if r.get("Model") == display]
        out["csv"][path.stem] = rows[0] if rows else None
    for path in (score_dir / model.replace("/", "_")).rglob("BFCL_v4_*_score.json"):
        with open(path) as f:
            header, *failed = [json.loads(line) for line in f.readlines() if line.strip()]
        out["scores"][path.name.removeprefix("BFCL_v4_").removesuffix("_score.json")] = {
            k: header.get(k) for k in ("accuracy", "correct_count", "total_count")}
        for row in failed:
            error = row.get("error") if isinstance(row.get("error"), dict) else {}
            out["verdicts"][row["id"]] = row.get("error_type") or error.get("error_type", "?")  # multi-turn: in "error"
    for path in result_dir.rglob("BFCL_v4_*_result.json"):
        with open(path) as f:  # as BFCL's load_file reads it: lines end at \n, \r or \r\n only
            lines = f.readlines()
        for line in lines:
            if line.strip():
                out["verdicts"].setdefault(json.loads(line)["id"], "")
    return out


def main() -> None:
    result_dir, score_dir, model = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve(), sys.argv[3]
    categories = sys.argv[4:] or ["all"]
    os.environ.setdefault("BFCL_PROJECT_ROOT", tempfile.mkdtemp(prefix="bfcl-project-"))
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "NVIDIA_API_KEY", "MISTRAL_API_KEY"):
        os.environ.setdefault(key, "placeholder")  # some handlers' constructors insist; evaluation calls no API
    sys.meta_path.append(_StandInFinder())
    with contextlib.redirect_stdout(sys.stderr):  # BFCL prints its progress
        from bfcl_eval.eval_checker.eval_runner import main as evaluation_main

        # `bfcl evaluate`'s body (bfcl_eval/__main__.py): load_dotenv (nothing to load), then the runner
        evaluation_main([model], categories, str(result_dir), str(score_dir), True)
    json.dump(_read_scores(score_dir, result_dir, model), sys.stdout)


if __name__ == "__main__":
    main()
