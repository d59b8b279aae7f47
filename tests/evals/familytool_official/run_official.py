"""Run the OFFICIAL FamilyTool metric code on a prediction folder in the ``familytool-official``
format (see ``evals/benchmarks/familytool/export.py``) and print its numbers as JSON.

Not a test and not run in CI: it needs a checkout of the official code (see README.md here). It
contains none of that code; it imports it unchanged, stubbing only the imports that the metric
functions never use (model loading, embeddings, Feishu reporting), and calls:

* KG extraction: ``metric_KG_extraction(intermediate, golden, "exact", KG)`` from
  ``pipeline/KG_extraction_post_process_make_intermediate_json.py``;
* tool use: ``evaluate_model_for_single_round_tool_call`` from
  ``resources/UnifiedToolHub/benchmark/evaluate_model.py`` with a replaying "model" whose outputs
  are the prediction folder's ``result.tool_call`` lists, ``is_strict`` True and False.

Usage: python run_official.py OFFICIAL_SRC PRED_DIR DATA_DIR
"""

from __future__ import annotations

import contextlib
import json
import sys
import types
from pathlib import Path
from typing import Any


class _Anything:
    """Stands in for a module attribute the metric code imports but never calls."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self


def _stub(name: str, **attrs: Any) -> None:
    mod = types.ModuleType(name)
    mod.__getattr__ = lambda attr: attrs.get(attr, _Anything)  # type: ignore[method-assign]
    sys.modules[name] = mod


def main(src: Path, pred_dir: Path, data_dir: Path) -> dict[str, Any]:
    manifest = json.loads((pred_dir / "manifest.json").read_text())
    short = manifest["benchmark"].removeprefix("familytool-")
    kg_path = data_dir / "familytool" / f"familykg-{short}.txt"
    by_id = {}
    for line in (data_dir / "familytool" / f"familytool-{short}.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            by_id[str(row[0]["content"])] = row
    tool_rows = json.loads((pred_dir / "tool_use_results.json").read_text())
    ids = [str(r["data_id"]) for r in tool_rows]
    golden = [json.loads(json.dumps(by_id[i])) for i in ids]  # the golden.jsonl the export writes

    for name in ("faiss", "torch", "transformers", "sentence_transformers", "openai", "ipdb", "models"):
        _stub(name)
    out: dict[str, Any] = {"benchmark": manifest["benchmark"], "tasks": len(ids)}

    # ---- tool use: the official evaluation loop, with a model that replays the predictions ----
    outputs = [json.dumps(r["result"]["tool_call"]) for r in tool_rows]

    class _Out:
        def __init__(self, text: str) -> None:
            self.outputs = [types.SimpleNamespace(text=text)]

    class ReplayLLM:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

        def get_tokenizer(self) -> None:
            return None

        def generate(self, prompts: list[Any], sampling_params: Any = None) -> list[_Out]:
            assert len(prompts) == len(outputs)
            return [_Out(t) for t in outputs]

    class ReplayFormatter:
        SAMPLING_PARAMS: dict[str, Any] = {}

        def __init__(self, tokenizer: Any) -> None:
            pass

        def get_prompt(self, chat_history: Any, candidate_tools: Any) -> str:
            return ""

        def get_tool_call(self, text: str) -> dict[str, Any]:
            return {"think": "", "content": "", "tool_call": json.loads(text)}

    _stub("vllm", LLM=ReplayLLM, SamplingParams=lambda **kw: kw)
    sys.path.insert(0, str(src / "resources" / "UnifiedToolHub"))
    from benchmark.evaluate_model import evaluate_model_for_single_round_tool_call  # type: ignore[import-not-found]

    for label, strict in (("tool_strict", True), ("tool_nonstrict", False)):
        res = evaluate_model_for_single_round_tool_call(
            {"path": "replay", "formatter": ReplayFormatter}, {"preds": golden},
            ["ExactMatch", "ToolAccuracy", "ParameterAccuracy"], {}, is_strict=strict)
        out[label] = res["preds"]

    # ---- KG extraction ----
    kg_file = pred_dir / "kg_extraction.json"
    if kg_file.is_file():
        sys.path.insert(0, str(src / "pipeline"))
        from KG_extraction_post_process_make_intermediate_json import (  # type: ignore[import-not-found]
            metric_KG_extraction,
        )

        intermediate = json.loads(kg_file.read_text())
        (total, counts, ratios), extracted, _ = metric_KG_extraction(intermediate, golden, "exact", str(kg_path))
        keys = ("em", "f1", "no_hallucination", "coverage", "formaterror")
        out["kg"] = {"total": total, "counts": dict(zip(keys, (float(c) for c in counts), strict=True)),
                     "ratios": dict(zip(keys, (float(r) for r in ratios), strict=True)),
                     "extracted": list(extracted)}
    return out


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    with contextlib.redirect_stdout(sys.stderr):  # the official code prints progress
        result = main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
    print(json.dumps(result, indent=1, sort_keys=True))
