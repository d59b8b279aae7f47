"""The MCP server: benchmark catalogs and the family KG as live MCP tools (stdio and streamable HTTP).

Modules, low to high: ``kg_tools`` (the KG as tools), ``core`` (``ToolServer``: endpoints, sessions,
``tools/list`` and ``tools/call``), ``http`` (the Starlette app, auth, uvicorn) and ``stdio``. Every
name in a module's ``__all__`` is re-exported here. The server imports no benchmark module and
nothing from ``client`` or ``evals`` (``tests/test_architecture.py`` checks it).
"""

from .core import (
    DEFAULT_PAGE_SIZE,
    MAX_SESSION_STATES,
    MAX_TOOL_NAME_LENGTH,
    SERVER_NAME,
    BenchmarkMount,
    EndpointNotFound,
    EndpointRef,
    NonObjectArgumentsMiddleware,
    SessionLimits,
    ToolServer,
    current_endpoint,
)
from .http import (
    TOKEN_ENV,
    HTTPLimits,
    ServerConfigError,
    bind_socket,
    check_bind,
    check_token,
    create_app,
    is_loopback,
    serve,
    serve_in_background,
    uvicorn_config,
    wait_started,
)
from .kg_tools import SEARCH_MODES, BoundExecutor, KGConfig, kg_tools
from .loopback import loopback_security
from .stdio import serve_stdio

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "MAX_SESSION_STATES",
    "MAX_TOOL_NAME_LENGTH",
    "SEARCH_MODES",
    "SERVER_NAME",
    "TOKEN_ENV",
    "BenchmarkMount",
    "BoundExecutor",
    "EndpointNotFound",
    "EndpointRef",
    "HTTPLimits",
    "KGConfig",
    "NonObjectArgumentsMiddleware",
    "ServerConfigError",
    "SessionLimits",
    "ToolServer",
    "bind_socket",
    "check_bind",
    "check_token",
    "create_app",
    "current_endpoint",
    "is_loopback",
    "kg_tools",
    "loopback_security",
    "serve",
    "serve_in_background",
    "serve_stdio",
    "uvicorn_config",
    "wait_started",
]
