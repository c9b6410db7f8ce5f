"""``_codegen.aliases``: what an annotation is, read the same on every Python.

On Python 3.10 a generic alias given its arguments (``list[Movie]``, ``Pair[int]``)
forwards ``__class__`` to what it parametrises, so ``isinstance`` takes it for a class
(or for a ``TypeAliasType``). Each test here failed on 3.10 while ``isinstance`` asked.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import json
import re
import typing
from typing import Any, NewType, TypeVar

import jsonschema
import pytest
from pydantic import BaseModel
from typing_extensions import NotRequired, TypeAliasType, TypedDict

from llm_worker import InvalidArgumentError, tool, tool_metas, tool_registry
from llm_worker._annotations import is_class
from llm_worker._codegen.aliases import aliased, is_type_alias

T = TypeVar("T")
Pair = TypeAliasType("Pair", dict[T, T], type_params=(T,))
Counts = TypeAliasType("Counts", dict[int, int])
UserId = NewType("UserId", int)


class Movie(TypedDict):
    title: str
    year: NotRequired[int]


@dataclasses.dataclass
class Spot:
    x: int


@dataclasses.dataclass
class Plugin:
    """A dataclass whose subclasses run code of its own: refused as an argument."""

    name: str

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)


GENERIC_ALIASES = [
    pytest.param(list[Movie], id="list[Movie]"),
    pytest.param(dict[str, Spot], id="dict[str, Spot]"),
    pytest.param(tuple[int, ...], id="tuple[int, ...]"),
    pytest.param(collections.abc.Callable[[int], str], id="Callable[[int], str]"),
    pytest.param(Pair[int], id="Pair[int]"),
    pytest.param(typing.List[int], id="List[int]"),  # noqa: UP006 (typing's alias on purpose)
]


class TestIsClass:
    @pytest.mark.parametrize("cls", [int, list, Movie, Spot, type])
    def test_a_class_is_one(self, cls: Any):
        """A class, a TypedDict, a dataclass, a metaclass are classes."""
        assert is_class(cls)

    @pytest.mark.parametrize("annotation", GENERIC_ALIASES)
    def test_a_generic_alias_given_its_arguments_is_none(self, annotation: Any):
        """``list[Movie]`` is no class, though it passes ``isinstance(..., type)`` on 3.10."""
        assert not is_class(annotation)

    @pytest.mark.parametrize("annotation", [Pair, Counts, UserId, None, "Movie", 1])
    def test_what_else_an_annotation_may_be_is_none(self, annotation: Any):
        assert not is_class(annotation)


class TestIsTypeAlias:
    def test_a_type_alias_is_one(self):
        assert is_type_alias(Pair)
        assert is_type_alias(Counts)

    @pytest.mark.parametrize("annotation", [*GENERIC_ALIASES, UserId, dict])
    def test_one_given_its_arguments_is_none(self, annotation: Any):
        """``Pair[int]`` is a generic alias of ``Pair`` (passing ``isinstance`` on 3.10)."""
        assert not is_type_alias(annotation)


class TestAliased:
    def test_a_generic_alias_gets_its_arguments(self):
        """``Pair[int]`` stands for ``dict[int, int]``, not for ``dict[T, T]``."""
        assert aliased(Pair[int]) == dict[int, int]
        assert aliased(Pair) == dict[T, T]
        assert aliased(Counts) == dict[int, int]
        assert aliased(UserId) is int
        assert aliased(list[int]) is None


class Shelf(BaseModel):  # pydantic's default: unknown keys ignored, here and inside
    favourite: Movie | None = None
    spot: Spot | None = None


@tool_registry
class Cinema:
    @tool
    async def shelve(self, shelf: Shelf, movies: list[Movie], spots: dict[str, Spot]) -> str:
        """Shelve them."""
        return "shelved"


class TestInsideGenerics:
    """What a class is as an argument holds inside a generic alias too."""

    def test_the_classes_are_closed_in_the_schema(self):
        """A TypedDict in a list and a dataclass in a dict are closed, as arguments are; in
        the model (first, so pydantic meets them there first) they are open, as it says."""
        defs = tool_metas(Cinema)[0].input_schema["$defs"]
        closed = {name: d.get("additionalProperties") for name, d in defs.items()}
        module = __name__.replace(".", "__")  # each entry named by module
        assert closed == {
            "Shelf": None,
            f"{module}__Movie": None,
            f"{module}__Spot": None,
            f"{module}__closed__Movie": False,
            f"{module}__closed__Spot": False,
        }

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("arguments", "where"),
        [
            ({"shelf": {}, "movies": [{"title": "a", "x": 1}], "spots": {}}, "movies[0].x"),
            ({"shelf": {}, "movies": [], "spots": {"k": {"x": 1, "z": 2}}}, "spots.k.z"),
        ],
        ids=["movie", "spot"],
    )
    async def test_unknown_keys_are_refused_by_schema_and_validation(self, arguments, where):
        """An unknown key in a movie of the list or a spot of the dict: both refuse it."""
        schema = tool_metas(Cinema)[0].input_schema
        assert not jsonschema.Draft202012Validator(schema).is_valid(arguments)
        with pytest.raises(
            InvalidArgumentError, match=rf"^Invalid argument: '{re.escape(where)}': "
        ):
            await Cinema.ToolShelve(Cinema()).execute(json.dumps(arguments))

    @pytest.mark.anyio
    async def test_unknown_keys_in_the_model_are_taken_by_both(self):
        """Inside the model they are open, as pydantic's default says: both take them."""
        shelf = {"favourite": {"title": "a", "x": 1}, "spot": {"x": 1, "z": 2}}
        arguments = {"shelf": shelf, "movies": [], "spots": {}}
        schema = tool_metas(Cinema)[0].input_schema
        assert jsonschema.Draft202012Validator(schema).is_valid(arguments)
        assert await Cinema.ToolShelve(Cinema()).execute(json.dumps(arguments)) == "shelved"

    @pytest.mark.anyio
    async def test_a_generic_type_alias_is_read_with_its_arguments(self):
        """``Pair[int]``: int keys written as JSON writes them, int values (on 3.10 it was
        read as the bare ``Pair``, its ``dict[~T, ~T]`` refused)."""

        @tool_registry
        class Pairs:
            @tool
            async def match(self, pair: Pair[int]) -> str:
                return json.dumps(pair)

        schema = tool_metas(Pairs)[0].input_schema["properties"]["pair"]
        assert schema["additionalProperties"] == {"type": "integer"}
        assert "pattern" in schema["propertyNames"]
        assert await Pairs.ToolMatch(Pairs()).execute('{"pair": {"1": 2}}') == '{"1": 2}'

    def test_a_dataclass_that_cannot_be_closed_is_found_in_a_list(self):
        """A dataclass whose subclasses run code is a declaration error inside list[] too."""
        with pytest.raises(TypeError, match=r"Plugin is a dataclass whose subclasses run code"):

            @tool_registry
            class Plugins:
                @tool
                async def load(self, plugins: list[Plugin]) -> str:
                    return "loaded"

    def test_a_key_type_is_named_with_its_arguments(self):
        """The refused dict key ``tuple[int, int]`` is named so, not ``tuple``."""
        with pytest.raises(TypeError, match=r"its dict keys are tuple\[int, int\]"):

            @tool_registry
            class Grid:
                @tool
                async def paint(self, cells: dict[tuple[int, int], str]) -> str:
                    return "painted"
