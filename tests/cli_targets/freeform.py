"""A tool whose parameter has keys not named in advance: it has no OpenAI strict form."""

from __future__ import annotations

from llm_worker import tool, tool_registry


@tool_registry
class Freeform:
    @tool
    async def free(self, meta: dict[str, int]) -> str:
        """Take any keys."""
        return str(meta)
