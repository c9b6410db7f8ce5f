"""Importing this module fails: a @tool parameter without an annotation."""

from __future__ import annotations

from llm_worker import tool, tool_registry


@tool_registry
class Broken:
    @tool
    async def search(self, query) -> str:
        return query
