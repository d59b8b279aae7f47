"""Run the OFFICIAL step-2 tool rewrite (UnifiedToolHub's ``APIRequester.convert_to_openai_tools``,
``resources/UnifiedToolHub/models/api_requester.py`` of GitHub ``yxzwang/FamilyTool``) on every
candidate tool of FamilyTool-b and -e and on the hand-made tools of ``handmade_tools.json``, and print
the fixture ``tool_schemas/official.json`` (see README.md here).

Not a test and not run in CI: it needs a checkout of the official code. It contains none of that
code: it imports ``models/api_requester.py`` unchanged (its package ``__init__``, which loads the vLLM
formatters, is skipped; ``openai`` and ``models/deepseek_r1.py``, which the function never uses, are
stubbed: the latter does not compile on Python 3.11) and calls the method
directly (it does not use ``self``), one tool at a time, on a fresh copy of each tool.

The data's tools are not copied into the fixture: each unique tool (by :func:`digest` of the tool) maps
to the digest of the official output. The hand-made tools, ours, are written out with their output.

Usage: python run_official_tools.py OFFICIAL_SRC DATA_DIR
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import json
import sys
import types
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent


def digest(value: Any) -> str:
    """The first 16 hex digits of the SHA-256 of ``value`` as canonical JSON (sorted keys)."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def load_official(src: Path) -> Any:
    stub = types.ModuleType("openai")
    stub.OpenAI = object  # type: ignore[attr-defined]
    sys.modules["openai"] = stub
    pkg = types.ModuleType("models")
    pkg.__path__ = [str(src / "resources" / "UnifiedToolHub" / "models")]  # type: ignore[attr-defined]
    sys.modules["models"] = pkg
    r1 = types.ModuleType("models.deepseek_r1")  # the deepseek-reasoner prompt route; needs Python 3.12 to compile
    r1.DeepSeek_R1 = object  # type: ignore[attr-defined]
    sys.modules["models.deepseek_r1"] = r1
    return importlib.import_module("models.api_requester").APIRequester.convert_to_openai_tools


def main(src: Path, data_dir: Path) -> dict[str, Any]:
    convert = load_official(src)

    def official(tool: dict[str, Any]) -> dict[str, Any]:
        (out,) = convert(None, [copy.deepcopy(tool)])
        return dict(out)

    tools: dict[str, str] = {}
    counts: dict[str, int] = {}
    for short in ("b", "e"):
        n = 0
        for line in (data_dir / "familytool" / f"familytool-{short}.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                for tool in json.loads(line)[1]["content"]:
                    tools[digest(tool)] = digest(official(tool))
                    n += 1
        counts[f"familytool-{short}"] = n
    handmade = json.loads((HERE / "tool_schemas" / "handmade_tools.json").read_text(encoding="utf-8"))
    return {
        "source": "yxzwang/FamilyTool@c3c5fc7e2496df3db4ffa045f0dbf34114c27802 "
                  "resources/UnifiedToolHub/models/api_requester.py APIRequester.convert_to_openai_tools",
        "candidate_tools": counts,
        "unique_tools": len(tools),
        "tools": dict(sorted(tools.items())),
        "handmade": [{"tool": t, "official": official(t)} for t in handmade],
    }


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), Path(sys.argv[2])), indent=1, ensure_ascii=False))
