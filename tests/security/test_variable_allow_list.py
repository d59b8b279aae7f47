"""``${NAME}`` in a task file or a scripted model's file reads the environment only for the names the
user allows (issue 46, item 11): secrets whose names pass the secret-name check (``PGPASSWORD``,
``DATABASE_URL``) are not defined unless allowed; ``--var`` works as before."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from client.adapters.replay import ReplayAdapter
from evals.cli import main

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "docs" / "examples" / "family" / "tools"
SECRETS = {"PGPASSWORD": "pg-secret-value", "DATABASE_URL": "postgres://u:db-secret-value@h/db"}


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)


def _task_file(tmp_path: Path) -> Path:
    path = tmp_path / "t.yaml"
    path.write_text("- id: a\n  query: Book ${PLACE} for 2.\n"
                    "  calls: [{name: book_restaurant, arguments: {restaurant: '${PLACE}', people: 2}}]\n"
                    "- id: b\n  query: Connect to ${DATABASE_URL} with ${PGPASSWORD}.\n  answer: x\n")
    return path


def test_a_task_file_reads_no_environment_variable_the_user_did_not_allow(secrets: None, tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = _task_file(tmp_path)
    capsys.readouterr()
    assert main(["run", "taskfile", "--tasks", str(path), "--tools-dir", str(TOOLS), "--var", "PLACE=restaurant_0001",
                 "--model", "oracle", "--run-dir", str(tmp_path / "r"), "--no-progress"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"{path}:5: task 'b': query: ${{DATABASE_URL}} is not defined" in err
    assert "--allow-env DATABASE_URL" in err and "Traceback" not in err
    assert all(value not in err for value in SECRETS.values()) and not (tmp_path / "r").exists()


def test_an_allowed_name_is_read_and_recorded_as_a_digest(secrets: None, tmp_path: Path) -> None:
    path = _task_file(tmp_path)
    run = tmp_path / "r"
    assert main(["run", "taskfile", "--tasks", str(path), "--tools-dir", str(TOOLS), "--var", "PLACE=restaurant_0001",
                 "--allow-env", "DATABASE_URL", "--allow-env", "PGPASSWORD", "--model", "oracle", "--run-dir", str(run),
                 "--no-progress"]) == 0
    config = json.loads((run / "config.json").read_text())
    assert config["options"]["allow_env"] == ["DATABASE_URL", "PGPASSWORD"]
    assert config["variables"]["PGPASSWORD"] == {"from": "environment",
                                                 "sha256": hashlib.sha256(b"pg-secret-value").hexdigest()}
    assert "pg-secret-value" not in (run / "config.json").read_text()


def test_a_scripted_models_file_reads_only_allowed_names(secrets: None, tmp_path: Path) -> None:
    path = tmp_path / "replay.jsonl"
    path.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"},
                                             {"role": "assistant", "content": "${PGPASSWORD}"}]}) + "\n")
    with pytest.raises(ValueError, match=r"line 1: \$\{PGPASSWORD\} is not defined"):
        ReplayAdapter(str(path))
    assert ReplayAdapter(str(path), allow_env=["PGPASSWORD"]).turns["hi"][0]["content"] == "pg-secret-value"
    assert ReplayAdapter(str(path), variables={"PGPASSWORD": "given"}).turns["hi"][0]["content"] == "given"
