"""Runs BFCL's own checkers (bfcl_eval, installed in .ci/bfcl-venv) over crafted model outputs.

Run by that venv's python (never imported by the project's tests):  python bfcl_official_driver.py CASES.json
CASES.json: {"cases": [{"id", "category", "functions", "possible_answer", "response"}]}, where
``response`` is what a function-calling model returned: a list of [name, arguments as JSON text]
(its tool calls), or a string (a reply without calls). Prints {"verdicts": {id: {"valid",
"error_type"}}, "accuracy": {category: right / entries}} on stdout.

What runs is BFCL's code: ``ast_checker`` for the AST categories, ``is_function_calling_format_output``
and ``is_empty_output`` as the eval runner uses them. Two small stand-ins, both here: the decoding of an
FC response, as BFCL's OpenAI-style FC handlers do it (``{name: json.loads(arguments)}`` per call; a
text reply is not a call list and fails to decode), and ``bfcl_eval.constants.model_config``, whose
import pulls every model SDK; the checker only reads one model's ``underscore_to_dot`` from it, which
is True here (the functions are served with ``.`` as ``_``, as for BFCL's OpenAI-style FC models).

Multi-turn cases (``"multi_turn": true``) carry ``entry`` (id, initial_config, involved_classes),
``ground_truth`` (per turn, BFCL's call strings) and ``result``: per turn, the model's responses,
each a list of [name, arguments as JSON text] or a string (a text reply); ``null`` for a failed
episode. What runs is BFCL's ``multi_turn_checker`` (with its backends), after its eval runner's
steps for one entry (``_evaluate_single_multi_turn_entry``, whose module needs packages the venv
lacks; its dozen lines are followed here): a result that is not a list is an inference error,
fewer turns than the ground truth "force-terminated", each response decoded by BFCL's own
``convert_to_function_call`` (undecodable or empty ones dropped). ``model_handler.utils`` imports
BFCL's Java and JavaScript parsers, which need tree_sitter; when it is missing they are stood in
for by empty modules (multi-turn decoding never calls them). Each case runs under a model name of
its own: BFCL caches backend instances in globals by model name and entry id.
"""

from __future__ import annotations

import json
import sys
import types
from dataclasses import dataclass
from typing import Any

MODEL = "mcp-served-FC"


@dataclass
class _ModelConfig:
    underscore_to_dot: bool


_stub = types.ModuleType("bfcl_eval.constants.model_config")
_stub.MODEL_CONFIG_MAPPING = {MODEL.replace("_", "/"): _ModelConfig(True)}  # type: ignore[attr-defined]
sys.modules["bfcl_eval.constants.model_config"] = _stub

try:
    import tree_sitter  # noqa: F401
except ImportError:
    for _parser in ("java_parser", "js_parser"):
        _mod = types.ModuleType(f"bfcl_eval.model_handler.parser.{_parser}")
        _mod.parse_java_function_call = _mod.parse_javascript_function_call = None  # type: ignore[attr-defined]
        sys.modules[_mod.__name__] = _mod

from bfcl_eval.constants.enums import Language  # noqa: E402
from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker  # noqa: E402
from bfcl_eval.utils import is_empty_output, is_function_calling_format_output  # noqa: E402

_MT: dict[str, Any] = {}


def _multi_turn_code() -> dict[str, Any]:
    """BFCL's multi-turn checker and decoding, imported on first use (its backends need mpmath)."""
    if not _MT:
        from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
        from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import is_empty_execute_response
        from bfcl_eval.model_handler.utils import convert_to_function_call

        _MT.update(checker=multi_turn_checker, empty=is_empty_execute_response, decode=convert_to_function_call)
    return _MT


def multi_turn_verdict(case: dict[str, Any], model_name: str) -> dict[str, Any]:
    code = _multi_turn_code()
    result, truth = case["result"], case["ground_truth"]
    if not isinstance(result, list):
        return {"valid": False, "error_type": "multi_turn:inference_error"}
    if len(result) != len(truth):
        return {"valid": False, "error_type": "multi_turn:force_terminated"}
    decoded = []
    for turn in result:
        steps = []
        for step in turn:
            try:
                calls = code["decode"](_text_safe(step))
            except Exception:  # noqa: BLE001, S112 - the runner drops any response it cannot decode
                continue
            if not code["empty"](calls):
                steps.append(calls)
        decoded.append(steps)
    out = code["checker"](decoded, truth, dict(case["entry"]), case["category"], model_name)
    verdict = {"valid": bool(out["valid"]), "error_type": "" if out["valid"] else out.get("error_type", "")}
    details = out.get("details") or {}
    if "differences" in details:
        verdict["attributes"] = sorted(details["differences"])
    if "missing_items" in details:
        verdict["missing"] = len(details["missing_items"])
    return verdict


def _decode(response: Any) -> list[dict[str, Any]]:
    out = []
    for call in response:  # a text reply: its characters have no keys, as in BFCL's FC handlers
        name = list(call.keys())[0]
        out.append({name: json.loads(call[name])})
    return out


def _text_safe(response: Any) -> Any:
    return [{c[0]: c[1]} for c in response] if isinstance(response, list) else response


def verdict(case: dict[str, Any]) -> dict[str, Any]:
    category = case["category"]
    try:
        decoded = _decode(_text_safe(case["response"]))
    except Exception:  # noqa: BLE001 - BFCL counts any decoding failure the same way
        decoded = None
    if category == "irrelevance":
        made = decoded is not None and not is_empty_output(decoded)
        return {"valid": not made, "error_type": "irrelevance_error:decoder_success" if made else ""}
    if decoded is None:
        return {"valid": False, "error_type": "ast_decoder:decoder_failed"}
    if not is_function_calling_format_output(decoded):
        return {"valid": False, "error_type": "ast_decoder:decoder_wrong_output_format"}
    result = ast_checker(case["functions"], decoded, case["possible_answer"], Language.PYTHON, category, MODEL)
    return {"valid": bool(result["valid"]), "error_type": "" if result["valid"] else result.get("error_type", "")}


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    verdicts = {c["id"]: multi_turn_verdict(c, f"fidelity_{i}") if c.get("multi_turn") else verdict(c)
                for i, c in enumerate(cases)}
    totals: dict[str, list[int]] = {}
    for c in cases:
        t = totals.setdefault(c["category"], [0, 0])
        t[0] += int(verdicts[c["id"]]["valid"])
        t[1] += 1
    json.dump({"verdicts": verdicts, "accuracy": {k: r / n for k, (r, n) in totals.items()}}, sys.stdout)


if __name__ == "__main__":
    main()
