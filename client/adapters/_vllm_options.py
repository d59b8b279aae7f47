"""The options of the ``vllm:`` adapter: checking each one (types, unknown keys, with the list of
the accepted ones), ``extra_args`` as a list, the machine settings that may come from the environment
and the warning for the variables that no longer set options. Used by
:class:`client.adapters.vllm_adapter.VLLMAdapter`."""

from __future__ import annotations

import inspect
import logging
import os
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "ENV_EXECUTABLE",
    "ENV_LOG",
    "ENV_STARTUP_TIMEOUT",
    "accepted_options",
    "check_option",
    "check_unknown_options",
    "extra_args_list",
    "warn_removed_env",
]

log = logging.getLogger("client.adapters.vllm_adapter")  # the adapter's warnings, under the adapter's name

# Machine settings (paths and waiting): they do not change results, so they may come from the environment.
ENV_EXECUTABLE = "EVALS_VLLM_EXECUTABLE"
ENV_LOG = "EVALS_VLLM_LOG"
ENV_STARTUP_TIMEOUT = "EVALS_VLLM_STARTUP_TIMEOUT"

#: Variables that used to set options that change results, and the ``--model-arg`` key for each now.
_REMOVED_ENV = {
    "EVALS_VLLM_TOOL_PARSER": "tool_parser=NAME",
    "EVALS_VLLM_CHAT_TEMPLATE": "chat_template=FILE_OR_NAME",
    "EVALS_VLLM_DEVICE": "device=cpu|cuda|auto",
    "EVALS_VLLM_ARGS": "extra_args='--max-model-len 4096 ...'",
    "EVALS_VLLM_OPTIONS": "KEY=VALUE, once per option",
}
_warned_env: set[str] = set()


def warn_removed_env() -> None:
    for var, replacement in _REMOVED_ENV.items():
        if os.environ.get(var, "").strip() and var not in _warned_env:
            _warned_env.add(var)
            log.warning(
                "$%s is no longer read (it changed results without being recorded); "
                "give the option instead: evals run ... --model-arg %s",
                var,
                replacement,
            )


def extra_args_list(value: object) -> list[str]:
    """``extra_args`` as a list: a string (``--model-arg extra_args='--max-model-len 4096'``) is split
    like a shell command line; a list's items may be numbers (``["--max-model-len", 4096]``)."""
    if isinstance(value, str):
        return shlex.split(value)
    if isinstance(value, Sequence) and all(isinstance(a, str | int | float) and not isinstance(a, bool) for a in value):
        return [str(a) for a in value]
    raise ValueError(f"extra_args must be a list of vllm serve arguments or one string of them, got {value!r}")


def check_option(name: str, value: object, *types: type) -> None:
    if value is not None and (not isinstance(value, types) or (isinstance(value, bool) and bool not in types)):
        wanted = " or ".join(t.__name__ for t in types)
        raise ValueError(f"vllm adapter option {name} must be {wanted}, got {value!r}")



def accepted_options(adapter: type) -> list[str]:
    """The option names the ``vllm:`` adapter accepts (``--model-arg`` keys): :class:`VLLMAdapter`'s own
    parameters and those of the internal OpenAIAdapter it passes on."""
    from client.adapters.openai_adapter import OpenAIAdapter

    own = set(inspect.signature(adapter).parameters) - {"model", "openai_options"}
    passed_on = set(inspect.signature(OpenAIAdapter).parameters) - {"model", "base_url", "name_prefix"}
    return sorted(own | passed_on)


def check_unknown_options(openai_options: Mapping[str, Any], adapter: type) -> None:
    """``ValueError`` listing the accepted options (:func:`accepted_options` of ``adapter``) when
    ``openai_options`` holds a key the internal OpenAIAdapter does not take."""
    from client.adapters.openai_adapter import OpenAIAdapter

    passed_on = set(inspect.signature(OpenAIAdapter).parameters) - {"model", "base_url", "name_prefix"}
    unknown = sorted(set(openai_options) - passed_on)
    if unknown:
        raise ValueError(
            f"unknown vllm adapter option(s) {unknown} (evals run: --model-arg KEY=VALUE); "
            f"accepted: {', '.join(accepted_options(adapter))}"
        )
