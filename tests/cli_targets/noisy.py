"""A target that prints while it is imported: the schema on stdout must stay JSON."""

from llm_worker import tool, tool_registry

print("noise on import")


@tool_registry
class Noisy:
    @tool
    async def ping(self) -> str:
        """Answer pong."""
        return "pong"
