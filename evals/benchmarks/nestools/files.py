"""NesTools' name, data files and their pinned sources (see ../shared/data/MANIFEST.md)."""

from __future__ import annotations

from ...core.data import RemoteFile

__all__ = ["API_IDS", "NAME", "SOURCES", "STRATEGIES", "TEST_DATA"]

NAME = "nestools"  # the registry name; also the folder of its files under the data directory
STRATEGIES = ("oneshot", "agent")
TEST_DATA = (NAME, "test_data.jsonl")
API_IDS = (NAME, "test_api_ids.jsonl")

# hhan1018/NesTools at a pinned commit (Apache-2.0): the 1,000 test samples and the ids of their
# gold APIs in the (unpublished) global API pool; the official scorer matches calls by these ids.
COMMIT = "fb617f396d61ead9f857a48f9ea7cf12fa522450"
_GH = f"https://raw.githubusercontent.com/hhan1018/NesTools/{COMMIT}"
SOURCES: dict[str, tuple[RemoteFile, ...]] = {
    NAME: (
        RemoteFile("nestools/test_data.jsonl", f"{_GH}/data/test_data.jsonl",
                   "71a77b416bdfc97ddc81baa139ea1f0adf1c884e0c2f86bd439dc503c739e643", 2683323),
        RemoteFile("nestools/test_api_ids.jsonl", f"{_GH}/inference/build_test_prompt/test_api_ids.jsonl",
                   "4314d43d794dfc8c03e81e63fe1594022f99dae06bb5c05fe2f2f2477f63469b", 50004),
    ),
}
