"""The official response-based matcher: both calls are sent to the live Booking API (RapidAPI host
``booking-com15``) and match when the answers are equal.

Off by default (``--rapidapi-matcher``): it costs money and the API is not reachable from every
machine. The key comes from ``$RAPID_API_KEY`` (the official variable); ``--rapidapi-url`` sends the
requests to another base URL (a mirror, or a local stand-in in tests). A request is sent as the
official code sends it: path parameters put into the URL, ``legs`` as JSON text, the rest as query
parameters; an answer with ``status: true`` loses its ``timestamp`` and is replaced by its ``data``;
a failed request is tried three times, then counts as no answer (no match).
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx2

__all__ = ["KEY_ENV", "RapidAPICompare"]

KEY_ENV = "RAPID_API_KEY"
_ATTEMPTS = 3


class RapidAPICompare:
    """``await compare(pred, gold)`` -> ``(matched, details)``; details hold both answers' status."""

    def __init__(self, tool_info: Mapping[str, Any], *, base_url: str | None = None, key: str | None = None,
                 timeout: float = 60.0):
        self.host = str(tool_info["host"])
        self.path_params = list(tool_info.get("path_params") or [])
        self.name_to_url = dict(tool_info["name_to_url"])
        self.base_url = base_url.rstrip("/") if base_url else None
        self.key = key if key is not None else os.environ.get(KEY_ENV)
        if not self.key:
            raise ValueError(f"the RapidAPI matcher needs a key in ${KEY_ENV}")
        self.timeout = timeout

    def request_of(self, call: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        url = self.name_to_url.get(call["name"])
        if url is None:
            raise KeyError(f"no Booking API URL for {call['name']!r}")
        params = copy.deepcopy(dict(call["arguments"]))
        fill = {p: params.pop(p) for p in self.path_params if f"{{{p}}}" in url and p in params}
        url = url.format(**fill)
        if self.base_url:
            parts = urlsplit(url)
            url = self.base_url + parts.path + (f"?{parts.query}" if parts.query else "")
        for k, v in params.items():
            if k == "legs":
                params[k] = json.dumps(v, ensure_ascii=False)
        return url, params

    async def answer(self, client: httpx2.AsyncClient, call: Mapping[str, Any]) -> Any:
        url, params = self.request_of(call)
        headers = {"X-RapidAPI-Key": str(self.key), "X-RapidAPI-Host": self.host}
        for _ in range(_ATTEMPTS):
            try:
                r = await client.get(url, headers=headers, params=params)
            except httpx2.HTTPError:
                continue
            if r.status_code != 200:
                continue
            body = r.json()
            if isinstance(body, dict) and body.get("status") is True:
                body.pop("timestamp", None)
                if "data" in body:
                    body = body["data"]
            return body
        return None

    async def __call__(self, pred: dict[str, Any], gold: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        async with httpx2.AsyncClient(timeout=self.timeout) as client:
            try:
                first = await self.answer(client, pred)
                if first == {}:
                    return False, {"matched": False, "reason": "the API answered the predicted call with {}"}
                second = await self.answer(client, gold)
            except (KeyError, ValueError) as exc:
                return False, {"matched": False, "reason": f"{type(exc).__name__}: {exc}"}
        if first is None or second is None:
            return False, {"matched": False, "reason": "the API gave no answer",
                           "pred_answered": first is not None, "gold_answered": second is not None}
        same = first == second
        return same, {"matched": same, "reason": "equal answers" if same else "different answers"}
