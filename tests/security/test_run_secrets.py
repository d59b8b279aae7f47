"""A key, token or password never lands in a run directory or a report (issue 26, item 7).

``evals run`` goes through the real OpenAI SDK against the local provider stand-in; ``evals report``
writes report.md/html/json; every file of the run directory and the report is searched for the secrets.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from fake_providers import FakeProviderServer, openai_chat

from client.runs import REDACTED, RunDir, redact_secrets, secret_paths

KEY = "sk-test-0123456789abcdefSECRETKEY"
TOKEN = "server-token-SECRET-4242"


def _evals(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evals.cli", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def _run(url: str, run_dir: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return _evals("run", "familytool-b", "--model", "openai:m", "--base-url", url, "--strategy", "golden-kg",
                  "--limit", "2", "--concurrency", "2", "--run-dir", str(run_dir), "--no-progress", *extra, env=env)


def _files_holding(root: Path, *secrets: str) -> list[str]:
    found = []
    for f in root.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            found += [f"{f.relative_to(root)}: {s}" for s in secrets if s.encode() in data]
    return found


def test_a_secret_model_arg_is_refused_with_a_message_naming_api_key_env(data_dir, tmp_path):
    with FakeProviderServer() as fake:
        fake.openai.respond_with(lambda body: openai_chat(text="an answer", usage=(10, 2)))
        for arg in (f"api_key={KEY}", f"token={KEY}", "password=hunter2hunter2", "client_secret=abc",
                    f'default_headers={{"Authorization": "Bearer {KEY}"}}'):
            run = tmp_path / "run"
            proc = _run(fake.openai_base_url, run, "--model-arg", arg)
            assert proc.returncode == 2, (arg, proc.stderr[-2000:])
            assert "Traceback" not in proc.stderr
            message = " ".join(proc.stderr.split())
            assert "--api-key-env" in message and "never passed as a model argument" in message, message
            assert not run.exists() or not _files_holding(run, KEY), arg
        assert not fake.openai.requests  # nothing ran


def test_the_missing_key_message_names_api_key_env_not_api_key(data_dir, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    proc = subprocess.run([sys.executable, "-m", "evals.cli", "run", "familytool-b", "--model", "openai:m",
                           "--limit", "1", "--run-dir", str(tmp_path / "run"), "--no-progress"],
                          capture_output=True, text=True, timeout=300, env=env)
    message = " ".join(proc.stderr.split())
    assert proc.returncode == 2, message
    assert "no API key for openai" in message and "--api-key-env" in message, message
    assert "api_key=" not in message, message


def test_no_key_or_token_is_written_by_a_run_or_its_report(data_dir, tmp_path):
    run = tmp_path / "run"
    with FakeProviderServer() as fake:
        fake.openai.respond_with(lambda body: openai_chat(text="an answer", usage=(10, 2)))
        proc = _run(fake.openai_base_url, run, "--api-key-env", "MY_TEST_KEY", "--server-token", TOKEN,
                    env={"MY_TEST_KEY": KEY})
        assert proc.returncode in (0, 1), proc.stderr[-3000:]
        # the key was used (sent to the stand-in), and is nowhere on disk
        assert fake.openai.requests
        assert all(r.headers.get("authorization") == f"Bearer {KEY}" for r in fake.openai.requests)
    report = tmp_path / "report"
    rep = _evals("report", str(run), "--out", str(report))
    assert rep.returncode == 0, rep.stderr[-3000:]
    assert {"report.md", "report.html", "report.json"} <= {f.name for f in report.iterdir()}
    assert (run / "config.json").is_file() and (run / "traces.jsonl").is_file()
    assert _files_holding(run, KEY, TOKEN) == []
    assert _files_holding(report, KEY, TOKEN) == []
    assert REDACTED in (run / "config.json").read_text()  # the token's place is marked


def test_the_python_api_redacts_what_the_command_line_refuses(tmp_path):
    config = {"benchmark": "b", "options": {"model_args": {"api_key": KEY, "seed": 0,
                                                           "default_headers": {"X-Api-Key": KEY}}},
              "run": {"server_token": TOKEN, "api_key_env": "MY_TEST_KEY", "max_tokens": 64}}
    RunDir(tmp_path / "run", config)
    again = RunDir(tmp_path / "run", config)  # resumes: the stored (redacted) config matches
    text = (tmp_path / "run" / "config.json").read_text()
    assert KEY not in text and TOKEN not in text
    assert again.config is not None and again.config["run"] == {"server_token": REDACTED,
                                                                  "api_key_env": "MY_TEST_KEY", "max_tokens": 64}
    assert again.config["options"]["model_args"]["seed"] == 0
    assert secret_paths(config) == ["options.model_args.api_key", "options.model_args.default_headers.X-Api-Key",
                                    "run.server_token"]
    assert redact_secrets({"hash_keys": ["a"], "tokens": 5, "note": KEY}) == {"hash_keys": ["a"], "tokens": 5,
                                                                             "note": REDACTED}
