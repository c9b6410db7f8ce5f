"""Annotations as text (``from __future__ import annotations``) of a registry defined in a
function: the names of that function resolve them, as pydantic resolves a model's."""

from __future__ import annotations

import types
from datetime import date

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


def test_a_tool_named_like_a_builtin_or_an_import_hides_neither() -> None:
    """As when Python evaluates the annotations at the def: the tools `list` and `set`
    (below the method, or the method itself) do not hide the builtins, nor `date` the
    import; they were read as the tool methods ("'ToolMethod' object is not subscriptable")."""

    @tool_registry
    class Files:
        @tool
        def add(self, tags: list[str], day: date) -> str:
            """Add a file."""
            return ""

        @tool
        def set(self, key: str, tags: set[str] | None = None) -> str:
            """Set a key."""
            return ""

        @tool
        def list(self) -> list[str]:
            """List files."""
            return []

        @tool
        def date(self) -> date:
            """Today."""
            return date.today()

    add, set_, _, _ = (meta.input_schema for meta in tool_metas(Files))
    assert add["properties"] == {
        "tags": {"items": {"type": "string"}, "type": "array"},
        "day": {"format": "date", "type": "string"},
    }
    assert set_["properties"]["tags"] == {
        "anyOf": [
            {"items": {"type": "string"}, "type": "array", "uniqueItems": True},
            {"type": "null"},
        ],
        "default": None,
    }


class Shadowed(BaseModel):
    module_level: int


def test_names_above_the_method_come_first_those_below_only_if_nothing_else_has_them() -> None:
    """A class-body name bound above the method wins over the module's, as at the def;
    one bound below is a forward reference, found when nothing else defines the name."""

    @tool_registry
    class Shop:
        class Shadowed(BaseModel):
            in_the_class: int

        @tool
        def first(self, a: Shadowed, b: Later) -> str:
            """First."""
            return ""

        class Later(BaseModel):
            later: int

    [meta] = tool_metas(Shop)
    assert set(meta.input_schema["$defs"]["Shadowed"]["properties"]) == {"in_the_class"}
    assert set(meta.input_schema["$defs"]["Later"]["properties"]) == {"later"}


_LOGGING_MODULE = """
import functools

def logged(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)
    return wrapper
"""


@pytest.mark.anyio
async def test_a_wraps_decorator_from_another_module_keeps_the_annotations_resolvable() -> None:
    """The annotations resolve in the module that wrote them, not the decorator's
    (it was "name 'Address' is not defined")."""
    decorators = types.ModuleType("decorators")
    exec(_LOGGING_MODULE, decorators.__dict__)

    @tool_registry
    class Post:
        @tool
        @decorators.logged
        def send(self, to: Address, copies: int = 1) -> str:
            """Send a letter."""
            return f"{copies} to {to.city}"

    [meta] = tool_metas(Post)
    assert meta.input_schema["properties"]["to"] == {"$ref": "#/$defs/Address"}
    server = ToolServer()
    server.register_tools(tool_definitions(Post()))
    with anyio.fail_after(5):
        result = await server.handle().call_tool("send", '{"to": {"city": "Oslo"}, "copies": 2}')
    assert result == "2 to Oslo"


class Address(BaseModel):
    city: str
