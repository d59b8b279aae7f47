"""Runs BFCL's own leaderboard aggregation (bfcl_eval's ``generate_leaderboard_csv``, in .ci/bfcl-venv) over
given per-category accuracies.

Run by that venv's python (never imported by the project's tests):  python bfcl_scores_driver.py TABLE.json OUT_DIR
TABLE.json: {model: {category: {"accuracy": fraction, "total_count": entries}}}; model names without ``_``.
Prints {model: {CSV file: {column: cell}}} on stdout, the cells as BFCL writes them (e.g. "87.25%").

What runs is BFCL's code. Three stand-ins, all here: ``bfcl_eval.constants.model_config`` (its import pulls
every model SDK; the aggregation reads a model's display name, URL, organisation, licence and prices from
it), and ``numpy`` and ``pandas``, which the module imports at its top and uses only for latency
percentiles and a Weights & Biases upload, neither of which runs without latency data or its variable.
"""

from __future__ import annotations

import contextlib
import csv
import json
import sys
import types
from dataclasses import dataclass
from pathlib import Path


@dataclass
class _ModelConfig:
    display_name: str
    url: str = "u"
    org: str = "o"
    license: str = "l"
    input_price: float | None = None
    output_price: float | None = None


def main() -> None:
    table = json.loads(Path(sys.argv[1]).read_text())
    out = Path(sys.argv[2])
    stub = types.ModuleType("bfcl_eval.constants.model_config")
    stub.MODEL_CONFIG_MAPPING = {m: _ModelConfig(m) for m in table}  # type: ignore[attr-defined]
    sys.modules["bfcl_eval.constants.model_config"] = stub
    sys.modules.setdefault("numpy", types.ModuleType("numpy"))
    sys.modules.setdefault("pandas", types.ModuleType("pandas"))
    from bfcl_eval.eval_checker.eval_runner_helper import generate_leaderboard_csv

    with contextlib.redirect_stdout(sys.stderr):  # it prints progress
        generate_leaderboard_csv(table, out)
    result: dict[str, dict[str, dict[str, str]]] = {m: {} for m in table}
    for name in ("data_overall", "data_non_live", "data_live", "data_multi_turn", "data_agentic"):
        with open(out / f"{name}.csv", newline="") as f:
            for row in csv.DictReader(f):
                result[row["Model"]][name] = dict(row)
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
