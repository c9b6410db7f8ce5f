"""``llm_worker.providers.anthropic``: the real ``anthropic`` SDK against a local Messages server.

Each test scripts the server's replies (named server-sent events shaped as Anthropic
documents them, see ``wire.py``) and asserts both directions: the request body the SDK
sent, and what the worker did with the streamed answer. Nothing of the SDK is mocked.
"""

from __future__ import annotations

import itertools
import json

import anthropic
import anyio
import pytest
from support import assert_history_valid

from llm_worker import (
    AssistantMessage,
    Completion,
    LlmClient,
    LlmRequest,
    ProviderError,
    RunState,
    TextDelta,
    ToolCall,
    ToolInputDelta,
    ToolResult,
    ToolUseStart,
    ToolUseStop,
    Usage,
    UserMessage,
    Worker,
    WorkerResult,
    tool_definitions,
)
from llm_worker._formats import export_tools
from llm_worker.providers.anthropic import AnthropicClient

from . import wire
from .app import Notes
from .server import STALL, ProviderServer, error, stalled_stream, stream

# When an `error` event ends a stream (or the stream is closed early), the SDK leaves
# its inner async generators to the garbage collector; trio reports each one as a
# ResourceWarning when a collection happens to run during the test.
pytestmark = pytest.mark.filterwarnings(
    r"ignore:Async generator '(anthropic|httpx2|httpcore2)\.[^']*' was garbage "
    r"collected:ResourceWarning"
)

MODEL = "claude-test-model"
SYSTEM = "You keep notes."
HUGE = "x" * 1_000_000  # a server's error text of any length


def make_client(server: ProviderServer, **options) -> AnthropicClient:
    options.setdefault("max_retries", 0)
    return AnthropicClient(MODEL, api_key="test-key", base_url=server.base_url, **options)


def make_worker(client: LlmClient, notes: Notes, system_prompt: str | None = SYSTEM) -> Worker:
    worker = Worker(client, system_prompt=system_prompt)
    worker.register_tools(tool_definitions(notes))
    return worker


def tool_use(call_id: str, name: str, input: dict) -> dict:
    return {"type": "tool_use", "id": call_id, "name": name, "input": input}


def tool_result(call_id: str, content: str, is_error: bool = False) -> dict:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error}


class TestRequest:
    @pytest.mark.anyio
    async def test_first_request(self, server, notes):
        """The SDK posts model, max_tokens, system, the user message, tools and ``stream``."""
        server.add(stream(*wire.claude_text("Hi.")))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            await worker.run("hello")
        [received] = server.requests
        assert received.path == "/v1/messages"
        assert received.headers["authorization"] == "Bearer test-key"
        assert "anthropic-version" in received.headers
        body = received.json
        assert body["model"] == MODEL
        assert body["max_tokens"] == 4096
        assert body["stream"] is True
        assert body["system"] == SYSTEM
        assert body["messages"] == [{"role": "user", "content": "hello"}]
        handle = worker.tool_server_handle()
        assert body["tools"] == export_tools(handle.tool_definitions_sorted(), "anthropic")
        assert [t["name"] for t in body["tools"]] == ["add_note", "get_note"]
        assert body["tools"][0]["input_schema"]["required"] == ["title"]

    @pytest.mark.anyio
    async def test_no_system_prompt_no_tools(self, server):
        """Without a system prompt or tools, neither ``system`` nor ``tools`` is sent."""
        server.add(stream(*wire.claude_text("Hi.")))
        async with make_client(server) as client:
            await Worker(client).run("hello")
        body = server.requests[0].json
        assert "system" not in body
        assert "tools" not in body

    @pytest.mark.anyio
    async def test_options(self, server):
        """``max_tokens`` is sent as given and ``extra_body`` is merged into the body."""
        server.add(stream(*wire.claude_text("Hi.")))
        async with make_client(server, max_tokens=256, extra_body={"temperature": 0.5}) as client:
            await Worker(client).run("hello")
        body = server.requests[0].json
        assert (body["max_tokens"], body["temperature"]) == (256, 0.5)

    @pytest.mark.anyio
    async def test_history_mapping(self, server):
        """Assistant text and calls become text and tool_use blocks; consecutive results
        become one user message of tool_result blocks with ``is_error``; input that is
        not a JSON object is sent as ``{}``; an empty assistant message is left out."""
        server.add(stream(*wire.claude_text("ok")))
        history = [
            UserMessage("first"),
            AssistantMessage(
                "Looking.",
                (
                    ToolCall("toolu_a", "get_note", '{"title": "x"}'),
                    ToolCall("toolu_b", "get_note", '{"title": '),
                    ToolCall("toolu_c", "list_notes", ""),
                ),
            ),
            ToolResult("toolu_a", "Execution failed: no note called 'x'", is_error=True),
            ToolResult("toolu_b", "Invalid argument: input is not valid JSON", is_error=True),
            ToolResult("toolu_c", "[]"),
            AssistantMessage(""),
            UserMessage("hello?"),
            AssistantMessage("Nothing there."),
        ]
        async with make_client(server) as client:
            worker = Worker(client)
            worker.set_history(history)
            await worker.run("second")
        assert server.requests[0].json["messages"] == [
            {"role": "user", "content": "first"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Looking."},
                    tool_use("toolu_a", "get_note", {"title": "x"}),
                    tool_use("toolu_b", "get_note", {}),
                    tool_use("toolu_c", "list_notes", {}),
                ],
            },
            {
                "role": "user",
                "content": [
                    tool_result("toolu_a", "Execution failed: no note called 'x'", True),
                    tool_result("toolu_b", "Invalid argument: input is not valid JSON", True),
                    tool_result("toolu_c", "[]"),
                ],
            },
            {"role": "user", "content": "hello?"},
            {"role": "assistant", "content": [{"type": "text", "text": "Nothing there."}]},
            {"role": "user", "content": "second"},
        ]


REQUEST = LlmRequest(None, (UserMessage("go"),), ())


class TestStream:
    @pytest.mark.anyio
    async def test_event_sequence(self, server):
        """The client's own events: text, then per tool_use block (indexed by the block)
        its start, its non-empty fragments and its stop, then the Completion."""
        calls = [("toolu_a", "add_note", '{"title": "a"}'), ("toolu_b", "get_note", "{}")]
        server.add(stream(*wire.claude_tool_calls(calls, text="Both.", chunk_size=8)))
        async with make_client(server) as client:
            events = [event async for event in client.stream(REQUEST)]
        assert events == [
            TextDelta("Both."),
            ToolUseStart(1, "toolu_a", "add_note"),
            ToolInputDelta(1, '{"title"'),
            ToolInputDelta(1, ': "a"}'),
            ToolUseStop(1),
            ToolUseStart(2, "toolu_b", "get_note"),
            ToolInputDelta(2, "{}"),
            ToolUseStop(2),
            Completion(
                "tool_use", Usage(60, 30), "msg_01XFDUDYJgAACzvnptvVoYEL", "claude-test-model"
            ),
        ]

    @pytest.mark.anyio
    async def test_closing_the_stream_early(self, server):
        """A consumer may close the event stream after any event; the client stays usable."""
        server.add(stream(*wire.claude_text("a", "b", "c")), stream(*wire.claude_text("Again.")))
        async with make_client(server) as client:
            events = client.stream(REQUEST)
            assert await events.__anext__() == TextDelta("a")
            await events.aclose()
            again = [event async for event in client.stream(REQUEST)]
        assert again == [
            TextDelta("Again."),
            Completion(
                "end_turn", Usage(25, 9), "msg_01XFDUDYJgAACzvnptvVoYEL", "claude-test-model"
            ),
        ]

    @pytest.mark.anyio
    async def test_text(self, server):
        """Text deltas become the answer; pings are skipped; the stop reason and the
        usage (input from message_start, output from message_delta) are kept."""
        server.add(
            stream(*wire.claude_text("Hel", "lo, ", "world.", input_tokens=30, output_tokens=6))
        )
        async with make_client(server) as client:
            worker = Worker(client)
            assert await worker.run("hi") is WorkerResult.FINISHED
        assert worker.history[-1] == AssistantMessage("Hello, world.", (), "end_turn")
        assert worker.history[-1].usage == Usage(30, 6)

    @pytest.mark.anyio
    async def test_cached_input_counts_as_input(self, server):
        """Cache-read input tokens are part of ``Usage.input_tokens``."""
        frames = (
            wire.message_start(input_tokens=10, cache_read=90),
            *wire.text_block(0, "Hi."),
            wire.message_delta("end_turn", 3),
            wire.MESSAGE_STOP,
        )
        server.add(stream(*frames))
        async with make_client(server) as client:
            worker = Worker(client)
            await worker.run("hi")
        assert worker.history[-1].usage == Usage(100, 3, cached_input_tokens=90)

    @pytest.mark.anyio
    @pytest.mark.parametrize(("message_id", "model"), [(7, "m"), ("msg", {"x": 1})])
    async def test_a_response_id_or_model_that_is_no_text_is_left_out(
        self, server, message_id, model
    ):
        """The SDK does not check them: what is not a non-empty str becomes None (it would
        make a run state that does not load again)."""
        start = json.loads(wire.message_start().split("data: ", 1)[1])
        start["message"]["id"], start["message"]["model"] = message_id, model
        frames = (
            wire.event("message_start", start),
            *wire.text_block(0, "Hi."),
            wire.message_delta("end_turn", 3),
            wire.MESSAGE_STOP,
        )
        server.add(stream(*frames))
        async with make_client(server) as client:
            worker = Worker(client)
            await worker.run("hi")
        answer = worker.history[-1]
        assert isinstance(answer, AssistantMessage)
        assert answer.response_id == (message_id if isinstance(message_id, str) else None)
        assert answer.model == (model if isinstance(model, str) else None)
        assert RunState.from_json(worker.state.to_json()) == worker.state

    @pytest.mark.anyio
    async def test_one_tool_call(self, server, notes):
        """A tool_use block is executed with its input, its result goes back as a
        tool_result with the block's id, and the next answer ends the run."""
        server.add(
            stream(
                *wire.claude_tool_calls(
                    [("toolu_1", "add_note", '{"title": "milk"}')], text="Saving."
                )
            ),
            stream(*wire.claude_text("Saved.")),
        )
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            await worker.run("remember milk")
        assert notes.notes == {"milk": ""}
        assert worker.history[1:] == (
            AssistantMessage(
                "Saving.", (ToolCall("toolu_1", "add_note", '{"title": "milk"}'),), "tool_use"
            ),
            ToolResult("toolu_1", "saved milk"),
            AssistantMessage("Saved.", (), "end_turn"),
        )
        assert worker.history[1].usage == Usage(60, 30)
        second = server.requests[1].json["messages"]
        assert second[-2] == {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Saving."},
                tool_use("toolu_1", "add_note", {"title": "milk"}),
            ],
        }
        assert second[-1] == {"role": "user", "content": [tool_result("toolu_1", "saved milk")]}

    @pytest.mark.anyio
    async def test_parallel_calls_in_fragments(self, server, notes):
        """Parallel tool_use blocks whose input arrives one character at a time are
        reassembled, run, and answered in one user message, in call order."""
        calls = [
            ("toolu_a", "add_note", '{"title": "a", "body": "first \\"quoted\\""}'),
            ("toolu_b", "add_note", '{"title": "b", "body": "caf\\u00e9"}'),
        ]
        server.add(
            stream(*wire.claude_tool_calls(calls, chunk_size=1)),
            stream(*wire.claude_text("Done.")),
        )
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            await worker.run("save a and b")
        assert notes.notes == {"a": 'first "quoted"', "b": "café"}
        assert worker.history[1].tool_calls == tuple(ToolCall(*call) for call in calls)
        assert server.requests[1].json["messages"][-1] == {
            "role": "user",
            "content": [tool_result("toolu_a", "saved a"), tool_result("toolu_b", "saved b")],
        }
        assert_history_valid(worker.history)

    @pytest.mark.parametrize("stop_reason", ["max_tokens", "stop_sequence", "refusal"])
    @pytest.mark.anyio
    async def test_stop_reasons(self, server, stop_reason):
        """Anthropic's stop reasons are kept as they are."""
        frames = (
            wire.message_start(),
            *wire.text_block(0, "cut"),
            wire.message_delta(stop_reason, 2),
            wire.MESSAGE_STOP,
        )
        server.add(stream(*frames))
        async with make_client(server) as client:
            worker = Worker(client)
            await worker.run("hi")
        assert worker.history[-1] == AssistantMessage("cut", (), stop_reason)

    @pytest.mark.anyio
    async def test_input_given_whole_at_start(self, server, notes):
        """A tool_use block that brings its whole input at the start (no deltas, as some
        compatible servers send it) is read too."""
        start = wire.event(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "add_note",
                    "input": {"title": "tea"},
                },
            },
        )
        frames = (
            wire.message_start(),
            start,
            wire.block_stop(0),
            wire.message_delta("tool_use", 9),
            wire.MESSAGE_STOP,
        )
        server.add(stream(*frames), stream(*wire.claude_text("Saved.")))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            await worker.run("remember tea")
        assert notes.notes == {"tea": ""}
        assert worker.history[1].tool_calls == (
            ToolCall("toolu_1", "add_note", '{"title": "tea"}'),
        )


class TestConversation:
    @pytest.mark.anyio
    async def test_calls_a_server_gave_no_id_get_ids_of_their_own(self, server, notes):
        """Two calls whose ids a server left empty: each gets an id of its own, and the
        next request sends each result under its call's id."""
        server.add(
            stream(
                *wire.claude_tool_calls(
                    [("", "add_note", '{"title":"x"}'), ("", "get_note", '{"title":"x"}')]
                )
            ),
            stream(*wire.claude_text("ok")),
        )
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            assert await worker.run("go") is WorkerResult.FINISHED
        ids = [call.id for call in worker.history[1].tool_calls]
        assert len(set(ids)) == 2
        assert all(ids)
        assert_history_valid(worker.history)
        assert all(call_id in json.dumps(server.requests[1].json) for call_id in ids)

    @pytest.mark.anyio
    async def test_multi_turn_tool_calling(self, server, notes):
        """Two runs, four requests: every request carries the whole conversation so far,
        with tool results (a failed one included) right after the calls they answer."""
        server.add(
            stream(
                *wire.claude_tool_calls(
                    [("toolu_1", "add_note", '{"title": "milk", "body": "2l"}')]
                )
            ),
            stream(*wire.claude_text("Noted.")),
            stream(
                *wire.claude_tool_calls(
                    [
                        ("toolu_2", "get_note", '{"title": "milk"}'),
                        ("toolu_3", "get_note", '{"title": "eggs"}'),
                    ],
                    text="Checking both.",
                    chunk_size=4,
                )
            ),
            stream(*wire.claude_text("Milk: 2l. No note about eggs.")),
        )
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            locked = worker.lock()
            await locked.run("remember 2l of milk")
            await locked.run("what about milk and eggs?")
        assert locked.final_text == "Milk: 2l. No note about eggs."
        assert notes.calls == [("add_note", "milk"), ("get_note", "milk"), ("get_note", "eggs")]
        assert_history_valid(locked.history)
        last = server.requests[3].json
        assert last["system"] == SYSTEM
        assert last["messages"] == [
            {"role": "user", "content": "remember 2l of milk"},
            {
                "role": "assistant",
                "content": [tool_use("toolu_1", "add_note", {"title": "milk", "body": "2l"})],
            },
            {"role": "user", "content": [tool_result("toolu_1", "saved milk")]},
            {"role": "assistant", "content": [{"type": "text", "text": "Noted."}]},
            {"role": "user", "content": "what about milk and eggs?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Checking both."},
                    tool_use("toolu_2", "get_note", {"title": "milk"}),
                    tool_use("toolu_3", "get_note", {"title": "eggs"}),
                ],
            },
            {
                "role": "user",
                "content": [
                    tool_result("toolu_2", "2l"),
                    tool_result("toolu_3", "Execution failed: no note called 'eggs'", True),
                ],
            },
        ]
        bodies = [r.json["messages"] for r in server.requests]
        for earlier, later in itertools.pairwise(bodies):
            assert later[: len(earlier)] == earlier
        assert server.unused == 0

    @pytest.mark.anyio
    async def test_whitespace_text_before_a_call_is_not_sent_back(self, server, notes):
        """A text block of only whitespace (``"\\n\\n"`` before a tool_use) stays in the
        history as the model said it, but the next request leaves it out: the API refuses
        a text block without non-whitespace text (a 400 on every later request)."""
        server.add(
            stream(
                *wire.claude_tool_calls([("toolu_1", "add_note", '{"title": "milk"}')], text="\n\n")
            ),
            stream(*wire.claude_text("Noted.")),
        )
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            with anyio.fail_after(10):
                assert await worker.run("remember milk") is WorkerResult.FINISHED
        assert worker.history[1].text == "\n\n"
        assert server.requests[1].json["messages"][1] == {
            "role": "assistant",
            "content": [tool_use("toolu_1", "add_note", {"title": "milk"})],
        }

    @pytest.mark.anyio
    async def test_an_answer_of_only_whitespace_is_left_out(self, server):
        """A text-only answer of ``" "`` has no content to send once its blank text block is
        dropped, so the message is left out (the API rejects empty content); the user
        turns on either side go as two in a row, which the API merges."""
        server.add(stream(*wire.claude_text(" ")), stream(*wire.claude_text("Hello.")))
        async with make_client(server) as client:
            worker = Worker(client)
            with anyio.fail_after(10):
                await worker.run("hi")
                await worker.run("still there?")
        assert worker.history[1] == AssistantMessage(" ", (), "end_turn")
        assert server.requests[1].json["messages"] == [
            {"role": "user", "content": "hi"},
            {"role": "user", "content": "still there?"},
        ]


class TestErrors:
    @pytest.mark.parametrize(
        ("status", "kind", "message", "retryable", "sdk_error"),
        [
            (
                429,
                "rate_limit_error",
                "Number of request tokens has exceeded your per-minute rate limit",
                True,
                anthropic.RateLimitError,
            ),
            (529, "overloaded_error", "Overloaded", True, anthropic.OverloadedError),
            (
                401,
                "authentication_error",
                "invalid x-api-key",
                False,
                anthropic.AuthenticationError,
            ),
            (
                400,
                "invalid_request_error",
                "messages: roles must alternate",
                False,
                anthropic.BadRequestError,
            ),
            (500, "api_error", "Internal server error", True, anthropic.InternalServerError),
        ],
        ids=["429", "529", "401", "400", "500"],
    )
    @pytest.mark.anyio
    async def test_error_status(self, server, status, kind, message, retryable, sdk_error):
        """An error status becomes a ProviderError with Anthropic's message and the
        status, chained to the SDK's error; only the user message stays in history."""
        server.add(
            error(
                status,
                {
                    **wire.anthropic_error(kind, message),
                    "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy",
                },
            )
        )
        async with make_client(server) as client:
            worker = Worker(client)
            with pytest.raises(ProviderError) as info:
                await worker.run("hi")
        err = info.value
        assert (err.provider, err.status, err.retryable, err.message) == (
            "anthropic",
            status,
            retryable,
            message,
        )
        assert str(err) == f"anthropic request failed (HTTP {status}): {message}"
        assert isinstance(err.__cause__, sdk_error)
        assert worker.history == (UserMessage("hi"),)
        assert len(server.requests) == 1  # max_retries=0

    @pytest.mark.parametrize(
        ("kind", "status", "retryable"),
        [
            ("overloaded_error", 529, True),
            ("invalid_request_error", 400, False),
            ("stream_error", None, True),
        ],
    )
    @pytest.mark.anyio
    async def test_error_event_mid_stream(self, server, notes, kind, status, retryable):
        """An ``error`` event ends the run with a ProviderError carrying the status of its
        error type; nothing streamed before it reaches the history."""
        frames = (
            wire.message_start(),
            *wire.text_block(0, "Let me"),
            wire.tool_use_start(1, "toolu_1", "add_note"),
            wire.input_delta(1, '{"title"'),
            wire.error_event(kind, "Something went wrong"),
        )
        server.add(stream(*frames))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            with pytest.raises(ProviderError) as info:
                await worker.run("hi")
        err = info.value
        assert (err.status, err.retryable, err.message) == (
            status,
            retryable,
            "Something went wrong",
        )
        assert isinstance(err.__cause__, anthropic.APIStatusError)
        assert worker.history == (UserMessage("hi"),)
        assert notes.calls == []

    @pytest.mark.parametrize(
        ("reply", "said"),
        [
            pytest.param(
                error(400, wire.anthropic_error("invalid_request_error", HUGE)),
                HUGE,
                id="an error body's message",
            ),
            pytest.param(
                stream(wire.message_start(), wire.error_event("overloaded_error", HUGE)),
                HUGE,
                id="an error event's message",
            ),
            pytest.param(
                error(400, {"unexpected": HUGE}),
                f"Error code: 400 - {{'unexpected': '{HUGE}'}}",
                id="the SDK's text quoting a body without a message",
            ),
            pytest.param(error(502, f"<html>{HUGE}</html>"), f"<html>{HUGE}</html>", id="a page"),
        ],
    )
    @pytest.mark.anyio
    async def test_a_huge_message_is_cut(self, server, reply, said):
        """A server's error text of 1 000 000 characters is the message cut to 300
        characters, ending in "...": so is the error's text (and its span's status)."""
        server.add(reply)
        async with make_client(server) as client:
            with anyio.fail_after(20), pytest.raises(ProviderError) as info:
                await Worker(client).run("hi")
        err = info.value
        assert err.message == said[:297] + "..."
        assert len(str(err)) < 350

    @pytest.mark.anyio
    async def test_connection_dropped_mid_stream(self, server, notes):
        """A connection cut in the middle of a tool's input is a retryable ProviderError
        (the SDK lets the HTTP library's error through; it is wrapped too); the history
        stays valid and the next run works."""
        frames = wire.claude_tool_calls(
            [("toolu_1", "add_note", '{"title": "milk"}')], chunk_size=3
        )
        server.add(stream(*frames[:4], cut=True), stream(*wire.claude_text("Back.")))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            with pytest.raises(ProviderError) as info:
                await worker.run("remember milk")
            err = info.value
            assert err.message == (
                "the connection failed (RemoteProtocolError: peer closed connection without "
                "sending complete message body (incomplete chunked read))"
            )
            assert (err.status, err.retryable) == (None, True)
            assert type(err.__cause__).__name__ == "RemoteProtocolError"
            assert worker.history == (UserMessage("remember milk"),)
            assert await worker.run("are you there?") is WorkerResult.FINISHED
        assert notes.calls == []
        assert worker.final_text == "Back."
        assert_history_valid(worker.history)

    @pytest.mark.anyio
    async def test_stream_ends_before_message_stop(self, server):
        """A stream that ends cleanly without ``message_stop`` is a retryable ProviderError."""
        frames = (
            wire.message_start(),
            *wire.text_block(0, "Half an ans"),
            wire.message_delta("end_turn", 3),
        )
        server.add(stream(*frames))
        async with make_client(server) as client:
            worker = Worker(client)
            with pytest.raises(ProviderError) as info:
                await worker.run("hi")
        assert info.value.message == "the response stream ended before the response was complete"
        assert (info.value.status, info.value.retryable) == (None, True)
        assert worker.history == (UserMessage("hi"),)

    @pytest.mark.anyio
    async def test_the_wait_an_overload_asks_for(self, server):
        """``retry_after``: what the provider's retry-after says."""
        server.add(
            error(529, wire.anthropic_error("overloaded_error", "Overloaded"), retry_after="3")
        )
        async with make_client(server) as client:
            with pytest.raises(ProviderError) as info:
                await Worker(client).run("hi")
        assert (info.value.status, info.value.retry_after) == (529, 3.0)

    @pytest.mark.anyio
    async def test_failure_in_a_later_turn(self, server, notes):
        """When the request after the tool results fails, the history ends with those
        results: every call has its result, and nothing of the failed response is kept."""
        server.add(
            stream(*wire.claude_tool_calls([("toolu_1", "add_note", '{"title": "milk"}')])),
            error(529, wire.anthropic_error("overloaded_error", "Overloaded")),
        )
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            with pytest.raises(ProviderError) as info:
                await worker.run("remember milk")
        assert (info.value.status, info.value.retryable) == (529, True)
        assert worker.history[-1] == ToolResult("toolu_1", "saved milk")
        assert len(worker.history) == 3
        assert_history_valid(worker.history)

    @pytest.mark.anyio
    async def test_connection_refused(self):
        """Nothing listening on the port: a retryable ProviderError naming the failure."""
        with ProviderServer() as closed:
            base_url = closed.base_url
        async with AnthropicClient(MODEL, api_key="k", base_url=base_url, max_retries=0) as client:
            with pytest.raises(ProviderError) as info:
                await Worker(client).run("hi")
        assert info.value.message.startswith("the connection failed (ConnectError: ")
        assert (info.value.status, info.value.retryable) == (None, True)
        assert isinstance(info.value.__cause__, anthropic.APIConnectionError)

    @pytest.mark.anyio
    async def test_timeout(self, server):
        """A server that does not answer within ``timeout`` gives a retryable ProviderError."""
        server.add(STALL)
        async with make_client(server, timeout=0.2) as client:
            with pytest.raises(ProviderError) as info:
                await Worker(client).run("hi")
        assert info.value.message == "the request timed out"
        assert (info.value.status, info.value.retryable) == (None, True)
        assert isinstance(info.value.__cause__, anthropic.APITimeoutError)

    @pytest.mark.anyio
    async def test_sdk_retries_before_streaming(self, server):
        """With ``max_retries=1`` the SDK itself retries a 529 (honouring
        ``retry-after-ms``) and the run succeeds on the second request."""
        server.add(
            error(529, wire.anthropic_error("overloaded_error", "Overloaded"), retry_after_ms="5"),
            stream(*wire.claude_text("Ok.")),
        )
        async with make_client(server, max_retries=1) as client:
            worker = Worker(client)
            assert await worker.run("hi") is WorkerResult.FINISHED
        assert worker.final_text == "Ok."
        assert len(server.requests) == 2
        assert server.requests[0].json == server.requests[1].json

    @pytest.mark.anyio
    async def test_timeout_mid_stream(self, server, notes):
        """A stream that stops sending for longer than ``timeout`` is "the request timed
        out", as before the headers and as for the other clients (the SDK lets httpx2's
        ReadTimeout through unwrapped while it reads the stream)."""
        frames = wire.claude_tool_calls([("toolu_1", "add_note", '{"title": "milk"}')])
        server.add(stalled_stream(*frames[:4]))
        async with make_client(server, timeout=0.5) as client:
            worker = make_worker(client, notes)
            with anyio.fail_after(10), pytest.raises(ProviderError) as info:
                await worker.run("remember milk")
        assert info.value.message == "the request timed out"
        assert (info.value.status, info.value.retryable) == (None, True)
        assert type(info.value.__cause__).__name__ == "ReadTimeout"
        assert worker.history == (UserMessage("remember milk"),)

    @pytest.mark.parametrize(
        ("frames", "cause"),
        [
            pytest.param(
                (
                    wire.message_start(),
                    *wire.text_block(0)[:-1],  # its start
                    wire.event(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": 0,
                            "delta": {"type": "text_delta"},
                        },
                    ),
                    wire.block_stop(0),
                ),
                TypeError,
                id="text_delta without text",
            ),
            pytest.param(
                (
                    wire.message_start(),
                    wire.event("content_block_start", {"type": "content_block_start", "index": 0}),
                ),
                AttributeError,
                id="content_block_start without content_block",
            ),
            pytest.param(
                (
                    wire.message_start(),
                    *wire.text_block(0, "hi"),
                    wire.event("message_delta", {"type": "message_delta", "usage": {}}),
                ),
                AttributeError,
                id="message_delta without delta",
            ),
            pytest.param(
                (wire.event("message_start", {"type": "message_start"}),),
                AttributeError,
                id="message_start without message",
            ),
            pytest.param(
                (
                    wire.message_start(),
                    wire.tool_use_start(0, "toolu_1", "add_note"),
                    wire.event(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": 0,
                            "delta": {"type": "input_json_delta", "partial_json": None},
                        },
                    ),
                    wire.block_stop(0),
                ),
                TypeError,
                id="partial_json null",
            ),
        ],
    )
    @pytest.mark.anyio
    async def test_a_malformed_event_is_a_provider_error(self, server, notes, frames, cause):
        """An event that leaves out a field the reader needs is a ProviderError saying the
        provider sent a malformed stream event (not retryable), chained to what reading it
        raised; nothing of the response reaches the history."""
        server.add(stream(*frames, wire.message_delta("end_turn", 3), wire.MESSAGE_STOP))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            with anyio.fail_after(10), pytest.raises(ProviderError) as info:
                await worker.run("hi")
        err = info.value
        assert err.message.startswith(
            f"the provider sent a malformed stream event ({cause.__name__}: "
        )
        assert (err.status, err.retryable) == (None, False)
        assert type(err.__cause__) is cause
        assert worker.history == (UserMessage("hi"),)

    @pytest.mark.anyio
    async def test_a_frame_that_is_not_json_is_a_malformed_stream(self, server, notes):
        server.add(stream(wire.message_start(), "event: content_block_delta\ndata: {oops\n\n"))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            with anyio.fail_after(10), pytest.raises(ProviderError) as info:
                await worker.run("hi")
        assert info.value.message.startswith(
            "the provider sent a malformed stream event (JSONDecodeError: "
        )
        assert (info.value.status, info.value.retryable) == (None, False)
        assert worker.history == (UserMessage("hi"),)


class TestCancellation:
    @pytest.mark.anyio
    async def test_cancel_mid_stream(self, server, notes):
        """Cancelling a run while the answer streams drops the half-received response;
        the next run starts from a valid history."""
        frames = wire.claude_tool_calls(
            [("toolu_1", "add_note", '{"title": "milk"}')], chunk_size=3
        )
        server.add(stalled_stream(*frames[:4]), stream(*wire.claude_text("Back.")))
        async with make_client(server) as client:
            worker = make_worker(client, notes)

            async def cancel_once_streaming() -> None:
                while server.frames_sent < 4:
                    await anyio.sleep(0.01)
                scope.cancel()

            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as group:
                    group.start_soon(cancel_once_streaming)
                    await worker.run("remember milk")
            assert scope.cancelled_caught
            assert worker.history == (UserMessage("remember milk"),)
            assert await worker.run("are you there?") is WorkerResult.FINISHED
        assert notes.calls == []
        assert worker.final_text == "Back."
        assert_history_valid(worker.history)


class TestClient:
    def test_client_or_settings(self):
        """Passing an SDK client and settings for another one is refused."""
        sdk = anthropic.AsyncAnthropic(api_key="k")
        with pytest.raises(TypeError) as info:
            AnthropicClient(MODEL, client=sdk, api_key="other")
        assert str(info.value) == (
            "AnthropicClient takes client= or api_key=, not both; "
            "configure the AsyncAnthropic client instead"
        )

    @pytest.mark.anyio
    async def test_given_client_is_used_and_left_open(self, server):
        """A given AsyncAnthropic carries the requests and is not closed by ``aclose()``."""
        server.add(stream(*wire.claude_text("Hi.")))
        async with anthropic.AsyncAnthropic(
            api_key="own-key", base_url=server.base_url, max_retries=0
        ) as sdk:
            async with AnthropicClient(MODEL, client=sdk) as client:
                assert client.client is sdk
                await Worker(client).run("hello")
            assert not sdk.is_closed()
        assert server.requests[0].headers["authorization"] == "Bearer own-key"

    @pytest.mark.anyio
    async def test_own_client_is_closed(self, server):
        """A client made from settings is closed when the AnthropicClient closes."""
        async with make_client(server) as client:
            assert not client.client.is_closed()
        assert client.client.is_closed()

    def test_repr(self, server):
        """The repr shows the model and the server, never the key."""
        client = make_client(server)
        assert (
            repr(client)
            == f"<AnthropicClient model='claude-test-model' base_url='{server.base_url}'>"
        )
        assert "test-key" not in repr(client)


class TestToolSelection:
    @pytest.mark.anyio
    async def test_tool_choice_is_sent_as_the_api_names_it(self, server, notes):
        """ "required" goes out as ``{"type": "any"}``, a tool's name as ``{"type": "tool"}``,
        "none" as ``{"type": "none"}``; the default sends no tool_choice at all."""
        for _ in range(4):
            server.add(stream(*wire.claude_text("Hi.")))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            await worker.run("a")
            await worker.run("b", tool_choice="required")
            await worker.run("c", tool_choice="get_note")
            await worker.run("d", tool_choice="none")
        choices = [r.json.get("tool_choice") for r in server.requests]
        assert choices == [
            None,
            {"type": "any"},
            {"type": "tool", "name": "get_note"},
            {"type": "none"},
        ]

    @pytest.mark.anyio
    async def test_allowed_tools_are_enforced_by_the_worker(self, server, notes):
        """The Messages API has no allowed-tools field: every tool is sent, and a call to
        one outside ``allowed_tools`` gets an error result and does not run."""
        server.add(
            stream(*wire.claude_tool_calls([("toolu_1", "add_note", '{"title": "milk"}')])),
            stream(*wire.claude_text("Ok.")),
        )
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            await worker.run("save", allowed_tools=["get_note"])
        first = server.requests[0].json
        assert [t["name"] for t in first["tools"]] == ["add_note", "get_note"]
        assert "tool_choice" not in first
        [result] = server.requests[1].json["messages"][-1]["content"]
        assert result["is_error"] is True
        assert result["content"] == (
            "Tool call 'add_note' did not run: that tool is not available now (available: get_note)"
        )

    @pytest.mark.anyio
    async def test_no_allowed_tools_is_tool_choice_none(self, server, notes):
        """An empty ``allowed_tools``, "auto" or "required": no tool may be called, which
        the API can say (``{"type": "none"}``)."""
        for _ in range(2):
            server.add(stream(*wire.claude_text("Hi.")))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            await worker.run("a", allowed_tools=[])
            await worker.run("b", tool_choice="required", allowed_tools=[])
        assert [r.json["tool_choice"] for r in server.requests] == [{"type": "none"}] * 2
        assert notes.notes == {}
