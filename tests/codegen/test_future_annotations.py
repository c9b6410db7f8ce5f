"""Annotations as text (``from __future__ import annotations``) of a registry defined in a
function: the names of that function resolve them, as pydantic resolves a model's."""

from __future__ import annotations

import anyio
import pytest
from pydantic import BaseModel

from llm_worker import ToolServer, tool, tool_definitions, tool_metas, tool_registry


def make_shop() -> type:
    class Address(BaseModel):
        city: str

    @tool_registry
    class Shop:
        @tool
        def ship(self, to: Address) -> str:
            """Ship an order."""
            return f"shipped to {to.city}"

    return Shop


def make_shop_with_options() -> type:
    class Parcel(BaseModel):
        grams: int

    @tool_registry(thread=False)
    class Post:
        @tool
        def weigh(self, parcel: Parcel) -> int:
            """Weigh a parcel."""
            return parcel.grams

    return Post


def test_a_type_of_the_defining_function_resolves() -> None:
    """It was refused with "cannot resolve the annotation ... define or import it before
    the class", though it was defined before the class."""
    [meta] = tool_metas(make_shop())
    address = meta.input_schema["$defs"]["Address"]
    assert address["properties"] == {"city": {"type": "string"}}
    [meta] = tool_metas(make_shop_with_options())
    assert "Parcel" in meta.input_schema["$defs"]


@pytest.mark.anyio
async def test_the_tool_validates_with_that_type() -> None:
    server = ToolServer()
    server.register_tools(tool_definitions(make_shop()()))
    with anyio.fail_after(5):
        assert await server.handle().call_tool("ship", '{"to": {"city": "Oslo"}}') == (
            "shipped to Oslo"
        )


def test_a_name_defined_nowhere_is_still_named() -> None:
    def make() -> None:
        @tool_registry
        class Broken:
            @tool
            def go(self, x: Missing) -> str:  # type: ignore[name-defined]  # noqa: F821
                """Go."""
                return ""

    with pytest.raises(TypeError, match="name 'Missing' is not defined"):
        make()
