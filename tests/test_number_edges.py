"""Numbers at the edges of a float: ``NaN``, infinities and ints past a float's range.

- a run's structured answer holding ``NaN``, ``Infinity`` or ``1e400`` is refused as a
  tool's arguments are, and the model is asked again (``_output.py``);
- a timeout no float can hold (``10**400``) is refused when it is set, and one past
  ``NO_LIMIT_PAST`` is kept as ``math.inf`` (``_limits.py``, ``_options.py``);
- ``ToolContext.report_progress`` refuses a ``bool`` and an int past a float's range
  with the errors its docstring names (``_context.py``);
- a ``Literal`` or an Enum of numbers takes no JSON ``true``/``false``, and a dict's
  ``int`` keys are integers written one way, as the schema says (``_codegen/fields.py``).
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import decimal
import enum
import json
import math
import re
import uuid
from datetime import timedelta
from typing import Annotated, Any, Literal

import anyio
import jsonschema
import mcp.types
import pytest
from anthropic.types import ToolParam
from openai.types.chat import ChatCompletionFunctionToolParam
from openai.types.responses import FunctionToolParam
from pydantic import BaseModel, BeforeValidator, Field, TypeAdapter
from support import GEMINI_SDK, collect, results_of

from llm_worker import (
    FORMATS,
    Approve,
    InvalidArgumentError,
    Limits,
    OutputValidationError,
    RunState,
    RunStateError,
    ToolCallProgress,
    ToolContext,
    UserMessage,
    Worker,
    WorkerResult,
    WorkerStateError,
    export_tools,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker._limits import NO_LIMIT_PAST
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

if GEMINI_SDK:  # google-genai needs Python 3.11+ (tests/support.py)
    from google.genai import types as gemini_types

pytestmark = pytest.mark.anyio

HUGE = 10**400  # an int no float holds: float(HUGE) raises OverflowError


class Weather(BaseModel):
    city: str
    celsius: float


def told(value: str) -> str:
    """What the model reads for an answer holding ``value`` (``NaN``, ``Infinity``...)."""
    return (
        "Your final answer does not match the required format: input is not valid JSON: "
        "NaN, Infinity and numbers out of range for a 64-bit float are not JSON numbers "
        f"(found {value}). Answer again, with only the corrected answer."
    )


def final(arguments: str, call_id: str = "a") -> ScriptedResponse:
    return ScriptedResponse(tool_calls=[ScriptedCall("final_result", arguments, id=call_id)])


async def run(worker: Worker, prompt: str = "weather in Oslo?") -> WorkerResult:
    with anyio.fail_after(10):
        return await worker.run(prompt)


# -- a run's answer --------------------------------------------------------------------------

NOT_JSON = [
    ("NaN", "NaN"),
    ("Infinity", "Infinity"),
    ("-Infinity", "-Infinity"),
    ("1e400", "Infinity"),  # past a float's range: read as infinity
    ('"nan"', "NaN"),  # a string a lax float reads as NaN
]
NOT_JSON_IDS = ["nan", "infinity", "minus-infinity", "1e400", "nan-string"]


@pytest.mark.parametrize(("spelled", "found"), NOT_JSON, ids=NOT_JSON_IDS)
async def test_a_native_answer_that_is_not_json_is_asked_again(spelled: str, found: str) -> None:
    client = ScriptedClient(
        [f'{{"city": "Oslo", "celsius": {spelled}}}', '{"city": "Oslo", "celsius": 3.5}']
    )
    worker: Worker = Worker(client, output_type=Weather)
    assert await run(worker) is WorkerResult.FINISHED
    assert worker.output == Weather(city="Oslo", celsius=3.5)
    message = client.requests[1].messages[-1]
    assert isinstance(message, UserMessage)
    assert message.text == told(found)


@pytest.mark.parametrize(("spelled", "found"), NOT_JSON, ids=NOT_JSON_IDS)
async def test_a_final_result_call_that_is_not_json_gets_an_error_result(
    spelled: str, found: str
) -> None:
    answers = [
        final(f'{{"city": "Oslo", "celsius": {spelled}}}', "a"),
        final('{"city": "Oslo", "celsius": 3.5}', "b"),
    ]
    client = ScriptedClient(answers, supports_output_format=False)
    worker: Worker = Worker(client, output_type=Weather)
    assert await run(worker) is WorkerResult.FINISHED
    assert worker.output == Weather(city="Oslo", celsius=3.5)
    first = results_of(worker.history)[0]
    assert (first.call_id, first.is_error, first.content) == ("a", True, told(found))


async def test_a_wrapped_float_answer_of_nan_is_asked_again() -> None:
    """``output_type=float`` is asked for as ``{"result": ...}``: NaN there is refused too."""
    client = ScriptedClient(['{"result": NaN}', '{"result": 2.5}'])
    worker: Worker = Worker(client, output_type=float)
    assert await run(worker) is WorkerResult.FINISHED
    assert worker.output == 2.5


async def test_nan_in_a_nested_list_is_found() -> None:
    """The look goes into lists and dicts, at any depth."""
    client = ScriptedClient(['{"result": [{"a": [1.0, NaN]}]}', '{"result": []}'])
    worker: Worker = Worker(client, output_type=list[dict[str, list[float]]])
    assert await run(worker) is WorkerResult.FINISHED
    assert worker.output == []
    message = client.requests[1].messages[-1]
    assert isinstance(message, UserMessage)
    assert message.text == told("NaN")


async def test_answers_that_are_not_json_past_the_retries_fail_the_run() -> None:
    client = ScriptedClient(['{"city": "Oslo", "celsius": NaN}'] * 2)
    worker: Worker = Worker(client, output_type=Weather, output_retries=1)
    with pytest.raises(OutputValidationError) as caught:
        await run(worker)
    assert caught.value.attempts == 2
    assert "(found NaN)" in caught.value.problems


async def test_the_strings_nan_and_infinity_are_text_and_stay() -> None:
    class Note(BaseModel):
        text: str

    client = ScriptedClient(['{"text": "NaN or Infinity, 1e400"}'])
    worker: Worker = Worker(client, output_type=Note)
    assert await run(worker) is WorkerResult.FINISHED
    assert worker.output == Note(text="NaN or Infinity, 1e400")


@tool_registry
class Door:
    @tool(requires_approval=True)
    async def open_door(self) -> str:
        """Open the door."""
        return "open"


async def test_a_loaded_paused_answer_holding_nan_is_refused() -> None:
    """A saved pause whose accepted answer holds NaN (saved before this check, or edited)
    is refused by load_state()."""
    answer = final('{"city": "Oslo", "celsius": 3.25}', "a")
    paused = ScriptedResponse(tool_calls=[ScriptedCall("open_door", {}, "d"), *answer.tool_calls])
    saving: Worker = Worker(
        ScriptedClient([paused], supports_output_format=False), output_type=Weather
    )
    saving.register_tools(tool_definitions(Door()))
    assert await run(saving) is WorkerResult.PAUSED
    saved = saving.state.to_json()
    assert "3.25" in saved  # the call, in the history and in the pause
    worker: Worker = Worker(ScriptedClient([], supports_output_format=False), output_type=Weather)
    worker.register_tools(tool_definitions(Door()))
    edited = RunState.from_json(saved.replace("3.25", "NaN"))
    with pytest.raises(RunStateError, match=re.escape("(found NaN)")):
        worker.load_state(edited)  # refused on load: the worker could not go on from it
    with anyio.fail_after(10), pytest.raises(WorkerStateError, match="not paused"):
        await worker.resume(Approve())


# -- timeouts ----------------------------------------------------------------------------------


def test_a_timeout_no_float_holds_is_refused_by_limits() -> None:
    message = (
        "Limits.tool_timeout must be a number of seconds a float can hold, got an int past "
        "1.8e308 (None or math.inf means no limit)"
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        Limits(tool_timeout=HUGE)
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        dataclasses.replace(Limits(), tool_timeout=HUGE)


@pytest.mark.parametrize("decorator", [tool, tool_registry], ids=["tool", "tool_registry"])
def test_a_timeout_no_float_holds_is_refused_by_the_decorators(decorator: object) -> None:
    message = (
        "timeout must be a number of seconds a float can hold, got an int past 1.8e308 "
        "(math.inf means no limit)"
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        decorator(timeout=HUGE)  # type: ignore[operator]


@pytest.mark.parametrize(
    "seconds", [NO_LIMIT_PAST * 2, 10**300, 1e308], ids=["2e9", "int-1e300", "1e308"]
)
def test_a_timeout_past_any_call_s_life_means_no_limit(seconds: float) -> None:
    assert Limits(tool_timeout=seconds).tool_timeout == math.inf


def test_timeouts_up_to_the_bound_are_kept_as_given() -> None:
    assert Limits(tool_timeout=NO_LIMIT_PAST).tool_timeout == NO_LIMIT_PAST
    assert Limits(tool_timeout=30).tool_timeout == 30


class Waits:
    """A hand-written tool that waits once, so its deadline is set."""

    async def execute(self, input_json: str) -> str:
        await anyio.sleep(0)
        return "waited"


@pytest.mark.parametrize("calls", [1, 2], ids=["one-call", "two-calls"])
async def test_a_huge_limits_timeout_lets_calls_that_wait_finish(calls: int) -> None:
    """The reviewer's case, with 1e300 (10**400 is refused now): the calls run, on
    either path (one call alone, or a batch's runner)."""
    from llm_worker import ToolMeta

    scripted = [ScriptedCall("w", {}, id=f"c{i}") for i in range(calls)]
    client = ScriptedClient([ScriptedResponse(tool_calls=scripted), "done"])
    worker: Worker = Worker(client, limits=Limits(tool_timeout=10**300))
    worker.register_tool(lambda: (ToolMeta(name="w"), Waits()))
    assert await run(worker, "go") is WorkerResult.FINISHED
    assert [r.content for r in results_of(worker.history)] == ["waited"] * calls


async def test_a_huge_tool_timeout_lets_a_call_that_waits_finish() -> None:
    @tool_registry
    class Slow:
        @tool(timeout=10**300)
        async def nap(self) -> str:
            """Wait a moment."""
            await anyio.sleep(0.01)
            return "rested"

    client = ScriptedClient([ScriptedResponse(tool_calls=[ScriptedCall("nap", {}, "n")]), "ok"])
    worker: Worker = Worker(client)
    worker.register_tools(tool_definitions(Slow()))
    assert await run(worker, "go") is WorkerResult.FINISHED
    assert [r.content for r in results_of(worker.history)] == ["rested"]


def test_a_durable_worker_takes_a_huge_timeout_as_no_limit() -> None:
    """A tool call activity's timeout is a timedelta: 1e15 seconds made none
    (OverflowError in the workflow); now it is no limit, and asks for one of its own."""
    pytest.importorskip("temporalio")
    from llm_worker.temporal import ActivityConfig, DurableWorker

    with pytest.raises(ValueError, match=r"needs a timeout, and limits\.tool_timeout is None"):
        DurableWorker("endless", limits=Limits(tool_timeout=1e15))
    durable = DurableWorker(
        "endless",
        limits=Limits(tool_timeout=1e15),
        tool_activity=ActivityConfig(start_to_close_timeout=timedelta(minutes=5)),
    )
    durable.register_tools(Door)
    assert isinstance(durable.workflow_worker(), Worker)


# -- progress ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("progress", "total", "error", "message"),
    [
        (True, None, TypeError, "progress must be a number, not bool"),
        (1, False, TypeError, "total must be a number, not bool"),
        ("5", None, TypeError, "progress must be a number, not str"),
        ([1], None, TypeError, "progress must be a number, not list"),
        (HUGE, None, ValueError, "progress must be finite numbers, got "),
        (1, HUGE, ValueError, "progress must be finite numbers, got 1 of "),
        (math.nan, 10, ValueError, "progress must be finite numbers, got nan of 10"),
    ],
    ids=["bool", "bool-total", "str", "list", "huge", "huge-total", "nan"],
)
def test_progress_that_is_no_finite_number_is_refused(
    progress: object, total: object, error: type[Exception], message: str
) -> None:
    context = ToolContext(call_id="c", tool_name="t", deps=None)
    with pytest.raises(error, match=f"^{re.escape(message)}") as caught:
        context.report_progress(progress, total)  # type: ignore[arg-type]
    assert len(str(caught.value)) < 200  # 10**400 is not shown whole


@tool_registry
class Reporter:
    @tool
    def count(self, ctx: ToolContext) -> str:
        """Report progress from a worker thread, some of it wrong."""
        refused = []
        for progress, total in ((True, 4), (HUGE, 4), (2, HUGE)):
            try:
                ctx.report_progress(progress, total)
            except (TypeError, ValueError) as exc:
                refused.append(type(exc).__name__)
        ctx.report_progress(2, 4, "half")
        return " ".join(refused)


async def test_refused_progress_reaches_no_one_and_good_progress_arrives_as_floats() -> None:
    client = ScriptedClient([ScriptedResponse(tool_calls=[ScriptedCall("count", {}, "c")]), "ok"])
    worker: Worker = Worker(client)
    worker.register_tools(tool_definitions(Reporter()))
    with anyio.fail_after(10):
        events = await collect(worker.run_stream("go"))
    assert [r.content for r in results_of(worker.history)] == ["TypeError ValueError ValueError"]
    reports = [e for e in events if isinstance(e, ToolCallProgress)]
    assert reports == [ToolCallProgress("c", 2.0, 4.0, "half")]
    assert all(type(value) is float for value in (reports[0].progress, reports[0].total))


# -- where the answer is looked at -------------------------------------------------------


class Person(BaseModel):
    name: str
    age: int
    tags: list[str]


@pytest.mark.parametrize(
    ("output_type", "looked_at"),
    [
        (Person, False),  # str, int, list[str]: pydantic never makes a float of them
        (list[int], False),
        (Weather, True),  # a float (lax: allow_inf_nan)
        (list[float], True),
        (dict[str, Any], True),  # Any takes what was parsed
    ],
    ids=["no-floats", "ints", "a-float", "floats", "any"],
)
def test_the_answer_is_looked_at_only_where_its_type_lets_nan_through(
    output_type: object, looked_at: bool
) -> None:
    from llm_worker._output_schema import output_shape

    assert output_shape(output_type, mode="validation").admits_non_finite is looked_at


async def test_a_validator_making_nan_is_still_refused() -> None:
    """A validator of the application's may make a float of anything: looked at too."""

    def as_float(value: object) -> object:
        return float("nan") if value == "unknown" else value

    Reading = Annotated[int | float, BeforeValidator(as_float)]

    class Sensor(BaseModel):
        reading: Reading

    client = ScriptedClient(['{"reading": "unknown"}', '{"reading": 3}'])
    worker: Worker = Worker(client, output_type=Sensor)
    assert await run(worker) is WorkerResult.FINISHED
    assert worker.output == Sensor(reading=3)
    message = client.requests[1].messages[-1]
    assert isinstance(message, UserMessage)
    assert message.text == told("NaN")


# -- a JSON true is no 1, and "01" is no key 1 ----------------------------------------------


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Mixed(enum.Enum):
    ONE = 1
    B = "b"


class Flavour(str, enum.Enum):
    PLAIN = "plain"


class Colour(enum.Enum):  # plain Enum, str values
    RED = "red"
    BLUE = "blue"


@tool_registry
class Choices:
    @tool
    async def pick(self, n: Literal[1, 2, "1"]) -> str:
        """Pick."""
        return repr(n)

    @tool
    async def flag(self, c: Literal[0, 5]) -> str:
        """Flag."""
        return repr(c)

    @tool
    async def level(
        self,
        level: Level,
        levels: list[Level] = [],  # noqa: B006
        maybe: Level | None = None,
    ) -> str:
        """Level."""
        return repr((level, levels, maybe))

    @tool
    async def mixed(self, m: Mixed) -> str:
        """Mixed."""
        return repr(m)

    @tool
    async def both(self, b: Literal[True, 0]) -> str:
        """A bool and a number."""
        return repr(b)

    @tool
    async def member(self, m: Literal[Level.LOW, Mixed.B]) -> str:
        """Enum members in a Literal."""
        return repr(m)

    @tool(strict=False)
    async def lax(self, level: Level) -> str:
        """Lax."""
        return repr(level)


async def _call(registry: type, name: str, arguments: dict[str, Any]) -> str:
    tool_class = vars(registry)["Tool" + name.title().replace("_", "")]
    with anyio.fail_after(10):
        return str(await tool_class(registry()).execute(json.dumps(arguments)))


def _schema_admits(registry: type, name: str, arguments: dict[str, Any]) -> bool:
    schema = getattr(registry, name).meta().input_schema
    return jsonschema.Draft202012Validator(schema).is_valid(arguments)


REFUSED_CHOICES = [
    ("pick", {"n": True}, "'n': Input should be 1, 2 or '1' (got true)"),
    ("flag", {"c": False}, "'c': Input should be 0 or 5 (got false)"),
    ("level", {"level": True}, "'level': Input should be 1 or 2 (got true)"),
    ("level", {"level": 1, "levels": [False]}, "'levels[0]': Input should be 1 or 2 (got false)"),
    ("level", {"level": 1, "maybe": True}, "'maybe': Input should be 1 or 2 (got true)"),
    ("level", {"level": "1"}, "'level': Input should be 1 or 2 (got \"1\")"),
    ("mixed", {"m": True}, "'m': Input should be 1 or 'b' (got true)"),
    ("both", {"b": 1}, "'b': Input should be True or 0 (got 1)"),
    ("both", {"b": False}, "'b': Input should be True or 0 (got false)"),
    ("member", {"m": True}, "'m': Input should be 1 or 'b' (got true)"),
]
TAKEN_CHOICES = [
    ("pick", {"n": 1}, "1"),
    ("pick", {"n": "1"}, "'1'"),
    ("flag", {"c": 5.0}, "5"),  # JSON Schema's integer, as before
    (
        "level",
        {"level": 1.0, "levels": [2], "maybe": None},
        "(<Level.LOW: 1>, [<Level.HIGH: 2>], None)",
    ),
    ("mixed", {"m": "b"}, "<Mixed.B: 'b'>"),
    ("both", {"b": True}, "True"),
    ("both", {"b": 0}, "0"),
    ("member", {"m": 1}, "<Level.LOW: 1>"),
]


class TestBoolsAreNoNumbers:
    @pytest.mark.parametrize(("name", "arguments", "message"), REFUSED_CHOICES)
    async def test_a_value_of_another_kind_is_refused_by_both(
        self, name: str, arguments: dict[str, Any], message: str
    ) -> None:
        """true is no 1 and 1 is no True: the schema refuses it, and so does the tool
        (pydantic-core matched them, True == 1)."""
        assert not _schema_admits(Choices, name, arguments)
        with pytest.raises(InvalidArgumentError) as caught:
            await _call(Choices, name, arguments)
        assert caught.value.message == message

    @pytest.mark.parametrize(("name", "arguments", "result"), TAKEN_CHOICES)
    async def test_the_choices_are_taken_as_before(
        self, name: str, arguments: dict[str, Any], result: str
    ) -> None:
        assert _schema_admits(Choices, name, arguments)
        assert await _call(Choices, name, arguments) == result

    def test_the_schemas_are_as_before(self) -> None:
        """An Enum is still its $defs entry; a Literal its values."""
        level = Choices.level.meta().input_schema
        assert level["$defs"] == {"Level": {"enum": [1, 2], "title": "Level", "type": "integer"}}
        assert level["properties"]["level"] == {"$ref": "#/$defs/Level"}
        pick = Choices.pick.meta().input_schema["properties"]["n"]
        assert pick == {"enum": [1, 2, "1"]}
        member = Choices.member.meta().input_schema["properties"]["m"]
        assert member == {"enum": [1, "b"]}

    async def test_a_lax_tool_keeps_pydantics_lax_reading(self) -> None:
        """@tool(strict=False) accepts more than its schema, as documented: "1" and true too."""
        assert await _call(Choices, "lax", {"level": "1"}) == "<Level.LOW: 1>"
        assert await _call(Choices, "lax", {"level": True}) == "<Level.LOW: 1>"


@tool_registry
class Stock:
    @tool
    async def set_quantities(self, quantities: dict[int, int]) -> str:
        """Set the stock quantity of each product, by product id."""
        return repr(quantities)

    @tool
    async def keyed(
        self,
        flags: dict[bool, str] = {},  # noqa: B006
        levels: dict[Level, int] = {},  # noqa: B006
        literal: dict[Literal[1, "a"], int] = {},  # noqa: B006
        flavours: dict[Flavour, int] = {},  # noqa: B006
        positive: dict[Annotated[int, Field(ge=0)], int] = {},  # noqa: B006
        ordered: collections.OrderedDict[int, int] = {},  # noqa: B006 (a dict becomes one)
    ) -> str:
        """Keys of several types."""
        return repr((flags, levels, literal, flavours, positive, dict(ordered)))

    @tool
    async def colours(
        self,
        members: dict[Literal[Colour.RED, Colour.BLUE], int] = {},  # noqa: B006
        mixed: dict[Literal[Colour.RED, "green"], int] = {},  # noqa: B006
        enum_keys: dict[Colour, int] = {},  # noqa: B006
    ) -> str:
        """Keys that are Enum members with str values."""
        return repr((members, mixed, enum_keys))

    @tool
    async def bounded(
        self,
        adults: dict[Annotated[int, Field(ge=18)], str] = {},  # noqa: B006
        below: dict[Annotated[int, Field(lt=10)], str] = {},  # noqa: B006
        between: dict[Annotated[int, Field(gt=-3, le=12)], str] = {},  # noqa: B006
        none: dict[Annotated[int, Field(gt=5, lt=6)], str] = {},  # noqa: B006
    ) -> str:
        """Keys with bounds."""
        return repr((adults, below, between, none))


INT_KEY_PATTERN = r"^(0|-?[1-9][0-9]*)$"  # an integer as json.dumps writes it, "-0" not
NOT_ONE_WAY = ["sku-1", "01", " 1", "+1", "1_0", "1.0", "-0", "1e2", "", "\u0661"]


class TestIntKeysAreWrittenOneWay:
    @pytest.mark.parametrize("key", NOT_ONE_WAY)
    async def test_a_key_written_another_way_is_refused_by_both(self, key: str) -> None:
        """Only json.dumps's spelling of an integer is a key: "01" and "+1" would read as 1
        and keep one of the values."""
        arguments = {"quantities": {"1": 5, key: 7}}
        assert not _schema_admits(Stock, "set_quantities", arguments)
        with pytest.raises(InvalidArgumentError) as caught:
            await _call(Stock, "set_quantities", arguments)
        assert caught.value.message == (
            f"'quantities.{key}.[key]': String should match pattern "
            f"'{INT_KEY_PATTERN}' (got {json.dumps(key, ensure_ascii=False)})"
        )

    async def test_every_key_arrives(self) -> None:
        """Before, {"1": 5, "01": 7, " 1": 9, "+1": 11} reached the method as {1: 11}."""
        arguments = {"quantities": {"1": 5, "-20": 7, "0": 9, str(10**30): 11}}
        assert _schema_admits(Stock, "set_quantities", arguments)
        assert await _call(Stock, "set_quantities", arguments) == repr(
            {1: 5, -20: 7, 0: 9, 10**30: 11}
        )

    def test_the_schema_names_the_keys(self) -> None:
        schema = Stock.set_quantities.meta().input_schema["properties"]["quantities"]
        assert schema == {
            "additionalProperties": {"type": "integer"},
            "propertyNames": {"pattern": INT_KEY_PATTERN},
            "type": "object",
        }

    async def test_keys_of_few_values_are_their_json_texts(self) -> None:
        """bool, Literal and Enum keys are their values' JSON text ("true", "1"), and
        str Enum keys their values, as before."""
        arguments = {
            "flags": {"true": "t"},
            "levels": {"2": 1},
            "literal": {"1": 1, "a": 2},
            "flavours": {"plain": 1},
            "positive": {"3": 1},
            "ordered": {"4": 1},
        }
        assert _schema_admits(Stock, "keyed", arguments)
        assert await _call(Stock, "keyed", arguments) == repr(
            ({True: "t"}, {Level.HIGH: 1}, {1: 1, "a": 2}, {Flavour.PLAIN: 1}, {3: 1}, {4: 1})
        )
        properties = Stock.keyed.meta().input_schema["properties"]
        names = {name: properties[name].get("propertyNames") for name in properties}
        assert names == {
            "flags": {"enum": ["true", "false"]},
            "levels": {"enum": ["1", "2"]},
            "literal": {"enum": ["1", "a"]},
            "flavours": {"$ref": "#/$defs/Flavour"},
            "positive": {"pattern": "^(0|[1-9][0-9]*)$"},  # ge=0: no "-"
            "ordered": {"pattern": INT_KEY_PATTERN},
        }

    @pytest.mark.parametrize(
        ("arguments", "message"),
        [
            (
                {"flags": {"yes": "y"}},
                "'flags.yes.[key]': Input should be 'true' or 'false' (got \"yes\")",
            ),
            ({"levels": {"01": 1}}, "'levels.01.[key]': Input should be '1' or '2' (got \"01\")"),
            (
                {"literal": {"1.0": 1}},
                "'literal.1.0.[key]': Input should be '1' or 'a' (got \"1.0\")",
            ),
            (
                {"positive": {"-1": 1}},
                "'positive.-1.[key]': Input should be greater than or equal to 0 (got -1)",
            ),
            (
                {"ordered": {"04": 1}},
                f"'ordered.04.[key]': String should match pattern '{INT_KEY_PATTERN}' (got \"04\")",
            ),
        ],
        ids=["bool", "enum", "literal", "constrained", "ordered-dict"],
    )
    async def test_other_texts_are_refused(self, arguments: dict[str, Any], message: str) -> None:
        assert not _schema_admits(Stock, "keyed", arguments)  # "-1" too: the bound is in it
        with pytest.raises(InvalidArgumentError) as caught:
            await _call(Stock, "keyed", arguments)
        assert caught.value.message == message

    @pytest.mark.parametrize("key", ["1\n", "-5\n", "0\n"])
    async def test_a_key_with_a_newline_after_it_is_refused(self, key: str) -> None:
        """ "1\n" is no "1" (Python's re.match and '$' took it, and one value was lost), as
        the schema's pattern says in ECMA-262, where '$' is the end of the text."""
        pattern = Stock.set_quantities.meta().input_schema["properties"]["quantities"]
        assert re.fullmatch(pattern["propertyNames"]["pattern"], key) is None
        with pytest.raises(InvalidArgumentError) as caught:
            await _call(Stock, "set_quantities", {"quantities": {key.strip(): 5, key: 7}})
        assert caught.value.message == (
            f"'quantities.{key}.[key]': String should match pattern "
            f"'{INT_KEY_PATTERN}' (got {json.dumps(key)})"
        )

    async def test_a_key_of_more_digits_than_python_reads_is_refused_in_words(self) -> None:
        """Past sys.get_int_max_str_digits() a key gets pydantic's words for an int too
        large, not CPython's advice to call sys.set_int_max_str_digits()."""
        key = "9" * 4301
        with pytest.raises(InvalidArgumentError) as caught:
            await _call(Stock, "set_quantities", {"quantities": {key: 1}})
        assert caught.value.message == (
            f"'quantities.{key}.[key]': Unable to parse input string as an integer, "
            f'exceeded maximum size (got "{key[:58]}…)'
        )

    async def test_enum_members_in_a_literal_are_keys_of_their_values(self) -> None:
        """dict[Literal[Colour.RED, Colour.BLUE], int] takes "red", as its schema lists it,
        and the method gets the members (every key was refused: strict mode took only
        members)."""
        arguments = {
            "members": {"red": 1, "blue": 2},
            "mixed": {"red": 3, "green": 4},
            "enum_keys": {"blue": 5},
        }
        assert _schema_admits(Stock, "colours", arguments)
        assert await _call(Stock, "colours", arguments) == repr(
            (
                {Colour.RED: 1, Colour.BLUE: 2},
                {Colour.RED: 3, "green": 4},
                {Colour.BLUE: 5},
            )
        )
        properties = Stock.colours.meta().input_schema["properties"]
        assert properties["members"]["propertyNames"] == {"enum": ["red", "blue"]}
        assert properties["mixed"]["propertyNames"] == {"enum": ["red", "green"]}
        refused = {"members": {"RED": 1}}
        assert not _schema_admits(Stock, "colours", refused)
        with pytest.raises(InvalidArgumentError) as caught:
            await _call(Stock, "colours", refused)
        assert caught.value.message == (
            "'members.RED.[key]': Input should be 'red' or 'blue' (got \"RED\")"
        )

    def test_the_bounds_of_int_keys_are_in_their_pattern(self) -> None:
        """A JSON Schema's minimum is for numbers, not keys: the bounds go in the pattern."""
        properties = Stock.bounded.meta().input_schema["properties"]
        names = {name: properties[name]["propertyNames"] for name in properties}
        assert names == {
            "adults": {"pattern": "^(1[8-9]|[2-9][0-9]|[1-9][0-9]{2,})$"},
            "below": {"pattern": "^(0|[1-9]|-[1-9][0-9]*)$"},
            "between": {"pattern": "^(0|[1-9]|1[0-2]|-[1-2])$"},
            "none": {"not": {}},
        }

    @pytest.mark.parametrize(
        ("name", "key", "taken"),
        [
            ("adults", "18", True),
            ("adults", "17", False),
            ("adults", "100000000000000000000", True),
            ("below", "9", True),
            ("below", "10", False),
            ("below", "-123", True),
            ("between", "-2", True),
            ("between", "-3", False),
            ("between", "12", True),
            ("between", "13", False),
            ("none", "5", False),
            ("none", "6", False),
        ],
    )
    async def test_the_schema_and_the_tool_agree_on_bounded_keys(
        self, name: str, key: str, taken: bool
    ) -> None:
        """Before, the schema's pattern let "17" through for ge=18, which the tool refused."""
        arguments = {name: {key: "x"}}
        assert _schema_admits(Stock, "bounded", arguments) is taken
        if taken:
            await _call(Stock, "bounded", arguments)
        else:
            with pytest.raises(InvalidArgumentError, match=r"should be (greater|less)"):
                await _call(Stock, "bounded", arguments)

    def test_every_format_takes_the_key_names(self) -> None:
        """propertyNames stays where the provider takes JSON Schema, and each provider's SDK
        takes the tool; Gemini's subset has none, so its description says it (validation
        still checks); OpenAI strict mode refuses the map, as any dict[str, ...]."""
        meta = Stock.set_quantities.meta()
        tools = {fmt: export_tools([meta], fmt)[0] for fmt in FORMATS}
        names = {"pattern": INT_KEY_PATTERN}
        assert (
            tools["neutral"]["input_schema"]["properties"]["quantities"]["propertyNames"] == names
        )
        assert (
            tools["anthropic"]["input_schema"]["properties"]["quantities"]["propertyNames"] == names
        )
        assert tools["mcp"]["inputSchema"]["properties"]["quantities"]["propertyNames"] == names
        assert (
            tools["openai"]["function"]["parameters"]["properties"]["quantities"]["propertyNames"]
            == names
        )
        assert (
            tools["openai-responses"]["parameters"]["properties"]["quantities"]["propertyNames"]
            == names
        )
        assert tools["gemini"]["parameters"]["properties"]["quantities"] == {
            "type": "OBJECT",
            "description": (
                f'(keys: {{"pattern": "{INT_KEY_PATTERN}"}}, each value: {{"type": "integer"}})'
            ),
        }
        TypeAdapter(ChatCompletionFunctionToolParam).validate_python(tools["openai"])
        TypeAdapter(FunctionToolParam).validate_python(tools["openai-responses"])
        TypeAdapter(ToolParam).validate_python(tools["anthropic"])
        assert (
            mcp.types.Tool.model_validate(tools["mcp"]).model_dump(
                mode="json", exclude_none=True, by_alias=True
            )
            == tools["mcp"]
        )
        if GEMINI_SDK:  # google-genai needs Python 3.11+ (tests/support.py)
            declaration = gemini_types.FunctionDeclaration.model_validate(tools["gemini"])
            dumped = declaration.model_dump(mode="json", exclude_none=True, by_alias=True)
            assert dumped == tools["gemini"]
        for fmt in ("openai", "openai-responses"):
            with pytest.raises(ValueError, match="keys not named in advance"):
                export_tools([meta], fmt, strict=True)


class TestKeysNoJsonTextNamesOneWay:
    @pytest.mark.parametrize(
        ("annotation", "name"),
        [
            (dict[float, int], "float"),
            (dict[decimal.Decimal, int], "Decimal"),
            (dict[uuid.UUID, int], "UUID"),
            (dict[datetime.date, int], "date"),
            (list[dict[int | None, int]], "int | None"),
            (collections.Counter[float] | None, "float"),
        ],
    )
    def test_they_are_named(self, annotation: Any, name: str) -> None:
        """Keys several texts read as one ("1.5", "1.50", "15e-1") are a declaration error,
        naming the type and the way out."""
        from llm_worker._codegen.json_keys import mapping_key_problem

        assert mapping_key_problem(annotation) == (
            f"its dict keys are {name}, and a JSON object's keys are text that several "
            f"spellings of one {name} would be read into, keeping one value and losing the "
            f"others; use str keys (dict[str, ...]), or int, bool, Literal or Enum keys"
        )

    def test_a_tool_taking_them_is_not_declared(self) -> None:
        """The registry names the parameter and the problem; nothing half-built is left."""

        class Measures:
            async def record(self, by_ratio: dict[float, int], ok: dict[int, int]) -> str:
                """Record."""
                return ""

        Measures.record = tool(Measures.record)  # type: ignore[method-assign]
        with pytest.raises(TypeError) as caught:
            tool_registry(Measures)
        assert str(caught.value).splitlines()[1:] == [
            "  record: parameter 'by_ratio': its dict keys are float, and a JSON object's keys "
            "are text that several spellings of one float would be read into, keeping one "
            "value and losing the others; use str keys (dict[str, ...]), or int, bool, "
            "Literal or Enum keys"
        ]

    @pytest.mark.parametrize(
        ("annotation", "multiple"),
        [
            (dict[Annotated[int, Field(multiple_of=2)], int], "2"),
            (dict[Annotated[int, Field(ge=0, multiple_of=5)], int] | None, "5"),
        ],
    )
    def test_a_multiple_of_on_int_keys_is_named(self, annotation: Any, multiple: str) -> None:
        """No pattern says "a multiple of 2" well: the schema would let "3" through."""
        from llm_worker._codegen.json_keys import mapping_key_problem

        assert mapping_key_problem(annotation) == (
            f"its dict keys are ints that are multiples of {multiple}, which a schema cannot "
            f"say of a JSON object's keys (text); drop multiple_of from the keys and check "
            f"them in the method"
        )

    @pytest.mark.parametrize(
        "annotation",
        [
            dict[str, float],
            dict[int, float],
            dict[Annotated[int, Field(ge=0, lt=10)], float],
            dict[Literal[Colour.RED], int],
            dict[bool, int],
            dict[Level, int],
            dict[Flavour, int],
            dict[Literal["a", 1], int],
            dict[Annotated[str, Field(min_length=1)], int],
            dict[Any, int],
            list[float],
        ],
    )
    def test_the_others_are_not(self, annotation: Any) -> None:
        from llm_worker._codegen.json_keys import mapping_key_problem

        assert mapping_key_problem(annotation) is None
