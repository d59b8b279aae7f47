"""The papers' published numbers: loading each benchmark's ``paper_numbers.yaml`` and matching runs.

Which files exist, and how a run's settings read in a paper's terms, come from the registry: each
benchmark's :class:`~evals.core.plugin.PaperNumbers` (its file, ``setting(summary)``, ``defaults``,
``synonyms``, ``model_keys``). Nothing here knows a benchmark.

A paper row is of a run's *setting* (:func:`in_run_setting`; :func:`same_setting` when the model is
the run's too) when its ``dataset`` is the run's, it states a ``strategy`` equal to the run's, and
none of the other setting keys the run states (or takes by default) disagrees. A model key (e.g. a
first step's model) is matched by alias: a run whose value is another model than its own takes the
rows that state that model, and the plain rows of that model itself. The run's model name
(:func:`normalize_model`, the files' ``model_aliases``) only decides where a run is lined up, never
whether the published block is shown.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.derived_cache import cached_derivation
from ..core.plugin import PaperNumbers
from .metrics import paper_numbers_of

__all__ = [
    "DATASET",
    "STRATEGY",
    "PaperRow",
    "block_setting",
    "describe_setting",
    "first_table",
    "in_run_setting",
    "load_paper_numbers",
    "model_keys_of",
    "normalize_model",
    "other_models",
    "paper_files",
    "paper_rows_for",
    "published_rows_for",
    "run_setting",
    "same_setting",
    "setting_key",
]

PROVIDER_PREFIXES = frozenset({"openai", "anthropic", "vllm", "oracle"})
DATASET, STRATEGY = "dataset", "strategy"  # the setting keys the report itself reads


def normalize_model(name: Any) -> str:
    """``"openai:gpt-4o"`` -> ``"gpt-4o"``, ``"vllm:Qwen/Qwen2.5-7B-Instruct"`` -> ``"qwen2.5-7b-instruct"``.

    Drops a provider prefix, then any organisation or directory part, and lowercases.
    """
    s = str(name).strip()
    head, sep, rest = s.partition(":")
    if sep and head.strip().lower() in _providers():
        s = rest.strip()
    s = s.rstrip("/").rsplit("/", 1)[-1]
    return s.lower()


def _providers() -> frozenset[str]:
    try:
        from client.adapters import known_prefixes

        return PROVIDER_PREFIXES | frozenset(known_prefixes())
    except Exception:  # pragma: no cover - the report works without the client package
        return PROVIDER_PREFIXES


# ---- loading ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PaperRow:
    """One published result: a model, in a setting, from a numbered table of a paper."""

    paper: str
    citation: str
    table: int | None
    caption: str
    model: str
    setting: dict[str, Any]
    metrics: dict[str, float]
    label: str | None = None  # a short name for a table the source gives no number
    aliases: frozenset[str] = frozenset()
    extra: dict[str, float] = field(default_factory=dict)
    note: str | None = None
    aggregate: bool = False
    model_key_aliases: dict[str, frozenset[str]] = field(default_factory=dict)  # model key -> its model's names
    tables: tuple[int | None, ...] = ()  # after merging: every table the same numbers appear in
    file: str | None = None  # the paper-numbers file the row comes from

    @property
    def source(self) -> str:
        nums = [t for t in (self.tables or (self.table,)) if t is not None]
        if not nums:
            return f"{self.paper} {self.label or 'table'}"
        word = "Table" if len(nums) == 1 else "Tables"
        return f"{self.paper} {word} {', '.join(str(n) for n in nums)}"

    def matches_model(self, model: str) -> bool:
        return not self.aggregate and normalize_model(model) in self.aliases

    def to_dict(self) -> dict[str, Any]:
        return {
            "paper": self.paper, "table": self.table, "tables": list(self.tables or (self.table,)),
            "caption": self.caption, "model": self.model, "setting": self.setting,
            "metrics": self.metrics, "extra": self.extra, "note": self.note,
        }


def paper_files() -> dict[Path, tuple[str, ...]]:
    """Every registered benchmark's paper-numbers file, with the model keys its rows may state."""
    from ..core.registry import all_benchmarks

    out: dict[Path, tuple[str, ...]] = {}
    for info in all_benchmarks().values():
        pn = info.paper_numbers
        if pn is not None and pn.path is not None:
            path = Path(pn.path).resolve()
            out[path] = tuple(dict.fromkeys(out.get(path, ()) + tuple(pn.model_keys)))
    return out


def load_paper_numbers(source: str | Path | Iterable[str | Path] | None = None) -> list[PaperRow]:
    """Every row of the papers' numbers, flattened (table setting + row setting).

    ``source``: None for every registered benchmark's file; else a file, a directory of ``*.yaml``
    files, or several files.
    """
    known = paper_files()
    if source is None:
        files = list(known)
    elif isinstance(source, str | Path):
        p = Path(source)
        files = sorted(p.glob("*.yaml")) if p.is_dir() else [p]
    else:
        files = [Path(p) for p in source]
    rows: list[PaperRow] = []
    for path in files:
        model_keys = known.get(path.resolve(), ())
        doc = _read_yaml(path) or {}
        shown = _shown_path(path)
        aliases: dict[str, set[str]] = {}
        for name, names in (doc.get("model_aliases") or {}).items():
            aliases.setdefault(str(name).lower(), set()).update(normalize_model(n) for n in names or ())
        for table in doc.get("tables") or ():
            base = dict(table.get("setting") or {})
            for r in table.get("rows") or ():
                model = str(r["model"])
                setting = {**base, **(r.get("setting") or {})}
                for key in model_keys:
                    if key in setting and str(setting[key]).lower() == model.lower():
                        del setting[key]  # the row's own model: the plain setting
                rows.append(PaperRow(
                    paper=str(doc.get("paper") or path.stem),
                    citation=str(doc.get("citation") or ""),
                    table=table.get("table"),
                    caption=str(table.get("caption") or ""),
                    label=table.get("label"),
                    model=model,
                    setting=setting,
                    metrics={k: float(v) for k, v in (r.get("metrics") or {}).items()},
                    aliases=_names(model, aliases),
                    extra={k: float(v) for k, v in (r.get("extra") or {}).items()},
                    note=r.get("note") or table.get("note"),
                    aggregate=bool(r.get("aggregate", False)),
                    model_key_aliases={k: _names(setting[k], aliases) for k in model_keys if k in setting},
                    tables=(table.get("table"),),
                    file=shown,
                ))
    return rows


def _read_yaml(path: Path) -> Any:
    """The file's document, parsed once per version of the file (then read from the user cache). The parser's
    module (and PyYAML, about 35 ms to import) is imported only to parse; its file keys the cache entry."""
    import importlib.util

    spec = importlib.util.find_spec("tool_specs.safe_load")
    if spec is None or spec.origin is None:
        raise ImportError("tool_specs.safe_load is not found")

    def parse() -> Any:
        from tool_specs import safe_load

        return safe_load.load_yaml(path.read_text(encoding="utf-8"), path)[0]

    return cached_derivation(f"paper-numbers-{path.stem}", [path], parse, code=[spec.origin])


def _shown_path(path: Path) -> str:
    """The file's path from the checkout's root where it is inside it, else as given."""
    root = Path(__file__).resolve().parents[2]
    try:
        return str(path.resolve().relative_to(root))
    except ValueError:
        return str(path)


def _names(model: Any, aliases: Mapping[str, set[str]]) -> frozenset[str]:
    if model is None:
        return frozenset()
    return frozenset({normalize_model(str(model))} | aliases.get(str(model).lower(), set()))


# ---- a run's setting ------------------------------------------------------------------------------------
def _config(summary: Mapping[str, Any]) -> PaperNumbers | None:
    return paper_numbers_of(summary.get("benchmark"))


def run_setting(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The run's setting in the papers' terms, with the benchmark's defaults for what it does not state
    (no model keys among the defaults); ``{}`` for a benchmark without published numbers."""
    pn = _config(summary)
    if pn is None:
        return {}
    setting = {k: v for k, v in pn.setting(summary).items() if v is not None}
    setting.setdefault(DATASET, summary.get("benchmark"))
    return {**{k: v for k, v in pn.defaults.items() if k not in pn.model_keys}, **setting}


def _canon(value: Any, pn: PaperNumbers | None) -> str:
    s = str(value).strip().lower()
    return str((pn.synonyms if pn else {}).get(s, s)).lower()


def other_models(summary: Mapping[str, Any]) -> dict[str, str]:
    """The run's model keys whose model is not the run's own: key -> the value as the run states it."""
    pn = _config(summary)
    if pn is None:
        return {}
    setting = run_setting(summary)
    own = normalize_model(summary.get("model") or "")
    return {k: str(setting[k]) for k in pn.model_keys
            if setting.get(k) is not None and normalize_model(setting[k]) != own}


def _settings_agree(row: PaperRow, summary: Mapping[str, Any], pn: PaperNumbers) -> bool:
    """The strategy and every key but the dataset and the model keys (see the module docstring)."""
    setting = run_setting(summary)
    if row.setting.get(STRATEGY) is None or setting.get(STRATEGY) is None:
        return False
    stated = {**{k: v for k, v in pn.defaults.items() if k not in pn.model_keys}, **row.setting}
    for key, value in stated.items():  # a key the row does not state was run with its default too
        if key == DATASET or key in pn.model_keys:
            continue
        ran = setting.get(key)
        if ran is not None and _canon(ran, pn) != _canon(value, pn):
            return False
    return True


def same_setting(row: PaperRow, summary: Mapping[str, Any]) -> bool:
    """Whether a paper row was obtained the way this run was, by this run's model."""
    pn = _config(summary)
    if pn is None or not _settings_agree(row, summary, pn):
        return False
    setting = run_setting(summary)
    own = normalize_model(str(summary.get("model", "")))
    for key in pn.model_keys:
        ran = setting.get(key)
        if key in row.setting:
            if ran is None or normalize_model(ran) not in row.model_key_aliases.get(key, frozenset()):
                return False
        elif ran is not None and normalize_model(ran) != own:
            return False
    return True


def in_run_setting(row: PaperRow, summary: Mapping[str, Any]) -> bool:
    """Whether a paper row, of *any* model, was obtained in this run's setting (dataset aside).

    As :func:`same_setting`, but model-blind: a run whose model key names another model takes the
    rows that state that model, and the plain rows of that model itself.
    """
    pn = _config(summary)
    if pn is None or not _settings_agree(row, summary, pn):
        return False
    others = {k: normalize_model(v) for k, v in other_models(summary).items()}
    for key in pn.model_keys:
        other = others.get(key)
        if key in row.setting:
            if other is None or other not in row.model_key_aliases.get(key, frozenset()):
                return False
        elif other is not None and other not in row.aliases:
            return False
    return True


def _of_dataset(summary: Mapping[str, Any], rows: Sequence[PaperRow]) -> list[PaperRow]:
    """The rows of the run's dataset and of its value of every ``separate`` key (e.g. its language)."""
    setting = run_setting(summary)
    dataset = setting.get(DATASET)
    pn = _config(summary)
    apart = {k: _canon(setting.get(k), pn) for k in (pn.separate if pn else ())}
    return [r for r in rows if dataset is not None and r.setting.get(DATASET) == dataset
            and all(_canon(r.setting.get(k), pn) == v for k, v in apart.items())]


def paper_rows_for(summary: Mapping[str, Any], rows: Sequence[PaperRow]) -> list[tuple[PaperRow, bool]]:
    """The paper rows for this run's model and dataset, merged across tables, same setting first.

    Returns ``(row, same_setting)`` pairs; rows that repeat numbers of another table (same model,
    setting and values) are merged into one whose ``tables`` name both.
    """
    model = str(summary.get("model") or "")
    merged = _merge([r for r in _of_dataset(summary, rows) if r.matches_model(model)])
    pairs = [(r, same_setting(r, summary)) for r in merged]
    pairs.sort(key=lambda p: (not p[1], first_table(p[0])))
    return pairs


def published_rows_for(summary: Mapping[str, Any], rows: Sequence[PaperRow]) -> list[PaperRow]:
    """Every paper row of this run's dataset and setting, whatever its model (averages too).

    Rows that repeat numbers of another table are merged as in :func:`paper_rows_for`; ordered by
    their first table, then as the paper-numbers files list them.
    """
    merged = _merge([r for r in _of_dataset(summary, rows) if in_run_setting(r, summary)])
    return sorted(merged, key=first_table)


def setting_key(summary: Mapping[str, Any]) -> tuple[str, ...]:
    """What decides :func:`published_rows_for`: runs with the same key are shown with the same rows."""
    pn = _config(summary)
    setting = run_setting(summary)
    model_keys = pn.model_keys if pn else ()
    key = [str(summary.get("benchmark")), _canon(setting.get(STRATEGY) or summary.get(STRATEGY) or "", pn)]
    key += [f"{k}={_canon(v, pn)}" for k, v in sorted(setting.items()) if k not in (DATASET, STRATEGY, *model_keys)]
    others = other_models(summary)
    key += [f"{k}={normalize_model(others[k]) if k in others else ''}" for k in model_keys]
    return tuple(key)


def _merge(mine: Sequence[PaperRow]) -> list[PaperRow]:
    """Rows of the same model and setting whose numbers repeat another table's, merged into one."""
    merged: list[PaperRow] = []
    for r in mine:
        for i, m in enumerate(merged):
            if m.model.lower() == r.model.lower() and m.setting == r.setting and _repeats(m.metrics, r.metrics) \
                    and _compatible(m.extra, r.extra):
                merged[i] = dataclasses.replace(
                    m, metrics={**m.metrics, **r.metrics}, extra={**m.extra, **r.extra}, note=m.note or r.note,
                    tables=tuple(dict.fromkeys(m.tables + r.tables)),
                )
                break
        else:
            merged.append(r)
    return merged


def first_table(row: PaperRow) -> int:
    return min((t for t in row.tables if t is not None), default=10**6)


def _compatible(a: Mapping[str, float], b: Mapping[str, float]) -> bool:
    return all(a[k] == b[k] for k in a.keys() & b.keys())


def _repeats(a: Mapping[str, float], b: Mapping[str, float]) -> bool:
    """Two rows report the same measurement: they share a metric, and every shared one is equal."""
    return bool(a.keys() & b.keys()) and _compatible(a, b)


# ---- describing settings -------------------------------------------------------------------------------
def describe_setting(setting: Mapping[str, Any]) -> str:
    parts = [str(setting[STRATEGY])] if setting.get(STRATEGY) else ["strategy not stated"]
    parts += [f"{k}={v}" for k, v in setting.items() if k not in (DATASET, STRATEGY)]
    return " · ".join(parts)


def model_keys_of(summary: Mapping[str, Any]) -> tuple[str, ...]:
    pn = _config(summary)
    return tuple(pn.model_keys) if pn else ()


def block_setting(summary: Mapping[str, Any], rows: Sequence[PaperRow]) -> str:
    """The setting the rows share, as far as the run states it (dataset aside; a model key as the run
    states it, where it names another model), else the run's strategy."""
    if not rows:
        return f"strategy {summary.get(STRATEGY) or '–'}"
    stated = run_setting(summary)
    model_keys = model_keys_of(summary)
    common = {k: v for k, v in rows[0].setting.items()
              if k != DATASET and k not in model_keys and k in stated and all(r.setting.get(k) == v for r in rows)}
    return describe_setting({**common, **other_models(summary)})
