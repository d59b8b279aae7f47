"""Java and JavaScript values written as strings: read the way BFCL's checker reads them, and written
so that they read back.

A function-calling model is shown every Java or JavaScript parameter as a string (see
:mod:`.tools`), so it sends each value as source text: ``"42L"``, ``"new int[]{1, 2}"``,
``"{key: 'v'}"``. BFCL's AST checker turns that text into a Python value with its
``type_convertor`` rules before it checks the value; :func:`java_value` and :func:`js_value`
re-implement those rules one by one, quirks included (text that fits no rule stays the string it
was, so it is then judged as a "variable"; a Java ``char`` is never unquoted, since the official
pattern can never match; an ``Array`` of ``String`` keeps each element's quotes while an
``ArrayList`` of ``String`` drops one character at each end; a JavaScript array that raises while
being read stays the text). Java's ``Set``, ``Hashtable``, ``Queue`` and ``Stack`` are not
converted by BFCL either (it raises): :class:`Unconvertible` here.

:func:`java_text` and :func:`js_text` write a possible answer as text those rules read back (the
oracle's arguments); a few answers no text can reach (an ``ArrayList`` of ``any`` holding numbers,
say) are written as near as the rules allow.
"""

from __future__ import annotations

import decimal
import json
import re
from typing import Any

__all__ = ["JAVA_TYPES", "JS_TYPES", "NESTED_TYPES", "Unconvertible", "java_text", "java_value", "js_text", "js_value"]

# BFCL's Java and JavaScript type names -> the Python type a converted value has
JAVA_TYPES: dict[str, type] = {
    "byte": int, "short": int, "integer": int, "float": float, "double": float, "long": int, "boolean": bool,
    "char": str, "Array": list, "ArrayList": list, "Set": set, "HashMap": dict, "Hashtable": dict, "Queue": list,
    "Stack": list, "String": str, "any": str,
}
JS_TYPES: dict[str, type] = {"String": str, "integer": int, "float": float, "Bigint": int, "Boolean": bool,
                             "dict": dict, "array": list, "any": str}
NESTED_TYPES = ("Array", "ArrayList", "array")  # types whose items' type is passed on

_WHOLE = r"^-?\d+$"
_JAVA_FLOAT = r"^-?\d+(\.\d+)?([eE][+-]?\d+)?[fF]$"
_JAVA_DOUBLE = r"^-?\d+(\.\d+)?([eE][+-]?\d+)?$"
_JAVA_LONG = r"^-?\d+[lL]$"
_JS_FLOAT = r"^-?\d+(\.\d+)?$"
_JS_BIGINT = r"^-?\d+n$"


class Unconvertible(ValueError):
    """A type BFCL's converters do not convert (they raise for it)."""


def _number(text: str) -> Any:
    """Python's own reading of a number, else the text (both converters end this way)."""
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


# --- Java -------------------------------------------------------------------------------------------


def _java_untyped(text: str) -> Any:
    """An element or map value read without its type: boolean, quoted string, long, float, number."""
    if text in ("true", "false"):
        return text == "true"
    if text.startswith('"') and text.endswith('"'):
        return text[1:-1]
    if re.match(_JAVA_LONG, text):
        return int(text[:-1])
    if re.match(_JAVA_FLOAT, text):
        return float(re.sub(r"[fF]$", "", text))
    return _number(text)


def _java_element(text: str, nested: str | None) -> Any:
    if nested in ("char", "String"):
        return text[1:-1]  # one character off each end, whatever they are
    return java_value(text, nested) if nested else _java_untyped(text)


def _java_arraylist(text: str, nested: str | None) -> Any:
    as_list = re.search(r"new\s+ArrayList<\w*>\(Arrays\.asList\((.+?)\)\)", text)
    if as_list:
        return [_java_element(part.strip(), nested) for part in as_list.group(1).split(",")]
    adds = re.search(r"new\s+ArrayList<\w*>\(\)\s*\{\{\s*(.+?)\s*\}\}", text, re.DOTALL)
    if adds:
        return [_java_element(found.strip(), nested) for found in re.findall(r"add\((.+?)\)", adds.group(1))]
    if re.search(r"new\s+ArrayList<\w*>\(\)", text):
        return []
    return text


def _java_array(text: str, nested: str | None) -> Any:
    found = re.search(r"new\s+\w+\[\]\s*\{(.*?)\}", text)
    if not found:
        return text
    parts = [part.strip() for part in found.group(1).split(",") if part.strip()]
    return [java_value(part, nested) if nested else _java_untyped(part) for part in parts]


def _java_hashmap(text: str) -> Any:
    body = re.search(r"new\s+HashMap<.*?>\s*\(\)\s*\{\s*\{?\s*(.*?)\s*\}?\s*\}", text, re.DOTALL)
    if body:
        out: dict[str, Any] = {}
        if body.group(1).strip():
            for key, value in re.findall(r"put\(\"(.*?)\",\s*(.*?)\)", body.group(1)):
                out[key] = _java_untyped(value.strip())
        return out
    return {} if re.search(r"new\s+HashMap<.*?>\s*\(\)", text) else text


def java_value(text: str, kind: str, nested: str | None = None) -> Any:
    """A Java value's text as BFCL's Java converter reads it for the declared ``kind``."""
    if kind not in JAVA_TYPES:
        raise Unconvertible(f"Java type {kind!r} is not one BFCL converts")
    if kind in ("byte", "short", "integer"):
        return int(text) if re.match(_WHOLE, text) else text
    if kind == "float":
        return float(re.sub(r"[fF]$", "", text)) if re.match(_JAVA_FLOAT, text) else text
    if kind == "double":
        return float(text) if re.match(_JAVA_DOUBLE, text) else text
    if kind == "long":
        return int(re.sub(r"[lL]$", "", text)) if re.match(_JAVA_LONG, text) else text
    if kind == "boolean":
        return text == "true" if text in ("true", "false") else text
    if kind in ("char", "String", "any"):
        return text
    if kind == "ArrayList":
        return _java_arraylist(text, nested)
    if kind == "Array":
        return _java_array(text, nested)
    if kind == "HashMap":
        return _java_hashmap(text)
    raise Unconvertible(f"BFCL does not convert Java {kind} values")


# --- JavaScript -------------------------------------------------------------------------------------


def _js_untyped(text: str) -> Any:
    text = text.strip()
    if text in ("true", "false"):
        return text == "true"
    if len(text) >= 1 and text[0] in "'\"" and text.endswith(text[0]):
        return text[1:-1]
    return _number(text)


def _js_array(code: str, nested: str | None) -> Any:
    two_d = re.match(r"\[\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\]|\bnew\s+Array\(\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\)", code)
    if two_d:
        rows = []
        for index, row in enumerate(re.findall(r"\[(.*?)\]", two_d.group(0))):
            row = row.strip()
            if index == 0 and row.startswith("["):
                row = row[1:]
            rows.append([_js_untyped(part.strip()) for part in row.split(",")])
        return rows
    one_d = re.match(r"\[(.*?)\]|\bnew\s+Array\((.*?)\)", code)
    if not one_d:
        return code
    inside = one_d.group(1) if one_d.group(1) is not None else one_d.group(2)
    parts = inside.strip().split(",") if inside is not None and inside.strip() else []
    if not nested:
        return [_js_untyped(part.strip()) for part in parts]
    try:
        return [js_value(part.strip(), nested) for part in parts]
    except Exception:  # noqa: BLE001 - BFCL keeps the text when reading an element fails, however it fails
        return code


def _js_dict(code: str) -> Any:
    if code == "{}":
        return {}
    found = re.match(r"\{(.*?)\}", code)
    if not found:
        return code
    out: dict[str, Any] = {}
    for key, value in re.findall(r"([^:]+):\s*(.*?)(?:,\s*(?=[^,]+:)|$)", found.group(1)):
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            out[key.strip().strip("'\"")] = _js_array(value, None)
        elif value.startswith("{") and value.endswith("}"):
            out[key.strip().strip("'\"")] = _js_dict(value)
        else:
            out[key.strip().strip("'\"")] = _js_untyped(value.strip("'\""))
    return out


def js_value(text: str, kind: str, nested: str | None = None) -> Any:
    """A JavaScript value's text as BFCL's JavaScript converter reads it for the declared ``kind``."""
    if kind not in JS_TYPES:
        raise Unconvertible(f"JavaScript type {kind!r} is not one BFCL converts")
    if kind == "String":
        quoted = (text.startswith('"') and text.endswith('"')) or (text.startswith("'") and text.endswith("'"))
        return text[1:-1] if quoted else text
    if kind == "integer":
        return int(text) if re.match(_WHOLE, text) else text
    if kind == "float":
        return float(text) if re.match(_JS_FLOAT, text) else text
    if kind == "Bigint":
        return int(text[:-1]) if re.match(_JS_BIGINT, text) else text
    if kind == "Boolean":
        return text == "true" if text in ("true", "false") else text
    if kind == "dict":
        return _js_dict(text.strip())
    if kind == "array":
        return _js_array(text.strip(), nested)
    return text  # any


# --- writing a possible answer as text (the oracle) ------------------------------------------------


def _literal(value: Any) -> str:
    """A value as an untyped Java or JavaScript literal that both untyped readers read back."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value) if not isinstance(value, str) else f'"{value}"'


def java_text(value: Any, kind: str, nested: str | None = None) -> str:
    """Java source text that :func:`java_value` reads back as ``value`` (where any text can)."""
    expected = JAVA_TYPES.get(kind)
    if type(value) is str and expected is not str:
        return value  # a "variable": the text itself, judged as it is
    if kind == "long":
        return f"{value}L"
    if kind == "float":
        return f"{value!r}f"
    if kind in ("Array", "ArrayList") and isinstance(value, list):
        if kind == "Array":
            inner = ", ".join(java_text(v, nested) if nested else _literal(v) for v in value)
            return f"new {nested or 'Object'}[]{{{inner}}}"
        if not value:
            return "new ArrayList<>()"
        if nested in ("char", "String"):
            parts = [f'"{v}"' for v in value]
        else:
            parts = [java_text(v, nested) if nested else _literal(v) for v in value]
        return f"new ArrayList<>(Arrays.asList({', '.join(parts)}))"
    if kind == "HashMap" and isinstance(value, dict):
        puts = "".join(f'put("{k}", {_literal(v)}); ' for k, v in value.items())
        return f"new HashMap<String, Object>() {{{{ {puts}}}}}"
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else repr(value)


def js_text(value: Any, kind: str, nested: str | None = None) -> str:
    """JavaScript source text that :func:`js_value` reads back as ``value`` (where any text can)."""
    expected = JS_TYPES.get(kind)
    if type(value) is str and expected is not str:
        return value
    if kind == "String":
        return f'"{value}"'
    if kind == "Bigint":
        return f"{value}n"
    if kind == "array" and isinstance(value, list):
        return "[" + ", ".join(js_text(v, nested) if nested else _literal(v) for v in value) + "]"
    if kind == "dict" and isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_js_dict_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return format(decimal.Decimal(repr(value)), "f")  # JavaScript's float rule reads no exponent
    return value if isinstance(value, str) else repr(value)


def _js_dict_value(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_js_dict_value(v)}" for k, v in value.items()) + "}"
    return _literal(value)
