"""The LlmClient event protocol (``_client.py``) as the Worker assembles it.

A tiny hand-written ``LlmClient`` yields exactly the events each test gives it, so
fragments, interleavings and broken streams can be fed to a real ``Worker``.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import AsyncIterator, Sequence

import anyio
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
    ProviderItem,
    ProviderItemDone,
    ReasoningDelta,
    RunState,
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
HUGE = 5_000_000  # characters of a bad value no error message should hold whole


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
        # The order is drawn up front: a draw inside the running test (st.randoms) could
        # overrun hypothesis's buffer there, which the anyio runner reports as a failure.
        lanes=st.lists(st.sampled_from([0, 1]), max_size=26),
    )
    @pytest.mark.anyio
    async def test_any_split_and_interleaving_reassembles(self, first, second, cuts, lanes):
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
            lane = lanes[len(merged)] if len(merged) < len(lanes) else 0
            if not pieces[lane]:
                lane = 1 - lane
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

# One call, complete: a response whose Completion is then refused must not leave it behind
# in the history without its result.
CALL = [ToolUseStart(0, "a", "rec"), ToolInputDelta(0, "{}"), ToolUseStop(0)]
USAGE_PROBLEM = "LlmClient sent a Completion whose usage.{} is not an int of at least 0: {}"

# Values the history (budgets, run state) cannot keep: each was accepted, and failed later.
BAD_VALUES = [
    pytest.param(
        [*CALL, Completion("tool_use", Usage(input_tokens="12"))],  # type: ignore[arg-type]
        USAGE_PROBLEM.format("input_tokens", "'12' (str)"),
        id="usage-str",
    ),
    pytest.param(
        [*CALL, Completion("tool_use", Usage(output_tokens=None))],  # type: ignore[arg-type]
        USAGE_PROBLEM.format("output_tokens", "None (NoneType)"),
        id="usage-none",
    ),
    pytest.param(
        [*CALL, Completion("tool_use", Usage(cached_input_tokens=-5))],
        USAGE_PROBLEM.format("cached_input_tokens", "-5 (int)"),
        id="usage-negative",
    ),
    pytest.param(
        [*CALL, Completion("tool_use", Usage(reasoning_tokens=math.nan))],  # type: ignore[arg-type]
        USAGE_PROBLEM.format("reasoning_tokens", "nan (float)"),
        id="usage-nan",
    ),
    pytest.param(
        [*CALL, Completion("tool_use", Usage(input_tokens=150.5))],  # type: ignore[arg-type]
        USAGE_PROBLEM.format("input_tokens", "150.5 (float)"),
        id="usage-float",
    ),
    pytest.param(
        [*CALL, Completion("tool_use", Usage(input_tokens=True))],
        USAGE_PROBLEM.format("input_tokens", "True (bool)"),
        id="usage-bool",
    ),
    pytest.param(
        [*CALL, Completion("tool_use", {"input_tokens": 3})],  # type: ignore[arg-type]
        "LlmClient sent a Completion whose usage is not a Usage or None: {'input_tokens': 3} "
        "(dict)",
        id="usage-dict",
    ),
    pytest.param(
        [*CALL, Completion(5)],  # type: ignore[arg-type]
        "LlmClient sent a Completion whose stop_reason is not a str or None: 5 (int)",
        id="stop-reason-int",
    ),
    pytest.param(
        [TextDelta("hi"), Completion("end_turn", None, b"id")],  # type: ignore[arg-type]
        "LlmClient sent a Completion whose response_id is not a str or None: b'id' (bytes)",
        id="response-id-bytes",
    ),
    pytest.param(
        [TextDelta("hi"), Completion("end_turn", None, None, ["m"])],  # type: ignore[arg-type]
        "LlmClient sent a Completion whose model is not a str or None: ['m'] (list)",
        id="model-list",
    ),
    pytest.param(
        [ToolUseStart([0], "a", "rec"), ToolUseStop([0]), Completion("tool_use")],  # type: ignore[arg-type]
        "LlmClient sent a tool call index that is not an int: [0] (list)",
        id="index-list",
    ),
    pytest.param(
        [ToolUseStart(0, "a", "rec"), ToolInputDelta({}, "{}"), Completion("tool_use")],  # type: ignore[arg-type]
        "LlmClient sent a tool call index that is not an int: {} (dict)",
        id="index-dict-in-input",
    ),
    pytest.param(
        [ToolUseStart(0, "a", "rec"), ToolUseStop("0"), Completion("tool_use")],  # type: ignore[arg-type]
        "LlmClient sent a tool call index that is not an int: '0' (str)",
        id="index-str-in-stop",
    ),
    pytest.param(
        [ToolUseStart(math.nan, "a", "rec"), Completion("tool_use")],  # type: ignore[arg-type]
        "LlmClient sent a tool call index that is not an int: nan (float)",
        id="index-nan",
    ),
    pytest.param(
        [ToolUseStart(True, "a", "rec"), Completion("tool_use")],
        "LlmClient sent a tool call index that is not an int: True (bool)",
        id="index-bool",
    ),
    pytest.param(
        [ProviderItemDone(ProviderItem(1, None, {"a": 1})), *FINAL],  # type: ignore[arg-type]
        "LlmClient sent a provider item whose provider, kind or data is not a str: "
        "ProviderItem(provider=1, kind=None, data={'a': 1})",
        id="provider-item-fields",
    ),
    pytest.param(
        [ProviderItemDone(ProviderItem("acme", "note", "{oops")), *FINAL],
        "LlmClient sent a provider item whose data is not JSON text (JSONDecodeError: "
        "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)): "
        "ProviderItem(provider='acme', kind='note', data='{oops')",
        id="provider-item-not-json",
    ),
    pytest.param(
        [ProviderItemDone(ProviderItem("acme", "note", '{"a": NaN}')), *FINAL],
        "LlmClient sent a provider item whose data is not JSON text (ValueError: NaN is not "
        "JSON): ProviderItem(provider='acme', kind='note', data='{\"a\": NaN}')",
        id="provider-item-nan",
    ),
    pytest.param(
        [ProviderItemDone(ProviderItem("acme", "note", "[1, 2]")), *FINAL],
        "LlmClient sent a provider item whose data is JSON, but not an object: "
        "ProviderItem(provider='acme', kind='note', data='[1, 2]')",
        id="provider-item-not-an-object",
    ),
]


class TestProtocolErrors:
    @pytest.mark.parametrize(("events", "message"), BROKEN_STREAMS + BAD_VALUES)
    @pytest.mark.anyio
    async def test_broken_stream_raises_and_leaves_history(self, events, message):
        """A stream that breaks the protocol, or sends a value of the wrong type, raises
        LlmClientError with a clear message; no assistant message is appended, no tool runs,
        the stream is closed, and the state still saves and reads back."""
        client = EventClient(events, FINAL)
        worker, recorder = make_worker(client)
        with anyio.fail_after(5), pytest.raises(LlmClientError) as info:
            await worker.run("go")
        assert str(info.value) == message
        assert isinstance(info.value, WorkerError)
        assert worker.history == (UserMessage("go"),)
        assert worker.run_usage.requests == 0
        assert recorder.inputs == []
        assert client.closed == 1
        # the worker is idle again and the next run works
        with anyio.fail_after(5):
            assert await worker.run("again") is WorkerResult.FINISHED
        assert client.requests[1].messages == (UserMessage("go"), UserMessage("again"))
        assert RunState.from_json(worker.state.to_json()).history == worker.history

    @pytest.mark.anyio
    async def test_a_provider_item_too_deep_to_parse_is_refused(self):
        """Data nested deeper than ``json.loads`` reads is refused, not a RecursionError."""
        deep = ProviderItem("acme", "note", "[" * 100_000 + "]" * 100_000)
        client = EventClient([ProviderItemDone(deep), *FINAL], FINAL)
        worker, _ = make_worker(client)
        with anyio.fail_after(5), pytest.raises(LlmClientError) as info:
            await worker.run("go")
        assert str(info.value).startswith(
            "LlmClient sent a provider item whose data is not JSON text (RecursionError: "
        )
        assert worker.history == (UserMessage("go"),)

    @pytest.mark.anyio
    async def test_good_values_pass(self):
        """What the checks allow: zero and the largest token count (2**63 - 1), a ``None``
        stop reason, a provider item whose data is JSON; all kept as sent."""
        usage = Usage(0, 2**63 - 1, 0, 0)
        item = ProviderItem("acme", "note", '{"a": [1, "x"]}')
        client = EventClient(
            [ProviderItemDone(item), *CALL, Completion(None, usage, "r1", "m1")],  # type: ignore[arg-type]
            FINAL,
        )
        worker, _ = make_worker(client)
        with anyio.fail_after(5):
            assert await worker.run("go") is WorkerResult.FINISHED
        message = worker.history[1]
        assert isinstance(message, AssistantMessage)
        assert (message.stop_reason, message.usage, message.response_id, message.model) == (
            None,
            usage,
            "r1",
            "m1",
        )
        assert message.provider_items == (item,)
        assert worker.run_usage.output_tokens == 2**63 - 1

    @pytest.mark.parametrize(
        "events",
        [
            [TextDelta(b"\x00" * HUGE)],  # type: ignore[arg-type]
            [ToolUseStart(0, "a", ["x" * HUGE])],  # type: ignore[arg-type]
            [ToolUseStart(["x" * HUGE], "a", "rec")],  # type: ignore[arg-type]
            [ToolUseStart(0, "x" * HUGE, "rec"), ToolUseStart(1, "x" * HUGE, "rec")],
            [ToolUseStart(0, "a", "rec"), ToolUseStop(10**5000)],  # more digits than str() takes
            ["x" * HUGE],
            [ProviderItemDone(ProviderItem("acme", "note", "{" + "x" * HUGE))],
            [Completion(b"x" * HUGE)],  # type: ignore[arg-type]
            [Completion("end_turn", Usage(input_tokens="1" * HUGE))],  # type: ignore[arg-type]
            [Completion("end_turn"), TextDelta("x" * HUGE)],
        ],
        ids=[
            "text-bytes",
            "name-list",
            "index-list",
            "duplicate-id",
            "index-huge-int",
            "unknown-event",
            "provider-item",
            "stop-reason",
            "usage",
            "after-completion",
        ],
    )
    @pytest.mark.anyio
    async def test_a_huge_bad_value_makes_a_short_message(self, events):
        """The message shows a bad value cut to a few hundred characters: a 5 MB text in a
        bad event made a 20-million-character message (and log line)."""
        client = EventClient([*events, Completion("end_turn")], FINAL)
        worker, _ = make_worker(client)
        with anyio.fail_after(5), pytest.raises(LlmClientError) as info:
            await worker.run("go")
        assert len(str(info.value)) < 700
        assert "..." in str(info.value) or "bits" in str(info.value)

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


class TestResponseSize:
    @pytest.mark.anyio
    @pytest.mark.parametrize(
        "where",
        ["text", "arguments", "reasoning", "provider-items", "empty-events", "calls", "stops"],
    )
    async def test_a_response_past_max_response_chars_is_refused(self, where):
        """An endless (or enormous) response filled memory, and then the history, which
        every later request resends: past the limit it is a client's error, refused."""
        import dataclasses

        if where == "text":
            events: list[object] = [TextDelta("x" * 100) for _ in range(11)]
        elif where == "reasoning":
            events = [ReasoningDelta("x" * 100) for _ in range(11)]
        elif where == "provider-items":
            item = ProviderItem("p", "thinking", json.dumps({"text": "x" * 300}))
            events = [ProviderItemDone(item) for _ in range(4)]
        elif where == "empty-events":  # endless and empty: it never ended, memory grew
            events = [TextDelta(""), ReasoningDelta("")] * 501
        elif where == "calls":  # each a new call: memory grew
            events = [ToolUseStart(i, f"id-{i}", "rec") for i in range(200)]
        elif where == "stops":  # the same stop, again and again: it never ended
            events = [ToolUseStart(0, "c1", "rec"), *[ToolUseStop(0)] * 1001]
        else:
            events = [ToolUseStart(0, "c1", "rec")]
            events += [ToolInputDelta(0, "x" * 100) for _ in range(11)]
        worker, recorder = make_worker(EventClient([*events, Completion("end_turn")], FINAL))
        worker.limits = dataclasses.replace(worker.limits, max_response_chars=1_000)
        with anyio.fail_after(5), pytest.raises(LlmClientError) as info:
            await worker.run("go")
        assert str(info.value) == (
            "The model's response is over 1000 characters of text, reasoning, arguments and "
            "provider items (Limits.max_response_chars); it was refused"
        )
        assert worker.history == (UserMessage("go"),)
        assert recorder.inputs == []
        assert await worker.run("again") is WorkerResult.FINISHED

    @pytest.mark.anyio
    async def test_a_response_at_the_limit_is_taken(self):
        import dataclasses

        events = [TextDelta("x" * 500), TextDelta("y" * 500), Completion("end_turn")]
        worker, _ = make_worker(EventClient(events))
        worker.limits = dataclasses.replace(worker.limits, max_response_chars=1_000)
        with anyio.fail_after(5):
            assert await worker.run("go") is WorkerResult.FINISHED
        assert worker.final_text == "x" * 500 + "y" * 500
