"""How BFCL decodes a model's ``result``: picked by the model's name through BFCL's own model registry.

``bfcl evaluate`` decodes each line of a model's result files with that model's handler
(``MODEL_CONFIG_MAPPING[name].model_handler(...).decode_ast``) and checks the names with the model's
``underscore_to_dot``. The registry is read here out of the pinned wheel at run time, never copied:
``bfcl_eval/constants/model_config.py`` is parsed (Python's ``ast``, not imported: importing it imports
every vendor's SDK), each entry giving its handler class, ``is_fc_model`` and ``underscore_to_dot``;
the handler modules' sources give each class's bases, hence the class whose ``decode_ast`` it runs.

That class decides the decoding (:data:`DECODINGS`):

* ``fc-json-text``: an FC handler storing each call's arguments as JSON text (OpenAI, Claude, Mistral,
  every OpenAI-compatible one in FC mode): ``{name: json.loads(arguments)}`` per item, an item's first
  key only;
* ``fc-object``: an FC handler storing the arguments as an object (Nova, a local Mistral-FC): the
  result must be a list and is taken as it is (Gemini-FC: a lone value becomes a list of one);
* ``prompting``: the reply's text parsed by BFCL's own ``default_decode_ast_prompting`` (Python call
  syntax; Java and JavaScript by its tree-sitter parsers; for ``format_sensitivity``, JSON and verbose
  or concise XML, inside ``<TOOLCALL>`` tags when the entry's configuration says so), imported from the
  wheel (Gemini's prompting mode first drops its ````tool_code`` fence; Nemotron reads the text inside
  its ``<TOOLCALL>`` tags, none meaning no call).

A handler with a decoder of its own that is none of these (Hammer, Granite, Llama-3.1-FC, xLAM, ...) is
decoded by its own ``decode_ast`` (kinds ``fc-own`` and ``prompting-own``), BFCL's method run as
:mod:`.decoder_guard` allows (:data:`.decoder_guard.OWN_DECODERS`: an instance made without ``__init__``, its
module's ``eval`` bounded). The others (:data:`.decoder_guard.OWN_REFUSED`: a parser without a depth bound, SDKs that are
not installed) are not decoded: reading a folder of such a model names the handler and the reason and asks for
``--bfcl-model``, which takes a BFCL model name (its handler is used) or one of the kinds above (the FC kinds
with ``underscore_to_dot``, as every FC API without ``.`` in names has it; ``prompting`` without).

What a decoding raises is BFCL's ``decoder_failed``: :func:`decode` raises :class:`Undecodable` (a
``RecursionError`` included, as BFCL's ``except Exception`` catches it).
"""

from __future__ import annotations

import ast
import functools
import json
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from .data import verified_wheel

__all__ = ["DECODINGS", "KINDS", "Decoding", "Undecodable", "bfcl_code", "decode", "decoding_for", "fc_format",
           "own_handler", "registry", "unwrapped"]

KINDS = ("fc-json-text", "fc-object", "prompting")
# the class whose decode_ast a handler runs -> (its decoding in FC mode, in prompting mode)
DECODINGS: dict[str, tuple[str, str]] = {
    **dict.fromkeys(("OpenAICompletionsHandler", "OpenAIResponsesHandler", "ClaudeHandler", "MistralHandler"),
                    ("fc-json-text", "prompting")),
    **dict.fromkeys(("OSSHandler", "NvidiaHandler"), ("prompting", "prompting")),
    **dict.fromkeys(("NovaHandler", "MistralFCHandler"), ("fc-object", "fc-object")),
    "GeminiHandler": ("fc-object-or-one", "prompting-tool-code"),
    "NemotronHandler": ("prompting-in-toolcall", "prompting-in-toolcall"),
}
_CONFIG = "bfcl_eval/constants/model_config.py"
_HANDLERS = "bfcl_eval/model_handler/"


class Undecodable(ValueError):
    """BFCL's decoding raised on this result (its ``ast_decoder:decoder_failed``)."""


@dataclass(frozen=True)
class Decoding:
    """How one model's results are decoded: the kind (:data:`DECODINGS`' values), whether the expected
    function names get ``.`` as ``_`` (BFCL's ``underscore_to_dot``), and what chose it."""

    kind: str
    underscore_to_dot: bool
    source: str  # "BFCL model NAME (handler CLASS)" or "kind KIND"
    name: str = ""  # what --bfcl-model takes to choose it again: the registry name or the kind
    handler: str = ""  # kinds fc-own / prompting-own: the handler class whose own decoders run

    @property
    def prompting(self) -> bool:
        return self.kind.startswith("prompting")


@dataclass(frozen=True)
class RegistryEntry:
    name: str  # the registry key (BFCL's --model)
    handler: str  # the handler class
    decoder: str | None  # the class whose decode_ast it runs (None: not found in the wheel's sources)
    is_fc_model: bool
    underscore_to_dot: bool


def _literal(node: ast.expr | None, default: Any) -> Any:
    return default if node is None else ast.literal_eval(node)


def _decoder_classes(archive: zipfile.ZipFile) -> dict[str, str | None]:
    """Every handler class of the wheel -> the class whose ``decode_ast`` it runs (through its bases)."""
    bases: dict[str, str | None] = {}
    defines: set[str] = set()
    for member in archive.namelist():
        if not (member.startswith(_HANDLERS) and member.endswith(".py")):
            continue
        for node in ast.parse(archive.read(member)).body:
            if isinstance(node, ast.ClassDef):
                first = node.bases[0] if node.bases else None
                bases[node.name] = first.id if isinstance(first, ast.Name) else None
                if any(isinstance(f, ast.FunctionDef) and f.name == "decode_ast" for f in node.body):
                    defines.add(node.name)
    out: dict[str, str | None] = {}
    for name in bases:
        current: str | None = name
        for _ in range(len(bases) + 1):  # bounded: a cycle of bases ends here
            if current is None or current in defines:
                break
            current = bases.get(current)
        out[name] = current if current in defines else None
    return out


@functools.cache
def _registry(wheel: Path) -> dict[str, RegistryEntry]:
    with zipfile.ZipFile(wheel) as archive:
        tree = ast.parse(archive.read(_CONFIG))
        decoders = _decoder_classes(archive)
    out: dict[str, RegistryEntry] = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)):
            continue
        for key, value in zip(node.value.keys, node.value.values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(value, ast.Call)):
                continue  # the final mapping merges the three maps (** entries)
            given = {k.arg: k.value for k in value.keywords}
            handler = given.get("model_handler")
            name = str(key.value)
            cls = handler.id if isinstance(handler, ast.Name) else "?"
            out[name] = RegistryEntry(name, cls, decoders.get(cls), bool(_literal(given.get("is_fc_model"), True)),
                                      bool(_literal(given.get("underscore_to_dot"), False)))
    if not out:
        raise ValueError(f"{wheel}: no model registry found in {_CONFIG}")
    return out


def registry(wheel: Path | None = None) -> dict[str, RegistryEntry]:
    """BFCL's model registry (``MODEL_CONFIG_MAPPING``), read out of the pinned wheel (the parse kept in the
    user cache while the wheel and this code are the same: :mod:`~evals.core.derived_cache`)."""
    from ...core.derived_cache import cached_derivation

    path = verified_wheel(wheel).resolve()
    return cached_derivation(
        "bfcl-model-registry", [path], lambda: _registry(path), code=[__file__],
        encode=lambda found: [[e.name, e.handler, e.decoder, e.is_fc_model, e.underscore_to_dot] for e in found.values()],
        decode=lambda rows: {str(r[0]): RegistryEntry(str(r[0]), str(r[1]), r[2], bool(r[3]), bool(r[4])) for r in rows},
    )


def _of_entry(entry: RegistryEntry) -> Decoding:
    from .decoder_guard import OWN_DECODERS, OWN_REFUSED

    kinds = DECODINGS.get(entry.decoder or "")
    source = f"BFCL model {entry.name} (handler {entry.handler})"
    if kinds is None and entry.decoder in OWN_DECODERS:  # its own decode_ast / decode_execute, run guarded
        kinds = ("fc-own", "prompting-own")
    if kinds is None:
        why = OWN_REFUSED.get(entry.decoder or "", "not read here")
        raise ValueError(f"{source} decodes with {entry.decoder or 'a decoder'} of its own, which is not run on result "
                         f"files: {why}; give --bfcl-model a kind ({', '.join(KINDS)}) or another BFCL model to "
                         "decode as")
    return Decoding(kinds[0] if entry.is_fc_model else kinds[1], entry.underscore_to_dot, source, entry.name,
                    entry.handler if kinds[0] == "fc-own" else "")


@functools.cache
def _handler_modules(wheel: Path) -> dict[str, str]:
    """Every handler class the registry names -> its module (the registry module's imports)."""
    with zipfile.ZipFile(wheel) as archive:
        tree = ast.parse(archive.read(_CONFIG))
    return {alias.asname or alias.name: node.module for node in tree.body
            if isinstance(node, ast.ImportFrom) and node.module for alias in node.names}


@functools.cache  # asked once per result line
def own_handler(decoding: Decoding) -> Any:
    """The handler whose own decoders decode ``decoding``'s results (:func:`.decoder_guard.own_handler`)."""
    from .decoder_guard import own_handler as made

    module = _handler_modules(verified_wheel().resolve())[decoding.handler]
    return made(decoding.handler, module, decoding.kind == "fc-own")


def decoding_for(folder: str, chosen: str | None = None, wheel: Path | None = None) -> Decoding:
    """The decoding of a model folder ``result/<folder>`` (BFCL names it after the registry key, ``/`` as
    ``_``), or of ``chosen`` (``--bfcl-model``: a registry name or a kind) when given."""
    known = registry(wheel)
    if chosen:
        if chosen in KINDS:
            return Decoding(chosen, chosen != "prompting", f"kind {chosen}", chosen)
        entry = known.get(chosen) or next((e for e in known.values() if e.name.replace("/", "_") == chosen), None)
        if entry is None:
            raise ValueError(f"--bfcl-model {chosen!r} is neither a model of BFCL's registry nor a kind "
                             f"({', '.join(KINDS)})")
        return _of_entry(entry)
    entry = next((e for e in known.values() if e.name.replace("/", "_") == folder), None)
    if entry is None:
        raise ValueError(f"model folder {folder!r} is not a model of BFCL's registry, so how its results are decoded is "
                         f"unknown: give --bfcl-model a BFCL model name (e.g. gpt-4o-2024-11-20-FC, Qwen/Qwen3-8B) or a "
                         f"kind: {', '.join(KINDS)}")
    return _of_entry(entry)


def bfcl_code() -> dict[str, Any]:
    """BFCL's decoding and prompt functions, imported from the pinned wheel (:mod:`.wheel_code`)."""
    return _bfcl_code()


@functools.cache
def _bfcl_code() -> dict[str, Any]:
    from .decoder_guard import decoder_module
    from .wheel_code import import_with_project_root

    utils: ModuleType = decoder_module()  # its eval bounded: the replies and result files are untrusted
    top: ModuleType = import_with_project_root("bfcl_eval.utils")
    enums: ModuleType = import_with_project_root("bfcl_eval.constants.enums")
    return {"prompting": utils.default_decode_ast_prompting,
            "ReturnFormat": enums.ReturnFormat, "system_prompt": utils.system_prompt_pre_processing_chat_model,
            "configs": top.get_all_format_sensitivity_configs, "parse_config": utils.parse_prompt_variation_params,
            "hint": top.add_language_specific_hint_to_function_doc}


def _fc_json_text(result: Any) -> list[Any]:
    out = []
    for item in result:  # as the FC handlers: a text's characters and a dict's keys have no keys() either
        name = list(item.keys())[0]
        out.append({name: json.loads(item[name])})
    return out


def _fc_object(result: Any) -> Any:
    if type(result) is not list:
        raise Undecodable(f"Model did not return a list of function calls: {str(result)[:200]}")
    return result


_OPEN, _CLOSE = "<TOOLCALL>", "</TOOLCALL>"


def _in_toolcall(text: str) -> str | None:
    """``re.search(r"<TOOLCALL>(.*?)</TOOLCALL>", text, re.DOTALL).group(1)`` (Nemotron's), None where it finds
    nothing, in linear time: the leftmost match starts at the first opening tag (when that one has no closing
    tag after it, no later one has) and ends at the first closing tag after it. The regex itself backtracks in
    quadratic time on many opening tags (100 KB of them: 22 s)."""
    if not isinstance(text, str):
        raise TypeError(f"expected string or bytes-like object, got {type(text).__name__!r}")  # as re.search
    start = text.find(_OPEN)
    if start < 0:
        return None
    end = text.find(_CLOSE, start + len(_OPEN))
    return None if end < 0 else text[start + len(_OPEN):end]


def unwrapped(kind: str, result: Any) -> str | None:
    """A prompting reply as the handler of ``kind`` hands it to BFCL's generic decoders (both its ``decode_ast``
    and its ``decode_execute`` do the same): Gemini's (``prompting-tool-code``) without its ````tool_code``
    fence, Nemotron's (``prompting-in-toolcall``) the text inside its first ``<TOOLCALL>`` tags (None: there
    are none, which decodes to no call). Raises where the handler raises (a value that is not a text)."""
    if kind == "prompting-tool-code":
        return str(result.replace("```tool_code\n", "").replace("\n```", ""))
    if kind == "prompting-in-toolcall":
        return _in_toolcall(result)
    raise ValueError(f"{kind!r} is no prompting kind with a wrapping of its own")


def decode(decoding: Decoding, result: Any, return_format: str = "python", has_tool_call_tag: bool = False) -> Any:
    """``result`` decoded as the handler's ``decode_ast`` does (``return_format``: BFCL's
    ``ReturnFormat`` value: python, java, javascript, json, verbose_xml, concise_xml). Raises
    :class:`Undecodable` where BFCL's decoding raises."""
    try:
        if decoding.kind == "fc-json-text":
            return _fc_json_text(result)
        if decoding.kind == "fc-object":
            return _fc_object(result)
        if decoding.kind == "fc-object-or-one":
            return result if type(result) is list else [result]
        # a prompting model's text: BFCL's decoders (an FC folder never imports them: about 30 ms)
        code = bfcl_code()
        prompting = code["prompting"]
        fmt = code["ReturnFormat"](return_format)
        if decoding.handler:  # a handler's own decode_ast (:mod:`.decoder_guard`)
            return own_handler(decoding).decode_ast(result, fmt, has_tool_call_tag)
        if decoding.kind != "prompting":
            result = unwrapped(decoding.kind, result)
            if result is None:
                return []
        return prompting(result, fmt, has_tool_call_tag)
    except Undecodable:
        raise
    except Exception as exc:  # noqa: BLE001 - BFCL's eval runner counts any exception as a failed decoding
        raise Undecodable(f"{type(exc).__name__}: {str(exc)[:200]}") from None


def fc_format(decoded: Any) -> bool:
    """BFCL's ``is_function_calling_format_output``: a list of ``{name: {param: value}}``."""
    return bool(_format_ok()(decoded))


@functools.cache
def _format_ok() -> Callable[[Any], Any]:
    """BFCL's ``is_function_calling_format_output`` alone (its module, not the decoders': an FC folder's check)."""
    from .wheel_code import import_with_project_root

    return import_with_project_root("bfcl_eval.utils").is_function_calling_format_output  # type: ignore[no-any-return]


@functools.cache  # a few categories, asked once per result line
def language_format(category: str) -> str:
    """The return format BFCL decodes a category's results in (``ast_file_runner``)."""
    from .files import language

    return {"java": "java", "javascript": "javascript"}.get(language(category), "python")


def split_calls(decoded: list[Mapping[str, Any]]) -> list[tuple[str, Any]]:
    """Decoded calls in BFCL's format as ``(name, arguments)``."""
    return [next(iter(item.items())) for item in decoded]


@functools.cache  # format_sensitivity's few configurations, asked once per result line
def config_format(config: str) -> tuple[str, bool]:
    """A format_sensitivity configuration's (return format, whether calls are inside ``<TOOLCALL>`` tags),
    as BFCL's ``parse_prompt_variation_params`` reads it."""
    return_format, tag, *_ = bfcl_code()["parse_config"](config)
    return str(return_format), bool(tag)
