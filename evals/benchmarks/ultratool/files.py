"""UltraTool's name, tasks and data files: where they live under the data directory, and their pinned sources.

Source: JoeYing1019/UltraTool at commit 9f3793c3f9396b840631833ef76fe4f20c057c39 (no license
stated); the data files' sizes and sha256 as recorded in ../shared/data/MANIFEST.md, the official code
files' (:data:`PROTOCOL`) as ``git show <commit>:<path>`` gives them.
"""

from __future__ import annotations

from ...core.data import RemoteFile

__all__ = ["APPROXIMATED", "COMMIT", "EVALUATION_CONFIG", "INFERENCE_API", "INFERENCE_UTILS", "JUDGED", "LANGUAGES", "NAME",
           "PREDICTIONS", "PREDICTIONS_ZH", "PROTOCOL", "PROTOCOL_ROOT", "RELEASED", "SOURCES", "TASKS", "language_root",
           "test_set_path"]

NAME = "ultratool"  # the registry name; also the folder of its files under the data directory
COMMIT = "9f3793c3f9396b840631833ef76fe4f20c057c39"
ROOT = "ultratool/English-dataset"
# The two test sets (the paper's Chinese-dataset is the source; the English-dataset its translation):
# the ``--language`` option's values -> the data-dir folder. The official scripts call them ``en`` / ``ch``.
LANGUAGES = {"en": ROOT, "zh": "ultratool/Chinese-dataset"}

# The paper's six tasks. Four have released test files; the other two (their test files were never
# published) are approximations built from test.json, run under their own names so that they are
# never taken for the paper's.
RELEASED = ("planning", "tool_creation", "tool_usage_awareness", "tool_usage")
APPROXIMATED = ("tool_selection_approx", "tool_creation_awareness_approx")
TASKS = RELEASED + APPROXIMATED
JUDGED = ("planning", "tool_creation")  # scored by the LLM judge

_RAW = f"https://raw.githubusercontent.com/JoeYing1019/UltraTool/{COMMIT}"


def _file(path: str, sha256: str, size: int, repo_prefix: str = "data/English-dataset") -> RemoteFile:
    dest = f"ultratool/{repo_prefix.removeprefix('data/')}/{path}"
    return RemoteFile(dest, f"{_RAW}/{repo_prefix}/{path}", sha256, size)


def language_root(language: str = "en") -> str:
    """The data-dir folder of a language's test set."""
    if language not in LANGUAGES:
        raise ValueError(f"ultratool has no language {language!r}; available: {', '.join(LANGUAGES)}")
    return LANGUAGES[language]


def test_set_path(task: str, language: str = "en") -> str:
    """The data-dir path of a released task's test file (``test.json`` for the approximations)."""
    root = language_root(language)
    return f"{root}/test_set/{task}.json" if task in RELEASED else f"{root}/test.json"


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
_ZH = "data/Chinese-dataset"
_PZ = "predictions/Chinese-dataset"


def _files(repo_prefix: str, rows: tuple[tuple[str, str, int], ...]) -> tuple[RemoteFile, ...]:
    return tuple(_file(path, sha256, size, repo_prefix) for path, sha256, size in rows)


# The Chinese test set (MANIFEST.md): path, sha256, bytes. Its tool_selection and
# tool_creation_awareness files, like the English ones, were never published.
_TEST_ZH = _files(_ZH, (
    ("test.json", "d0e20a6e40d0d61381f9ad99617e8a85f3d3bad1ef23c954be201075f688142f", 3109543),
    ("test_set/planning.json", "f3af325b4ce7cd9f270100b76020337d2a319424a683e185fa185065708c1d17", 772298),
    ("test_set/tool_creation.json", "eec35f6942fffff2a9214a64aa2c6194ba741f0c19d0c73ed6787291b72146b7", 2994064),
    ("test_set/tool_usage.json", "cb44117f304a7aa1c93a628f130eb1bfbc4d5fff8ec48cfdeffeeb507dad5d80", 2899646),
    ("test_set/tool_usage_awareness.json", "14fb978bd71462a6e53ef180441f11b3386db262b8b71340873693bb1e2447b0", 1531779),
    ("example/planning.json", "2b43b4d78dad27169add14e3b686c32ab4407cc92aa246c750dc60479bc6a477", 567),
    ("example/tool_creation.json", "998c434f43f5414d5add3202df7f8cfeade2b4cf82e5aa6a2ccc6af1ee933114", 3108),
    ("example/tool_creation_awareness.json", "be7d95c83c0b5798fdcfbf8ed54154083c5e30c480bc4ae1b9ec0ae0e75a7d33", 2431),
    ("example/tool_selection.json", "2d4efc8d1b2d1e7e0c2e6727ec26aa255097593451b62126eba686e6ce138a1d", 3998),
    ("example/tool_usage.json", "f53d8e0771ce530c60fb5718ba83e98618253daf16e057b6560b949c5adf6a2e", 3758),
    ("example/tool_usage_awareness.json", "a1fc1392ea074e7d3b51dd15614513e31b60c407df16c5943b0d4e2df6782aca", 1604),
))
# The paper's published GPT-3.5 / GPT-4 Chinese runs in the snapshot (GPT-4's tool creation and every
# tool-creation judgment are missing blobs there).
PREDICTIONS_ZH = _files(_PZ, (
    ("gpt-3.5/planning.json", "bfc7df0f581ca6ae292622c4df67baaefcba603bb286a2415f502ad7d2f6de45", 1189293),
    ("gpt-3.5/tool_creation.json", "31c6922eddb64331b9cf2456f2a3e4df064c9e34a73adc3355e2f9170cbec044", 4092718),
    ("gpt-3.5/tool_usage.json", "b592339765aeca9b64950486cd877bd960a0f0d4c6cc353da6edecb0f45ef5d1", 3346612),
    ("gpt-3.5/tool_usage_awareness.json", "bae61cacda05f47faa11c8e17e2ff977d521b9e6a50d5b0dabc6502d34662829", 2301477),
    ("gpt-3.5/eval/planning_eval.json", "83ff0b6d5b2f244d51e60b2dbee59cb38a05cdee71f0662cbcc52fc07c2b4e6a", 2319381),
    ("gpt-4/planning.json", "33f4ee19a5f3d040ca462d2943df65d8e0a83f5ec0e51edc91f798a8ee330fc8", 1426007),
    ("gpt-4/tool_usage.json", "8e05f3b2d0e85237592c9470cb07dc86a0dfb53b5517db8ea77a4eb01d48e5b4", 3446220),
    ("gpt-4/tool_usage_awareness.json", "775d3a5e7345e44781b37244155bb50c57dc91887124a64b3e8077c7cd33237d", 2336059),
    ("gpt-4/eval/planning_eval.json", "fcbc217943a07f995ac73037812f898a8046423f0ca1462d824a67a4457e0ea8", 2531033),
))
SOURCES: dict[str, tuple[RemoteFile, ...]] = {
    "ultratool": _TEST + PROTOCOL, "ultratool-predictions": PREDICTIONS,
    "ultratool-zh": _TEST_ZH + PROTOCOL, "ultratool-zh-predictions": PREDICTIONS_ZH,
}
