"""kg_store package."""
