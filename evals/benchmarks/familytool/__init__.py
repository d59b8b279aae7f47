"""FamilyTool (-b base, -e extended): one call whose parameters need 1 to 6 hops over a family KG.

The benchmark's folder: ``data`` (tasks, gold, candidate tools), ``kg`` (its KG in Kuzu),
``plugin`` (strategies: the paper's KGETool pipeline and ablations, an agent over the live KG, the
inductive setting), ``official`` (the metrics as the official code computes them), ``metrics`` (the
summary's metric blocks, and the project's stricter reading), ``export`` (the official scripts'
input files, both ways) and
``paper_numbers.yaml`` (Tables 3-10). This module only declares it (cheap to import).
"""

from __future__ import annotations

import contextlib
import datetime
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...core.data import RemoteFile
from ...core.options import Option
from ...core.plugin import BenchmarkInfo, PaperNumbers
from .metrics import METRICS

STRATEGIES = ("agent", "kgetool", "golden-kg", "full-kg")

def _is_date(value: str) -> bool:
    try:
        return bool(re.fullmatch(r"\d{4}-\d{2}-\d{2}", value)) and bool(datetime.date.fromisoformat(value))
    except ValueError:
        return False


OPTIONS: tuple[Option, ...] = (
    Option("kg_search", str, "greedy", "path extraction when a relation does not exist in the KG: exact (no "
           "fallback), greedy (the paper's greedy search) or retrieval (the --top-k most similar relations)",
           choices=("exact", "greedy", "retrieval"), serve=True),
    Option("top_k", int, 3, "relations tried per made-up one (--kg-search retrieval)", serve=True,
           check=lambda v: None if v >= 1 else "must be at least 1"),
    Option("kg_model", str, None, "kgetool: another model for step 1 (KG path generation), as in the paper's "
           "cross-LLM table; 'oracle' writes the gold paths", model=True, metavar="MODEL"),
    Option("tool_step", str, "official", "kgetool, golden-kg, full-kg: the tool-use step's input. official: as "
           "FamilyTool's code sends it to an API model: the system message 'You are a helpful assistant.' with "
           "--current-date, and the query as in the data with its '(...)' replaced by the extra information (kgetool: "
           "the official post-processing of the step-1 text, first link per entity and relation, greedy fallback, "
           "<bad_extract> marks; golden-kg: the gold sub-KG as written; full-kg: the whole KG), and the candidate tools "
           "as its API requester rewrites them (type and description per parameter); project: the project's "
           "instruction (use the KG's entity ids), [h, r, t] triples (kgetool: every link the server's "
           "kg_search_path found with --kg-search) and the served tool schemas", choices=("official", "project")),
    Option("current_date", str, "2025-05-26", "tool_step official: the date of the system message's 'Current "
           "Date:' line (the official code puts the day it runs; the default is the date of the pinned commit)",
           check=lambda v: None if _is_date(v) else "must be a date written YYYY-MM-DD",
           metavar="YYYY-MM-DD"),
    Option("inductive", bool, False, "FamilyTool-e over FamilyTool-b's KG, extended with -e's facts over MCP at "
           "run time (the paper's inductive setting)"),
    Option("scoring", str, "official", "official: the metrics exactly as the official FamilyTool code computes them "
           "(strict, plus its non-strict mode); project: also the project's stricter reading (typed values, extra "
           "parameters penalised, every link extracted, the response matcher and --judge) in project_metrics and "
           "project_strict_metrics", choices=("official", "project"), scoring=True),
    Option("allow_writes", bool, False, "serve kg_add_fact / kg_remove_fact, on a private copy of the KG",
           serve=True, run=False, affects_results=False),
)

_FT = "https://raw.githubusercontent.com/yxzwang/FamilyTool/c3c5fc7e2496df3db4ffa045f0dbf34114c27802"
FILES: tuple[RemoteFile, ...] = (
    RemoteFile("familytool/familytool-b.jsonl", f"{_FT}/datasets/familytool-b.jsonl",
               "fe036758285e7f5dfab272a05bb34970fea33a435808b94941e300a2fab969e8", 3872306),
    RemoteFile("familytool/familytool-e.jsonl", f"{_FT}/datasets/familytool-e.jsonl",
               "ad81a53f62a0163c57f0a3669d1f4670a5ee17f5b93408f2987e99602dcc8dbb", 3533815),
    RemoteFile("familytool/familykg-b.txt", f"{_FT}/KG/familykg-b.txt",
               "546daa7fe96f3b45bcdb79fc98edcc335fcd12c19b13c954cf3a2cd270f41e9e", 7088),
    RemoteFile("familytool/familykg-e.txt", f"{_FT}/KG/familykg-e.txt",
               "732ec34b012bc0a2ec73e50514492aa4a0556e40baafd91a8520896958897e3b", 24568),
)


def _needed(name: str) -> Any:
    def needed(options: Mapping[str, Any], data_dir: Path) -> list[tuple[str, RemoteFile]]:
        """The dataset and its KG (and -b's KG for the inductive setting) that ``data_dir`` lacks."""
        short = {name.removeprefix("familytool-")} | ({"b"} if options.get("inductive") else set())
        wanted = {f"familytool/familytool-{name.removeprefix('familytool-')}.jsonl"} | {f"familytool/familykg-{s}.txt" for s in short}
        return [("familytool", f) for f in FILES if f.dest in wanted and not (data_dir / f.dest).is_file()]

    return needed


def _stats(name: str) -> Any:
    def stats() -> dict[str, Any]:
        """Dataset and KG statistics (the KG numbers come from the KG store)."""
        from .data import FamilyToolCatalog
        from .kg import open_family_kg

        out = dict(FamilyToolCatalog(name).stats())
        with contextlib.ExitStack() as stack:
            kg = open_family_kg(name, writable=False, stack=stack).stats()
        out.update(kg_triples=kg.triples, kg_entities=kg.entities, kg_relation_types=kg.relation_types,
                   kg_out_degree={str(k): v for k, v in sorted(kg.out_degree.items())})
        return out

    return stats


def _paper_setting(summary: Mapping[str, Any]) -> dict[str, Any]:
    """A run's setting in the paper's terms (see ``paper_numbers.yaml``)."""
    options = summary.get("options") or {}
    strategy = summary.get("strategy")
    setting: dict[str, Any] = {"dataset": summary.get("benchmark"), "strategy": strategy}
    if strategy in ("kgetool", "agent"):
        setting["path_extraction"] = options.get("kg_search", "greedy")
    if strategy == "kgetool":  # our own step-2 input is not the paper's setting
        setting["tool_step"] = options.get("tool_step", "official")
    if options.get("kg_model"):
        setting["kg_model"] = options["kg_model"]
    return setting


# Tables 3-10: a run that does not state them ran with Greedy Search and the placeholder KG values;
# "gs"/"rr" are the paper's abbreviations of its two path-extraction methods.
PAPER_NUMBERS = PaperNumbers(
    _paper_setting, "tool_em",
    model_keys=("kg_model",),
    defaults={"path_extraction": "greedy", "kg_values": "placeholders", "tool_step": "official"},
    synonyms={"gs": "greedy", "rr": "retrieval"},
)


def _info(name: str) -> BenchmarkInfo:
    kind = "base" if name.endswith("-b") else "extended"
    return BenchmarkInfo(
        name=name, plugin=".plugin:FamilyToolBenchmark", scorer_version=2,  # CHANGELOG.md
        description=f"FamilyTool ({kind}): one call needing 1-6 hops over a family KG",
        strategies=STRATEGIES, options=OPTIONS, metrics=METRICS, uses_judge=True,
        data_sources={"familytool": FILES},
        needed_files=_needed(name),
        paper_numbers=PAPER_NUMBERS,
        stats=_stats(name),
        # the rule-matcher-only block was called strict_metrics before issue 15 (the default scoring then
        # was today's --scoring project; tests/evals/regression/README.md shows the numbers are the same)
        block_aliases={"strict_metrics": "project_strict_metrics"},
    )


INFOS = {name: _info(name) for name in ("familytool-b", "familytool-e")}
BENCHMARKS = tuple(INFOS.values())
