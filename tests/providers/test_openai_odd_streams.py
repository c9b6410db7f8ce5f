"""``llm_worker.providers.openai`` against what the wire review (r2) found servers send:
tool-call names in pieces, choices without ``index``, ids made up twice, error bodies
that are no stream, a spent quota, bytes that are not UTF-8, ``strict`` set late, and
Responses calls whose parts come only with the final item.

The real ``openai`` SDK against the local scripted server of ``server.py``.
"""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
import pytest

from llm_worker import (
    Completion,
    LlmRequest,
    ProviderError,
    ToolInputDelta,
    ToolUseStart,
    ToolUseStop,
    Usage,
    UserMessage,
    Worker,
    WorkerResult,
    tool_definitions,
)
from llm_worker._formats import export_tools
from llm_worker.providers.openai import OpenAIChatClient, OpenAIResponsesClient

from . import wire
from .app import Notes
from .server import ProviderServer, Reply, error, stream

pytestmark = pytest.mark.filterwarnings(
    r"ignore:Async generator '(openai|httpx2|httpcore2)\.[^']*' was garbage "
    r"collected:ResourceWarning"
)

REQUEST = LlmRequest(None, (UserMessage("go"),), ())
USAGE = (40, 18)


def chat_client(base_url: str, **options: Any) -> OpenAIChatClient:
    return OpenAIChatClient(
        "gpt-test-mini", api_key="test-key", base_url=f"{base_url}/v1", max_retries=0, **options
    )


def responses_client(base_url: str) -> OpenAIResponsesClient:
    return OpenAIResponsesClient(
        "gpt-test-mini", api_key="test-key", base_url=f"{base_url}/v1", max_retries=0
    )


def notes_worker(client: OpenAIChatClient | OpenAIResponsesClient, notes: Notes) -> Worker:
    worker = Worker(client)
    worker.register_tools(tool_definitions(notes))
    return worker


async def finished_run(client: OpenAIChatClient | OpenAIResponsesClient, notes: Notes) -> Worker:
    """A worker with the notes tools that ran "go" through ``client`` to its end."""
    worker = notes_worker(client, notes)
    with anyio.fail_after(10):
        assert await worker.run("go") is WorkerResult.FINISHED
    return worker


def calls_frame(*calls: dict[str, Any]) -> str:
    return wire.chunk({"tool_calls": list(calls)})


def finished(*frames: str) -> Reply:
    """A Chat stream: ``frames``, then ``finish_reason: tool_calls``, usage and [DONE]."""
    return stream(
        *frames,
        wire.chunk({}, "tool_calls"),
        wire.chunk(choices=False, usage=wire.chat_usage(*USAGE)),
        wire.DONE,
    )


async def events_of(client: OpenAIChatClient | OpenAIResponsesClient) -> list[object]:
    with anyio.fail_after(10):
        return [event async for event in client.stream(REQUEST)]


async def failure(client: OpenAIChatClient | OpenAIResponsesClient) -> ProviderError:
    with anyio.fail_after(10), pytest.raises(ProviderError) as info:
        await events_of(client)
    return info.value


class TestToolCallNames:
    @pytest.mark.anyio
    async def test_a_name_in_pieces_is_put_together(self, server: ProviderServer) -> None:
        """A name streamed as ``add_`` + ``note`` (vLLM) starts one call named ``add_note``,
        its arguments after the start, in order."""
        server.add(
            finished(
                calls_frame(
                    {"index": 0, "id": "c0", "type": "function", "function": {"name": "add_"}}
                ),
                calls_frame({"index": 0, "function": {"name": "note", "arguments": '{"ti'}}),
                calls_frame({"index": 0, "function": {"arguments": 'tle": "x"}'}}),
            )
        )
        async with chat_client(server.base_url) as client:
            events = await events_of(client)
        assert events == [
            ToolUseStart(0, "c0", "add_note"),
            ToolInputDelta(0, '{"ti'),
            ToolInputDelta(0, 'tle": "x"}'),
            ToolUseStop(0),
            Completion("tool_use", Usage(*USAGE), wire.CHAT_ID, wire.CHAT_MODEL),
        ]

    @pytest.mark.anyio
    async def test_a_name_after_an_id_only_delta_runs_the_tool(
        self, server: ProviderServer, notes: Notes
    ) -> None:
        """An id-only first delta, then the name with the arguments: the named tool runs."""
        server.add(
            finished(
                calls_frame({"index": 0, "id": "c0", "type": "function"}),
                calls_frame(
                    {"index": 0, "function": {"name": "add_note", "arguments": '{"title":"x"}'}}
                ),
            ),
            stream(*wire.chat_text("ok")),
        )
        async with chat_client(server.base_url) as client:
            worker = await finished_run(client, notes)
        [call] = worker.history[1].tool_calls
        assert (call.id, call.name, call.input_json) == ("c0", "add_note", '{"title":"x"}')
        assert notes.notes == {"x": ""}

    @pytest.mark.anyio
    async def test_a_call_without_arguments_starts_at_the_finish(
        self, server: ProviderServer
    ) -> None:
        """A name in pieces and no arguments at all: the call starts, whole, at the finish."""
        server.add(
            finished(
                calls_frame(
                    {"index": 0, "id": "c0", "type": "function", "function": {"name": "pi"}}
                ),
                calls_frame({"index": 0, "function": {"name": "ng"}}),
            )
        )
        async with chat_client(server.base_url) as client:
            events = await events_of(client)
        assert events[:2] == [ToolUseStart(0, "c0", "ping"), ToolUseStop(0)]

    @pytest.mark.anyio
    async def test_a_name_repeated_in_every_delta_is_not_doubled(
        self, server: ProviderServer
    ) -> None:
        """A server that repeats the whole name with each delta: the name once."""
        start = {"index": 0, "id": "c0", "type": "function", "function": {"name": "add_note"}}
        more = {"index": 0, "function": {"name": "add_note", "arguments": "{}"}}
        server.add(finished(calls_frame(start), calls_frame(more)))
        async with chat_client(server.base_url) as client:
            events = await events_of(client)
        assert events[0] == ToolUseStart(0, "c0", "add_note")


class TestChoices:
    @pytest.mark.anyio
    async def test_a_choice_without_index_is_choice_0(self, server: ProviderServer) -> None:
        """Choices that leave ``index`` out (one choice) are read as choice 0."""

        def frame(delta: dict[str, Any], finish_reason: str | None = None) -> str:
            payload = {
                "id": wire.CHAT_ID,
                "object": "chat.completion.chunk",
                "created": 1,
                "model": wire.CHAT_MODEL,
                "choices": [{"delta": delta, "finish_reason": finish_reason}],
            }
            return wire.data(payload)

        server.add(
            stream(
                frame({"content": "hello"}),
                frame({}, "stop"),
                wire.chunk(choices=False, usage=wire.chat_usage(3, 2)),
                wire.DONE,
            )
        )
        async with chat_client(server.base_url) as client:
            worker = Worker(client)
            with anyio.fail_after(10):
                await worker.run("hi")
        assert worker.final_text == "hello"


class TestMadeUpIds:
    @pytest.mark.anyio
    async def test_made_up_ids_differ_across_turns(
        self, server: ProviderServer, notes: Notes
    ) -> None:
        """A server that gives no call ids and one chunk id for every response: each call
        still gets an id of its own in the history."""
        call = {"index": 0, "type": "function", "function": {"name": "add_note"}}
        arguments = {"index": 0, "function": {"arguments": '{"title":"a"}'}}
        turn = finished(calls_frame(call), calls_frame(arguments))
        server.add(turn, turn, stream(*wire.chat_text("ok")))
        async with chat_client(server.base_url) as client:
            worker = await finished_run(client, notes)
        [first], [second] = worker.history[1].tool_calls, worker.history[3].tool_calls
        assert first.id != second.id
        assert first.id.startswith("call_")


INVALID_KEY = {
    "error": {"message": "Invalid API key provided", "type": "invalid_request_error", "code": 401}
}


class TestBodiesThatAreNoStream:
    @pytest.mark.anyio
    @pytest.mark.parametrize("as_events", [False, True], ids=["json", "event-stream"])
    @pytest.mark.parametrize("make", [chat_client, responses_client], ids=["chat", "responses"])
    async def test_a_200_error_body_gives_its_message(
        self, server: ProviderServer, make: Any, as_events: bool
    ) -> None:
        """A 200 whose body is a JSON error (typed JSON, or typed as a stream) says the
        body's message and status, not retryable: not "the stream ended"."""
        body = json.dumps(INVALID_KEY)
        server.add(stream(body) if as_events else Reply(body=INVALID_KEY))
        async with make(server.base_url) as client:
            raised = await failure(client)
        assert (raised.message, raised.status, raised.retryable) == (
            "Invalid API key provided",
            401,
            False,
        )

    @pytest.mark.anyio
    async def test_a_200_text_body_is_quoted(self, server: ProviderServer) -> None:
        """A server that ignores ``stream: true`` and answers text: an excerpt of it, not
        retryable."""
        server.add(Reply(body="<html>\n  <body>Service moved</body>\n</html>"))
        async with chat_client(server.base_url) as client:
            raised = await failure(client)
        assert raised.message == (
            "the response held no stream events (<html> <body>Service moved</body> </html>)"
        )
        assert raised.retryable is False

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        "frames", [(), (": OPENROUTER PROCESSING\n\n",) * 3], ids=["nothing", "comments"]
    )
    async def test_a_stream_of_no_data_still_ended_early(
        self, server: ProviderServer, frames: tuple[str, ...]
    ) -> None:
        """A stream that sends nothing, or only SSE comments (OpenRouter's keep-alives), then
        ends: one that ended early (retryable)."""
        server.add(stream(*frames))
        async with responses_client(server.base_url) as client:
            raised = await failure(client)
        assert raised.message == "the response stream ended before the response was complete"
        assert raised.retryable is True

    @pytest.mark.anyio
    @pytest.mark.parametrize("make", [chat_client, responses_client], ids=["chat", "responses"])
    async def test_a_200_error_body_with_a_retryable_code_is_retryable(
        self, server: ProviderServer, make: Any
    ) -> None:
        """A 200 JSON error whose ``code`` is ``rate_limit_exceeded`` (no status): retryable,
        as a failed response of that code is."""
        body = wire.openai_error("Rate limit reached", "requests", "rate_limit_exceeded")
        server.add(Reply(body=body))
        async with make(server.base_url) as client:
            raised = await failure(client)
        assert (raised.message, raised.status, raised.retryable) == (
            "Rate limit reached",
            None,
            True,
        )

    @pytest.mark.anyio
    @pytest.mark.parametrize("make", [chat_client, responses_client], ids=["chat", "responses"])
    async def test_a_compressed_200_error_body_gives_its_message(
        self, raw_server: tuple[str, list[tuple[dict[str, str], bytes]]], make: Any
    ) -> None:
        """A gzip-compressed 200 JSON error: its message and status, read decompressed."""
        base_url, replies = raw_server
        headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
        replies.append((headers, gzip.compress(json.dumps(INVALID_KEY).encode())))
        async with make(base_url) as client:
            raised = await failure(client)
        assert (raised.message, raised.status, raised.retryable) == (
            "Invalid API key provided",
            401,
            False,
        )


class TestErrors:
    @pytest.mark.anyio
    async def test_an_error_that_is_a_string_gives_its_text(self, server: ProviderServer) -> None:
        """An in-stream ``{"error": "..."}`` (HF TGI) says the server's words."""
        server.add(
            stream(wire.chat_text("a")[0], 'data: {"error": "Upstream model timed out"}\n\n')
        )
        async with chat_client(server.base_url) as client:
            raised = await failure(client)
        assert raised.message == "Upstream model timed out"

    @pytest.mark.anyio
    async def test_insufficient_quota_is_not_retryable(self, server: ProviderServer) -> None:
        """A 429 for a spent quota: waiting does not help, so not retryable."""
        body = wire.openai_error(
            "You exceeded your current quota, please check your plan and billing details.",
            "insufficient_quota",
            "insufficient_quota",
        )
        server.add(error(429, body))
        async with chat_client(server.base_url) as client:
            raised = await failure(client)
        assert (raised.status, raised.retryable) == (429, False)

    @pytest.mark.anyio
    async def test_a_rate_limit_stays_retryable(self, server: ProviderServer) -> None:
        """A 429 of a rate limit is still worth retrying."""
        server.add(error(429, wire.RATE_LIMITED))
        async with chat_client(server.base_url) as client:
            raised = await failure(client)
        assert (raised.status, raised.retryable) == (429, True)


@pytest.fixture
def raw_server() -> Iterator[tuple[str, list[tuple[dict[str, str], bytes]]]]:
    """A server that answers each POST with a 200 of the next scripted headers and body,
    bytes as they are (``server.py`` sends text only): its base URL and the replies."""
    replies: list[tuple[dict[str, str], bytes]] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            headers, body = replies.pop(0)
            self.send_response(200)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
            self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        host, port = httpd.server_address[:2]
        yield f"http://{host!s}:{port}", replies
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


class TestBytes:
    @pytest.mark.anyio
    async def test_invalid_utf8_is_a_malformed_stream(
        self, raw_server: tuple[str, list[tuple[dict[str, str], bytes]]]
    ) -> None:
        """Bytes that are not UTF-8 in a data line: a malformed stream, not retryable (not
        "the connection failed")."""
        base_url, replies = raw_server
        body = wire.chat_text("a")[1].encode().replace(b'"a"', b'"\xff\xfe"')
        replies.append(({"Content-Type": "text/event-stream"}, body))
        async with chat_client(base_url) as client:
            raised = await failure(client)
        assert raised.message.startswith(
            "the provider sent a malformed stream event (UnicodeDecodeError: "
        )
        assert raised.retryable is False


class TestStrictToggle:
    @pytest.mark.anyio
    async def test_strict_set_after_a_request_changes_the_tools(
        self, server: ProviderServer, notes: Notes
    ) -> None:
        """``client.strict = True`` after a request: the next request sends strict tools."""
        server.add(stream(*wire.chat_text("a")), stream(*wire.chat_text("b")))
        async with chat_client(server.base_url) as client:
            worker = notes_worker(client, notes)
            with anyio.fail_after(10):
                await worker.run("one")
                client.strict = True
                await worker.run("two")
        definitions = worker.tool_server_handle().tool_definitions_sorted()
        first, second = (received.json["tools"] for received in server.requests)
        assert first == export_tools(definitions, "openai")
        assert second == export_tools(definitions, "openai", strict=True)


class TestResponsesCallsGivenLate:
    @pytest.mark.anyio
    async def test_a_call_only_in_the_completed_response_runs(
        self, server: ProviderServer, notes: Notes
    ) -> None:
        """A server that sends a function_call only in ``response.completed``'s output:
        the call is made, not dropped."""
        events = wire.ResponseEvents().start()
        events.output.append(
            {
                "id": "fc_1",
                "type": "function_call",
                "call_id": "c1",
                "name": "add_note",
                "arguments": '{"title":"late"}',
                "status": "completed",
            }
        )
        server.add(stream(*events.completed()), stream(*wire.responses_text("ok")))
        async with responses_client(server.base_url) as client:
            worker = await finished_run(client, notes)
        [call] = worker.history[1].tool_calls
        assert (call.id, call.name, call.input_json) == ("c1", "add_note", '{"title":"late"}')
        assert worker.history[1].stop_reason == "tool_use"
        assert notes.notes == {"late": ""}

    @pytest.mark.anyio
    async def test_arguments_only_in_arguments_done_are_taken(
        self, server: ProviderServer, notes: Notes
    ) -> None:
        """Arguments sent only in ``function_call_arguments.done`` (the items' own empty):
        the call runs with them, once."""
        item = {"id": "fc_0", "type": "function_call", "call_id": "c1", "name": "add_note"}
        events = wire.ResponseEvents().start()
        events.add(
            "response.output_item.added",
            output_index=0,
            item={**item, "arguments": "", "status": "in_progress"},
        )
        events.add(
            "response.function_call_arguments.done",
            item_id="fc_0",
            output_index=0,
            arguments='{"title": "from-done"}',
        )
        events.add(
            "response.output_item.done",
            output_index=0,
            item={**item, "arguments": "", "status": "completed"},
        )
        server.add(stream(*events.completed()), stream(*wire.responses_text("ok")))
        async with responses_client(server.base_url) as client:
            worker = await finished_run(client, notes)
        [call] = worker.history[1].tool_calls
        assert call.input_json == '{"title": "from-done"}'
        assert notes.notes == {"from-done": ""}

    @pytest.mark.anyio
    async def test_a_streamed_call_numbered_otherwise_in_the_final_output_runs_once(
        self, server: ProviderServer, notes: Notes
    ) -> None:
        """A call streamed at output_index 0 that ``response.completed`` lists second
        (after an empty message the stream never announced): one call, run once."""
        events = wire.ResponseEvents().start()
        events.call("call_A", "add_note", '{"title":"x"}')
        message = {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed"}
        events.output.insert(
            0, {**message, "content": [{"type": "output_text", "text": "", "annotations": []}]}
        )
        server.add(stream(*events.completed()), stream(*wire.responses_text("ok")))
        async with responses_client(server.base_url) as client:
            worker = await finished_run(client, notes)
        [call] = worker.history[1].tool_calls
        assert (call.id, call.input_json) == ("call_A", '{"title":"x"}')
        assert notes.notes == {"x": ""}
