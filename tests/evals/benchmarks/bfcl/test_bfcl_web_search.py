"""BFCL's web-search categories through BFCL's own backend (imported from the pinned wheel), SerpAPI
and the pages played by a loopback stand-in: the real ``google-search-results`` client and
``requests`` send real HTTP to it, within this harness's bounds (:mod:`evals.benchmarks.bfcl.web_fetch`)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from loopback_http import serve_http

pytest.importorskip("serpapi", reason="the bfcl-web extra (google-search-results) is not installed")
pytest.importorskip("bs4", reason="the bfcl-web extra (beautifulsoup4) is not installed")
pytest.importorskip("html2text", reason="the bfcl-web extra (html2text) is not installed")

from evals.benchmarks.bfcl.results import read_results  # noqa: E402
from evals.benchmarks.bfcl.web_fetch import MAX_BODY_BYTES, MAX_REDIRECTS, web_operation  # noqa: E402
from evals.benchmarks.bfcl.web_search import read_web_search, web_result  # noqa: E402
from evals.core.registry import load_benchmark  # noqa: E402
from evals.core.run import RunOptions, run_benchmark  # noqa: E402

ROOT = Path(__file__).resolve().parents[4]
KEY = "test-key-3f9a"  # a stand-in's key: it must reach the stand-in and never the run directory
PAGE = "<html><head><style>p{}</style><script>var x=1;</script></head><body><h1>Tea</h1><p>Da Hong Pao</p></body></html>"


class _StandIn(BaseHTTPRequestHandler):
    seen: list[dict[str, Any]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes, kind: str = "text/html; charset=utf-8", **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        here = f"http://127.0.0.1:{self.server.server_address[1]}"
        if parts.path == "/search":
            type(self).seen.append(query)
            results = [{"title": f"Result {i}", "link": f"{here}/page", "snippet": f"snippet {i} for {query.get('q')}"}
                       for i in range(3)]
            self._send(200, json.dumps({"organic_results": results}).encode(), "application/json")
        elif parts.path == "/page":
            self._send(200, PAGE.encode())
        elif parts.path == "/loop":
            self._send(302, b"", Location="/loop")
        elif parts.path == "/hop":
            self._send(302, b"", Location="/page")
        elif parts.path == "/big":
            self._send(200, b"a" * (MAX_BODY_BYTES + 1000), "text/plain")
        elif parts.path == "/binary":
            self._send(200, b"\x00\x01" * 100, "application/octet-stream")
        elif parts.path == "/elsewhere":
            self._send(302, b"", Location=query["to"])
        else:
            self._send(404, b"no such page")


@pytest.fixture
def stand_in() -> Iterator[str]:
    _StandIn.seen = []
    with serve_http(_StandIn) as url:
        yield url


def _call(endpoint: str, name: str, snippet: bool = True, **arguments: Any) -> str:
    sets: dict[str, Any] = {}
    answer = web_operation({"op": "web_call", "key": "k", "name": name, "arguments": arguments, "endpoint": endpoint,
                            "show_snippet": snippet, "SERPAPI_API_KEY": KEY}, sets)
    return str(web_result(answer).text)


def test_bfcls_backend_searches_through_the_endpoint_and_fetches_pages_within_bounds(bfcl_data, stand_in, monkeypatch):
    monkeypatch.delenv("SERPAPI_API_KEY", raising=False)
    # a list is shown as Python's str of it (BFCL's executor's rule), a dict as JSON
    results = ast.literal_eval(_call(stand_in, "search_engine_query", keywords="most expensive tea", max_results=2))
    assert [r["title"] for r in results] == ["Result 0", "Result 1"] and results[0]["body"].startswith("snippet 0")
    assert _StandIn.seen[-1]["api_key"] == KEY and _StandIn.seen[-1]["engine"] == "duckduckgo"  # BFCL's request
    hidden = ast.literal_eval(_call(stand_in, "search_engine_query", snippet=False, keywords="tea"))
    assert set(hidden[0]) == {"title", "href"}  # web_search_no_snippet: BFCL drops the snippet
    # BFCL's three modes, on the page the search result links to
    assert json.loads(_call(stand_in, "fetch_url_content", url=f"{stand_in}/page"))["content"] == PAGE
    assert "# Tea" in json.loads(_call(stand_in, "fetch_url_content", url=f"{stand_in}/page", mode="markdown"))["content"]
    assert json.loads(_call(stand_in, "fetch_url_content", url=f"{stand_in}/hop", mode="truncate")) == \
        {"content": "Tea\nDa Hong Pao"}  # one redirect followed; scripts and styles dropped
    # the bounds: each a result BFCL's code gives the model, never a hang or a crash
    loop = json.loads(_call(stand_in, "fetch_url_content", url=f"{stand_in}/loop"))
    assert f"more than {MAX_REDIRECTS} redirects" in loop["error"]
    big = json.loads(_call(stand_in, "fetch_url_content", url=f"{stand_in}/big"))["content"]
    assert big.startswith("aaa") and big.endswith(f"longer than {MAX_BODY_BYTES} bytes, the harness's bound]")
    assert len(big) < MAX_BODY_BYTES + 200
    binary = json.loads(_call(stand_in, "fetch_url_content", url=f"{stand_in}/binary"))
    assert "application/octet-stream" in binary["error"] and "not text" in binary["error"]
    # a loopback address other than the endpoint's origin is refused, directly or by a redirect
    other = "http://127.0.0.2:9/"
    for url in (other, f"{stand_in}/elsewhere?to={other}", "http://localhost:1/"):
        refused = json.loads(_call(stand_in, "fetch_url_content", url=url))
        assert "non-public address" in refused["error"], refused
    assert _call(stand_in, "fetch_url_content", url="file:///etc/passwd").startswith("Error during execution: Invalid URL")
    # a search that fails names its URL, SerpAPI's with the key in the query: the key is never in the result
    failed = json.loads(_call("http://127.0.0.1:1", "search_engine_query", keywords="tea"))
    assert "/search?" in failed["error"] and "api_key=<the key>" in failed["error"] and KEY not in failed["error"]


async def test_the_oracle_scores_100_through_the_stand_in_and_the_key_is_never_written(bfcl_data, stand_in, monkeypatch,
                                                                                 tmp_path):
    monkeypatch.setenv("SERPAPI_API_KEY", KEY)
    chosen = [e.id for c in ("web_search_base", "web_search_no_snippet") for e in read_web_search(c)[:2]]
    opts = RunOptions(benchmark="bfcl", model="oracle", run_dir=tmp_path / "run", transport="http", task_ids=chosen,
                      concurrency=2, progress=False,
                      benchmark_options={"category": ["web_search"], "bfcl_search_endpoint": stand_in})
    _, summary = await run_benchmark(opts)
    assert summary["completed"] == 4, summary.get("first_error")
    assert summary["metrics"]["web_search_base"] == 100.0 and summary["metrics"]["web_search_no_snippet"] == 100.0
    assert len(_StandIn.seen) == 4 and {q["api_key"] for q in _StandIn.seen} == {KEY}  # one search per episode
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["bfcl_web_search"]["endpoint"] == stand_in
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), f"the key was written to {path}"
    traces = [json.loads(x) for x in (tmp_path / "run" / "traces.jsonl").read_text().splitlines()]
    results = {t["task_id"]: [e["result_text"] for e in t["events"] if e["kind"] == "tool_call"] for t in traces}
    assert all(len(r) == 1 and "Result 0" in r[0] for r in results.values())
    assert all(("'body'" in r[0]) == ("no_snippet" not in task) for task, r in results.items())
    # the viewer: the accepted answers beside the final message, and BFCL's verdict
    bench = load_benchmark("bfcl", {"category": ["web_search"]})
    by_id = {t["task_id"]: t for t in traces}
    answer, verdict = bench.episode_view(chosen[0], by_id[chosen[0]], None)
    assert answer["title"] == "Gold answer and final answer" and answer["rows"][0][1] == '["Zhang Yiming"]'
    assert answer["rows"][1][2] == "right" and verdict["rows"][0][:2] == ["right", "(none)"]
    # exported as BFCL's result files (agentic/), read back and scored again: the same verdicts
    out = tmp_path / "export"
    done = subprocess.run([sys.executable, "-m", "evals.cli", "export", str(tmp_path / "run"), "--format",
                           "bfcl-official", "--model-name", "gpt-4o-2024-11-20-FC", "-o", str(out)],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    files = sorted(p.name for p in (out / "gpt-4o-2024-11-20-FC" / "agentic").glob("*.json"))
    assert files == ["BFCL_v4_web_search_base_result.json", "BFCL_v4_web_search_no_snippet_result.json"]
    again = read_results(out)
    assert sorted(again.traces) == sorted(chosen)
    assert all(bench.verdict(k, t).valid for k, t in again.traces.items())


def test_without_a_key_the_category_is_refused_in_one_line(bfcl_data):
    env = {k: v for k, v in os.environ.items() if k != "SERPAPI_API_KEY"}
    done = subprocess.run([sys.executable, "-m", "evals.cli", "run", "bfcl", "--category", "web_search_base",
                           "--model", "oracle"], capture_output=True, text=True, timeout=120,
                          env={**env, "PYTHONPATH": str(ROOT)}, cwd=ROOT, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "BFCL category web_search_base is not served here: " in done.stderr and "set SERPAPI_API_KEY" in done.stderr
