"""Names the FamilyTool modules share, in a module that imports nothing (``metrics`` is imported by
the registry for ``evals --help``, ``data`` imports the tool specs: neither may import the other)."""

__all__ = ["KG_TOOL_PREFIX"]

KG_TOOL_PREFIX = "kg_"  # the KG tools' names start with it (not the candidate tools')
