"""The viewer as a local web app (Starlette): the page, its own assets, and the data as JSON.

``GET /`` is the single page (:file:`static/index.html`, with :file:`static/app.js` and
:file:`static/style.css`; nothing is fetched from anywhere else); ``GET /api/<path>`` answers the
data of a path of :class:`~.site.Site` (``/api/runs``, ``/api/run/<id>/tasks`` ...). Each request for
the runs list re-reads what changed in the run directories, so a run in progress shows its progress.
The page sets a Content-Security-Policy that allows scripts and styles from the app itself only.

Web pages reach a local port: every request's ``Host`` is checked against DNS rebinding, ``/api/``
refuses requests made by other sites' pages, and JSON never holds ``NaN`` (see :class:`_RequestGuard`,
:class:`FiniteJSONResponse`).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from server.loopback import host_security, is_ip_literal, is_loopback

from .jsonsafe import dumps_finite
from .site import NotFound, Site

__all__ = ["CSP", "STATIC_DIR", "FiniteJSONResponse", "make_app"]

log = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).parent / "static"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
_SAME_SITE_FETCHES = frozenset({"same-origin", "none"})  # Sec-Fetch-Site of the page itself, or typed in


class FiniteJSONResponse(JSONResponse):
    """JSON with no ``NaN``/``Infinity`` (written ``null``), whatever a run's files held."""

    def render(self, content: Any) -> bytes:
        return dumps_finite(content, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


class _RequestGuard:
    """Every request's ``Host`` checked as the MCP server checks it (:func:`server.loopback.host_security`:
    on a loopback bind it must name a loopback address, so a web page that rebinds its own DNS name to
    127.0.0.1 is refused); on ``/api/`` a request another site's page makes is refused too (an ``Origin``
    other than the viewer's own, or a ``Sec-Fetch-Site`` other than same-origin), so no page elsewhere,
    on this machine's other ports included, reads the runs or spends the viewer's time."""

    def __init__(self, app: ASGIApp, host: str):
        self.app = app
        self.host_check = TransportSecurityMiddleware(host_security(host))
        self.public_bind = None if is_loopback(host) else host.lower()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            request = Request(scope)
            refused = await self.host_check.validate_request(request)
            if refused is None and self.public_bind is not None:
                refused = self._public_host(request)
            if refused is None and scope["path"].startswith("/api/"):
                refused = _cross_site(request)
            if refused is not None:
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)


    def _public_host(self, request: Request) -> Response | None:
        """On a public bind (no bearer token here, unlike ``evals serve``'s): a ``Host`` that is an
        address, ``localhost`` or the bound name; a DNS name a page could rebind is refused."""
        host = request.headers.get("host", "")
        name = host[:host.find("]") + 1] if host.startswith("[") else host.rpartition(":")[0] or host
        if is_ip_literal(name) or name.lower() in ("localhost", self.public_bind):
            return None
        return Response("Invalid Host header", status_code=421)


def _cross_site(request: Request) -> Response | None:
    origin = request.headers.get("origin")
    own = f"{request.url.scheme}://{request.headers.get('host', '')}"
    if origin is not None and origin != own:
        return JSONResponse({"error": "refused: a request from another origin"}, status_code=403)
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site not in _SAME_SITE_FETCHES:
        return JSONResponse({"error": "refused: a request from another site"}, status_code=403)
    return None


def make_app(site: Site, host: str = "127.0.0.1") -> ASGIApp:
    """The app for a server bound to ``host`` (whose Host headers it accepts)."""
    lock = asyncio.Lock()

    async def index(request: Request) -> Response:
        return FileResponse(STATIC_DIR / "index.html", headers={"Content-Security-Policy": CSP,
                                                                 "Cache-Control": "no-store"})

    async def favicon(request: Request) -> Response:  # what a browser asks for first, whatever the page says
        return FileResponse(STATIC_DIR / "favicon.ico", media_type="image/vnd.microsoft.icon",
                            headers={"Cache-Control": "max-age=86400"})

    async def api(request: Request) -> Response:
        path = request.path_params["path"]
        async with lock:  # one reader of the run files at a time; the work runs off the event loop
            try:
                if path == "runs":
                    await asyncio.to_thread(site.refresh)
                data = await asyncio.to_thread(site.page, path)
            except NotFound as exc:
                return FiniteJSONResponse({"error": str(exc)}, status_code=404)
            except (ValueError, OSError) as exc:
                return FiniteJSONResponse({"error": str(exc)}, status_code=400)
            except Exception as exc:  # one damaged page: an error for it, the others still served
                log.exception("evals view: /api/%s failed", path[:200])
                return FiniteJSONResponse({"error": f"{type(exc).__name__}: {exc}"}, status_code=500)
        return FiniteJSONResponse(data, headers={"Cache-Control": "no-store"})

    app = Starlette(routes=[
        Route("/", index),
        Route("/favicon.ico", favicon),
        Route("/api/{path:path}", api),
        Mount("/static", app=StaticFiles(directory=STATIC_DIR), name="static"),
    ])
    return _RequestGuard(app, host)
