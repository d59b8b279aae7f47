"""tool_specs package."""
