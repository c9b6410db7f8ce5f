"""``@tool``, ``@tool_registry``, ``ToolMethod``, ``BoundToolMethod``, ``tool_definitions()``,
``tool_metas()``: the public face of the code generator."""

import copy
import datetime
import functools
import gc
import inspect
import pathlib
import pickle
import re
import sys
import threading
import typing
import warnings
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Annotated, Any

import anyio
import pytest
import typing_extensions
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from llm_worker import (
    BoundToolMethod,
    Description,
    InternalToolError,
    InvalidArgumentError,
    ToolMeta,
    ToolMethod,
    tool,
    tool_definitions,
    tool_metas,
    tool_registry,
)

# Snake-case method names, as `def` would accept them and providers would too.
snake_names = st.from_regex(r"[a-z][a-z0-9]{0,7}(_[a-z][a-z0-9]{0,7}){0,4}", fullmatch=True)


class Address(BaseModel):
    street: str
    number: int


@tool_registry
class UserApp:
    """A module-level registry: importable, so its objects pickle."""

    def __init__(self, users: dict[str, str] | None = None) -> None:
        self.users = users if users is not None else {"1": "ada"}

    @tool
    def get_user(self, user_id: Annotated[str, Description("the user's id")]) -> str:
        """Get a user by id."""
        return self.users.get(user_id, "unknown")

    @tool
    async def find(self, query: str, limit: int = 10) -> list[str]:
        """Find users."""
        return [name for name in self.users.values() if query in name][:limit]

    @tool(name="set-address")
    def set_address(self, user_id: str, address: Address) -> str:
        """Store an address."""
        return f"{user_id}: {address.street} {address.number}"


@tool_registry
class SearchApp:
    """The example of SPEC §3, and two more shapes of method."""

    def __init__(self, prefix: str = "Results for") -> None:
        self.prefix = prefix

    @tool
    async def search(self, query: Annotated[str, Description("search query")]) -> str:
        """Run a search.
        Searches the database for the given query."""
        return f"{self.prefix}: {query}"

    @tool
    async def add(self, a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @tool
    async def ping(self) -> str:
        """Check that the app is alive."""
        return "pong"


def _module_level_function(self) -> str:
    return "not a method"


def _declaration_error(cls: type, *problems: str) -> str:
    lines = "\n".join(f"  {problem}" for problem in problems)
    return f"Cannot build tools for {cls.__module__}.{cls.__qualname__}:\n{lines}"


class TestToolDecorator:
    def test_bare_and_called_forms_give_tool_methods(self):
        """@tool and @tool(...) both return a ToolMethod wrapping the function."""
        assert isinstance(UserApp.__dict__["get_user"], ToolMethod)
        assert isinstance(UserApp.__dict__["set_address"], ToolMethod)
        assert UserApp.get_user.__name__ == "get_user"
        assert UserApp.get_user.__doc__ == "Get a user by id."
        assert UserApp.get_user.__qualname__ == "UserApp.get_user"

    def test_options_are_recorded(self):
        """@tool(...) records its options on the ToolMethod."""
        options = UserApp.set_address.options
        assert (options.name, options.thread) == ("set-address", None)  # None: inherit
        assert UserApp.__dict__["find"].options.name is None

    def test_module_level_function_is_rejected(self):
        """@tool on a module-level function fails right at @tool."""
        with pytest.raises(TypeError) as excinfo:
            tool(_module_level_function)
        assert str(excinfo.value) == (
            "@tool can only decorate methods defined in a class body; "
            "'_module_level_function' is not a method (put it in a @tool_registry class)"
        )

    def test_nested_function_is_rejected(self):
        """@tool on a function nested in a function fails right at @tool."""

        def nested(self) -> str:
            return ""

        with pytest.raises(TypeError) as excinfo:
            tool(nested)
        assert str(excinfo.value) == (
            "@tool can only decorate methods defined in a class body; "
            f"{nested.__qualname__!r} is not a method (put it in a @tool_registry class)"
        )

    @pytest.mark.parametrize(
        ("wrapper", "kind"), [(staticmethod, "staticmethod"), (classmethod, "classmethod")]
    )
    def test_static_and_class_methods_under_tool_are_rejected_at_registry(self, wrapper, kind):
        """@tool above @staticmethod / @classmethod fails at @tool_registry, naming the class
        and method, with the text of the other decorator order."""

        class App:
            @tool
            @wrapper
            def f(self) -> str:
                return ""

        with pytest.raises(TypeError) as excinfo:
            tool_registry(App)
        assert str(excinfo.value) == _declaration_error(
            App,
            f"f: a tool cannot be a {kind}; a tool is an instance method "
            f"(remove @{kind} and take self)",
        )

    @pytest.mark.parametrize(
        ("wrapper", "kind"), [(staticmethod, "staticmethod"), (classmethod, "classmethod")]
    )
    def test_a_static_or_class_method_under_tool_is_listed_with_the_other_problems(
        self, wrapper, kind
    ):
        """@tool above @staticmethod hides none of the class's other problems: one error
        lists them all (it raised in the class body, naming that one alone)."""

        class App:
            @tool
            def a(self, x) -> str:  # type: ignore[no-untyped-def]
                return ""

            @tool
            @wrapper
            def h(x: int) -> str:
                return ""

            @tool
            def b(self, y) -> str:  # type: ignore[no-untyped-def]
                return ""

        with pytest.raises(TypeError) as excinfo:
            tool_registry(App)
        assert str(excinfo.value) == _declaration_error(
            App,
            f"h: a tool cannot be a {kind}; a tool is an instance method "
            f"(remove @{kind} and take self)",
            "a: parameter 'x' has no type annotation (add one, e.g. x: str)",
            "b: parameter 'y' has no type annotation (add one, e.g. y: str)",
        )

    @pytest.mark.parametrize(
        ("wrapper", "kind"), [(staticmethod, "staticmethod"), (classmethod, "classmethod")]
    )
    def test_static_and_class_methods_are_rejected_at_registry(self, wrapper, kind):
        """@staticmethod / @classmethod above @tool fails at @tool_registry, with the same text."""

        class App:
            @wrapper
            @tool
            def f(self) -> str:
                return ""

        with pytest.raises(TypeError) as excinfo:
            tool_registry(App)
        assert str(excinfo.value) == _declaration_error(
            App,
            f"f: a tool cannot be a {kind}; a tool is an instance method "
            f"(remove @{kind} and take self)",
        )

    @pytest.mark.parametrize("wrapper", [staticmethod, classmethod])
    def test_a_static_or_class_method_outside_a_class(self, wrapper):
        """Outside a class body there is no class to name: @tool says what it cannot wrap."""
        kind = wrapper.__name__
        with pytest.raises(TypeError) as excinfo:
            tool(wrapper(_module_level_function))
        assert str(excinfo.value) == f"@tool cannot wrap a {kind}; a tool is an instance method"

    def test_double_tool_is_rejected(self):
        """@tool applied twice is an error."""
        with pytest.raises(TypeError, match=r"^@tool is applied twice to "):

            class App:
                @tool
                @tool
                def f(self) -> str:
                    return ""

    @pytest.mark.parametrize("wrapper", [property, functools.cached_property])
    def test_a_property_is_rejected_naming_the_class_and_method(self, wrapper):
        """@tool above @property names both; it said only "expects a function, got property"."""
        with pytest.raises(TypeError) as excinfo:

            class App:
                @tool
                @wrapper
                def size(self) -> int:
                    return 1

        kind = wrapper.__name__
        test = TestToolDecorator.test_a_property_is_rejected_naming_the_class_and_method
        assert str(excinfo.value) == (
            f"Cannot build tools for {__name__}.{test.__qualname__}.<locals>.App:\n"
            f"  size: @tool cannot wrap a {kind}; a tool is a method the model calls "
            f"(remove @{kind})"
        )

    def test_non_callable_is_rejected(self):
        """@tool needs a function."""
        with pytest.raises(TypeError) as excinfo:
            tool(42)  # type: ignore[call-overload]
        assert str(excinfo.value) == "@tool expects a function, got int"


class TestToolRegistry:
    def test_bare_and_called_forms(self):
        """@tool_registry and @tool_registry() both generate the tools."""

        @tool_registry()
        class App:
            @tool
            def f(self) -> str:
                return "f"

        assert App.ToolF.tool_name == "f"
        assert [meta.name for meta in tool_metas(App)] == ["f"]

    def test_returns_the_same_class(self):
        """The decorator returns the class it was given, not a copy."""

        class App:
            @tool
            def f(self) -> str:
                return "f"

        assert tool_registry(App) is App

    def test_non_class_is_rejected(self):
        """@tool_registry decorates classes only."""
        with pytest.raises(TypeError) as excinfo:
            tool_registry(len)  # type: ignore[type-var]
        assert str(excinfo.value) == (
            "@tool_registry decorates a class, not builtin_function_or_method"
        )

    def test_decorating_a_registry_again_says_so(self):
        """A second @tool_registry (here from a base's __init_subclass__ as well) names the
        cause; it reported "cannot generate 'GetArgs', the class already defines it"."""

        class Base:
            def __init_subclass__(cls, **kwargs: Any) -> None:
                super().__init_subclass__(**kwargs)
                tool_registry(cls)

        class App(Base):
            @tool
            def get(self) -> int:
                return 1

        with pytest.raises(TypeError) as excinfo:
            tool_registry(App)
        assert str(excinfo.value) == _declaration_error(
            App,
            "App is already a @tool_registry class; decorate it once (a base class's "
            "__init_subclass__ may decorate it too)",
        )
        assert [meta.name for meta in tool_metas(App)] == ["get"]  # as the first one made it

    def test_records_in_declaration_order(self):
        """__llm_worker_tools__ holds one record per tool, in declaration order."""
        records = UserApp.__llm_worker_tools__
        assert isinstance(records, tuple)
        assert [r.attr_name for r in records] == ["get_user", "find", "set_address"]
        assert [r.name for r in records] == ["get_user", "find", "set-address"]

    def test_class_without_tools(self):
        """A registry without @tool methods has no tools."""

        @tool_registry
        class Empty:
            def helper(self) -> None: ...

        assert Empty.__llm_worker_tools__ == ()
        assert tool_metas(Empty) == []
        assert tool_definitions(Empty()) == []

    def test_method_stays_callable(self):
        """The decorated method still works as a plain method."""
        app = UserApp()
        assert app.get_user("1") == "ada"
        assert UserApp.get_user(app, "2") == "unknown"

    def test_failed_registry_leaves_class_untouched(self):
        """A @tool_registry that fails attaches nothing to the class."""

        class Broken:
            @tool
            def search(self, query: str) -> str:
                return query

            @tool
            def bad(self, x) -> str:
                return ""

        before = dict(Broken.__dict__)
        with pytest.raises(TypeError):
            tool_registry(Broken)
        assert dict(Broken.__dict__) == before
        assert not hasattr(Broken, "SearchArgs")
        assert not hasattr(Broken, "ToolSearch")
        assert not hasattr(Broken, "search_definition")
        assert not hasattr(Broken, "__llm_worker_tools__")
        with pytest.raises(TypeError, match="is not decorated with @tool_registry"):
            Broken.search.meta()

    def test_failed_subclass_registry_leaves_subclass_untouched(self):
        """A failing subclass registry adds nothing to the subclass's own namespace."""

        class Sub(UserApp):
            @tool
            def broken(self, *args: int) -> str:
                return ""

        with pytest.raises(TypeError):
            tool_registry(Sub)
        assert "__llm_worker_tools__" not in Sub.__dict__
        assert "BrokenArgs" not in Sub.__dict__
        assert "ToolBroken" not in Sub.__dict__


class TestGeneratedNames:
    def test_pascal_case_names(self):
        """get_user gives GetUserArgs, ToolGetUser and get_user_definition."""
        assert "GetUserArgs" in UserApp.__dict__
        assert "ToolGetUser" in UserApp.__dict__
        assert "get_user_definition" in UserApp.__dict__

    def test_names_follow_the_method_not_the_tool_name(self):
        """@tool(name=...) changes the tool name, not the generated attribute names."""
        assert UserApp.ToolSetAddress.tool_name == "set-address"
        assert UserApp.SetAddressArgs.__name__ == "SetAddressArgs"
        assert UserApp.set_address_definition.__name__ == "set_address_definition"

    @settings(max_examples=40, deadline=None)
    @given(name=snake_names)
    def test_generated_names_for_any_snake_name(self, name):
        """Any snake name gets <Pascal>Args, Tool<Pascal> and <name>_definition."""
        pascal = "".join(segment.capitalize() for segment in name.split("_"))

        def method(self) -> str:
            return name

        method.__name__ = name
        method.__qualname__ = f"Dynamic.{name}"
        cls = tool_registry(type("Dynamic", (), {name: tool(method)}))
        assert getattr(cls, f"{pascal}Args").__name__ == f"{pascal}Args"
        assert getattr(cls, f"Tool{pascal}").tool_name == name
        assert getattr(cls, f"{name}_definition").__name__ == f"{name}_definition"
        assert tool_metas(cls)[0].name == name

    def test_qualnames(self):
        """Generated classes and functions read as written in the class."""
        assert UserApp.GetUserArgs.__qualname__ == "UserApp.GetUserArgs"
        assert UserApp.ToolGetUser.__qualname__ == "UserApp.ToolGetUser"
        assert UserApp.get_user_definition.__qualname__ == "UserApp.get_user_definition"
        assert UserApp.ToolGetUser.execute.__qualname__ == "UserApp.ToolGetUser.execute"

    def test_simple_names(self):
        """Generated objects have the plain names too."""
        assert UserApp.GetUserArgs.__name__ == "GetUserArgs"
        assert UserApp.ToolGetUser.__name__ == "ToolGetUser"
        assert UserApp.get_user_definition.__name__ == "get_user_definition"

    def test_modules(self):
        """Generated objects belong to the class's module."""
        assert UserApp.GetUserArgs.__module__ == __name__
        assert UserApp.ToolGetUser.__module__ == __name__
        assert UserApp.get_user_definition.__module__ == __name__
        assert UserApp.ToolGetUser.execute.__module__ == __name__

    def test_qualnames_of_a_nested_class(self):
        """A registry nested in a function gets qualnames under its own qualname."""

        @tool_registry
        class Inner:
            @tool
            def run_it(self) -> str:
                return ""

        assert Inner.RunItArgs.__qualname__ == f"{Inner.__qualname__}.RunItArgs"
        assert Inner.ToolRunIt.__qualname__ == f"{Inner.__qualname__}.ToolRunIt"

    def test_docs(self):
        """Generated objects say what generated them and for which method."""
        assert UserApp.GetUserArgs.__doc__ == "Generated by llm_worker for UserApp.get_user."
        assert UserApp.ToolGetUser.__doc__ == "Generated by llm_worker for UserApp.get_user."
        assert UserApp.get_user_definition.__doc__ == (
            "The ToolDefinition of UserApp.get_user for this instance. Generated by llm_worker."
        )
        assert UserApp.ToolGetUser.execute.__doc__ == (
            "Validate the arguments into GetUserArgs and run the method."
        )

    def test_tool_class_attributes(self):
        """Tool<Pascal> carries its args model and tool name as class attributes."""
        assert UserApp.ToolGetUser.args_model is UserApp.GetUserArgs
        assert UserApp.ToolGetUser.tool_name == "get_user"

    @pytest.mark.anyio
    async def test_tool_instance_keeps_ctx(self):
        """ToolGetUser(app) keeps the app as ctx, and runs the method on it."""
        app = UserApp()
        tool_instance = UserApp.ToolGetUser(app)
        assert tool_instance.ctx is app
        assert await tool_instance.execute('{"user_id": "1"}') == app.get_user("1") == "ada"

    def test_repr_shows_qualname_and_ctx_class_only(self):
        """repr of a tool shows its qualname and the ctx class, never repr(ctx)."""

        class Secretive(UserApp):
            def __repr__(self) -> str:
                return "SECRET"

        app = Secretive()
        text = repr(UserApp.ToolGetUser(app))
        assert "SECRET" not in text
        assert re.fullmatch(
            rf"<UserApp\.ToolGetUser ctx=<{re.escape(Secretive.__qualname__)} at 0x[0-9a-f]+>>",
            text,
        )
        assert f"{id(app):#x}" in text


class TestDefinitionFactories:
    """What ``app.search_definition()`` makes when the server calls it."""

    def test_generated_attributes_exist(self):
        """@tool_registry attaches SearchArgs, ToolSearch and search_definition."""
        assert isinstance(SearchApp.SearchArgs, type)
        assert isinstance(SearchApp.ToolSearch, type)
        assert callable(SearchApp.search_definition)

    def test_meta_is_named_after_the_method(self):
        """The factory's ToolMeta is named after the method."""
        meta, _ = SearchApp().search_definition()()
        assert meta.name == "search"

    def test_description_is_the_docstring_prose(self):
        """The description is the whole docstring prose, line break kept."""
        meta, _ = SearchApp().search_definition()()
        assert meta.description == "Run a search.\nSearches the database for the given query."

    def test_schema_describes_the_argument(self):
        """The schema describes `query` with its Description text."""
        meta, _ = SearchApp().search_definition()()
        assert meta.input_schema == {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "search query"}},
            "required": ["query"],
            "additionalProperties": False,
        }

    @pytest.mark.anyio
    async def test_the_tool_is_the_generated_class_bound_to_the_app(self):
        """The second element is a ToolSearch bound to the app; execute() calls the method."""
        app = SearchApp(prefix="Found")
        meta, tool_instance = app.search_definition()()
        assert isinstance(meta, ToolMeta)
        assert type(tool_instance) is SearchApp.ToolSearch
        assert tool_instance.ctx is app  # type: ignore[attr-defined]
        assert await tool_instance.execute('{"query": "cats"}') == "Found: cats"

    def test_metas_are_equal_across_factory_calls(self):
        """Calling one factory repeatedly yields equal metas."""
        definition = SearchApp().search_definition()
        metas = [definition()[0] for _ in range(3)]
        assert metas[0] == metas[1] == metas[2]
        assert len({hash(meta) for meta in metas}) == 1

    def test_metas_are_equal_across_definitions(self):
        """Two definitions of one tool, even of different apps, have equal metas."""
        assert SearchApp().search_definition()()[0] == SearchApp("x").search_definition()()[0]

    def test_each_call_makes_a_new_tool_bound_to_the_same_app(self):
        """Each factory call creates a new tool instance whose ctx is the same app."""
        app = SearchApp()
        definition = app.search_definition()
        _, first = definition()
        _, second = definition()
        assert first is not second
        assert first.ctx is app  # type: ignore[attr-defined]
        assert second.ctx is app  # type: ignore[attr-defined]


class TestPickling:
    def test_args_instance_round_trips(self):
        """An Args model instance pickles and unpickles to an equal value."""
        args = UserApp.SetAddressArgs(user_id="7", address=Address(street="Main", number=1))
        again = pickle.loads(pickle.dumps(args))
        assert type(again) is UserApp.SetAddressArgs
        assert again == args

    def test_tool_instance_round_trips(self):
        """A generated tool pickles with its ctx."""
        tool_instance = UserApp.ToolGetUser(UserApp({"9": "grace"}))
        again = pickle.loads(pickle.dumps(tool_instance))
        assert type(again) is UserApp.ToolGetUser
        assert again.ctx.users == {"9": "grace"}

    @pytest.mark.anyio
    async def test_definition_round_trips(self):
        """app.x_definition() pickles; the copy makes the same meta and a working tool."""
        definition = UserApp({"9": "grace"}).get_user_definition()
        again = pickle.loads(pickle.dumps(definition))
        meta, tool_instance = again()
        assert meta == definition()[0]
        assert type(tool_instance) is UserApp.ToolGetUser
        assert await tool_instance.execute('{"user_id": "9"}') == "grace"


class TestToolNames:
    def test_name_override(self):
        """@tool(name=...) sets the name the model sees."""
        assert UserApp.set_address.tool_name == "set-address"
        assert UserApp.set_address.meta().name == "set-address"

    @pytest.mark.parametrize("name", ["", "has space", "dot.ted", "x" * 65, "ünï"])
    def test_invalid_tool_names_are_rejected(self, name):
        """Names providers would refuse are declaration errors."""

        class App:
            @tool(name=name)
            def f(self) -> str:
                return ""

        with pytest.raises(TypeError) as excinfo:
            tool_registry(App)
        assert str(excinfo.value) == _declaration_error(
            App,
            f"f: tool name {name!r} is not valid; use 1-64 letters, digits, '_' or '-' "
            f"(what model providers accept)",
        )

    @pytest.mark.parametrize("name", ["a", "A-b_9", "x" * 64])
    def test_valid_tool_names_are_accepted(self, name):
        """Letters, digits, '_' and '-' up to 64 characters are fine."""

        @tool_registry
        class App:
            @tool(name=name)
            def f(self) -> str:
                return ""

        assert tool_metas(App)[0].name == name


class TestDescriptions:
    def test_docstring_prose_without_sections(self):
        """The description is the prose; Args/Returns/Raises sections are left out."""

        @tool_registry
        class App:
            @tool
            def f(self, x: int) -> int:
                """Double a number.

                Works for negative numbers
                as well.

                Args:
                    x: The number.

                Returns:
                    Twice x.

                Raises:
                    ValueError: Never.
                """
                return 2 * x

        assert App.f.meta().description == (
            "Double a number.\n\nWorks for negative numbers\nas well."
        )

    def test_cleandoc_indentation(self):
        """Indentation is removed as inspect.cleandoc does; relative indents stay."""

        @tool_registry
        class App:
            @tool
            def f(self) -> str:
                """First line.
                    indented line
                back
                """
                return ""

        assert App.f.meta().description == "First line.\n    indented line\nback"

    def test_no_docstring_falls_back(self):
        """Without a docstring the description is 'Tool: {name}'."""

        @tool_registry
        class App:
            @tool(name="renamed")
            def f(self) -> str:
                return ""

            @tool
            def g(self) -> str:
                return ""

        assert [meta.description for meta in tool_metas(App)] == ["Tool: renamed", "Tool: g"]

    def test_blank_docstring_falls_back(self):
        """A whitespace-only docstring counts as none."""

        @tool_registry
        class App:
            @tool
            def f(self) -> str:
                """ """
                return ""

        assert App.f.meta().description == "Tool: f"

    def test_description_in_nested_types(self):
        """Description also works inside nested types such as list items."""

        @tool_registry
        class App:
            @tool
            def f(self, tags: list[Annotated[str, Description("one tag")]]) -> str:
                return ""

        assert App.f.meta().input_schema["properties"]["tags"] == {
            "type": "array",
            "items": {"type": "string", "description": "one tag"},
        }

    def test_description_text_must_be_str(self):
        """Description takes a str."""
        with pytest.raises(TypeError) as excinfo:
            Description(3)  # type: ignore[arg-type]
        assert str(excinfo.value) == "Description text must be a str, not int"


DOCSTRINGS = {
    "google": """Do it.

        Args:
            a: doc a
            b: doc b
            c: doc c
        """,
    "numpy": """Do it.

        Parameters
        ----------
        a : str
            doc a
        b : str
            doc b
        c : str
            doc c
        """,
    "rest": """Do it.

        :param a: doc a
        :param b: doc b
        :param c: doc c
        """,
    "epydoc": """Do it.

        @param a: doc a
        @param b: doc b
        @param c: doc c
        """,
}


class TestParameterDescriptions:
    @pytest.mark.parametrize("style", sorted(DOCSTRINGS))
    def test_precedence(self, style):
        """Description beats Field(description=...), which beats the docstring."""

        class App:
            @tool
            def f(
                self,
                a: Annotated[str, Field(description="field a"), Description("described a")],
                b: Annotated[str, Field(description="field b")],
                c: str,
                d: str = "",
            ) -> str:
                return ""

        App.f.__func__.__doc__ = DOCSTRINGS[style]
        tool_registry(App)
        meta = App.f.meta()
        properties = meta.input_schema["properties"]
        assert meta.description == "Do it."
        assert properties["a"]["description"] == "described a"
        assert properties["b"]["description"] == "field b"
        assert properties["c"]["description"] == "doc c"
        assert "description" not in properties["d"]

    @pytest.mark.parametrize("style", sorted(DOCSTRINGS))
    def test_docstring_with_only_a_parameter_section(self, style):
        """A docstring that is only a parameter section describes the parameters, nothing else."""

        class App:
            @tool
            def f(self, a: str, b: str, c: str) -> str:
                return ""

        App.f.__func__.__doc__ = DOCSTRINGS[style].replace("Do it.\n\n", "", 1)
        tool_registry(App)
        meta = App.f.meta()
        assert meta.description == "Tool: f"
        assert [p["description"] for p in meta.input_schema["properties"].values()] == [
            "doc a",
            "doc b",
            "doc c",
        ]

    def test_description_order_inside_annotated_does_not_matter(self):
        """Description wins over Field(description=...) whichever comes first."""

        @tool_registry
        class App:
            @tool
            def f(self, a: Annotated[str, Description("D"), Field(description="F")]) -> str:
                return ""

        assert App.f.meta().input_schema["properties"]["a"]["description"] == "D"

    def test_field_constraints_are_kept_with_description(self):
        """Other Field metadata still applies when Description supplies the text."""

        @tool_registry
        class App:
            @tool
            def f(self, n: Annotated[int, Field(ge=1), Description("count")] = 1) -> str:
                return ""

        assert App.f.meta().input_schema["properties"]["n"] == {
            "type": "integer",
            "minimum": 1,
            "default": 1,
            "description": "count",
        }


class TestInputSchema:
    def test_whole_schema(self):
        """Defaults kept, only parameters without defaults required, nested models in $defs."""
        assert UserApp.set_address.meta().input_schema == {
            "type": "object",
            "properties": {
                "user_id": {"type": "string"},
                "address": {"$ref": "#/$defs/Address"},
            },
            "required": ["user_id", "address"],
            "additionalProperties": False,
            "$defs": {
                "Address": {
                    "type": "object",
                    "title": "Address",
                    "properties": {
                        "street": {"type": "string"},
                        "number": {"type": "integer"},
                    },
                    "required": ["street", "number"],
                }
            },
        }

    def test_every_argument_is_a_required_property(self):
        """Each parameter without a default becomes a required property."""
        meta, _ = SearchApp().add_definition()()
        assert meta.input_schema == {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
            "additionalProperties": False,
        }

    def test_no_parameters(self):
        """A method without parameters gets an empty Args model and no properties."""
        assert SearchApp.PingArgs.model_fields == {}
        meta, _ = SearchApp().ping_definition()()
        assert meta.input_schema == {
            "type": "object",
            "properties": {},
            "additionalProperties": False,
        }

    def test_defaults_are_kept(self):
        """A parameter default appears in the schema and is not required."""
        schema = UserApp.find.meta().input_schema
        assert schema["properties"]["limit"] == {"type": "integer", "default": 10}
        assert schema["required"] == ["query"]

    def test_no_required_key_when_everything_has_a_default(self):
        """Without required parameters the schema lists none."""

        @tool_registry
        class App:
            @tool
            def f(self, a: int = 1, b: str | None = None) -> str:
                return ""

        schema = App.f.meta().input_schema
        assert schema.get("required", []) == []
        assert schema["properties"]["b"] == {
            "anyOf": [{"type": "string"}, {"type": "null"}],
            "default": None,
        }

    def test_keyword_only_parameters(self):
        """Keyword-only parameters are ordinary arguments."""

        @tool_registry
        class App:
            @tool
            def f(self, *, a: int, b: int = 2) -> int:
                return a + b

        assert App.f.meta().input_schema["required"] == ["a"]

    def test_no_titles_at_top_level_or_on_properties(self):
        """The schema has no 'title' for the object or its properties."""
        for meta in tool_metas(UserApp):
            schema = meta.input_schema
            assert "title" not in schema
            assert "description" not in schema
            for prop in schema["properties"].values():
                assert "title" not in prop

    def test_schema_is_cached_and_copied(self):
        """meta() returns equal metas; mutating a returned schema changes nothing."""
        schema = UserApp.find.meta().input_schema
        schema["properties"].clear()
        assert UserApp.find.meta().input_schema["properties"] != {}
        assert UserApp.find.meta() is UserApp.find.meta()

    def test_parameter_names_that_shadow_basemodel(self):
        """Arguments named json, schema, copy, model_name... work, without any warning."""
        with warnings.catch_warnings():
            warnings.simplefilter("error")

            @tool_registry
            class App:
                @tool(thread=False)
                def f(
                    self,
                    json: str,
                    schema: str,
                    copy: str,
                    model_name: str,
                    validate: str = "v",
                    dict: str = "d",
                    model_fields: str = "mf",
                ) -> str:
                    return "|".join((json, schema, copy, model_name, validate, dict, model_fields))

            meta = App.f.meta()
            result = anyio.run(
                App.ToolF(App()).execute,
                '{"json": "j", "schema": "s", "copy": "c", "model_name": "m", "dict": "D"}',
            )
        assert meta.input_schema["required"] == ["json", "schema", "copy", "model_name"]
        assert list(meta.input_schema["properties"]) == [
            "json",
            "schema",
            "copy",
            "model_name",
            "validate",
            "dict",
            "model_fields",
        ]
        assert result == "j|s|c|m|v|D|mf"


class TestStrictness:
    @tool_registry
    class Strict:
        @tool
        async def f(self, n: int, address: Address | None = None) -> int:
            return n if address is None else address.number

        @tool(strict=False)
        async def lax(self, n: int, address: Address | None = None) -> int:
            return n if address is None else address.number

    @pytest.mark.anyio
    async def test_string_for_int_is_rejected(self):
        """'5' for an int is rejected by default, as the schema says."""
        with pytest.raises(InvalidArgumentError) as excinfo:
            await self.Strict.ToolF(self.Strict()).execute('{"n": "5"}')
        assert excinfo.value.message == "'n': Input should be a valid integer (got \"5\")"

    @pytest.mark.anyio
    async def test_string_for_int_is_rejected_in_nested_models(self):
        """Strictness reaches into nested models."""
        with pytest.raises(InvalidArgumentError) as excinfo:
            await self.Strict.ToolF(self.Strict()).execute(
                '{"n": 1, "address": {"street": "s", "number": "5"}}'
            )
        assert excinfo.value.message == (
            "'address.number': Input should be a valid integer (got \"5\")"
        )

    @pytest.mark.anyio
    async def test_lax_mode_coerces(self):
        """@tool(strict=False) accepts '5' for an int, nested too."""
        tool_instance = self.Strict.ToolLax(self.Strict())
        assert await tool_instance.execute('{"n": "5"}') == "5"
        assert (
            await tool_instance.execute('{"n": 1, "address": {"street": "s", "number": "6"}}')
            == "6"
        )

    @pytest.mark.anyio
    async def test_registry_default_and_tool_override(self):
        """@tool_registry(strict=False) makes its tools lax unless a tool says strict=True."""

        @tool_registry(strict=False)
        class Lax:
            @tool
            async def f(self, n: int) -> int:
                return n

            @tool(strict=True)
            async def g(self, n: int) -> int:
                return n

        assert await Lax.ToolF(Lax()).execute('{"n": "5"}') == "5"
        with pytest.raises(InvalidArgumentError):
            await Lax.ToolG(Lax()).execute('{"n": "5"}')

    @pytest.mark.anyio
    async def test_strict_mode_accepts_valid_input(self):
        """Valid input passes in strict mode."""
        assert await self.Strict.ToolF(self.Strict()).execute('{"n": 5}') == "5"


class TestThreading:
    @tool_registry
    class Where:
        @tool
        def threaded(self) -> int:
            return threading.get_ident()

        @tool(thread=False)
        def inline(self) -> int:
            return threading.get_ident()

        @tool
        async def on_loop(self) -> int:
            return threading.get_ident()

    @pytest.mark.anyio
    async def test_sync_tool_runs_in_a_worker_thread(self):
        """A plain def runs in a worker thread, not on the event loop's thread."""
        result = await self.Where.ToolThreaded(self.Where()).execute("")
        assert int(result) != threading.get_ident()

    @pytest.mark.anyio
    async def test_thread_false_runs_inline(self):
        """@tool(thread=False) runs a plain def on the event loop's thread."""
        result = await self.Where.ToolInline(self.Where()).execute("")
        assert int(result) == threading.get_ident()

    @pytest.mark.anyio
    async def test_async_tool_runs_on_the_loop(self):
        """An async def runs on the event loop's thread."""
        result = await self.Where.ToolOnLoop(self.Where()).execute("")
        assert int(result) == threading.get_ident()


class TestDeclarationErrors:
    def test_every_problem_reported_together(self):
        """One TypeError names the class and lists every problem, one per line."""

        class Arbitrary:
            pass

        class Bad:
            SearchArgs = None

            @tool
            def search(self, query: str) -> str:
                return query

            @tool
            def star(self, *args: int) -> str:
                return ""

            @tool
            def double_star(self, **kwargs: int) -> str:
                return ""

            @tool
            def unannotated(self, x) -> str:
                return ""

            @tool
            def positional(self, x: int, /) -> str:
                return ""

            @tool
            def forward(self, x: "MissingName") -> str:  # type: ignore[name-defined]  # noqa: F821
                return ""

            @tool
            def arbitrary(self, x: Arbitrary) -> str:
                return ""

            @tool
            def callback(self, x: Callable[[int], int]) -> str:
                return ""

            @tool(name="search")
            def duplicate(self) -> str:
                return ""

            @tool
            def no_self() -> str:  # type: ignore[misc]
                return ""

        with pytest.raises(TypeError) as excinfo:
            tool_registry(Bad)
        pydantic_reason = r"\(.+\)"  # pydantic's own words, which vary between versions
        expected = re.escape(
            _declaration_error(
                Bad,
                "star: *args is not supported; a tool takes named arguments only",
                "double_star: **kwargs is not supported; a tool takes named arguments only",
                "unannotated: parameter 'x' has no type annotation (add one, e.g. x: str)",
                "positional: parameter 'x' is positional-only; tools pass arguments by name",
                "forward: cannot resolve the annotation of parameter 'x' (NameError: name "
                "'MissingName' is not defined); define or import it before the class",
                f"arbitrary: parameter 'x' has type {Arbitrary.__qualname__}, which pydantic "
                "cannot validate or describe in JSON Schema REASON",
                "callback: parameter 'x' has type Callable[[int], int], which "
                "pydantic cannot validate or describe in JSON Schema REASON",
                "no_self: a tool method must take 'self' as its first parameter",
                "search: cannot generate 'SearchArgs', the class already defines it (rename the "
                "method or the attribute)",
                "duplicate: tool name 'search' is already used by search (pass @tool(name=...) "
                "to rename one)",
            )
        ).replace("REASON", pydantic_reason)
        assert re.fullmatch(expected, str(excinfo.value)), str(excinfo.value)
        assert "Unable to generate pydantic-core schema" in str(excinfo.value)

    @pytest.mark.parametrize("attribute", ["GetItArgs", "ToolGetIt", "get_it_definition"])
    def test_collision_with_existing_attribute(self, attribute):
        """A generated name the class already defines is never overwritten."""

        def get_it(self) -> str:
            return ""

        get_it.__qualname__ = "App.get_it"
        app_class = type("App", (), {attribute: "mine", "get_it": tool(get_it)})
        with pytest.raises(TypeError) as excinfo:
            tool_registry(app_class)
        assert str(excinfo.value) == _declaration_error(
            app_class,
            f"get_it: cannot generate {attribute!r}, the class already defines it (rename the "
            f"method or the attribute)",
        )
        assert app_class.__dict__[attribute] == "mine"

    def test_same_tool_method_under_two_names(self):
        """One ToolMethod bound to two attribute names is an error."""

        class App:
            @tool
            def f(self) -> str:
                return ""

            g = f

        with pytest.raises(TypeError) as excinfo:
            tool_registry(App)
        assert str(excinfo.value) == _declaration_error(App, "g: is the same @tool method as f")

    def test_tool_method_moved_to_another_class(self):
        """A ToolMethod of one registry cannot be reused in another class."""

        class Other:
            search = UserApp.__dict__["get_user"]

        with pytest.raises(TypeError) as excinfo:
            tool_registry(Other)
        assert str(excinfo.value) == _declaration_error(
            Other, "search: this @tool method already belongs to UserApp"
        )

    def test_generator_methods_are_rejected(self):
        """A generator method is not a tool."""

        class App:
            @tool
            def gen(self) -> object:
                yield 1

        with pytest.raises(TypeError) as excinfo:
            tool_registry(App)
        assert str(excinfo.value) == _declaration_error(
            App, "gen: generator methods cannot be tools; return a list instead"
        )

    def test_forward_reference_in_the_class_body_resolves(self):
        """A string annotation naming a class-body type resolves."""

        @tool_registry
        class App:
            class Point(BaseModel):
                x: int

            @tool
            def f(self, p: "Point") -> int:
                return p.x

        assert App.f.meta().input_schema["required"] == ["p"]

    def test_self_may_have_another_name(self):
        """The first parameter is the instance whatever it is called."""

        @tool_registry
        class App:
            @tool
            def f(this, x: int) -> int:
                return x

        assert list(App.FArgs.model_fields) == ["x"]


class TestToolDefinitionsAndMetas:
    def test_tool_definitions_in_declaration_order(self):
        """tool_definitions(app) lists every tool in declaration order, bound to app."""
        app = UserApp()
        definitions = tool_definitions(app)
        made = [definition() for definition in definitions]
        assert [meta.name for meta, _ in made] == ["get_user", "find", "set-address"]
        assert all(tool_instance.ctx is app for _, tool_instance in made)

    def test_tool_metas_without_instance(self):
        """tool_metas(cls) gives the metas without creating an instance."""

        @tool_registry
        class NoInit:
            def __init__(self) -> None:
                raise AssertionError("no instance may be created")

            @tool
            def b(self) -> str:
                return ""

            @tool
            def a(self) -> str:
                return ""

        metas = tool_metas(NoInit)
        assert [meta.name for meta in metas] == ["b", "a"]
        assert all(isinstance(meta, ToolMeta) for meta in metas)

    def test_tool_metas_match_definitions(self):
        """tool_metas(cls) equals the metas the definitions make."""
        assert tool_metas(UserApp) == [d()[0] for d in tool_definitions(UserApp())]

    def test_tool_definitions_of_non_registry(self):
        """tool_definitions() of a plain object says it is not a registry."""
        with pytest.raises(TypeError) as excinfo:
            tool_definitions(object())
        assert str(excinfo.value) == "tool_definitions(): object is not a @tool_registry class"

    def test_tool_definitions_of_a_class(self):
        """tool_definitions() of a class points to tool_metas()."""
        with pytest.raises(TypeError) as excinfo:
            tool_definitions(UserApp)
        assert str(excinfo.value) == (
            "tool_definitions() takes an instance of UserApp, not the class "
            "(for the metas of a class use tool_metas(UserApp))"
        )

    def test_tool_metas_of_non_registry(self):
        """tool_metas() of a plain class says it is not a registry."""
        with pytest.raises(TypeError) as excinfo:
            tool_metas(int)
        assert str(excinfo.value) == "tool_metas(): int is not a @tool_registry class"

    def test_tool_metas_of_an_instance(self):
        """tool_metas() of an instance asks for the class."""
        with pytest.raises(TypeError) as excinfo:
            tool_metas(UserApp())  # type: ignore[arg-type]
        assert str(excinfo.value) == (
            "tool_metas() takes a class, not a UserApp instance (pass type(app))"
        )


@tool_registry
class Base:
    @tool
    def alpha(self) -> str:
        """Alpha of the base."""
        return f"base alpha of {type(self).__name__}"

    @tool
    def beta(self) -> str:
        """Beta of the base."""
        return "base beta"


@tool_registry
class Derived(Base):
    @tool
    def beta(self) -> str:
        """Beta of the subclass."""
        return "derived beta"

    @tool
    def gamma(self) -> str:
        return "derived gamma"


class Undecorated(Base):
    pass


class TestInheritance:
    def test_subclass_inherits_and_overrides(self):
        """A decorated subclass has the base's tools, the override and its own."""
        metas = {meta.name: meta for meta in tool_metas(Derived)}
        assert sorted(metas) == ["alpha", "beta", "gamma"]
        assert metas["alpha"].description == "Alpha of the base."
        assert metas["beta"].description == "Beta of the subclass."
        assert tool_metas(Derived)[0].name == "alpha"

    def test_base_is_unchanged(self):
        """Decorating a subclass does not change the base's tools."""
        assert [meta.description for meta in tool_metas(Base)] == [
            "Alpha of the base.",
            "Beta of the base.",
        ]
        assert "GammaArgs" not in Base.__dict__

    async def _run_all(self, app: object) -> dict[str, str]:
        results = {}
        for definition in tool_definitions(app):
            meta, tool_instance = definition()
            results[meta.name] = await tool_instance.execute("")
        return results

    @pytest.mark.anyio
    async def test_subclass_tools_run_the_right_methods(self):
        """Inherited tools run on the subclass instance; the override runs its own code."""
        assert await self._run_all(Derived()) == {
            "alpha": "base alpha of Derived",
            "beta": "derived beta",
            "gamma": "derived gamma",
        }

    @pytest.mark.anyio
    async def test_undecorated_subclass_instance(self):
        """tool_definitions works on an instance of an undecorated subclass."""
        assert await self._run_all(Undecorated()) == {
            "alpha": "base alpha of Undecorated",
            "beta": "base beta",
        }

    @pytest.mark.anyio
    async def test_an_override_wrapped_in_a_callable_object_is_called(self):
        """An override under functools.lru_cache (a callable, not a function): the base
        method ran, while app.beta() ran the override."""
        import functools

        class Cached(Base):
            @functools.lru_cache  # noqa: B019
            def beta(self) -> str:
                return "cached beta"

        assert (await self._run_all(Cached()))["beta"] == "cached beta"

    @pytest.mark.anyio
    async def test_a_patch_of_the_class_made_before_the_tool_is_seen(self):
        """mock.patch.object(Base, ...) before the tool is made: the tool runs the patch
        (it ran the original, the owner's function being taken as it was declared)."""
        from unittest import mock

        def patched(self: Base) -> str:
            return "patched beta"

        with mock.patch.object(Base, "beta", patched):
            assert (await self._run_all(Base()))["beta"] == "patched beta"
        assert (await self._run_all(Base()))["beta"] == "base beta"

    @pytest.mark.anyio
    async def test_a_mock_patched_in_is_called_as_the_app_calls_it(self):
        """A Mock is no descriptor: app.alpha() calls it without the app, and so does the
        tool (it passed the app first, so assert_called_with disagreed)."""
        from unittest import mock

        with mock.patch.object(Base, "alpha", mock.Mock(return_value="mocked")) as patched:
            assert (await self._run_all(Base()))["alpha"] == "mocked"
            patched.assert_called_once_with()

    @pytest.mark.anyio
    async def test_a_partialmethod_alias_of_a_tool_is_no_problem(self):
        """An alias beside the tool, not the tool hidden: it was a declaration error."""
        import functools

        @tool_registry
        class Aliased:
            @tool
            def search(self, q: str, recent: bool = False) -> str:
                """Search."""
                return f"{q} recent={recent}"

            search_recent = functools.partialmethod(search, recent=True)

        assert Aliased().search_recent("x") == "x recent=True"
        assert [meta.name for meta in tool_metas(Aliased)] == ["search"]

    def test_an_override_that_is_not_a_method_is_refused(self):
        """A staticmethod or a value where the tool's method was: the base method ran."""

        class Static(Base):
            @staticmethod
            def beta() -> str:  # type: ignore[override]
                return "static"

        with pytest.raises(TypeError, match=r"Static.beta overrides the tool Base.beta with "):
            [definition() for definition in tool_definitions(Static())]

    def test_subclass_tool_name_clash_with_base(self):
        """A new subclass tool cannot take an inherited tool's name."""

        class Clash(Base):
            @tool(name="alpha")
            def other(self) -> str:
                return ""

        with pytest.raises(TypeError) as excinfo:
            tool_registry(Clash)
        assert str(excinfo.value) == _declaration_error(
            Clash,
            "other: tool name 'alpha' is already used by Base.alpha (pass @tool(name=...) to "
            "rename one)",
        )


@tool_registry
class Files:
    @tool
    def read(self, path: str) -> str:
        """Read a file."""
        return f"file {path}"

    @tool
    def beta(self) -> str:
        """Beta of the files."""
        return "files beta"


@tool_registry
class Rows:
    @tool
    def row(self, key: int) -> str:
        """Read a row."""
        return f"row {key}"


@tool_registry
class Both(Files, Rows):
    @tool
    def own(self) -> str:
        """The subclass's own."""
        return "own"


class BothUndecorated(Files, Rows, Base):
    pass


class TestMultipleInheritance:
    """A class with several registry bases has all their tools, as attribute lookup
    finds them; two of them with one name are refused, never one of them dropped."""

    @pytest.mark.anyio
    async def test_a_decorated_class_has_every_bases_tools(self):
        assert [meta.name for meta in tool_metas(Both)] == ["row", "read", "beta", "own"]
        results = {}
        for definition in tool_definitions(Both()):
            meta, tool_instance = definition()
            results[meta.name] = await tool_instance.execute(
                '{"path": "a"}'
                if meta.name == "read"
                else '{"key": 1}'
                if meta.name == "row"
                else ""
            )
        assert results == {"row": "row 1", "read": "file a", "beta": "files beta", "own": "own"}

    def test_an_undecorated_class_takes_the_first_base_in_lookup_order(self):
        """Files.beta comes before Base.beta in the MRO: it is the one the class has."""
        metas = {meta.name: meta for meta in tool_metas(BothUndecorated)}
        assert sorted(metas) == ["alpha", "beta", "read", "row"]
        assert metas["beta"].description == "Beta of the files."

    def test_a_diamonds_override_is_the_one_attribute_lookup_finds(self):
        """D(C, B), B overriding A's tool and C inheriting it: D has B's, schema and all,
        though C's list (coming later in the merge) holds A's."""

        @tool_registry
        class A:
            @tool
            def x(self) -> str:
                """A's x."""
                return "A"

        @tool_registry
        class B(A):
            @tool
            def x(self, n: int) -> str:  # type: ignore[override]
                """B's x, takes n."""
                return f"B {n}"

        @tool_registry
        class C(A):
            @tool
            def other(self) -> str:
                """C's own."""
                return "C"

        class D(C, B):
            pass

        metas = {meta.name: meta for meta in tool_metas(D)}
        assert metas["x"].description == "B's x, takes n."
        assert list(metas["x"].input_schema["properties"]) == ["n"]

    def test_two_bases_tools_with_one_name_are_refused(self):
        @tool_registry
        class Db:
            @tool(name="read")
            def read_row(self, key: int) -> str:
                """Read a row."""
                return ""

        class Clash(Files, Db):
            pass

        problem = (
            "tool name 'read' is used by both {} and Files.read (pass @tool(name=...) to "
            "rename one)"
        ).format(Db.__qualname__ + ".read_row")
        with pytest.raises(TypeError) as excinfo:
            tool_metas(Clash)  # not decorated: refused where it is used
        assert str(excinfo.value) == _declaration_error(Clash, problem)
        with pytest.raises(TypeError) as excinfo:
            tool_registry(Clash)
        assert str(excinfo.value) == _declaration_error(Clash, problem)


class TestToolMethod:
    def test_class_access_gives_the_tool_method(self):
        """MyApp.search is the ToolMethod itself."""
        assert isinstance(UserApp.get_user, ToolMethod)
        assert UserApp.get_user is UserApp.__dict__["get_user"]

    def test_call_through_the_class(self):
        """MyApp.search(app, ...) calls the method."""
        assert UserApp.get_user(UserApp(), "1") == "ada"

    def test_tool_name_and_args_model(self):
        """.tool_name and .args_model give the generated values."""
        assert UserApp.get_user.tool_name == "get_user"
        assert UserApp.get_user.args_model is UserApp.GetUserArgs

    def test_meta(self):
        """.meta() is the tool's meta."""
        meta = UserApp.get_user.meta()
        assert meta.name == "get_user"
        assert meta.description == "Get a user by id."

    def test_definition(self):
        """.definition(app) makes a tool bound to app."""
        app = UserApp()
        meta, tool_instance = UserApp.get_user.definition(app)()
        assert meta == UserApp.get_user.meta()
        assert tool_instance.ctx is app

    def test_repr(self):
        """repr names the method."""
        assert repr(UserApp.get_user) == "<tool method UserApp.get_user>"

    def test_not_decorated_class(self):
        """A @tool in a class without @tool_registry fails on use, saying why."""

        class Plain:
            @tool
            def f(self) -> str:
                return "f"

        expected = (
            f"{Plain.f.__qualname__} is marked @tool, but its class is not decorated "
            f"with @tool_registry"
        )
        for use in (
            lambda: Plain.f.definition(Plain()),
            lambda: Plain().f.definition(),
            Plain.f.meta,
            lambda: Plain.f.tool_name,
            lambda: Plain.f.args_model,
        ):
            with pytest.raises(TypeError) as excinfo:
                use()
            assert str(excinfo.value) == expected
        assert Plain().f() == "f"


@tool_registry
class Renamed:
    async def _impl(self, q: str) -> str:
        """Search."""
        return q

    search = tool(_impl)


class TestIntrospection:
    """A tool method answers introspection as the method it wraps does: frameworks that
    decide by ``inspect`` whether to await, or read hints and signatures, treat it right."""

    def test_a_bound_tool_methods_signature_has_no_self(self):
        app = UserApp()
        assert str(inspect.signature(app.find)) == "(query: str, limit: int = 10) -> list[str]"
        assert str(inspect.signature(UserApp.find)).startswith("(self, query: str")

    def test_coroutine_functions_are_told_apart(self):
        app = UserApp()
        assert inspect.iscoroutinefunction(app.find)
        assert inspect.iscoroutinefunction(UserApp.find)
        assert not inspect.iscoroutinefunction(app.get_user)
        assert not inspect.iscoroutinefunction(UserApp.get_user)

    def test_type_hints_and_names(self):
        _ = typing.Generic.__annotations__  # as any code may have: it gives Generic an empty one
        app = UserApp()
        hints = {"query": str, "limit": int, "return": list[str]}
        assert typing.get_type_hints(app.find) == hints
        assert typing.get_type_hints(UserApp.find) == hints
        assert (app.find.__name__, app.find.__qualname__) == ("find", "UserApp.find")

    def test_a_bound_tool_method_is_of_its_functions_module(self):
        """As a bound method: ``inspect.getmodule``, doc tools and loggers find the app's
        module; the class itself stays the library's (and pickles by that name)."""
        app = UserApp()
        assert app.find.__module__ == UserApp.find.__module__ == __name__
        assert inspect.getmodule(app.find) is sys.modules[__name__]
        assert BoundToolMethod.__module__ == "llm_worker"
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            assert pickle.loads(pickle.dumps(BoundToolMethod, protocol)) is BoundToolMethod

    def test_a_tool_under_another_name_copies_and_pickles_as_itself(self):
        """A tool method assigned under a name that is not its function's."""
        app = Renamed()
        for copied in (copy.copy(app.search), pickle.loads(pickle.dumps(app.search))):
            assert isinstance(copied, BoundToolMethod)
            assert copied.definition().name == "search"
        assert pickle.loads(pickle.dumps(Renamed.search)) is Renamed.search

    def test_they_pickle_as_methods_do(self):
        app = UserApp({"7": "grace"})
        bound = pickle.loads(pickle.dumps(app.get_user))
        assert isinstance(bound, BoundToolMethod)
        assert bound("7") == "grace"  # a copy of the instance, as a bound method's pickle
        assert pickle.loads(pickle.dumps(UserApp.get_user)) is UserApp.get_user


class TestBoundToolMethod:
    def test_instance_access_gives_a_bound_tool_method(self):
        """app.search is a BoundToolMethod."""
        app = UserApp()
        bound = app.get_user
        assert isinstance(bound, BoundToolMethod)
        assert bound.__self__ is app
        assert bound.__func__ is UserApp.get_user.__func__
        assert bound.__name__ == "get_user"
        assert bound.__doc__ == "Get a user by id."

    def test_call(self):
        """app.search(...) calls the method on app."""
        assert UserApp({"5": "linus"}).get_user("5") == "linus"

    @pytest.mark.anyio
    async def test_call_async(self):
        """An async tool method bound to app returns its coroutine result when awaited."""
        assert await UserApp().find("a") == ["ada"]

    def test_definition(self):
        """app.search.definition() is bound to app."""
        app = UserApp()
        meta, tool_instance = app.get_user.definition()()
        assert meta.name == "get_user"
        assert tool_instance.ctx is app

    def test_meta(self):
        """app.search.meta() equals MyApp.search.meta()."""
        assert UserApp().get_user.meta() == UserApp.get_user.meta()

    def test_equality(self):
        """Bound methods of one method and instance are equal and hash equal."""
        app = UserApp()
        assert app.get_user == app.get_user
        assert hash(app.get_user) == hash(app.get_user)
        assert app.get_user != UserApp().get_user
        assert app.get_user != app.find

    def test_repr(self):
        """repr names the method and the instance's class."""
        app = UserApp()
        assert repr(app.get_user) == (
            f"<bound tool method UserApp.get_user of <UserApp at {id(app):#x}>>"
        )


# -- title, annotations and the result's schema -------------------------------------------


def test_tool_options_give_the_meta_a_title_and_annotations_merged_with_the_registry() -> None:
    from llm_worker import ToolAnnotations

    @tool_registry(annotations=ToolAnnotations(open_world=True, read_only=True))
    class Files:
        @tool(title="Read a file")
        def read(self, path: str) -> str:
            """Read."""
            return path

        @tool(annotations=ToolAnnotations(read_only=False, destructive=True))
        def delete(self, path: str) -> str:
            """Delete."""
            return path

    read, delete = tool_metas(Files)
    assert read.title == "Read a file"
    assert read.annotations == ToolAnnotations(read_only=True, open_world=True)
    assert delete.title is None
    # a tool's own annotations win field by field; what it leaves unsaid comes from the registry
    assert delete.annotations == ToolAnnotations(read_only=False, destructive=True, open_world=True)
    with pytest.raises(TypeError, match="annotations must be a ToolAnnotations"):
        tool(annotations={"destructive": True})  # type: ignore[arg-type]


def test_the_return_annotation_gives_the_output_schema_as_an_object() -> None:
    from pydantic import BaseModel

    from llm_worker import MediaPart, ToolReturn

    class Weather(BaseModel):
        city: str
        celsius: float

    @tool_registry
    class Outputs:
        @tool
        def weather(self) -> Weather:
            """Weather."""
            return Weather(city="Oslo", celsius=3)

        @tool
        def numbers(self) -> list[int]:
            """Numbers."""
            return [1]

        @tool
        def text(self) -> str:
            """Text."""
            return ""

        @tool
        def nothing(self):  # type: ignore[no-untyped-def]
            """No annotation."""

        @tool
        def rich(self) -> ToolReturn:
            """Rich."""
            return ToolReturn("x")

        @tool
        def image(self) -> list[MediaPart]:
            """Images."""
            return []

        @tool
        def unresolvable(self) -> "NotDefinedAnywhere":  # type: ignore[name-defined]  # noqa: F821
            """Its return annotation names nothing."""

    metas = {meta.name: meta for meta in tool_metas(Outputs)}
    weather = metas["weather"].output_schema
    assert weather is not None
    assert weather["type"] == "object"
    assert weather["properties"] == {
        "city": {"title": "City", "type": "string"},
        "celsius": {"title": "Celsius", "type": "number"},
    }
    # a non-object result is wrapped, and the schema says so
    assert metas["numbers"].output_schema == {
        "type": "object",
        "properties": {"result": {"type": "array", "items": {"type": "integer"}}},
        "required": ["result"],
        "x-llm-worker-wrapped": True,
    }
    for name in ("text", "nothing", "rich", "image", "unresolvable"):
        assert metas[name].output_schema is None, name


class PlainTypedDict(typing.TypedDict):
    x: int


class ExtensionsTypedDict(typing_extensions.TypedDict):
    x: int


def test_a_typed_dict_result_is_described_or_said_not_to_be() -> None:
    """typing_extensions.TypedDict gives an output schema everywhere; typing.TypedDict, which
    pydantic describes on Python 3.12+ only, warns where it gets none."""

    @tool_registry
    class Dicts:
        @tool
        def plain(self) -> PlainTypedDict:
            """Plain."""
            return {"x": 1}

        @tool
        def extended(self) -> ExtensionsTypedDict:
            """Extended."""
            return {"x": 1}

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        metas = {meta.name: meta for meta in tool_metas(Dicts)}
        schemas = {name: meta.output_schema for name, meta in metas.items()}
    assert schemas["extended"] is not None
    assert schemas["extended"]["properties"] == {"x": {"title": "X", "type": "integer"}}
    messages = [str(warning.message) for warning in caught]
    if sys.version_info >= (3, 12):
        assert schemas["plain"] == schemas["extended"] | {"title": "PlainTypedDict"}
        assert messages == []
    else:
        assert schemas["plain"] is None
        assert messages == [
            f"{Dicts.__qualname__}.plain returns PlainTypedDict, a typing.TypedDict, which "
            "pydantic describes on Python 3.12+ only: it has no output schema here "
            "(use typing_extensions.TypedDict)"
        ]


# -- review fixes: null for a default, wrapped async methods, unfinished results, hidden tools --


class Options(BaseModel):
    n: int = 1


@tool_registry
class Defaults:
    """Defaults the strict JSON-mode validation of their own type would refuse."""

    @tool
    def path(self, p: pathlib.Path = pathlib.Path("/tmp")) -> str:
        return repr(p)

    @tool
    def sequence(self, s: Sequence[str] = ()) -> str:
        return repr(s)

    @tool
    def a_set(self, s: set[str] = frozenset()) -> str:  # type: ignore[assignment]
        return repr(s)

    @tool
    def below_minimum(self, n: Annotated[int, Field(ge=1)] = 0) -> str:
        return repr(n)

    @tool
    def model(self, o: Options = Options(n=2)) -> str:  # noqa: B008
        return repr(o)

    @tool
    def day(self, d: datetime.date = datetime.date(2024, 1, 1)) -> str:
        return repr(d)

    @tool
    def day_or_none(self, d: datetime.date = None) -> str:  # type: ignore[assignment]  # noqa: RUF013
        return repr(d)

    @tool
    def factory(self, days: list[datetime.date] = Field(default_factory=list)) -> str:  # noqa: B008
        return repr(days)


async def _call(registry: type, name: str, input_json: str) -> str | object:
    tool_class = getattr(registry, f"Tool{''.join(p.capitalize() for p in name.split('_'))}")
    with anyio.fail_after(10):
        return await tool_class(registry()).execute(input_json)


class TestNullForADefault:
    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("name", "argument", "expected"),
        [
            ("path", "p", "PosixPath('/tmp')"),
            ("sequence", "s", "()"),
            ("a_set", "s", "frozenset()"),
            ("below_minimum", "n", "0"),
            ("model", "o", "Options(n=2)"),
            ("day", "d", "datetime.date(2024, 1, 1)"),
            ("day_or_none", "d", "None"),
            ("factory", "days", "[]"),
        ],
    )
    async def test_null_gives_the_default_unvalidated(self, name, argument, expected):
        """Like an omitted argument: the default as written, not validated again."""
        assert await _call(Defaults, name, f'{{"{argument}": null}}') == expected
        assert await _call(Defaults, name, "{}") == expected

    @pytest.mark.anyio
    @pytest.mark.parametrize("name", ["day", "day_or_none"])
    async def test_a_value_is_still_validated_from_its_json(self, name):
        """What is not null is validated as JSON: a date's string is a date."""
        assert await _call(Defaults, name, '{"d": "2024-02-03"}') == "datetime.date(2024, 2, 3)"
        with pytest.raises(InvalidArgumentError, match=r"'d': Input should be a valid date"):
            await _call(Defaults, name, '{"d": 3}')

    @pytest.mark.anyio
    async def test_a_factorys_values_are_validated_from_their_json(self):
        assert await _call(Defaults, "factory", '{"days": ["2024-02-03"]}') == (
            "[datetime.date(2024, 2, 3)]"
        )

    @pytest.mark.anyio
    async def test_the_default_is_a_fresh_copy_each_time(self):
        app = Defaults()
        first = await Defaults.ToolModel(app).execute('{"o": null}')
        assert first == await Defaults.ToolModel(app).execute('{"o": null}') == "Options(n=2)"

    def test_the_schema_shows_the_type_not_null(self):
        """Null stays out of the schema, as for any default."""
        properties = {
            name: prop
            for meta in tool_metas(Defaults)
            for name, prop in meta.input_schema["properties"].items()
            if meta.name in ("path", "below_minimum", "day_or_none", "factory")
        }
        assert properties == {
            "p": {"default": "/tmp", "format": "path", "type": "string"},
            "n": {"default": 0, "minimum": 1, "type": "integer"},
            "d": {"default": None, "format": "date", "type": "string"},
            "days": {"items": {"format": "date", "type": "string"}, "type": "array"},
        }


def _logged(func: Callable[..., Any]) -> Callable[..., Any]:
    """A decorator as many are written: a plain def passing on what the function returns."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    return wrapper


async def _helper() -> str:
    return "never"


class _Endless(Iterator[int]):
    """As itertools.count(), but it gives up after a while: were it read, the test fails
    instead of hanging (no timeout interrupts pydantic reading it on the event loop)."""

    def __init__(self) -> None:
        self.n = 0

    def __next__(self) -> int:
        self.n += 1
        if self.n > 10_000:
            raise RuntimeError("read to the end of an endless iterator")
        return self.n


class TestWrappedAndUnfinished:
    @pytest.mark.anyio
    async def test_a_plain_wrapper_of_an_async_def_is_awaited(self):
        """functools.wraps over an async def: the tool awaits it, on the loop."""

        @tool_registry
        class Notes:
            def __init__(self) -> None:
                self.saved: list[str] = []

            @tool
            @_logged
            async def save(self, note: str) -> str:
                self.saved.append(note)
                return f"saved on {threading.get_ident()}"

        app = Notes()
        with anyio.fail_after(10):
            result = await Notes.ToolSave(app).execute('{"note": "hi"}')
        assert result == f"saved on {threading.get_ident()}"
        assert app.saved == ["hi"]

    @pytest.mark.anyio
    @pytest.mark.parametrize("thread", [True, False, "dedicated"])
    async def test_a_coroutine_result_is_an_error_and_never_awaited(self, thread):
        """A plain def returning a coroutine: closed (no "never awaited" warning), and the
        model is told what to fix, not the coroutine's repr."""

        @tool_registry
        class App:
            @tool(thread=thread)
            def save(self) -> object:
                return _helper()

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                await _call(App, "save", "")
            except InternalToolError as exc:
                message = str(exc)
            else:
                pytest.fail("no error")
            gc.collect()  # the coroutine, were it not closed, would now say "never awaited"
        assert message == (
            "Internal error: tool 'save' returned a coroutine instead of its result: its method "
            "is a plain def that does not await what it calls; declare it async def"
        )
        assert [str(w.message) for w in caught] == []

    @pytest.mark.anyio
    @pytest.mark.parametrize("thread", [True, False])
    @pytest.mark.parametrize(
        ("make", "kind"),
        [
            (_Endless, "_Endless"),
            (lambda: (i for i in _Endless()), "generator"),
            (lambda: map(str, _Endless()), "map"),
        ],
    )
    async def test_an_iterator_result_is_refused_before_it_is_read(self, thread, make, kind):
        """An endless one would hang the call; timeouts cannot stop pydantic reading it."""

        @tool_registry
        class Feed:
            @tool(thread=thread)
            def items(self) -> object:
                return make()

            @tool(timeout=5)
            async def items_async(self) -> object:
                return make()

        for name in ("items", "items_async"):
            with pytest.raises(InternalToolError) as excinfo:
                await _call(Feed, name, "")
            assert str(excinfo.value) == (
                f"Internal error: tool '{name}' returned an iterator ({kind}), not a result; "
                f"return a list"
            )

    @pytest.mark.anyio
    async def test_an_async_iterator_result_is_refused(self):
        async def numbers() -> AsyncIterator[int]:
            yield 1

        @tool_registry
        class Feed:
            @tool
            async def items(self) -> object:
                return numbers()

        with pytest.raises(InternalToolError, match=r"returned an iterator \(async_generator\)"):
            await _call(Feed, "items", "")

    @pytest.mark.anyio
    async def test_a_wrapped_generator_is_what_its_wrapper_returns(self):
        """A wrapper that passes a generator on gives an iterator (refused when it comes);
        one that makes a list of it is an ordinary tool (it was refused at declaration)."""

        def listify(func: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(func)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                return list(func(*args, **kwargs))

            return wrapper

        @tool_registry
        class App:
            @tool
            @_logged
            def gen(self) -> object:
                """Gen."""
                yield 1

            @tool
            @listify
            def numbers(self) -> object:
                """Numbers."""
                yield from range(3)

        with pytest.raises(InternalToolError, match=r"returned an iterator \(generator\)"):
            await _call(App, "gen", "")
        assert await _call(App, "numbers", "") == "[0,1,2]"

    @pytest.mark.anyio
    @pytest.mark.parametrize("thread", [True, "dedicated"])
    async def test_a_wrapper_that_runs_the_coroutine_itself_works(self, thread):
        """A plain-def wrapper of an async def that runs it (asyncio.run in its thread, as
        asgiref's async_to_sync does) is a plain-def tool (it was called on the loop, where
        asyncio.run() cannot run)."""
        import asyncio

        def syncify(func: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(func)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                return asyncio.run(func(*args, **kwargs))

            return wrapper

        @tool_registry
        class App:
            @tool(thread=thread)
            @syncify
            async def ping(self) -> str:
                """Ping."""
                return "pong"

        assert await _call(App, "ping", "") == "pong"

    def test_a_field_default_under_a_wrapper_is_filled_in_for_a_direct_call(self):
        """Introspection reads the wrapped function; so does the direct call's default."""

        @tool_registry
        class Catalog:
            @tool
            @_logged
            def search(self, query: str, limit: int = Field(5, ge=1)) -> str:
                return f"{query} {limit!r}"

        assert Catalog().search("q") == "q 5"
        assert Catalog().search("q", limit=2) == "q 2"


class FileTools:
    """A mixin no @tool_registry built."""

    @tool
    def read_file(self, path: str) -> str:
        return "contents"


class TestHiddenAndDroppedTools:
    def test_a_mixins_tools_are_refused_not_dropped(self):
        class App(FileTools):
            @tool
            def search(self, q: str) -> str:
                return q

        with pytest.raises(TypeError) as excinfo:
            tool_registry(App)
        assert str(excinfo.value) == _declaration_error(
            App,
            "read_file: FileTools.read_file is marked @tool, but FileTools is not a "
            "@tool_registry class, so it would not be a tool; decorate FileTools with "
            "@tool_registry too (its tools are then inherited)",
        )

    def test_an_override_of_the_mixins_method_is_no_problem(self):
        @tool_registry
        class App(FileTools):
            @tool
            def read_file(self, path: str) -> str:
                return "mine"

        assert [meta.name for meta in tool_metas(App)] == ["read_file"]

    def test_an_undecorated_subclass_with_tools_of_its_own_is_refused_when_asked(self):
        @tool_registry
        class Base:
            @tool
            def ping(self) -> str:
                return "pong"

        class Mid(Base):
            @tool
            def extra(self) -> str:
                return ""

        problem = r"Mid\.extra is marked @tool, but \S*Mid is not a @tool_registry class"
        with pytest.raises(TypeError, match=problem):
            tool_metas(Mid)
        with pytest.raises(TypeError, match=problem):
            tool_definitions(Mid())

    def test_a_decorator_or_property_above_tool_is_a_declaration_error(self):
        class App:
            @_logged
            @tool
            def search(self, q: str) -> str:
                return q

            @property
            @tool
            def status(self) -> str:
                return "ok"

            @staticmethod
            @_logged
            @tool
            def hidden_static(self) -> str:
                return ""

            @tool
            def ping(self) -> str:
                return "pong"

        with pytest.raises(TypeError) as excinfo:
            tool_registry(App)
        assert str(excinfo.value) == _declaration_error(
            App,
            "search: a decorator applied above @tool (it gave a function) hides the @tool "
            "method, so it would not be a tool; put @tool outermost, above the other decorators",
            "status: @property hides the @tool method under it, so it would not be a tool; "
            "a tool is a method the model calls (remove @property)",
            "hidden_static: a decorator applied above @tool (it gave a staticmethod) hides the "
            "@tool method, so it would not be a tool; put @tool outermost, above the other "
            "decorators",
        )

    def test_a_staticmethod_tool_is_reported_with_the_other_problems(self):
        class App:
            @tool
            def a(self, x) -> str:  # type: ignore[no-untyped-def]
                return ""

            @staticmethod
            @tool
            def h(x: int) -> str:
                return ""

        with pytest.raises(TypeError) as excinfo:
            tool_registry(App)
        assert str(excinfo.value) == _declaration_error(
            App,
            "h: a tool cannot be a staticmethod; a tool is an instance method (remove "
            "@staticmethod and take self)",
            "a: parameter 'x' has no type annotation (add one, e.g. x: str)",
        )


@pytest.mark.parametrize("thread", [1, 0, "yes"])
def test_thread_takes_true_false_or_dedicated_only(thread):
    """1 == True, but a tool runs in a worker thread by `thread is True`."""
    message = f"thread must be True, False or 'dedicated', not {thread!r}"
    with pytest.raises(ValueError, match=re.escape(message)):
        tool(thread=thread)
    with pytest.raises(ValueError, match=re.escape(message)):
        tool_registry(thread=thread)
