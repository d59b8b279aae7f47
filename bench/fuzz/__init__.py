"""A differential fuzzer against the benchmarks' official scoring code (issue 47).

`python -m bench.fuzz --bench NAME --files N --seed S` generates N unusual input files for one
benchmark's import format, scores each with the official code (fetched at a pinned commit and run in
its own environment, outside this repository) and with `evals score --format <bench>-official`, and
prints how many numbers were equal, loud, silent or crashed. One module per benchmark beside this
file implements `Target` (see `outcome.py`); our side is the driver's unless the module has its own
`run_ours`. Not run in CI: its findings become committed fixtures.

Shared pieces for a benchmark module: `checkout.prepare_official` (the official code at a commit, its
venv), `ours.evals_score` (our side: `evals ...` in one long-lived child process, the one such
mechanism: `ours.LineServer`), `official_run` (the official code: a driver per case, or one served from
its venv, as `ultratool_official.py` and `nestools_official.py` are), `weird` (odd values and layouts).
Results and commands: docs/fidelity.md, "The differential fuzzer".
"""
