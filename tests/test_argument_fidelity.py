"""Arguments as they were written (``_codegen/fields.py``, ``closed_classes.py``, ``aliases.py``).

What the annotation is rewritten into to read JSON as the schema says stays
out of sight: ``Args`` takes and gives your dataclasses; a type alias is
rewritten as what it names; a TypedDict or dataclass closed as an argument has
a ``$defs`` entry of its own whatever the order of the parameters, the classes
in its fields and its parametrizations included; a union member's errors name
the member, not the validators that read it.
"""

from __future__ import annotations

import abc
import copy
import dataclasses
import enum
import json
from typing import Any, Generic, Literal, NewType, TypeVar, Union

import anyio
import jsonschema
import pytest
from pydantic import BaseModel, ConfigDict, ValidationError, with_config
from typing_extensions import TypeAliasType, TypedDict

from llm_worker import InvalidArgumentError, tool, tool_registry

pytestmark = pytest.mark.anyio

T = TypeVar("T")


async def _call(registry: type, name: str, arguments: dict[str, Any] | str) -> str:
    tool_class = vars(registry)["Tool" + name.title().replace("_", "")]
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    with anyio.fail_after(10):
        return str(await tool_class(registry()).execute(text))


async def _refusal(registry: type, name: str, arguments: dict[str, Any]) -> str:
    with pytest.raises(InvalidArgumentError) as caught:
        await _call(registry, name, arguments)
    return caught.value.message


def _schema_admits(registry: type, name: str, arguments: dict[str, Any]) -> bool:
    schema = getattr(registry, name).meta().input_schema
    return jsonschema.Draft202012Validator(schema).is_valid(arguments)


# -- Args takes and gives your classes ----------------------------------------------------

SEEN_IN_POST_INIT: list[str] = []


@dataclasses.dataclass
class Film:
    title: str

    def __post_init__(self) -> None:
        SEEN_IN_POST_INIT.append(f"{type(self).__qualname__}: {self!r}")


class Review(TypedDict):
    stars: int


@tool_registry
class Films:
    @tool
    async def rate(self, film: Film, review: Review, stars: int = 3) -> str:
        """Rate a film."""
        return f"{type(film).__qualname__} {film.title}: {stars}"

    @tool
    async def either(self, thing: Union[Film, int], other: Union[Review, str] = "") -> str:  # noqa: UP007
        """A film or a number."""
        return repr(thing)


class TestArgsTakesYourClasses:
    def test_args_takes_an_instance_of_your_dataclass(self) -> None:
        """Args(film=Film(...)) is accepted, as before the closed copies (it was refused:
        "Input should be an instance of Film")."""
        args_model = Films.rate.args_model
        film = Film("Heat")
        args = args_model(film=film, review={"stars": 5})
        assert args.film is film  # type: ignore[attr-defined]
        again = args_model.model_validate(dict(args))
        assert type(again.film) is Film  # type: ignore[attr-defined]

    def test_the_fields_are_annotated_with_your_classes(self) -> None:
        """model_fields shows Film and Review, not the copies pydantic validates them as."""
        fields = Films.rate.args_model.model_fields
        assert fields["film"].annotation is Film
        assert fields["review"].annotation is Review

    async def test_post_init_and_the_method_see_your_class(self) -> None:
        """From JSON the instance is made as a Film: __post_init__ and its repr say Film."""
        SEEN_IN_POST_INIT.clear()
        result = await _call(Films, "rate", {"film": {"title": "Heat"}, "review": {"stars": 5}})
        assert result == "Film Heat: 3"
        assert SEEN_IN_POST_INIT == ["Film: Film(title='Heat')"]

    async def test_errors_name_your_classes(self) -> None:
        """A model reads 'Film' and 'Review' where a union member fails, never a copy's name."""
        message = await _refusal(Films, "either", {"thing": {"title": "a", "x": 1}, "other": 5})
        assert message == (
            "'thing.Film.x': Unexpected keyword argument (got 1); "
            '\'thing.int\': Input should be a valid integer (got {"title": "a", "x": 1}); '
            "'other.Review': Input should be an object (got 5); "
            "'other.str': Input should be a valid string (got 5)"
        )
        assert "closed" not in message


# -- type aliases ---------------------------------------------------------------------------


class Tier(enum.IntEnum):
    LOW = 1
    HIGH = 2


Counts = TypeAliasType("Counts", dict[int, int])
CountsType = NewType("CountsType", dict[int, int])
Level = TypeAliasType("Level", Literal[1, 2])
TierAlias = TypeAliasType("TierAlias", Tier)
Pair = TypeAliasType("Pair", dict[T, T], type_params=(T,))
Prices = TypeAliasType("Prices", dict[float, int])


@tool_registry
class Aliased:
    @tool
    async def count(self, counts: Counts, typed: CountsType | None = None) -> str:
        """Counts."""
        return repr((counts, typed))

    @tool
    async def level(self, level: Level = 1, tier: TierAlias = Tier.LOW) -> str:
        """Levels."""
        return repr((level, tier))

    @tool
    async def pair(self, pair: Pair[int]) -> str:
        """A generic alias."""
        return repr(pair)


class TestTypeAliases:
    @pytest.mark.parametrize(
        ("name", "arguments", "message"),
        [
            (
                "count",
                {"counts": {"1": 5, "01": 7}},
                "'counts.01.[key]': String should match pattern '^(0|-?[1-9][0-9]*)$' (got \"01\")",
            ),
            (
                "count",
                {"counts": {}, "typed": {"1": 5, "+1": 7}},
                "'typed.+1.[key]': String should match pattern '^(0|-?[1-9][0-9]*)$' (got \"+1\")",
            ),
            ("level", {"level": True}, "'level': Input should be 1 or 2 (got true)"),
            ("level", {"tier": True}, "'tier': Input should be 1 or 2 (got true)"),
            (
                "pair",
                {"pair": {"1": 1, " 1": 2}},
                "'pair. 1.[key]': String should match pattern '^(0|-?[1-9][0-9]*)$' (got \" 1\")",
            ),
        ],
        ids=["type-alias-keys", "new-type-keys", "literal", "int-enum", "generic-alias"],
    )
    async def test_behind_an_alias_json_is_read_as_the_schema_says(
        self, name: str, arguments: dict[str, Any], message: str
    ) -> None:
        """TypeAliasType, NewType and a generic alias are read as what they name: "01" is no
        key 1 and true no 1 (before, the alias hid them: {"1": 5, "01": 7} became {1: 7})."""
        assert not _schema_admits(Aliased, name, arguments)
        assert await _refusal(Aliased, name, arguments) == message

    async def test_what_they_name_is_taken(self) -> None:
        assert await _call(Aliased, "count", {"counts": {"1": 5, "-2": 7}, "typed": None}) == (
            "({1: 5, -2: 7}, None)"
        )
        assert await _call(Aliased, "level", {"level": 2, "tier": 2}) == "(2, <Tier.HIGH: 2>)"
        assert await _call(Aliased, "pair", {"pair": {"3": 4}}) == "{3: 4}"

    def test_the_schema_keeps_the_aliases_definitions(self) -> None:
        """A TypeAliasType is still its own $defs entry, by its name; the field's annotation
        is still the alias."""
        schema = Aliased.count.meta().input_schema
        assert schema["$defs"]["Counts"] == {
            "additionalProperties": {"type": "integer"},
            "propertyNames": {"pattern": "^(0|-?[1-9][0-9]*)$"},
            "type": "object",
        }
        assert schema["properties"]["counts"] == {"$ref": "#/$defs/Counts"}
        level = Aliased.level.meta().input_schema
        assert level["$defs"]["Level"] == {"enum": [1, 2], "type": "integer"}
        assert Aliased.count.args_model.model_fields["counts"].annotation is Counts

    def test_keys_no_text_names_one_way_are_refused_behind_an_alias(self) -> None:
        """dict[float, int] behind an alias is the declaration error it is without one."""

        class Shop:
            async def price(self, prices: Prices) -> str:
                """Prices."""
                return ""

        Shop.price = tool(Shop.price)  # type: ignore[method-assign]
        with pytest.raises(TypeError) as caught:
            tool_registry(Shop)
        assert str(caught.value).splitlines()[1:] == [
            "  price: parameter 'prices': its dict keys are float, and a JSON object's keys "
            "are text that several spellings of one float would be read into, keeping one "
            "value and losing the others; use str keys (dict[str, ...]), or int, bool, "
            "Literal or Enum keys"
        ]


# -- one $defs entry per place, whatever the order ------------------------------------------


class Inner(TypedDict):
    a: int


class Outer(TypedDict):
    inner: Inner


class Box(TypedDict, Generic[T]):
    v: T


@dataclasses.dataclass
class Shape(abc.ABC):  # a dataclass whose metaclass is ABCMeta
    n: int


@dataclasses.dataclass
class Node:
    name: str
    children: list[Node] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Crate(Generic[T]):
    item: T


class Registering(type):
    pass


@dataclasses.dataclass
class Plugin(metaclass=Registering):
    n: int


@with_config(ConfigDict(extra="forbid"))
@dataclasses.dataclass
class OwnPlugin(metaclass=Registering):
    n: int


class Registry:
    def __init_subclass__(cls) -> None:
        pass


@dataclasses.dataclass
class Part(Registry):
    n: int


class Holder(TypedDict):
    parts: list[Part]


class Loose(BaseModel):
    model_config = ConfigDict(extra="allow")
    inner: Inner
    box: Box[int]
    shape: Shape
    node: Node
    crate: Crate[int]


@tool_registry
class Places:
    @tool
    async def first(
        self,
        outer: Outer,
        box: Box[int],
        shape: Shape,
        node: Node,
        crate: Crate[int],
        loose: Loose,
    ) -> str:
        """The arguments before the model."""
        return repr((outer, box, shape, node, crate))

    @tool
    async def last(
        self,
        loose: Loose,
        outer: Outer,
        box: Box[int],
        shape: Shape,
        node: Node,
        crate: Crate[int],
    ) -> str:
        """The model first."""
        return repr((outer, box, shape, node, crate))


GOOD = {
    "outer": {"inner": {"a": 1}},
    "box": {"v": 1},
    "shape": {"n": 1},
    "node": {"name": "a", "children": [{"name": "b"}]},
    "crate": {"item": 1},
    "loose": {
        "inner": {"a": 1},
        "box": {"v": 1},
        "shape": {"n": 1},
        "node": {"name": "a", "children": [{"name": "b"}]},
        "crate": {"item": 1},
    },
}
# Where an unknown key goes: (argument, path in it). In `loose` it is the model's to allow.
ARGUMENT_PLACES = [
    ("outer", ("inner",)),
    ("box", ()),
    ("shape", ()),
    ("node", ("children", 0)),
    ("crate", ()),
]
MODEL_PLACES = [
    ("loose", ("inner",)),
    ("loose", ("box",)),
    ("loose", ("shape",)),
    ("loose", ("node", "children", 0)),
    ("loose", ("crate",)),
]


def _with_unknown_key(argument: str, path: tuple[str | int, ...]) -> dict[str, Any]:
    arguments = copy.deepcopy(GOOD)
    target: Any = arguments[argument]
    for step in path:
        target = target[step]
    target["unknown"] = 1
    return arguments


class TestDefinitionsDoNotDependOnTheOrder:
    @pytest.mark.parametrize("name", ["first", "last"])
    @pytest.mark.parametrize(("argument", "path"), ARGUMENT_PLACES)
    async def test_an_unknown_key_in_an_argument_is_refused_by_both(
        self, name: str, argument: str, path: tuple[str | int, ...]
    ) -> None:
        """Nested in a closed TypedDict, a parametrized generic, an ABC dataclass, a tree:
        closed as arguments, and their schema says so whatever the order (before, the model
        first made their one $defs entry open)."""
        arguments = _with_unknown_key(argument, path)
        assert not _schema_admits(Places, name, arguments)
        with pytest.raises(InvalidArgumentError, match=r"(?i)unexpected"):
            await _call(Places, name, arguments)

    @pytest.mark.parametrize("name", ["first", "last"])
    @pytest.mark.parametrize(("argument", "path"), MODEL_PLACES)
    async def test_an_unknown_key_inside_the_model_is_allowed_by_both(
        self, name: str, argument: str, path: tuple[str | int, ...]
    ) -> None:
        """Inside the extra="allow" model they follow the model, and their schema says so
        (before, the arguments first made their one $defs entry closed)."""
        arguments = _with_unknown_key(argument, path)
        assert _schema_admits(Places, name, arguments)
        await _call(Places, name, arguments)

    def test_the_schema_is_the_same_either_way(self) -> None:
        first = Places.first.meta().input_schema
        last = Places.last.meta().input_schema
        assert json.dumps(first["$defs"], sort_keys=True) == json.dumps(
            last["$defs"], sort_keys=True
        )

    async def test_the_method_gets_your_classes(self) -> None:
        result = await _call(Places, "first", GOOD)
        assert result == repr(
            (
                {"inner": {"a": 1}},
                {"v": 1},
                Shape(1),
                Node("a", [Node("b")]),
                Crate(1),
            )
        )

    def test_a_dataclass_whose_subclasses_run_code_is_a_declaration_error(self) -> None:
        """A metaclass or an __init_subclass__ of its own would run for the closed copy: the
        parameter is named, and the way out."""

        class App:
            async def use(self, plugin: Plugin, holder: Holder) -> str:
                """Use."""
                return ""

        App.use = tool(App.use)  # type: ignore[method-assign]
        with pytest.raises(TypeError) as caught:
            tool_registry(App)
        way_out = (
            "and as an argument it is validated as a subclass closed like the arguments; "
            "give it a config of its own (@with_config(ConfigDict(extra='forbid')) from "
            "pydantic) or make it a pydantic model"
        )
        assert str(caught.value).splitlines()[1:] == [
            "  use: parameter 'plugin': Plugin is a dataclass whose subclasses run code of "
            f"their own (its metaclass Registering), {way_out}",
            "  use: parameter 'holder': Part (in Holder) is a dataclass whose subclasses run "
            f"code of their own (Registry.__init_subclass__), {way_out}",
        ]

    async def test_with_a_config_of_its_own_it_is_declared(self) -> None:
        """with_config(...): the class decides for itself, and no copy is made."""

        @tool_registry
        class App:
            @tool
            async def use(self, plugin: OwnPlugin) -> str:
                """Use."""
                return repr(plugin.n)

        assert await _call(App, "use", {"plugin": {"n": 2}}) == "2"
        with pytest.raises(InvalidArgumentError, match="Unexpected"):
            await _call(App, "use", {"plugin": {"n": 2, "x": 1}})


# -- union members named in errors ----------------------------------------------------------


@tool_registry
class Unions:
    @tool
    async def pick(
        self,
        n: Union[Literal[1, 2], list[int]] = 1,  # noqa: UP007
        level: Union[Tier, str] = Tier.LOW,  # noqa: UP007
        counts: Union[dict[int, int], list[int]] = [],  # noqa: B006, UP007
        named: Union[Counts, str] = "",  # noqa: UP007
    ) -> str:
        """Pick."""
        return "ok"


class TestUnionMembersAreNamedAsWritten:
    @pytest.mark.parametrize(
        ("arguments", "message"),
        [
            (
                {"n": 5},
                "'n.literal[1,2]': Input should be 1 or 2 (got 5); "
                "'n.list[int]': Input should be a valid array (got 5)",
            ),
            (
                {"level": 7},
                "'level.int-enum[Tier]': Input should be 1 or 2 (got 7); "
                "'level.str': Input should be a valid string (got 7)",
            ),
            (
                {"counts": {"01": 1}},
                "'counts.dict[int,int].01.[key]': String should match pattern "
                "'^(0|-?[1-9][0-9]*)$' (got \"01\"); "
                "'counts.list[int]': Input should be a valid array (got {\"01\": 1})",
            ),
        ],
        ids=["literal", "enum", "int-keys"],
    )
    async def test_the_member_is_named_as_pydantic_names_it(
        self, arguments: dict[str, Any], message: str
    ) -> None:
        """The location names the member (literal[1,2]), as it did before the members were
        read exactly; not json-or-python[...], canonical() or _int_of_key()."""
        assert await _refusal(Unions, "pick", arguments) == message

    async def test_an_alias_member_names_no_validator(self) -> None:
        message = await _refusal(Unions, "pick", {"named": {"01": 1}})
        assert "json-or-python" not in message
        assert "function-" not in message

    def test_python_input_is_validated_as_before(self) -> None:
        """Args from Python still takes the members themselves, with pydantic's messages."""
        args_model = Unions.pick.args_model
        assert args_model(n=2, level=Tier.HIGH).level is Tier.HIGH  # type: ignore[attr-defined]
        with pytest.raises(ValidationError, match="literal"):
            args_model(n=5)
