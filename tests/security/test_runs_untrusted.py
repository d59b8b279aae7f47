"""Everything that comes from outside a run is untrusted (issue 36, items 5, 7, 8, 9): a lone surrogate in
a model's reply, a tool server that drops the connection, symbolic links in a run directory, keys inside
URLs. Real ``evals run`` subprocesses, the real OpenAI SDK against the local stand-in, a real
``evals serve`` killed mid-run."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_providers import FakeProviderServer, openai_chat, tool_call

from client.runs import RunDir, RunFileIsLink, open_run_file, redact_secrets, redact_urls

ECHO = Path(__file__).resolve().parents[1] / "server" / "mcp_echo_server.py"
SECRETS = ("SEKRET-one", "SEKRET-two", "SEKRET-three")


def _evals(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evals.cli", *args], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ))


def _familytool(run: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return _evals("run", "familytool-b", "--limit", "2", "--concurrency", "1", "--run-dir", str(run), "--no-progress", *extra)


def _tasks(tmp_path: Path, n: int = 2) -> Path:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"id": f"e{i}", "query": f"Echo t{i}.", "calls": [
        {"name": "echo", "arguments": {"text": f"t{i}"}}], "answer": {"type": "exact", "value": f"t{i}", "contains": True}}) + "\n"
        for i in range(n)))
    return tasks


# ---- 5: a lone surrogate in a reply ---------------------------------------------------------------------


def _surrogate_replies(body: dict) -> dict:
    """First turn: a tool call whose arguments hold a ``\\ud800`` escape; then a text answer with a raw one."""
    if not any(m.get("role") == "tool" for m in body["messages"]):
        return openai_chat(text="looking \ud800", tool_calls=[tool_call("echo", '{"text": "a\\ud800b"}'),
                                                               tool_call("kg_neighbors", '{"entity": "Bob\\udfff"}')])
    return openai_chat(text="the answer \ud800 is here", usage=(10, 2))


def _assert_recorded_with_a_note(run: Path) -> None:
    raw = (run / "traces.jsonl").read_bytes()
    raw.decode("utf-8")  # strict: the file is valid UTF-8
    latest = RunDir.open(run).latest_traces()
    assert latest and all(t["status"] == "completed" for t in latest.values()), latest
    for trace in latest.values():
        assert trace["final_answer"] == "the answer \ufffd is here"
        notes = [e["message"] for e in trace["events"] if e["kind"] == "note"]
        assert any("lone surrogate" in n and "U+FFFD" in n for n in notes), notes
        calls = [e for e in trace["events"] if e["kind"] == "tool_call"]
        assert calls and all("\ufffd" in json.dumps(c["arguments"], ensure_ascii=False) for c in calls)


def test_a_lone_surrogate_in_a_reply_is_recorded_and_the_built_in_run_goes_on(data_dir, tmp_path):
    run = tmp_path / "run"
    with FakeProviderServer() as fake:
        fake.openai.respond_with(_surrogate_replies)
        done = _familytool(run, "--model", "openai:m", "--base-url", fake.openai_base_url)
        assert done.returncode == 0, done.stderr[-3000:]
        _assert_recorded_with_a_note(run)
        again = _familytool(run, "--model", "openai:m", "--base-url", fake.openai_base_url)  # resume: nothing to redo
    assert again.returncode == 0, again.stderr[-3000:]
    assert "0 completed, 0 errored, 2 skipped" in " ".join(again.stderr.split())


def test_a_lone_surrogate_in_a_reply_is_recorded_and_the_task_file_run_goes_on(tmp_path):
    run = tmp_path / "run"
    with FakeProviderServer() as fake:
        fake.openai.respond_with(_surrogate_replies)
        done = _evals("run", "taskfile", "--tasks", str(_tasks(tmp_path)), "--mcp-server", f"{sys.executable} {ECHO}",
                      "--model", "openai:m", "--base-url", fake.openai_base_url, "--run-dir", str(run), "--no-progress")
    assert done.returncode == 0, done.stderr[-3000:]
    _assert_recorded_with_a_note(run)


# ---- 7: a dropped connection to the tool server -------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(port: int) -> subprocess.Popen[bytes]:
    server = subprocess.Popen([sys.executable, "-m", "evals.cli", "serve", "--port", str(port), "--benchmark", "familytool-b"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ))
    try:  # the stop is in place before the wait: SIGTERM (pytest.exit) while it starts leaves no server behind
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    return server
            assert server.poll() is None, "evals serve exited"
            time.sleep(0.2)
        raise AssertionError("evals serve did not start")
    except BaseException:
        server.kill()
        server.wait(timeout=30)
        raise


def test_a_dropped_tool_server_connection_is_transient_and_rerun_on_resume(data_dir, tmp_path):
    port, run = _free_port(), tmp_path / "run"
    argv = ["run", "familytool-b", "--model", "oracle:0.2", "--server-url", f"http://127.0.0.1:{port}", "--limit", "12",
            "--concurrency", "2", "--run-dir", str(run), "--no-progress", "--event-log"]
    server = _serve(port)
    try:
        running = subprocess.Popen([sys.executable, "-m", "evals.cli", *argv], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True, env=dict(os.environ))
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and running.poll() is None:  # kill the server once an episode is in
            if (run / "events.jsonl").exists() and b'"tool_call"' in (run / "events.jsonl").read_bytes():
                break
            time.sleep(0.05)
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=30)
        _, err = running.communicate(timeout=240)
    finally:
        server.kill()
    errored = [t for t in RunDir.open(run).latest_traces().values() if t["status"] == "errored"]
    assert errored, err[-3000:]  # the episodes in flight (and the next ones) failed on the dropped connection
    for trace in errored:
        assert trace["error"]["retryable"] is True, trace["error"]
    assert "--retry-errored" not in err  # transient: nothing to force on resume

    server = _serve(port)
    try:
        again = _evals(*argv, "--json")  # no --retry-errored
    finally:
        server.kill()
        server.wait(timeout=30)
    assert again.returncode == 0, again.stderr[-3000:]
    summary = json.loads(again.stdout.strip().splitlines()[-1])
    assert summary["completed"] == 12 and summary["errored"] == 0


# ---- 8: symbolic links in a run directory -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["traces.jsonl", "config.json", "events.jsonl", ".lock", "scores.jsonl",
                                  "judge_cache.sqlite", "config.history.jsonl"])
def test_a_symlinked_run_file_is_refused_and_nothing_is_written_through_it(data_dir, tmp_path, name):
    run = tmp_path / "run"
    assert _familytool(run, "--model", "oracle").returncode == 0
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me\n")
    (run / name).unlink(missing_ok=True)
    (run / name).symlink_to(target)
    again = _familytool(run, "--model", "oracle", "--limit", "3")
    assert again.returncode == 2, again.stderr[-3000:]
    assert "Traceback" not in again.stderr and f"{name}' is a symbolic link" in " ".join(again.stderr.split())
    assert target.read_text() == "keep me\n"


def test_a_symlinked_run_directory_is_refused(data_dir, tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "run").symlink_to(real)
    done = _familytool(tmp_path / "run", "--model", "oracle")
    assert done.returncode == 2 and "is a symbolic link" in done.stderr, done.stderr[-3000:]
    assert list(real.iterdir()) == []


def test_a_link_put_in_place_after_the_check_is_not_followed(tmp_path):
    target = tmp_path / "target"
    target.write_text("x")
    (tmp_path / "traces.jsonl").symlink_to(target)
    with pytest.raises(RunFileIsLink, match="traces.jsonl"):
        open_run_file(tmp_path / "traces.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    assert target.read_text() == "x"


def test_evals_report_does_not_write_through_a_linked_report(data_dir, tmp_path):
    run = tmp_path / "run"
    assert _familytool(run, "--model", "oracle").returncode == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (run / "report").mkdir()
    (run / "report" / "report.md").symlink_to(elsewhere / "x.md")
    done = _evals("report", str(run))
    assert done.returncode == 2 and "report.md' is a symbolic link" in " ".join(done.stderr.split()), done.stderr[-3000:]
    assert list(elsewhere.iterdir()) == []


# ---- 9: keys inside URLs -------------------------------------------------------------------------------------


def test_redact_urls_cuts_userinfo_and_key_like_query_parameters():
    text = ("at https://bob:hunter2@api.example.com/v1?model=m&API_KEY=k1&Sig=k2&access_token=k3&x-amz-signature=k4"
            "&page=2#top, then http://127.0.0.1:8/mcp?token=k5")
    out = redact_urls(text)
    for secret in ("bob", "hunter2", "k1", "k2", "k3", "k4", "k5"):
        assert secret not in out, out
    assert "model=m" in out and "page=2" in out and "#top" in out and "api.example.com/v1" in out
    assert redact_urls("max_tokens=5 no url") == "max_tokens=5 no url"
    assert redact_secrets({"base_url": "http://u:p@h/?key=1", "n": [1]}) == {"base_url": "http://<redacted>@h/?key=<redacted>",
                                                                              "n": [1]}


def _no_secret_in(*texts: str) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in text, text[-3000:]


def test_keys_in_base_url_and_server_url_never_reach_disk_or_the_terminal(data_dir, tmp_path):
    run = tmp_path / "run"
    with FakeProviderServer() as fake:
        fake.openai.respond_with(lambda body: openai_chat(text="an answer", usage=(10, 2)))
        base = fake.openai_base_url.replace("http://", f"http://me:{SECRETS[0]}@", 1)
        done = _familytool(run, "--model", "openai:m", "--base-url", base, "--strategy", "golden-kg")
        assert done.returncode == 0, done.stderr[-3000:]
    server_url = f"http://me:{SECRETS[1]}@127.0.0.1:{_free_port()}/?api_key={SECRETS[2]}"
    down = _familytool(tmp_path / "run2", "--model", "oracle", "--server-url", server_url, "--max-consecutive-errors", "2")
    assert down.returncode in (1, 3), down.stderr[-3000:]
    report = _evals("report", str(run), str(tmp_path / "run2"), "--out", str(tmp_path / "report"))
    assert report.returncode == 0, report.stderr[-3000:]
    files = [p for d in (run, tmp_path / "run2", tmp_path / "report") for p in d.rglob("*") if p.is_file()]
    _no_secret_in(done.stdout, done.stderr, down.stdout, down.stderr, report.stderr,
                  *(p.read_text(errors="replace") for p in files))
    assert "<redacted>" in (run / "config.json").read_text()


def test_keys_in_an_mcp_server_url_never_reach_a_start_up_error(tmp_path):
    url = f"http://me:{SECRETS[0]}@127.0.0.1:{_free_port()}/mcp?key={SECRETS[1]}&Token={SECRETS[2]}"
    done = _evals("run", "taskfile", "--tasks", str(_tasks(tmp_path)), "--mcp-server", url, "--model", "oracle",
                  "--run-dir", str(tmp_path / "run"), "--no-progress")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert "127.0.0.1" in done.stderr
    _no_secret_in(done.stdout, done.stderr)
