"""UltraTool's protocol texts, read as data from the official files (nothing of them is copied here).

The published runs' prompts, their system message and the judge's rubrics are those of the official
code (JoeYing1019/UltraTool at the pinned commit, :data:`.files.PROTOCOL`), fetched into the data
directory with the test files (``evals data fetch ultratool``, or on first use):

* ``inference/utils.py``: in ``generate_prompt_english`` (``generate_prompt_chinese`` for the
  Chinese test set), the task instructions (``USER_PROMPT``),
  the templates of the record (``PROMPT_DICT``) and of the few-shot example (``EXAMPLE_DICT``), and
  the concatenation that makes a ``few_shot_cot`` prompt (the published GPT runs' method);
* ``inference/openai_api.py``: the system message of every request (the ``"system"`` message);
* ``evaluation/config.py``: the judge's rubrics, ``en_prompt_plan`` and ``en_prompt_tool`` (the
  Chinese set's: ``ch_prompt_plan`` and ``ch_prompt_tool``).

Their string literals are read with :mod:`ast` (``ast.literal_eval`` of the literal nodes): the files
are never imported or run. What is built from them (which template a record takes, how the rubric is
filled) is ours, in :mod:`.tasks` and :mod:`.plugin`. A file that is missing raises
:class:`~evals.core.data.DataNotFound` naming it and the command that fetches it; a file without the
expected literal raises :class:`ValueError` naming both.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from kg_store.digest import file_sha256

from ...core.data import DATA_ENV, DataNotFound, data_dir
from .files import COMMIT, EVALUATION_CONFIG, INFERENCE_API, INFERENCE_UTILS, NAME, PROTOCOL_ROOT

__all__ = ["Concatenation", "RunPrompts", "creation_rubric", "official_file", "planning_rubric", "run_prompts",
           "system_message"]

_REPO = "JoeYing1019/UltraTool"


def official_file(dest: str) -> Path:
    """The data-dir path of an official code file (``dest`` as in :data:`.files.PROTOCOL`), or a
    :class:`DataNotFound` that names it and says how to fetch it."""
    root = data_dir()
    path = root / dest
    if not path.is_file():
        repo_path = dest.removeprefix(f"{PROTOCOL_ROOT}/")
        raise DataNotFound(
            f"UltraTool's prompts are read from the official file {repo_path} ({_REPO} at commit {COMMIT[:7]}), "
            f"which is not in the data directory (looked for {path}). Fetch it with `evals data fetch {NAME}` "
            f"(pinned, sha256-checked), or point {DATA_ENV} at a directory that holds {dest}."
        )
    return path


_T = TypeVar("_T")


def _read(dest: str, build: Callable[[Path, ast.Module], _T]) -> _T:
    """``build`` applied to the parsed official file ``dest``, once per process and version of the
    file's bytes (its :func:`~kg_store.digest.file_sha256`)."""
    path = official_file(dest)
    return _built(build, path, file_sha256(path))  # type: ignore[no-any-return]


@functools.lru_cache(maxsize=16)
def _built(build: Callable[[Path, ast.Module], Any], path: Path, sha256: str) -> Any:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, ValueError) as exc:
        raise ValueError(f"cannot read UltraTool's official prompts from {path}: {exc}") from None
    return build(path, tree)


def _assigned(body: list[ast.stmt], name: str, path: Path, where: str) -> ast.expr:
    """The value of the (last) plain assignment ``name = ...`` among ``body``'s statements."""
    found = [n.value for n in body if isinstance(n, ast.Assign) and len(n.targets) == 1
             and isinstance(n.targets[0], ast.Name) and n.targets[0].id == name]
    if not found:
        raise ValueError(f"{path}: no assignment to {name} in {where}")
    return found[-1]


def _literal_str(node: ast.expr, path: Path, name: str) -> str:
    value = ast.literal_eval(node) if isinstance(node, ast.Constant) else None
    if not isinstance(value, str):
        raise ValueError(f"{path}: {name} is not a string literal")
    return value


def _literal_str_dict(node: ast.expr, path: Path, name: str) -> dict[str, str]:
    try:
        value = ast.literal_eval(node) if isinstance(node, ast.Dict) else None
    except ValueError:
        value = None
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ValueError(f"{path}: {name} is not a dict literal of strings")
    return value


@dataclass(frozen=True)
class Concatenation:
    """A ``a + "text" + b + ...`` expression of the official code: string literals and names, in order."""

    parts: tuple[str | tuple[str], ...]  # a literal, or ``(name,)``: the value of a variable

    def fill(self, values: Mapping[str, str]) -> str:
        missing = [p[0] for p in self.parts if isinstance(p, tuple) and p[0] not in values]
        if missing:
            raise ValueError(f"no value for {', '.join(missing)} in the official prompt's concatenation")
        return "".join(values[p[0]] if isinstance(p, tuple) else p for p in self.parts)


def _concatenation(node: ast.expr, path: Path, name: str) -> Concatenation:
    parts: list[str | tuple[str]] = []

    def walk(n: ast.expr) -> None:
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add):
            walk(n.left)
            walk(n.right)
        elif isinstance(n, ast.Name):
            parts.append((n.id,))
        elif isinstance(n, ast.Constant) and isinstance(n.value, str):
            parts.append(n.value)
        else:
            raise ValueError(f"{path}: {name} is not a concatenation of names and string literals")

    walk(node)
    return Concatenation(tuple(parts))


def _is_method_test(test: ast.expr, method: str) -> bool:
    """``method == '<method>'``, the test of a branch of ``generate_prompt_english``."""
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "method"
            and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == method)


@dataclass(frozen=True)
class RunPrompts:
    """What ``generate_prompt_english`` holds for a ``few_shot_cot`` prompt."""

    instructions: dict[str, str]  # USER_PROMPT: the task instruction, by task file name
    record_templates: dict[str, str]  # PROMPT_DICT: the record, by template key (``str.format_map`` fields)
    example_templates: dict[str, str]  # EXAMPLE_DICT: the few-shot example, the same keys
    few_shot: Concatenation  # the prompt: ``user_prompt`` (the instruction), ``example`` and ``user`` joined


# a language's prompt function of ``inference/utils.py`` and prefix of its rubrics in ``evaluation/config.py``
_PROMPT_FUNCTION = {"en": "generate_prompt_english", "zh": "generate_prompt_chinese"}
_RUBRIC_PREFIX = {"en": "en", "zh": "ch"}


def run_prompts(language: str = "en") -> RunPrompts:
    """The published runs' prompt parts of a language's test set, from ``inference/utils.py``."""
    return _read(INFERENCE_UTILS, _RUN_PROMPTS[language])


def _run_prompts_en(path: Path, tree: ast.Module) -> RunPrompts:
    return _run_prompts(path, tree, _PROMPT_FUNCTION["en"])


def _run_prompts_zh(path: Path, tree: ast.Module) -> RunPrompts:
    return _run_prompts(path, tree, _PROMPT_FUNCTION["zh"])


_RUN_PROMPTS = {"en": _run_prompts_en, "zh": _run_prompts_zh}


def _run_prompts(path: Path, tree: ast.Module, where: str) -> RunPrompts:
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == where), None)
    if fn is None:
        raise ValueError(f"{path}: no function {where}")
    parts = {name: _literal_str_dict(_assigned(fn.body, name, path, where), path, name)
             for name in ("USER_PROMPT", "PROMPT_DICT", "EXAMPLE_DICT")}
    branch = next((n for n in ast.walk(fn) if isinstance(n, ast.If) and _is_method_test(n.test, "few_shot_cot")), None)
    if branch is None:
        raise ValueError(f"{path}: no `method == 'few_shot_cot'` branch in {where}")
    content = _assigned(branch.body, "content", path, f"the few_shot_cot branch of {where}")
    return RunPrompts(parts["USER_PROMPT"], parts["PROMPT_DICT"], parts["EXAMPLE_DICT"],
                      _concatenation(content, path, "content"))


def system_message() -> str:
    """The system message of the official requests (``inference/openai_api.py``): the content of its
    one ``{"role": "system", "content": ...}`` message."""
    return _read(INFERENCE_API, _system_message)


def _system_message(path: Path, tree: ast.Module) -> str:
    found: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Dict):
            continue
        try:
            value = ast.literal_eval(node)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("role") == "system" and isinstance(value.get("content"), str):
            found.append(value["content"])
    if len(set(found)) != 1:
        raise ValueError(f"{path}: expected one system message literal {{'role': 'system', 'content': ...}}, "
                         f"found {len(set(found))}")
    return found[0]


def _rubrics(path: Path, tree: ast.Module) -> dict[str, str]:
    """Every rubric of ``evaluation/config.py`` that is there (``en_prompt_plan``, ``ch_prompt_tool``...)."""
    names = [f"{p}_prompt_{kind}" for p in _RUBRIC_PREFIX.values() for kind in ("plan", "tool")]
    present = {n.targets[0].id for n in tree.body if isinstance(n, ast.Assign) and len(n.targets) == 1
               and isinstance(n.targets[0], ast.Name)}
    return {name: _literal_str(_assigned(tree.body, name, path, "the module"), path, name)
            for name in names if name in present}


def _rubric(name: str) -> str:
    rubrics = _read(EVALUATION_CONFIG, _rubrics)
    if name not in rubrics:
        raise ValueError(f"{official_file(EVALUATION_CONFIG)}: no assignment to {name} in the module")
    return rubrics[name]


def planning_rubric(language: str = "en") -> str:
    """The judge's rubric for a plan (``en_prompt_plan``; ``ch_prompt_plan`` for the Chinese set):
    ``str.format`` fields ``question``, ``reference``, ``answer``."""
    return _rubric(f"{_RUBRIC_PREFIX[language]}_prompt_plan")


def creation_rubric(language: str = "en") -> str:
    """The judge's rubric for a created tool (``en_prompt_tool`` / ``ch_prompt_tool``): the same fields."""
    return _rubric(f"{_RUBRIC_PREFIX[language]}_prompt_tool")
