"""A plain HTTP server on 127.0.0.1 for the tests: a stand-in for a files host (PyPI, GitHub, the Hub)
or for an API. Importable from every test folder (``tests/client`` is on pytest's ``pythonpath``)."""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["serve_directory", "serve_http"]


@contextlib.contextmanager
def serve_http(handler: Callable[..., http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` served on a free loopback port, in a thread: its base URL, then shut down."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


@contextlib.contextmanager
def serve_directory(root: Path) -> Iterator[str]:
    """The files under ``root`` served as a static host (no request log): its base URL."""
    handler: Any = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a, **k: None
    with serve_http(handler) as url:
        yield url
