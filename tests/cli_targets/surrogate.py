"""A parameter description holding a lone surrogate (what ``errors="surrogateescape"`` leaves)."""

from typing import Annotated

from llm_worker import Description, tool, tool_registry

LATIN1 = b"caf\xe9".decode("utf-8", "surrogateescape")  # "caf\udce9"


@tool_registry
class Surrogate:
    @tool
    async def open_file(self, name: Annotated[str, Description(f"a file such as {LATIN1}")]) -> str:
        """Open a file."""
        return name
