"""Structured final output (``output_type=``, ``_output.py``): native and through the
``final_result`` tool; valid, invalid then fixed, invalid past the retries."""

from __future__ import annotations

import json
from dataclasses import dataclass

import anyio
import pytest
from pydantic import BaseModel, ConfigDict, Field, computed_field
from support import Lab, assert_history_valid, calls, results_of

from llm_worker import (
    LlmRequest,
    OutputValidationError,
    RunFinished,
    ToolResult,
    UserMessage,
    Worker,
    WorkerResult,
    WorkerStateError,
    tool_definitions,
)
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

pytestmark = pytest.mark.anyio


class Weather(BaseModel):
    city: str
    celsius: float


@dataclass
class Point:
    x: int
    y: int


def worker_for(client: ScriptedClient, **options: object) -> Worker:
    worker: Worker = Worker(client, **options)  # type: ignore[arg-type]
    worker.register_tools(tool_definitions(Lab()))
    return worker


async def run(worker: Worker, prompt: str = "weather in Oslo?", **options: object) -> WorkerResult:
    with anyio.fail_after(10):
        return await worker.run(prompt, **options)  # type: ignore[arg-type]


# -- native: the client constrains the answer, the worker validates the text ---------------


async def test_a_native_answer_is_validated_into_the_output_type() -> None:
    client = ScriptedClient(['{"city": "Oslo", "celsius": 3.5}'])
    worker = worker_for(client, output_type=Weather)
    assert await run(worker) is WorkerResult.FINISHED
    assert worker.output == Weather(city="Oslo", celsius=3.5)
    (request,) = client.requests
    assert request.output_format is not None
    assert request.output_format.name == "Weather"
    assert request.output_format.schema == Weather.model_json_schema()
    assert [d.name for d in request.tools] == ["echo", "fail", "nap"]  # no extra tool
    assert request.tool_choice == "auto"


async def test_an_invalid_native_answer_goes_back_with_its_errors_and_the_fix_is_taken() -> None:
    client = ScriptedClient(['{"city": "Oslo"}', '{"city": "Oslo", "celsius": 1}'])
    worker = worker_for(client, output_type=Weather)
    assert await run(worker) is WorkerResult.FINISHED
    assert worker.output == Weather(city="Oslo", celsius=1)
    told = client.requests[1].messages[-1]
    assert isinstance(told, UserMessage)
    assert told.text == (
        "Your final answer does not match the required format: 'celsius': missing required "
        "argument. Answer again, with only the corrected answer."
    )
    assert_history_valid(worker.history)


async def test_text_that_is_not_json_is_sent_back_too() -> None:
    client = ScriptedClient(["It is 3 degrees.", '{"city": "Oslo", "celsius": 3}'])
    worker = worker_for(client, output_type=Weather)
    assert await run(worker) is WorkerResult.FINISHED
    told = client.requests[1].messages[-1]
    assert isinstance(told, UserMessage)
    assert "input is not valid JSON (expected ident at line 1 column 2)" in told.text


async def test_an_answer_still_invalid_after_the_retries_fails_the_run() -> None:
    client = ScriptedClient(["{}", '{"city": 1}', '{"celsius": "hot"}'])
    worker = worker_for(client, output_type=Weather, output_retries=2)
    with pytest.raises(OutputValidationError) as caught:
        await run(worker)
    error = caught.value
    assert error.attempts == 3
    assert "'celsius': Input should be a valid number" in error.problems
    assert str(error).startswith(
        "The model's final answer did not match the output type after 3 attempts: "
    )
    assert len(client.requests) == 3
    with pytest.raises(WorkerStateError, match="no run of this worker has finished"):
        _ = worker.output
    assert_history_valid(worker.history)


async def test_a_non_object_type_is_asked_for_wrapped_and_given_back_unwrapped() -> None:
    client = ScriptedClient(['{"result": [3, 1, 2]}'])
    worker = worker_for(client)
    assert await run(worker, output_type=list[int]) is WorkerResult.FINISHED
    assert worker.output == [3, 1, 2]
    output_format = client.requests[0].output_format
    assert output_format is not None
    assert output_format.name == "list"
    assert output_format.schema["properties"]["result"] == {
        "type": "array",
        "items": {"type": "integer"},
    }


async def test_tool_calls_run_as_usual_before_the_structured_answer() -> None:
    client = ScriptedClient([calls(("echo", {"text": "hi"})), '{"x": 1, "y": 2}'])
    worker = worker_for(client)
    assert await run(worker, output_type=Point) is WorkerResult.FINISHED
    assert worker.output == Point(1, 2)
    assert [r.content for r in results_of(worker.history)] == ["hi"]


async def test_the_stream_ends_with_the_output_and_types_it() -> None:
    client = ScriptedClient(['{"city": "Oslo", "celsius": 2}'])
    worker = worker_for(client)
    with anyio.fail_after(10):
        async with worker.run_stream("?", output_type=Weather) as stream:
            events = [event async for event in stream]
    assert events[-1] == RunFinished(
        '{"city": "Oslo", "celsius": 2}', Weather(city="Oslo", celsius=2)
    )
    weather: Weather = stream.output
    assert weather.celsius == 2
    # A later run's answer is the worker's; the stream keeps its own (it gave the later one).
    client.add('{"b": 2}')
    assert await run(worker, output_type=dict[str, int]) is WorkerResult.FINISHED
    assert worker.output == {"b": 2}
    assert stream.output == Weather(city="Oslo", celsius=2)


async def test_a_run_without_output_type_has_its_text_as_output() -> None:
    client = ScriptedClient(["plain answer"])
    worker = worker_for(client)
    with pytest.raises(WorkerStateError):
        _ = worker.output
    assert await run(worker) is WorkerResult.FINISHED
    assert worker.output == "plain answer"
    assert client.requests[0].output_format is None


class ByValidationAlias(BaseModel):
    city: str = Field(validation_alias="City")


class BySerializationAlias(BaseModel):
    city: str = Field(serialization_alias="Town")


class WithComputed(BaseModel):
    model_config = ConfigDict(extra="forbid")
    celsius: float

    @computed_field  # type: ignore[prop-decorator]
    @property
    def fahrenheit(self) -> float:
        return self.celsius * 9 / 5 + 32


@pytest.mark.parametrize("native", [True, False], ids=["native", "final_result"])
@pytest.mark.parametrize(
    ("output_type", "keys", "expected"),
    [
        (ByValidationAlias, ["City"], ByValidationAlias(City="Oslo")),  # type: ignore[call-arg]
        (BySerializationAlias, ["city"], BySerializationAlias(city="Oslo")),
        (WithComputed, ["celsius"], WithComputed(celsius=10)),
    ],
    ids=["validation_alias", "serialization_alias", "computed_field"],
)
async def test_the_schema_sent_names_the_keys_the_answer_is_validated_with(
    native: bool, output_type: type[BaseModel], keys: list[str], expected: BaseModel
) -> None:
    """The model is sent the validation-mode schema: an answer with exactly its required
    keys validates (the serialization-mode one named a serialization_alias, not a
    validation_alias, and required a computed field the model then cannot give)."""

    def answer(schema: dict[str, object]) -> dict[str, object]:
        assert schema["required"] == keys
        return {key: "Oslo" if key.lower() == "city" else 10 for key in keys}

    def step(request: LlmRequest) -> str | ScriptedResponse:
        if native:
            assert request.output_format is not None
            return json.dumps(answer(request.output_format.schema))
        (tool,) = [d for d in request.tools if d.name == "final_result"]
        return final(answer(tool.input_schema))

    client = ScriptedClient([step], supports_output_format=native)
    worker = worker_for(client, output_type=output_type, output_retries=0)
    assert await run(worker) is WorkerResult.FINISHED
    assert worker.output == expected


def test_a_tools_output_schema_stays_the_serialization_one() -> None:
    """A tool's result is dumped, not validated: its outputSchema names what the dump has."""
    from llm_worker._output_schema import tool_output_schema

    assert tool_output_schema(BySerializationAlias) == {
        "properties": {"Town": {"title": "Town", "type": "string"}},
        "required": ["Town"],
        "title": "BySerializationAlias",
        "type": "object",
    }
    computed = tool_output_schema(WithComputed)
    assert computed is not None
    assert computed["required"] == ["celsius", "fahrenheit"]


# -- through the final_result tool: for a client without native structured output ----------


def final(arguments: dict[str, object] | str, call_id: str = "f1") -> ScriptedResponse:
    return ScriptedResponse(tool_calls=[ScriptedCall("final_result", arguments, call_id)])


async def test_without_native_output_the_answer_comes_through_the_final_result_tool() -> None:
    client = ScriptedClient([final({"city": "Oslo", "celsius": 4})], supports_output_format=False)
    worker = worker_for(client, output_type=Weather)
    assert await run(worker) is WorkerResult.FINISHED
    assert worker.output == Weather(city="Oslo", celsius=4)
    (request,) = client.requests
    assert request.output_format is None
    assert [d.name for d in request.tools] == ["echo", "fail", "nap", "final_result"]
    assert request.tools[-1].input_schema == Weather.model_json_schema()
    assert request.tool_choice == "required"
    # the call has its result, so the history is one a provider takes back
    assert results_of(worker.history) == [ToolResult("f1", "Final answer received.")]
    assert_history_valid(worker.history)


async def test_a_bad_final_result_call_gets_its_errors_as_an_error_result() -> None:
    client = ScriptedClient(
        [final({"city": "Oslo"}), final({"city": "Oslo", "celsius": 5}, "f2")],
        supports_output_format=False,
    )
    worker = worker_for(client, output_type=Weather)
    assert await run(worker) is WorkerResult.FINISHED
    assert worker.output == Weather(city="Oslo", celsius=5)
    first, second = results_of(worker.history)
    assert first.is_error
    assert "'celsius': missing required argument" in first.content
    assert second == ToolResult("f2", "Final answer received.")


async def test_plain_text_instead_of_the_tool_is_sent_back() -> None:
    client = ScriptedClient(
        ["It is 3 degrees", final({"city": "Oslo", "celsius": 3})], supports_output_format=False
    )
    worker = worker_for(client, output_type=Weather)
    assert await run(worker) is WorkerResult.FINISHED
    told = client.requests[1].messages[-1]
    assert told == UserMessage(
        "Your final answer does not match the required format: give your final answer by "
        "calling the tool 'final_result', not as text. Answer again, with only the "
        "corrected answer."
    )


async def test_other_calls_of_the_answering_response_still_run() -> None:
    client = ScriptedClient(
        [
            ScriptedResponse(
                tool_calls=[
                    ScriptedCall("echo", {"text": "logged"}, "e1"),
                    ScriptedCall("final_result", {"result": [1]}, "f1"),
                ]
            )
        ],
        supports_output_format=False,
    )
    worker = worker_for(client, output_type=list[int])
    assert await run(worker) is WorkerResult.FINISHED
    assert worker.output == [1]
    assert [r.content for r in results_of(worker.history)] == ["logged", "Final answer received."]


async def test_invalid_final_result_calls_past_the_retries_fail_the_run() -> None:
    client = ScriptedClient([final({}), final({}, "f2")], supports_output_format=False)
    worker = worker_for(client, output_type=Weather, output_retries=1)
    with pytest.raises(OutputValidationError) as caught:
        await run(worker)
    assert caught.value.attempts == 2
    assert_history_valid(worker.history)  # the failed call has its result too


async def test_a_valid_answer_after_a_bad_one_in_the_same_response_stands() -> None:
    """Two final_result calls in one response, the first bad: with output_retries=0 the
    second, valid, is the answer (the first valid answer of a response stands, as when it
    comes first); each call keeps its result, and the calls after them run."""
    client = ScriptedClient(
        [
            ScriptedResponse(
                tool_calls=[
                    ScriptedCall("final_result", {"city": "Oslo", "celsius": "hot"}, "f1"),
                    ScriptedCall("echo", {"text": "between"}, "e1"),
                    ScriptedCall("final_result", {"city": "Oslo", "celsius": 7}, "f2"),
                    ScriptedCall("final_result", {"city": "Rome"}, "f3"),
                    ScriptedCall("echo", {"text": "after"}, "e2"),
                ]
            )
        ],
        supports_output_format=False,
    )
    worker = worker_for(client, output_type=Weather, output_retries=0)
    assert await run(worker) is WorkerResult.FINISHED
    assert worker.output == Weather(city="Oslo", celsius=7)
    first, *others = results_of(worker.history)
    assert first.is_error
    assert "'celsius': Input should be a valid number" in first.content
    assert [(r.content, r.is_error) for r in others] == [
        ("between", False),
        ("Final answer received.", False),
        ("Final answer received.", False),
        ("after", False),
    ]
    assert len(client.requests) == 1


async def test_a_response_whose_answers_are_all_bad_fails_after_its_last_one() -> None:
    """No final_result call of the response validates (output_retries=0): the run fails
    with the last one's problems; the calls between them were decided and stop, the call
    after the last answer does not run."""
    client = ScriptedClient(
        [
            ScriptedResponse(
                tool_calls=[
                    ScriptedCall("final_result", {"city": "Oslo"}, "f1"),
                    ScriptedCall("echo", {"text": "between"}, "e1"),
                    ScriptedCall("final_result", {"celsius": 1}, "f2"),
                    ScriptedCall("echo", {"text": "after"}, "e2"),
                ]
            )
        ],
        supports_output_format=False,
    )
    worker = worker_for(client, output_type=Weather, output_retries=0)
    with pytest.raises(OutputValidationError) as caught:
        await run(worker)
    assert caught.value.attempts == 2
    assert caught.value.problems == "'city': missing required argument"
    contents = [r.content for r in results_of(worker.history)]
    assert "'celsius': missing required argument" in contents[0]
    assert contents[1] == "Tool call 'echo' did not run: the run stopped with an error"
    assert "'city': missing required argument" in contents[2]
    assert contents[3] == "Tool call 'echo' did not run: the run stopped with an error"
    assert_history_valid(worker.history)


async def test_the_final_tool_is_always_allowed_and_hooks_never_see_it() -> None:
    seen: list[str] = []
    client = ScriptedClient([final({"city": "Oslo", "celsius": 0})], supports_output_format=False)
    worker = worker_for(client, output_type=Weather)
    worker.add_pre_tool_call_hook(lambda ctx: seen.append(ctx.call.name))
    assert await run(worker, allowed_tools=["echo"]) is WorkerResult.FINISHED
    assert client.requests[0].allowed_tools == ("echo", "final_result")
    assert seen == []


async def test_a_paused_run_gives_its_output_when_resumed() -> None:
    from llm_worker import Approve

    client = ScriptedClient(
        [
            ScriptedResponse(
                tool_calls=[
                    ScriptedCall("echo", {"text": "x"}, "e1"),
                    ScriptedCall("final_result", {"x": 1, "y": 1}, "f1"),
                ]
            )
        ],
        supports_output_format=False,
    )
    worker = Worker(client, output_type=Point)
    worker.register_tools(tool_definitions(Lab()), requires_approval=True)
    assert await run(worker) is WorkerResult.PAUSED
    with pytest.raises(WorkerStateError):
        _ = worker.output
    with anyio.fail_after(10):
        assert await worker.resume(Approve()) is WorkerResult.FINISHED
    assert worker.output == Point(1, 1)
    assert len(client.requests) == 1


# -- refusals -----------------------------------------------------------------------------


def test_a_type_pydantic_cannot_validate_is_refused_when_the_worker_is_made() -> None:
    class Opaque:
        pass

    with pytest.raises(TypeError, match=r"output type .*Opaque cannot be validated") as info:
        Worker(ScriptedClient(), output_type=Opaque)
    # built once: no first failed build's TypeError down the chain
    chained, context = [], info.value.__context__
    while context is not None:
        chained.append(context)
        context = context.__context__
    assert not [error for error in chained if isinstance(error, TypeError)]
    with pytest.raises(ValueError, match="output_retries must be"):
        Worker(ScriptedClient(), output_retries=-1)


def test_a_tool_named_final_result_conflicts_only_without_native_output() -> None:
    from llm_worker import ToolMeta

    class Answer:
        async def execute(self, input_json: str) -> str:
            return ""

    def definition() -> tuple[ToolMeta, Answer]:
        return ToolMeta(name="final_result"), Answer()

    worker = Worker(ScriptedClient(supports_output_format=False), output_type=Weather)
    worker.register_tool(definition)
    with pytest.raises(ValueError, match="tool named 'final_result'"):
        worker.run_stream("?")
    native = Worker(ScriptedClient(), output_type=Weather)
    native.register_tool(definition)
    native.run_stream("?")  # the name is free: nothing is added to the tools


def test_tool_choice_none_cannot_answer_through_a_tool() -> None:
    worker = Worker(ScriptedClient(supports_output_format=False), output_type=Weather)
    with pytest.raises(ValueError, match="tool_choice='none'"):
        worker.run_stream("?", tool_choice="none")


async def test_the_output_type_of_a_run_wins_over_the_workers() -> None:
    client = ScriptedClient(['{"x": 1, "y": 2}', json.dumps({"city": "A", "celsius": 1})])
    worker = worker_for(client, output_type=Weather)
    with anyio.fail_after(10):
        async with worker.run_stream("?", output_type=Point) as stream:
            async for _ in stream:
                pass
    assert stream.output == Point(1, 2)
    # worker.output is typed by the worker's output_type: it does not give a Point.
    with pytest.raises(WorkerStateError, match="given its own output_type"):
        _ = worker.output
    assert await run(worker) is WorkerResult.FINISHED
    assert worker.output == Weather(city="A", celsius=1)


# -- another conversation, a saved pause, the last bad answer ------------------------------


def paused_on_echo(answer: ScriptedResponse | None = None) -> ScriptedResponse:
    """A response whose echo call needs approval (and that may also answer)."""
    calls = [ScriptedCall("echo", {"text": "x"}, "e1")]
    if answer is not None:
        calls += answer.tool_calls
    return ScriptedResponse(tool_calls=calls)


def approving_worker(client: ScriptedClient, output_type: object) -> Worker:
    worker: Worker = Worker(client, output_type=output_type)
    worker.register_tools(tool_definitions(Lab()), requires_approval=True)
    return worker


async def test_a_loaded_paused_run_is_answered_afresh_not_with_an_earlier_runs_output() -> None:
    """A worker that finished a run, then loads another conversation's pause: resuming
    sends the tool's result to the model and takes its answer, not the earlier one."""
    from llm_worker import Approve, RunState

    saving = approving_worker(ScriptedClient([paused_on_echo()]), Weather)
    assert await run(saving) is WorkerResult.PAUSED
    saved = saving.state.to_json()
    client = ScriptedClient(['{"city": "Oslo", "celsius": 1}', '{"city": "Rome", "celsius": 20}'])
    worker = approving_worker(client, Weather)
    assert await run(worker, "first user") is WorkerResult.FINISHED
    worker.load_state(RunState.from_json(saved))
    with anyio.fail_after(10):
        assert await worker.resume(Approve()) is WorkerResult.FINISHED
    assert worker.output == Weather(city="Rome", celsius=20)
    assert len(client.requests) == 2
    assert isinstance(client.requests[1].messages[-1], ToolResult)  # the model got the result


async def test_set_history_then_retry_asks_the_model_for_the_new_conversations_answer() -> None:
    client = ScriptedClient(
        [
            '{"city": "Oslo", "celsius": 1}',
            ScriptedResponse(tool_calls=[ScriptedCall("echo", {"text": "x"}, "e1")]),
            '{"city": "Rome", "celsius": 20}',
        ]
    )
    worker = worker_for(client, output_type=Weather)
    assert await run(worker) is WorkerResult.FINISHED
    worker.set_history([UserMessage("weather in Rome?")])
    with anyio.fail_after(10):
        assert await worker.retry() is WorkerResult.FINISHED
    assert worker.output == Weather(city="Rome", celsius=20)
    assert len(client.requests) == 3


async def test_an_answer_accepted_before_a_pause_survives_saving_and_loading() -> None:
    """The response answered through final_result and made a call that needs approval:
    after saving, loading into a fresh worker and approving, the answer stands and the
    model is not asked again."""
    from llm_worker import Approve, RunState

    answer = final({"x": 1, "y": 2})
    first = ScriptedClient([paused_on_echo(answer)], supports_output_format=False)
    saving = approving_worker(first, Point)
    assert await run(saving) is WorkerResult.PAUSED
    saved = saving.state.to_json()
    client = ScriptedClient([final({"x": 9, "y": 9})], supports_output_format=False)
    worker = approving_worker(client, Point)
    worker.load_state(RunState.from_json(saved))
    with anyio.fail_after(10):
        assert await worker.resume(Approve()) is WorkerResult.FINISHED
    assert worker.output == Point(1, 2)
    assert client.requests == []


async def test_a_saved_final_result_answer_stands_in_a_worker_that_answers_natively() -> None:
    """The run that paused answered through final_result (a client without native output,
    a DurableWorker); the worker that loads the state answers natively: the answer the
    model was told was received still stands, validated into the loading worker's type."""
    from llm_worker import Approve, RunState

    first = ScriptedClient([paused_on_echo(final({"x": 1, "y": 2}))], supports_output_format=False)
    saving = approving_worker(first, Point)
    assert await run(saving) is WorkerResult.PAUSED
    saved = saving.state.to_json()
    client = ScriptedClient(['{"x": 9, "y": 9}'], supports_output_format=True)
    worker = approving_worker(client, Point)
    worker.load_state(RunState.from_json(saved))
    with anyio.fail_after(10):
        assert await worker.resume(Approve()) is WorkerResult.FINISHED
    assert worker.output == Point(1, 2)
    assert client.requests == []


async def test_a_saved_call_to_the_loading_workers_own_final_result_tool_is_no_answer() -> None:
    """A natively answering worker may have a tool named final_result: a saved call of
    that name is then a call of its tool, not an answer, and the model is asked on."""
    from llm_worker import Approve, RunState, RunStateWarning, ToolMeta

    class Own:
        async def execute(self, input_json: str) -> str:
            return "own"

    first = ScriptedClient([paused_on_echo(final({"x": 1, "y": 2}))], supports_output_format=False)
    saving = approving_worker(first, Point)
    assert await run(saving) is WorkerResult.PAUSED
    client = ScriptedClient(['{"x": 3, "y": 4}'], supports_output_format=True)
    worker = approving_worker(client, Point)
    worker.register_tool(lambda: (ToolMeta(name="final_result"), Own()))
    with pytest.warns(RunStateWarning):  # the saving worker had no such tool
        worker.load_state(RunState.from_json(saving.state.to_json()))
    with anyio.fail_after(10):
        assert await worker.resume(Approve()) is WorkerResult.FINISHED
    assert worker.output == Point(3, 4)
    assert len(client.requests) == 1


@pytest.mark.parametrize("saved", [False, True], ids=["in-process", "saved-and-loaded"])
async def test_answers_that_failed_before_a_pause_count_after_it(saved: bool) -> None:
    """One bad answer, then a pause (output_retries=1): after resuming, one more bad
    answer ends the run, whether the pause was saved and loaded or not (a loaded run
    had its retries anew)."""
    from llm_worker import Approve, RunState

    bad = '{"city": "Oslo"}'
    script: list[str | ScriptedResponse] = [bad, paused_on_echo(), bad, bad]
    client = ScriptedClient(script)
    worker = approving_worker(client, Weather)
    assert await run(worker) is WorkerResult.PAUSED
    if saved:
        state = RunState.from_json(worker.state.to_json())
        assert state.output_attempts == 1
        client = ScriptedClient(script[2:])
        worker = approving_worker(client, Weather)
        worker.load_state(state)
    with anyio.fail_after(10), pytest.raises(OutputValidationError) as info:
        await worker.resume(Approve())
    assert info.value.attempts == 2
    assert len(client.requests) == (1 if saved else 3)
    assert_history_valid(worker.history)


def test_a_state_without_output_attempts_reads_as_none_failed() -> None:
    from llm_worker import RunState

    saved = json.loads(_paused_state_json())
    del saved["paused"]["output_attempts"]
    assert RunState.from_json(json.dumps(saved)).output_attempts == 0
    saved["paused"]["output_attempts"] = -1
    from llm_worker import RunStateError

    with pytest.raises(RunStateError, match="output_attempts"):
        RunState.from_json(json.dumps(saved))


def _paused_state_json() -> str:
    worker = approving_worker(ScriptedClient([paused_on_echo()]), Weather)
    anyio.run(worker.run, "weather?")
    return worker.state.to_json()


@pytest.mark.parametrize("native", [False, True], ids=["final_result", "native"])
async def test_a_saved_answer_that_does_not_fit_the_loading_workers_type_is_refused_at_load(
    native: bool,
) -> None:
    """Loaded, the worker could neither resume nor deny (the answer cannot be its output)
    nor be given another history: load_state() refuses the state, and nothing is loaded."""
    from llm_worker import Deny, RunState, RunStateError

    first = ScriptedClient([paused_on_echo(final({"x": 1, "y": 2}))], supports_output_format=False)
    saving = approving_worker(first, Point)
    assert await run(saving) is WorkerResult.PAUSED
    answer: str | ScriptedResponse = '{"city": "Oslo", "celsius": 1}'
    if not native:
        answer = final({"city": "Oslo", "celsius": 1}, "f2")
    worker = approving_worker(ScriptedClient([answer], supports_output_format=native), Weather)
    state = RunState.from_json(saving.state.to_json())
    with pytest.raises(
        RunStateError,
        match=r"the paused run's answer \(its 'final_result' call 'f1'\) does not fit this "
        r"worker's output_type: 'city': missing required argument",
    ):
        worker.load_state(state)
    assert not worker.is_paused  # nothing loaded: the worker is as it was
    assert worker.history == ()
    with pytest.raises(WorkerStateError, match="Nothing to resume"):
        await worker.resume(Deny("give up"))
    assert await run(worker) is WorkerResult.FINISHED
    assert worker.output == Weather(city="Oslo", celsius=1)


async def test_the_last_bad_native_answer_is_told_too_and_retry_asks_again() -> None:
    answers = ['{"city": "Oslo"}', '{"city": "Oslo"}', '{"city": "Oslo", "celsius": 3}']
    client = ScriptedClient(answers)
    worker = worker_for(client, output_type=Weather, output_retries=1)
    with pytest.raises(OutputValidationError) as caught:
        await run(worker)
    assert caught.value.attempts == 2
    told = worker.history[-1]
    assert isinstance(told, UserMessage)
    assert told.text.startswith("Your final answer does not match the required format: 'celsius'")
    with anyio.fail_after(10):
        assert await worker.retry() is WorkerResult.FINISHED  # the retries renewed
    assert worker.output == Weather(city="Oslo", celsius=3)
    assert_history_valid(worker.history)


async def test_the_last_bad_final_result_call_reads_what_was_wrong_and_retry_asks_again() -> None:
    client = ScriptedClient(
        [
            ScriptedResponse(
                tool_calls=[
                    ScriptedCall("final_result", {}, "f1"),
                    ScriptedCall("echo", {"text": "after"}, "e1"),
                ]
            ),
            final({"city": "Oslo", "celsius": 3}, "f2"),
        ],
        supports_output_format=False,
    )
    worker = worker_for(client, output_type=Weather, output_retries=0)
    with pytest.raises(OutputValidationError):
        await run(worker)
    contents = [r.content for r in results_of(worker.history)]
    assert contents[0].startswith("Your final answer does not match the required format: ")
    assert contents[1] == "Tool call 'echo' did not run: the run stopped with an error"
    with anyio.fail_after(10):
        assert await worker.retry() is WorkerResult.FINISHED
    assert worker.output == Weather(city="Oslo", celsius=3)


async def test_retry_after_a_stopped_response_that_answered_asks_for_a_new_answer() -> None:
    """A response answered through final_result beside a call a post-hook aborted on: the
    retried run ended at its first tool-calling response with that old answer, the new
    call's result never sent. It asks the model, and takes its new answer."""
    from llm_worker import Abort, WorkerAbortedError

    client = ScriptedClient(
        [
            ScriptedResponse(
                tool_calls=[
                    ScriptedCall("final_result", {"city": "Old", "celsius": 1}, "f1"),
                    ScriptedCall("echo", {"text": "audit"}, "e1"),
                ]
            ),
            ScriptedResponse(tool_calls=[ScriptedCall("echo", {"text": "again"}, "e2")]),
            final({"city": "Oslo", "celsius": 3}, "f2"),
        ],
        supports_output_format=False,
    )
    worker = worker_for(client, output_type=Weather)
    worker.add_post_tool_call_hook(
        lambda ctx: Abort("audit failed") if ctx.call.id == "e1" else None
    )
    with pytest.raises(WorkerAbortedError):
        await run(worker)
    with anyio.fail_after(10):
        assert await worker.retry() is WorkerResult.FINISHED
    assert worker.output == Weather(city="Oslo", celsius=3)
    assert len(client.requests) == 3
    assert results_of(client.requests[2].messages)[-1] == ToolResult("e2", "again")
