"""Run by the fuzzer with UltraTool's own venv: the official `evaluation/` functions on one file, as the
scripts' `__main__` blocks call them (the scripts' `--models` is `type=list`, so they cannot be run as
written for a given model). Serves one request per stdin line, `[TASK, LANGUAGE, LAYOUT, FILE]`, with one
JSON line: `{"numbers": {name: the printed text}}`, or `{"error": "Type: message"}` where the official code
raises (the script would stop there). numpy, scikit-learn and textdistance are imported once.

    python ultratool_official.py EVALUATION_DIR
"""

import contextlib
import io
import json
import sys
import traceback

official = sys.argv[1]
sys.path.insert(0, official)
from planning import cal_plan_res_ch, cal_plan_res_en  # type: ignore[import-not-found]  # noqa: E402  (the official code)
from utils import (  # type: ignore[import-not-found]  # noqa: E402
    cal_acc_for_aware,
    cal_param_res,
    collect_pred_golden_for_aware,
    collect_pred_golden_for_param,
    read_data,
)


def numbers(task: str, language: str, layout: str, path: str) -> dict[str, str]:
    if task == "tool_usage":
        preds, goldens = collect_pred_golden_for_param(path, model_type=layout)
        out = {"local_levenshtein": str(cal_param_res(preds, goldens))}
    elif task == "tool_usage_awareness":
        preds, goldens = collect_pred_golden_for_aware(path, model_type=layout)
        glob, loc = cal_acc_for_aware(preds, goldens)
        out = {"global_accuracy": str(glob), "local_accuracy": str(loc)}
    else:
        names = ("accuracy_score", "completeness_score", "executability_score", "syntactic_soundness_score",
                 "structural_rationality_score", "efficiency_score", "overall_score")
        res = (cal_plan_res_ch if language == "zh" else cal_plan_res_en)(read_data(path))
        out = dict(zip(names, map(str, res), strict=True))
    return out


for request in sys.stdin:
    task, language, layout, path = json.loads(request)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            answer: dict[str, object] = {"numbers": numbers(task, language, layout, path)}
    except Exception as exc:  # noqa: BLE001 - the official script stops here
        answer = {"error": f"{type(exc).__name__}: {exc}"[:300], "where": traceback.format_exc(limit=-1)[-300:]}
    try:
        print(json.dumps(answer), flush=True)
    except BrokenPipeError:  # the fuzzer stopped
        break
