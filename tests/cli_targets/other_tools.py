"""A second module of registry classes: one that must never be instantiated, one nested."""

from __future__ import annotations

from llm_worker import tool, tool_registry


@tool_registry
class Archive:
    """Creating an instance fails, so a schema export that created one would fail too."""

    def __init__(self) -> None:
        raise RuntimeError("Archive must not be instantiated by llm-worker schema")

    @tool
    async def archive_book(self, title: str) -> str:
        """Move a book to the archive."""
        return title


class Outer:
    @tool_registry
    class Inner:
        @tool
        async def nested_tool(self, flag: bool = False) -> str:
            """A tool of a nested class."""
            return str(flag)
