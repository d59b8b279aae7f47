"""The evaluation client: drives a model through MCP tool sessions and records every episode.

Modules: ``messages`` (provider-neutral messages, tool calls, responses), ``adapters`` (one
interface over OpenAI-compatible, Anthropic and vLLM models; :func:`make_adapter`), ``retry``,
``ratelimit``, ``breaker`` (stops a run on errors that will repeat), ``cache`` (the response
cache), ``model`` (the one wrapper of every model call: cache, rate limit, retries, cost),
``runs`` (run directories, traces and the episode recorder), ``mcp_session`` (MCP sessions to the
tool server), ``agent`` (the tool-use loop of one episode), ``runner``, ``run_control``
(a run's budget, interrupt and result) and ``progress`` (many episodes at once, resumable, with a
progress display) and ``eventloop``.

Every name in a module's ``__all__`` is listed here (``_NAMES``) and can be imported from ``client``;
each is loaded on first use, so ``import client.runs`` does not import the MCP SDK or the provider
SDKs. Type checkers see these names as ``Any``: import them from their modules for their types.
Nothing in ``client`` imports ``evals`` (``tests/test_architecture.py`` checks it).
"""

from __future__ import annotations

import importlib
from typing import Any

#: The module that defines each public name, by module (``tests/client/test_client_package.py`` keeps
#: this in step with the modules' ``__all__``).
_NAMES: dict[str, tuple[str, ...]] = {
    "adapters": (
        "CACHE_FORMAT",
        "CHAT_TEMPLATE_DIR",
        "DEFAULT_MAX_LEN",
        "DEFAULT_PARAMS",
        "ERROR_KINDS",
        "INSTALL_HINT",
        "LOCAL_PLACEHOLDER_API_KEY",
        "PRICES",
        "PRICES_ENV",
        "TOOL_CALL_MARKERS",
        "AdapterFactory",
        "AnthropicAdapter",
        "AttemptRecord",
        "CachedModelResponse",
        "CachingAdapter",
        "ErrorDetails",
        "ErrorKind",
        "GenerateParams",
        "ModelAdapter",
        "ModelError",
        "OpenAIAdapter",
        "OracleAdapter",
        "ReplayAdapter",
        "SDKAdapter",
        "ToolNameMap",
        "VLLMAdapter",
        "VLLMError",
        "VLLMNotInstalledError",
        "VLLMStartError",
        "build_name_map",
        "default_chat_template",
        "guess_tool_parser",
        "is_cached",
        "is_context_length_message",
        "is_cpu_build",
        "is_safe_name",
        "known_prefixes",
        "load_price_overrides",
        "make_adapter",
        "make_vllm_adapter",
        "parse_retry_after",
        "parse_spec",
        "price_for",
        "register_adapter",
        "resolve_api_key",
        "sdk_error",
        "stainless_error_details",
        "tool_choice_name",
        "unparsed_text_tool_calls",
    ),
    "agent": ("AgentConfig", "provider_finish_reason", "result_text", "run_agent"),
    "breaker": ("CircuitBreaker", "RemoteError", "RepeatingError", "repeating_error"),
    "cache": ("ResponseCache", "request_key"),
    "eventloop": ("ENV", "EPISODE_GC_YOUNG", "episode_gc", "loop_name", "name_asyncio", "run"),
    "mcp_session": (
        "HTTPClientPool",
        "connect",
        "list_all_tools",
        "make_http_client",
        "share_output_validators",
        "shared_output_validator",
    ),
    "messages": (
        "STOP_CONTENT_FILTER",
        "STOP_CONTEXT_LENGTH",
        "STOP_END_TURN",
        "STOP_MAX_TOKENS",
        "STOP_REFUSAL",
        "STOP_TOOL_CALLS",
        "AssistantMessage",
        "Message",
        "ModelResponse",
        "Price",
        "SystemMessage",
        "ToolCall",
        "ToolChoice",
        "ToolDef",
        "ToolResultMessage",
        "Usage",
        "UserMessage",
        "message_from_dict",
        "parse_tool_arguments",
        "replace_surrogates",
    ),
    "model": ("Model",),
    "progress": ("RunProgress", "format_tokens"),
    "ratelimit": ("RateLimiter", "Reservation", "estimate_request_tokens"),
    "retry": ("AttemptCallback", "RetryPolicy", "call_with_retries"),
    "run_control": ("Budget", "RunControl", "RunResult", "StopReason"),
    "runner": ("EpisodeFn", "ScoreFn", "run_episodes"),
    "runs": (
        "CUT_NOTE",
        "DEFAULT_HASH_KEYS",
        "REDACTED",
        "SCHEMA_VERSION",
        "EpisodeOutcome",
        "EpisodeRecorder",
        "EpisodeStatus",
        "RunConfigMismatch",
        "RunDir",
        "RunDirClosed",
        "RunDiskFull",
        "RunFileIsLink",
        "RunLocked",
        "RunSummary",
        "RunTracesLost",
        "Totals",
        "TraceScan",
        "append_line",
        "call_arguments",
        "canonical_json",
        "check_run_dir",
        "config_hash",
        "error_info",
        "finished_task_ids",
        "is_transient",
        "iter_jsonl",
        "open_run_file",
        "outcome_raw_arguments",
        "package_version",
        "redact_secrets",
        "redact_urls",
        "refuse_link",
        "request_history",
        "secret_paths",
        "summarize_traces",
        "to_jsonable",
        "utf8_lines",
        "write_run_text",
    ),
}
_MODULE_OF = {name: f"{__name__}.{module}" for module, names in _NAMES.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup does not come here
    return value


__all__ = sorted(_MODULE_OF)  # every name of _NAMES
