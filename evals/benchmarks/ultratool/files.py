"""UltraTool's name, tasks and data files: where they live under the data directory, and their pinned sources.

Source: JoeYing1019/UltraTool at commit 9f3793c3f9396b840631833ef76fe4f20c057c39 (no license
stated); the data files' sizes and sha256 as recorded in ../shared/data/MANIFEST.md, the official code
files' (:data:`PROTOCOL`) as ``git show <commit>:<path>`` gives them.
"""

from __future__ import annotations

from ...core.data import RemoteFile

__all__ = ["APPROXIMATED", "COMMIT", "EVALUATION_CONFIG", "INFERENCE_API", "INFERENCE_UTILS", "JUDGED", "NAME",
           "PREDICTIONS", "PROTOCOL", "PROTOCOL_ROOT", "RELEASED", "SOURCES", "TASKS", "test_set_path"]

NAME = "ultratool"  # the registry name; also the folder of its files under the data directory
COMMIT = "9f3793c3f9396b840631833ef76fe4f20c057c39"
ROOT = "ultratool/English-dataset"

# The paper's six tasks. Four have released test files; the other two (their test files were never
# published) are approximations built from test.json, run under their own names so that they are
# never taken for the paper's.
RELEASED = ("planning", "tool_creation", "tool_usage_awareness", "tool_usage")
APPROXIMATED = ("tool_selection_approx", "tool_creation_awareness_approx")
TASKS = RELEASED + APPROXIMATED
JUDGED = ("planning", "tool_creation")  # scored by the LLM judge

_RAW = f"https://raw.githubusercontent.com/JoeYing1019/UltraTool/{COMMIT}"


def _file(path: str, sha256: str, size: int, repo_prefix: str = "data/English-dataset") -> RemoteFile:
    return RemoteFile(f"{ROOT}/{path}" if repo_prefix.startswith("data") else f"ultratool/{repo_prefix}/{path}",
                      f"{_RAW}/{repo_prefix}/{path}", sha256, size)


def test_set_path(task: str) -> str:
    """The data-dir path of a released task's test file (``test.json`` for the approximations)."""
    return f"{ROOT}/test_set/{task}.json" if task in RELEASED else f"{ROOT}/test.json"


_TEST = (
    _file("test.json", "659a445f952d6f783a426b976208e9e77cfd374d70503d4ca5d7892da600b6c7", 3392227),
    _file("test_set/planning.json", "9931db4747040659c60feb358bb9e48b1c4a326390c4a62b7853336c6052896b", 916839),
    _file("test_set/tool_creation.json", "920ff20cba5a80837a3f75ab5f7e77c08f09ed4dd1a13e94b9fd8b0f6a019488", 3273270),
    _file("test_set/tool_usage.json", "d14235faf77a2a92523c12a76028c34ac34cc7bb561c838ed743865b56e3ef7f", 3176524),
    _file("test_set/tool_usage_awareness.json", "6a8dfc672ff4d39d0bda842c6b7ac7e0948f7223438cdf82a0ba80ef0abee4b9", 1730905),
    _file("example/planning.json", "d4c2b26042a7ba5729915b351c92db68d789deefa3e7152e2603a64446a495ea", 747),
    _file("example/tool_creation.json", "026d476b12a4f01438e29abc62eee39a5acfb99a6bfed4a8b6e1b59993d3c3bf", 3344),
    _file("example/tool_creation_awareness.json", "cfe44a5683212e97da6dc2611c875ee1d9da99e87de756d1186ba0ef7e0f7153", 2657),
    _file("example/tool_selection.json", "2cc92b65ad07ad5cb736902f2ed96bcf0bdb5616931bfe2df291287e142ac9ed", 4258),
    _file("example/tool_usage.json", "6be893757436b2e46f3e4d7fd7f46bed584c49ac56ce9653d91f56dcdb5b1928", 4099),
    _file("example/tool_usage_awareness.json", "6d12f96b2231cd34cdb3663ef416967422572bbc4e70a8cf9eadde28d5f1817a", 1737),
)
# The official code files that hold the benchmark's protocol texts: the published runs' prompts
# (``inference/utils.py``), their system message (``inference/openai_api.py``) and the judge's rubrics
# (``evaluation/config.py``). They are data to us: :mod:`.prompts` reads their string literals with
# :mod:`ast` (nothing of them is run, or copied into this project). Data-dir path -> repository path.
PROTOCOL_ROOT = f"{NAME}/official"
INFERENCE_UTILS = f"{PROTOCOL_ROOT}/inference/utils.py"
INFERENCE_API = f"{PROTOCOL_ROOT}/inference/openai_api.py"
EVALUATION_CONFIG = f"{PROTOCOL_ROOT}/evaluation/config.py"
PROTOCOL = (
    RemoteFile(INFERENCE_UTILS, f"{_RAW}/inference/utils.py",
               "be89be656cff13097aa8924d7db9e31f27ce90355eda28875060c97e7027c2ee", 13894),
    RemoteFile(INFERENCE_API, f"{_RAW}/inference/openai_api.py",
               "9f5a9b65583a0320e307e80fd9d5367d1135431f541a33b393720f8e8d7ca370", 4204),
    RemoteFile(EVALUATION_CONFIG, f"{_RAW}/evaluation/config.py",
               "d22a4282db879bbc9672e137852a7ea237c81ab0911b1cf7a15dc3183ed66127", 16694),
)
_P = "predictions/English-dataset"
# The paper's published GPT-3.5 / GPT-4 runs (English) that exist in the snapshot (MANIFEST.md).
PREDICTIONS = (
    _file("gpt-3.5/planning.json", "4ebdd6c385c176f89355ad465c80adc870fbb0d736b6449f71ea97da92c8f92d", 1374331, _P),
    _file("gpt-3.5/tool_usage.json", "70f567baf4dbe889a1b4daf7e6a7a986f307e85fe86a186d2330bc82d9a67040", 3664140, _P),
    _file("gpt-3.5/tool_usage_awareness.json", "c669da28f444836a20f1492c4a72ece63f635977553ec5eb8796fab1951d8f7b", 2570315, _P),
    _file("gpt-3.5/eval/planning_eval.json", "0555290fa101cea9527b44846d3e745cb5b4d20fe47cd084b702206ab557a628", 3064267, _P),
    _file("gpt-4/planning.json", "fa89790bb1c3126f31eea388010545f48b73d8ec17a39f5e2882588e58957200", 1734991, _P),
    _file("gpt-4/tool_usage.json", "dfa0964e9d56504938b48a8388df8e051663fd9810e9219c6d9c463996a045ff", 3713819, _P),
    _file("gpt-4/tool_usage_awareness.json", "2ca586742870ffa4ebf03e2c635ceafb74fcad8096f6075677a3f8f848d6dbcc", 2594375, _P),
    _file("gpt-4/eval/planning_eval.json", "6d4f96c6bffd9c88ae27f374b1ec10758fe7f9059dcc53dea5117dd0e3fb0cb6", 3400241, _P),
)
SOURCES: dict[str, tuple[RemoteFile, ...]] = {"ultratool": _TEST + PROTOCOL, "ultratool-predictions": PREDICTIONS}
