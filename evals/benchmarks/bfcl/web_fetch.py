"""BFCL's web-search backend (``WebSearchAPI``) in a holder process, its HTTP requests bounded.

BFCL's ``web_search`` module (imported out of the pinned wheel, :mod:`.wheel_code`) searches through
SerpAPI (the ``google-search-results`` package's ``GoogleSearch``, with the key BFCL reads from
``SERPAPI_API_KEY``) and fetches the pages a model asks for (``requests``, then ``html2text`` or
BeautifulSoup). Its code runs as it is; only the HTTP function both modules call, ``requests.get``,
is replaced in those two modules by :func:`bounded_get`, which sends the same request through
``requests`` with bounds, because a page is untrusted (the model picks its address, and a page
picks its redirects and its size):

* **addresses**: only a host whose every address is a public one (``ipaddress``'s ``is_global``),
  or the search endpoint's own origin (scheme, host, port: the endpoint is the user's setting, and a
  loopback stand-in of it serves its pages from there); a loopback, private, link-local or reserved
  address is refused, checked again at every redirect (the name is resolved before the request: a
  name that resolves differently a moment later is not caught);
* **redirects**: at most :data:`MAX_REDIRECTS`, each hop checked as above;
* **size**: at most :data:`MAX_BODY_BYTES` of the decoded body are read (the rest is not read: the
  page is cut there, and the result says so in its ``content``'s last line);
* **text only**: a response whose ``Content-Type`` is not text (``text/*``, JSON, XML, XHTML; none
  given counts as text) is refused before its body is read;
* **time**: a connect and a read timeout of :data:`TIMEOUT_S` each (BFCL asks for 20 s; the holder's
  deadline for a web call, :data:`.web_search.WEB_DEADLINE_S`, ends anything longer, BFCL's own retry
  loop on SerpAPI's 429 included).

The key never reaches a result: a failed request's text (which names the URL, SerpAPI's with the key
in its query) has the key replaced. A refusal is raised inside BFCL's code as ``requests`` raises its
errors, so BFCL turns it into the result it gives for any failure (``{"error": "An error occurred while fetching URL: ..."}`` for a
page; ``{"error": ...}`` for a search). This module imports no MCP code: the holder's zygote may.
"""

from __future__ import annotations

import importlib
import ipaddress
import os
import socket
import types
from collections.abc import Mapping
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests

from .wheel_code import import_module

__all__ = ["MAX_BODY_BYTES", "MAX_REDIRECTS", "TIMEOUT_S", "WEB_MODULE", "FetchRefused", "bounded_get",
           "web_operation"]

MAX_BODY_BYTES = 2 * 1024 * 1024  # decoded bytes of one response (a search answer or a page)
MAX_REDIRECTS = 5
TIMEOUT_S = 10.0
KEY_ENV = "SERPAPI_API_KEY"  # where BFCL's WebSearchAPI reads the key
WEB_MODULE = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code.web_search"
CUT_NOTE = "\n[... cut: the page is longer than {n} bytes, the harness's bound]"
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml+xml", "application/ld+json",
               "application/rss+xml", "application/atom+xml")


class FetchRefused(requests.RequestException):
    """A request this harness does not send or read (an address, a redirect, a type past its rule)."""


def _origin(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or (443 if scheme == "https" else 80)


def check_address(url: str, endpoint: str) -> None:
    """Refuse ``url`` unless it is on ``endpoint``'s origin or every address of its host is public."""
    scheme, host, port = _origin(url)
    if scheme not in ("http", "https") or not host:
        raise FetchRefused(f"not an http(s) URL with a host: {url[:200]}")
    if endpoint and (scheme, host, port) == _origin(endpoint):
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise FetchRefused(f"the host {host!r} could not be resolved ({exc})") from None
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if not address.is_global:
            raise FetchRefused(f"the host {host!r} has the non-public address {address}: refused (only public "
                               "addresses are fetched)")


def _is_text(content_type: str) -> bool:
    kind = content_type.split(";")[0].strip().lower()
    return not kind or kind.startswith(_TEXT_TYPES) or kind.endswith(("+xml", "+json"))


def bounded_get(url: str, params: Any = None, *, endpoint: str = "", headers: Mapping[str, str] | None = None,
                timeout: Any = None, allow_redirects: bool = True, **_: Any) -> requests.Response:
    """``requests.get`` within the module docstring's bounds (``timeout`` is BFCL's, capped)."""
    session = requests.Session()
    current, query = url, params
    try:
        for _hop in range(MAX_REDIRECTS + 1):
            check_address(current, endpoint)
            response = session.get(current, params=query, headers=dict(headers or {}), stream=True,
                                   allow_redirects=False, timeout=(TIMEOUT_S, TIMEOUT_S))
            if not (allow_redirects and response.is_redirect):
                break
            current, query = urljoin(response.url, response.headers.get("location", "")), None
            response.close()
        else:
            raise FetchRefused(f"more than {MAX_REDIRECTS} redirects from {url[:200]}: not followed")
        content_type = response.headers.get("content-type", "")
        if not _is_text(content_type):
            response.close()
            raise FetchRefused(f"the response is {content_type!r}, not text: not read")
        body, cut = bytearray(), False
        for chunk in response.iter_content(64 * 1024):
            body.extend(chunk)
            if len(body) > MAX_BODY_BYTES:
                del body[MAX_BODY_BYTES:]
                cut = True
                break
        response.close()
        if cut:
            body.extend(CUT_NOTE.format(n=MAX_BODY_BYTES).encode())
        response._content = bytes(body)  # what .text and .json() read
        response._content_consumed = True
        return response
    finally:
        session.close()


def _bounded_requests(endpoint: str) -> types.SimpleNamespace:
    """What BFCL's modules see as ``requests``: the same names, ``get`` bounded."""
    def get(url: str, params: Any = None, **kwargs: Any) -> requests.Response:
        try:
            return bounded_get(url, params, endpoint=endpoint, **kwargs)
        except requests.RequestException as exc:  # its text names the URL, SerpAPI's with the key in its query
            key = os.environ.get(KEY_ENV) or ""
            text = str(exc).replace(key, "<the key>") if key else str(exc)
            raise FetchRefused(text) from None

    return types.SimpleNamespace(get=get, HTTPError=requests.HTTPError, RequestException=requests.RequestException,
                                 exceptions=requests.exceptions)


def _web_module(endpoint: str) -> Any:
    """BFCL's ``web_search`` module, its (and SerpAPI's client's) ``requests`` bounded and SerpAPI's base
    URL set to ``endpoint``."""
    module: Any = import_module(WEB_MODULE)
    client: Any = importlib.import_module("serpapi.serp_api_client")
    module.requests = client.requests = _bounded_requests(endpoint)
    module.GoogleSearch.BACKEND = endpoint.rstrip("/")
    return module


def web_operation(op: Mapping[str, Any], sets: dict[str, Any]) -> dict[str, Any]:
    """``web_call`` in a holder process: the session's ``WebSearchAPI`` (made on first use and loaded as
    BFCL loads it, ``_load_scenario({"show_snippet": ...})``) runs one method, by BFCL's name."""
    key = str(op.get("key", ""))
    if op.get(KEY_ENV):
        os.environ[KEY_ENV] = str(op[KEY_ENV])  # where BFCL's code reads it (this holder's memory only)
    if key not in sets:
        module = _web_module(str(op.get("endpoint", "")))
        instance = module.WebSearchAPI()
        instance._load_scenario({"show_snippet": bool(op.get("show_snippet", True))})
        sets[key] = {"web": instance}
    instance = sets[key]["web"]
    name = str(op.get("name", ""))
    method = getattr(instance, name, None) if name and not name.startswith("_") else None
    try:
        if method is None:
            raise AttributeError(f"no function {op.get('served')}")
        return {"value": method(**dict(op.get("arguments") or {}))}  # rendered by the caller (.web_search)
    except Exception as exc:  # noqa: BLE001 - BFCL hands any failure back to the model as text
        return {"exception": str(exc)}
