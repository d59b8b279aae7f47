"""The MCP server: benchmark catalogs and the family KG as live MCP tools (stdio and streamable HTTP)."""

from .core import BenchmarkMount, EndpointNotFound, EndpointRef, ToolServer
from .http import ServerConfigError, check_bind, create_app, is_loopback, serve, serve_in_background
from .kg_tools import SEARCH_MODES, KGConfig, kg_tools
from .stdio import serve_stdio

__all__ = [
    "SEARCH_MODES",
    "BenchmarkMount",
    "EndpointNotFound",
    "EndpointRef",
    "KGConfig",
    "ServerConfigError",
    "ToolServer",
    "check_bind",
    "create_app",
    "is_loopback",
    "kg_tools",
    "serve",
    "serve_in_background",
    "serve_stdio",
]
