"""``llm_worker.providers.openai``: the real ``openai`` SDK against a local Chat Completions server.

Each test scripts the server's replies (server-sent events shaped as OpenAI documents
them, see ``wire.py``) and asserts both directions: the request body the SDK sent, and
what the worker did with the streamed answer. Nothing of the SDK is mocked.
"""

from __future__ import annotations

import itertools
import json

import anyio
import openai
import pytest
from support import assert_history_valid

from llm_worker import (
    AssistantMessage,
    Completion,
    LlmClient,
    LlmRequest,
    ProviderError,
    ProviderItem,
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
    WorkerResult,
    tool_definitions,
)
from llm_worker._formats import export_tools
from llm_worker.providers.openai import OpenAIChatClient

from . import wire
from .app import Notes
from .server import STALL, ProviderServer, error, stalled_stream, stream

# The openai SDK stops reading at `data: [DONE]` (and raises out of its SSE loop on an
# error) without closing its inner async generators; trio reports each one as a
# ResourceWarning when it is garbage collected during the test.
pytestmark = pytest.mark.filterwarnings(
    r"ignore:Async generator '(openai|httpx2|httpcore2)\.[^']*' was garbage "
    r"collected:ResourceWarning"
)

MODEL = "gpt-test-mini"
HUGE = "x" * 1_000_000  # a server's error text of any length
SYSTEM = "You keep notes."


def make_client(server: ProviderServer, **options) -> OpenAIChatClient:
    options.setdefault("max_retries", 0)
    return OpenAIChatClient(MODEL, api_key="test-key", base_url=f"{server.base_url}/v1", **options)


def make_worker(client: LlmClient, notes: Notes, system_prompt: str | None = SYSTEM) -> Worker:
    worker = Worker(client, system_prompt=system_prompt)
    worker.register_tools(tool_definitions(notes))
    return worker


def sent_tools(worker: Worker, strict: bool = False) -> list[dict]:
    return export_tools(
        worker.tool_server_handle().tool_definitions_sorted(), "openai", strict=strict
    )


class TestRequest:
    @pytest.mark.anyio
    async def test_first_request(self, server, notes):
        """The SDK posts model, system prompt, user message, tools and the stream flags."""
        server.add(stream(*wire.chat_text("Hi.")))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            await worker.run("hello")
        [received] = server.requests
        assert received.path == "/v1/chat/completions"
        assert received.headers["authorization"] == "Bearer test-key"
        body = received.json
        assert body["model"] == MODEL
        assert body["stream"] is True
        assert body["stream_options"] == {"include_usage": True}
        assert body["messages"] == [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "hello"},
        ]
        assert body["tools"] == sent_tools(worker)
        assert [t["function"]["name"] for t in body["tools"]] == ["add_note", "get_note"]
        assert body["tools"][0]["type"] == "function"
        assert body["tools"][0]["function"]["parameters"]["required"] == ["title"]
        assert "max_completion_tokens" not in body
        assert "temperature" not in body

    @pytest.mark.anyio
    async def test_no_system_prompt_no_tools(self, server):
        """Without a system prompt or tools, only the conversation is sent: no system
        message and no ``tools`` key."""
        server.add(stream(*wire.chat_text("Hi.")))
        async with make_client(server) as client:
            await Worker(client).run("hello")
        body = server.requests[0].json
        assert body["messages"] == [{"role": "user", "content": "hello"}]
        assert "tools" not in body

    @pytest.mark.anyio
    async def test_strict_tools(self, server, notes):
        """``strict=True`` sends each tool with ``strict: true`` and its strict-mode schema."""
        server.add(stream(*wire.chat_text("Hi.")))
        async with make_client(server, strict=True) as client:
            worker = make_worker(client, notes)
            await worker.run("hello")
        tools = server.requests[0].json["tools"]
        assert tools == sent_tools(worker, strict=True)
        assert [t["function"]["strict"] for t in tools] == [True, True]
        add_note = tools[0]["function"]["parameters"]
        assert add_note["required"] == ["title", "body"]
        assert add_note["additionalProperties"] is False

    @pytest.mark.anyio
    async def test_options(self, server):
        """``max_tokens`` goes out as ``max_completion_tokens``, ``temperature`` as is, and
        ``extra_body`` is merged into the body."""
        server.add(stream(*wire.chat_text("Hi.")))
        client = make_client(
            server, max_tokens=300, temperature=0.25, extra_body={"seed": 7, "user": "u1"}
        )
        async with client:
            await Worker(client).run("hello")
        body = server.requests[0].json
        assert body["max_completion_tokens"] == 300
        assert body["temperature"] == 0.25
        assert (body["seed"], body["user"]) == (7, "u1")

    @pytest.mark.anyio
    async def test_history_mapping(self, server):
        """Assistant text and tool calls, and tool results (errors included), map to
        assistant ``tool_calls`` and ``tool`` messages with the matching ids; empty
        arguments go out as ``{}``."""
        server.add(stream(*wire.chat_text("ok")))
        history = [
            UserMessage("first"),
            AssistantMessage("Looking.", (ToolCall("call_a", "get_note", '{"title": "x"}'),)),
            ToolResult("call_a", "Execution failed: no note called 'x'", is_error=True),
            AssistantMessage("", (ToolCall("call_b", "list_notes", ""),)),
            ToolResult("call_b", "Tool 'list_notes' not found", is_error=True),
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
                "content": "Looking.",
                "tool_calls": [
                    {
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "get_note", "arguments": '{"title": "x"}'},
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "call_a",
                "content": "Execution failed: no note called 'x'",
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "list_notes", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_b", "content": "Tool 'list_notes' not found"},
            {"role": "assistant", "content": "Nothing there."},
            {"role": "user", "content": "second"},
        ]


REQUEST = LlmRequest(None, (UserMessage("go"),), ())


class TestStream:
    @pytest.mark.anyio
    async def test_event_sequence(self, server):
        """The client's own events for interleaved parallel calls: text, both starts, the
        fragments in arrival order, a stop per call at the finish, then the Completion."""
        calls = [("call_a", "add_note", '{"title": "a"}'), ("call_b", "get_note", '{"title": "b"}')]
        server.add(
            stream(*wire.chat_tool_calls(calls, text="Both.", chunk_size=8, interleave=True))
        )
        async with make_client(server) as client:
            events = [event async for event in client.stream(REQUEST)]
        assert events == [
            TextDelta("Both."),
            ToolUseStart(0, "call_a", "add_note"),
            ToolUseStart(1, "call_b", "get_note"),
            ToolInputDelta(0, '{"title"'),
            ToolInputDelta(1, '{"title"'),
            ToolInputDelta(0, ': "a"}'),
            ToolInputDelta(1, ': "b"}'),
            ToolUseStop(0),
            ToolUseStop(1),
            Completion(
                "tool_use", Usage(40, 18), "chatcmpl-BQb0iSFzE1zz1OVhaqg3u2Yqn1Ezf", "gpt-test-mini"
            ),
        ]

    @pytest.mark.anyio
    async def test_closing_the_stream_early(self, server):
        """A consumer may close the event stream after any event; the client stays usable."""
        server.add(stream(*wire.chat_text("a", "b", "c")), stream(*wire.chat_text("Again.")))
        async with make_client(server) as client:
            events = client.stream(REQUEST)
            assert await events.__anext__() == TextDelta("a")
            await events.aclose()
            again = [event async for event in client.stream(REQUEST)]
        assert again == [
            TextDelta("Again."),
            Completion(
                "end_turn", Usage(11, 7), "chatcmpl-BQb0iSFzE1zz1OVhaqg3u2Yqn1Ezf", "gpt-test-mini"
            ),
        ]

    @pytest.mark.anyio
    async def test_text(self, server):
        """Content deltas become the answer; ``stop`` becomes ``end_turn``; usage is read."""
        server.add(stream(*wire.chat_text("Hel", "lo, ", "world.", usage=(12, 5))))
        async with make_client(server) as client:
            worker = Worker(client)
            assert await worker.run("hi") is WorkerResult.FINISHED
        assert worker.history[-1] == AssistantMessage("Hello, world.", (), "end_turn")
        assert worker.history[-1].usage == Usage(12, 5)

    @pytest.mark.anyio
    async def test_one_tool_call(self, server, notes):
        """A tool call is executed with its arguments, its result is sent back under the
        call's id, and the next answer ends the run."""
        server.add(
            stream(*wire.chat_tool_calls([("call_1", "add_note", '{"title": "milk"}')])),
            stream(*wire.chat_text("Saved.")),
        )
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            await worker.run("remember milk")
        assert notes.notes == {"milk": ""}
        assert worker.history[1:] == (
            AssistantMessage(
                "", (ToolCall("call_1", "add_note", '{"title": "milk"}'),), "tool_use"
            ),
            ToolResult("call_1", "saved milk"),
            AssistantMessage("Saved.", (), "end_turn"),
        )
        second = server.requests[1].json["messages"]
        assert second[-2]["tool_calls"][0]["id"] == "call_1"
        assert second[-1] == {"role": "tool", "tool_call_id": "call_1", "content": "saved milk"}

    @pytest.mark.anyio
    async def test_parallel_calls_in_fragments(self, server, notes):
        """Parallel calls whose arguments arrive one character at a time, interleaved,
        are reassembled per call, run, and answered in call order."""
        calls = [
            ("call_a", "add_note", '{"title": "a", "body": "first \\"quoted\\""}'),
            ("call_b", "add_note", '{"title": "b", "body": "caf\\u00e9"}'),
        ]
        server.add(
            stream(
                *wire.chat_tool_calls(calls, text="Saving both.", chunk_size=1, interleave=True)
            ),
            stream(*wire.chat_text("Done.")),
        )
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            await worker.run("save a and b")
        assert notes.notes == {"a": 'first "quoted"', "b": "café"}
        assistant = worker.history[1]
        assert isinstance(assistant, AssistantMessage)
        assert assistant.text == "Saving both."
        assert assistant.tool_calls == tuple(ToolCall(*call) for call in calls)
        assert worker.history[2:4] == (
            ToolResult("call_a", "saved a"),
            ToolResult("call_b", "saved b"),
        )
        sent = server.requests[1].json["messages"]
        assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == ["call_a", "call_b"]
        assert_history_valid(worker.history)

    @pytest.mark.parametrize(
        ("finish_reason", "stop_reason"),
        [("stop", "end_turn"), ("length", "max_tokens"), ("content_filter", "content_filter")],
    )
    @pytest.mark.anyio
    async def test_stop_reasons(self, server, finish_reason, stop_reason):
        """``finish_reason`` maps to our vocabulary; unknown reasons pass through."""
        frames = [
            wire.chunk({"role": "assistant", "content": "cut"}),
            wire.chunk({}, finish_reason),
            wire.DONE,
        ]
        server.add(stream(*frames))
        async with make_client(server) as client:
            worker = Worker(client)
            await worker.run("hi")
        assert worker.history[-1] == AssistantMessage("cut", (), stop_reason)
        assert worker.history[-1].usage is None  # no usage chunk was sent

    @pytest.mark.anyio
    async def test_refusal_is_text(self, server):
        """A ``refusal`` delta is what the model said: it becomes the answer's text."""
        frames = [
            wire.chunk({"role": "assistant", "content": None, "refusal": ""}),
            wire.chunk({"refusal": "I can't help with that."}),
            wire.chunk({}, "stop"),
            wire.DONE,
        ]
        server.add(stream(*frames))
        async with make_client(server) as client:
            worker = Worker(client)
            await worker.run("hi")
        assert worker.final_text == "I can't help with that."

    @pytest.mark.parametrize(
        ("finish", "stop_reason"),
        [
            ("stop", "refusal"),  # as Anthropic's: a refusal is told from an answer
            (None, "refusal"),  # no finish_reason, the usage chunk (OpenRouter, Kimi)
            ("length", "max_tokens"),  # a more telling reason stays
            ("content_filter", "content_filter"),
        ],
    )
    @pytest.mark.anyio
    async def test_a_refusal_ends_with_stop_reason_refusal(self, server, finish, stop_reason):
        """A response with ``refusal`` text keeps it as its text, and its stop reason is
        ``refusal`` where the API's would read as an answer's (``stop``)."""
        frames = [
            wire.chunk({"role": "assistant", "content": None, "refusal": ""}),
            wire.chunk({"refusal": "I can't help with that."}),
        ]
        if finish is not None:
            frames.append(wire.chunk({}, finish))
        frames += [wire.chunk(choices=False, usage=wire.chat_usage(9, 6)), wire.DONE]
        server.add(stream(*frames))
        async with make_client(server) as client:
            worker = Worker(client)
            await worker.run("hi")
        assert worker.history[-1] == AssistantMessage("I can't help with that.", (), stop_reason)


class TestConversation:
    @pytest.mark.anyio
    async def test_multi_turn_tool_calling(self, server, notes):
        """Two runs, four requests: every request carries the whole conversation so far,
        with tool results (a failed one included) after the calls they answer."""
        server.add(
            stream(
                *wire.chat_tool_calls([("call_1", "add_note", '{"title": "milk", "body": "2l"}')])
            ),
            stream(*wire.chat_text("Noted.")),
            stream(
                *wire.chat_tool_calls(
                    [
                        ("call_2", "get_note", '{"title": "milk"}'),
                        ("call_3", "get_note", '{"title": "eggs"}'),
                    ],
                    chunk_size=4,
                )
            ),
            stream(*wire.chat_text("Milk: 2l. No note about eggs.")),
        )
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            locked = worker.lock()
            await locked.run("remember 2l of milk")
            await locked.run("what about milk and eggs?")
        assert locked.final_text == "Milk: 2l. No note about eggs."
        assert notes.calls == [("add_note", "milk"), ("get_note", "milk"), ("get_note", "eggs")]
        assert_history_valid(locked.history)
        last = server.requests[3].json["messages"]
        assert last == [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "remember 2l of milk"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {
                            "name": "add_note",
                            "arguments": '{"title": "milk", "body": "2l"}',
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "saved milk"},
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": "what about milk and eggs?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "get_note", "arguments": '{"title": "milk"}'},
                    },
                    {
                        "id": "call_3",
                        "type": "function",
                        "function": {"name": "get_note", "arguments": '{"title": "eggs"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_2", "content": "2l"},
            {
                "role": "tool",
                "tool_call_id": "call_3",
                "content": "Execution failed: no note called 'eggs'",
            },
        ]
        # Each request is a prefix of the next one: nothing sent earlier changes.
        bodies = [r.json["messages"] for r in server.requests]
        for earlier, later in itertools.pairwise(bodies):
            assert later[: len(earlier)] == earlier
        assert server.unused == 0


class TestErrors:
    @pytest.mark.anyio
    async def test_a_frame_that_is_not_json_is_a_malformed_stream(self, server, notes):
        """A ``data:`` frame that is not JSON: the provider's malformed stream, not
        retryable (it read as a retryable "connection failed")."""
        server.add(stream(*wire.chat_text("Hel")[:1], "data: {not json\n\n"))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            with anyio.fail_after(10), pytest.raises(ProviderError) as info:
                await worker.run("hi")
        assert info.value.message.startswith(
            "the provider sent a malformed stream event (JSONDecodeError: "
        )
        assert (info.value.status, info.value.retryable) == (None, False)
        assert worker.history == (UserMessage("hi"),)

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("status", "body", "message"),
        [
            (422, {"detail": [{"loc": ["body", "messages"], "msg": "field required"}]},
             "body.messages: field required"),
            (500, {"detail": "upstream exploded"}, "upstream exploded"),
        ],
        ids=["fastapi-422", "detail-500"],
    )  # fmt: skip
    async def test_a_fastapi_style_body_gives_its_message(self, server, status, body, message):
        """Many compatible servers answer errors as FastAPI does: the message is the
        body's detail, not the SDK's "Error code: 422"."""
        server.add(error(status, body))
        async with make_client(server) as client:
            with pytest.raises(ProviderError) as info:
                await Worker(client).run("hi")
        assert (info.value.status, info.value.message) == (status, message)

    @pytest.mark.anyio
    async def test_rate_limited(self, server):
        """A 429 becomes a retryable ProviderError with the provider's message and status,
        chained to the SDK's RateLimitError; the history keeps only the user message."""
        server.add(error(429, wire.RATE_LIMITED))
        async with make_client(server) as client:
            worker = Worker(client)
            with pytest.raises(ProviderError) as info:
                await worker.run("hi")
        err = info.value
        message = wire.RATE_LIMITED["error"]["message"]
        assert (err.provider, err.status, err.retryable, err.message) == (
            "openai",
            429,
            True,
            message,
        )
        assert str(err) == f"openai request failed (HTTP 429): {message}"
        assert isinstance(err.__cause__, openai.RateLimitError)
        assert worker.history == (UserMessage("hi"),)
        assert len(server.requests) == 1  # max_retries=0

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("headers", "wait"),
        [({"retry_after": "7"}, 7.0), ({"retry_after_ms": "1500"}, 1.5), ({}, None)],
    )
    async def test_the_wait_a_rate_limit_asks_for(self, server, headers, wait):
        """``retry_after``: what the provider's Retry-After (or retry-after-ms) says."""
        server.add(error(429, wire.RATE_LIMITED, **headers))
        async with make_client(server) as client:
            with pytest.raises(ProviderError) as info:
                await Worker(client).run("hi")
        assert info.value.retry_after == wait

    @pytest.mark.anyio
    async def test_bad_key(self, server):
        """A 401 is a ProviderError that retrying cannot fix."""
        server.add(error(401, wire.BAD_KEY))
        async with make_client(server) as client:
            with pytest.raises(ProviderError) as info:
                await Worker(client).run("hi")
        assert (info.value.status, info.value.retryable) == (401, False)
        assert info.value.message == wire.BAD_KEY["error"]["message"]
        assert isinstance(info.value.__cause__, openai.AuthenticationError)

    @pytest.mark.anyio
    async def test_bad_request(self, server):
        """A 400 is a ProviderError that retrying cannot fix."""
        body = wire.openai_error(
            "Invalid schema for function 'add_note'.",
            "invalid_request_error",
            "invalid_function_parameters",
        )
        server.add(error(400, body))
        async with make_client(server) as client:
            with pytest.raises(ProviderError) as info:
                await Worker(client).run("hi")
        err = info.value
        assert (err.status, err.retryable, err.message) == (
            400,
            False,
            "Invalid schema for function 'add_note'.",
        )
        assert isinstance(err.__cause__, openai.BadRequestError)

    @pytest.mark.anyio
    async def test_server_error_without_json(self, server):
        """A 502 whose body is not JSON (a proxy's page) keeps the body's text as message."""
        server.add(error(502, "<html>  Bad gateway\n</html>"))
        async with make_client(server) as client:
            with pytest.raises(ProviderError) as info:
                await Worker(client).run("hi")
        err = info.value
        assert (err.status, err.retryable) == (502, True)
        assert err.message == "<html> Bad gateway </html>"
        assert isinstance(err.__cause__, openai.InternalServerError)

    @pytest.mark.anyio
    async def test_error_event_mid_stream(self, server, notes):
        """An error sent inside the stream ends the run with a ProviderError; the text and
        tool call already streamed never reach the history."""
        frames = [
            wire.chunk({"role": "assistant", "content": "Let me"}),
            wire.chunk({"tool_calls": [wire.tool_call_start(0, "call_1", "add_note")]}),
            wire.data(
                wire.openai_error(
                    "The server had an error processing your request.", "server_error"
                )
            ),
        ]
        server.add(stream(*frames))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            with pytest.raises(ProviderError) as info:
                await worker.run("hi")
        err = info.value
        assert (err.status, err.retryable) == (None, True)
        assert err.message == "The server had an error processing your request."
        assert type(err.__cause__) is openai.APIError
        assert worker.history == (UserMessage("hi"),)
        assert notes.calls == []

    @pytest.mark.parametrize(
        ("reply", "said"),
        [
            pytest.param(
                error(400, wire.openai_error(HUGE, "invalid_request_error")),
                HUGE,
                id="an error body's message",
            ),
            pytest.param(
                stream(
                    wire.chunk({"role": "assistant", "content": "Let me"}),
                    wire.data(wire.openai_error(HUGE, "server_error")),
                ),
                HUGE,
                id="an error chunk's message",
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
        """A connection cut in the middle of the arguments is a retryable ProviderError;
        the history stays valid and the next run works."""
        frames = wire.chat_tool_calls([("call_1", "add_note", '{"title": "milk"}')], chunk_size=3)
        server.add(stream(*frames[:5], cut=True), stream(*wire.chat_text("Back.")))
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
            assert isinstance(err.__cause__, openai.APIConnectionError)
            assert worker.history == (UserMessage("remember milk"),)
            assert notes.calls == []
            assert await worker.run("are you there?") is WorkerResult.FINISHED
        assert worker.final_text == "Back."
        assert_history_valid(worker.history)

    @pytest.mark.anyio
    async def test_stream_ends_early(self, server):
        """A stream that ends cleanly before any ``finish_reason`` is a retryable
        ProviderError, not a truncated answer."""
        server.add(stream(wire.chunk({"role": "assistant", "content": "Half an ans"})))
        async with make_client(server) as client:
            worker = Worker(client)
            with pytest.raises(ProviderError) as info:
                await worker.run("hi")
        assert info.value.message == "the response stream ended before the response was complete"
        assert (info.value.status, info.value.retryable) == (None, True)
        assert worker.history == (UserMessage("hi"),)

    @pytest.mark.anyio
    async def test_failure_in_a_later_turn(self, server, notes):
        """When the request after the tool results fails, the history ends with those
        results: every call has its result, and nothing of the failed response is kept."""
        server.add(
            stream(*wire.chat_tool_calls([("call_1", "add_note", '{"title": "milk"}')])),
            error(500, wire.openai_error("The server had an error.", "server_error")),
        )
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            with pytest.raises(ProviderError) as info:
                await worker.run("remember milk")
        assert (info.value.status, info.value.retryable) == (500, True)
        assert worker.history[-1] == ToolResult("call_1", "saved milk")
        assert len(worker.history) == 3
        assert_history_valid(worker.history)

    @pytest.mark.anyio
    async def test_connection_refused(self):
        """Nothing listening on the port: a retryable ProviderError naming the failure."""
        with ProviderServer() as closed:
            base_url = closed.base_url
        client = OpenAIChatClient(MODEL, api_key="k", base_url=f"{base_url}/v1", max_retries=0)
        async with client:
            with pytest.raises(ProviderError) as info:
                await Worker(client).run("hi")
        assert info.value.message.startswith("the connection failed (ConnectError: ")
        assert (info.value.status, info.value.retryable) == (None, True)
        assert isinstance(info.value.__cause__, openai.APIConnectionError)

    @pytest.mark.anyio
    async def test_timeout(self, server):
        """A server that does not answer within ``timeout`` gives a retryable ProviderError."""
        server.add(STALL)
        async with make_client(server, timeout=0.2) as client:
            with pytest.raises(ProviderError) as info:
                await Worker(client).run("hi")
        assert info.value.message == "the request timed out"
        assert (info.value.status, info.value.retryable) == (None, True)
        assert isinstance(info.value.__cause__, openai.APITimeoutError)

    @pytest.mark.anyio
    async def test_sdk_retries_before_streaming(self, server):
        """With ``max_retries=1`` the SDK itself retries a 429 (honouring
        ``retry-after-ms``) and the run succeeds on the second request."""
        server.add(
            error(429, wire.RATE_LIMITED, retry_after_ms="5"), stream(*wire.chat_text("Ok."))
        )
        async with make_client(server, max_retries=1) as client:
            worker = Worker(client)
            assert await worker.run("hi") is WorkerResult.FINISHED
        assert worker.final_text == "Ok."
        assert len(server.requests) == 2
        assert server.requests[0].json == server.requests[1].json


class TestCancellation:
    @pytest.mark.anyio
    async def test_cancel_mid_stream(self, server, notes):
        """Cancelling a run while the answer streams drops the half-received response;
        the next run starts from a valid history."""
        frames = wire.chat_tool_calls([("call_1", "add_note", '{"title": "milk"}')], chunk_size=3)
        server.add(stalled_stream(*frames[:4]), stream(*wire.chat_text("Back.")))
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
        sdk = openai.AsyncOpenAI(api_key="k")
        with pytest.raises(TypeError) as info:
            OpenAIChatClient(MODEL, client=sdk, base_url="http://x", max_retries=1)
        assert str(info.value) == (
            "OpenAIChatClient takes client= or base_url/max_retries=, not both; "
            "configure the AsyncOpenAI client instead"
        )

    @pytest.mark.anyio
    async def test_given_client_is_used_and_left_open(self, server):
        """A given AsyncOpenAI carries the requests and is not closed by ``aclose()``."""
        server.add(stream(*wire.chat_text("Hi.")))
        async with openai.AsyncOpenAI(
            api_key="own-key", base_url=f"{server.base_url}/v1", max_retries=0
        ) as sdk:
            async with OpenAIChatClient(MODEL, client=sdk) as client:
                assert client.client is sdk
                await Worker(client).run("hello")
            assert not sdk.is_closed()
        assert server.requests[0].headers["authorization"] == "Bearer own-key"

    @pytest.mark.anyio
    async def test_own_client_is_closed(self, server):
        """A client made from settings is closed when the OpenAIChatClient closes."""
        async with make_client(server) as client:
            assert not client.client.is_closed()
        assert client.client.is_closed()

    def test_repr(self, server):
        """The repr shows the model and the server, never the key."""
        client = make_client(server)
        assert repr(client) == (
            f"<OpenAIChatClient model='gpt-test-mini' base_url='{server.base_url}/v1/'>"
        )
        assert "test-key" not in repr(client)


class TestToolSelection:
    @pytest.mark.anyio
    async def test_tool_choice_and_allowed_tools(self, server, notes):
        """A named tool and "required" go out as Chat Completions names them;
        ``allowed_tools`` as an ``allowed_tools`` tool_choice, every tool still defined;
        the default sends no tool_choice."""
        for _ in range(4):
            server.add(stream(*wire.chat_text("Hi.")))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            await worker.run("a")
            await worker.run("b", tool_choice="get_note")
            await worker.run("c", tool_choice="required", allowed_tools=["get_note"])
            await worker.run("d", allowed_tools=["add_note", "get_note"])
        bodies = [r.json for r in server.requests]
        assert "tool_choice" not in bodies[0]
        assert bodies[1]["tool_choice"] == {"type": "function", "function": {"name": "get_note"}}
        assert bodies[2]["tool_choice"] == {
            "type": "allowed_tools",
            "allowed_tools": {
                "mode": "required",
                "tools": [{"type": "function", "function": {"name": "get_note"}}],
            },
        }
        assert bodies[3]["tool_choice"]["allowed_tools"]["mode"] == "auto"
        assert all(len(body["tools"]) == 2 for body in bodies)

    @pytest.mark.anyio
    async def test_no_allowed_tools_is_tool_choice_none(self, server, notes):
        """An empty ``allowed_tools`` (no tool may be called), "auto" or "required", is
        ``"none"``: an ``allowed_tools`` choice with no tools says nothing the API can keep."""
        for _ in range(2):
            server.add(stream(*wire.chat_text("Hi.")))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            await worker.run("a", allowed_tools=[])
            await worker.run("b", tool_choice="required", allowed_tools=[])
        assert [r.json["tool_choice"] for r in server.requests] == ["none", "none"]
        assert all(len(r.json["tools"]) == 2 for r in server.requests)

    @pytest.mark.anyio
    async def test_cached_and_reasoning_tokens(self, server):
        """``prompt_tokens_details.cached_tokens`` and ``completion_tokens_details.
        reasoning_tokens`` reach the response's Usage."""
        usage = wire.chat_usage(120, 40)
        usage["prompt_tokens_details"]["cached_tokens"] = 100
        usage["completion_tokens_details"]["reasoning_tokens"] = 32
        frames = [
            *wire.chat_text("Hi.", usage=None),
        ]
        frames.insert(-1, wire.chunk(choices=False, usage=usage))
        server.add(stream(*frames))
        async with make_client(server) as client:
            worker = Worker(client)
            await worker.run("hi")
        assert worker.history[-1].usage == Usage(120, 40, 100, 32)


GROQ_FAILED = (
    "Failed to call a function. Please adjust your prompt. See 'failed_generation' for more "
    "details."
)
OPENROUTER_RAW = (
    "google/gemini-2.0-flash-exp:free is temporarily rate-limited upstream. Please retry "
    "shortly, or add your own key to accumulate your rate limits: "
    "https://openrouter.ai/settings/integrations"
)


def openrouter_error(code: int, message: str, **metadata: str) -> dict:
    error: dict = {"code": code, "message": message}
    if metadata:
        error["metadata"] = metadata
    return {"error": error, "user_id": "user_2yEzmvVkGb9Q1dWRdbsnbPz3sUP"}


def chat_stream_error(body: dict) -> str:
    """OpenRouter's mid-stream error: a chunk with the error and ``finish_reason: error``."""
    return wire.data(
        {
            "id": "gen-1745678496-Qx5vBZTRTuQwWv8YUo4b",
            "object": "chat.completion.chunk",
            "created": 1745678496,
            "model": "moonshotai/kimi-k2",
            "provider": "Moonshot AI",
            **body,
            "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
        }
    )


class TestCompatibleServers:
    @pytest.mark.anyio
    @pytest.mark.parametrize("index", [0, None], ids=["all-at-0", "no-index"])
    async def test_parallel_calls_given_one_index_stay_apart(self, server, notes, index):
        """Ollama gives every parallel call index 0 (some builds no index at all): a new
        call id is a new call, not more arguments for the last one."""

        def call(call_id: str, name: str) -> str:
            delta: dict = {"id": call_id, "type": "function"}
            delta["function"] = {"name": name, "arguments": '{"title":"a"}'}
            if index is not None:
                delta["index"] = index
            return wire.chunk({"tool_calls": [delta]})

        server.add(
            stream(
                wire.chunk({"role": "assistant"}),
                call("call_A", "add_note"),
                call("call_B", "get_note"),
                wire.chunk({}, "tool_calls"),
                wire.DONE,
            ),
            stream(*wire.chat_text("ok")),
        )
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            with anyio.fail_after(10):
                assert await worker.run("go") is WorkerResult.FINISHED
        calls = worker.history[1].tool_calls
        assert [(c.id, c.name, c.input_json) for c in calls] == [
            ("call_A", "add_note", '{"title":"a"}'),
            ("call_B", "get_note", '{"title":"a"}'),
        ]
        assert notes.notes == {"a": ""}

    @pytest.mark.anyio
    async def test_an_id_after_a_calls_first_delta_is_the_same_call(self, server, notes):
        """A server that names the call first and gives its id with the arguments: one
        call, not two."""
        first = {"index": 0, "type": "function", "function": {"name": "add_note"}}
        then = {"index": 0, "id": "call_A", "function": {"arguments": '{"title":"a"}'}}
        server.add(
            stream(
                wire.chunk({"role": "assistant"}),
                wire.chunk({"tool_calls": [first]}),
                wire.chunk({"tool_calls": [then]}),
                wire.chunk({}, "tool_calls"),
                wire.DONE,
            ),
            stream(*wire.chat_text("ok")),
        )
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            with anyio.fail_after(10):
                assert await worker.run("go") is WorkerResult.FINISHED
        [call] = worker.history[1].tool_calls
        assert (call.name, call.input_json) == ("add_note", '{"title":"a"}')
        assert notes.notes == {"a": ""}

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        "odd",
        [
            'data: {"id":"","object":"","created":0,"model":"","choices":[{"index":0,'
            '"delta":null,"finish_reason":null,"content_filter_results":{}}]}\n\n',
            "data: null\n\n",
            'data: {"id":"x","object":"chat.completion.chunk","created":0,"model":"m",'
            '"choices":null}\n\n',
        ],
        ids=["azure-filter-delta-null", "data-null", "choices-null"],
    )
    async def test_chunks_that_leave_fields_out_are_read_past(self, server, notes, odd):
        """Azure's content-filter chunks (delta: null), `data: null`, `choices: null`: the
        answer around them is read as if they were not there."""
        server.add(stream(wire.chunk({"content": "Hel"}), odd, *wire.chat_text("lo")))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            with anyio.fail_after(10):
                assert await worker.run("go") is WorkerResult.FINISHED
        assert worker.final_text == "Hello"

    @pytest.mark.anyio
    async def test_usage_with_null_counts_counts_zero(self, server, notes):
        usage = {"prompt_tokens": 5, "completion_tokens": None, "total_tokens": 5}
        server.add(
            stream(
                wire.chunk({"content": "Hi"}),
                wire.chunk({}, "stop"),
                wire.chunk(choices=False, usage=usage),
                wire.DONE,
            )
        )
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            with anyio.fail_after(10):
                assert await worker.run("go") is WorkerResult.FINISHED
        assert (worker.usage.input_tokens, worker.usage.output_tokens) == (5, 0)

    @pytest.mark.anyio
    async def test_done_after_a_whole_call_without_finish_reason(self, server, notes):
        """OpenRouter/Kimi: ``[DONE]`` after a complete tool call and no ``finish_reason``
        (and no usage chunk) is a whole response: the call runs and the run goes on."""
        frames = [
            wire.chunk({"role": "assistant", "content": ""}),
            wire.chunk(
                {"tool_calls": [wire.tool_call_start(0, "functions.add_note:0", "add_note")]}
            ),
            *(
                wire.chunk({"tool_calls": [wire.tool_call_args(0, piece)]})
                for piece in wire.split('{"title": "milk"}', 4)
            ),
            wire.DONE,
        ]
        server.add(stream(*frames), stream(*wire.chat_text("Saved.")))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            assert await worker.run("remember milk") is WorkerResult.FINISHED
        assert notes.notes == {"milk": ""}
        assert worker.history[1] == AssistantMessage(
            "", (ToolCall("functions.add_note:0", "add_note", '{"title": "milk"}'),), "tool_use"
        )
        assert worker.final_text == "Saved."

    @pytest.mark.anyio
    async def test_usage_chunk_without_finish_reason(self, server):
        """A text answer whose usage chunk came, but no ``finish_reason``, is complete."""
        frames = [
            wire.chunk({"role": "assistant", "content": "Hello."}),
            wire.chunk(choices=False, usage=wire.chat_usage(9, 2)),
            wire.DONE,
        ]
        server.add(stream(*frames))
        async with make_client(server) as client:
            worker = Worker(client)
            await worker.run("hi")
        assert worker.history[1] == AssistantMessage("Hello.", (), "end_turn")
        assert worker.history[1].usage == Usage(9, 2)

    @pytest.mark.anyio
    async def test_half_a_call_without_finish_reason_is_cut_short(self, server, notes):
        """Arguments that are not yet whole JSON, then the end: not an answer to run."""
        frames = [
            wire.chunk({"tool_calls": [wire.tool_call_start(0, "call_1", "add_note")]}),
            wire.chunk({"tool_calls": [wire.tool_call_args(0, '{"title": "mi')]}),
            wire.DONE,
        ]
        server.add(stream(*frames))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            with pytest.raises(ProviderError) as info:
                await worker.run("remember milk")
        assert info.value.message == "the response stream ended before the response was complete"
        assert notes.calls == []

    @pytest.mark.anyio
    async def test_a_call_without_parameters_without_finish_reason(self, server):
        """A tool without parameters (arguments "") then ``[DONE]``, no ``finish_reason``:
        the call runs with ``{}``."""
        ran: list[str] = []

        class Ping:
            async def execute(self, input_json: str) -> str:
                ran.append(input_json)
                return "pong"

        meta = ToolMeta(name="ping", description="Ping.")
        frames = [
            wire.chunk({"tool_calls": [wire.tool_call_start(0, "call_1", "ping")]}),
            wire.DONE,
        ]
        server.add(stream(*frames), stream(*wire.chat_text("Done.")))
        async with make_client(server) as client:
            worker = Worker(client)
            worker.register_tool(lambda: (meta, Ping()))
            assert await worker.run("ping") is WorkerResult.FINISHED
        assert ran == [""]
        assert worker.final_text == "Done."

    @pytest.mark.anyio
    @pytest.mark.parametrize(("response_id", "model"), [(12345, "m"), ("x", ["a"]), ("", "")])
    async def test_a_response_id_or_model_that_is_no_text_is_left_out(
        self, server, response_id, model
    ):
        """The SDK does not check them: what is not a non-empty str becomes None (it would
        make a run state that does not load again)."""
        frames = []
        for frame in wire.chat_text("Hi."):
            if frame.startswith("data: {"):
                payload = json.loads(frame[len("data: ") :])
                payload["id"], payload["model"] = response_id, model
                frame = wire.data(payload)
            frames.append(frame)
        server.add(stream(*frames))
        async with make_client(server) as client:
            worker = Worker(client)
            await worker.run("hi")
        answer = worker.history[-1]
        assert isinstance(answer, AssistantMessage)
        assert answer.response_id == (response_id or None if isinstance(response_id, str) else None)
        assert answer.model == (model or None if isinstance(model, str) else None)
        assert RunState.from_json(worker.state.to_json()) == worker.state

    @pytest.mark.anyio
    async def test_groq_error_event_names_its_status(self, server, notes):
        """Groq's ``event: error`` inside a 200 stream says ``status_code: 400``: that is the
        status, and a 400 is not worth retrying."""
        body = {
            "error": {
                "message": GROQ_FAILED,
                "type": "invalid_request_error",
                "code": "tool_use_failed",
                "failed_generation": '<function=add_note{"title": "milk"}</function>',
                "status_code": 400,
            }
        }
        frames = [
            wire.chunk({"role": "assistant", "content": None}),
            f"event: error\ndata: {json.dumps(body)}\n\n",
        ]
        server.add(stream(*frames))
        async with make_client(server) as client:
            with pytest.raises(ProviderError) as info:
                await make_worker(client, notes).run("remember milk")
        err = info.value
        assert (err.status, err.retryable, err.message) == (400, False, GROQ_FAILED)
        assert type(err.__cause__) is openai.APIError

    @pytest.mark.anyio
    async def test_openrouter_error_chunk_with_a_numeric_code(self, server):
        """An OpenRouter error chunk with ``code: 400`` ("Token limit reached") is a 400,
        not worth retrying."""
        frames = [
            wire.chunk({"role": "assistant", "content": "Let me"}),
            chat_stream_error(openrouter_error(400, "Token limit reached")),
        ]
        server.add(stream(*frames))
        async with make_client(server) as client:
            with pytest.raises(ProviderError) as info:
                await Worker(client).run("hi")
        assert (info.value.status, info.value.retryable) == (400, False)
        assert info.value.message == "Token limit reached"

    @pytest.mark.parametrize(
        "raw",
        [
            OPENROUTER_RAW,
            json.dumps({"error": {"code": 429, "message": OPENROUTER_RAW, "status": "x"}}),
        ],
        ids=["text", "json"],
    )
    @pytest.mark.anyio
    async def test_openrouter_429_says_what_the_upstream_said(self, server, raw):
        """OpenRouter's 429 says "Provider returned error"; the message is the upstream's
        own words from ``metadata.raw`` (its ``message`` when it is JSON), with the
        provider's name."""
        body = openrouter_error(429, "Provider returned error", raw=raw, provider_name="Google")
        server.add(error(429, body))
        async with make_client(server) as client:
            with pytest.raises(ProviderError) as info:
                await Worker(client).run("hi")
        err = info.value
        assert (err.status, err.retryable) == (429, True)
        assert err.message == f"Google: {OPENROUTER_RAW}"

    @pytest.mark.anyio
    async def test_openrouter_429_inside_the_stream(self, server):
        """The same error as a chunk mid-stream: status 429 from its code, retryable, the
        upstream's words."""
        body = openrouter_error(
            429, "Provider returned error", raw=OPENROUTER_RAW, provider_name="Chutes"
        )
        server.add(
            stream(wire.chunk({"role": "assistant", "content": ""}), chat_stream_error(body))
        )
        async with make_client(server) as client:
            with pytest.raises(ProviderError) as info:
                await Worker(client).run("hi")
        assert (info.value.status, info.value.retryable) == (429, True)
        assert info.value.message == f"Chutes: {OPENROUTER_RAW}"

    @pytest.mark.parametrize(
        ("raw", "provider_name"),
        [(HUGE, "Google"), (json.dumps({"error": {"message": HUGE}}), "Google"), ("busy", HUGE)],
        ids=["raw text", "raw json", "provider name"],
    )
    @pytest.mark.anyio
    async def test_openrouter_upstream_words_are_cut(self, server, raw, provider_name):
        """An upstream's words or provider name of 1 000 000 characters: the message is
        cut to 300 characters, ending in "..."."""
        body = openrouter_error(
            429, "Provider returned error", raw=raw, provider_name=provider_name
        )
        server.add(error(429, body))
        async with make_client(server) as client:
            with anyio.fail_after(20), pytest.raises(ProviderError) as info:
                await Worker(client).run("hi")
        message = info.value.message
        assert len(message) == 300
        assert message.endswith("x...")
        assert message.startswith("Google: x" if provider_name == "Google" else "xxx")

    @pytest.mark.anyio
    async def test_reasoning_is_shown_and_sent_back_in_its_field(self, server):
        """``delta.reasoning_content`` (DeepSeek, vLLM) becomes reasoning events, and the
        whole reasoning goes back in that field of its assistant message."""
        frames = [
            wire.chunk({"role": "assistant", "content": None, "reasoning_content": "Think. "}),
            wire.chunk({"reasoning_content": "More."}),
            wire.chunk({"content": "Hi."}),
            wire.chunk({}, "stop"),
            wire.DONE,
        ]
        server.add(stream(*frames), stream(*wire.chat_text("Again.")))
        async with make_client(server) as client:
            worker = Worker(client)
            async with worker.run_stream("hi") as events:
                seen = [event async for event in events]
            await worker.run("again")
        assert [e.text for e in seen if isinstance(e, ReasoningDelta)] == ["Think. ", "More."]
        kept = ProviderItem("openai", "reasoning_content", '{"reasoning_content":"Think. More."}')
        assert worker.history[1] == AssistantMessage("Hi.", (), "end_turn", provider_items=(kept,))
        assert worker.history[3].provider_items == ()  # a response without reasoning
        assert server.requests[1].json["messages"][1] == {
            "role": "assistant",
            "content": "Hi.",
            "reasoning_content": "Think. More.",
        }

    @pytest.mark.anyio
    async def test_a_tool_loop_sends_each_calls_reasoning_back(self, server):
        """DeepSeek's and Kimi's rule: the reasoning of a turn that called tools goes back
        with its calls on every later request; ``delta.reasoning`` (OpenRouter, Ollama,
        Groq) goes back as ``reasoning``, and a saved run state keeps it."""
        notes = Notes()
        call = wire.chat_tool_calls([("call_1", "add_note", '{"title": "a", "body": "b"}')])
        reasoning = wire.chunk({"reasoning": "I should save it. ¿"})
        server.add(
            stream(call[0], reasoning, *call[1:]),
            stream(*wire.chat_text("Saved.")),
            stream(*wire.chat_text("Sure.")),
        )
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            await worker.run("save a")
            state = worker.state.to_json()
            loaded = make_worker(client, notes)
            loaded.load_state(RunState.from_json(state))
            await loaded.run("thanks")
        expected = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "add_note", "arguments": '{"title": "a", "body": "b"}'},
                }
            ],
            "reasoning": "I should save it. ¿",
        }
        for request in server.requests[1:]:
            assert request.json["messages"][2] == expected
        assert notes.notes == {"a": "b"}

    @pytest.mark.anyio
    async def test_openrouter_reasoning_details_go_back_unmodified(self, server, notes):
        """OpenRouter streams ``delta.reasoning_details`` beside ``delta.reasoning``: its
        entries are kept in order (the streamed pieces of one ``reasoning.text`` entry put
        together, its signature added from a later piece) and go back on that assistant
        message, as OpenRouter requires in a tool loop; a saved run state keeps them."""
        text = {"type": "reasoning.text", "format": "anthropic-claude-v1", "index": 0}
        encrypted = {
            "type": "reasoning.encrypted",
            "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj",
            "id": None,
            "format": "anthropic-claude-v1",
            "index": 1,
        }
        call = wire.chat_tool_calls([("toolu_01A", "add_note", '{"title": "milk"}')])
        frames = [
            call[0],
            wire.chunk({"reasoning": "Save ", "reasoning_details": [{**text, "text": "Save "}]}),
            wire.chunk({"reasoning": "it.", "reasoning_details": [{**text, "text": "it."}]}),
            wire.chunk({"reasoning_details": [{**text, "text": "", "signature": "c2ln"}]}),
            wire.chunk({"reasoning_details": [encrypted]}),
            *call[1:],
        ]
        server.add(
            stream(*frames), stream(*wire.chat_text("Saved.")), stream(*wire.chat_text("Sure."))
        )
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            with anyio.fail_after(10):
                async with worker.run_stream("note milk") as events:
                    seen = [event async for event in events]
                loaded = make_worker(client, notes)
                loaded.load_state(RunState.from_json(worker.state.to_json()))
                await loaded.run("thanks")
        assert [e.text for e in seen if isinstance(e, ReasoningDelta)] == ["Save ", "it."]
        details = [{**text, "text": "Save it.", "signature": "c2ln"}, encrypted]
        for request in server.requests[1:]:
            sent = request.json["messages"][2]
            assert (sent["reasoning"], sent["reasoning_details"]) == ("Save it.", details)
            assert sent["tool_calls"][0]["id"] == "toolu_01A"

    @pytest.mark.anyio
    async def test_gemini_extra_content_goes_back_on_its_call(self, server, notes):
        """Gemini's OpenAI-compatible endpoint puts a call's thought signature in
        ``tool_calls[i].extra_content``: it is kept with the message and goes back on that
        same call (and only there) on every later request, a saved run state included."""
        extra = {"google": {"thought_signature": "CiQBjz1rX0SIGNATURE=="}}
        first = {**wire.tool_call_start(0, "fc_1", "add_note"), "extra_content": extra}
        frames = [
            wire.chunk({"role": "assistant", "content": None}),
            wire.chunk({"tool_calls": [first]}),
            wire.chunk({"tool_calls": [wire.tool_call_args(0, '{"title": "milk"}')]}),
            wire.chunk({"tool_calls": [wire.tool_call_start(1, "fc_2", "add_note")]}),
            wire.chunk({"tool_calls": [wire.tool_call_args(1, '{"title": "eggs"}')]}),
            wire.chunk({}, "tool_calls"),
            wire.DONE,
        ]
        server.add(
            stream(*frames), stream(*wire.chat_text("Saved.")), stream(*wire.chat_text("Sure."))
        )
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            with anyio.fail_after(10):
                await worker.run("note milk and eggs")
                loaded = make_worker(client, notes)
                loaded.load_state(RunState.from_json(worker.state.to_json()))
                await loaded.run("thanks")
        assert [(item.kind, item.json()) for item in worker.history[1].provider_items] == [
            ("extra_content", {"id": "fc_1", "extra_content": extra})
        ]
        for request in server.requests[1:]:
            calls = request.json["messages"][2]["tool_calls"]
            assert [call.get("extra_content") for call in calls] == [extra, None]
        assert notes.notes == {"milk": "", "eggs": ""}
