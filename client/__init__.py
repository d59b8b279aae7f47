"""The evaluation client: drives a model through MCP tool sessions and records every episode.

Modules: ``messages`` (provider-neutral messages, tool calls, responses), ``adapters`` (one
interface over OpenAI-compatible, Anthropic and vLLM models; :func:`make_adapter`), ``retry``,
``ratelimit``, ``breaker`` (stops a run on errors that will repeat), ``cache`` (the response
cache), ``model`` (the one wrapper of every model call: cache, rate limit, retries, cost),
``runs`` (run directories, traces and the episode recorder), ``mcp_session`` (MCP sessions to the
tool server), ``agent`` (the tool-use loop of one episode), ``runner``, ``run_control``
(a run's budget, interrupt and result) and ``progress`` (many episodes at once, resumable, with a
progress display) and ``eventloop``.

Import names from their modules (``from client.runs import RunDir``): the package itself exports
nothing, so ``import client.runs`` does not import the MCP SDK or the provider SDKs.
Nothing in ``client`` imports ``evals`` (``tests/test_architecture.py`` checks it).
"""

__all__: list[str] = []
