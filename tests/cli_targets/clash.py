"""A tool named ``search`` that differs from ``example_tools.Library.search``."""

from __future__ import annotations

from llm_worker import tool, tool_registry


@tool_registry
class Clash:
    @tool
    async def search(self, text: str) -> str:
        """Another search."""
        return text
