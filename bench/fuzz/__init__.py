"""A differential fuzzer against the benchmarks' official scoring code (issue 47).

`python -m bench.fuzz --bench NAME --files N --seed S` generates N unusual input files for one
benchmark's import format, scores each with the official code (fetched at a pinned commit and run in
its own environment, outside this repository) and with `evals score --format <bench>-official`, and
prints how many numbers were equal, loud, silent or crashed. One module per benchmark beside this
file implements `Target` (see `outcome.py`). Not run in CI: its findings become committed fixtures.
"""
