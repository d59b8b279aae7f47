"""The evaluation client: drives a model through MCP tool sessions and records every episode.

Modules: ``messages`` (provider-neutral messages, tool calls, responses), ``adapters`` (one
interface over OpenAI-compatible, Anthropic and vLLM models; :func:`make_adapter`), ``retry``,
``ratelimit``, ``breaker`` (stops a run on errors that will repeat), ``cache`` (the response
cache), ``model`` (the one wrapper of every model call: cache, rate limit, retries, cost),
``runs`` (run directories, traces and the episode recorder), ``mcp_session`` (MCP sessions to the
tool server), ``agent`` (the tool-use loop of one episode), ``runner``, ``run_control``
(a run's budget, interrupt and result) and ``progress`` (many episodes at once, resumable, with a
progress display) and ``eventloop``.

Every name in a module's ``__all__`` can be imported from ``client`` (read from the module's own
``__all__``, :mod:`client.lazy`); each is loaded on first use, so ``import client.runs`` does not import the MCP SDK or the provider
SDKs. Type checkers see these names as ``Any``: import them from their modules for their types.
Nothing in ``client`` imports ``evals`` (``tests/test_architecture.py`` checks it).
"""

from __future__ import annotations

from .lazy import LazyExports

#: The modules whose public names (each module's own ``__all__``) ``client`` exports; a name two
#: modules export (a re-export) comes from the first listed.
_EXPORTS = LazyExports(__name__, (
    "messages", "adapters", "agent", "breaker", "cache", "eventloop", "lazy", "mcp_session", "model", "progress",
    "ratelimit", "retry", "run_control", "runner", "runs",
))
__getattr__ = _EXPORTS.attribute
__all__ = _EXPORTS.names
