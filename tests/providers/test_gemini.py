"""``llm_worker.providers.gemini``: the real ``google-genai`` SDK against a local server.

The server speaks Gemini's ``streamGenerateContent?alt=sse`` as Google documents it
(``wire.py``); each test asserts both the request body the SDK sent and what the worker
made of the streamed answer. Nothing of the SDK is mocked: the client is pointed at the
server with ``base_url`` (the SDK's ``HttpOptions.base_url``).
"""

from __future__ import annotations

import base64
import dataclasses
import itertools
import json

import anyio
import httpx2
import pytest
from google import genai
from google.genai import errors, types
from google.oauth2.credentials import Credentials
from support import assert_history_valid

from llm_worker import (
    AssistantMessage,
    Completion,
    LlmRequest,
    ProviderError,
    ProviderItem,
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
from llm_worker.providers.gemini import GeminiClient

from . import wire
from .app import Notes
from .server import STALL, ProviderServer, error, stalled_stream, stream

# The SDK nests async generators; one closed early leaves the rest to the garbage
# collector, which trio reports as ResourceWarnings.
pytestmark = pytest.mark.filterwarnings(
    r"ignore:Async generator '(google|httpx2|httpcore2)\.[^']*' was garbage "
    r"collected:ResourceWarning"
)

MODEL = wire.GEMINI_MODEL
SYSTEM = "You keep notes."
HUGE = "x" * 1_000_000  # a server's error text of any length
PATH = f"/v1/models/{MODEL}:streamGenerateContent?alt=sse"
# Real signatures are standard base64 with + and /; the SDK sends bytes back URL-safe.
SIGNATURE = base64.b64encode(b"\x12\xfb\xef\xbe+/signature-of-thought-1").decode()
SIGNATURE_2 = base64.b64encode(b"\x0a\xff\xfe second thought").decode()
SKIP = "skip_thought_signature_validator"


def make_client(server: ProviderServer, **options) -> GeminiClient:
    options.setdefault("max_retries", 0)
    return GeminiClient(MODEL, api_key="test-key", base_url=server.base_url, **options)


def make_worker(client: GeminiClient, notes: Notes, system_prompt: str | None = SYSTEM) -> Worker:
    worker = Worker(client, system_prompt=system_prompt)
    worker.register_tools(tool_definitions(notes))
    return worker


def signature_bytes(part: dict) -> bytes:
    """A part's ``thoughtSignature`` as bytes (the SDK may send it URL-safe)."""
    return base64.urlsafe_b64decode(part["thoughtSignature"].replace("+", "-").replace("/", "_"))


def user(text: str) -> dict:
    return {"role": "user", "parts": [{"text": text}]}


def call_part(name: str, args: dict, call_id: str | None = None) -> dict:
    call: dict = {"args": args, "name": name}
    if call_id is not None:
        call["id"] = call_id
    return {"functionCall": call}


def response_part(name: str, content: str, call_id: str | None = None, error=False) -> dict:
    response: dict = {"name": name, "response": {"error" if error else "output": content}}
    if call_id is not None:
        response["id"] = call_id
    return {"functionResponse": response}


def kept(message: AssistantMessage) -> list[tuple[str, str, dict]]:
    return [(item.provider, item.kind, item.json()) for item in message.provider_items]


REQUEST = LlmRequest(None, (UserMessage("go"),), ())


class TestRequest:
    @pytest.mark.anyio
    async def test_first_request(self, server, notes):
        """The SDK posts to the model's streamGenerateContent with the key header, the
        user's message, the system instruction and the tools as one functionDeclarations
        entry in Gemini's schema; nothing else goes in the generation config."""
        server.add(stream(*wire.gemini_text("Hi.")))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            await worker.run("hello")
        [received] = server.requests
        assert received.path == PATH
        assert received.headers["x-goog-api-key"] == "test-key"
        body = received.json
        assert body["contents"] == [user("hello")]
        assert body["systemInstruction"] == {"parts": [{"text": SYSTEM}], "role": "user"}
        definitions = worker.tool_server_handle().tool_definitions_sorted()
        assert body["tools"] == [{"functionDeclarations": export_tools(definitions, "gemini")}]
        assert body["tools"][0]["functionDeclarations"][0]["parameters"]["type"] == "OBJECT"
        assert "toolConfig" not in body
        assert body.get("generationConfig", {}) == {}

    @pytest.mark.anyio
    async def test_no_system_prompt_no_tools(self, server):
        """Without a system prompt or tools, neither is sent."""
        server.add(stream(*wire.gemini_text("Hi.")))
        async with make_client(server) as client:
            await Worker(client).run("hello")
        body = server.requests[0].json
        assert "systemInstruction" not in body
        assert "tools" not in body

    @pytest.mark.anyio
    async def test_options(self, server):
        """``max_tokens``, ``temperature`` and ``config`` go into the generation config;
        ``extra_body`` is merged into the body."""
        server.add(stream(*wire.gemini_text("Hi.")))
        client = make_client(
            server,
            max_tokens=300,
            temperature=0.25,
            config={"thinking_config": {"include_thoughts": True, "thinking_budget": 512}},
            extra_body={"labels": {"team": "notes"}},
        )
        async with client:
            await Worker(client).run("hello")
        body = server.requests[0].json
        assert body["generationConfig"] == {
            "maxOutputTokens": 300,
            "temperature": 0.25,
            # The SDK names the fields of a nested config as they were given.
            "thinkingConfig": {"include_thoughts": True, "thinking_budget": 512},
        }
        assert body["labels"] == {"team": "notes"}

    @pytest.mark.anyio
    async def test_extra_body_keeps_the_configs_http_options(self, server):
        """``extra_body`` joins the ``http_options`` given in ``config`` (a header, the
        config's own extra body), never replaces them."""
        server.add(stream(*wire.gemini_text("Hi.")))
        client = make_client(
            server,
            config={"http_options": {"headers": {"x-team": "notes"}, "extra_body": {"a": 1}}},
            extra_body={"labels": {"team": "notes"}},
        )
        async with client:
            await Worker(client).run("hello")
        request = server.requests[0]
        assert request.headers.get("x-team") == "notes"
        assert (request.json["labels"], request.json["a"]) == ({"team": "notes"}, 1)

    @pytest.mark.anyio
    async def test_a_kept_message_whose_call_was_edited_is_rebuilt(self, server):
        """A Gemini message's kept parts say its calls only as they were: a call edited
        since (set_history: a redaction, another tool) is sent as it now is."""
        server.add(stream(*wire.gemini_text("ok")))
        part = {
            "functionCall": {"name": "send_email", "args": {"to": "alice@example.com"}},
            "thoughtSignature": "c2ln",
        }
        kept = AssistantMessage(
            "",
            (ToolCall("call_r_0", "send_email", '{"to": "alice@example.com"}'),),
            "tool_use",
            provider_items=(ProviderItem("gemini", "function_call", json.dumps(part)),),
        )
        edited = dataclasses.replace(
            kept, tool_calls=(ToolCall("call_r_0", "archive_email", '{"to": "[redacted]"}'),)
        )
        async with make_client(server) as client:
            worker = Worker(client)
            worker.set_history([UserMessage("hi"), edited, ToolResult("call_r_0", "done")])
            await worker.run("and?")
        sent = json.dumps(server.requests[0].json["contents"])
        assert "alice@example.com" not in sent
        assert "archive_email" in sent
        assert "send_email" not in sent

    @pytest.mark.anyio
    async def test_history_mapping(self, server):
        """Text and calls of a message no Gemini model made become a model turn (the first
        call with the documented skip signature); consecutive results become one user turn
        of functionResponse parts naming their function, failed ones as ``error``."""
        server.add(stream(*wire.gemini_text("ok")))
        history = [
            UserMessage("first"),
            AssistantMessage(
                "Looking.",
                (
                    ToolCall("toolu_a", "get_note", '{"title": "x"}'),
                    ToolCall("toolu_b", "get_note", '{"title": '),
                ),
            ),
            ToolResult("toolu_a", "Execution failed: no note called 'x'", is_error=True),
            ToolResult("toolu_b", "Invalid argument: input is not valid JSON", is_error=True),
            AssistantMessage(""),
            UserMessage("hello?"),
            AssistantMessage("Nothing there."),
        ]
        async with make_client(server) as client:
            worker = Worker(client)
            worker.set_history(history)
            await worker.run("second")
        contents = server.requests[0].json["contents"]
        first_call = {**call_part("get_note", {"title": "x"}, "toolu_a"), "thoughtSignature": SKIP}
        assert contents == [
            user("first"),
            {
                "role": "model",
                "parts": [
                    {"text": "Looking."},
                    first_call,
                    call_part("get_note", {}, "toolu_b"),
                ],
            },
            {
                "role": "user",
                "parts": [
                    response_part(
                        "get_note", "Execution failed: no note called 'x'", "toolu_a", True
                    ),
                    response_part(
                        "get_note", "Invalid argument: input is not valid JSON", "toolu_b", True
                    ),
                ],
            },
            user("hello?"),
            {"role": "model", "parts": [{"text": "Nothing there."}]},
            user("second"),
        ]


class TestToolSelection:
    @pytest.mark.anyio
    async def test_tool_choice_and_allowed_tools(self, server, notes):
        """``tool_choice`` and ``allowed_tools`` go out as ``functionCallingConfig``: none
        for the default, ANY for "required", NONE for "none", ANY naming the one tool for a
        tool's name, VALIDATED with the names for auto with ``allowed_tools``."""
        for _ in range(6):
            server.add(stream(*wire.gemini_text("Hi.")))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            await worker.run("a")
            await worker.run("b", tool_choice="required")
            await worker.run("c", tool_choice="none")
            await worker.run("d", tool_choice="get_note")
            await worker.run("e", allowed_tools=["get_note"])
            await worker.run("f", tool_choice="required", allowed_tools=["add_note"])
        configs = [r.json.get("toolConfig") for r in server.requests]
        assert configs == [
            None,
            {"functionCallingConfig": {"mode": "ANY"}},
            {"functionCallingConfig": {"mode": "NONE"}},
            {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_note"]}},
            {"functionCallingConfig": {"mode": "VALIDATED", "allowedFunctionNames": ["get_note"]}},
            {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["add_note"]}},
        ]
        for received in server.requests:
            names = [d["name"] for d in received.json["tools"][0]["functionDeclarations"]]
            assert names == ["add_note", "get_note"]  # every tool, every time

    @pytest.mark.anyio
    async def test_no_allowed_tools_is_mode_none(self, server, notes):
        """An empty ``allowed_tools``, "auto" or "required", is mode NONE: an empty
        ``allowedFunctionNames`` would restrict nothing."""
        for _ in range(2):
            server.add(stream(*wire.gemini_text("Hi.")))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            await worker.run("a", allowed_tools=[])
            await worker.run("b", tool_choice="required", allowed_tools=[])
        configs = [r.json.get("toolConfig") for r in server.requests]
        assert configs == [{"functionCallingConfig": {"mode": "NONE"}}] * 2

    @pytest.mark.anyio
    async def test_a_call_outside_allowed_tools_does_not_run(self, server, notes):
        """Whatever the model does, the worker refuses a call outside ``allowed_tools``."""
        server.add(
            stream(*wire.gemini_calls([("add_note", {"title": "milk"})], ids=["c1"])),
            stream(*wire.gemini_text("Ok.")),
        )
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            await worker.run("save", allowed_tools=["get_note"])
        [part] = server.requests[1].json["contents"][-1]["parts"]
        assert part["functionResponse"]["response"]["error"].startswith(
            "Tool call 'add_note' did not run"
        )
        assert notes.notes == {}


class TestStream:
    @pytest.mark.anyio
    async def test_event_sequence(self, server):
        """The client's own events: text, then per function call (indexed from 0) its start,
        its whole arguments and its stop, then the Completion with the usage."""
        calls = [("add_note", {"title": "a"}), ("get_note", {"title": "b"})]
        server.add(stream(*wire.gemini_calls(calls, text="Both.", ids=["c_a", "c_b"])))
        async with make_client(server) as client:
            with anyio.fail_after(10):
                events = [event async for event in client.stream(REQUEST)]
        assert events == [
            TextDelta("Both."),
            ToolUseStart(0, "c_a", "add_note"),
            ToolInputDelta(0, '{"title": "a"}'),
            ToolUseStop(0),
            ToolUseStart(1, "c_b", "get_note"),
            ToolInputDelta(1, '{"title": "b"}'),
            ToolUseStop(1),
            Completion("tool_use", Usage(30, 12), "7JxlaNnvIuqLxN8Pn7SU4A8", "gemini-test-flash"),
        ]

    @pytest.mark.anyio
    async def test_text(self, server):
        """Text parts over several chunks become the answer; STOP without calls is
        ``end_turn``; the usage is the last chunk's; plain text keeps no items."""
        server.add(stream(*wire.gemini_text("Hel", "lo, ", "world.", usage=(30, 6))))
        async with make_client(server) as client:
            worker = Worker(client)
            assert await worker.run("hi") is WorkerResult.FINISHED
        assert worker.history[-1] == AssistantMessage("Hello, world.", (), "end_turn")
        assert worker.history[-1].usage == Usage(30, 6)

    @pytest.mark.anyio
    async def test_parallel_calls_with_ids(self, server, notes):
        """Parallel calls with Gemini's ids run, and their responses carry the same ids,
        in call order, in one user turn."""
        calls = [
            ("add_note", {"title": "a", "body": 'first "quoted"'}),
            ("add_note", {"title": "b"}),
        ]
        server.add(
            stream(*wire.gemini_calls(calls, ids=["fc_1", "fc_2"])),
            stream(*wire.gemini_text("Done.")),
        )
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            await worker.run("save a and b")
        assert notes.notes == {"a": 'first "quoted"', "b": ""}
        assert worker.history[1].provider_items == ()
        contents = server.requests[1].json["contents"]
        # Plain calls are rebuilt from the message, the first with the skip signature
        # (a model that made no signature ignores it).
        first = {**call_part(*calls[0], "fc_1"), "thoughtSignature": SKIP}
        assert contents[1] == {"role": "model", "parts": [first, call_part(*calls[1], "fc_2")]}
        assert contents[2] == {
            "role": "user",
            "parts": [
                response_part("add_note", "saved a", "fc_1"),
                response_part("add_note", "saved b", "fc_2"),
            ],
        }
        assert_history_valid(worker.history)

    @pytest.mark.anyio
    async def test_calls_without_ids(self, server, notes):
        """Calls Gemini gives no id get one of ours (from the response id and the index);
        they go back as Gemini sent them, and their responses carry no id."""
        server.add(
            stream(*wire.gemini_calls([("add_note", {"title": "milk"})])),
            stream(*wire.gemini_text("Saved.")),
        )
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            await worker.run("remember milk")
        call_id = f"call_{wire.GEMINI_RESPONSE_ID}_0"
        assert worker.history[1].tool_calls == (ToolCall(call_id, "add_note", '{"title": "milk"}'),)
        assert worker.history[2] == ToolResult(call_id, "saved milk")
        contents = server.requests[1].json["contents"]
        assert contents[1:] == [
            {"role": "model", "parts": [call_part("add_note", {"title": "milk"})]},
            {"role": "user", "parts": [response_part("add_note", "saved milk")]},
        ]

    @pytest.mark.anyio
    async def test_arguments_streamed_in_parts(self, server, notes):
        """Vertex AI's ``stream_function_call_arguments``: the call's name first, then
        ``partialArgs`` (a string in pieces, a number, a nested key) until ``willContinue``
        ends; the arguments are put together and the call runs once."""
        frames = (
            wire.gemini_chunk(
                [
                    {
                        "functionCall": {"name": "add_note", "willContinue": True},
                        "thoughtSignature": SIGNATURE,
                    }
                ]
            ),
            wire.gemini_chunk(
                [
                    {
                        "functionCall": {
                            "partialArgs": [
                                {"jsonPath": "$.title", "stringValue": "gro", "willContinue": True}
                            ],
                            "willContinue": True,
                        }
                    }
                ]
            ),
            wire.gemini_chunk(
                [
                    {
                        "functionCall": {
                            "partialArgs": [
                                {"jsonPath": "$.title", "stringValue": "ceries"},
                                {"jsonPath": "$.body", "stringValue": "2 eggs, 1l milk"},
                            ],
                            "willContinue": True,
                        }
                    }
                ]
            ),
            wire.gemini_chunk([{"functionCall": {}}], "STOP", wire.gemini_usage(40, 20)),
        )
        server.add(stream(*frames), stream(*wire.gemini_text("Saved.")))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            await worker.run("save my groceries")
        assert notes.notes == {"groceries": "2 eggs, 1l milk"}
        [call] = worker.history[1].tool_calls
        assert call.input_json == '{"title": "groceries", "body": "2 eggs, 1l milk"}'
        [part] = server.requests[1].json["contents"][1]["parts"]
        assert part["functionCall"] == {
            "args": {"title": "groceries", "body": "2 eggs, 1l milk"},
            "name": "add_note",
        }
        assert signature_bytes(part) == base64.b64decode(SIGNATURE)

    @pytest.mark.parametrize(
        ("finish_reason", "stop_reason"),
        [("MAX_TOKENS", "max_tokens"), ("SAFETY", "safety"), ("RECITATION", "recitation")],
    )
    @pytest.mark.anyio
    async def test_finish_reasons(self, server, finish_reason, stop_reason):
        """Finish reasons other than STOP: MAX_TOKENS is ``max_tokens``, others lower-cased."""
        server.add(stream(*wire.gemini_text("cut", finish_reason=finish_reason)))
        async with make_client(server) as client:
            worker = Worker(client)
            await worker.run("hi")
        assert worker.history[-1] == AssistantMessage("cut", (), stop_reason)

    @pytest.mark.anyio
    async def test_blocked_prompt(self, server):
        """A prompt blocked before any candidate ends with the block reason, lower-cased."""
        frame = (
            "data: "
            '{"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, '
            '"usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7}, '
            f'"modelVersion": "{MODEL}", "responseId": "r1"}}\r\n\r\n'
        )
        server.add(stream(frame))
        async with make_client(server) as client:
            worker = Worker(client)
            assert await worker.run("hi") is WorkerResult.FINISHED
        assert worker.history[-1] == AssistantMessage("", (), "prohibited_content")
        assert worker.history[-1].usage == Usage(7, 0)

    @pytest.mark.anyio
    async def test_cached_and_thought_tokens(self, server):
        """Thought tokens count as output (and as reasoning); cached ones as input."""
        frames = (
            wire.gemini_chunk(
                [{"text": "Hi."}], "STOP", wire.gemini_usage(200, 10, thoughts=30, cached=150)
            ),
        )
        server.add(stream(*frames))
        async with make_client(server) as client:
            worker = Worker(client)
            await worker.run("hi")
        assert worker.history[-1].usage == Usage(200, 40, 150, 30)


def thought_then_call(title: str, call_id: str) -> tuple[str, ...]:
    """Gemini 3 with ``include_thoughts``: a thought summary, then a function call that
    carries the step's thought signature."""
    return (
        wire.gemini_chunk([{"text": "**Saving**\n\nThe user wants ", "thought": True}]),
        wire.gemini_chunk([{"text": f"{title} noted.", "thought": True}]),
        wire.gemini_chunk(
            [
                {
                    "functionCall": {"name": "add_note", "args": {"title": title}, "id": call_id},
                    "thoughtSignature": SIGNATURE,
                }
            ],
            "STOP",
            wire.gemini_usage(60, 12, thoughts=48),
        ),
    )


def answer_with_signature(text: str) -> tuple[str, ...]:
    """A text answer whose signature comes on a last, empty text part."""
    return (
        wire.gemini_chunk([{"text": text}]),
        wire.gemini_chunk(
            [{"text": "", "thoughtSignature": SIGNATURE_2}], "STOP", wire.gemini_usage(80, 4)
        ),
    )


class TestThoughtSignatures:
    @pytest.mark.anyio
    async def test_thoughts_and_signature_are_sent_back(self, server, notes):
        """Thought parts stream as reasoning, not text; the message keeps its parts, and the
        request with the call's response sends them back with the signature on the call,
        as Gemini 3 requires."""
        server.add(
            stream(*thought_then_call("milk", "fc_1")), stream(*answer_with_signature("Noted."))
        )
        async with make_client(
            server, config={"thinking_config": {"include_thoughts": True}}
        ) as client:
            worker = make_worker(client, notes)
            async with worker.run_stream("remember milk") as events:
                seen = [event async for event in events]
        reasoning = "".join(e.text for e in seen if isinstance(e, ReasoningDelta))
        assert reasoning == "**Saving**\n\nThe user wants milk noted."
        assert [e.text for e in seen if isinstance(e, TextDelta)] == ["Noted."]
        message = worker.history[1]
        assert message.text == ""
        assert message.usage == Usage(60, 60, reasoning_tokens=48)
        thought = {"text": "**Saving**\n\nThe user wants milk noted.", "thought": True}
        call = {**call_part("add_note", {"title": "milk"}, "fc_1"), "thoughtSignature": SIGNATURE}
        assert kept(message) == [
            ("gemini", "thought", thought),
            ("gemini", "function_call", call),
        ]
        turn = server.requests[1].json["contents"][1]
        assert turn["parts"][0] == thought
        assert turn["parts"][1]["functionCall"] == call["functionCall"]
        assert signature_bytes(turn["parts"][1]) == base64.b64decode(SIGNATURE)
        # The answer's signature rode on an empty text part: kept there.
        assert kept(worker.history[3]) == [
            ("gemini", "text", {"text": "Noted.", "thoughtSignature": SIGNATURE_2})
        ]

    @pytest.mark.anyio
    async def test_multi_turn_through_a_saved_state(self, server, notes):
        """Two runs with thoughts and signatures, the second in a new worker that loaded the
        first one's state as JSON: every model turn goes back as it came, signatures on
        their parts, and each request extends the one before."""
        server.add(
            stream(*thought_then_call("milk", "fc_1")),
            stream(*answer_with_signature("Noted milk.")),
            stream(*thought_then_call("eggs", "fc_2")),
            stream(*answer_with_signature("Noted eggs.")),
        )
        async with make_client(server) as client:
            first = make_worker(client, notes)
            await first.run("remember milk")
            second = make_worker(client, notes)
            second.load_state(RunState.from_json(first.state.to_json()))
            assert await second.run("and eggs") is WorkerResult.FINISHED
        assert_history_valid(second.history)
        bodies = [r.json["contents"] for r in server.requests]
        for earlier, later in itertools.pairwise(bodies):
            assert later[: len(earlier)] == earlier
        last = bodies[3]
        assert [turn["role"] for turn in last] == [
            "user",
            "model",
            "user",
            "model",
            "user",
            "model",
            "user",
        ]
        assert signature_bytes(last[1]["parts"][1]) == base64.b64decode(SIGNATURE)
        assert signature_bytes(last[3]["parts"][0]) == base64.b64decode(SIGNATURE_2)
        assert last[5]["parts"][1]["functionCall"]["id"] == "fc_2"
        assert last[6] == {
            "role": "user",
            "parts": [response_part("add_note", "saved eggs", "fc_2")],
        }
        assert notes.notes == {"milk": "", "eggs": ""}

    @pytest.mark.anyio
    async def test_items_of_another_provider_are_dropped(self, server):
        """A message kept by another provider's client is rebuilt from its text and calls."""
        foreign = AssistantMessage(
            "",
            (ToolCall("toolu_1", "get_note", '{"title": "x"}'),),
            "tool_use",
            None,
            (ProviderItem("anthropic", "thinking", '{"type": "thinking", "thinking": "hm"}'),),
        )
        server.add(stream(*wire.gemini_text("ok")))
        async with make_client(server) as client:
            worker = Worker(client)
            worker.set_history([UserMessage("go"), foreign, ToolResult("toolu_1", "none")])
            await worker.run("again")
        assert server.requests[0].json["contents"][1] == {
            "role": "model",
            "parts": [
                {**call_part("get_note", {"title": "x"}, "toolu_1"), "thoughtSignature": SKIP}
            ],
        }


class TestErrors:
    @pytest.mark.anyio
    async def test_the_wait_a_rate_limit_asks_for(self, server):
        """``retry_after``: what the response's Retry-After says."""
        server.add(
            error(
                429, wire.gemini_error(429, "Quota exceeded", "RESOURCE_EXHAUSTED"), retry_after="9"
            )
        )
        async with make_client(server) as client:
            with pytest.raises(ProviderError) as info:
                await Worker(client).run("hi")
        assert (info.value.status, info.value.retry_after) == (429, 9.0)

    @pytest.mark.anyio
    async def test_a_fastapi_style_body_gives_its_message(self, server):
        """A proxy's `{"detail": "..."}` body: its detail is the message, not a repr."""
        server.add(error(500, {"detail": "upstream exploded"}))
        async with make_client(server) as client:
            with pytest.raises(ProviderError) as info:
                await Worker(client).run("hi")
        assert (info.value.status, info.value.message) == (500, "upstream exploded")

    @pytest.mark.parametrize(
        ("status", "kind", "message", "retryable"),
        [
            (429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).", True),
            (503, "UNAVAILABLE", "The model is overloaded. Please try again later.", True),
            (400, "INVALID_ARGUMENT", "Request contains an invalid argument.", False),
            (403, "PERMISSION_DENIED", "API key not valid. Please pass a valid API key.", False),
        ],
        ids=["429", "503", "400", "403"],
    )
    @pytest.mark.anyio
    async def test_error_status(self, server, status, kind, message, retryable):
        """An error status becomes a ProviderError with Gemini's message and the status,
        chained to the SDK's APIError; only the user message stays in the history."""
        server.add(error(status, wire.gemini_error(status, message, kind)))
        async with make_client(server) as client:
            worker = Worker(client)
            with pytest.raises(ProviderError) as info:
                await worker.run("hi")
        err = info.value
        assert (err.provider, err.status, err.retryable, err.message) == (
            "gemini",
            status,
            retryable,
            message,
        )
        assert str(err) == f"gemini request failed (HTTP {status}): {message}"
        assert isinstance(err.__cause__, errors.APIError)
        assert worker.history == (UserMessage("hi"),)
        assert len(server.requests) == 1  # max_retries=0

    @pytest.mark.anyio
    async def test_error_inside_the_stream(self, server, notes):
        """An ``{"error": ...}`` chunk mid-stream ends the run with its code and message;
        nothing streamed before it reaches the history."""
        frames = (
            wire.gemini_chunk([{"text": "Let me"}]),
            f"data: {json.dumps(wire.gemini_error(503, 'Overloaded', 'UNAVAILABLE'))}\r\n\r\n",
        )
        server.add(stream(*frames))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            with pytest.raises(ProviderError) as info:
                await worker.run("hi")
        assert (info.value.status, info.value.retryable, info.value.message) == (
            503,
            True,
            "Overloaded",
        )
        assert worker.history == (UserMessage("hi"),)

    @pytest.mark.parametrize(
        ("reply", "said"),
        [
            pytest.param(
                error(400, wire.gemini_error(400, HUGE, "INVALID_ARGUMENT")),
                HUGE,
                id="an error body's message",
            ),
            pytest.param(
                stream(f"data: {json.dumps(wire.gemini_error(503, HUGE, 'UNAVAILABLE'))}\r\n\r\n"),
                HUGE,
                id="an error chunk's message",
            ),
            pytest.param(
                error(400, wire.gemini_error(400, "", HUGE)),
                HUGE,
                id="an error body's status name",
            ),
            pytest.param(error(500, {"detail": HUGE}), HUGE, id="a detail"),
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
    async def test_server_error_without_json(self, server):
        """A 502 whose body is not JSON keeps the page's text as the message."""
        server.add(error(502, "<html>  Bad gateway\n</html>"))
        async with make_client(server) as client:
            with pytest.raises(ProviderError) as info:
                await Worker(client).run("hi")
        assert (info.value.status, info.value.retryable) == (502, True)
        assert info.value.message == "<html> Bad gateway </html>"

    @pytest.mark.anyio
    async def test_connection_dropped_mid_stream(self, server, notes):
        """A connection cut mid-stream is a retryable ProviderError; the history stays
        valid and the next run works."""
        frames = thought_then_call("milk", "fc_1")
        server.add(stream(*frames[:2], cut=True), stream(*wire.gemini_text("Back.")))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            with pytest.raises(ProviderError) as info:
                await worker.run("remember milk")
            err = info.value
            assert err.message.startswith("the connection failed (RemoteProtocolError: ")
            assert (err.status, err.retryable) == (None, True)
            assert worker.history == (UserMessage("remember milk"),)
            assert await worker.run("are you there?") is WorkerResult.FINISHED
        assert notes.calls == []
        assert worker.final_text == "Back."

    @pytest.mark.anyio
    async def test_stream_ends_without_a_finish_reason(self, server):
        """A stream that ends cleanly before any finishReason is a retryable ProviderError."""
        server.add(stream(wire.gemini_chunk([{"text": "Half an ans"}])))
        async with make_client(server) as client:
            worker = Worker(client)
            with pytest.raises(ProviderError) as info:
                await worker.run("hi")
        assert info.value.message == "the response stream ended before the response was complete"
        assert (info.value.status, info.value.retryable) == (None, True)
        assert worker.history == (UserMessage("hi"),)

    @pytest.mark.anyio
    async def test_connection_refused(self):
        """Nothing listening on the port: a retryable ProviderError naming the failure."""
        with ProviderServer() as closed:
            base_url = closed.base_url
        async with GeminiClient(MODEL, api_key="k", base_url=base_url, max_retries=0) as client:
            with pytest.raises(ProviderError) as info:
                await Worker(client).run("hi")
        assert info.value.message.startswith("the connection failed (ConnectError: ")
        assert (info.value.status, info.value.retryable) == (None, True)
        assert isinstance(info.value.__cause__, httpx2.ConnectError)

    @pytest.mark.anyio
    async def test_an_empty_history_is_a_request_that_could_not_be_built(self, server):
        """The SDK refuses to build a request without contents (its ``ValueError``, raised
        on the stream's first read): a ProviderError saying so, not retryable, and no
        request reached the server; not a connection that failed."""
        server.add(stream(*wire.gemini_text("Never sent.")))
        async with make_client(server) as client:
            with anyio.fail_after(10), pytest.raises(ProviderError) as info:
                async for _ in client.stream(LlmRequest(None, (), ())):
                    pass
        err = info.value
        assert err.message == (
            "the request could not be built, so it was not sent "
            "(ValueError: contents are required.)"
        )
        assert (err.status, err.retryable) == (None, False)
        assert isinstance(err.__cause__, ValueError)
        assert server.requests == []

    @pytest.mark.anyio
    async def test_a_config_the_sdk_refuses_is_a_request_that_could_not_be_built(self, server):
        """A ``config`` value the SDK's types refuse (here a temperature that is no number)
        fails the same way, before anything is sent; set right, ``retry()`` sends the
        history as it was and the run finishes."""
        server.add(stream(*wire.gemini_text("Warm.")))
        async with make_client(server, config={"temperature": "hot"}) as client:
            worker = Worker(client)
            with anyio.fail_after(10), pytest.raises(ProviderError) as info:
                await worker.run("hi")
            assert server.requests == []
            assert info.value.message.startswith(
                "the request could not be built, so it was not sent (ValidationError: "
            )
            assert "temperature" in info.value.message
            assert (info.value.status, info.value.retryable) == (None, False)
            assert worker.history == (UserMessage("hi"),)
            client.config = {"temperature": 0.5}
            with anyio.fail_after(10):
                assert await worker.retry() is WorkerResult.FINISHED
        assert server.requests[0].json["generationConfig"] == {"temperature": 0.5}
        assert worker.final_text == "Warm."

    @pytest.mark.anyio
    async def test_a_request_not_built_on_a_client_you_pass_in(self, server):
        """With your own ``genai.Client`` (whose HTTP client this module does not watch),
        an error before the first chunk is a request that could not be built as well."""
        async with httpx2.AsyncClient() as http:
            options = types.HttpOptions(base_url=server.base_url, httpx_async_client=http)
            sdk = genai.Client(api_key="k", http_options=options)
            async with GeminiClient(MODEL, client=sdk) as client:
                with anyio.fail_after(10), pytest.raises(ProviderError) as info:
                    async for _ in client.stream(LlmRequest(None, (), ())):
                        pass
        assert info.value.message.startswith("the request could not be built")
        assert info.value.retryable is False
        assert server.requests == []

    @pytest.mark.anyio
    async def test_an_sdk_error_reading_a_sent_requests_answer_is_a_malformed_stream(self, server):
        """Once the request went out, a TypeError the SDK raises reading the answer (a
        chunk that is JSON but not an object) is the provider's malformed stream, not a
        request that could not be built nor a connection that failed."""
        server.add(stream("data: 5\n\n"))
        async with make_client(server) as client:
            worker = Worker(client)
            with anyio.fail_after(10), pytest.raises(ProviderError) as info:
                await worker.run("hi")
        assert info.value.message.startswith(
            "the provider sent a malformed stream event (TypeError: "
        )
        assert (info.value.status, info.value.retryable) == (None, False)
        assert isinstance(info.value.__cause__, TypeError)
        assert len(server.requests) == 1
        assert worker.history == (UserMessage("hi"),)

    @pytest.mark.anyio
    async def test_timeout(self, server):
        """A server that does not answer within ``timeout`` gives a retryable ProviderError."""
        server.add(STALL)
        async with make_client(server, timeout=0.2) as client:
            with pytest.raises(ProviderError) as info:
                await Worker(client).run("hi")
        assert info.value.message == "the request timed out"
        assert (info.value.status, info.value.retryable) == (None, True)
        assert isinstance(info.value.__cause__, httpx2.TimeoutException)

    @pytest.mark.anyio
    async def test_sdk_retries_before_streaming(self, server):
        """The SDK itself retries a 503 before the stream starts (here with its retry
        options on a client we configure) and the run succeeds on the second request."""
        server.add(
            error(503, wire.gemini_error(503, "Overloaded", "UNAVAILABLE")),
            stream(*wire.gemini_text("Ok.")),
        )
        async with httpx2.AsyncClient() as http:
            options = types.HttpOptions(
                base_url=server.base_url,
                retry_options=types.HttpRetryOptions(attempts=2, initial_delay=0.01, jitter=0),
                httpx_async_client=http,
            )
            sdk = genai.Client(api_key="k", http_options=options)
            async with GeminiClient(MODEL, client=sdk) as client:
                worker = Worker(client)
                assert await worker.run("hi") is WorkerResult.FINISHED
        assert worker.final_text == "Ok."
        assert len(server.requests) == 2
        assert server.requests[0].json == server.requests[1].json

    @pytest.mark.anyio
    async def test_a_chunk_that_is_not_json_is_a_malformed_stream(self, server):
        """The SDK's UnknownApiResponseError: not retryable, its text bounded (it was
        retryable, with the whole response in the message)."""
        server.add(stream("data: {not json" + "x" * 5_000 + "\n\n"))
        async with make_client(server) as client:
            worker = Worker(client)
            with anyio.fail_after(10), pytest.raises(ProviderError) as info:
                await worker.run("hi")
        assert info.value.message.startswith(
            "the provider sent a malformed stream event (UnknownApiResponseError: "
        )
        assert len(info.value.message) < 800
        assert (info.value.status, info.value.retryable) == (None, False)
        assert worker.history == (UserMessage("hi"),)

    @pytest.mark.anyio
    async def test_a_chunk_the_sdk_refuses_is_a_malformed_stream(self, server):
        """A chunk that fails the SDK's own schema (``functionCall.args`` a list) is a
        ProviderError saying the provider sent a malformed stream event, not retryable:
        nothing broke in the connection."""
        server.add(stream(wire.gemini_chunk([{"functionCall": {"name": "f", "args": [1]}}])))
        async with make_client(server) as client:
            worker = Worker(client)
            with anyio.fail_after(10), pytest.raises(ProviderError) as info:
                await worker.run("hi")
        assert info.value.message.startswith(
            "the provider sent a malformed stream event (ValidationError: "
        )
        assert (info.value.status, info.value.retryable) == (None, False)
        assert type(info.value.__cause__).__name__ == "ValidationError"
        assert worker.history == (UserMessage("hi"),)

    @pytest.mark.anyio
    async def test_streamed_arguments_at_a_bad_json_path_are_a_malformed_stream(
        self, server, notes
    ):
        """Vertex AI's ``partialArgs`` at a ``jsonPath`` that is no JSON path: a
        ProviderError saying the provider sent a malformed stream event, chained to the
        ValueError reading it raised."""
        frames = [
            wire.gemini_chunk([{"functionCall": {"name": "add_note", "willContinue": True}}]),
            wire.gemini_chunk(
                [{"functionCall": {"partialArgs": [{"jsonPath": "title", "stringValue": "x"}]}}],
                "STOP",
            ),
        ]
        server.add(stream(*frames))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            with anyio.fail_after(10), pytest.raises(ProviderError) as info:
                await worker.run("hi")
        assert info.value.message == (
            "the provider sent a malformed stream event (ValueError: not a JSON path: 'title')"
        )
        assert (info.value.status, info.value.retryable) == (None, False)
        assert isinstance(info.value.__cause__, ValueError)
        assert notes.calls == []


class TestCancellation:
    @pytest.mark.anyio
    async def test_cancel_mid_stream(self, server, notes):
        """Cancelling a run while the answer streams drops the half-received response;
        the next run starts from a valid history."""
        frames = thought_then_call("milk", "fc_1")
        server.add(stalled_stream(*frames[:2]), stream(*wire.gemini_text("Back.")))
        async with make_client(server) as client:
            worker = make_worker(client, notes)

            async def cancel_once_streaming() -> None:
                while server.frames_sent < 2:
                    await anyio.sleep(0.01)
                scope.cancel()

            with anyio.fail_after(10), anyio.CancelScope() as scope:
                async with anyio.create_task_group() as group:
                    group.start_soon(cancel_once_streaming)
                    await worker.run("remember milk")
            assert scope.cancelled_caught
            assert worker.history == (UserMessage("remember milk"),)
            assert await worker.run("are you there?") is WorkerResult.FINISHED
        assert notes.calls == []
        assert worker.final_text == "Back."


class TestClient:
    def test_client_or_settings(self):
        """Passing a genai.Client and settings for another one is refused."""
        sdk = genai.Client(api_key="k")
        with pytest.raises(TypeError) as info:
            GeminiClient(MODEL, client=sdk, api_key="other")
        assert str(info.value) == (
            "GeminiClient takes client= or api_key=, not both; configure the genai client instead"
        )
        with pytest.raises(TypeError) as info:
            GeminiClient(MODEL, client=sdk, vertexai=True, project="p")
        assert str(info.value) == (
            "GeminiClient takes client= or vertexai/project=, not both; "
            "configure the genai client instead"
        )

    @pytest.mark.anyio
    async def test_given_client_is_used_and_left_open(self, server):
        """A given genai.Client carries the requests and is not closed by ``aclose()``."""
        server.add(stream(*wire.gemini_text("Hi.")), stream(*wire.gemini_text("Again.")))
        async with httpx2.AsyncClient() as http:
            options = types.HttpOptions(base_url=server.base_url, httpx_async_client=http)
            sdk = genai.Client(api_key="own-key", http_options=options)
            async with GeminiClient(MODEL, client=sdk) as client:
                assert client.client is sdk
                await Worker(client).run("hello")
            async with GeminiClient(MODEL, client=sdk) as again:
                await Worker(again).run("hello again")  # still open
        assert [r.headers["x-goog-api-key"] for r in server.requests] == ["own-key", "own-key"]

    @pytest.mark.anyio
    async def test_own_client_is_closed(self, server):
        """A client made from settings is closed when the GeminiClient closes."""
        server.add(stream(*wire.gemini_text("Hi.")))
        async with make_client(server) as client:
            await Worker(client).run("hello")
        with pytest.raises(ProviderError) as info:
            await Worker(client).run("closed?")
        assert "the client has been closed" in info.value.message

    def test_repr(self, server):
        """The repr shows the model and the server, never the key."""
        client = make_client(server)
        assert repr(client) == f"<GeminiClient model='{MODEL}' base_url='{server.base_url}'>"
        assert "test-key" not in repr(client)

    @pytest.mark.anyio
    async def test_vertex_ai_with_credentials(self, server):
        """``vertexai=True`` with a project, a location and credentials: the SDK's own
        switch sends the request to the publisher model's path in that project, with the
        credentials' bearer token; the answer reads the same."""
        server.add(stream(*wire.gemini_text("Hi from Vertex.")))
        credentials = Credentials(token="ya29.test-token")
        client = GeminiClient(
            MODEL,
            vertexai=True,
            project="notes-project",
            location="us-central1",
            credentials=credentials,
            base_url=server.base_url,
            max_retries=0,
        )
        async with client:
            assert client.client.vertexai
            worker = Worker(client)
            await worker.run("hello")
        [received] = server.requests
        assert received.path == (
            "/v1beta1/projects/notes-project/locations/us-central1/publishers/google/models/"
            f"{MODEL}:streamGenerateContent?alt=sse"
        )
        assert received.headers["authorization"] == "Bearer ya29.test-token"
        assert received.json["contents"] == [user("hello")]
        assert worker.final_text == "Hi from Vertex."

    @pytest.mark.anyio
    async def test_vertex_ai_express_mode(self, server):
        """``vertexai=True`` with an API key (express mode): the publisher model's path, the
        key in its header."""
        server.add(stream(*wire.gemini_text("Hi.")))
        async with GeminiClient(
            MODEL, vertexai=True, api_key="vertex-key", base_url=server.base_url, max_retries=0
        ) as client:
            await Worker(client).run("hello")
        [received] = server.requests
        assert (
            received.path
            == f"/v1beta1/publishers/google/models/{MODEL}:streamGenerateContent?alt=sse"
        )
        assert received.headers["x-goog-api-key"] == "vertex-key"
