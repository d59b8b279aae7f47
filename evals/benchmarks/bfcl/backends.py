"""BFCL's stateful backend classes (a file system, messaging, trading, ...) behind MCP tools.

Small API, shared by the multi-turn, memory and web-search categories:

* :func:`fresh_instances` — new instances of an entry's ``involved_classes``, each initialised from
  its part of the entry's ``initial_config`` (a deep copy) as BFCL does (``_load_scenario(config,
  long_context=...)``; a stateless class such as ``MathAPI`` is only constructed);
* :func:`execute` — one call (method name, JSON arguments) on those instances, its result as the
  string BFCL shows the model (a ``str`` as it is, a ``dict`` as JSON, anything else ``str()``; an
  exception as ``"Error during execution: ..."``);
* :func:`execute_text` — one call written as BFCL's ground truth writes it (``sort('a.pdf')``);
* :func:`call_text` — a (name, arguments) call written that way (BFCL's FC decoding);
* :func:`public_state` / :func:`state_differences` — the attributes the multi-turn checker compares;
* :func:`backend_tool` — a function doc as an MCP tool whose executor runs the method on the MCP
  session's own instances (made on the session's first call by a factory you pass).

Where they run: in-process, in the server's event loop. The backends are pure in-memory Python
objects (the "file system" is a tree of dicts, nothing touches the disk or the network), their
state must live across an episode's calls and be compared attribute by attribute when scoring,
and their code is the pinned, checksummed wheel's (:mod:`.wheel_code`), trusted as a dependency
is: the model reaches it only as method calls with JSON arguments, never as code. The sandbox pool
runs untrusted code in worker processes and would have to ship the live objects back; it buys
nothing here.

No state leaks: each MCP session holds its own instances in its ``CallContext.state`` (the server
gives every session a dict of its own), keyed by task id, so two episodes of one run, concurrent
or not, and two tasks served by one ``evals serve`` never share an instance.

BFCL's own executor builds ``name(k=repr(v), ...)`` strings and ``eval``s them; this one never
evaluates text: a call string is parsed (:mod:`ast`, which gives the same ``SyntaxError`` text
``eval`` would) and its literal arguments are passed to the bound method. One quirk is not
reproduced: BFCL prefixes an instance name to every ``word(`` in the string, inside string
arguments too (``echo(content='see ls(x)')`` stores its instance's name in the file); that name
holds BFCL's model name, so no harness can reproduce it meaningfully.
"""

from __future__ import annotations

import ast
import copy
import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tool_specs import CallContext, ToolLike, ToolResult, ToolSpec

from .files import NAME
from .tools import to_schema
from .wheel_code import import_module

__all__ = ["ERROR_PREFIX", "BackendError", "Instances", "backend_tool", "call_text", "execute", "execute_text",
           "fresh_instances", "method_table", "public_state", "session_instances", "state_differences",
           "stateless_classes"]

Instances = dict[str, Any]  # class name -> instance, in the entry's order
ERROR_PREFIX = "Error during execution: "
# names BFCL's executor refuses to run whatever they are (a guard against its own eval)
_REFUSED = ("kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run")
_STATE_KEY = "bfcl_backends"


class BackendError(ValueError):
    """An entry names a backend class BFCL does not have; the message names it."""


def _config_module() -> Any:
    return import_module("bfcl_eval.constants.executable_backend_config")


def stateless_classes() -> tuple[str, ...]:
    """The classes BFCL constructs without an initial config (``STATELESS_CLASSES``)."""
    return tuple(_config_module().STATELESS_CLASSES)


def fresh_instances(involved_classes: Sequence[str], initial_config: Mapping[str, Any], *,
                    long_context: bool = False) -> Instances:
    """New instances of ``involved_classes``, each loaded from a deep copy of its initial config."""
    config = _config_module()
    out: Instances = {}
    for class_name in involved_classes:
        module_name = config.CLASS_FILE_PATH_MAPPING.get(class_name)
        if module_name is None:
            raise BackendError(f"BFCL has no backend class {class_name!r}")
        instance = getattr(import_module(module_name), class_name)()
        if class_name not in config.STATELESS_CLASSES:
            instance._load_scenario(copy.deepcopy(dict(initial_config.get(class_name, {}))), long_context=long_context)
        out[class_name] = instance
    return out


def method_table(instances: Instances) -> dict[str, Callable[..., Any]]:
    """Every public method of the instances by name; a name two classes share goes to the later class."""
    table: dict[str, Callable[..., Any]] = {}
    for instance in instances.values():
        for name, method in inspect.getmembers(instance, predicate=inspect.ismethod):
            if not name.startswith("_"):
                table[name] = method
    return table


def _as_text(result: Any) -> str:
    if type(result) is str:
        return result
    if type(result) is dict:
        try:
            return json.dumps(result)
        except (TypeError, ValueError):
            return str(result)
    return str(result)


def _run(table: Mapping[str, Callable[..., Any]], name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
    try:
        if name in _REFUSED:
            raise Exception(f"Function call {name} is not allowed.")  # noqa: TRY002 - BFCL's text
        method = table.get(name)
        if method is None:
            raise NameError(f"name '{name}' is not defined")
        return _as_text(method(*args, **kwargs))
    except Exception as exc:  # noqa: BLE001 - every failure is a result the model reads, as in BFCL
        return f"{ERROR_PREFIX}{exc}"


def call_text(name: str, arguments: Mapping[str, Any]) -> str:
    """A call as BFCL's FC decoding writes it for execution: ``name(k=repr(v),...)``."""
    return f"{name}({','.join(f'{k}={v!r}' for k, v in arguments.items())})"


def _parsed(text: str) -> tuple[str, list[Any], dict[str, Any]] | str:
    """(name, positional, keyword) of a plain call with literal arguments, or the error text."""
    try:
        tree = ast.parse(text, filename="<string>", mode="eval")
    except SyntaxError as exc:
        return f"{ERROR_PREFIX}{exc}"
    call = tree.body
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
        return f"{ERROR_PREFIX}not a plain function call: {text[:200]}"
    try:
        args = [ast.literal_eval(a) for a in call.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg is not None}
    except (ValueError, TypeError, SyntaxError, RecursionError) as exc:
        return f"{ERROR_PREFIX}an argument is not a literal ({exc})"
    if len(kwargs) != len(call.keywords):
        return f"{ERROR_PREFIX}**-arguments are not supported"
    return call.func.id, args, kwargs


def execute_text(instances: Instances, text: str, table: Mapping[str, Callable[..., Any]] | None = None) -> str:
    """One call written as BFCL writes calls (``sort('final_report.pdf')``) run on ``instances``."""
    parsed = _parsed(text)
    if isinstance(parsed, str):
        return parsed
    return _run(table if table is not None else method_table(instances), *parsed)


def execute(instances: Instances, name: str, arguments: Mapping[str, Any],
            table: Mapping[str, Callable[..., Any]] | None = None) -> str:
    """One (name, JSON arguments) call on ``instances`` as BFCL runs a decoded FC call: written as
    :func:`call_text` and run, so an argument name Python cannot take fails as BFCL's ``eval`` does."""
    return execute_text(instances, call_text(name, arguments), table)


def public_state(instance: Any) -> dict[str, Any]:
    """The attributes the multi-turn checker compares: ``vars(instance)`` without ``_`` names."""
    return {k: v for k, v in vars(instance).items() if not k.startswith("_")}


def state_differences(model: Any, gold: Any) -> dict[str, dict[str, Any]]:
    """Each public attribute of ``gold`` whose value differs in ``model`` (``!=``, as the checker compares)."""
    out = {}
    for name in vars(gold):
        if name.startswith("_"):
            continue
        mine, theirs = getattr(model, name), getattr(gold, name)
        if mine != theirs:
            out[name] = {"model": mine, "ground_truth": theirs}
    return out


def session_instances(ctx: CallContext, key: str, factory: Callable[[], Instances]) -> Instances:
    """The MCP session's instances for ``key`` (a task id), made by ``factory`` on first use."""
    held: dict[str, Instances] = ctx.state.setdefault(_STATE_KEY, {})
    if key not in held:
        held[key] = factory()
    return held[key]


def backend_tool(doc: Mapping[str, Any], task_id: str, factory: Callable[[], Instances], *,
                 annotations: Mapping[str, Any] | None = None) -> ToolSpec:
    """A function doc (named as the backend's method) as an MCP tool: schema mapped as
    :func:`.tools.to_schema` maps it; each call runs the method on the session's own instances
    (``factory`` makes them on the session's first call) and answers BFCL's result string. A
    result that is an exception's text is flagged ``isError`` (the text is what BFCL shows)."""
    name = str(doc.get("name", ""))

    async def run(spec: ToolLike, arguments: dict[str, Any], ctx: CallContext) -> ToolResult:
        instances = session_instances(ctx, task_id, factory)
        text = execute(instances, name, arguments)
        return ToolResult(text=text, is_error=text.startswith(ERROR_PREFIX))

    return ToolSpec(name=name, description=str(doc.get("description", "")),
                    input_schema=to_schema(doc.get("parameters") or {}), executor=run, validation="warn",
                    annotations={"benchmark": NAME, "task_id": task_id, "bfcl_name": name, **(annotations or {})})
