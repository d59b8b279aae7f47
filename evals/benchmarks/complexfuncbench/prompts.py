"""The official judge prompts, read from the official files (``prompts/compare.py`` and
``prompts/response.py`` of THUDM/ComplexFuncBench, fetched by ``evals data fetch
complexfuncbench-official``) as data: their string constants and ``SimpleTemplatePrompt`` templates
are read with :mod:`ast`, nothing of them is run or copied here.

A template is filled as the official ``SimpleTemplatePrompt`` fills it: ``[args1]``, ``[args2]``... are
replaced one after another, in ``args_order``.
"""

from __future__ import annotations

import ast
import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Template", "decode_json", "read_prompt_file"]


@dataclass(frozen=True)
class Template:
    template: str
    args_order: tuple[str, ...]

    def fill(self, **kwargs: Any) -> str:
        out = self.template
        for i, name in enumerate(self.args_order):
            value = kwargs[name]
            out = out.replace(f"[args{i + 1}]", str(value) if isinstance(value, int) else value)
        return out


def _const_str(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


@functools.cache
def read_prompt_file(path: Path) -> dict[str, str | Template]:
    """Every ``NAME = "..."`` and ``NAME = SimpleTemplatePrompt(template=..., args_order=[...])`` of the file."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError) as exc:
        raise ValueError(f"cannot read the official prompts from {path}: {exc}") from None
    out: dict[str, str | Template] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            continue
        name, value = node.targets[0].id, node.value
        text = _const_str(value)
        if text is not None:
            out[name] = text
        elif isinstance(value, ast.Call) and getattr(value.func, "id", None) == "SimpleTemplatePrompt":
            kw = {k.arg: k.value for k in value.keywords}
            template = _const_str(kw["template"]) if "template" in kw else None
            order = kw.get("args_order")
            if template is None or not isinstance(order, ast.List):
                raise ValueError(f"{path}: {name} is not a SimpleTemplatePrompt(template=str, args_order=[...])")
            out[name] = Template(template, tuple(_const_str(e) or "" for e in order.elts))
    return out


def decode_json(text: str) -> Any:
    """The official ``decode_json``: strip the code-fence characters, drop newlines, spell Python's
    booleans as JSON's, parse; ``None`` when that fails."""
    text = text.strip("```JSON\n").strip("```json\n").strip("\n```")  # noqa: B005 - character sets, as the official code strips
    text = text.replace("\n", "").replace("False", "false").replace("True", "true")
    try:
        return json.loads(text)
    except ValueError:
        return None
