"""What the run stream says of its requests and calls, where a reader or the client does
something unusual: a call the client never stopped, a reader leaving at
``ResponseStarted``, a retry of a history set by hand."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from llm_worker import (
    Completion,
    Limits,
    LlmEvent,
    LlmRequest,
    ResponseCompleted,
    ResponseStarted,
    RunEvent,
    TextDelta,
    ToolCall,
    ToolCallReady,
    ToolCallRunning,
    ToolInputDelta,
    ToolUseStart,
    ToolUseStop,
    UsageLimitExceededError,
    UserMessage,
    Worker,
    tool,
    tool_registry,
)
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

pytestmark = pytest.mark.anyio


@tool_registry
class Echo:
    @tool
    async def echo(self, x: int) -> str:
        """Say x."""
        return str(x)


class Unstopped:
    """A client whose first response's calls end with the Completion, not a ToolUseStop
    (the second call is stopped)."""

    def __init__(self) -> None:
        self.requests = 0

    async def stream(self, request: LlmRequest) -> AsyncIterator[LlmEvent]:
        self.requests += 1
        if self.requests == 1:
            yield ToolUseStart(0, "c0", "echo")
            yield ToolUseStart(1, "c1", "echo")
            yield ToolInputDelta(0, '{"x": 0}')
            yield ToolInputDelta(1, '{"x": 1}')
            yield ToolUseStop(1)
            yield ToolUseStart(2, "c2", "echo")
            yield ToolInputDelta(2, '{"x": 2}')
            yield Completion("tool_use")
        else:
            yield TextDelta("done")
            yield Completion("end_turn")


async def events_of(worker: Worker, user_input: str = "go") -> list[RunEvent]:
    with anyio.fail_after(5):
        async with worker.run_stream(user_input) as stream:
            return [event async for event in stream]


async def test_a_call_the_completion_ended_is_ready_before_the_response_completes():
    """It ran without a ToolCallReady: a reader keyed on that event never saw it."""
    worker = Worker(Unstopped())
    worker.register_tools([Echo().echo.definition()])
    events = await events_of(worker)
    first_response = events[
        : next(i for i, e in enumerate(events) if isinstance(e, ResponseCompleted)) + 1
    ]
    ready = [e for e in first_response if isinstance(e, ToolCallReady)]
    assert ready == [
        ToolCallReady(1, ToolCall("c1", "echo", '{"x": 1}')),  # at its stop
        ToolCallReady(0, ToolCall("c0", "echo", '{"x": 0}')),  # then those the Completion ended
        ToolCallReady(2, ToolCall("c2", "echo", '{"x": 2}')),
    ]
    assert isinstance(first_response[-2], ToolCallReady)  # just before ResponseCompleted
    running = [e.call.id for e in events if isinstance(e, ToolCallRunning)]
    assert running == ["c0", "c1", "c2"]


@pytest.mark.parametrize("leave", ["break", "cancel"])
async def test_leaving_at_response_started_sends_nothing_and_uses_no_number(leave: str):
    client = ScriptedClient(["hello", "again"])
    worker = Worker(client)
    with anyio.fail_after(5):
        with anyio.CancelScope() as scope:
            async with worker.run_stream("go") as stream:
                async for event in stream:
                    assert event == ResponseStarted(1)
                    if leave == "break":
                        break
                    scope.cancel()
                    await anyio.lowlevel.checkpoint()
        assert client.requests == []
        async with worker.retry_stream() as stream:
            numbers = [e.request async for e in stream if isinstance(e, ResponseStarted)]
    assert numbers == [1]
    assert len(client.requests) == 1


async def test_a_retry_after_set_history_counts_from_nothing():
    """A run that hit max_requests, then a history set by hand: its retry raised
    UsageLimitExceededError at once, charged the earlier run's requests."""
    calls = [ScriptedResponse(tool_calls=[ScriptedCall("echo", {"x": n})]) for n in range(3)]
    worker = Worker(ScriptedClient([*calls, "fresh answer"]), limits=Limits(max_requests=2))
    worker.register_tools([Echo().echo.definition()])
    with anyio.fail_after(5):
        with pytest.raises(UsageLimitExceededError):
            await worker.run("loop")
        assert worker.run_usage.requests == 2
        worker.set_history([UserMessage("start over")])
        assert worker.run_usage.requests == 0
        async with worker.retry_stream() as stream:
            numbers = [e.request async for e in stream if isinstance(e, ResponseStarted)]
    assert numbers == [1, 2]  # the third call's response, then the answer
    assert worker.usage.requests == 4  # the conversation's total keeps every request
