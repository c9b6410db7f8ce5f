"""``_codegen.fields``: one parameter becomes one field, kept apart from every other tool's."""

from __future__ import annotations

import json
from typing import Any

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
