"""How a tool call is answered.

An :class:`Executor` is any object with ``async __call__(spec, arguments, ctx)`` returning a
:class:`~tool_specs.ToolResult`, a ``dict`` (a structured result) or a ``str`` (plain text).
Built-in kinds, selectable from spec files through :func:`resolve_executor`:

* ``simulated`` (:class:`SimulatedExecutor`): a deterministic structured acknowledgement.
* ``python`` (:class:`PythonExecutor`): call a Python function named ``"package.module:function"``.

Later kinds (a code sandbox, HTTP) plug in with :func:`register_executor_kind`. The
:class:`Executor` protocol itself is defined in :mod:`tool_specs.protocols` (re-exported here).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tool_specs.errors import ExecutorConfigError
from tool_specs.protocols import Executor, ToolLike
from tool_specs.results import CallContext, ToolResult
from tool_specs.validation import schema_validator

__all__ = [
    "Executor",
    "ExecutorFactory",
    "PythonExecutor",
    "SimulatedExecutor",
    "known_executor_kinds",
    "register_executor_kind",
    "resolve_executor",
    "simulated_value",
]


# ------------------------------------------------------------------------------------ simulated


def simulated_value(schema: object, field: str, *, depth: int = 0) -> Any:
    """A deterministic placeholder value that satisfies the usual shapes of ``schema``.

    ``const`` -> that value; ``enum`` -> its first value; a ``default`` -> the default; otherwise by
    the first non-null type: string -> ``"<field>"``, integer/number -> ``0``, boolean -> ``False``,
    array -> ``[]``, object -> every listed property filled the same way, null -> ``None``; no type
    -> the first ``anyOf``/``oneOf`` branch, else ``"<field>"``.
    """
    if not isinstance(schema, dict) or depth > 16:
        return f"<{field}>"
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    type_ = schema.get("type")
    types = type_ if isinstance(type_, list) else [type_] if isinstance(type_, str) else []
    non_null = [t for t in types if t != "null"]
    chosen = non_null[0] if non_null else (types[0] if types else None)
    if chosen == "string":
        return _simulated_string(schema, field)
    if chosen in ("integer", "number"):
        return 0
    if chosen == "boolean":
        return False
    if chosen == "array":
        return []
    if chosen == "null":
        return None
    if chosen == "object" or (chosen is None and isinstance(schema.get("properties"), dict)):
        props = schema.get("properties")
        if not isinstance(props, dict):
            return {}
        return {name: simulated_value(sub, name, depth=depth + 1) for name, sub in props.items()}
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            return simulated_value(branches[0], field, depth=depth + 1)
    return f"<{field}>"


_FORMAT_EXAMPLES = {
    "date": "2000-01-01",
    "time": "00:00:00",
    "date-time": "2000-01-01T00:00:00Z",
    "datetime": "2000-01-01T00:00:00Z",
    "email": "user@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "uuid": "00000000-0000-0000-0000-000000000000",
    "hh:mm": "00:00",
}
_STRING_CANDIDATES = ("2000-01-01", "00:00", "00:00:00", "2000-01-01T00:00:00Z", "0", "a", "A", "")


def _simulated_string(schema: dict[str, Any], field: str) -> str:
    """``"<field>"``, or, when the schema's ``format``/``pattern``/length rules reject that, the first
    of a few fixed, deterministic candidates (a date, a time, ``"0"``...) that fits."""
    fmt = schema.get("format")
    first = _FORMAT_EXAMPLES.get(fmt.lower(), f"<{field}>") if isinstance(fmt, str) else f"<{field}>"
    for candidate in (first, f"<{field}>", *_STRING_CANDIDATES):
        if _fits(candidate, schema):
            return candidate
    min_length = schema.get("minLength")
    if isinstance(min_length, int) and min_length > len(first):
        return first + "_" * (min_length - len(first))
    return first


def _fits(value: object, schema: object) -> bool:
    if not isinstance(schema, dict):
        return schema is not False
    return schema_validator(schema).is_valid(value)


class SimulatedExecutor:
    """A deterministic stand-in for a real tool (benchmarks whose tools have no implementation).

    Every call succeeds with the structured result::

        {"status": "success", "tool": <name>, "arguments": <arguments, keys sorted>, "result": {...}}

    ``result`` is ``{}`` when the tool has no output schema. Otherwise each top-level output
    property is filled with the same-named argument when one was given and fits the property's
    schema, else with :func:`simulated_value` (``"<field>"`` for strings, ``0`` for numbers,
    ``False`` for booleans, ``[]`` / ``{}`` for arrays / objects, the first enum value...).
    The same arguments always give a byte-identical result.
    """

    kind = "simulated"

    def __repr__(self) -> str:
        return "SimulatedExecutor()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SimulatedExecutor)

    def __hash__(self) -> int:
        return hash(SimulatedExecutor)

    def config(self) -> dict[str, Any]:
        """The spec-file configuration that recreates this executor."""
        return {"kind": self.kind}

    async def __call__(self, spec: ToolLike, arguments: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
        """Return the acknowledgement described in the class docstring."""
        return {
            "status": "success",
            "tool": spec.name,
            "arguments": {key: arguments[key] for key in sorted(arguments)},
            "result": self.result_for(spec.output_schema, arguments),
        }

    @staticmethod
    def result_for(output_schema: dict[str, Any] | None, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The ``result`` part of the acknowledgement for an output schema and arguments."""
        if not output_schema:
            return {}
        props = output_schema.get("properties")
        if not isinstance(props, dict):
            value = simulated_value(output_schema, "result")
            return value if isinstance(value, dict) else {"result": value}
        result: dict[str, Any] = {}
        for name, sub in props.items():
            if name in arguments and _fits(arguments[name], sub):
                result[name] = arguments[name]
            else:
                result[name] = simulated_value(sub, name)
        return result

    def output_schema_for(self, spec: ToolLike) -> dict[str, Any] | None:
        """The schema of the envelope this executor returns (``None`` when the tool has no output schema)."""
        if spec.output_schema is None:
            return None
        return {
            "type": "object",
            "properties": {
                "status": {"type": "string", "const": "success"},
                "tool": {"type": "string"},
                "arguments": {"type": "object"},
                "result": spec.output_schema,
            },
            "required": ["status", "tool", "arguments", "result"],
        }


# ------------------------------------------------------------------------------------ python


def _load_module_from_file(path: Path) -> Any:
    resolved = path.resolve()
    digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:12]
    module_name = f"_tool_specs_user_{resolved.stem}_{digest}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    if not resolved.is_file():
        raise ExecutorConfigError(f"python executor file {str(path)!r} does not exist")
    spec = importlib.util.spec_from_file_location(module_name, resolved)
    if spec is None or spec.loader is None:
        raise ExecutorConfigError(f"cannot import python file {str(path)!r}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


PYTHON_TARGET_FORMS = (
    "'module:function' (an importable module, e.g. 'mypkg.tools:lookup') or 'path/file.py:function' "
    "(a file, relative to the spec file's folder)"
)
"""The forms of a python executor's ``target``, as error messages name them."""


class PythonExecutor:
    """Answer calls with a Python function: ``function(**arguments)``.

    ``target`` is ``"package.module:function"`` (an attribute chain such as ``"mod:Class.method"``
    works too) or ``"relative/file.py:function"``, which is resolved against ``base_dir`` (the spec
    file's folder when loaded from a spec file). The import happens on first use or on
    :meth:`resolve`. Coroutine functions are awaited; plain functions run in a worker thread
    (:func:`asyncio.to_thread`). The return value is wrapped by :meth:`ToolResult.from_value`: a
    ``dict`` is the structured result, a ``str`` is text, any other JSON value becomes
    ``{"result": value}``. ``timeout_s`` bounds one call (the call then fails with ``TimeoutError``;
    a sync function's thread is left to finish on its own).
    """

    kind = "python"

    def __init__(
        self, target: str, *, base_dir: str | Path | None = None, timeout_s: float | None = None
    ) -> None:
        if not isinstance(target, str) or target.count(":") != 1 or not all(target.split(":")):
            raise ExecutorConfigError(f"python executor target must be {PYTHON_TARGET_FORMS}, got {target!r}")
        if timeout_s is not None and (not isinstance(timeout_s, int | float) or timeout_s <= 0):
            raise ExecutorConfigError(
                f"python executor timeout_s must be a positive number, got {timeout_s!r}"
            )
        self.target = target
        self.base_dir = Path(base_dir) if base_dir is not None else None
        self.timeout_s = float(timeout_s) if timeout_s is not None else None
        self._function: Callable[..., Any] | None = None

    def __repr__(self) -> str:
        return f"PythonExecutor(target={self.target!r})"

    def config(self) -> dict[str, Any]:
        """The spec-file configuration that recreates this executor."""
        out: dict[str, Any] = {"kind": self.kind, "target": self.target}
        if self.timeout_s is not None:
            out["timeout_s"] = self.timeout_s
        return out

    def resolve(self) -> Callable[..., Any]:
        """Import the target and return the function (cached).

        Raises:
            ExecutorConfigError: the module cannot be imported, the attribute does not exist, or it
                is not callable. The message names the target and the underlying error.
        """
        if self._function is not None:
            return self._function
        module_part, attr_part = self.target.split(":")
        try:
            if module_part.endswith(".py"):
                path = Path(module_part)
                if not path.is_absolute() and self.base_dir is not None:
                    path = self.base_dir / path
                module = _load_module_from_file(path)
            else:
                module = importlib.import_module(module_part)
        except ExecutorConfigError:
            raise
        except Exception as exc:
            raise ExecutorConfigError(
                f"cannot import module {module_part!r} for python target {self.target!r}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        obj: Any = module
        for part in attr_part.split("."):
            try:
                obj = getattr(obj, part)
            except AttributeError:
                raise ExecutorConfigError(
                    f"python target {self.target!r}: module {module_part!r} has no attribute {attr_part!r}"
                ) from None
        if not callable(obj):
            raise ExecutorConfigError(f"python target {self.target!r} is not callable ({type(obj).__name__})")
        function: Callable[..., Any] = obj
        self._function = function
        return function

    async def __call__(self, spec: ToolLike, arguments: dict[str, Any], ctx: CallContext) -> ToolResult:
        """Call the function with the arguments as keyword arguments and wrap what it returns."""
        function = self.resolve()
        if inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(type(function).__call__):
            awaitable = function(**arguments)
        else:
            awaitable = asyncio.to_thread(functools.partial(function, **arguments))
        if self.timeout_s is not None:
            try:
                value = await asyncio.wait_for(awaitable, self.timeout_s)
            except TimeoutError:
                raise TimeoutError(f"no result after {self.timeout_s:g} s") from None
        else:
            value = await awaitable
        if inspect.isawaitable(value):
            value = await value
        return ToolResult.from_value(value)


# ------------------------------------------------------------------------------------ registry

#: ``factory(options, base_dir)``: ``options`` is the executor config without ``kind``; ``base_dir``
#: the folder of the spec file it came from (or ``None``). Raise :class:`ExecutorConfigError` on
#: bad options.
ExecutorFactory = Callable[[dict[str, Any], Path | None], Executor]

_REGISTRY: dict[str, ExecutorFactory] = {}
_OTHER_KINDS = {"placeholder": "session_executors", "replay": "session_executors", "sandbox": "sandbox"}


def _other_kinds() -> None:
    """The kinds the package's other modules register as they are imported (``import tool_specs`` imports no
    module: :mod:`tool_specs`), imported before the registry is read or a kind of theirs is registered."""
    for module in sorted(set(_OTHER_KINDS.values())):
        importlib.import_module(f"tool_specs.{module}")


def register_executor_kind(kind: str, factory: ExecutorFactory, *, replace: bool = False) -> None:
    """Make ``kind`` usable in spec files (``executor: {kind: <kind>, ...}``).

    Raises:
        ValueError: ``kind`` is already registered and ``replace`` is false.
    """
    if not kind or not isinstance(kind, str):
        raise ValueError("executor kind must be a non-empty string")
    if kind in _OTHER_KINDS and kind not in _REGISTRY:
        _other_kinds()  # the package's own first (a module being imported is not imported again)
    if kind in _REGISTRY and not replace:
        raise ValueError(f"executor kind {kind!r} is already registered")
    _REGISTRY[kind] = factory


def known_executor_kinds() -> list[str]:
    """The registered executor kinds, sorted."""
    _other_kinds()
    return sorted(_REGISTRY)


def _check_options(kind: str, options: Mapping[str, Any], allowed: set[str], required: set[str]) -> None:
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ExecutorConfigError(
            f"unknown option(s) {', '.join(map(repr, unknown))} for executor kind {kind!r}; "
            f"allowed: {', '.join(sorted(allowed)) or 'none'}"
        )
    missing = sorted(required - set(options))
    if missing:
        raise ExecutorConfigError(f"executor kind {kind!r} needs option(s) {', '.join(map(repr, missing))}")


def _simulated_factory(options: dict[str, Any], base_dir: Path | None) -> Executor:
    _check_options("simulated", options, set(), set())
    return SimulatedExecutor()


def _python_factory(options: dict[str, Any], base_dir: Path | None) -> Executor:
    _check_options("python", options, {"target", "timeout_s"}, {"target"})
    return PythonExecutor(options["target"], base_dir=base_dir, timeout_s=options.get("timeout_s"))


register_executor_kind("simulated", _simulated_factory)
register_executor_kind("python", _python_factory)


def resolve_executor(
    config: Mapping[str, Any] | str | Executor | None, *, base_dir: str | Path | None = None
) -> Executor:
    """Turn a spec file's ``executor`` value into an executor object.

    ``None`` -> simulated; a kind name (``"simulated"``); a ``"module:function"`` string (shorthand
    for the python kind); a mapping ``{"kind": ..., **options}``; or an executor object, returned
    as is. Python targets are *not* imported here (call ``.resolve()`` to check them eagerly; the
    spec loader does).

    Raises:
        ExecutorConfigError: unknown kind (the message lists the known kinds) or bad options.
    """
    base = Path(base_dir) if base_dir is not None else None
    if config is None:
        return SimulatedExecutor()
    if isinstance(config, str | Mapping):
        _other_kinds()
    if isinstance(config, str):
        if config in _REGISTRY:
            return _REGISTRY[config]({}, base)
        if ":" in config:
            return _python_factory({"target": config}, base)
        raise ExecutorConfigError(
            f"unknown executor kind {config!r}; known kinds: {', '.join(known_executor_kinds())}; "
            f"a python function is named {PYTHON_TARGET_FORMS}"
        )
    if isinstance(config, Mapping):
        options = dict(config)
        kind = options.pop("kind", None)
        if kind is None:
            raise ExecutorConfigError(
                f"executor config {dict(config)!r} has no 'kind'; known kinds: {', '.join(known_executor_kinds())}"
            )
        if kind not in _REGISTRY:
            raise ExecutorConfigError(
                f"unknown executor kind {kind!r}; known kinds: {', '.join(known_executor_kinds())}"
            )
        try:
            return _REGISTRY[kind](options, base)
        except ExecutorConfigError:
            raise
        except (TypeError, ValueError) as exc:
            raise ExecutorConfigError(f"bad options for executor kind {kind!r}: {exc}") from exc
    if callable(config):
        return config
    raise ExecutorConfigError(
        f"executor must be a kind name, a mapping with 'kind', or an executor object; got {type(config).__name__}"
    )
