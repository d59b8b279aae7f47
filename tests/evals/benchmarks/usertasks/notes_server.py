"""A small stateful MCP server for the tests, over stdio: notes kept in a JSON file (``{key: value}``).

The file is ``$NOTES_FILE`` (read at every call, written after every change); without it the
notes live in memory, empty, as a server started without its data would be. Tools: ``get_note``,
``list_notes``, ``put_notes`` (a batch: a list argument), ``delete_note`` (an error for a key that
does not exist).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel


class Note(BaseModel):
    key: str
    value: str


def main() -> None:
    path = Path(os.environ["NOTES_FILE"]) if os.environ.get("NOTES_FILE") else None
    memory: dict[str, str] = {}

    def load() -> dict[str, str]:
        if path is None:
            return dict(memory)
        return dict(json.loads(path.read_text(encoding="utf-8"))) if path.exists() else {}

    def save(notes: dict[str, str]) -> None:
        if path is None:
            memory.clear()
            memory.update(notes)
        else:
            path.write_text(json.dumps(notes, sort_keys=True), encoding="utf-8")

    server = MCPServer("notes-test")

    @server.tool(name="get_note", description="The value of one note (null when there is none).")
    def get_note(key: str) -> dict[str, str | None]:
        return {"key": key, "value": load().get(key)}

    @server.tool(name="list_notes", description="Every note, by key.")
    def list_notes() -> dict[str, list[dict[str, str]]]:
        return {"notes": [{"key": k, "value": v} for k, v in sorted(load().items())]}

    @server.tool(name="put_notes", description="Write several notes at once (a key that exists is overwritten).")
    def put_notes(notes: list[Note]) -> dict[str, int]:
        current = load()
        for note in notes:
            current[note.key] = note.value
        save(current)
        return {"written": len(notes)}

    @server.tool(name="delete_note", description="Delete one note.")
    def delete_note(key: str) -> dict[str, str]:
        current = load()
        if key not in current:
            raise ValueError(f"no note {key!r}")
        del current[key]
        save(current)
        return {"deleted": key}

    import anyio

    anyio.run(server.run_stdio_async)


if __name__ == "__main__":
    main()
