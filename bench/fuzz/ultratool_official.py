"""Run by the fuzzer with UltraTool's own venv: the official `evaluation/` functions on one file, as the
scripts' `__main__` blocks call them (the scripts' `--models` is `type=list`, so they cannot be run as
written for a given model). Prints one JSON object: each number as the script prints it.

    python ultratool_official.py EVALUATION_DIR TASK LANGUAGE LAYOUT FILE
"""

import json
import sys

official, task, language, layout, path = sys.argv[1:6]
sys.path.insert(0, official)
from planning import cal_plan_res_ch, cal_plan_res_en  # noqa: E402  (the official code)
from utils import (  # noqa: E402
    cal_acc_for_aware,
    cal_param_res,
    collect_pred_golden_for_aware,
    collect_pred_golden_for_param,
    read_data,
)

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
    out = dict(zip(names, map(str, res)))
print(json.dumps(out))
