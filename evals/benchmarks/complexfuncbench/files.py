"""ComplexFuncBench's name, data files and their pinned sources (see ../shared/data/MANIFEST.md)."""

from __future__ import annotations

from ...core.data import RemoteFile

__all__ = ["ALL_TOOLS", "EXACT_MATCH", "FIRST_TURN", "FULL", "NAME", "PROMPTS_COMPARE", "PROMPTS_RESPONSE",
           "SAMPLE", "SOURCES", "TOOL_INFO"]

NAME = "complexfuncbench"
FULL = (NAME, "ComplexFuncBench.jsonl")  # the official 1,000 samples
SAMPLE = (NAME, "sample_Car-Rental-9.json")  # the one complete sample held (see MANIFEST.md)
ALL_TOOLS = (NAME, "All_Tools.json")
EXACT_MATCH = (NAME, "exact_match_values.json")
TOOL_INFO = (NAME, "tool_info.json")
FIRST_TURN = (NAME, "ComplexFuncBench_possible_answer.jsonl")
PROMPTS_COMPARE = (NAME, "prompts", "compare.py")  # the official judge prompts, read as data (never copied)
PROMPTS_RESPONSE = (NAME, "prompts", "response.py")

# The Hugging Face dataset. No commit of it could be looked up from here (the hub is unreachable and
# no copy names one), so the URL names the branch and the file is pinned by its size and sha256
# (MANIFEST.md): a changed upstream file fails the checksum instead of being used.
HF_REVISION = "main"
_HF = f"https://huggingface.co/datasets/THUDM/ComplexFuncBench/resolve/{HF_REVISION}"
# The official code's data files and judge prompts, at the commit MANIFEST.md records.
_GH = "https://raw.githubusercontent.com/THUDM/ComplexFuncBench/c37b284e2f2e03ee456115b7c4b7e537f534be37"
# Third-party copies (MANIFEST.md): the first-turn gold calls and the tool schemas.
_MP = "https://raw.githubusercontent.com/minpeter/ai-sdk-tool-call-middleware/cc01e9d52e3d4494d4a53ecb91faa638c43a64f2"
_GL = "https://raw.githubusercontent.com/lgxbil/GraphLinkTools/98a80cb39e9ea2a126dcbf9c100f9b92e58390a0"

SOURCES: dict[str, tuple[RemoteFile, ...]] = {
    NAME: (
        RemoteFile("/".join(FULL), f"{_HF}/ComplexFuncBench.jsonl",
                   "be1e0f5951b666f6543b946e915a431a39bbda1807481878eb331245276ac088", 40195573,
                   pinned_path="ComplexFuncBench.jsonl"),
    ),
    f"{NAME}-official": (
        RemoteFile("/".join(EXACT_MATCH), f"{_GH}/utils/exact_match_values.json",
                   "1a2ff3663557f0f814f53d24d212f78d83f0ea7dbd7b4c07c6556417899ae0fe", 4868),
        RemoteFile("/".join(TOOL_INFO), f"{_GH}/utils/tool_info.json",
                   "2c106f906171447e1a880771db241a5275c75bb3bb82bccb2f49e6260135bad9", 5287),
        RemoteFile("/".join(PROMPTS_COMPARE), f"{_GH}/prompts/compare.py",
                   "11bd45fcc421d7d3860b744043295229c703d0fa887963e81bf8c5bbc4e5c88a", 2408),
        RemoteFile("/".join(PROMPTS_RESPONSE), f"{_GH}/prompts/response.py",
                   "798b96888f1d3265692440922863d895394e9a33851c41baffe5f28a449f4ea0", 5015),
    ),
    f"{NAME}-extras": (
        RemoteFile("/".join(FIRST_TURN), f"{_MP}/packages/eval/data/ComplexFuncBench_possible_answer.jsonl",
                   "48e795a0880dfbbf9e6588a6e8007e46ad575cdc284b9bdba74f7211e982a7a4", 143978),
        RemoteFile("/".join(ALL_TOOLS), f"{_GL}/Tools/All_Tools.json",
                   "f24e7b9ec5919377912519e4d502eef3b842738cf1143b7f4e209e55d3470173", 54501),
    ),
}
