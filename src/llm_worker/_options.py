"""Small frozen values the decorators attach: ``Description`` and ``ToolOptions``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import GetJsonSchemaHandler
    from pydantic_core import CoreSchema

__all__ = ["Description", "ToolOptions"]


@dataclass(frozen=True)
class Description:
    """Describes a tool argument to the model: ``Annotated[str, Description("...")]``.

    It outranks ``Field(description=...)`` and the docstring. It also works
    inside nested types and in your own pydantic models.
    """

    text: str

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError(f"Description text must be a str, not {type(self.text).__name__}")

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        schema = handler(core_schema)
        schema["description"] = self.text
        return schema


@dataclass(frozen=True)
class ToolOptions:
    """What ``@tool(...)`` was given; read by ``@tool_registry``."""

    name: str | None = None
    thread: bool = True
    strict: bool = True
