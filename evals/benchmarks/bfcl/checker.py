"""BFCL's AST checker, re-implemented: one entry's calls judged by the rules of its ``ast_checker``.

The rules, in the order the official checker applies them (quirks included, since the numbers must
be BFCL's to the last digit; ``tests/evals/benchmarks/bfcl/test_bfcl_fidelity.py`` runs BFCL's own
checker beside this one):

* a call list is a list of ``{name: arguments}``; a call whose arguments are not JSON could not be
  decoded: the whole entry fails to decode (wrong for the AST categories, right for irrelevance);
* ``simple_python`` wants exactly one call; ``multiple`` wants as many calls as possible answers
  (one) and checks the first against the first answer; ``parallel`` and ``parallel_multiple`` want
  as many calls as answers and match them greedily in any order (each answer, in turn, takes the
  first call not yet taken that it accepts);
* a call is right when its name is the answer's (function names compared as served, a dot as ``_``),
  every required parameter is given, every given parameter is both documented and in the answer,
  each value passes the type check and the value check, and every answer parameter not given
  allows ``""`` (i.e. is optional);
* type check: the exact Python type of the BFCL type name (``bool`` is not an ``integer``; ``any``
  is a string; a prompting model's Python tuple is not an ``array``, and is a list for ``tuple``); an
  ``int`` is accepted for ``float``; arrays and tuples check their items one level
  deep against at least one list answer; a value of the type of the first non-``""`` answer passes
  as a "variable" (and is then compared exactly, without normalisation);
* value check: strings (also in lists and dict values) compared after removing `` ,./-_*^``,
  lower-casing and turning ``'`` into ``"``; lists compared whole with their strings so normalised;
  dicts key by key (a missing key is allowed when its answers include ``""``); lists of dicts
  element by element; anything else must be one of the answers;
* Java and JavaScript (``simple_java``, ``simple_javascript``): every value must be a string (else
  ``type_error:java`` / ``type_error:js``), the text of a value, which is read by BFCL's
  ``type_convertor`` rules (:mod:`.type_conversion`) for the declared type before the type and value
  checks above (without Python's int-to-float allowance);
* ``irrelevance`` and ``live_irrelevance``: right exactly when the model made no call (or its calls
  could not be decoded); ``live_relevance``: right exactly when it made at least one decodable call,
  whatever it called.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .files import language, served_name
from .type_conversion import JAVA_TYPES, JS_TYPES, NESTED_TYPES, Unconvertible, java_value, js_value

__all__ = ["Verdict", "check_calls", "normalise", "param_ok"]

# BFCL's Python type names -> the Python type a value must have exactly
_PY_TYPE: dict[str, type] = {"string": str, "integer": int, "float": float, "boolean": bool, "array": list,
                             "tuple": list, "dict": dict, "any": str}
_STRIPPED = str.maketrans("", "", " ,./-_*^")


@dataclass(frozen=True)
class Verdict:
    """One entry's verdict: right or not, and (when not) BFCL's error type and a readable reason."""

    valid: bool
    error_type: str = ""
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"valid": self.valid, "error_type": self.error_type, "error": self.error}


_OK = Verdict(True)

# trace object id -> (the trace, its entry id, its verdict): verdicts made while a result folder was read
# (:mod:`.results_split`), of the very trace objects the scoring then gets; for this process only
_handed: dict[int, tuple[Mapping[str, Any], str, Verdict]] = {}


def hand_over(entry_id: str, trace: Mapping[str, Any], verdict: Verdict) -> None:
    """``verdict`` is the verdict of ``trace`` (this object, unchanged) for entry ``entry_id``
    (:func:`.single_turn.entry_verdict`): the scoring takes it (:func:`handed_verdict`) instead of checking the calls
    again (the trace object is kept with it, so that its id is no other's)."""
    _handed[id(trace)] = (trace, entry_id, verdict)


def drop_handed() -> None:
    """Forget the verdicts handed over so far (a new folder is read: the traces of the last one are not kept for them)."""
    _handed.clear()


def handed_verdict(entry_id: str, trace: Mapping[str, Any] | None) -> Verdict | None:
    """The verdict handed over for this very trace object and entry (:func:`hand_over`), if any."""
    handed = _handed.get(id(trace))
    return handed[2] if handed is not None and handed[0] is trace and handed[1] == entry_id else None


def normalise(text: str) -> str:
    """A string as the checker compares it: without `` ,./-_*^``, lower-cased, ``'`` as ``"``."""
    return text.translate(_STRIPPED).lower().replace("'", '"')


def _norm_if_str(value: Any) -> Any:
    return normalise(value) if type(value) is str else value


def _answer_type(answers: Sequence[Any]) -> type | None:
    """The type of the first answer that is not the optional marker ``""``."""
    return next((type(a) for a in answers if a != ""), None)


def _type_ok(value: Any, answers: Sequence[Any], expected: type, inner: type | None) -> tuple[bool, bool, str]:
    """(passes, is a "variable", the error type when it does not pass): the checker's type rule."""
    answer_type = _answer_type(answers)
    items: list[Any] = value if isinstance(value, list) else []
    variable = answer_type is not None and answer_type != expected
    error = "type_error:simple"
    if type(value) is expected:
        if inner is None:
            return True, variable, ""
        for answer in answers:  # the items must fit at least one list answer; a non-list answer fits
            if type(answer) is not list or all(_type_ok(item, answer, inner, None)[0] for item in items):
                return True, variable, ""
        error = "type_error:nested"  # kept when the value then passes as a "variable", yet fails
        if answer_type is not None and type(value) is answer_type:
            return False, True, error
    if answer_type is not None and type(value) is answer_type:
        return True, True, ""
    return False, variable, "type_error:simple"


def _dict_ok(value: Mapping[str, Any], answers: Sequence[Any]) -> Verdict:
    verdict = Verdict(False, "dict_checker:unclear")
    for answer in answers:
        if answer == "":
            continue
        verdict, fits = Verdict(False, "dict_checker:unclear"), True
        for key, item in value.items():
            if key not in answer:
                verdict, fits = Verdict(False, "value_error:dict_key", f"unexpected key {key!r}"), False
                break
            if _norm_if_str(item) not in [_norm_if_str(a) for a in answer[key]]:
                verdict, fits = Verdict(False, "value_error:dict_value", f"key {key!r}: {item!r}"), False
                break
        for key, options in answer.items():
            if key not in value and "" not in options:
                verdict, fits = Verdict(False, "value_error:dict_key", f"missing key {key!r}"), False
                break
        if fits:
            return _OK
    return verdict


def _list_of_dicts_ok(value: Sequence[Any], answers: Sequence[Any]) -> Verdict:
    verdict = Verdict(False, "list_dict_checker:unclear")
    for answer in answers:
        if len(value) != len(answer):
            verdict = Verdict(False, "value_error:list_dict_count", "wrong number of dictionaries")
            continue
        fits = True
        for item, expected in zip(value, answer, strict=True):
            verdict = _dict_ok(item, [expected]) if isinstance(item, dict) else Verdict(False, "value_error:dict_key")
            if not verdict.valid:
                fits = False
                break
        if fits:
            return _OK
    return verdict


def _value_ok(param: str, value: Any, answers: Sequence[Any], expected: type, inner: type | None) -> Verdict:
    """The value rule for a value that passed its type check as a value (not a "variable")."""
    if expected is dict:
        return _dict_ok(value, answers)
    if expected is list and inner is dict:
        return _list_of_dicts_ok(value, answers)
    if expected is str:
        ok = normalise(value) in [normalise(a) for a in answers if type(a) is str]
        return _OK if ok else Verdict(False, "value_error:string", f"{param}: {value!r} (expected one of {answers})")
    if expected is list:
        mine = [_norm_if_str(v) for v in value]
        theirs = [[_norm_if_str(v) for v in a] if isinstance(a, list | str) else None for a in answers]
        return _OK if mine in theirs else Verdict(False, "value_error:list/tuple",
                                                  f"{param}: {value!r} (expected one of {answers})")
    return _OK if value in answers else Verdict(False, "value_error:others", f"{param}: {value!r}")


def _converted(lang: str, param: str, value: Any, type_name: str,
               props: Mapping[str, Any]) -> tuple[Any, type, type | None] | Verdict:
    """(value, its expected Python type, its items' type) after the language's rules; a Java or
    JavaScript value must be the text of one and is read as BFCL's converters read it."""
    if lang == "python":
        expected = _PY_TYPE.get(type_name)
        if expected is None:
            return Verdict(False, "type_error:unknown", f"{param}: BFCL type {type_name!r} is not a Python type")
        inner = _PY_TYPE.get(props[param]["items"]["type"]) if type_name in ("array", "tuple") else None
        if type_name == "tuple" and type(value) is tuple:  # BFCL: a tuple is a list where the type is tuple
            value = list(value)
        if type_name == "float" and type(value) is int:
            try:
                value = float(value)
            except OverflowError:  # BFCL's checker stops here (float() raises): the import warns of it
                return Verdict(False, "type_error:simple", f"{param}: an integer beyond a float's range")
        return value, expected, inner
    types, read = (JAVA_TYPES, java_value) if lang == "java" else (JS_TYPES, js_value)
    short = "java" if lang == "java" else "js"
    if type_name not in types:
        return Verdict(False, "type_error:unknown", f"{param}: {type_name!r} is not a BFCL {lang} type")
    if type(value) is not str:
        return Verdict(False, f"type_error:{short}",
                       f"{param}: a {lang} value is sent as its text, not as {type(value).__name__}")
    nested = props[param]["items"]["type"] if type_name in NESTED_TYPES else None
    if nested is not None and nested not in types:
        return Verdict(False, "type_error:unknown", f"{param}: items of {nested!r} are not a BFCL {lang} type")
    try:
        return read(value, type_name, nested), types[type_name], (types[nested] if nested is not None else None)
    except Unconvertible as exc:
        return Verdict(False, "type_error:unknown", f"{param}: {exc}")


def param_ok(doc: Mapping[str, Any], options: Mapping[str, Any], param: str, value: Any,
             lang: str = "python") -> Verdict:
    """One argument of a call against the answer's possible values (``options``: param -> values)
    and the function's doc: the checker's rules for a parameter given."""
    props: Mapping[str, Any] = doc["parameters"]["properties"]
    if param not in props or param not in options:
        return Verdict(False, "simple_function_checker:unexpected_param", f"unexpected parameter {param!r}")
    type_name = props[param]["type"]
    converted = _converted(lang, param, value, type_name, props)
    if isinstance(converted, Verdict):
        return converted
    value, expected, inner = converted
    ok, variable, error = _type_ok(value, options[param], expected, inner)
    if not ok:
        return Verdict(False, error, f"{param}: {type(value).__name__} is not {type_name}")
    if not variable and expected in (dict, str, list):
        return _value_ok(param, value, options[param], expected, inner)
    if value not in options[param]:
        return Verdict(False, "value_error:others", f"{param}: {value!r} (expected one of {options[param]})")
    return _OK


def _call_ok(doc: Mapping[str, Any], call: Mapping[str, Any], answer: Mapping[str, Any],
             lang: str = "python", underscore_to_dot: bool = True) -> Verdict:
    """One call against one answer ``{name: {param: [possible values]}}`` and the answer's doc (the
    expected name with ``.`` as ``_`` when ``underscore_to_dot``, as BFCL's ``convert_func_name``)."""
    options: Mapping[str, Any] = next(iter(answer.values()))
    name = served_name(str(doc["name"])) if underscore_to_dot else str(doc["name"])
    if name not in call:
        return Verdict(False, "simple_function_checker:wrong_func_name", f"function {name!r} not called")
    given = call[name]
    for param in doc["parameters"].get("required") or []:
        if param not in given:
            return Verdict(False, "simple_function_checker:missing_required", f"missing required {param!r}")
    for param, value in given.items():
        verdict = param_ok(doc, options, param, value, lang)
        if not verdict.valid:
            return verdict
    for param, allowed in options.items():
        if param not in given and "" not in allowed:
            return Verdict(False, "simple_function_checker:missing_optional", f"{param!r} not given")
    return _OK


def _doc(docs: Sequence[Mapping[str, Any]], answer: Mapping[str, Any]) -> Mapping[str, Any]:
    name = next(iter(answer))
    return next(d for d in docs if d.get("name") == name)


def check_calls(category: str, docs: Sequence[Mapping[str, Any]], calls: Sequence[tuple[str, Any]],
                answers: Sequence[Mapping[str, Any]] | None, *, decoded: str | None = None,
                underscore_to_dot: bool = True) -> Verdict:
    """The verdict on one entry: ``calls`` are the model's (name, arguments) in order, arguments
    ``None`` where they were not JSON; ``answers`` the entry's possible answers. ``decoded``: how BFCL's
    decoding of an imported result went (``ok``, ``failed``, ``wrong_format``; None: a live episode's
    calls, where no call at all is a reply BFCL could not decode); ``category`` may be an entry id (as
    BFCL's checker is given for format_sensitivity: only the words in it matter)."""
    if decoded is None:
        decodable = bool(calls) and all(isinstance(args, dict) for _, args in calls)
        decoded = "ok" if decodable else "failed"
    made = decoded == "ok" and len(calls) > 0
    if "irrelevance" in category:
        return Verdict(False, "irrelevance_error:decoder_success", "a call was made") if made else _OK
    if "live_relevance" in category:
        return _OK if made else Verdict(False, "relevance_error:decoder_failed", "no call was made")
    if decoded == "failed":
        return Verdict(False, "ast_decoder:decoder_failed", "no decodable call")
    if decoded == "wrong_format":
        return Verdict(False, "ast_decoder:decoder_wrong_output_format", "not a list of {function: {arguments}}")
    assert answers is not None
    lang = language(category)
    out = [{name: dict(args)} for name, args in calls]
    if "parallel" in category:
        if len(out) != len(answers):
            return Verdict(False, "parallel_function_checker_no_order:wrong_count", "wrong number of calls")
        taken: set[int] = set()
        for answer in answers:
            doc = _doc(docs, answer)
            found = False
            for index, call in enumerate(out):
                if index not in taken and _call_ok(doc, call, answer, lang, underscore_to_dot).valid:
                    taken.add(index)
                    found = True
                    break
            if not found:
                return Verdict(False, "parallel_function_checker_no_order:cannot_find_match",
                               f"no call matches {next(iter(answer))}")
        return _OK
    if "multiple" in category:
        if len(out) != len(answers):
            return Verdict(False, "multiple_function_checker:wrong_count", "wrong number of calls")
        return _call_ok(_doc(docs, answers[0]), out[0], answers[0], lang, underscore_to_dot)
    if len(out) != 1:
        return Verdict(False, "simple_function_checker:wrong_count", "wrong number of calls")
    return _call_ok(docs[0], out[0], answers[0], lang, underscore_to_dot)
