"""The viewer as a local web app (Starlette): the page, its own assets, and the data as JSON.

``GET /`` is the single page (:file:`static/index.html`, with :file:`static/app.js` and
:file:`static/style.css`; nothing is fetched from anywhere else); ``GET /api/<path>`` answers the
data of a path of :class:`~.site.Site` (``/api/runs``, ``/api/run/<id>/tasks`` ...). Each request for
the runs list re-reads what changed in the run directories, so a run in progress shows its progress.
The page sets a Content-Security-Policy that allows scripts and styles from the app itself only.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from .site import NotFound, Site

__all__ = ["CSP", "STATIC_DIR", "make_app"]

STATIC_DIR = Path(__file__).parent / "static"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


def make_app(site: Site) -> Starlette:
    lock = asyncio.Lock()

    async def index(request: Request) -> Response:
        return FileResponse(STATIC_DIR / "index.html", headers={"Content-Security-Policy": CSP,
                                                                 "Cache-Control": "no-store"})

    async def api(request: Request) -> Response:
        path = request.path_params["path"]
        async with lock:  # one reader of the run files at a time; the work runs off the event loop
            try:
                if path == "runs":
                    await asyncio.to_thread(site.refresh)
                data = await asyncio.to_thread(site.page, path)
            except NotFound as exc:
                return JSONResponse({"error": str(exc)}, status_code=404)
            except (ValueError, OSError) as exc:
                return JSONResponse({"error": str(exc)}, status_code=400)
        return JSONResponse(data, headers={"Cache-Control": "no-store"})

    return Starlette(routes=[
        Route("/", index),
        Route("/api/{path:path}", api),
        Mount("/static", app=StaticFiles(directory=STATIC_DIR), name="static"),
    ])
