"""BFCL's data read out of the pinned wheel (a wrong wheel refused), and function docs as MCP tools."""

from __future__ import annotations

import shutil

import pytest
from loopback_http import serve_directory

from client.mcp_session import connect, make_http_client
from evals.benchmarks.bfcl.data import WheelError, load_entries, read_category, verified_wheel
from evals.benchmarks.bfcl.files import NO_ANSWER, SINGLE_TURN, SOURCES, WHEEL
from evals.benchmarks.bfcl.kinds import BfclCatalog
from evals.benchmarks.bfcl.single_turn import SingleTurnKind
from evals.benchmarks.bfcl.tools import PLACEHOLDER, language_doc, to_schema, to_tool
from evals.benchmarks.bfcl.type_conversion import java_text, java_value, js_text, js_value
from evals.core.fetch import ChecksumMismatch, fetch
from evals.core.registry import get_benchmark
from kg_store.digest import file_sha256
from server import BenchmarkMount, ToolServer, create_app, serve_in_background


def test_the_pinned_wheel_is_read_category_by_category(bfcl_data):
    wheel = bfcl_data.joinpath(*WHEEL)
    assert file_sha256(wheel) == SOURCES["bfcl"][0].sha256 and wheel.stat().st_size == SOURCES["bfcl"][0].size
    sizes = {c: len(read_category(c)) for c in SINGLE_TURN}
    assert sizes == {"simple_python": 400, "multiple": 200, "parallel": 200, "parallel_multiple": 200, "irrelevance": 240,
                     "simple_java": 100, "simple_javascript": 50, "live_simple": 258, "live_multiple": 1053,
                     "live_parallel": 16, "live_parallel_multiple": 24, "live_irrelevance": 884, "live_relevance": 16}
    first = read_category("simple_python")[0]
    assert first.id == "simple_python_0" and first.functions[0]["name"] == "calculate_triangle_area"
    assert first.ground_truth == ({"calculate_triangle_area": {"base": [10], "height": [5], "unit": ["units", ""]}},)
    assert all(e.ground_truth is None for c in NO_ANSWER for e in read_category(c))
    assert len({e.id for e in load_entries()}) == 3641
    system = next(e for e in read_category("live_simple") if e.messages[0]["role"] == "system")
    assert [m["role"] for m in system.messages] == ["system", "user"]
    info = get_benchmark("bfcl")
    assert info.missing_files({}, bfcl_data) == []  # needed files: its data sources (the wheel), where missing
    assert info.missing_files({}, bfcl_data / "elsewhere") == [("bfcl", SOURCES["bfcl"][0])]


def test_a_wheel_that_is_not_the_pinned_one_is_refused_naming_it(bfcl_wheel, tmp_path):
    other = tmp_path / WHEEL[1]
    shutil.copyfile(bfcl_wheel, other)
    with other.open("ab") as f:
        f.write(b"\0")
    with pytest.raises(WheelError, match=rf"{other}: sha256 [0-9a-f]{{64}} is not the pinned bfcl-eval wheel's"):
        verified_wheel(other)
    with pytest.raises(WheelError, match="not a single-turn category"):
        read_category("multi_turn_base", bfcl_wheel)
    with pytest.raises(WheelError, match="not served yet"):
        read_category("memory_vector", bfcl_wheel)


DOC = {
    "name": "geo.distance.find",
    "description": "Distance between two places.",
    "parameters": {"type": "dict", "required": ["origin", "scale"], "properties": {
        "origin": {"type": "string", "description": "Where from."},
        "scale": {"type": "float", "description": "A factor."},
        "point": {"type": "tuple", "items": {"type": "float"}, "description": "x, y."},
        "options": {"type": "dict", "description": "More.", "properties": {"fast": {"type": "boolean"},
                                                                             "weight": {"type": "float", "description": "w"}}},
        "stops": {"type": "array", "items": {"type": "dict", "properties": {"name": {"type": "string"}}}},
        "extra": {"type": "any", "description": "Anything."},
    }},
}


def test_a_function_doc_becomes_the_tool_bfcls_fc_handlers_send():
    schema = to_schema(DOC["parameters"])
    assert schema["type"] == "object" and schema["required"] == ["origin", "scale"]
    p = schema["properties"]
    assert p["origin"] == {"type": "string", "description": "Where from."}
    assert p["scale"] == {"type": "number", "format": "float", "description": "A factor. This is a float type value."}
    assert p["point"]["type"] == "array" and p["point"]["items"]["type"] == "number"
    assert p["options"]["type"] == "object" and p["options"]["properties"]["fast"] == {"type": "boolean"}
    assert p["options"]["properties"]["weight"]["format"] == "float"
    assert p["stops"]["items"]["type"] == "object" and p["stops"]["items"]["properties"]["name"]["type"] == "string"
    assert p["extra"]["type"] == "string"
    assert DOC["parameters"]["type"] == "dict" and DOC["parameters"]["properties"]["scale"]["type"] == "float"  # untouched
    tool = to_tool(DOC, "t1")
    assert tool.name == "geo_distance_find" and tool.annotations["bfcl_name"] == "geo.distance.find"
    assert tool.description == "Distance between two places. Note that the provided function is in Python 3 syntax."


JAVA_DOC = {"name": "Lib.sum", "description": "Sums.", "parameters": {"type": "dict", "required": ["xs"], "properties": {
    "xs": {"type": "ArrayList", "items": {"type": "long"}, "description": "Numbers."},
    "ref": {"type": "any", "description": "A reference."}}}}
JS_DOC = {"name": "merge", "description": "Merges.", "parameters": {"type": "dict", "required": [], "properties": {
    "opts": {"type": "dict", "description": "Options.", "properties": {"deep": {"type": "Boolean"}}},
    "list": {"type": "array", "items": {"type": "String"}, "description": "Names."}}}}


def test_java_and_javascript_docs_get_bfcls_language_pre_processing():
    java = language_doc(JAVA_DOC, "simple_java")
    assert java["description"] == "Sums. Note that the provided function is in Java 8 SDK syntax."
    assert java["parameters"]["properties"]["xs"] == {"type": "string", "description": (
        "Numbers. This is Java ArrayList type parameter in string representation. The list elements are of type "
        "long; they are not in string representation.")}
    assert java["parameters"]["properties"]["ref"]["description"].endswith(
        " This parameter can be of any type of Java object in string representation.")
    js = to_tool(JS_DOC, "t", "simple_javascript").input_schema["properties"]
    assert js["opts"] == {"type": "string", "description": (
        "Options. This is JavaScript dict type parameter in string representation. The dictionary entries have the "
        'following schema; they are not in string representation. {"deep": {"type": "Boolean"}}')}
    assert js["list"]["type"] == "string" and "items" not in js["list"]
    assert JAVA_DOC["parameters"]["properties"]["xs"]["type"] == "ArrayList"  # the doc is left as it is


@pytest.mark.parametrize(("text", "kind", "nested", "value"), [
    ("42L", "long", None, 42), ("42", "long", None, "42"), ("3.5f", "float", None, 3.5), ("3.5", "float", None, "3.5"),
    ("1e3", "double", None, 1000.0), ("true", "boolean", None, True), ("'a'", "char", None, "'a'"),
    ("new int[]{1, 2}", "Array", "integer", [1, 2]), ('new String[]{"a"}', "Array", "String", ['"a"']),
    ('new ArrayList<>(Arrays.asList("a", "b"))', "ArrayList", "String", ["a", "b"]),
    ("new ArrayList<>() {{ add(1L); add(2L); }}", "ArrayList", "long", [1, 2]),
    ("new ArrayList<>(Arrays.asList(7, true))", "ArrayList", "any", ["7", "true"]),
    ('new HashMap<String, Object>() {{ put("k", 5); put("s", "v"); }}', "HashMap", None, {"k": 5, "s": "v"}),
    ("someVariable", "HashMap", None, "someVariable"),
])
def test_java_text_is_read_as_bfcls_java_converter_reads_it(text, kind, nested, value):
    got = java_value(text, kind, nested)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize(("text", "kind", "nested", "value"), [
    ('"abc"', "String", None, "abc"), ("abc", "String", None, "abc"), ("12n", "Bigint", None, 12),
    ("1.5", "float", None, 1.5), ("1e5", "float", None, "1e5"), ("false", "Boolean", None, False),
    ("['a', 'b']", "array", "String", ["a", "b"]), ("new Array(1, 2)", "array", "integer", [1, 2]),
    ("[[1, 2], [3]]", "array", "integer", [[1, 2], [3]]), ("[x]", "array", "Nope", "[x]"),
    ("{a: 'x', b: [1, 2], c: true}", "dict", None, {"a": "x", "b": [1, 2], "c": True}), ("{}", "dict", None, {}),
])
def test_javascript_text_is_read_as_bfcls_javascript_converter_reads_it(text, kind, nested, value):
    assert js_value(text, kind, nested) == value


@pytest.mark.parametrize(("value", "kind", "nested"), [
    (42, "long", None), (2.5, "float", None), (0.5, "double", None), (True, "boolean", None), ("x", "String", None),
    ([1, 2], "Array", "integer"), (["a b", "c"], "ArrayList", "String"), ({"k": 1, "s": "v"}, "HashMap", None),
])
def test_the_oracles_java_text_reads_back(value, kind, nested):
    assert java_value(java_text(value, kind, nested), kind, nested) == value


@pytest.mark.parametrize(("value", "kind", "nested"), [
    ("it's", "String", None), (12, "Bigint", None), (1e-05, "float", None), ([1.0, 2.5], "array", "float"),
    ({"a": "x", "b": ["y"], "c": False}, "dict", None), ("aVariable", "dict", None),
])
def test_the_oracles_javascript_text_reads_back(value, kind, nested):
    assert js_value(js_text(value, kind, nested), kind, nested) == value


async def test_an_entrys_functions_are_served_and_answered_with_the_placeholder(bfcl_data):
    entries = load_entries(("parallel_multiple",))
    entry = next(e for e in entries if any("." in d["name"] for d in e.functions))
    server = ToolServer([BenchmarkMount(BfclCatalog([SingleTurnKind(("parallel_multiple",))]))])
    async with serve_in_background(create_app(server, json_response=True)) as url, make_http_client() as http, \
            connect(f"{url}/mcp/bfcl/{entry.id}", http_client=http) as session:
        listed = (await session.list_tools()).tools
        assert [t.name for t in listed] == [d["name"].replace(".", "_") for d in entry.functions]
        assert all(t.input_schema["type"] == "object" for t in listed)
        result = await session.call_tool(listed[0].name, {"anything": "goes"})  # scored, not refused
        assert not result.is_error and result.structured_content == PLACEHOLDER


async def test_one_catalog_serves_every_kind_each_endpoint_answered_by_the_kind_of_its_category(bfcl_data):
    """Issue 45 item 4: one catalog of the three kinds (no chain of catalogs), KINDS the one place that
    decides an entry's kind; an unknown id is refused naming every kind's endpoints."""
    import contextlib

    from evals.benchmarks.bfcl.agentic import read_memory
    from evals.benchmarks.bfcl.kinds import KINDS
    from evals.benchmarks.bfcl.memory import LOAD_TOOL
    from evals.core.registry import load_benchmark
    from evals.core.transport import MemorySessions
    from tool_specs import TaskNotFound

    bench = load_benchmark("bfcl", {"category": ["memory_kv", "simple_python", "multi_turn_base"]})
    rows = []  # each kind's row of KINDS: the one its entries' categories are in
    for kind in bench.kinds:
        row = {i for e in kind.entries.values() for i, (served, _) in enumerate(KINDS) if e.category in served}
        assert kind.entries and len(row) == 1
        rows += row
    assert len(bench.kinds) == 3 and sorted(rows) == rows and len(set(rows)) == 3
    catalog = bench.mounts(contextlib.ExitStack())[0].catalog
    prereqs = [p.id for convs in read_memory("memory_kv")[1].values() for p in convs]
    assert catalog.task_ids() == [*bench.task_ids(), *prereqs]  # BFCL's order: single, multi, memory
    with pytest.raises(TaskNotFound, match=f"[(]{len(catalog.task_ids())} tasks[)]"):
        catalog.task_tools("multi_turn_base_x")
    playground = {t.name for t in catalog.playground_tools()}
    assert {"calculate_triangle_area", "ls", "core_memory_add"} <= playground and LOAD_TOOL not in playground
    sessions = MemorySessions(ToolServer([BenchmarkMount(catalog=catalog)]))
    async with sessions.session("bfcl", "simple_python_0") as s:
        got = await s.call_tool("calculate_triangle_area", {"base": 10, "height": 5})
        assert got.structured_content == PLACEHOLDER
    async with sessions.session("bfcl", "multi_turn_base_0") as s:
        assert "current_working_directory" in (await s.call_tool("pwd", {})).content[0].text
    async with sessions.session("bfcl", prereqs[0]) as s:
        assert LOAD_TOOL in [t.name for t in (await s.list_tools()).tools]


def test_data_fetch_puts_the_wheel_where_the_benchmark_reads_it_and_refuses_another(bfcl_wheel, tmp_path):
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.mkdir()
    bad.mkdir()
    shutil.copyfile(bfcl_wheel, good / WHEEL[1])
    (bad / WHEEL[1]).write_bytes(b"not the wheel")
    with serve_directory(good) as prefix:
        [path] = fetch("bfcl", tmp_path / "data", url_prefix=prefix)
    assert path == (tmp_path / "data").joinpath(*WHEEL) and len(read_category("multiple", path)) == 200
    with serve_directory(bad) as prefix, pytest.raises(ChecksumMismatch):
        fetch("bfcl", tmp_path / "other", url_prefix=prefix)
    assert not (tmp_path / "other").joinpath(*WHEEL).exists()


def test_entries_from_the_derived_cache_are_the_wheels(bfcl_data, tmp_path, monkeypatch):
    """A category read twice: the second from the user cache (evals.core.derived_cache), equal to the wheel's."""
    from evals.benchmarks.bfcl import data as bfcl

    monkeypatch.setenv("EVALS_CACHE_DIR", str(tmp_path / "cache"))
    bfcl._memo.cache_clear()  # the process's own memo, which an earlier test may have filled
    category = SINGLE_TURN[0]
    parsed = bfcl._read_category(category, verified_wheel())
    assert read_category(category) == parsed
    assert list((tmp_path / "cache" / "derived").glob(f"bfcl-{category}-*.marshal"))
    bfcl._memo.cache_clear()
    assert read_category(category) == parsed  # from the cache
