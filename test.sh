#!/usr/bin/env bash
# One command for the tests: set up .venv with the dev extras, lint, type-check, and run the suite
# (the KG and server tests run a second time on the LadybugDB engine).
#   ./test.sh                    everything (long: see the README for how long on 2 cores)
#   ./test.sh --quick            lint, types and the few-minute subset in tests/quick.txt (every package)
#   ./test.sh tests/server ...   lint, types and the tests named (pytest arguments)
# SIGTERM or Ctrl-C stops pytest cleanly (fixtures torn down, exit status 143).
set -euo pipefail
cd "$(dirname "$0")"
# shellcheck source=scripts/env.sh
source scripts/env.sh
quick=0
if [ "${1:-}" = "--quick" ]; then
  quick=1
  shift
  # tests/quick.txt: one test file (or node id) a line; '#' starts a comment
  mapfile -t picked < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^[[:space:]]*$/d' tests/quick.txt)
  set -- "$@" "${picked[@]}"
fi
start=$SECONDS
step() { echo "== $1 ($(( (SECONDS - start) / 60 )) min $(( (SECONDS - start) % 60 )) s so far)"; }
step "set-up"
setup_venv "dev,ladybug,ray,bfcl-web"
step "ruff"
.venv/bin/ruff check .
step "mypy"
.venv/bin/mypy   # every package, strict (pyproject.toml [tool.mypy])
child=""
# pytest runs in the background so that a signal to this script reaches it: bash defers a trap until
# a foreground child exits, and without a trap it dies and leaves pytest running on its own
stop() {
  trap - TERM INT
  if [ -n "$child" ]; then
    # pytest and its xdist workers: each tears its fixtures down (tests/conftest.py)
    kill -TERM $(pgrep -P "$child" 2>/dev/null) "$child" 2>/dev/null || true
    wait "$child" 2>/dev/null || true
  fi
  echo "test.sh: stopped after $(( (SECONDS - start) / 60 )) min $(( (SECONDS - start) % 60 )) s"
  exit 143
}
trap stop TERM INT
run_pytest() {
  local rc=0
  .venv/bin/python -m pytest "$@" &
  child=$!
  wait "$child" || rc=$?
  child=""
  # 5 = no tests collected: not a failure for an optional selection, but say so
  if [ "$rc" -eq 5 ]; then echo "pytest: no tests collected for: $*"; rc=0; fi
  return "$rc"
}
# one pytest worker per core (pytest-xdist): the suite is mostly subprocesses, servers and waits,
# so two workers on two cores take about 2/3 of the time of one; loadgroup keeps the tests of one
# xdist_group on one worker (the Ray tests share one local Ray head)
if [ "$quick" -eq 1 ]; then step "pytest: the quick subset (tests/quick.txt)"; else step "pytest${1:+ $*}"; fi
run_pytest -q -rf -n auto --dist loadgroup "$@"
if [ $# -eq 0 ]; then
  step "KG store and server tests on the LadybugDB engine"
  EVALS_KG_ENGINE=ladybug run_pytest -q -rf -n auto tests/kg_store tests/server
fi
step "all passed"
