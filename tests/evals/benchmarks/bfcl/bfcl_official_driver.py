"""Runs BFCL's own checkers (bfcl_eval, installed in .ci/bfcl-venv) over crafted model outputs.

Run by that venv's python (never imported by the project's tests):  python bfcl_official_driver.py CASES.json
CASES.json: {"cases": [{"id", "category", "functions", "possible_answer", "response"}]} (a memory
category's case has ``steps`` instead of functions and response: see ``agentic_verdict``), where
``response`` is what a function-calling model returned: a list of [name, arguments as JSON text]
(its tool calls), or a string (a reply without calls); or, instead of ``response``, ``result``: the
``result`` field of a line of BFCL's own result file, decoded as it is. Prints {"verdicts": {id: {"valid",
"error_type"}}, "accuracy": {category: right / entries}} on stdout. With {"tools": [{"id",
"category", "functions"}]} instead, prints {"tools": {id: [tool]}}: each entry's functions as BFCL's
OpenAI-style FC handler sends them (``_func_doc_language_specific_pre_processing``, then
``convert_to_tool``).

What runs is BFCL's code: ``ast_checker`` for the AST categories (in the category's language, as
``ast_file_runner`` picks it), the relevance rule of ``_evaluate_single_relevance_entry``
(``is_empty_output``) for ``irrelevance``, ``live_irrelevance`` and ``live_relevance``, and
``is_function_calling_format_output`` as the eval runner uses it. Two small stand-ins, both here: the decoding of an
FC response, as BFCL's OpenAI-style FC handlers do it (``{name: json.loads(arguments)}`` per call; a
text reply is not a call list and fails to decode), and ``bfcl_eval.constants.model_config``, whose
import pulls every model SDK; the checker only reads one model's ``underscore_to_dot`` from it, which
is True here (the functions are served with ``.`` as ``_``, as for BFCL's OpenAI-style FC models).
For the tools and the multi-turn decoding, the handlers' module imports the prompting models' parsers
(tree-sitter) and tenacity, used by neither ``convert_to_tool`` nor ``convert_to_function_call``:
stand-ins for their names (the real ones when installed). Whatever BFCL's checker prints (its
JavaScript dict reader prints its errors) goes to stderr, so stdout stays the JSON.

Multi-turn cases (``"multi_turn": true``) carry ``entry`` (id, initial_config, involved_classes),
``ground_truth`` (per turn, BFCL's call strings) and ``result``: per turn, the model's responses,
each a list of [name, arguments as JSON text] or a string (a text reply); ``null`` for a failed
episode. What runs is BFCL's ``multi_turn_checker`` (with its backends), after its eval runner's
steps for one entry (``_evaluate_single_multi_turn_entry``, whose module needs packages the venv
lacks; its dozen lines are followed here): a result that is not a list is an inference error,
fewer turns than the ground truth "force-terminated", each response decoded by BFCL's own
``convert_to_function_call`` (undecodable or empty ones dropped). Each case runs under a model name of
its own: BFCL caches backend instances in globals by model name and entry id.

With ``"raw": true`` a multi-turn or memory case's ``result`` is the ``result`` field of a line of
BFCL's own result file, as ``inference_multi_turn_FC`` writes it, read as the eval runner reads it
(``_evaluate_single_multi_turn_entry`` / ``_evaluate_single_agentic_entry``), each step decoded by
BFCL's own ``convert_to_function_call`` (an FC handler's ``decode_execute``).
"""

from __future__ import annotations

import contextlib
import copy
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
for _module, _names in (("bfcl_eval.model_handler.parser.java_parser", ("parse_java_function_call",)),
                        ("bfcl_eval.model_handler.parser.js_parser", ("parse_javascript_function_call",)),
                        ("tenacity", ("retry", "retry_if_exception_message", "retry_if_exception_type",
                                      "wait_random_exponential"))):
    _standin = types.ModuleType(_module)
    for _name in _names:
        setattr(_standin, _name, None)
    sys.modules.setdefault(_module, _standin)

from bfcl_eval.constants.enums import Language, ModelStyle  # noqa: E402
from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI  # noqa: E402
from bfcl_eval.eval_checker.agentic_eval.agentic_checker import agentic_checker  # noqa: E402
from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker  # noqa: E402
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import is_empty_execute_response  # noqa: E402
from bfcl_eval.model_handler.utils import convert_to_tool  # noqa: E402
from bfcl_eval.utils import (  # noqa: E402
    _func_doc_language_specific_pre_processing,
    is_agentic,
    is_empty_output,
    is_function_calling_format_output,
    is_java,
    is_js,
)

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
                calls = code["decode"](step if case.get("raw") else _text_safe(step))
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


def agentic_verdict(case: dict[str, Any]) -> dict[str, Any]:
    """BFCL's eval runner on an agentic entry (``_evaluate_single_agentic_entry``): ``steps`` is the
    turn's model responses (calls or a text) or, for an inference error, the error's text. Only the
    last step that does not decode into calls is checked, by BFCL's ``agentic_checker``."""
    if case.get("raw"):  # the eval runner: a list of one turn, its steps decoded by the FC decode_execute
        from bfcl_eval.model_handler.utils import convert_to_function_call

        if not isinstance(case["result"], list) or len(case["result"]) != 1:
            return {"valid": False, "error_type": "agentic:inference_error"}
        steps, decode = case["result"][0], convert_to_function_call
    else:
        steps, decode = case["steps"], lambda step: _decode(_text_safe(step))
    if not isinstance(steps, list) and not case.get("raw"):
        return {"valid": False, "error_type": "agentic:inference_error"}
    last = None
    for step in steps:
        try:
            decoded = decode(step)
            if is_empty_execute_response(decoded):
                last = step
                continue
        except Exception:  # noqa: BLE001 - as BFCL: a step that does not decode is a message
            last = step
            continue
    if not last:
        return {"valid": False, "error_type": "agentic:no_last_message"}
    result = agentic_checker(last, case["possible_answer"])
    return {"valid": bool(result["valid"]), "error_type": "" if result["valid"] else result.get("error_type", "")}


def verdict(case: dict[str, Any]) -> dict[str, Any]:
    category = case["category"]
    if is_agentic(category):  # memory and web search: BFCL's eval runner sends both to its agentic_runner
        return agentic_verdict(case)
    try:
        decoded = _decode(case["result"] if "result" in case else _text_safe(case["response"]))
    except Exception:  # noqa: BLE001 - BFCL counts any decoding failure the same way
        decoded = None
    if "relevance" in category:  # as _evaluate_single_relevance_entry
        made = decoded is not None and not is_empty_output(decoded)
        if "irrelevance" in category:
            return {"valid": not made, "error_type": "irrelevance_error:decoder_success" if made else ""}
        return {"valid": made, "error_type": "" if made else "relevance_error:decoder_failed"}
    if decoded is None:
        return {"valid": False, "error_type": "ast_decoder:decoder_failed"}
    if not is_function_calling_format_output(decoded):
        return {"valid": False, "error_type": "ast_decoder:decoder_wrong_output_format"}
    language = Language.JAVA if is_java(category) else Language.JAVASCRIPT if is_js(category) else Language.PYTHON
    result = ast_checker(case["functions"], decoded, case["possible_answer"], language, category, MODEL)
    return {"valid": bool(result["valid"]), "error_type": "" if result["valid"] else result.get("error_type", "")}


def tools(entry: dict[str, Any]) -> list[dict[str, Any]]:
    functions = _func_doc_language_specific_pre_processing(copy.deepcopy(entry["functions"]), entry["category"])
    return convert_to_tool(functions, GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS)


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        given = json.load(f)
    out = sys.stdout
    if "tools" in given:
        json.dump({"tools": {e["id"]: tools(e) for e in given["tools"]}}, out)
        return
    cases = given["cases"]
    with contextlib.redirect_stdout(sys.stderr):
        verdicts = {c["id"]: multi_turn_verdict(c, f"fidelity_{i}") if c.get("multi_turn") else verdict(c)
                    for i, c in enumerate(cases)}
    totals: dict[str, list[int]] = {}
    for c in cases:
        t = totals.setdefault(c["category"], [0, 0])
        t[0] += int(verdicts[c["id"]]["valid"])
        t[1] += 1
    json.dump({"verdicts": verdicts, "accuracy": {k: r / n for k, (r, n) in totals.items()}}, out)


if __name__ == "__main__":
    main()
