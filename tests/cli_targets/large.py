"""A target whose output is far larger than a pipe holds (64 KiB on Linux)."""

from typing import Annotated

from llm_worker import Description, tool, tool_registry

LONG = "A long description, repeated to fill the output. " * 4000  # about 200 KB


@tool_registry
class Large:
    @tool
    async def describe(self, text: Annotated[str, Description(LONG)]) -> str:
        """Answer with the text."""
        return text
