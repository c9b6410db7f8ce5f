"""``OpenAIResponsesClient``: the real ``openai`` SDK against a local Responses API server.

The server streams named events shaped as OpenAI documents them (see ``wire.py``);
each test asserts the ``input`` the SDK sent and what the worker made of the answer.
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
    LlmRequest,
    ProviderError,
    ReasoningDelta,
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
from llm_worker.providers.openai import OpenAIResponsesClient

from . import wire
from .app import Notes
from .server import ProviderServer, error, stream

# As for Chat Completions: the SDK leaves inner async generators to the garbage
# collector, which trio reports as ResourceWarnings.
pytestmark = pytest.mark.filterwarnings(
    r"ignore:Async generator '(openai|httpx2|httpcore2)\.[^']*' was garbage "
    r"collected:ResourceWarning"
)

MODEL = "gpt-test-mini"
HUGE = "x" * 1_000_000  # a server's error message of any length
SYSTEM = "You keep notes."


def make_client(server: ProviderServer, **options) -> OpenAIResponsesClient:
    options.setdefault("max_retries", 0)
    return OpenAIResponsesClient(
        MODEL, api_key="test-key", base_url=f"{server.base_url}/v1", **options
    )


def make_worker(client: OpenAIResponsesClient, notes: Notes) -> Worker:
    worker = Worker(client, system_prompt=SYSTEM)
    worker.register_tools(tool_definitions(notes))
    return worker


def function_call(call_id: str, name: str, arguments: str) -> dict:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


def call_output(call_id: str, output: str) -> dict:
    return {"type": "function_call_output", "call_id": call_id, "output": output}


class TestRequest:
    @pytest.mark.anyio
    async def test_first_request(self, server, notes):
        """The SDK posts model, instructions, input, tools, ``stream`` and ``store: false``."""
        server.add(stream(*wire.responses_text("Hi.")))
        async with make_client(server, max_tokens=500) as client:
            worker = make_worker(client, notes)
            await worker.run("hello")
        [received] = server.requests
        assert received.path == "/v1/responses"
        body = received.json
        assert body["model"] == MODEL
        assert body["instructions"] == SYSTEM
        assert body["input"] == [{"role": "user", "content": "hello"}]
        assert (body["stream"], body["store"], body["max_output_tokens"]) == (True, False, 500)
        handle = worker.tool_server_handle()
        assert body["tools"] == export_tools(handle.tool_definitions_sorted(), "openai-responses")
        assert [(t["type"], t["name"], t["strict"]) for t in body["tools"]] == [
            ("function", "add_note", False),
            ("function", "get_note", False),
        ]

    @pytest.mark.anyio
    async def test_strict_tools(self, server, notes):
        """``strict=True`` sends the strict-mode schemas with ``strict: true``."""
        server.add(stream(*wire.responses_text("Hi.")))
        async with make_client(server, strict=True) as client:
            worker = make_worker(client, notes)
            await worker.run("hello")
        tools = server.requests[0].json["tools"]
        assert [t["strict"] for t in tools] == [True, True]
        assert tools[0]["parameters"]["required"] == ["title", "body"]

    @pytest.mark.anyio
    async def test_history_mapping(self, server):
        """Assistant text and calls become a message and function_call items, results
        become function_call_output items with the matching call ids."""
        server.add(stream(*wire.responses_text("ok")))
        history = [
            UserMessage("first"),
            AssistantMessage("Looking.", (ToolCall("call_a", "get_note", '{"title": "x"}'),)),
            ToolResult("call_a", "Execution failed: no note called 'x'", is_error=True),
            AssistantMessage("", (ToolCall("call_b", "get_note", ""),)),
            ToolResult("call_b", "Invalid argument: 'title': missing required argument", True),
            AssistantMessage("Nothing there."),
        ]
        async with make_client(server) as client:
            worker = Worker(client)
            worker.set_history(history)
            await worker.run("second")
        body = server.requests[0].json
        assert "instructions" not in body
        assert body["input"] == [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "Looking."},
            function_call("call_a", "get_note", '{"title": "x"}'),
            call_output("call_a", "Execution failed: no note called 'x'"),
            function_call("call_b", "get_note", "{}"),
            call_output("call_b", "Invalid argument: 'title': missing required argument"),
            {"role": "assistant", "content": "Nothing there."},
            {"role": "user", "content": "second"},
        ]


REQUEST = LlmRequest(None, (UserMessage("go"),), ())


class TestStream:
    @pytest.mark.anyio
    async def test_event_sequence(self, server):
        """The client's own events: text, then per function_call item (indexed by its
        output_index) its start, fragments and stop, then the Completion."""
        calls = [("call_a", "add_note", '{"title": "a"}'), ("call_b", "get_note", "{}")]
        server.add(stream(*wire.responses_calls(calls, text="Both.", chunk_size=8)))
        async with make_client(server) as client:
            events = [event async for event in client.stream(REQUEST)]
        assert events == [
            TextDelta("Both."),
            ToolUseStart(1, "call_a", "add_note"),
            ToolInputDelta(1, '{"title"'),
            ToolInputDelta(1, ': "a"}'),
            ToolUseStop(1),
            ToolUseStart(2, "call_b", "get_note"),
            ToolInputDelta(2, "{}"),
            ToolUseStop(2),
            Completion(
                "tool_use",
                Usage(80, 24),
                "resp_6859a4b21f84819bba8036beab6d54360be65637a2186412",
                "gpt-test-mini",
            ),
        ]

    @pytest.mark.anyio
    async def test_text(self, server):
        """Output text deltas become the answer, with ``end_turn`` and the usage."""
        server.add(stream(*wire.responses_text("Hel", "lo.", usage=(20, 4))))
        async with make_client(server) as client:
            worker = Worker(client)
            assert await worker.run("hi") is WorkerResult.FINISHED
        assert worker.history[-1] == AssistantMessage("Hello.", (), "end_turn")
        assert worker.history[-1].usage == Usage(20, 4)

    @pytest.mark.anyio
    async def test_calls_in_fragments(self, server, notes):
        """Function calls whose arguments arrive one character at a time are run, and
        their outputs go back under their call ids, in call order."""
        calls = [
            ("call_a", "add_note", '{"title": "a", "body": "caf\\u00e9"}'),
            ("call_b", "add_note", '{"title": "b"}'),
        ]
        server.add(
            stream(*wire.responses_calls(calls, text="Saving.", chunk_size=1)),
            stream(*wire.responses_text("Done.")),
        )
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            await worker.run("save a and b")
        assert notes.notes == {"a": "café", "b": ""}
        assert worker.history[1] == AssistantMessage(
            "Saving.", tuple(ToolCall(*call) for call in calls), "tool_use"
        )
        assert server.requests[1].json["input"][-2:] == [
            call_output("call_a", "saved a"),
            call_output("call_b", "saved b"),
        ]
        assert_history_valid(worker.history)

    @pytest.mark.anyio
    async def test_incomplete(self, server):
        """A response cut by ``max_output_tokens`` ends with stop reason ``max_tokens``."""
        frames = wire.ResponseEvents().start().text("Half").incomplete("max_output_tokens")
        server.add(stream(*frames))
        async with make_client(server) as client:
            worker = Worker(client)
            await worker.run("hi")
        assert worker.history[-1] == AssistantMessage("Half", (), "max_tokens")

    @pytest.mark.anyio
    async def test_a_refusal_is_text_that_ends_with_stop_reason_refusal(self, server):
        """``response.refusal.delta`` text is the answer's text, and the response's stop
        reason is ``refusal`` (as Anthropic's), not ``end_turn``: a refusal can be told
        from an answer."""
        server.add(stream(*responses_refusal("I can't ", "help with that.")))
        async with make_client(server) as client:
            worker = Worker(client)
            await worker.run("hi")
        assert worker.history[-1] == AssistantMessage("I can't help with that.", (), "refusal")

    @pytest.mark.anyio
    async def test_a_refusal_only_in_the_finished_output_is_one_too(self, server):
        """A server that sends no refusal events but the message's ``refusal`` part in
        ``response.completed``: still ``refusal``."""
        events = wire.ResponseEvents().start()
        part = {"type": "refusal", "refusal": "No."}
        item = {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant"}
        events.output.append({**item, "content": [part]})
        server.add(stream(*events.completed()))
        async with make_client(server) as client:
            worker = Worker(client)
            await worker.run("hi")
        assert worker.history[-1].stop_reason == "refusal"


def responses_refusal(*pieces: str) -> tuple[str, ...]:
    """A message item holding a ``refusal`` part, streamed as ``response.refusal.*`` events
    (API reference, "Streaming events")."""
    events = wire.ResponseEvents().start()
    item = {"id": "msg_refused0", "type": "message", "status": "in_progress", "role": "assistant"}
    events.add("response.output_item.added", output_index=0, item={**item, "content": []})
    where = {"item_id": item["id"], "output_index": 0, "content_index": 0}
    events.add("response.content_part.added", **where, part={"type": "refusal", "refusal": ""})
    for piece in pieces:
        events.add("response.refusal.delta", **where, delta=piece)
    text = "".join(pieces)
    events.add("response.refusal.done", **where, refusal=text)
    part = {"type": "refusal", "refusal": text}
    events.add("response.content_part.done", **where, part=part)
    done = {**item, "status": "completed", "content": [part]}
    events.add("response.output_item.done", output_index=0, item=done)
    events.output.append(done)
    return events.completed()


class TestConversation:
    @pytest.mark.anyio
    async def test_calls_a_server_gave_no_id_get_ids_of_their_own(self, server, notes):
        """Two calls whose ids a server left empty: each gets an id of its own, and the
        next request sends each result under its call's id."""
        server.add(
            stream(
                *wire.ResponseEvents()
                .start()
                .call("", "add_note", '{"title":"x"}')
                .call("", "get_note", '{"title":"x"}')
                .completed()
            ),
            stream(*wire.ResponseEvents().start().text("ok").completed()),
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
        """Two runs, four requests: each sends the whole conversation as ``input``, and
        each request's input starts with the previous one's."""
        server.add(
            stream(*wire.responses_calls([("call_1", "add_note", '{"title": "milk"}')])),
            stream(*wire.responses_text("Noted.")),
            stream(
                *wire.responses_calls(
                    [
                        ("call_2", "get_note", '{"title": "milk"}'),
                        ("call_3", "get_note", '{"title": "eggs"}'),
                    ],
                    chunk_size=5,
                )
            ),
            stream(*wire.responses_text("Milk is noted, eggs are not.")),
        )
        async with make_client(server) as client:
            locked = make_worker(client, notes).lock()
            await locked.run("remember milk")
            await locked.run("milk and eggs?")
        assert locked.final_text == "Milk is noted, eggs are not."
        assert_history_valid(locked.history)
        assert server.requests[3].json["input"] == [
            {"role": "user", "content": "remember milk"},
            function_call("call_1", "add_note", '{"title": "milk"}'),
            call_output("call_1", "saved milk"),
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": "milk and eggs?"},
            function_call("call_2", "get_note", '{"title": "milk"}'),
            function_call("call_3", "get_note", '{"title": "eggs"}'),
            call_output("call_2", ""),
            call_output("call_3", "Execution failed: no note called 'eggs'"),
        ]
        inputs = [r.json["input"] for r in server.requests]
        for earlier, later in itertools.pairwise(inputs):
            assert later[: len(earlier)] == earlier


class TestErrors:
    @pytest.mark.anyio
    async def test_rate_limited(self, server):
        """A 429 is a retryable ProviderError chained to the SDK's RateLimitError."""
        server.add(error(429, wire.RATE_LIMITED))
        async with make_client(server) as client:
            worker = Worker(client)
            with pytest.raises(ProviderError) as info:
                await worker.run("hi")
        assert (info.value.status, info.value.retryable) == (429, True)
        assert info.value.message == wire.RATE_LIMITED["error"]["message"]
        assert isinstance(info.value.__cause__, openai.RateLimitError)
        assert worker.history == (UserMessage("hi"),)

    @pytest.mark.parametrize(
        ("code", "retryable"), [("server_error", True), ("invalid_prompt", False)]
    )
    @pytest.mark.anyio
    async def test_failed_response(self, server, notes, code, retryable):
        """A ``response.failed`` event ends the run with the response's error message;
        nothing streamed before it reaches the history."""
        frames = wire.ResponseEvents().start().call("call_1", "add_note", '{"title": "x"}')
        server.add(stream(*frames.failed(code, "The model failed to respond.")))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            with pytest.raises(ProviderError) as info:
                await worker.run("hi")
        err = info.value
        assert (err.message, err.status, err.retryable) == (
            "The model failed to respond.",
            None,
            retryable,
        )
        assert worker.history == (UserMessage("hi"),)
        assert notes.calls == []

    @pytest.mark.anyio
    async def test_error_event(self, server):
        """An ``error`` event is a ProviderError with its message."""
        frames = wire.ResponseEvents().start().error("server_error", "Something went wrong.")
        server.add(stream(*frames))
        async with make_client(server) as client:
            worker = Worker(client)
            with pytest.raises(ProviderError) as info:
                await worker.run("hi")
        assert (info.value.message, info.value.retryable) == ("Something went wrong.", True)
        assert worker.history == (UserMessage("hi"),)

    @pytest.mark.parametrize(
        "reply",
        [
            pytest.param(
                stream(*wire.ResponseEvents().start().error("server_error", HUGE)),
                id="an error event's",
            ),
            pytest.param(
                stream(*wire.ResponseEvents().start().failed("server_error", HUGE)),
                id="a failed response's",
            ),
            pytest.param(
                error(400, wire.openai_error(HUGE, "invalid_request_error")),
                id="an error body's",
            ),
        ],
    )
    @pytest.mark.anyio
    async def test_a_huge_message_is_cut(self, server, reply):
        """An error message of 1 000 000 characters is cut to 300 characters, ending in
        "...": so is the error's text (and its span's status)."""
        server.add(reply)
        async with make_client(server) as client:
            with anyio.fail_after(20), pytest.raises(ProviderError) as info:
                await Worker(client).run("hi")
        assert info.value.message == "x" * 297 + "..."
        assert len(str(info.value)) < 350

    @pytest.mark.parametrize("kind", ["error", "failed"])
    @pytest.mark.anyio
    async def test_an_error_without_words(self, server, kind):
        """An ``error`` event or a failed response whose message is empty (or only
        whitespace) says that the response failed."""
        events = wire.ResponseEvents().start()
        server.add(stream(*getattr(events, kind)("server_error", " \n ")))
        async with make_client(server) as client:
            with anyio.fail_after(10), pytest.raises(ProviderError) as info:
                await Worker(client).run("hi")
        assert (info.value.message, info.value.retryable) == ("the response failed", True)

    @pytest.mark.anyio
    async def test_connection_dropped_mid_stream(self, server, notes):
        """A connection cut mid-response is a retryable ProviderError; the next run works."""
        frames = wire.responses_calls([("call_1", "add_note", '{"title": "milk"}')], chunk_size=2)
        server.add(stream(*frames[:5], cut=True), stream(*wire.responses_text("Back.")))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            with pytest.raises(ProviderError) as info:
                await worker.run("remember milk")
            assert info.value.message.startswith("the connection failed (RemoteProtocolError: ")
            assert info.value.retryable
            assert await worker.run("again") is WorkerResult.FINISHED
        assert notes.calls == []
        assert_history_valid(worker.history)

    @pytest.mark.anyio
    async def test_stream_ends_early(self, server):
        """A stream that ends before ``response.completed`` is a retryable ProviderError."""
        server.add(stream(*wire.ResponseEvents().start().text("Half").frames))
        async with make_client(server) as client:
            with pytest.raises(ProviderError) as info:
                await Worker(client).run("hi")
        assert info.value.message == "the response stream ended before the response was complete"

    @pytest.mark.parametrize(
        ("event", "then"),
        [
            pytest.param("response.output_item.added", True, id="output_item.added without item"),
            pytest.param("response.completed", False, id="completed without response"),
            pytest.param("response.incomplete", False, id="incomplete without response"),
        ],
    )
    @pytest.mark.anyio
    async def test_a_malformed_event_is_a_provider_error(self, server, event, then):
        """An event without the object the reader needs (``item``, ``response``) is a
        ProviderError saying the provider sent a malformed stream event, not retryable."""
        events = wire.ResponseEvents().start().text("Hi")
        events.add(event, output_index=1)
        server.add(stream(*(events.completed() if then else events.frames)))
        async with make_client(server) as client:
            worker = Worker(client)
            with anyio.fail_after(10), pytest.raises(ProviderError) as info:
                await worker.run("hi")
        assert info.value.message.startswith(
            "the provider sent a malformed stream event (AttributeError: "
        )
        assert (info.value.status, info.value.retryable) == (None, False)
        assert isinstance(info.value.__cause__, AttributeError)
        assert worker.history == (UserMessage("hi"),)


class TestClient:
    def test_client_or_settings(self):
        """Passing an SDK client and settings for another one is refused, by name."""
        with pytest.raises(TypeError) as info:
            OpenAIResponsesClient(MODEL, client=openai.AsyncOpenAI(api_key="k"), timeout=5)
        assert str(info.value) == (
            "OpenAIResponsesClient takes client= or timeout=, not both; "
            "configure the AsyncOpenAI client instead"
        )

    def test_repr(self, server):
        """The repr names the class, the model and the server."""
        assert repr(make_client(server)) == (
            f"<OpenAIResponsesClient model='gpt-test-mini' base_url='{server.base_url}/v1/'>"
        )


class TestToolSelection:
    @pytest.mark.anyio
    async def test_tool_choice_and_allowed_tools(self, server, notes):
        """The Responses API gets ``{"type": "function", "name"}`` for a named tool and an
        ``allowed_tools`` tool_choice for a selection; the default sends none."""
        for _ in range(3):
            server.add(stream(*wire.ResponseEvents().text("Hi.").completed()))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            await worker.run("a")
            await worker.run("b", tool_choice="add_note")
            await worker.run("c", allowed_tools=["get_note"])
        bodies = [r.json for r in server.requests]
        assert "tool_choice" not in bodies[0]
        assert bodies[1]["tool_choice"] == {"type": "function", "name": "add_note"}
        assert bodies[2]["tool_choice"] == {
            "type": "allowed_tools",
            "mode": "auto",
            "tools": [{"type": "function", "name": "get_note"}],
        }

    @pytest.mark.anyio
    async def test_no_allowed_tools_is_tool_choice_none(self, server, notes):
        """An empty ``allowed_tools``, "auto" or "required", is ``"none"``, not an
        ``allowed_tools`` choice with no tools."""
        for _ in range(2):
            server.add(stream(*wire.ResponseEvents().text("Hi.").completed()))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            await worker.run("a", allowed_tools=[])
            await worker.run("b", tool_choice="required", allowed_tools=[])
        assert [r.json["tool_choice"] for r in server.requests] == ["none", "none"]

    @pytest.mark.anyio
    async def test_cached_and_reasoning_tokens(self, server, notes):
        """``input_tokens_details.cached_tokens`` and ``output_tokens_details.
        reasoning_tokens`` reach the response's Usage."""
        events = wire.ResponseEvents().text("Hi.")
        frames = list(events.completed(usage=(200, 50)))
        body = frames[-1]
        body = body.replace('"cached_tokens": 0', '"cached_tokens": 150').replace(
            '"reasoning_tokens": 0', '"reasoning_tokens": 20'
        )
        frames[-1] = body
        server.add(stream(*frames))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            await worker.run("hi")
        assert worker.history[-1].usage == Usage(200, 50, 150, 20)


ENCRYPTED = "gAAAAABoWaS0x4m3K1Jd0cXqPyVJ5u1NfWtGmvHnHf0-rxP1TjXGZs4Vq8sQ_Kc7Q=="
SUMMARY = ["**Saving the note**\n\nThe user wants milk noted.", "I'll call add_note."]


def reasoning_then_call(call_id: str, title: str, *, encrypted: str | None = ENCRYPTED):
    events = wire.add_reasoning(wire.ResponseEvents().start(), SUMMARY, encrypted)
    return events.call(call_id, "add_note", f'{{"title": "{title}"}}').completed((90, 40))


def sent_back(item: dict) -> dict:
    """A reasoning item as a stateless request sends it: everything but its id."""
    return {key: value for key, value in item.items() if key != "id"}


class TestReasoning:
    @pytest.mark.anyio
    async def test_reasoning_items_are_kept_and_sent_back(self, server, notes):
        """Every request asks for ``reasoning.encrypted_content``; a reasoning item (summary
        streamed as reasoning) is kept with the message, and the request with the call's
        output sends it back, without its id, in front of the function call."""
        server.add(
            stream(*reasoning_then_call("call_1", "milk")),
            stream(*wire.responses_text("Noted.")),
        )
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            async with worker.run_stream("remember milk") as events:
                seen = [event async for event in events]
        reasoning = "".join(event.text for event in seen if isinstance(event, ReasoningDelta))
        assert reasoning == "\n\n".join(SUMMARY)
        item = wire.reasoning_item(0, SUMMARY, ENCRYPTED)
        message = worker.history[1]
        assert message.tool_calls == (ToolCall("call_1", "add_note", '{"title": "milk"}'),)
        assert [(i.provider, i.kind, i.json()) for i in message.provider_items] == [
            ("openai", "reasoning", item)
        ]
        first, second = (r.json for r in server.requests)
        assert first["include"] == second["include"] == ["reasoning.encrypted_content"]
        assert first["store"] is False
        assert second["input"] == [
            {"role": "user", "content": "remember milk"},
            sent_back(item),
            function_call("call_1", "add_note", '{"title": "milk"}'),
            call_output("call_1", "saved milk"),
        ]

    @pytest.mark.anyio
    async def test_stored_responses_keep_item_ids(self, server, notes):
        """With ``store: true`` (``extra_body``) a reasoning item goes back with its id."""
        server.add(
            stream(*reasoning_then_call("call_1", "milk", encrypted=None)),
            stream(*wire.responses_text("Noted.")),
        )
        async with make_client(server, extra_body={"store": True}) as client:
            worker = make_worker(client, notes)
            await worker.run("remember milk")
        second = server.requests[1].json
        assert second["store"] is True
        assert second["input"][1] == wire.reasoning_item(0, SUMMARY, None)

    @pytest.mark.anyio
    async def test_unreadable_reasoning_is_left_out(self, server, notes):
        """Stateless, a reasoning item without ``encrypted_content`` (a server that ignores
        ``include``) cannot be read back: it is left out, the call still goes."""
        server.add(
            stream(*reasoning_then_call("call_1", "milk", encrypted=None)),
            stream(*wire.responses_text("Noted.")),
        )
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            await worker.run("remember milk")
        assert server.requests[1].json["input"][1:] == [
            function_call("call_1", "add_note", '{"title": "milk"}'),
            call_output("call_1", "saved milk"),
        ]

    @pytest.mark.anyio
    async def test_reasoning_across_turns_and_a_saved_state(self, server, notes):
        """A run with reasoning, saved as JSON and loaded into a new worker with the same
        tools: its next request sends the earlier reasoning back, in place, and the new
        turn's reasoning after it."""
        server.add(
            stream(*reasoning_then_call("call_1", "milk")),
            stream(*wire.responses_text("Noted milk.")),
            stream(*reasoning_then_call("call_2", "eggs")),
            stream(*wire.responses_text("Noted eggs.")),
        )
        async with make_client(server) as client:
            first = make_worker(client, notes)
            await first.run("remember milk")
            second = make_worker(client, notes)
            second.load_state(RunState.from_json(first.state.to_json()))
            assert await second.run("and eggs") is WorkerResult.FINISHED
        item = sent_back(wire.reasoning_item(0, SUMMARY, ENCRYPTED))
        assert server.requests[3].json["input"] == [
            {"role": "user", "content": "remember milk"},
            item,
            function_call("call_1", "add_note", '{"title": "milk"}'),
            call_output("call_1", "saved milk"),
            {"role": "assistant", "content": "Noted milk."},
            {"role": "user", "content": "and eggs"},
            item,
            function_call("call_2", "add_note", '{"title": "eggs"}'),
            call_output("call_2", "saved eggs"),
        ]
        assert notes.notes == {"milk": "", "eggs": ""}
