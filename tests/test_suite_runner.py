"""test.sh names the tests that failed (issue 26, item 10): `-q` alone prints only dots and an F, so a
test that fails once on a loaded machine could not be told from the others."""

from __future__ import annotations

import re
from pathlib import Path

TEST_SH = Path(__file__).resolve().parent.parent / "test.sh"


def test_every_pytest_run_of_test_sh_names_failed_tests() -> None:
    runs = [line for line in TEST_SH.read_text().splitlines() if re.search(r"\brun_pytest\s+-", line)]
    assert len(runs) >= 2, runs  # the whole suite, and the KG/server tests on the second engine
    for line in runs:
        assert re.search(r"\s-r\w*f", line), f"test.sh runs pytest without -rf (failed tests unnamed): {line.strip()}"
