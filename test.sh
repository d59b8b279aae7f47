#!/usr/bin/env bash
# One command for the tests: set up .venv with the dev extras, lint, type-check, and run the whole suite
# (the KG and server tests run a second time on the LadybugDB engine).
set -euo pipefail
cd "$(dirname "$0")"
# shellcheck source=scripts/env.sh
source scripts/env.sh
setup_venv "dev,ladybug,ray"
.venv/bin/ruff check .
.venv/bin/mypy   # every package, strict (pyproject.toml [tool.mypy])
run_pytest() {
  local rc=0
  .venv/bin/python -m pytest "$@" || rc=$?
  # 5 = no tests collected: not a failure for an optional selection, but say so
  if [ "$rc" -eq 5 ]; then echo "pytest: no tests collected for: $*"; rc=0; fi
  return "$rc"
}
# one pytest worker per core (pytest-xdist): the suite is mostly subprocesses, servers and waits,
# so two workers on two cores take about 2/3 of the time of one; loadgroup keeps the tests of one
# xdist_group on one worker (the Ray tests share one local Ray head)
run_pytest -q -rf -n auto --dist loadgroup "$@"
if [ $# -eq 0 ]; then
  echo "== KG store and server tests on the LadybugDB engine =="
  EVALS_KG_ENGINE=ladybug run_pytest -q -rf -n auto tests/kg_store tests/server
fi
