"""Argument JSON must be JSON (``_strict_json.py``, ``_codegen/non_finite.py``).

``NaN``, ``Infinity``, ``-Infinity`` and numbers past a 64-bit float are
refused as not JSON, by every generated tool whatever its argument types;
duplicate keys mean the last one, for the tool and for a hook alike.
"""

from __future__ import annotations

import dataclasses
import json
import math
from decimal import Decimal
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, JsonValue

from llm_worker import (
    InvalidArgumentError,
    ToolCallContext,
    ToolResult,
    Worker,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker._codegen.non_finite import admits_non_finite
from llm_worker._strict_json import non_finite_problem
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

pytestmark = pytest.mark.anyio


def not_json(found: str) -> str:
    return (
        "input is not valid JSON: NaN, Infinity and numbers out of range for a 64-bit float "
        f"are not JSON numbers (found {found})"
    )


@dataclasses.dataclass
class Box:
    items: list[float]


class Price(BaseModel):
    amount: float


class StrictPrice(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False)
    amount: float


@tool_registry
class Shop:
    def __init__(self) -> None:
        self.seen: list[object] = []

    @tool
    def pay(self, amount: float) -> str:
        self.seen.append(amount)
        return "paid"

    @tool
    def anything(self, value: Any = None) -> str:
        self.seen.append(value)
        return "ok"

    @tool
    def nested(self, price: Price) -> str:
        self.seen.append(price.amount)
        return "ok"

    @tool
    def many(self, values: list[float], extra: dict[str, Any] | None = None) -> str:
        self.seen.append(values)
        return "ok"

    @tool
    def run(self, cmd: str) -> str:
        self.seen.append(cmd)
        return cmd


def tool_of(app: Shop, name: str) -> Any:
    return next(d for d in tool_definitions(app) if d.name == name)()[1]


class TestNonFiniteProblem:
    @pytest.mark.parametrize(
        ("text", "found"),
        [
            ('{"a": NaN}', "NaN"),
            ('{"a": [1, Infinity]}', "Infinity"),
            ('{"a": {"b": [{"c": -Infinity}]}}', "-Infinity"),
            ('{"a": 1e100000}', "Infinity"),
            ('{"a": -2E+308}', "-Infinity"),
            ('{"a": ' + "9" * 400 + ".5}", "Infinity"),
        ],
    )
    def test_non_json_numbers_are_found_at_any_depth(self, text, found):
        """NaN, infinities and numbers no float holds are found wherever they are."""
        assert non_finite_problem(json.loads(text).values()) == not_json(found)

    @pytest.mark.parametrize(
        "text",
        [
            '{"a": "NaN", "b": "Infinity", "c": "1e999"}',
            '{"a": 1.7976931348623157e308, "b": 1e-400, "c": 0e999}',
            '{"a": ' + "9" * 400 + "}",  # an integer: Python holds it exactly
            '{"NaN": 1, "Infinity": []}',
        ],
    )
    def test_json_is_left_alone(self, text):
        """Strings, keys, large finite numbers, underflow and big integers are JSON."""
        assert non_finite_problem(json.loads(text).values()) is None

    def test_models_dataclasses_and_decimals_are_looked_into(self):
        """A non-finite number inside a model, a dataclass or a Decimal is found too."""
        assert non_finite_problem([Price(amount=math.inf)]) == not_json("Infinity")
        assert non_finite_problem([Box(items=[math.nan])]) == not_json("NaN")
        assert non_finite_problem([Decimal("-Infinity")]) == not_json("-Infinity")
        assert non_finite_problem([Decimal("1.5"), Box(items=[1.0])]) is None

    def test_any_depth_without_recursion(self):
        """A value nested 100 000 deep is looked at without a RecursionError."""
        value: list[Any] = [math.nan]
        for _ in range(100_000):
            value = [value]
        assert non_finite_problem([value]) == not_json("NaN")


class TestGeneratedTools:
    @pytest.mark.parametrize(
        ("name", "argument"),
        [
            ("pay", "amount"),
            ("anything", "value"),
            ("many", "values"),
            ("nested", "price"),
        ],
    )
    @pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e100000"])
    async def test_refused_whatever_the_type(self, name, argument, literal):
        """float, Any, list[float] and a nested model's float alike: refused, never called."""
        app = Shop()
        value = literal if name != "many" else f"[{literal}]"
        if name == "nested":
            value = f'{{"amount": {literal}}}'
        with pytest.raises(InvalidArgumentError) as excinfo:
            await tool_of(app, name).execute(f'{{"{argument}": {value}}}')
        assert "not JSON" in str(excinfo.value) or "not valid JSON" in str(excinfo.value)
        assert app.seen == []

    async def test_a_float_argument_says_which(self):
        """A float argument is refused by its own validator, naming it."""
        with pytest.raises(InvalidArgumentError) as excinfo:
            await tool_of(Shop(), "pay").execute('{"amount": NaN}')
        assert str(excinfo.value) == (
            "Invalid argument: 'amount': NaN, Infinity and numbers out of range for a 64-bit "
            "float are not JSON (got NaN)"
        )

    async def test_an_any_argument_is_scanned(self):
        """An Any argument cannot refuse NaN itself: what was parsed is looked at."""
        with pytest.raises(InvalidArgumentError) as excinfo:
            await tool_of(Shop(), "anything").execute('{"value": {"deep": [NaN]}}')
        assert str(excinfo.value) == f"Invalid argument: {not_json('NaN')}"

    async def test_strings_spelling_nan_are_text(self):
        """The string "NaN" is text: it reaches the tool."""
        app = Shop()
        assert await tool_of(app, "anything").execute('{"value": "NaN"}') == "ok"
        assert app.seen == ["NaN"]

    async def test_duplicate_keys_mean_the_last_one_for_tool_and_hook_alike(self):
        """{"cmd": "ls", "cmd": "rm -rf /"} is {"cmd": "rm -rf /"} to the tool and to a hook
        reading the input with json.loads: no reader sees another value."""
        app = Shop()
        seen_by_hook: list[object] = []

        async def inspect(ctx: ToolCallContext) -> None:
            seen_by_hook.append(json.loads(ctx.call.input_json)["cmd"])

        client = ScriptedClient(
            [
                ScriptedResponse(
                    tool_calls=[ScriptedCall("run", '{"cmd": "ls", "cmd": "rm -rf /"}', id="c1")]
                ),
                "done",
            ]
        )
        worker = Worker(client)
        worker.register_tools(tool_definitions(app))
        worker.add_pre_tool_call_hook(inspect)
        await worker.lock().run("go")
        assert seen_by_hook == app.seen == ["rm -rf /"]
        assert ToolResult("c1", "rm -rf /", False) in worker.history


class Recursive(BaseModel):
    name: str
    children: list[Recursive] = []


class TestAdmitsNonFinite:
    @pytest.mark.parametrize(
        ("annotation", "expected"),
        [
            (int, False),
            (str, False),
            (list[str], False),
            (dict[str, int], False),
            (Recursive, False),
            (StrictPrice, False),
            (float, True),  # a model of the user's: pydantic allows NaN there by default
            (Price, True),
            (Any, True),
            (JsonValue, True),
            (list[Any], True),
            (Annotated[int, BeforeValidator(int)], True),  # the user's function sees the raw value
            (Annotated[float, Field(allow_inf_nan=True)], True),
        ],
    )
    def test_what_lets_non_finite_numbers_through(self, annotation, expected):
        """Known-safe types are not scanned; Any, other configs' floats, user validators are."""

        class Model(BaseModel):
            value: annotation  # type: ignore[valid-type]

        assert admits_non_finite(Model.__pydantic_core_schema__) is expected

    def test_args_models_refuse_their_own_floats(self):
        """A float argument of an Args model (allow_inf_nan=False) needs no scan."""
        for model in (Shop.PayArgs, Shop.RunArgs, Shop.AnythingArgs):
            model.model_rebuild()
        assert admits_non_finite(Shop.PayArgs.__pydantic_core_schema__) is False
        assert admits_non_finite(Shop.RunArgs.__pydantic_core_schema__) is False
        assert admits_non_finite(Shop.AnythingArgs.__pydantic_core_schema__) is True
