#!/usr/bin/env bash
# One command for the main job: set up .venv (first time, or when pyproject.toml changed) and run `evals`.
#   ./run.sh                 -> evals serve  (MCP server on http://127.0.0.1:8765, embedded Kuzu KG;
#                               downloads the benchmark data on first use unless EVALS_DATA_DIR holds it)
#   ./run.sh <evals args>    -> evals <args>, e.g. ./run.sh data stats familytool-b
set -euo pipefail
cd "$(dirname "$0")"
# shellcheck source=scripts/env.sh
source scripts/env.sh
setup_venv ""
if [ $# -eq 0 ]; then set -- serve; fi
exec .venv/bin/evals "$@"
