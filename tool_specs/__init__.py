"""tool_specs: what a tool is.

``ToolSpec`` (name, description, JSON Schema input, optional output schema, executor, validation
policy), schema normalisation for the benchmarks' loose schemas, argument validation with messages
a model can act on, YAML/JSON spec files, the generic executors, and the ``Catalog`` protocol the
server consumes.
"""

from tool_specs.catalog import Catalog, StaticCatalog, TaskNotFound, ToolNotFound, find_tool, suggest_names
from tool_specs.errors import ExecutorConfigError, SchemaNormalizationError, SpecLoadError
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
from tool_specs.loader import load_spec_dir, load_spec_file, spec_from_mapping
from tool_specs.results import CallContext, ToolResult
from tool_specs.schema import describe_schema, normalize_output_schema, normalize_schema
from tool_specs.spec import ToolSpec
from tool_specs.validation import (
    ArgumentProblem,
    ValidationOutcome,
    format_problems,
    validate_arguments,
)

__all__ = [
    "ArgumentProblem",
    "CallContext",
    "Catalog",
    "Executor",
    "ExecutorConfigError",
    "ExecutorFactory",
    "PlaceholderExecutor",
    "PythonExecutor",
    "ReplayExecutor",
    "SchemaNormalizationError",
    "SimulatedExecutor",
    "SpecLoadError",
    "StaticCatalog",
    "TaskNotFound",
    "ToolNotFound",
    "ToolResult",
    "ToolSpec",
    "ValidationOutcome",
    "describe_schema",
    "find_tool",
    "format_problems",
    "known_executor_kinds",
    "load_spec_dir",
    "load_spec_file",
    "normalize_output_schema",
    "normalize_schema",
    "register_executor_kind",
    "resolve_executor",
    "simulated_value",
    "spec_from_mapping",
    "suggest_names",
    "validate_arguments",
]
from . import sandbox as _sandbox  # noqa: E402,F401 - registers the "sandbox" executor kind for spec files
from .session_executors import PlaceholderExecutor, ReplayExecutor  # noqa: E402 - registers two kinds
