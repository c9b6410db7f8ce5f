"""Declarations at the edges of ``@tool_registry``: a decorator above it that replaces the
class, an indirect call (a helper, a base's ``__init_subclass__``), generated names an
inherited tool already has, a schema holding a number JSON cannot write."""

from __future__ import annotations

import dataclasses
import json
import math
import pickle
from typing import Annotated, Any

import anyio
import attrs
import jsonschema
import pytest
from pydantic import BaseModel, ConfigDict, Field, with_config
from typing_extensions import NotRequired, TypedDict

from llm_worker import (
    InvalidArgumentError,
    is_tool_registry,
    tool,
    tool_definitions,
    tool_metas,
    tool_registry,
)

pytestmark = pytest.mark.anyio


def _declaration_error(cls: type, *problems: str) -> str:
    lines = "\n".join(f"  {problem}" for problem in problems)
    return f"Cannot build tools for {cls.__module__}.{cls.__qualname__}:\n{lines}"


# -- a decorator above @tool_registry that makes a new class --------------------------


class Greeter:
    async def greet(self, who: str) -> str:
        return f"hello {who}"


@attrs.define  # slotted by default: a new class, built from a copy of the namespace
@tool_registry
class AttrsFiles(Greeter):
    root: str = "/"

    @tool
    async def read(self, path: str) -> str:
        """Read a file."""
        return self.root + path

    @tool
    async def greet(self, who: str) -> str:
        """Greet, through the base's method (no-argument super())."""
        return await super().greet(who) + "!"


@tool_registry
class MoreAttrsFiles(AttrsFiles):
    @tool
    async def read(self, path: str) -> str:
        """Read, differently."""
        return "more " + path


class AllAttrsFiles(MoreAttrsFiles, AttrsFiles):
    """A diamond: neither decorated nor with tools of its own."""


@dataclasses.dataclass(slots=True)
@tool_registry
class SlotsCounter:
    n: int = 1

    @tool
    async def add(self, x: int) -> int:
        """Add n."""
        return x + self.n


class AutoRegistry:
    """Registers every subclass, as a framework's base class may."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        tool_registry(cls)


@dataclasses.dataclass(slots=True)  # its new class is registered again by __init_subclass__
class AutoSlots(AutoRegistry):
    n: int = 1

    @tool
    async def add(self, x: int) -> int:
        """Add n."""
        return x + self.n


def _renamed_copy(cls: type) -> type:
    """A decorator returning a copy of the class under another name."""
    namespace = {k: v for k, v in vars(cls).items() if k not in ("__dict__", "__weakref__")}
    return type(f"{cls.__name__}Copy", cls.__bases__, namespace)


class TestReplacedClass:
    @pytest.mark.parametrize("cls", [AttrsFiles, SlotsCounter, AutoSlots])
    def test_the_tools_belong_to_the_class_the_decorator_returned(self, cls: type) -> None:
        """Before, each record still named the class @tool_registry saw, one no name reaches."""
        assert all(record.owner is cls for record in cls.__llm_worker_tools__)

    @pytest.mark.parametrize("cls", [AttrsFiles, SlotsCounter, AutoSlots])
    def test_tool_methods_and_definitions_pickle(self, cls: type) -> None:
        """Before: "Can't pickle <class AttrsFiles>: it's not the same object as ..."."""
        method = next(iter(tool_definitions(cls()))).name
        assert pickle.loads(pickle.dumps(getattr(cls, method))) is getattr(cls, method)
        definition = getattr(cls(), method).definition()
        copied = pickle.loads(pickle.dumps(definition))
        assert copied.name == definition.name
        assert copied()[0] is definition()[0]  # the same record, so the same meta

    def test_a_subclass_and_a_diamond_see_the_overrides(self) -> None:
        """Before: is_tool_registry and tool_metas raised a bare KeyError(AttrsFiles)."""
        for cls in (MoreAttrsFiles, AllAttrsFiles):
            assert is_tool_registry(cls)
            assert [m.description for m in tool_metas(cls)] == [
                "Read, differently.",
                "Greet, through the base's method (no-argument super()).",
            ]

    async def test_a_tool_calling_super_runs_in_the_new_class(self) -> None:
        """attrs points the method's __class__ cell at its new class: it reads the tool's
        __closure__, as a function's. Before, super() failed: the cell held the old class."""
        with anyio.fail_after(10):
            result = await AttrsFiles.ToolGreet(AttrsFiles()).execute('{"who": "ada"}')
        assert result == "hello ada!"

    async def test_init_subclass_registration_is_not_repeated_for_the_copy(self) -> None:
        """Before: "AutoSlots is already a @tool_registry class", at the class statement."""
        assert [m.name for m in tool_metas(AutoSlots)] == ["add"]
        with anyio.fail_after(10):
            assert await AutoSlots.ToolAdd(AutoSlots(2)).execute('{"x": 1}') == "3"

    def test_decorating_the_copy_again_leaves_it_as_it_is(self) -> None:
        """The copy is built already (a base's __init_subclass__ cannot help seeing it
        again): a further @tool_registry keeps its tools, as they are."""
        before = SlotsCounter.__llm_worker_tools__
        assert tool_registry(SlotsCounter) is SlotsCounter
        assert SlotsCounter.__llm_worker_tools__ is before

    def test_a_copy_under_another_name_gives_a_clear_error(self) -> None:
        """A copy that is not the same class (another name) keeps its tools' owner; a
        subclass's lookup names the cause instead of raising KeyError."""

        @_renamed_copy
        @tool_registry
        class Tools:
            @tool
            async def ping(self) -> str:
                """Ping."""
                return "pong"

        class Sub(Tools):
            pass

        with pytest.raises(TypeError) as excinfo:
            is_tool_registry(Sub)
        original = Tools.__llm_worker_tools__[0].owner
        assert str(excinfo.value) == (
            f"{Sub.__module__}.{Sub.__qualname__}: its base {Tools.__module__}."
            f"{Tools.__qualname__} holds the tools built for {original.__module__}."
            f"{original.__qualname__}, a class a decorator applied above @tool_registry "
            f"replaced; put @tool_registry outermost, above the decorator that makes a new class"
        )


# -- the names annotations see when @tool_registry is called indirectly ------------------


class Item(BaseModel):
    sku: str


def registry(cls: type) -> type:
    """A helper decorator whose own local shadows the module's (and a test's) ``Item``."""
    Item = int  # noqa: F841  (the helper's own name, unrelated to the user's)
    return tool_registry(cls)


@registry
class Shop:
    @tool
    async def buy(self, item: Item) -> str:
        """Buy."""
        return item.sku


class Outer:
    class Part(BaseModel):
        name: str

    @tool_registry
    class Inner:
        @tool
        async def fit(self, part: Part) -> str:  # noqa: F821 (Outer's body, as pydantic looks)
            """Fit a part."""
            return part.name


def _item_schema(meta_schema: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = meta_schema["properties"]["item"]
    return schema


class TestIndirectRegistration:
    def test_a_helper_decorators_locals_do_not_hide_module_names(self) -> None:
        """Before: the helper's ``Item = int`` made the argument an integer."""
        schema = Shop.buy.meta().input_schema
        assert _item_schema(schema) == {"$ref": "#/$defs/Item"}
        assert set(schema["$defs"]) == {"Item"}

    def test_a_helper_decorators_locals_do_not_hide_the_functions(self) -> None:
        class Item(BaseModel):
            code: int

        @registry
        class App:
            @tool
            async def buy(self, item: Item) -> str:
                """Buy."""
                return str(item.code)

        schema = App.buy.meta().input_schema
        assert schema["$defs"]["Item"]["properties"] == {"code": {"type": "integer"}}

    async def test_init_subclass_sees_the_defining_functions_names(self) -> None:
        """Before: "cannot resolve the annotation of parameter 'q' (NameError: name
        'Query' is not defined)", at the class statement."""

        class Query(BaseModel):
            text: str

        class App(AutoRegistry):
            @tool
            async def search(self, q: Query) -> str:
                """Search."""
                return q.text

        assert App.search.meta().input_schema["properties"]["q"] == {"$ref": "#/$defs/Query"}
        with anyio.fail_after(10):
            assert await App.ToolSearch(App()).execute('{"q": {"text": "cats"}}') == "cats"

    @pytest.mark.parametrize("given", [5, len])
    def test_a_non_class_is_still_refused_first(self, given: Any) -> None:
        """Looking for the defining scope reads the class's __qualname__: not before the
        check that it is a class."""
        with pytest.raises(TypeError, match=r"^@tool_registry decorates a class, not "):
            tool_registry(given)

    def test_a_class_in_a_class_body_still_sees_that_bodys_names(self) -> None:
        """Decorated in the enclosing class's body, as before: its names come first."""
        fields = Outer.Inner.fit.meta().input_schema["$defs"]["Part"]["properties"]
        assert fields == {"name": {"type": "string"}}


# -- generated names an inherited tool already has -------------------------------------


@tool_registry
class UserBase:
    @tool
    async def get_user(self, x: int) -> str:
        """One."""
        return "base"


class TestInheritedGeneratedNames:
    def test_a_new_tool_may_not_hide_an_inherited_tools_generated_names(self) -> None:
        """Before: Sub.GetUserArgs and Sub.ToolGetUser became getUser's, so
        Sub.ToolGetUser(app) ran getUser for the inherited get_user's ToolGetUser."""
        with pytest.raises(TypeError) as excinfo:

            @tool_registry
            class Sub(UserBase):
                @tool
                async def getUser(self, x: str) -> str:
                    """Two."""
                    return "sub"

        problem = (
            "getUser: generated name {!r} is also generated for the inherited tool "
            "UserBase.get_user, which it would hide (rename the method)"
        )
        heading, *problems = str(excinfo.value).split("\n")
        assert heading.startswith("Cannot build tools for ")
        assert heading.endswith(".<locals>.Sub:")
        assert problems == [f"  {problem.format(name)}" for name in ("GetUserArgs", "ToolGetUser")]
        assert UserBase.ToolGetUser.tool_name == "get_user"  # the base is untouched

    def test_an_override_regenerates_its_names(self) -> None:
        @tool_registry
        class Sub(UserBase):
            @tool
            async def get_user(self, x: int) -> str:
                """Overridden."""
                return "sub"

        assert Sub.GetUserArgs is not UserBase.GetUserArgs
        assert [m.description for m in tool_metas(Sub)] == ["Overridden."]


# -- a number JSON cannot write ----------------------------------------------------------


class Measure(BaseModel):
    value: float = math.inf


class TestNonFiniteSchema:
    def test_a_non_finite_default_names_the_tool_on_first_use(self) -> None:
        """Decorating stays cheap (the schema is made on first use); then the error
        names the class, the tool and the place. Before: "ToolMeta input_schema must be
        JSON-serialisable: Out of range float values are not JSON compliant"."""

        @tool_registry
        class T:
            @tool
            async def f(self, x: float = math.inf) -> str:
                """F."""
                return ""

        with pytest.raises(TypeError) as excinfo:
            tool_metas(T)
        assert str(excinfo.value) == _declaration_error(
            T,
            "f: the JSON Schema of its arguments holds inf at /properties/x/default, which "
            "JSON cannot represent (a default of math.inf or float('nan'), say); use a "
            "finite number or leave it out",
        )

    def test_a_nan_default_and_a_result_model_are_named_too(self) -> None:
        @tool_registry
        class T:
            @tool
            async def f(self, y: float = math.nan) -> str:
                """F."""
                return ""

            @tool
            async def g(self) -> Measure:
                """G."""
                return Measure()

        with pytest.raises(TypeError, match=r"f: .* arguments holds nan at /properties/y/default"):
            T.f.meta()
        with pytest.raises(TypeError, match=r"g: .* result holds inf at /properties/value/default"):
            T.g.meta()

    def test_a_finite_schema_is_unchanged(self) -> None:
        @tool_registry
        class T:
            @tool
            async def f(self, x: Annotated[float, Field(le=1e300)] = 1.0) -> str:
                """F."""
                return ""

        assert json.dumps(T.f.meta().input_schema["properties"]["x"]) == (
            '{"default": 1.0, "maximum": 1e+300, "type": "number"}'
        )


# -- a TypedDict or dataclass as an argument and inside a model ------------------------


class Movie(TypedDict):
    """A film."""

    title: str
    year: NotRequired[int]


@dataclasses.dataclass(frozen=True)
class Spot:
    x: int
    y: int = 0


class Shelf(BaseModel):  # pydantic's default: unknown keys are ignored, here and inside
    favourite: Movie | None = None
    spot: Spot | None = None


class Library(BaseModel):  # Movie twice: pydantic makes it one definition of this model
    favourite: Movie | None = None
    others: list[Movie] = []


class ClosedShelf(BaseModel):
    model_config = ConfigDict(extra="forbid")
    favourite: Movie | None = None


@with_config(ConfigDict(extra="forbid"))
class OwnMovie(TypedDict):
    title: str


@tool_registry
class Cinema:
    @tool
    async def shelf_first(self, shelf: Shelf, movies: list[Movie], spots: list[Spot]) -> str:
        """The model first."""
        return repr((shelf, movies, spots))

    @tool
    async def shelf_last(self, movies: list[Movie], spots: list[Spot], shelf: Shelf) -> str:
        """The model last."""
        return repr((shelf, movies, spots))

    @tool
    async def twice(self, one: Movie, movies: list[Movie], library: Library) -> str:
        """The TypedDict twice as an argument and twice in a model."""
        return repr((one, movies, library))

    @tool
    async def alone(self, movie: Movie, spot: Spot) -> str:
        """As arguments only."""
        return repr((movie, type(spot).__qualname__, spot == Spot(1)))

    @tool
    async def closed_too(self, movie: Movie, shelf: ClosedShelf) -> str:
        """Inside a model that refuses unknown keys too."""
        return repr((movie, shelf))

    @tool
    async def own(self, movie: OwnMovie) -> str:
        """A TypedDict with a config of its own."""
        return repr(movie)


EXTRA_IN_THE_MODEL = {"shelf": {"favourite": {"title": "a", "extra": 1}, "spot": {"x": 1, "z": 2}}}
EXTRA_IN_THE_ARGUMENTS = [
    {"movies": [{"title": "a", "extra": 1}]},
    {"spots": [{"x": 1, "z": 2}]},
]


def _arguments(**given: Any) -> dict[str, Any]:
    return {"shelf": {}, "movies": [], "spots": [], **given}


class TestTypedDictsAndDataclassesByPlace:
    def test_the_schema_does_not_depend_on_the_order_of_the_parameters(self) -> None:
        """A class used as an argument and inside a model: the same $defs either way."""
        first = Cinema.shelf_first.meta().input_schema
        last = Cinema.shelf_last.meta().input_schema
        assert first["$defs"] == last["$defs"]
        assert json.dumps(first["properties"], sort_keys=True) == json.dumps(
            last["properties"], sort_keys=True
        )

    @pytest.mark.parametrize("name", ["shelf_first", "shelf_last"])
    async def test_unknown_keys_inside_the_model_are_ignored_by_both(self, name: str) -> None:
        """Inside the model the class follows the model: unknown keys are dropped, and its
        schema admits them. Before, one of the two orders had a schema refusing them."""
        tool_class = vars(Cinema)[f"Tool{name.title().replace('_', '')}"]
        schema = getattr(Cinema, name).meta().input_schema
        arguments = _arguments(**EXTRA_IN_THE_MODEL)
        assert jsonschema.Draft202012Validator(schema).is_valid(arguments)
        with anyio.fail_after(10):
            result = await tool_class(Cinema()).execute(json.dumps(arguments))
        assert result == repr(
            (Shelf(favourite={"title": "a"}, spot=Spot(1)), [], [])  # type: ignore[typeddict-item]
        )

    @pytest.mark.parametrize("name", ["shelf_first", "shelf_last"])
    @pytest.mark.parametrize("extra", EXTRA_IN_THE_ARGUMENTS, ids=["typed-dict", "dataclass"])
    async def test_unknown_keys_in_an_argument_are_refused_by_both(
        self, name: str, extra: dict[str, Any]
    ) -> None:
        """As an argument the class is closed like the arguments, and its schema says so.
        Before, one of the two orders had a schema admitting the key the tool refused."""
        tool_class = vars(Cinema)[f"Tool{name.title().replace('_', '')}"]
        schema = getattr(Cinema, name).meta().input_schema
        arguments = _arguments(**extra)
        assert not jsonschema.Draft202012Validator(schema).is_valid(arguments)
        with (
            anyio.fail_after(10),
            pytest.raises(InvalidArgumentError, match=r"unexpected|Unexpected"),
        ):
            await tool_class(Cinema()).execute(json.dumps(arguments))

    async def test_two_uses_as_arguments_stay_closed(self) -> None:
        """Twice as an argument and twice in a model: the arguments still refuse unknown keys
        (pydantic once validated them all as the model's, ignoring them)."""
        tool = Cinema.ToolTwice(Cinema())
        schema = Cinema.twice.meta().input_schema
        for arguments in (
            {"one": {"title": "a", "extra": 1}, "movies": [], "library": {}},
            {"one": {"title": "a"}, "movies": [{"title": "b", "extra": 1}], "library": {}},
        ):
            assert not jsonschema.Draft202012Validator(schema).is_valid(arguments)
            with anyio.fail_after(10), pytest.raises(InvalidArgumentError, match="unexpected"):
                await tool.execute(json.dumps(arguments))

    def test_each_use_gets_its_own_definition_named_by_module(self) -> None:
        """Two definitions that say different things get pydantic's module-qualified names."""
        module = __name__.replace(".", "__")
        defs = Cinema.shelf_first.meta().input_schema["$defs"]
        assert sorted(defs) == sorted(
            [
                "Shelf",
                f"{module}__Movie",
                f"{module}__closed__Movie",
                f"{module}__Spot",
                f"{module}__closed__Spot",
            ]
        )
        assert defs[f"{module}__closed__Movie"] == {
            **defs[f"{module}__Movie"],
            "additionalProperties": False,
        }

    async def test_as_arguments_only_the_schema_is_as_before(self) -> None:
        """Only as arguments: one plain definition each, closed; the method gets the
        dataclass it declared (equal to one it makes)."""
        schema = Cinema.alone.meta().input_schema
        assert schema["$defs"] == {
            "Movie": {
                "additionalProperties": False,
                "description": "A film.",
                "properties": {"title": {"type": "string"}, "year": {"type": "integer"}},
                "required": ["title"],
                "title": "Movie",
                "type": "object",
            },
            "Spot": {
                "additionalProperties": False,
                "properties": {"x": {"type": "integer"}, "y": {"default": 0, "type": "integer"}},
                "required": ["x"],
                "title": "Spot",
                "type": "object",
            },
        }
        with anyio.fail_after(10):
            result = await Cinema.ToolAlone(Cinema()).execute(
                '{"movie": {"title": "a"}, "spot": {"x": 1}}'
            )
        assert result == "({'title': 'a'}, 'Spot', True)"

    def test_a_model_that_refuses_unknown_keys_shares_the_definition(self) -> None:
        """When the two uses say the same, they share one definition, by its own name."""
        defs = Cinema.closed_too.meta().input_schema["$defs"]
        assert sorted(defs) == ["ClosedShelf", "Movie"]
        assert defs["Movie"]["additionalProperties"] is False

    async def test_a_class_with_its_own_config_is_left_as_it_is(self) -> None:
        """with_config(...) decides for itself, as an argument too."""
        schema = Cinema.own.meta().input_schema
        assert sorted(schema["$defs"]) == ["OwnMovie"]
        with anyio.fail_after(10), pytest.raises(InvalidArgumentError, match="unexpected"):
            await Cinema.ToolOwn(Cinema()).execute('{"movie": {"title": "a", "x": 1}}')
