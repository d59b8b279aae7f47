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

Where they run: in a process of their own per MCP session (:mod:`.backend_host`), each call under
a deadline, after the bounds of :func:`argument_bound_error` (numbers whose cost BFCL does not
bound: ``MathAPI``'s precisions, ``power``'s result size). The backends are pure in-memory Python
objects (the "file system" is a tree of dicts, nothing touches the disk or the network) and their
code is the pinned, checksummed wheel's (:mod:`.wheel_code`), trusted as a dependency is: the
model reaches it only as method calls with JSON arguments, never as code; but what a call computes
is the model's to choose, so no call runs in the server's event loop. :func:`execute` and
:func:`execute_text` run a call here, in the calling process (the holder processes use them).

No state leaks: each MCP session holds its own instances' holder in its ``CallContext.state`` (the
server gives every session a dict of its own), keyed by task id, so two episodes of one run,
concurrent or not, and two tasks served by one ``evals serve`` never share an instance.

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
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tool_specs import CallContext, ToolLike, ToolResult, ToolSpec

from . import backend_host
from .backend_host import Holder, HostError
from .files import NAME
from .tools import to_schema
from .wheel_code import import_module

__all__ = ["ERROR_PREFIX", "MAX_PRECISION", "MAX_RESULT_BITS", "BackendError", "Instances", "argument_bound_error",
           "backend_tool", "call_text", "execute", "execute_text", "fresh_instances", "host_operation", "make_op",
           "method_table", "preload", "public_state", "session_holder", "state_differences", "stateless_classes"]

Instances = dict[str, Any]  # class name -> instance, in the entry's order
ERROR_PREFIX = "Error during execution: "
# names BFCL's executor refuses to run whatever they are (a guard against its own eval)
_REFUSED = ("kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run")
_STATE_KEY = "bfcl_backends"

# Bounds on the numbers whose cost BFCL's backends leave to the caller (checked before its code sees
# them; a call past one is an error result naming the bound). Digits of precision: Decimal's
# ``sqrt`` and mpmath's ``log`` take seconds from about 10^5 digits; BFCL's tasks ask for at most 10.
MAX_PRECISION = 10_000
MAX_RESULT_BITS = 1 << 20  # of an exact int ** int (power), and of round(int, -n)'s 10**n
# BFCL's MathAPI signatures (parameter names in order) of the calls bounded here
_MATH = {"square_root": ("number", "precision"), "logarithm": ("value", "base", "precision"),
         "power": ("base", "exponent"), "round_number": ("number", "decimal_places")}


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


def _bound_problem(name: str, values: Mapping[str, Any]) -> str | None:
    precision = values.get("precision")
    if name in ("square_root", "logarithm") and isinstance(precision, int | float) and not isinstance(precision, bool):
        if not -MAX_PRECISION <= precision <= MAX_PRECISION:
            return f"precision={precision} is over the bound of {MAX_PRECISION} digits"
    if name == "power":
        base, exponent = values.get("base"), values.get("exponent")
        if type(base) is int and type(exponent) is int and exponent > 0 and abs(base) > 1:
            if exponent * math.log2(abs(base)) > MAX_RESULT_BITS:
                return (f"power({_short(base)}, {_short(exponent)}) would be an integer of more than "
                        f"{MAX_RESULT_BITS} bits, over the bound")
    if name == "round_number":
        number, places = values.get("number"), values.get("decimal_places")
        if type(number) is int and type(places) is int and -places > MAX_PRECISION:
            return f"decimal_places={places} is over the bound of {MAX_PRECISION} digits"
    return None


def _short(value: Any) -> str:
    text = repr(value) if not (type(value) is int and value.bit_length() > 200) else f"<an integer of {value.bit_length()} bits>"
    return text if len(text) <= 80 else text[:77] + "..."


def argument_bound_error(name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str | None:
    """The error result of a call whose numbers are past this harness's bounds (``MathAPI``'s
    ``precision``, ``power``'s exact result size, ``round_number``'s negative places), else ``None``.
    Names of BFCL's ``MathAPI`` only: no other backend has them."""
    params = _MATH.get(name)
    if params is None:
        return None
    values = dict(zip(params, args, strict=False))
    values.update({k: v for k, v in kwargs.items() if k in params})
    problem = _bound_problem(name, values)
    return None if problem is None else f"{ERROR_PREFIX}{problem} (a bound of this harness, not BFCL's)"


def _run(table: Mapping[str, Callable[..., Any]], name: str, args: Sequence[Any], kwargs: Mapping[str, Any],
         *, bounded: bool = True) -> str:
    bound = argument_bound_error(name, args, kwargs) if bounded else None
    if bound is not None:
        return bound
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


def execute_text(instances: Instances, text: str, table: Mapping[str, Callable[..., Any]] | None = None, *,
                 bounded: bool = True) -> str:
    """One call written as BFCL writes calls (``sort('final_report.pdf')``) run on ``instances``, in
    this process (``bounded``: after :func:`argument_bound_error`)."""
    parsed = _parsed(text)
    if isinstance(parsed, str):
        return parsed
    return _run(table if table is not None else method_table(instances), *parsed, bounded=bounded)


def precheck_text(text: str) -> str | None:
    """The error result of a call text that cannot run (not a call with literal arguments) or is
    past a bound, found without running it; ``None`` when it may run."""
    parsed = _parsed(text)
    if isinstance(parsed, str):
        return parsed
    return argument_bound_error(*parsed)


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


def make_op(involved_classes: Sequence[str], initial_config: Mapping[str, Any], *,
            long_context: bool = False) -> dict[str, Any]:
    """The holder operation that makes an entry's fresh instances (:func:`fresh_instances`)."""
    return {"op": "make", "classes": list(involved_classes), "config": dict(initial_config),
            "long_context": long_context}


def preload() -> None:
    """Import every backend module a holder process may need (the zygote does, before forking)."""
    from .wheel_code import WheelCodeError

    config = _config_module()
    for class_name, module_name in config.CLASS_FILE_PATH_MAPPING.items():
        if class_name in _UNSERVED or class_name.startswith("MemoryAPI"):
            continue  # the memory classes: through backend_class (their import writes folders)
        import_module(module_name)
    from .memory import SNAPSHOT_KEYS, backend_class

    for backend in SNAPSHOT_KEYS:
        try:
            backend_class(backend)
        except WheelCodeError:
            continue


_UNSERVED = frozenset({"MemoryAPI_vector", "WebSearchAPI"})  # heavy or networked at import; not served


def host_operation(op: Mapping[str, Any], sets: dict[str, Instances], tables: dict[str, Any]) -> dict[str, Any]:
    """One operation in a holder process (:mod:`.backend_host`) on its named instance sets."""
    kind, key = op.get("op"), str(op.get("key", ""))
    if kind == "make":
        sets[key] = fresh_instances(op["classes"], op["config"], long_context=bool(op.get("long_context")))
        tables[key] = method_table(sets[key])
        return {}
    if kind == "drop":
        for name in op.get("keys") or ():
            sets.pop(name, None)
            tables.pop(name, None)
        return {}
    if kind == "diff":
        from .multi_turn_checker import bounded_differences

        return {"difference": bounded_differences(sets[str(op["model"])], sets[str(op["gold"])])}
    if kind in ("memory_load", "memory_call", "memory_snapshot"):
        from .memory import memory_operation

        return memory_operation(op, sets)
    if key not in sets:
        return {"error": f"no instances named {key!r}"}
    if kind == "call":
        return {"text": execute_text(sets[key], str(op["text"]), tables[key], bounded=False)}
    return {"error": f"unknown operation {kind!r}"}


def session_holder(ctx: CallContext, key: str) -> Holder:
    """The MCP session's holder for ``key`` (a task id; the memory tools use a name of their own)."""
    held: dict[str, Holder] = ctx.state.setdefault(_STATE_KEY, {})
    holder = held.get(key)
    if holder is None:
        holder = held[key] = Holder()
    return holder


def stopped_text(exc: HostError, lost: str = "") -> str:
    """The error result of a call the holder could not do."""
    return (f"{ERROR_PREFIX}the call was {exc}; it changed nothing: this session's backends are as they were "
            f"before it{f' ({lost})' if lost else ''}")


async def host_call(holder: Holder, make: Mapping[str, Any], text: str) -> str:
    """One call text on the holder's instances (made by ``make`` on first use): BFCL's result
    string, or an error result (a call past a bound runs nowhere; one past the deadline is stopped)."""
    refused = precheck_text(text)
    if refused is not None:
        return refused
    try:
        if not holder.log:
            answer = await holder.arequest(dict(make, key="i"), deadline=backend_host.MAKE_DEADLINE_S, log=True)
            if answer.get("error"):
                return f"{ERROR_PREFIX}the backends could not be loaded: {answer['error']}"
        answer = await holder.arequest({"op": "call", "key": "i", "text": text}, log=True)
    except HostError as exc:
        return stopped_text(exc, holder.take_lost())
    lost = holder.take_lost()
    if answer.get("error"):
        return f"{ERROR_PREFIX}{answer['error']}"
    result = str(answer.get("text", ""))
    return result if not lost else f"{result}\n(note: this session's backends were reset: {lost})"


def backend_tool(doc: Mapping[str, Any], task_id: str, make: Mapping[str, Any], *,
                 annotations: Mapping[str, Any] | None = None) -> ToolSpec:
    """A function doc (named as the backend's method) as an MCP tool: schema mapped as
    :func:`.tools.to_schema` maps it; each call runs the method on the session's own instances
    (``make``: :func:`make_op`, done on the session's first call) in the session's holder process
    and answers BFCL's result string. A result that is an exception's text is flagged ``isError``
    (the text is what BFCL shows)."""
    name = str(doc.get("name", ""))

    async def run(spec: ToolLike, arguments: dict[str, Any], ctx: CallContext) -> ToolResult:
        text = await host_call(session_holder(ctx, task_id), make, call_text(name, arguments))
        return ToolResult(text=text, is_error=text.startswith(ERROR_PREFIX))

    return ToolSpec(name=name, description=str(doc.get("description", "")),
                    input_schema=to_schema(doc.get("parameters") or {}), executor=run, validation="warn",
                    annotations={"benchmark": NAME, "task_id": task_id, "bfcl_name": name, **(annotations or {})})
