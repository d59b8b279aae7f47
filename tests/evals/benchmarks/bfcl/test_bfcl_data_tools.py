"""BFCL's data read out of the pinned wheel (a wrong wheel refused), and function docs as MCP tools."""

from __future__ import annotations

import contextlib
import functools
import http.server
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from client.mcp_session import connect, make_http_client
from evals.benchmarks.bfcl.data import WheelError, load_entries, read_category, verified_wheel
from evals.benchmarks.bfcl.files import SINGLE_TURN, SOURCES, WHEEL
from evals.benchmarks.bfcl.tools import PLACEHOLDER, BfclCatalog, to_schema, to_tool
from evals.core.fetch import ChecksumMismatch, fetch, sha256_of
from evals.core.registry import get_benchmark
from server import BenchmarkMount, ToolServer, create_app, serve_in_background


def test_the_pinned_wheel_is_read_category_by_category(bfcl_data):
    wheel = bfcl_data.joinpath(*WHEEL)
    assert sha256_of(wheel) == SOURCES["bfcl"][0].sha256 and wheel.stat().st_size == SOURCES["bfcl"][0].size
    sizes = {c: len(read_category(c)) for c in SINGLE_TURN}
    assert sizes == {"simple_python": 400, "multiple": 200, "parallel": 200, "parallel_multiple": 200, "irrelevance": 240}
    first = read_category("simple_python")[0]
    assert first.id == "simple_python_0" and first.functions[0]["name"] == "calculate_triangle_area"
    assert first.ground_truth == ({"calculate_triangle_area": {"base": [10], "height": [5], "unit": ["units", ""]}},)
    assert all(e.ground_truth is None for e in read_category("irrelevance"))
    assert len({e.id for e in load_entries()}) == 1240
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
    with pytest.raises(WheelError, match="not served yet"):
        read_category("live_simple", bfcl_wheel)


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


async def test_an_entrys_functions_are_served_and_answered_with_the_placeholder(bfcl_data):
    entries = load_entries(("parallel_multiple",))
    entry = next(e for e in entries if any("." in d["name"] for d in e.functions))
    server = ToolServer([BenchmarkMount(BfclCatalog(entries))])
    async with serve_in_background(create_app(server, json_response=True)) as url, make_http_client() as http, \
            connect(f"{url}/mcp/bfcl/{entry.id}", http_client=http) as session:
        listed = (await session.list_tools()).tools
        assert [t.name for t in listed] == [d["name"].replace(".", "_") for d in entry.functions]
        assert all(t.input_schema["type"] == "object" for t in listed)
        result = await session.call_tool(listed[0].name, {"anything": "goes"})  # scored, not refused
        assert not result.is_error and result.structured_content == PLACEHOLDER


@contextlib.contextmanager
def _mirror(root: Path) -> Iterator[str]:
    """A loopback stand-in for PyPI's files host, serving ``root``."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a, **k: None  # type: ignore[method-assign]
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_data_fetch_puts_the_wheel_where_the_benchmark_reads_it_and_refuses_another(bfcl_wheel, tmp_path):
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.mkdir()
    bad.mkdir()
    shutil.copyfile(bfcl_wheel, good / WHEEL[1])
    (bad / WHEEL[1]).write_bytes(b"not the wheel")
    with _mirror(good) as prefix:
        [path] = fetch("bfcl", tmp_path / "data", url_prefix=prefix)
    assert path == (tmp_path / "data").joinpath(*WHEEL) and len(read_category("multiple", path)) == 200
    with _mirror(bad) as prefix, pytest.raises(ChecksumMismatch):
        fetch("bfcl", tmp_path / "other", url_prefix=prefix)
    assert not (tmp_path / "other").joinpath(*WHEEL).exists()
