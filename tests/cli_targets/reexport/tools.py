"""The module that defines the registry class its package re-exports."""

from llm_worker import tool, tool_registry


@tool_registry
class Shop:
    @tool
    async def buy(self, item: str) -> str:
        """Buy an item."""
        return item
