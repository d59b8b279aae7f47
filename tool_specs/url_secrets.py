"""Credentials inside URLs: the userinfo and key-like query parameters, cut out of every URL of a text.

A ``--base-url``, ``--mcp-server`` or ``--server-url`` may carry a secret: ``https://user:pass@host/``
or ``...?api_key=...``. :func:`redact_urls` replaces the userinfo and the value of each query parameter
named like a key (``key``, ``api_key``, ``token``, ``secret``, ``sig``, ``password``, ``auth``,
``access_token`` …, any case) with ``<redacted>``. It is the one function that does it: the client's
``redact_secrets`` (config files, reports) applies it to every string, and messages that name a URL
(start-up errors, a tool server's description, the run's error lines) pass through it.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

__all__ = ["URL_REDACTED", "redact_urls"]

URL_REDACTED = "<redacted>"
"""What a credential inside a URL is replaced by."""

_SECRET_NAME = re.compile(
    r"(?:^|[_.-])(?:key|api[_-]?key|apikey|access[_-]?key|private[_-]?key|secret(?:[_-]?key)?|password|passwd|pass|pwd"
    r"|passphrase|token|auth|authorization|bearer|credentials?|cookie|session|sig|signature|code"
    r"|x-amz-security-token)$",
    re.IGNORECASE,
)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^/?#]*)@")
_QUERY_PAIR = re.compile(r"([?&;])([^=&;#]*)=([^&;#]*)")


def _query_secret(name: str) -> bool:
    plain = unquote(name).strip()
    return bool(_SECRET_NAME.search(plain))


def _redact_url(url: str) -> str:
    url = _USERINFO.sub(lambda m: f"{m.group(1)}{URL_REDACTED}@", url, count=1)
    if "?" not in url:
        return url
    head, _, rest = url.partition("?")
    rest = _QUERY_PAIR.sub(
        lambda m: f"{m.group(1)}{m.group(2)}={URL_REDACTED}" if m.group(3) and _query_secret(m.group(2)) else m.group(0),
        "?" + rest,
    )
    return head + rest


def redact_urls(text: str) -> str:
    """``text`` with the credentials of every URL in it replaced by :data:`URL_REDACTED`: the userinfo
    (``user:pass@``) and the value of each query parameter named like a key (``key``, ``api_key``,
    ``token``, ``secret``, ``sig``, ``password``, ``auth``, ``access_token`` …, any case). A text
    without ``://`` is returned as it is."""
    if "://" not in text:
        return text
    return _URL.sub(lambda m: _redact_url(m.group(0)), text)
