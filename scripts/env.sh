# Shared set-up for run.sh and test.sh (sourced, not executed).
# EVALS_DATA_DIR: the benchmark data; defaults to ../shared/data when that exists beside the checkout
# (otherwise evals uses the user cache and downloads what is missing on first use).
if [ -z "${EVALS_DATA_DIR:-}" ] && [ -d ../shared/data ]; then
  EVALS_DATA_DIR="$(cd ../shared/data && pwd)"
  export EVALS_DATA_DIR
fi

# setup_venv EXTRAS: create .venv and install the project (editable) with the given extras, again
# only when pyproject.toml or the extras changed since the last install.
setup_venv() {
  local extras="$1" py="${PYTHON:-python3}" spec="." stamp=".venv/.installed"
  [ -n "$extras" ] && spec=".[$extras]"
  if [ ! -x .venv/bin/python ]; then
    "$py" -m venv .venv
  fi
  local want
  want="$(sha256sum pyproject.toml | cut -d' ' -f1) $extras"
  if [ ! -f "$stamp" ] || ! grep -qxF -- "$want" "$stamp"; then
    .venv/bin/python -m pip install --quiet --upgrade pip >/dev/null
    # setuptools' "Editable installation" notice is information only, but pip shows it as a warning
    PYTHONWARNINGS="ignore:Editable installation:UserWarning" .venv/bin/python -m pip install --quiet -e "$spec"
    echo "$want" >> "$stamp"
  fi
}
