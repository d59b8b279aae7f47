"""``evals view --export OUT`` and ``evals export -o DIR`` never write through a link in the output
folder (issue 46, item 6): the files are written into a fresh folder and moved into place; a link in
place of a file is replaced (its target untouched), a link in place of a folder (or OUT itself) is
refused with one line, exit 2, nothing written through it."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.cli import main

ROOT = Path(__file__).resolve().parents[2]
FAMILY = ROOT / "docs" / "examples" / "family"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("runs") / "oracle"
    tasks = path.parent / "t.yaml"
    tasks.write_text("- id: a\n  query: Book restaurant_0001 for 2 people.\n"
                     "  calls: [{name: book_restaurant, arguments: {restaurant: restaurant_0001, people: 2}}]\n")
    assert main(["run", "taskfile", "--tasks", str(tasks), "--tools-dir", str(FAMILY / "tools"), "--model", "oracle",
                 "--run-dir", str(path), "--no-progress"]) == 0
    return path


def _victims(tmp_path: Path) -> tuple[Path, Path]:
    mine = tmp_path / "my-file.txt"
    mine.write_text("the user's own\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    return mine, elsewhere


def test_view_export_replaces_a_link_to_a_file_and_refuses_a_linked_folder(run: Path, tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    mine, elsewhere = _victims(tmp_path)
    out = tmp_path / "site"
    out.mkdir()
    (out / "index.html").symlink_to(mine)
    assert main(["view", str(run), "--export", str(out)]) == 0
    assert mine.read_text() == "the user's own\n"
    assert not (out / "index.html").is_symlink() and "<html" in (out / "index.html").read_text().lower()

    (out / "index.html").unlink()
    (out / "index.html").symlink_to(mine)
    (out / "static").rename(tmp_path / "old-static")
    (out / "static").symlink_to(elsewhere)
    capsys.readouterr()
    assert main(["view", str(run), "--export", str(out)]) == 2
    err = capsys.readouterr().err
    assert "static" in err and "symbolic link" in err and "Traceback" not in err
    assert list(elsewhere.iterdir()) == [] and mine.read_text() == "the user's own\n"

    linked = tmp_path / "linked-site"
    linked.symlink_to(elsewhere)
    assert main(["view", str(run), "--export", str(linked)]) == 2
    assert list(elsewhere.iterdir()) == []


def test_export_replaces_a_link_to_a_file_and_refuses_a_linked_folder(run: Path, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    mine, elsewhere = _victims(tmp_path)
    out = tmp_path / "preds"
    out.mkdir()
    (out / "predictions.jsonl").symlink_to(mine)
    assert main(["export", str(run), "--format", "jsonl", "-o", str(out)]) == 0
    assert mine.read_text() == "the user's own\n"
    assert '"id": "a"' in (out / "predictions.jsonl").read_text()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # the fresh folder is gone

    linked = tmp_path / "linked-preds"
    linked.symlink_to(elsewhere)
    capsys.readouterr()
    assert main(["export", str(run), "--format", "jsonl", "-o", str(linked)]) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert list(elsewhere.iterdir()) == []
    single = tmp_path / "one.jsonl"
    single.symlink_to(mine)
    assert main(["export", str(run), "--format", "jsonl", "-o", str(single)]) == 2
    assert mine.read_text() == "the user's own\n"
