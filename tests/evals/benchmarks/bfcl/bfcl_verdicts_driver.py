"""BFCL's own evaluator (``bfcl evaluate``: ``eval_runner.main``) over a result folder, in .ci/bfcl-venv.

Run by that venv's python (never imported by the project's tests):

    python bfcl_verdicts_driver.py RESULT_DIR SCORE_DIR MODEL CATEGORY...

``RESULT_DIR`` holds ``<MODEL with / as _>/<group>/BFCL_v4_<category>_result.json``; what runs is BFCL's
``eval_runner.main([MODEL], CATEGORIES, RESULT_DIR, SCORE_DIR, partial_eval=True)``, unchanged: its model
registry (``MODEL_CONFIG_MAPPING``) picks the model's handler, whose ``decode_ast`` decodes each result,
then its eval runner and checkers. Printed on stdout: ``{"verdicts": {id: error_type or ""}, "accuracy":
{category: accuracy}}``, read back from the score files it wrote (each lists the entries that failed).

The venv has BFCL's package, not the vendors' SDKs its handler modules import at their top (openai,
anthropic, boto3, google-genai, mistralai, ...), nor tqdm or python-dotenv: a module that is not
installed, asked for by one of BFCL's modules, is given a stand-in (any name it is asked for: a class taking any arguments when capitalised,
else a function giving back its first argument: a decorator's function, tqdm's items). No decoder of the handlers used touches them: the decoding is BFCL's
own code. BFCL's ``eval_config`` makes folders under ``BFCL_PROJECT_ROOT``: a temporary one.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import tempfile
import types
from pathlib import Path
from typing import Any


class _Any:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return args[0] if args else _Any()  # a decorator: the function; tqdm(items, ...): the items

    def __getattr__(self, name: str) -> Any:
        return _Any()

    def __iter__(self) -> Any:
        return iter(())


class _StandIn(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value: Any = type(name, (_Any,), {}) if name[:1].isupper() else _Any()
        setattr(self, name, value)
        return value


def _asked_by_bfcl() -> bool:
    """Whether the import being resolved is one of BFCL's modules' (not an optional import elsewhere)."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").startswith(("importlib", "_frozen_importlib")):
        frame = frame.f_back  # type: ignore[assignment]
    return frame is not None and str(frame.f_globals.get("__name__", "")).startswith("bfcl_eval")


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        root = fullname.split(".")[0]
        if root == "bfcl_eval" or root in sys.stdlib_module_names or not _asked_by_bfcl():
            return None
        for finder in sys.meta_path:
            if finder is self:
                continue
            with contextlib.suppress(Exception):
                if finder.find_spec(fullname, path, target) is not None:
                    return None  # installed: the real one
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _StandIn(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


def main() -> None:
    result_dir, score_dir, model, *categories = sys.argv[1:]
    os.environ["BFCL_PROJECT_ROOT"] = tempfile.mkdtemp(prefix="bfcl-project-")
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "NVIDIA_API_KEY", "MISTRAL_API_KEY"):
        os.environ.setdefault(key, "placeholder")  # some handlers' constructors insist; evaluation calls no API
    sys.meta_path.append(_Finder())
    with contextlib.redirect_stdout(sys.stderr):
        from bfcl_eval.eval_checker.eval_runner import main as evaluate

        evaluate([model], categories, Path(result_dir), Path(score_dir), partial_eval=True)
    verdicts: dict[str, str] = {}
    accuracy: dict[str, float] = {}
    for lines in (Path(score_dir) / model.replace("/", "_")).rglob("BFCL_v4_*_score.json"):
        category = lines.name.removeprefix("BFCL_v4_").removesuffix("_score.json")
        rows = [json.loads(line) for line in lines.read_text().splitlines() if line.strip()]
        accuracy[category] = rows[0]["accuracy"]
        for row in rows[1:]:
            verdicts[row["id"]] = row.get("error_type", "?")
    for lines in Path(result_dir).rglob("BFCL_v4_*_result.json"):
        for line in lines.read_text().splitlines():
            if line.strip():
                verdicts.setdefault(json.loads(line)["id"], "")
    json.dump({"verdicts": verdicts, "accuracy": accuracy}, sys.stdout)


if __name__ == "__main__":
    main()
