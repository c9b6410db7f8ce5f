"""A small ``@tool_registry`` app the provider tests give the model."""

from __future__ import annotations

from llm_worker import ExecutionFailedError, tool, tool_registry


@tool_registry
class Notes:
    """Notes the model can save and read back."""

    def __init__(self) -> None:
        self.notes: dict[str, str] = {}
        self.calls: list[tuple[str, str]] = []

    @tool
    async def add_note(self, title: str, body: str = "") -> str:
        """Save a note under a title."""
        self.calls.append(("add_note", title))
        self.notes[title] = body
        return f"saved {title}"

    @tool
    async def get_note(self, title: str) -> str:
        """Read the note saved under a title."""
        self.calls.append(("get_note", title))
        if title not in self.notes:
            raise ExecutionFailedError(f"no note called {title!r}")
        return self.notes[title]
