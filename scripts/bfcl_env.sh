#!/usr/bin/env bash
# BFCL's pinned wheel and its own checker, for the BFCL tests (tests/evals/benchmarks/bfcl), apart from the project:
#
#   .ci/bfcl-wheel/bfcl_eval-2026.3.23-py3-none-any.whl   pip download --no-deps (from PyPI, as `evals data fetch bfcl`
#                                                          would get it; the tests check its sha256 like any data file)
#   .ci/bfcl-venv/                                         a venv with that wheel installed --no-deps, plus filelock,
#                                                          mpmath (its MathAPI backend) and tenacity (imported by the
#                                                          module with its FC decoding), tree-sitter and its Java and
#                                                          JavaScript grammars (its prompting decoders' parsers), the
#                                                          packages its checkers' imports need; bfcl-eval's own pins: numpy 1.26.4 and the
#                                                          model SDKs are not installed)
#
# Both are gitignored; a finished venv (it imports the checker's modules) is reused. Progress goes to stderr.
# Environment: PYTHON (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
version=2026.3.23
py="${PYTHON:-python3}"
wheel=".ci/bfcl-wheel/bfcl_eval-$version-py3-none-any.whl"
if [ ! -f "$wheel" ]; then
  echo "[bfcl env] pip download bfcl-eval==$version" >&2
  "$py" -m pip download --quiet --no-deps "bfcl-eval==$version" -d .ci/bfcl-wheel >&2
fi
check="import bfcl_eval.utils, bfcl_eval.constants.enums, bfcl_eval.constants.type_mappings, mpmath, tenacity, tree_sitter_java, tree_sitter_javascript"
if ! .ci/bfcl-venv/bin/python -c "$check" 2>/dev/null; then
  echo "[bfcl env] creating .ci/bfcl-venv" >&2
  rm -rf .ci/bfcl-venv
  "$py" -m venv .ci/bfcl-venv
  .ci/bfcl-venv/bin/python -m pip install --quiet --no-deps "$wheel" "filelock==3.20.0" "mpmath==1.4.1" "tenacity==9.1.2" \
    "tree_sitter==0.21.3" "tree-sitter-java==0.21.0" "tree-sitter-javascript==0.21.4" >&2
  .ci/bfcl-venv/bin/python -c "$check"
fi
