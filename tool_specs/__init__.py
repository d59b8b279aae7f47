"""tool_specs: what a tool is.

``ToolSpec`` (name, description, JSON Schema input, optional output schema, executor, validation
policy), schema normalisation for the benchmarks' loose schemas, argument validation with messages
a model can act on, YAML/JSON spec files, the generic executors (simulated, Python, a code sandbox,
placeholder and gold replay), call matching, and the ``Catalog`` protocol the server consumes.

Modules, low to high (each imports only modules above it; ``tests/test_architecture.py`` checks it):
``errors``, ``bounded_read`` (reading an untrusted file, no line past ``MAX_LINE_BYTES``), ``names`` (did-you-mean hints), ``results`` (``ToolResult``, ``CallContext``),
``protocols`` (``ToolLike``, ``Executor``: what the generic parts need from a tool), ``schema``,
``validation``, ``argument_matching`` (are two calls' arguments the same), ``matching``, ``executors``, ``fair_queue`` (who gets the next sandbox worker),
``sandbox``, ``session_executors``, ``spec`` (``ToolSpec``), ``catalog``, ``loader``, ``spec_formats``
(OpenAI function tools and BFCL function docs as spec files), ``variables`` (``${NAME}`` in task files). Every name in a module's ``__all__`` is
re-exported here.
The names are imported from their modules on first use (``import tool_specs`` imports none of them: a
process that only scores recorded runs needs two light modules, not pydantic, jsonschema and the sandbox); the
``sandbox``, ``placeholder`` and ``replay`` executor kinds are registered when executors are first resolved,
listed or registered (:mod:`tool_specs.executors`).
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tool_specs.argument_matching import (
        ARGUMENT_RULES,
        MATCH_KEY,
        argument_differences,
        argument_rules,
        describe_differences,
        normalize_arguments,
        normalize_value,
        param_matches,
        with_defaults,
    )
    from tool_specs.bounded_read import (
        MAX_LINE_BYTES,
        LineTooLong,
        bounded_bytes,
        bounded_text,
        line_at,
        read_lines,
        read_text_lines,
    )
    from tool_specs.bounded_regex import (
        MAX_PATTERN_SIZE,
        REGEX_TIMEOUT,
        RegexTimeout,
        bounded_search,
        pattern_groups,
    )
    from tool_specs.catalog import (
        Catalog,
        StaticCatalog,
        TaskNotFound,
        ToolNotFound,
        find_tool,
        suggest_names,
    )
    from tool_specs.errors import (
        ExecutorConfigError,
        SchemaNormalizationError,
        SpecLoadError,
        SpecLoadErrors,
    )
    from tool_specs.executors import (
        Executor,
        ExecutorFactory,
        PythonExecutor,
        SimulatedExecutor,
        known_executor_kinds,
        register_executor_kind,
        resolve_executor,
        simulated_value,
    )
    from tool_specs.fair_queue import FairGate, GateTicket, GateWaiter
    from tool_specs.loader import (
        SPEC_FILE_SUFFIXES,
        load_spec_dir,
        load_spec_file,
        spec_from_mapping,
    )
    from tool_specs.matching import (
        MATCHERS,
        AlignedPair,
        Alignment,
        CallLike,
        CostFn,
        MatchDecision,
        Matcher,
        ResponseMatcher,
        RuleMatcher,
        align_calls,
        argument_cost,
        combined_cost,
        decide,
        embedding_cost,
        name_cost,
        response_match,
        rule_match,
        text_cost,
    )
    from tool_specs.names import (
        SHOWN_CHARS,
        clipped,
        did_you_mean,
        shown_name,
    )
    from tool_specs.protocols import (
        ExecutorReturn,
        Policy,
        ToolLike,
    )
    from tool_specs.results import (
        MAX_RESULT_BYTES,
        MAX_RESULT_DEPTH,
        CallContext,
        ToolResult,
        to_json_text,
        unsendable,
    )
    from tool_specs.safe_load import (
        MAX_ALIAS_NODES,
        MAX_FILE_DEPTH,
        DocumentError,
        SafeFileLoader,
        load_json,
        load_yaml,
    )
    from tool_specs.sandbox import (
        NamespaceSupport,
        ResultHook,
        SandboxError,
        SandboxExecutor,
        SandboxLimits,
        SandboxPool,
        SandboxReply,
        default_pool,
        namespace_support,
        reply_to_result,
        value_to_result,
    )
    from tool_specs.schema import (
        JSON_TYPES,
        describe_schema,
        looks_like_schema,
        map_type_name,
        normalize_output_schema,
        normalize_schema,
        remember_normalizations,
        remembered_normalizations,
    )
    from tool_specs.session_executors import (
        PlaceholderExecutor,
        ReplayExecutor,
    )
    from tool_specs.spec import (
        INPUT_SCHEMA_KEYS,
        MAX_NAME_LENGTH,
        OUTPUT_SCHEMA_KEYS,
        ToolSpec,
    )
    from tool_specs.spec_checks import (
        TOOL_NAME_RULE,
        listed_tool_problems,
        sandbox_code_problems,
        schema_problems,
        tool_name_problem,
    )
    from tool_specs.spec_formats import (
        TOOL_FILE_SUFFIXES,
        detect_tool_format,
        load_tool_dir,
        load_tool_file,
    )
    from tool_specs.url_secrets import URL_REDACTED, redact_urls
    from tool_specs.validation import (
        DEFAULT_MAX_DEPTH,
        DEFAULT_MAX_STRING_BYTES,
        DEFAULT_MAX_TOTAL_BYTES,
        ArgumentProblem,
        ProblemKind,
        ValidationOutcome,
        check_schema,
        compiled_validator,
        format_problems,
        json_type_name,
        prepared_validator,
        schema_validator,
        short_repr,
        validate_arguments,
    )
    from tool_specs.variables import (
        VARIABLE_NAME,
        SecretVariable,
        UndefinedVariable,
        environment_value,
        expand_value,
        expand_variables,
        looks_secret,
        variable_names,
    )

__all__ = [
    "ARGUMENT_RULES",
    "MATCH_KEY",
    "argument_differences",
    "argument_rules",
    "describe_differences",
    "VARIABLE_NAME",
    "SecretVariable",
    "UndefinedVariable",
    "environment_value",
    "expand_value",
    "expand_variables",
    "looks_secret",
    "variable_names",
    "AlignedPair",
    "Alignment",
    "ArgumentProblem",
    "CallContext",
    "CallLike",
    "Catalog",
    "CostFn",
    "DEFAULT_MAX_DEPTH",
    "DocumentError",
    "MAX_LINE_BYTES",
    "LineTooLong",
    "bounded_bytes",
    "bounded_text",
    "line_at",
    "read_lines",
    "read_text_lines",
    "MAX_PATTERN_SIZE",
    "REGEX_TIMEOUT",
    "RegexTimeout",
    "bounded_search",
    "pattern_groups",
    "MAX_ALIAS_NODES",
    "MAX_FILE_DEPTH",
    "SafeFileLoader",
    "load_json",
    "redact_urls",
    "URL_REDACTED",
    "load_yaml",
    "DEFAULT_MAX_STRING_BYTES",
    "FairGate",
    "GateTicket",
    "GateWaiter",
    "MAX_RESULT_BYTES",
    "MAX_RESULT_DEPTH",
    "DEFAULT_MAX_TOTAL_BYTES",
    "Executor",
    "ExecutorConfigError",
    "ExecutorFactory",
    "ExecutorReturn",
    "INPUT_SCHEMA_KEYS",
    "JSON_TYPES",
    "MATCHERS",
    "MAX_NAME_LENGTH",
    "MatchDecision",
    "Matcher",
    "OUTPUT_SCHEMA_KEYS",
    "PlaceholderExecutor",
    "Policy",
    "ProblemKind",
    "PythonExecutor",
    "ReplayExecutor",
    "ResponseMatcher",
    "ResultHook",
    "RuleMatcher",
    "SHOWN_CHARS",
    "SPEC_FILE_SUFFIXES",
    "SandboxError",
    "SandboxExecutor",
    "SandboxLimits",
    "SandboxPool",
    "SandboxReply",
    "SchemaNormalizationError",
    "SimulatedExecutor",
    "SpecLoadError",
    "SpecLoadErrors",
    "StaticCatalog",
    "TOOL_NAME_RULE",
    "TaskNotFound",
    "TOOL_FILE_SUFFIXES",
    "ToolLike",
    "ToolNotFound",
    "ToolResult",
    "ToolSpec",
    "ValidationOutcome",
    "align_calls",
    "argument_cost",
    "check_schema",
    "clipped",
    "combined_cost",
    "compiled_validator",
    "decide",
    "default_pool",
    "describe_schema",
    "detect_tool_format",
    "did_you_mean",
    "embedding_cost",
    "find_tool",
    "format_problems",
    "json_type_name",
    "known_executor_kinds",
    "listed_tool_problems",
    "load_spec_dir",
    "load_spec_file",
    "load_tool_dir",
    "load_tool_file",
    "looks_like_schema",
    "map_type_name",
    "name_cost",
    "NamespaceSupport",
    "namespace_support",
    "normalize_arguments",
    "normalize_output_schema",
    "normalize_schema",
    "remember_normalizations",
    "remembered_normalizations",
    "normalize_value",
    "param_matches",
    "register_executor_kind",
    "reply_to_result",
    "resolve_executor",
    "response_match",
    "rule_match",
    "sandbox_code_problems",
    "schema_problems",
    "prepared_validator",
    "schema_validator",
    "short_repr",
    "simulated_value",
    "spec_from_mapping",
    "shown_name",
    "suggest_names",
    "text_cost",
    "to_json_text",
    "unsendable",
    "tool_name_problem",
    "validate_arguments",
    "value_to_result",
    "with_defaults",
]

# the modules the names come from, in the order the import block above names them
_MODULES = ("argument_matching", "bounded_read", "bounded_regex", "catalog", "errors", "executors", "fair_queue", "loader",
            "matching", "names", "protocols", "results", "safe_load", "sandbox", "schema", "session_executors",
            "spec", "spec_checks", "spec_formats", "url_secrets", "validation", "variables")


def __getattr__(name: str) -> Any:
    """A re-exported name, imported from its module on first use (see the module docstring)."""
    if name in __all__:
        for module_name in _MODULES:
            module = importlib.import_module(f"tool_specs.{module_name}")
            if name in vars(module):
                value = vars(module)[name]
                globals()[name] = value
                return value
    raise AttributeError(f"module 'tool_specs' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
