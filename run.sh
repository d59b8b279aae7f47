#!/usr/bin/env bash
# One command for the main job: set up .venv (first time, or when pyproject.toml changed) and run `evals`.
#   ./run.sh                 -> evals serve  (MCP server on http://127.0.0.1:8765, embedded Kuzu KG;
#                               downloads the benchmark data on first use unless EVALS_DATA_DIR holds it)
#   ./run.sh <evals args>    -> evals <args>, e.g. ./run.sh data stats familytool-b
# Relative paths in the arguments (--run-dir, --tools-dir, ...) are relative to where you typed the
# command: the set-up runs in the checkout, `evals` in your directory. The data directory is found
# as `.venv/bin/evals` finds it ($EVALS_DATA_DIR, else ../shared/data beside the checkout, else the
# user cache).
set -euo pipefail
here="$(pwd)"
root="$(cd "$(dirname "$0")" && pwd)"
cd "$root"
# shellcheck source=scripts/env.sh
source scripts/env.sh
setup_venv ""
cd "$here"
if [ $# -eq 0 ]; then set -- serve; fi
exec "$root/.venv/bin/evals" "$@"
