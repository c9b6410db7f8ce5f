"""The LlmClient event protocol (``_client.py``) as the Worker assembles it.

A tiny hand-written ``LlmClient`` yields exactly the events each test gives it, so
fragments, interleavings and broken streams can be fed to a real ``Worker``.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import assert_history_valid

from llm_worker import (
    AssistantMessage,
    Completion,
    LlmClientError,
    LlmEvent,
    LlmRequest,
    ProviderError,
    TextDelta,
    ToolCall,
    ToolInputDelta,
    ToolMeta,
    ToolResult,
    ToolUseStart,
    ToolUseStop,
    Usage,
    UserMessage,
    Worker,
    WorkerError,
    WorkerResult,
)


class EventClient:
    """An LlmClient whose n-th stream yields the n-th list of events, as given."""

    def __init__(self, *responses: Sequence[object]) -> None:
        self.responses = list(responses)
        self.requests: list[LlmRequest] = []
        self.closed = 0

    async def stream(self, request: LlmRequest) -> AsyncIterator[LlmEvent]:
        events = self.responses[len(self.requests)]
        self.requests.append(request)
        try:
            for event in events:
                yield event  # type: ignore[misc]
        finally:
            self.closed += 1


class Recorder:
    """A hand-written Tool that returns the input it got."""

    def __init__(self) -> None:
        self.inputs: list[str] = []

    async def execute(self, input_json: str) -> str:
        self.inputs.append(input_json)
        return f"got {input_json}"


def make_worker(client: EventClient) -> tuple[Worker, Recorder]:
    recorder = Recorder()
    worker = Worker(client)
    worker.register_tool(lambda: (ToolMeta(name="rec"), recorder))
    worker.register_tool(lambda: (ToolMeta(name="other"), recorder))
    return worker, recorder


FINAL = [TextDelta("done"), Completion("end_turn")]


class TestLlmClientProtocol:
    def test_events_are_frozen_values(self):
        """Events compare by value and cannot be changed."""
        assert ToolUseStart(0, "c", "x") == ToolUseStart(0, "c", "x")
        assert Completion("end_turn").usage is None
        with pytest.raises(AttributeError):
            TextDelta("a").text = "b"  # type: ignore[misc]


class TestAssembly:
    @pytest.mark.anyio
    async def test_text_stop_reason_and_usage(self):
        """Text deltas are joined; the Completion's stop reason and usage are kept."""
        usage = Usage(input_tokens=12, output_tokens=3)
        client = EventClient(
            [TextDelta("Hel"), TextDelta(""), TextDelta("lo"), Completion("max_tokens", usage)]
        )
        worker, _ = make_worker(client)
        assert await worker.run("hi") is WorkerResult.FINISHED
        message = worker.history[-1]
        assert message == AssistantMessage("Hello", (), "max_tokens")
        assert isinstance(message, AssistantMessage)
        assert message.usage == usage
        assert client.closed == 1

    @pytest.mark.anyio
    async def test_fragments_of_one_call_are_joined(self):
        """Input fragments of a call are joined in order, wherever they were split."""
        client = EventClient(
            [
                ToolUseStart(0, "c1", "rec"),
                ToolInputDelta(0, '{"q": "caf'),
                ToolInputDelta(0, "\\u00"),
                ToolInputDelta(0, 'e9"'),
                ToolInputDelta(0, ""),
                ToolInputDelta(0, "}"),
                ToolUseStop(0),
                Completion("tool_use"),
            ],
            FINAL,
        )
        worker, recorder = make_worker(client)
        await worker.run("go")
        assert recorder.inputs == ['{"q": "caf\\u00e9"}']
        assert worker.history[1] == AssistantMessage(
            "", (ToolCall("c1", "rec", '{"q": "caf\\u00e9"}'),), "tool_use"
        )

    @pytest.mark.anyio
    async def test_interleaved_fragments_are_told_apart_by_index(self):
        """Fragments of different calls may interleave; index tells them apart."""
        client = EventClient(
            [
                TextDelta("Calling "),
                ToolUseStart(0, "a", "rec"),
                ToolUseStart(1, "b", "other"),
                ToolInputDelta(1, '{"n"'),
                ToolInputDelta(0, '{"m"'),
                TextDelta("two."),
                ToolInputDelta(0, ": 1}"),
                ToolUseStop(0),
                ToolInputDelta(1, ": 2}"),
                ToolUseStop(1),
                Completion("tool_use"),
            ],
            FINAL,
        )
        worker, recorder = make_worker(client)
        await worker.run("go")
        assert worker.history[1] == AssistantMessage(
            "Calling two.",
            (ToolCall("a", "rec", '{"m": 1}'), ToolCall("b", "other", '{"n": 2}')),
            "tool_use",
        )
        assert sorted(recorder.inputs) == ['{"m": 1}', '{"n": 2}']
        assert worker.history[2:4] == (
            ToolResult("a", 'got {"m": 1}'),
            ToolResult("b", 'got {"n": 2}'),
        )

    @pytest.mark.anyio
    async def test_calls_keep_the_order_they_started_in(self):
        """Tool calls are listed in the order their ToolUseStart events arrived."""
        client = EventClient(
            [
                ToolUseStart(5, "x", "rec"),
                ToolUseStart(2, "y", "rec"),
                ToolUseStop(2),
                ToolUseStop(5),
                Completion("tool_use"),
            ],
            FINAL,
        )
        worker, _ = make_worker(client)
        await worker.run("go")
        assert [c.id for c in worker.history[1].tool_calls] == ["x", "y"]  # type: ignore[union-attr]
        assert_history_valid(worker.history)

    @pytest.mark.anyio
    async def test_call_without_fragments_has_empty_input(self):
        """A call whose input never arrives has input_json "" (the tool reads it as {})."""
        client = EventClient(
            [ToolUseStart(0, "c", "rec"), ToolUseStop(0), Completion("tool_use")], FINAL
        )
        worker, recorder = make_worker(client)
        await worker.run("go")
        assert recorder.inputs == [""]

    @settings(max_examples=100, deadline=None)
    @given(
        first=st.text(),
        second=st.text(),
        cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=12),
        order=st.randoms(use_true_random=False),
    )
    @pytest.mark.anyio
    async def test_any_split_and_interleaving_reassembles(self, first, second, cuts, order):
        """Input split at any points, with two calls' fragments shuffled, reassembles exactly."""

        def split(text: str) -> list[str]:
            points = sorted({min(c, len(text)) for c in cuts})
            bounds = [0, *points, len(text)]
            return [text[a:b] for a, b in itertools.pairwise(bounds)]

        pieces = [
            [ToolInputDelta(0, p) for p in split(first)],
            [ToolInputDelta(1, p) for p in split(second)],
        ]
        merged: list[object] = []
        while pieces[0] or pieces[1]:
            lane = order.choice([i for i in (0, 1) if pieces[i]])
            merged.append(pieces[lane].pop(0))
        client = EventClient(
            [
                ToolUseStart(0, "a", "rec"),
                ToolUseStart(1, "b", "rec"),
                *merged,
                ToolUseStop(1),
                ToolUseStop(0),
                Completion("tool_use"),
            ],
            FINAL,
        )
        worker, recorder = make_worker(client)
        await worker.run("go")
        calls = worker.history[1].tool_calls  # type: ignore[union-attr]
        assert [c.input_json for c in calls] == [first, second]
        assert sorted(recorder.inputs) == sorted([first, second])


BROKEN_STREAMS = [
    pytest.param(
        [ToolInputDelta(0, "{}"), Completion("tool_use")],
        "LlmClient sent input for tool call index 0 before its ToolUseStart",
        id="input-before-start",
    ),
    pytest.param(
        [ToolUseStart(0, "a", "rec"), ToolUseStart(0, "b", "rec"), Completion("tool_use")],
        "LlmClient started tool call index 0 twice",
        id="double-start",
    ),
    pytest.param(
        [ToolUseStart(0, "a", "rec"), ToolUseStop(3), Completion("tool_use")],
        "LlmClient stopped tool call index 3, which never started",
        id="stop-without-start",
    ),
    pytest.param(
        [TextDelta("hi"), Completion("end_turn"), TextDelta("late")],
        "LlmClient sent TextDelta(text='late') after the Completion event",
        id="event-after-completion",
    ),
    pytest.param(
        [Completion("end_turn"), Completion("end_turn")],
        "LlmClient sent Completion(stop_reason='end_turn', usage=None, response_id=None, "
        "model=None) after the Completion event",
        id="second-completion",
    ),
    pytest.param(
        [TextDelta("hi"), ToolUseStart(0, "a", "rec"), ToolUseStop(0)],
        "LlmClient's stream ended without a Completion event",
        id="no-completion",
    ),
    pytest.param([], "LlmClient's stream ended without a Completion event", id="empty-stream"),
    pytest.param(
        [TextDelta("hi"), "bogus", Completion("end_turn")],
        "LlmClient sent an unknown event: 'bogus'",
        id="unknown-event",
    ),
]


class TestProtocolErrors:
    @pytest.mark.parametrize(("events", "message"), BROKEN_STREAMS)
    @pytest.mark.anyio
    async def test_broken_stream_raises_and_leaves_history(self, events, message):
        """A stream that breaks the protocol raises LlmClientError with a clear message; no
        assistant message is appended, no tool runs and the stream is closed."""
        client = EventClient(events, FINAL)
        worker, recorder = make_worker(client)
        with pytest.raises(LlmClientError) as info:
            await worker.run("go")
        assert str(info.value) == message
        assert isinstance(info.value, WorkerError)
        assert worker.history == (UserMessage("go"),)
        assert recorder.inputs == []
        assert client.closed == 1
        # the worker is idle again and the next run works
        assert await worker.run("again") is WorkerResult.FINISHED
        assert client.requests[1].messages == (UserMessage("go"), UserMessage("again"))

    @pytest.mark.parametrize(
        "error",
        [
            ProviderError("acme", "overloaded", status=529, retryable=True),
            ConnectionError("provider went away"),
        ],
        ids=["ProviderError", "ConnectionError"],
    )
    @pytest.mark.anyio
    async def test_client_exception_propagates(self, error):
        """An exception raised by the client's stream propagates unchanged; nothing of the
        failed response enters the history and the next run works."""

        class FailingClient:
            def __init__(self) -> None:
                self.failed = False

            async def stream(self, request: LlmRequest) -> AsyncIterator[LlmEvent]:
                if self.failed:
                    yield Completion("end_turn")
                    return
                self.failed = True
                yield TextDelta("partial")
                yield ToolUseStart(0, "c", "rec")
                raise error

        worker = Worker(FailingClient())
        with pytest.raises(type(error)) as info:
            await worker.run("go")
        assert info.value is error
        assert worker.history == (UserMessage("go"),)
        assert not worker.is_paused
        assert await worker.run("again") is WorkerResult.FINISHED
