"""The MCP server: benchmark catalogs and the family KG as live MCP tools (stdio and streamable HTTP).

Modules, low to high: ``kg_tools`` (the KG as tools), ``names`` (prefix completion), ``prompts`` and
``resources`` (what a benchmark offers besides tools), ``surface`` (resources, prompts, completions,
logging and subscriptions as MCP handlers), ``middleware``, ``core`` (``ToolServer``: endpoints, sessions,
``tools/list`` and ``tools/call``), ``http_errors`` and ``http`` (the Starlette app, auth, uvicorn), ``stdio``,
``worker_routing`` (one port served by several processes, each session kept on its own), ``mcp_sources`` (MCP servers as the user names them), ``upstream`` (another MCP server's tools, proxied) and ``recording`` (its responses recorded and replayed). Every
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
    SessionLimits,
    ToolServer,
    current_endpoint,
    named_session,
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
from .http_errors import BareMCP, rpc_not_found
from .http_modern import ModernEntry
from .kg_tools import SEARCH_MODES, BoundExecutor, KGConfig, kg_tools
from .loopback import bind_host, host_security, is_ip_literal, loopback_security
from .mcp_sources import McpSource, McpSourceError, load_mcp_config, parse_mcp_server
from .middleware import NonObjectArgumentsMiddleware, NullInputResponsesMiddleware, RequestChecksMiddleware
from .names import MAX_COMPLETIONS, Matches, NameIndex
from .prompts import TASK_ARGUMENT, Completes, PromptArgument, PromptError, PromptSpec
from .recording import CallRecording, RecordedExecutor, Recording, read_recording, replay_specs
from .resources import MAX_RELATION_FACTS, RESOURCE_NOT_FOUND, KGResources, ParsedURI, parse_uri
from .serve_workers import WorkerStartError, serve_workers, share_limits
from .stdio import serve_stdio
from .surface import (
    KG_WRITE_TOOLS,
    LOG_LEVELS,
    MAX_SUBSCRIPTION_URI_CHARS,
    MAX_SUBSCRIPTIONS_PER_SESSION,
    MAX_SUBSCRIPTIONS_TOTAL,
    Surface,
)
from .upstream import (
    UPSTREAM_UNAVAILABLE,
    ProxyExecutor,
    UpstreamConnection,
    UpstreamUnavailable,
    list_all_tools,
    listed_specs,
    open_sources,
    result_from_mcp,
    tool_spec_of,
    upstream_specs,
)
from .worker_routing import (
    LOST_CODE,
    WORKER_HEADER,
    Router,
    SessionLedger,
    peer_listener,
    reuseport_socket,
    serve_routed,
)

__all__ = [
    "KG_WRITE_TOOLS",
    "LOG_LEVELS",
    "MAX_SUBSCRIPTIONS_PER_SESSION",
    "MAX_SUBSCRIPTIONS_TOTAL",
    "MAX_SUBSCRIPTION_URI_CHARS",
    "MAX_COMPLETIONS",
    "MAX_RELATION_FACTS",
    "RESOURCE_NOT_FOUND",
    "Completes",
    "KGResources",
    "Matches",
    "NameIndex",
    "ParsedURI",
    "PromptArgument",
    "PromptError",
    "PromptSpec",
    "Surface",
    "TASK_ARGUMENT",
    "BareMCP",
    "rpc_not_found",
    "parse_uri",
    "DEFAULT_PAGE_SIZE",
    "MAX_SESSION_STATES",
    "MAX_TOOL_NAME_LENGTH",
    "SEARCH_MODES",
    "SERVER_NAME",
    "TOKEN_ENV",
    "UPSTREAM_UNAVAILABLE",
    "BenchmarkMount",
    "BoundExecutor",
    "CallRecording",
    "EndpointNotFound",
    "EndpointRef",
    "HTTPLimits",
    "KGConfig",
    "McpSource",
    "McpSourceError",
    "ModernEntry",
    "NonObjectArgumentsMiddleware",
    "ProxyExecutor",
    "RecordedExecutor",
    "Recording",
    "NullInputResponsesMiddleware",
    "RequestChecksMiddleware",
    "ServerConfigError",
    "SessionLimits",
    "ToolServer",
    "UpstreamConnection",
    "UpstreamUnavailable",
    "bind_socket",
    "check_bind",
    "check_token",
    "create_app",
    "current_endpoint",
    "bind_host",
    "host_security",
    "is_ip_literal",
    "is_loopback",
    "kg_tools",
    "list_all_tools",
    "listed_specs",
    "load_mcp_config",
    "open_sources",
    "parse_mcp_server",
    "read_recording",
    "replay_specs",
    "result_from_mcp",
    "loopback_security",
    "serve",
    "serve_in_background",
    "serve_stdio",
    "tool_spec_of",
    "upstream_specs",
    "uvicorn_config",
    "wait_started",
    "WORKER_HEADER",
    "WorkerStartError",
    "serve_workers",
    "share_limits",
    "LOST_CODE",
    "Router",
    "SessionLedger",
    "peer_listener",
    "named_session",
    "reuseport_socket",
    "serve_routed",
]
