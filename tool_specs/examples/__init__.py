"""Example tool spec files (see README.md) and the Python code behind the ``python``-executor example."""

from pathlib import Path

#: The folder holding the example spec files; ``load_spec_dir(EXAMPLES_DIR)`` loads them all.
EXAMPLES_DIR: Path = Path(__file__).resolve().parent

__all__ = ["EXAMPLES_DIR"]
