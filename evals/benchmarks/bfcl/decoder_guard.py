"""BFCL's prompting decoders, imported from the wheel with their one ``eval`` bounded.

BFCL's Python-syntax decoder (``bfcl_eval.model_handler.utils``: ``ast_parse`` -> ``resolve_ast_by_type``)
reads a call's argument that is a binary operation (``x=2*3.14``) by handing its source to Python's
``eval``: a reply or a result file holding ``x=1+__import__('os').system(...)`` would run that code, and
``x=9**9**9`` would not end. The replies and result files are untrusted, so here the name ``eval`` of that
module (a global it looks up at each call) is :func:`bounded_eval`: the expression is evaluated only when it
is made of literals (numbers, texts, bytes, ``True``/``False``/``None``, lists, tuples, sets and dicts of
them) and operators (not a text's ``%``-formatting), each step within a bound on the size of its result; the value is the one Python's
``eval`` gives. Anything else (a name, a call, an attribute, a subscript, a comprehension, a bound passed)
raises :class:`NotEvaluated`, which BFCL's decoding callers take as a reply that does not decode
(``ast_decoder:decoder_failed``; in a multi-turn step: no call), where BFCL would have run the code. Its other
``eval`` (on a lambda's body) is never reached: BFCL's own line fails on the node before it.

Every use of BFCL's decoders goes through :func:`decoder_module` (:func:`.handlers.bfcl_code`,
:mod:`.prompting_turns`); the module object is the process's one, so the bound holds for every caller.

**Handlers with a decoder of their own** (:data:`OWN_DECODERS`): their ``decode_ast`` and ``decode_execute``
are BFCL's own methods, run by :func:`own_handler` on an instance made without ``__init__`` (which makes
clients and reads settings; the decoders read no instance state but ``is_fc_model``), their module's ``eval``
(Llama-3.1-FC's runs the whole text through it) bounded as above, after :func:`decoder_module` (the generic
decoders some of them call). Each class was read in the pinned wheel: a function of the result alone (no
I/O), its work linear in the text's size but for ``json.loads``, Python's parser and the bounded ``eval``.
Qwen-FC's, Granite-4's, Nanbeige's and Pelican-VL's ``re.findall`` of a lazy ``.*?`` between ``<tool_call>``
tags backtracks in quadratic time on a text of many opening tags (100 KB of them: seconds to minutes): their
module's ``re`` is :class:`_LinearRe`, the same matches in linear time. Left out, with the reason
:func:`.handlers.decoding_for` gives (:data:`OWN_REFUSED`): FunctionGemma's (its state-machine parser nests values
as deep as the text's brackets, unbounded) and those whose module imports an SDK that is not a dependency here (Cohere's;
MiniCPM-FC's ``datamodel_code_generator``); and the multi-turn files of Granite's (:data:`MULTI_TURN_REFUSED`).
"""

from __future__ import annotations

import ast
import functools
import json
import operator
import re
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

__all__ = ["MAX_BITS", "MAX_ITEMS", "MULTI_TURN_REFUSED", "OWN_DECODERS", "OWN_REFUSED", "NotEvaluated", "bounded_eval", "decoder_module",
           "json_arguments", "own_handler", "own_step"]

MAX_BITS = 100_000  # an integer result's size (bits): 9**9**9 is refused before it is computed
MAX_ITEMS = 1_000_000  # a text's, bytes' or sequence's length after + or *
MAX_SOURCE = 100_000  # characters of one expression

# the decoders whose re.findall of <tool_call>\n(.*?)\n</tool_call> runs as :class:`_LinearRe` (same matches)
_TAGGED = frozenset({"QwenFCHandler", "Granite4FCHandler", "NanbeigeFCHandler", "PelicanVLFCHandler"})
OWN_DECODERS = frozenset({
    "ArchHandler", "BitAgentHandler", "Falcon3FCHandler", "GLMHandler", "GorillaHandler", "Granite3FCHandler",
    "GraniteFunctionCallingHandler", "HammerHandler", "LlamaHandler_3_1", "MiningHandler", "PhiFCHandler",
    "PhiHandler", "SalesforceLlamaHandler", "SalesforceQwenHandler", "ThinkAgentHandler", *_TAGGED,
})
OWN_REFUSED = {
    "FunctionGemmaHandler": ("its parser nests values as deep as the text's brackets, without a bound ('{a:' and 10,000 '[' "
                             "make a value no JSON writer takes back), and its regex between call tokens is "
                             "quadratic on many opening tokens"),
    "CohereHandler": "its module imports the cohere SDK, not a dependency here",
    "MiniCPMFCHandler": "its module imports datamodel_code_generator, not a dependency here",
}
# own decoders whose decode_execute passes a reply's text on as a call when it is not JSON: BFCL's multi-turn
# checker runs that text through eval (``[ls(), cd(folder='a')]`` runs both), which the replay here does not
MULTI_TURN_REFUSED = {
    "GraniteFunctionCallingHandler": "its decode_execute passes a reply's text that is not JSON on as a call, which "
                                     "BFCL's checker runs through Python's eval; the replay here runs plain calls only",
}

_TAG_PATTERNS = {r"<tool_call>\n(.*?)\n</tool_call>": ("<tool_call>\n", "\n</tool_call>")}


class _LinearRe:
    """The ``re`` the tagged decoders' modules see (:data:`_TAGGED`): its ``findall`` of a pattern of
    :data:`_TAG_PATTERNS` with ``re.DOTALL`` gives ``re.findall``'s matches in linear time (the leftmost match
    starts at the next opening tag, when any closing tag follows it, and ends at the first closing tag after it;
    the search goes on after that), where the regex backtracks in quadratic time on many opening tags. Any other
    pattern is not run (:class:`NotEvaluated`); every other name is the ``re`` module's."""

    def __getattr__(self, name: str) -> Any:
        return getattr(re, name)

    @staticmethod
    def findall(pattern: Any, string: Any, flags: int = 0) -> list[str]:
        tags = _TAG_PATTERNS.get(pattern) if flags == re.DOTALL else None
        if tags is None:
            raise NotEvaluated(f"not evaluated: a regex this guard does not run ({str(pattern)[:60]!r})")
        if not isinstance(string, str):
            raise TypeError(f"expected string or bytes-like object, got {type(string).__name__!r}")  # as re.findall
        opening, closing = tags
        found, at = [], 0
        while (start := string.find(opening, at)) >= 0:
            end = string.find(closing, start + len(opening))
            if end < 0:
                break
            found.append(string[start + len(opening):end])
            at = end + len(closing)
        return found


_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.LShift: operator.lshift,
    ast.RShift: operator.rshift, ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.BitAnd: operator.and_,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos, ast.USub: operator.neg, ast.Not: operator.not_, ast.Invert: operator.invert,
}
_CONSTANTS = (int, float, complex, str, bytes, bool, type(None))


class NotEvaluated(ValueError):
    """An expression of a reply that is not evaluated here (it holds code, or passes a bound)."""


def _bits(value: Any) -> int:
    return abs(value).bit_length() if isinstance(value, int) else 0


def _size(value: Any) -> int:
    return len(value) if isinstance(value, str | bytes | list | tuple) else 0


def _check_operands(op: type[ast.operator], left: Any, right: Any) -> None:
    """Refuse an operation whose result would pass a bound, before computing it."""
    ints = isinstance(left, int) and isinstance(right, int)
    if op is ast.Pow and ints and right > 0 and _bits(left) > 1 and (_bits(left) - 1) * right > MAX_BITS:
        raise NotEvaluated(f"a power of over {MAX_BITS} bits")
    if op is ast.LShift and ints and right > MAX_BITS:
        raise NotEvaluated(f"a shift of over {MAX_BITS} bits")
    if op is ast.Mult:
        if ints and _bits(left) + _bits(right) > MAX_BITS:
            raise NotEvaluated(f"a product of over {MAX_BITS} bits")
        for seq, times in ((left, right), (right, left)):
            if _size(seq) and isinstance(times, int) and _size(seq) * times > MAX_ITEMS:
                raise NotEvaluated(f"a repetition of over {MAX_ITEMS} items")
    if op is ast.Add and _size(left) + _size(right) > MAX_ITEMS:
        raise NotEvaluated(f"a concatenation of over {MAX_ITEMS} items")
    if op is ast.Mod and isinstance(left, str | bytes):
        raise NotEvaluated("not evaluated: %-formatting (its widths are unbounded)")


def _value(node: ast.AST) -> Any:
    if isinstance(node, ast.Expression):
        return _value(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, _CONSTANTS):
        return node.value
    if isinstance(node, ast.List):
        return [_value(e) for e in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_value(e) for e in node.elts)
    if isinstance(node, ast.Set):
        return {_value(e) for e in node.elts}
    if isinstance(node, ast.Dict) and all(k is not None for k in node.keys):
        return {_value(k): _value(v) for k, v in zip(node.keys, node.values, strict=True) if k is not None}
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        operand = _value(node.operand)
        if isinstance(node.op, ast.Invert | ast.USub) and _bits(operand) > MAX_BITS:
            raise NotEvaluated(f"an integer of over {MAX_BITS} bits")
        return _UNARY[type(node.op)](operand)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _value(node.left), _value(node.right)
        _check_operands(type(node.op), left, right)
        return _BINARY[type(node.op)](left, right)
    raise NotEvaluated(f"not evaluated: {type(node).__name__} (code, not a literal)")


def bounded_eval(source: Any, *_: Any) -> Any:
    """Python's ``eval`` of ``source`` where it is literals and operators within the bounds (module
    docstring); :class:`NotEvaluated` otherwise."""
    if not isinstance(source, str) or len(source) > MAX_SOURCE:
        raise NotEvaluated("not evaluated: not a short expression text")
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, RecursionError, ValueError) as exc:
        raise NotEvaluated(f"not evaluated: {type(exc).__name__}") from None
    try:
        return _value(tree)
    except RecursionError:
        raise NotEvaluated("not evaluated: nested too deeply") from None


_STRICT = json.JSONEncoder(allow_nan=False)  # json.dumps(value, allow_nan=False)'s, made once (not per call)


def json_arguments(arguments: Any) -> tuple[dict[str, Any], bool]:
    """A decoded call's arguments as JSON values (what a trace holds and an MCP call takes), and whether they
    were so already. BFCL's Python decoder also gives bytes and complex numbers (``x=b'a'``, ``x=1j``): those
    become their ``repr`` text; checked as BFCL checks a value of another type, but for a text parameter,
    where such a value is a wrong text here (``value_error``) and of the wrong type in BFCL (``type_error``)."""
    value = dict(arguments) if isinstance(arguments, dict) else {}
    try:
        _STRICT.encode(value)
    except (TypeError, ValueError):
        from .backend_calls import jsonable

        return jsonable(value), False
    return value, True


@functools.cache
def decoder_module() -> ModuleType:
    """BFCL's ``bfcl_eval.model_handler.utils`` (from the pinned wheel, :mod:`.wheel_code`), its ``eval``
    bounded (module docstring)."""
    from .wheel_code import import_with_project_root

    module: ModuleType = import_with_project_root("bfcl_eval.model_handler.utils")
    module.eval = bounded_eval  # type: ignore[attr-defined]  # the global its decoder looks up, not a builtin
    return module


@functools.cache
def own_handler(handler: str, module: str, is_fc_model: bool) -> Any:
    """An instance of BFCL's handler class ``handler`` (in ``module``) whose own ``decode_ast`` and
    ``decode_execute`` may run on untrusted text (module docstring); ValueError when they are not those of a
    class of :data:`OWN_DECODERS`."""
    from .wheel_code import import_with_project_root

    decoder_module()  # the generic decoders' eval, which some of these call, bounded first
    cls = getattr(import_with_project_root(module), handler)
    for klass in cls.__mro__:  # the globals its decoders look up are their defining module's (a base's may differ)
        defining = sys.modules[klass.__module__]
        if klass.__name__ in OWN_DECODERS:
            defining.eval = bounded_eval  # type: ignore[attr-defined]  # a global, found before the builtin
        if klass.__name__ in _TAGGED:
            defining.re = _LinearRe()  # type: ignore[attr-defined]  # what its _extract_tool_calls calls
    for method in ("decode_ast", "decode_execute"):
        owner = getattr(cls, method).__qualname__.split(".")[0]
        if owner not in OWN_DECODERS and owner not in ("OSSHandler", "OpenAICompletionsHandler"):
            raise ValueError(f"BFCL's {handler}.{method} is {owner}'s, which is not run on result files here")
    made = cls.__new__(cls)  # not __init__: it makes clients and reads settings the decoders do not use
    made.is_fc_model = is_fc_model
    return made


def own_step(handler: Any, step: Any) -> list[dict[str, Any]] | None:
    """One step of a multi-turn, memory or web-search result decoded by the handler's own ``decode_execute``, as
    BFCL's eval runner calls it: the call texts it gives, each ``{"name", "arguments": {}, "text"}`` (the text is
    what the checker runs); ``[]`` when BFCL's ``is_empty_execute_response`` says it holds none; None when the
    decoding raises."""
    from .wheel_code import import_with_project_root

    empty = import_with_project_root("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils").is_empty_execute_response
    try:
        texts = handler.decode_execute(step, has_tool_call_tag=False)
        if empty(texts):
            return []
        return [{**_shown_call(str(t)), "text": str(t)} for t in texts]
    except Exception:  # noqa: BLE001 - BFCL's runner drops a step whose decoding raises
        return None


def _shown_call(text: str) -> dict[str, Any]:
    """``{"name", "arguments"}`` of a call text as the trace shows it (its literal keyword arguments; ``{}`` and the
    text before ``(`` when it is not such a call); the checker runs the text itself."""
    try:
        node = ast.parse(text, mode="eval").body
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.args:
            arguments = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg is not None}
            return {"name": node.func.id, "arguments": json_arguments(arguments)[0]}
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
        pass
    return {"name": text.split("(", 1)[0], "arguments": {}}
