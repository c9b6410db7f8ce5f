"""A registry class and registry subclasses: the inherited tool is one tool, not two."""

from __future__ import annotations

from llm_worker import tool, tool_registry


@tool_registry
class Base:
    @tool
    async def shared(self, n: int) -> str:
        """Inherited by Child."""
        return str(n)


@tool_registry
class Child(Base):
    @tool
    async def own(self) -> str:
        """Only on Child."""
        return "own"


class Renamed(Child):
    """A subclass without @tool_registry: it has Child's tools, so it is a registry too."""
