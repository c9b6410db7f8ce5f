"""``_registry``: what a registry class is made of, and the questions one can ask of a class."""

from __future__ import annotations

import doctest
import pickle
from typing import Annotated, Any

import pytest
from pydantic import Field

from llm_worker import (
    Description,
    ToolMeta,
    is_tool_registry,
    tool,
    tool_metas,
    tool_registry,
)

pytestmark = pytest.mark.anyio


def undescribed(schema: dict[str, Any]) -> None:
    """A json_schema_extra that refuses a field with a description."""
    if "description" in schema:
        raise ValueError("this field takes no description")


@tool_registry
class App:
    """Module level, so its records and definitions pickle."""

    @tool
    async def search(self, query: Annotated[str, Description("what")], limit: int = 10) -> str:
        return f"{query}/{limit}"

    @tool
    async def ping(self) -> str:
        return "pong"


class Undecorated(App):
    """A subclass of a registry class, without @tool_registry of its own."""


class NotARegistry:
    @tool
    async def marked(self) -> str:
        """Marked @tool, but the class is never given to @tool_registry."""
        return ""


class TestIsToolRegistry:
    def test_a_registry_class(self):
        """A @tool_registry class is a registry."""
        assert is_tool_registry(App) is True

    def test_a_registry_without_tools(self):
        """A @tool_registry class with no @tool methods is a registry all the same."""

        @tool_registry
        class Empty:
            pass

        assert is_tool_registry(Empty) is True
        assert tool_metas(Empty) == []

    def test_a_subclass_is_a_registry(self):
        """A subclass inherits the tools, so it is a registry, as tool_metas agrees."""
        assert is_tool_registry(Undecorated) is True
        assert [meta.name for meta in tool_metas(Undecorated)] == ["search", "ping"]

    @pytest.mark.parametrize(
        "value",
        [NotARegistry, object, int, App(), "App", None, App.search],
        ids=["marked-only", "object", "int", "instance", "str", "None", "tool-method"],
    )
    def test_anything_else_is_not(self, value: Any):
        """Classes never decorated, instances and other values are not registries."""
        assert is_tool_registry(value) is False


class TestBuiltTool:
    def test_record(self):
        """The per-tool record names its owner, method, tool name and generated classes."""
        record = App.__llm_worker_tools__[0]
        assert (record.owner, record.attr_name, record.name) == (App, "search", "search")
        assert record.args_model is App.SearchArgs
        assert record.tool_class is App.ToolSearch
        assert repr(record) == f"<BuiltTool 'search' of {__name__}.App>"

    def test_meta_is_made_once(self):
        """The meta (and its schema) is built on first use and then reused."""
        record = App.__llm_worker_tools__[0]
        assert record.meta() is record.meta()
        assert record.meta().input_schema["properties"]["query"] == {
            "type": "string",
            "description": "what",
        }

    def test_records_in_declaration_order(self):
        """A registry class keeps one record per tool, in declaration order."""
        assert [record.name for record in App.__llm_worker_tools__] == ["search", "ping"]


class TestBoundToolMethod:
    def test_names_and_model_as_the_class_attribute_gives_them(self):
        """``app.search.tool_name`` / ``.args_model`` are the tool's, as on ``App.search``."""
        app = App()
        assert app.search.tool_name == App.search.tool_name == "search"
        assert app.search.args_model is App.SearchArgs

    def test_a_missing_attribute_names_the_tool_method(self):
        """What neither it nor its function has is an AttributeError naming the method, not
        the function's "'function' object has no attribute"."""
        with pytest.raises(
            AttributeError, match=r"bound tool method App\.search has no attribute 'nope'"
        ):
            App().search.nope  # noqa: B018

    def test_the_functions_attributes_still_pass_through(self):
        """As a bound method: ``__qualname__``, ``__code__``... are the function's."""
        import inspect

        app = App()
        assert app.search.__qualname__ == "App.search"
        assert inspect.iscoroutinefunction(app.search) is inspect.iscoroutinefunction(
            App.search.__func__
        )


class TestToolFactory:
    def test_call_makes_meta_and_new_tool(self):
        """Each call gives the same meta and a new tool bound to the app."""
        app = App()
        factory = app.search_definition()
        meta_one, tool_one = factory()
        meta_two, tool_two = factory()
        assert isinstance(meta_one, ToolMeta)
        assert meta_one == meta_two
        assert tool_one is not tool_two
        assert tool_one.ctx is tool_two.ctx is app  # type: ignore[attr-defined]

    def test_name(self):
        """The factory knows the name it will register under."""
        assert App().search_definition().name == "search"

    def test_repr(self):
        """repr names the tool and the app by class and id."""
        app = App()
        assert repr(app.search_definition()) == (
            f"<ToolDefinition 'search' of <App at {id(app):#x}>>"
        )

    async def test_pickles_by_owner_and_method(self):
        """A pickled definition finds its tool again through the class's records."""
        again = pickle.loads(pickle.dumps(App().search_definition()))
        meta, tool_instance = again()
        assert meta == App.search.meta()
        assert await tool_instance.execute('{"query": "q"}') == "q/10"

    def test_a_tools_doctests_are_collected_once(self):
        """The generated tool class held the method as a function of its own, so doctest
        (``pytest --doctest-modules``) collected and ran the method's examples twice."""

        @tool_registry
        class Calc:
            @tool
            async def add(self, a: int) -> int:
                """Add.

                >>> 1 + 1
                2
                """
                return a

        finder = doctest.DocTestFinder()
        found = [test.name for test in finder.find(Calc, "Calc", module=False) if test.examples]
        assert found == ["Calc.add"]


class TestDeclarationErrors:
    def test_a_schema_that_cannot_be_made_names_class_and_method(self):
        """A schema that fails on first use is reported in the declaration-error shape."""

        # Checked without its description at decoration, the type passes; the tool's
        # schema, description and all, is only made on first use.
        @tool_registry
        class Odd:
            @tool
            async def odd(
                self,
                value: Annotated[int, Field(json_schema_extra=undescribed), Description("d")],
            ) -> str:
                return ""

        with pytest.raises(TypeError) as excinfo:
            Odd.odd.meta()
        assert str(excinfo.value) == (
            f"Cannot build tools for {__name__}.{Odd.__qualname__}:\n"
            "  odd: no JSON Schema for its arguments (this field takes no description)"
        )


class TestDirectCalls:
    """``app.method()`` gets what a tool call would: real values for ``Field(...)`` defaults."""

    @tool_registry
    class Shop:
        @tool
        def order(
            self,
            item: str,
            quantity: int = Field(1, ge=1),
            tags: list[str] = Field(default_factory=list),  # noqa: B008
            note: Annotated[str, Field(max_length=20)] = Field("none"),
        ) -> dict[str, Any]:
            return {"item": item, "quantity": quantity, "tags": tags, "note": note}

        @tool
        async def label(
            self,
            text: str,
            *,
            size: int = Field(12),
            stamp: list[str] = Field(default=["a"]),  # noqa: B008
        ) -> str:
            return f"{text}:{size}:{stamp}"

        @tool
        def echo(
            self, first: str, second: str = Field(default_factory=lambda data: data["first"])
        ) -> str:
            return second

        @tool
        def needs(self, value: int = Field(description="required: Field gives no default")) -> int:
            return value

    def test_bound_call_gets_the_defaults(self):
        """app.method() passes each Field(...)'s default, not the FieldInfo."""
        shop = self.Shop()
        assert shop.order("pen") == {"item": "pen", "quantity": 1, "tags": [], "note": "none"}

    def test_unbound_call_gets_the_defaults(self):
        """MyApp.method(app) goes the same way."""
        assert self.Shop.order(self.Shop(), "pen", 5) == {
            "item": "pen",
            "quantity": 5,
            "tags": [],
            "note": "none",
        }

    def test_given_arguments_win(self):
        """Arguments given, by position or by name, are passed as they are."""
        shop = self.Shop()
        assert shop.order("pen", 2, ["x"], note="n") == {
            "item": "pen",
            "quantity": 2,
            "tags": ["x"],
            "note": "n",
        }

    def test_a_fresh_factory_value_per_call(self):
        """default_factory is called for every call: no list shared between calls."""
        shop = self.Shop()
        first = shop.order("a")["tags"]
        first.append("changed")
        assert shop.order("b")["tags"] == []

    async def test_keyword_only_and_async(self):
        """Keyword-only Field defaults are filled too; an async method still gives a coroutine."""
        assert await self.Shop().label("hi") == "hi:12:['a']"

    def test_a_mutable_default_is_copied(self):
        """A Field(default=[...]) is copied for each call, as pydantic copies it."""

        @tool_registry
        class Keeper:
            @tool
            def keep(self, items: list[str] = Field(default=["a"])) -> list[str]:  # noqa: B008
                items.append("b")
                return items

        keeper = Keeper()
        assert keeper.keep() == ["a", "b"]
        assert keeper.keep() == ["a", "b"]

    def test_a_factory_gets_the_earlier_arguments(self):
        """A factory that takes data gets the arguments before its own, as in validation."""
        assert self.Shop().echo("same") == "same"

    async def test_the_same_values_as_a_tool_call(self):
        """A direct call and a tool call with no arguments given agree."""
        shop = self.Shop()
        tool_instance = self.Shop.ToolOrder(shop)
        assert await tool_instance.execute('{"item": "pen"}') == (
            '{"item":"pen","quantity":1,"tags":[],"note":"none"}'
        )
        assert shop.order("pen") == {"item": "pen", "quantity": 1, "tags": [], "note": "none"}

    def test_a_field_without_default_is_still_required(self):
        """Field(description=...) gives no default: leaving it out is a TypeError, as in Python."""
        with pytest.raises(TypeError) as excinfo:
            self.Shop().needs()
        assert str(excinfo.value) == (
            f"{self.Shop.needs.__qualname__}() missing required argument 'value' "
            f"(its Field(...) gives no default)"
        )
        assert self.Shop().needs(4) == 4

    def test_wrong_calls_fail_as_python_says(self):
        """An unknown argument is refused with Python's own message."""
        with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
            self.Shop().order("pen", colour="red")
