"""``_codegen.fields``: one parameter becomes one field, kept apart from every other tool's."""

from __future__ import annotations

import enum
import json
from typing import Annotated, Any, Literal

import anyio
import pytest
from pydantic import Field

from llm_worker import InvalidArgumentError, tool, tool_registry
from llm_worker._codegen.schema import model_schema_of

pytestmark = pytest.mark.anyio

# Defaults that give a field the null-means-default validator, one of each kind, with
# what null stands for. One Field object shared by two parameters, as a module-level
# default would be.
DEFAULTS = [
    pytest.param(None, "null", id="None"),
    pytest.param(["x"], '["x"]', id="list"),
    pytest.param(Field(default_factory=list), "[]", id="shared-factory"),
    pytest.param(Field(["y"]), '["y"]', id="shared-Field"),
]


def union_order_tools(default: Any) -> tuple[type, type]:
    """Two registries whose one tool differs only in the order of a union."""

    @tool_registry
    class StrFirst:
        @tool
        async def pick(self, x: list[str | float] = default) -> str:
            return json.dumps(x)

    @tool_registry
    class FloatFirst:
        @tool
        async def pick(self, x: list[float | str] = default) -> str:
            return json.dumps(x)

    return StrFirst, FloatFirst


class TestUnionOrder:
    """``list[str | float] == list[float | str]``, and typing caches ``Annotated`` by equality."""

    @pytest.mark.parametrize(("default", "null_means"), DEFAULTS)
    async def test_two_tools_differing_only_in_union_order(self, default: Any, null_means: str):
        """Each tool's schema and validator follow its own union order, whichever came first."""
        str_first, float_first = union_order_tools(default)
        expected = {
            str_first: (["string", "number"], ["str", "float"]),
            float_first: (["number", "string"], ["float", "str"]),
        }
        for registry, (schema_order, validator_order) in expected.items():
            args_model = registry.PickArgs  # created now: the second after the first
            items = registry.pick.meta().input_schema["properties"]["x"]["items"]
            assert [branch["type"] for branch in items["anyOf"]] == schema_order
            whole = model_schema_of(args_model)["properties"]["x"]["items"]
            assert [branch["type"] for branch in whole["anyOf"]] == schema_order
            with pytest.raises(InvalidArgumentError) as excinfo:
                await registry.ToolPick(registry()).execute('{"x": [true]}')
            words = {"str": "a valid string", "float": "a valid number"}
            assert excinfo.value.message == "; ".join(
                f"'x[0].{branch}': Input should be {words[branch]} (got true)"
                for branch in validator_order
            )

    @pytest.mark.parametrize(("default", "null_means"), DEFAULTS)
    async def test_null_still_means_the_default(self, default: Any, null_means: str):
        """What keeps them apart still reads null, and a missing argument, as the default."""
        for registry in union_order_tools(default):
            tool_instance = registry.ToolPick(registry())
            assert await tool_instance.execute('{"x": null}') == null_means
            assert await tool_instance.execute("{}") == null_means


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Size(enum.IntEnum):
    S = 1
    L = 3


@tool_registry
class EnumLiterals:
    @tool
    async def color(self, x: Literal[Color.RED, Color.BLUE]) -> str:
        return repr(x)

    @tool
    async def size(self, x: Literal[Size.S, Size.L] = Size.S) -> str:
        return repr(x)

    @tool
    async def mixed(
        self, x: Annotated[Literal[Color.RED, "plain", 5], Field(description="one of three")]
    ) -> str:
        return repr(x)

    @tool
    async def listed(self, x: dict[str, list[Literal[Color.BLUE, Color.RED]]] | None = None) -> str:
        assert x is not None
        return repr(x["k"][0])


def _enum_in(schema: dict[str, Any]) -> list[Any]:
    """The ``enum`` list of a property's schema, however deep in it."""
    if "enum" in schema:
        return schema["enum"]
    [inner] = [value for value in schema.values() if isinstance(value, dict)] or [
        branch for branch in schema["anyOf"] if branch.get("type") != "null"
    ]
    return _enum_in(inner)


class TestLiteralOfEnumMembers:
    """Strict mode matched JSON against the members: ``"red"`` was refused for
    ``Literal[Color.RED]``, though the schema lists ``"red"``."""

    @pytest.mark.parametrize(
        ("tool_name", "choices", "arguments"),
        [
            ("color", (Color.RED, Color.BLUE), lambda value: {"x": value}),
            ("size", (Size.S, Size.L), lambda value: {"x": value}),
            ("mixed", (Color.RED, "plain", 5), lambda value: {"x": value}),
            ("listed", (Color.BLUE, Color.RED), lambda value: {"x": {"k": [value]}}),
        ],
    )
    async def test_every_value_the_schema_lists_validates_into_its_member(
        self, tool_name: str, choices: tuple[Any, ...], arguments: Any
    ):
        """Each value of the schema's enum is accepted, and the method gets the member."""
        method = getattr(EnumLiterals, tool_name)
        values = _enum_in(method.meta().input_schema["properties"]["x"])
        assert values == [c.value if isinstance(c, enum.Enum) else c for c in choices]
        _, tool_instance = method.definition(EnumLiterals())()
        for value, choice in zip(values, choices, strict=True):
            with anyio.fail_after(5):
                got = await tool_instance.execute(json.dumps(arguments(value)))
            assert got == repr(choice)

    async def test_other_values_are_refused_with_the_values_allowed(self):
        """A value the schema does not list is refused, naming the ones it does."""
        with pytest.raises(InvalidArgumentError) as excinfo, anyio.fail_after(5):
            await EnumLiterals.ToolColor(EnumLiterals()).execute('{"x": "RED"}')
        assert excinfo.value.message == "'x': Input should be 'red' or 'blue' (got \"RED\")"

    def test_from_python_the_members_themselves(self):
        """The Args model still takes the members from Python, as before."""
        assert EnumLiterals.ColorArgs(x=Color.BLUE).x is Color.BLUE
