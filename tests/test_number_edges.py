"""Numbers at the edges of a float: ``NaN``, infinities and ints past a float's range.

- a run's structured answer holding ``NaN``, ``Infinity`` or ``1e400`` is refused as a
  tool's arguments are, and the model is asked again (``_output.py``);
- a timeout no float can hold (``10**400``) is refused when it is set, and one past
  ``NO_LIMIT_PAST`` is kept as ``math.inf`` (``_limits.py``, ``_options.py``);
- ``ToolContext.report_progress`` refuses a ``bool`` and an int past a float's range
  with the errors its docstring names (``_context.py``).
"""

from __future__ import annotations

import dataclasses
import math
import re
from datetime import timedelta
from typing import Annotated, Any

import anyio
import pytest
from pydantic import BaseModel, BeforeValidator
from support import collect, results_of

from llm_worker import (
    Approve,
    Limits,
    OutputValidationError,
    RunState,
    RunStateError,
    ToolCallProgress,
    ToolContext,
    UserMessage,
    Worker,
    WorkerResult,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker._limits import NO_LIMIT_PAST
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

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
    does not come back as the run's output."""
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
    worker.load_state(RunState.from_json(saved.replace("3.25", "NaN")))
    with anyio.fail_after(10), pytest.raises(RunStateError, match=re.escape("(found NaN)")):
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

    assert output_shape(output_type).admits_non_finite is looked_at


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
