"""ToolHop's name and data files: where they live under the data directory, and their pinned sources."""

from __future__ import annotations

from ...core.data import RemoteFile

__all__ = ["FULL", "NAME", "SOURCES", "STRATEGIES", "SUBSET"]

NAME = "toolhop"  # the registry name; also the folder of its files under the data and cache directories
# the paper's three modes, and two of them with its "no detailed feedback" ablation
STRATEGIES = ("free", "forced", "direct", "free-minimal", "forced-minimal")
FULL = (NAME, "ToolHop.json")
SUBSET = (NAME, "toolhop_subset100_localbench.jsonl")

# The official file from the Hugging Face dataset at a pinned revision. The revision is the one
# local-bench built its subset from; the size and sha256 come from a Git-LFS pointer of the file
# (MananDesai54/llm-benchmarking, data/ToolHop.json) whose HF revision is not recorded, so a mismatch
# means that pointer was for another revision (see ../shared/data/MANIFEST.md).
REVISION = "b439d7279af359fda46e8117ae4f0245b75f5c6b"
_TH = f"https://huggingface.co/datasets/bytedance-research/ToolHop/resolve/{REVISION}"
# The 100-query subset (sandbox-runnable rows only; see MANIFEST.md): added by this commit of
# local-bench and reverted later, so it is pinned here by commit and sha256.
_LB = "https://raw.githubusercontent.com/local-bench/local-bench/f0ce8cf352feb051fc82eee81d47e40a17453e96"
SOURCES: dict[str, tuple[RemoteFile, ...]] = {
    "toolhop": (
        RemoteFile("toolhop/ToolHop.json", f"{_TH}/data/ToolHop.json",
                   "0a51f71a44b7025645e452123af3caf2e348301922af91778e268db0188a7fab", 19720396,
                   pinned_path="data/ToolHop.json"),
    ),
    "toolhop-subset": (
        RemoteFile("toolhop/toolhop_subset100_localbench.jsonl", f"{_LB}/suite/v1/toolhop.jsonl",
                   "bfa191882f589dac3d115d579f38ddf25756b34132137d4870c931d43f994e17", 1637318),
    ),
}
