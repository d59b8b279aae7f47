"""Secrets never reach a file a run or a report writes.

A key, token, password or secret is named by the setting that holds it (``api_key``,
``server_token``, ``Authorization``, ``client_secret`` …, at any depth of a config) or recognised by
its form (``sk-…``, ``Bearer …``). :func:`redact_secrets` replaces each with :data:`REDACTED`;
``config.json`` (and ``config.history.jsonl``) and the reports (``report.md``/``.html``/``.json``)
are written from its output. :func:`secret_paths` lists what it would replace, for a command line
that refuses a secret before anything runs (``evals run --model-arg api_key=…``: the key goes in an
environment variable named by ``--api-key-env``).

A URL carries secrets too: the userinfo of ``https://user:pass@host/`` and query parameters named
like a key (``?key=``, ``api_key``, ``token``, ``sig``, ``password``, ``auth``, ``access_token`` …, any
case). :func:`redact_urls` replaces them in every URL of a text (``--base-url``, ``--mcp-server``, an
error message that quotes one); :func:`redact_secrets` applies it to every string it keeps.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["REDACTED", "redact_secrets", "redact_urls", "secret_paths"]

REDACTED = "<redacted>"
"""What a secret is replaced by."""

_SECRET_NAME = re.compile(
    r"(?:^|[_.-])(?:api[_-]?key|apikey|access[_-]?key|private[_-]?key|secret(?:[_-]?key)?|password|passwd"
    r"|passphrase|token|auth|authorization|bearer|credentials?|cookie|session[_-]?key)$"
    r"|^key$",
    re.IGNORECASE,
)
_SECRET_VALUE = re.compile(r"^(?:sk-|sk_live_|sk_test_|xox[abpr]-|ghp_|gho_|github_pat_|hf_|Bearer\s+\S)")


def redact_urls(text: str) -> str:
    """``text`` with the credentials of every URL in it redacted (userinfo, key-like query parameters):
    :func:`tool_specs.redact_urls`, imported only when ``text`` holds a URL (importing ``client.runs``
    loads no SDK; ``tool_specs`` does)."""
    if "://" not in text:
        return text
    from tool_specs import redact_urls as redact

    return redact(text)


def is_secret_name(name: str) -> bool:
    """Whether a setting called ``name`` holds a secret (``api_key``, ``x-api-key``, ``server_token``,
    ``password`` …; not ``max_tokens``, ``api_key_env`` or ``hash_keys``)."""
    return bool(_SECRET_NAME.search(name))


def looks_like_secret(value: str) -> bool:
    """Whether a string has the form of an API key or a bearer credential (``sk-…``, ``Bearer …``)."""
    return len(value) >= 12 and bool(_SECRET_VALUE.match(value))


def _hides(name: str | None, value: Any) -> bool:
    """Whether the whole ``value`` is a secret (a URL with credentials is not: they are cut out of it)."""
    if isinstance(value, str):
        return bool(value) and ((name is not None and is_secret_name(name)) or looks_like_secret(value))
    return name is not None and is_secret_name(name) and isinstance(value, int | float) and not isinstance(value, bool)


def redact_secrets(value: Any, name: str | None = None) -> Any:
    """``value`` (JSON-like) with every secret replaced by :data:`REDACTED` (a copy; ``value`` is not
    changed). A secret is a non-empty string (or number) under a secret-like key, or a string in the
    form of a key wherever it is."""
    if isinstance(value, dict):
        return {k: redact_secrets(v, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_secrets(v, name) for v in value]
    if _hides(name, value):
        return REDACTED
    return redact_urls(value) if isinstance(value, str) else value


def secret_paths(value: Any, prefix: str = "") -> list[str]:
    """The dotted paths of the secrets in ``value`` (what :func:`redact_secrets` would replace)."""
    out: list[str] = []

    def walk(v: Any, path: str, name: str | None) -> None:
        if isinstance(v, dict):
            for k, item in v.items():
                walk(item, f"{path}.{k}" if path else str(k), str(k))
        elif isinstance(v, list | tuple):
            for i, item in enumerate(v):
                walk(item, f"{path}[{i}]", name)
        elif _hides(name, v):
            out.append(path)

    walk(value, prefix, None)
    return out
