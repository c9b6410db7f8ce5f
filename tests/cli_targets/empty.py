"""Registry classes without tools: a target naming them is most likely the wrong one."""

from llm_worker import tool_registry


@tool_registry
class Empty:
    """A registry class whose tools were forgotten (or live in a subclass elsewhere)."""

    def helper(self) -> str:
        return "not a tool"
