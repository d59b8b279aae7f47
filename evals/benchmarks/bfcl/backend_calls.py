"""Running BFCL's backend calls in this process: what a holder process (:mod:`.backend_host`) does.

This module imports no MCP code (the holder processes' zygote imports it, and BFCL's backend
modules, once): :mod:`.backends` serves these calls as MCP tools, each in a session's holder process.

* :func:`fresh_instances` — new instances of an entry's ``involved_classes``, each initialised from
  its part of the entry's ``initial_config`` (a deep copy) as BFCL does (``_load_scenario(config,
  long_context=...)``; a stateless class such as ``MathAPI`` is only constructed);
* :func:`execute` / :func:`execute_text` — one call on those instances, its result as the string BFCL
  shows the model (a ``str`` as it is, a ``dict`` as JSON, anything else ``str()``; an exception as
  ``"Error during execution: ..."``), after :func:`argument_bound_error`;
* :func:`public_state` / :func:`state_differences` / :func:`bounded_differences` — what the
  multi-turn checker compares;
* :func:`host_operation` — one operation of a holder process (make, call, diff, drop, memory; a
  scoring's replay of entries is :mod:`.multi_turn_replay`'s);
* :func:`backend_class` / :func:`memory_operation` — BFCL's memory backends.

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
import functools
import inspect
import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .wheel_code import import_module, import_with_project_root

__all__ = ["ERROR_PREFIX", "MAX_DETAIL_CHARS", "MAX_PRECISION", "MAX_RESULT_BITS", "SNAPSHOT_KEYS", "BackendError",
           "Instances", "argument_bound_error", "backend_class", "bounded_differences", "call_text", "execute",
           "execute_text", "fresh_instances", "host_operation", "jsonable", "make_op", "memory_operation",
           "method_table", "precheck_text", "preload", "preload_memory", "public_state", "state_differences",
           "stateless_classes", "warm_up"]

MAX_DETAIL_CHARS = 20_000  # a state difference is kept for the viewer up to this size (as JSON)
Instances = dict[str, Any]  # class name -> instance, in the entry's order
ERROR_PREFIX = "Error during execution: "
# names BFCL's executor refuses to run whatever they are (a guard against its own eval)
_REFUSED = ("kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run")

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


@functools.cache  # one pinned wheel per process (wheel_code): a class is looked up once
def _backend(class_name: str) -> tuple[type, bool]:
    """BFCL's backend class of that name and whether BFCL constructs it without a config."""
    config = _config_module()
    module_name = config.CLASS_FILE_PATH_MAPPING.get(class_name)
    if module_name is None:
        raise BackendError(f"BFCL has no backend class {class_name!r}")
    return getattr(import_module(module_name), class_name), class_name in config.STATELESS_CLASSES


def fresh_instances(involved_classes: Sequence[str], initial_config: Mapping[str, Any], *,
                    long_context: bool = False, copy_config: bool = True) -> Instances:
    """New instances of ``involved_classes``, each loaded from a deep copy of its initial config
    (``copy_config=False``: from the config's own parts, for a config no one else holds, such as
    one just decoded from a message)."""
    out: Instances = {}
    for class_name in involved_classes:
        cls, stateless = _backend(class_name)
        instance = cls()
        if not stateless:
            part = dict(initial_config.get(class_name, {}))
            instance._load_scenario(copy.deepcopy(part) if copy_config else part, long_context=long_context)
        out[class_name] = instance
    return out


_method_names: dict[type, tuple[str, ...]] = {}  # a class's public methods, as found on its first instance


def method_table(instances: Instances) -> dict[str, Callable[..., Any]]:
    """Every public method of the instances by name; a name two classes share goes to the later class."""
    table: dict[str, Callable[..., Any]] = {}
    for instance in instances.values():
        names = _method_names.get(type(instance))
        own = vars(instance)
        if names is None or any(n in own for n in names) or any(inspect.ismethod(v) for v in own.values()):
            # first instance of its class, or one whose own attributes could change what it has
            found = [(n, m) for n, m in inspect.getmembers(instance, predicate=inspect.ismethod)
                     if not n.startswith("_")]
            if names is None and not any(inspect.ismethod(v) for v in own.values()):
                _method_names[type(instance)] = tuple(n for n, _ in found)
            table.update(found)
        else:
            table.update((n, getattr(instance, n)) for n in names)
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


_Shape = tuple[str, tuple[Any, ...], tuple[tuple[str, Any], ...], bool]


def _parsed(text: str) -> tuple[str, list[Any], dict[str, Any]] | str:
    """(name, positional, keyword) of a plain call with literal arguments, or the error text. An
    argument that could change (a list, a dict, a set) is a new object at every call (a method may
    change what it is given); the parse of a short text is kept (:func:`_kept_shape`)."""
    shape = _kept_shape(text) if len(text) <= _KEPT_SHAPE_CHARS else _shape(text)
    if isinstance(shape, str):
        return shape
    name, arg_nodes, keyword_nodes, starred = shape
    try:
        args = [_value(a) for a in arg_nodes]
        kwargs = {k: _value(v) for k, v in keyword_nodes}
    except (ValueError, TypeError, SyntaxError, RecursionError) as exc:
        return f"{ERROR_PREFIX}an argument is not a literal ({exc})"
    if starred:
        return f"{ERROR_PREFIX}**-arguments are not supported"
    return name, args, kwargs


def _shape(text: str, keep: bool = False) -> _Shape | str:
    """A call text parsed: its name, its arguments (positional, then keyword ones by name: each the
    node to evaluate, or, to be kept (``keep``), a value that cannot change, :class:`_Fixed`) and
    whether it has ``**`` arguments; or the error text."""
    try:
        tree = ast.parse(text, filename="<string>", mode="eval")
    except SyntaxError as exc:
        return f"{ERROR_PREFIX}{exc}"
    call = tree.body
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
        return f"{ERROR_PREFIX}not a plain function call: {text[:200]}"
    argument = _fixed if keep else _node
    named = tuple((k.arg, argument(k.value)) for k in call.keywords if k.arg is not None)
    return call.func.id, tuple(argument(a) for a in call.args), named, len(named) != len(call.keywords)


def _node(node: ast.expr) -> Any:
    return node


class _Fixed:
    """An argument's value that no call can change (a number, a string, a tuple of them), evaluated once."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _fixed(node: ast.expr) -> Any:
    """``node``'s value when it is a literal that cannot change, else the node (evaluated at each call:
    a new object each time, or the error it raises)."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return node
    return _Fixed(value) if _immutable(value) else node


def _immutable(value: Any, depth: int = 0) -> bool:
    if value is None or type(value) in (bool, int, float, complex, str, bytes):
        return True
    return type(value) in (tuple, frozenset) and depth < 16 and all(_immutable(v, depth + 1) for v in value)


def _value(argument: Any) -> Any:
    return argument.value if type(argument) is _Fixed else ast.literal_eval(argument)


# A scoring's holder parses each call text it runs (ast.parse: about 10 us); the texts repeat (BFCL's
# 800 multi-turn entries' 3,111 gold calls are 523 texts; a model's calls repeat the gold's and their
# own): the parse of a short text is kept. Bounded: at most this many, each of a short text.
_kept_shape = functools.lru_cache(maxsize=4096)(functools.partial(_shape, keep=True))
_KEPT_SHAPE_CHARS = 400


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
    past a bound, found without running it; ``None`` when it may run. A short text's answer is kept
    (a scoring checks each gold call, and an oracle's calls are the gold's, every time it replays)."""
    if len(text) > _PRECHECKED_CHARS:
        return _precheck(text)
    return _prechecked(text, MAX_PRECISION, MAX_RESULT_BITS)  # the bounds in the key: a test may move them


def _precheck(text: str) -> str | None:
    parsed = _parsed(text)
    if isinstance(parsed, str):
        return parsed
    return argument_bound_error(*parsed)


@functools.lru_cache(maxsize=8192)
def _prechecked(text: str, precision: int, bits: int) -> str | None:
    return _precheck(text)


_PRECHECKED_CHARS = 2000


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


def preload(*, memory: bool = True) -> None:
    """Import every backend module a holder process may need (the zygote does, before forking);
    ``memory=False``: the multi-turn backends only (:func:`preload_memory` imports the rest later)."""
    config = _config_module()
    for class_name, module_name in config.CLASS_FILE_PATH_MAPPING.items():
        if class_name in _UNSERVED or class_name.startswith("MemoryAPI"):
            continue  # the memory classes: through backend_class (their import writes folders)
        import_module(module_name)
    if memory:
        preload_memory()


def warm_up() -> None:
    """Run once, in the zygote, the first steps of every holder: each served class made from a small
    state (in both ``long_context`` modes) and its method table, a call text parsed, JSON both
    ways. A child then finds those caches filled and that code already specialised (CPython rewrites a
    function's bytecode as it warms up), instead of copying the pages they are on. No method of
    BFCL's is called: nothing that could change a module's state runs."""
    config = _config_module()
    for class_name in config.CLASS_FILE_PATH_MAPPING:
        if class_name in _UNSERVED or class_name.startswith("MemoryAPI"):
            continue
        for _ in range(_WARM_ROUNDS):
            for long_context in (False, True):
                method_table(fresh_instances([class_name], _WARM_CONFIG, long_context=long_context))
    for _ in range(_WARM_ROUNDS):
        execute_text({}, "no_such_function(a='x', b=[1, 2.5, None])", {})
        json.loads(json.dumps({"op": "call", "key": "i", "text": "ls(a=True)"}))


_WARM_ROUNDS = 10  # CPython specialises a function's code after a few calls
# a file system of a few folders and a file (the others: their default state), as BFCL's entries give one
_WARM_CONFIG = {"GorillaFileSystem": {"root": {"w": {"type": "directory", "contents": {
    "d": {"type": "directory", "contents": {"f.txt": {"type": "file", "content": "x"}}},
    "g.txt": {"type": "file", "content": "y"}}}}}}


def preload_memory() -> None:
    """Import BFCL's memory backends (``rank_bm25``, and with it numpy: about 40% more memory in a
    process, which each fork of it copies page tables and pages for) and a named local embedding model."""
    from .wheel_code import WheelCodeError

    for backend in SNAPSHOT_KEYS:
        if backend == "vector":
            continue  # .memory_vector: only with a local embedding model
        try:
            backend_class(backend)
        except WheelCodeError:
            continue
    from .memory_vector import preload_vector

    preload_vector()  # when an embedding model was named before the zygote started


_UNSERVED = frozenset({"MemoryAPI_vector", "WebSearchAPI"})  # heavy or networked at import; not served


def host_operation(op: Mapping[str, Any], sets: dict[str, Instances], tables: dict[str, Any]) -> dict[str, Any]:
    """One operation in a holder process (:mod:`.backend_host`) on its named instance sets (a scoring's
    ``replay`` of entries is :mod:`.multi_turn_replay`'s)."""
    kind, key = op.get("op"), str(op.get("key", ""))
    if kind == "make":  # the config was just decoded from the message: this process's own
        sets[key] = fresh_instances(op["classes"], op["config"], long_context=bool(op.get("long_context")),
                                    copy_config=False)
        tables[key] = method_table(sets[key])
        return {}
    if kind == "drop":
        for name in op.get("keys") or ():
            sets.pop(name, None)
            tables.pop(name, None)
        return {}
    if kind == "diff":
        return {"difference": bounded_differences(sets[str(op["model"])], sets[str(op["gold"])])}
    if kind in ("memory_load", "memory_call", "memory_snapshot"):
        if op.get("backend") == "vector":
            from .memory_vector import vector_operation  # its module loads a local embedding model

            done = vector_operation(op, sets)  # a load or a snapshot; a call's instance made
            if done is not None:
                return done
        return memory_operation(op, sets)
    if kind == "web_call":
        from .web_fetch import web_operation  # BFCL's web search (bounded HTTP)

        return web_operation(op, sets)
    if key not in sets:
        return {"error": f"no instances named {key!r}"}
    if kind == "call":
        return {"text": execute_text(sets[key], str(op["text"]), tables[key], bounded=False)}
    return {"error": f"unknown operation {kind!r}"}



# what BFCL's _flush_memory_to_local_file writes (and _load_scenario reads back), per backend
SNAPSHOT_KEYS: dict[str, tuple[str, ...]] = {"kv": ("core_memory", "archival_memory"), "rec_sum": ("memory",),
                                             "vector": ("core_memory", "archival_memory")}
_MODULE = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code.memory_{}"


def backend_class(backend: str, wheel: Path | None = None) -> type:
    """BFCL's ``MemoryAPI_<backend>`` class, imported from the pinned wheel.

    BFCL's ``constants.eval_config`` (imported by the memory base class) creates ``result/``, ``score/``
    and ``.file_locks/`` under ``BFCL_PROJECT_ROOT`` (default: beside the package, here inside the
    wheel, which fails); they are made in a temporary folder, removed once the import is done.
    """
    if backend not in SNAPSHOT_KEYS:
        raise ValueError(f"no served BFCL memory backend {backend!r}; served: {', '.join(SNAPSHOT_KEYS)}")
    module = import_with_project_root(_MODULE.format(backend), wheel)  # its eval_config makes folders
    cls: type = getattr(module, f"MemoryAPI_{backend}")
    return cls


def _rendered(value: Any) -> str:
    """A backend method's return value as BFCL shows it to the model."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


def memory_operation(op: Mapping[str, Any], sets: dict[str, Any]) -> dict[str, Any]:
    """One memory operation in a holder process (:mod:`.backend_host`): ``memory_load`` (a fresh
    instance holding a snapshot), ``memory_call`` (a method, by BFCL's name, with keyword arguments:
    the instance is made on first use) or ``memory_snapshot``."""
    kind, key, backend = op.get("op"), str(op.get("key", "")), str(op.get("backend"))
    if kind == "memory_load":
        fresh = backend_class(backend)()
        snapshot = op.get("snapshot")
        if snapshot:
            for name in SNAPSHOT_KEYS[backend]:
                setattr(fresh, name, copy.deepcopy(snapshot[name]))
        sets[key] = {"memory": fresh}
        return {"context": fresh._dump_core_memory_to_context()}
    if key not in sets:
        sets[key] = {"memory": backend_class(backend)()}
    instance = sets[key]["memory"]
    if kind == "memory_snapshot":
        return {"snapshot": {k: copy.deepcopy(getattr(instance, k)) for k in SNAPSHOT_KEYS[backend]}}
    name = str(op.get("name", ""))
    method = getattr(instance, name, None) if name and not name.startswith("_") else None
    try:
        if method is None:
            raise AttributeError(f"no function {op.get('served')}")
        return {"text": _rendered(method(**dict(op.get("arguments") or {})))}
    except Exception as exc:  # noqa: BLE001 - BFCL hands any failure back to the model as text
        return {"text": f"{ERROR_PREFIX}{exc}", "is_error": True}



def jsonable(value: Any, depth: int = 0, seen: frozenset[int] = frozenset()) -> Any:
    """A backend value as JSON for the viewer: objects as their public attributes (a ``parent``
    link or an object already on the path shown by its class name), bounded in depth."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if depth > 12 or id(value) in seen:
        return f"<{type(value).__name__}>"
    inner = seen | {id(value)}
    if isinstance(value, Mapping):
        return {str(k): jsonable(v, depth + 1, inner) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [jsonable(v, depth + 1, inner) for v in value]
    if hasattr(value, "__dict__"):
        return {"__class__": type(value).__name__,
                **{k: jsonable(v, depth + 1, inner) for k, v in vars(value).items()
                   if not k.startswith("_") and k != "parent"}}
    return repr(value)


def _bounded(value: Any) -> Any:
    shown = jsonable(value)
    text = json.dumps(shown, ensure_ascii=False, default=str)
    return shown if len(text) <= MAX_DETAIL_CHARS else text[:MAX_DETAIL_CHARS] + " ... (cut)"


def bounded_differences(model: Instances, gold: Instances) -> dict[str, Any] | None:
    """The first backend (in the gold order) whose public state differs: its class and the
    differences, each side bounded for the viewer; ``None`` when every backend matches."""
    for class_name, gold_instance in gold.items():
        differences = state_differences(model[class_name], gold_instance)
        if differences:
            return {"class": class_name, "differences": {k: {"model": _bounded(v["model"]),
                                                             "ground_truth": _bounded(v["ground_truth"])}
                                                         for k, v in differences.items()}}
    return None


