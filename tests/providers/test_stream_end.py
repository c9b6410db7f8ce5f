"""Where a response ends: at its terminal event (Anthropic's ``message_stop``, Responses'
``response.completed`` / ``response.incomplete``), not when the server closes the body.

A server or proxy may hold the stream open after the terminal event, silent or sending
keep-alives: the response is complete, so the run goes on at once, and nothing that follows
is read as part of it. Chat Completions ends at ``[DONE]`` and Gemini at the end of the body
(a usage chunk may follow the finish reason). The real SDKs against the local server.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from support import GEMINI_SDK, needs_gemini_sdk

from llm_worker import AssistantMessage, LlmClient, Usage, Worker, WorkerResult
from llm_worker.providers.anthropic import AnthropicClient
from llm_worker.providers.openai import OpenAIChatClient, OpenAIResponsesClient

from . import wire
from .server import ProviderServer, stalled_stream, stream

if GEMINI_SDK:  # google-genai needs Python 3.11+ (tests/support.py)
    from llm_worker.providers.gemini import GeminiClient

pytestmark = pytest.mark.filterwarnings(
    r"ignore:Async generator '(anthropic|openai|google|httpx2|httpcore2)\.[^']*' was garbage "
    r"collected:ResourceWarning"
)

# Far longer than a run may take here: a client that waits for the body to end fails the
# test's own deadline, not this timeout.
TIMEOUT = 60.0
DEADLINE = 5.0
COMMENT = ": keep-alive\n\n"


def anthropic_client(server: ProviderServer) -> AnthropicClient:
    return AnthropicClient(
        wire.CLAUDE_MODEL,
        api_key="test-key",
        base_url=server.base_url,
        max_retries=0,
        timeout=TIMEOUT,
    )


def responses_client(server: ProviderServer) -> OpenAIResponsesClient:
    return OpenAIResponsesClient(
        "gpt-test-mini",
        api_key="test-key",
        base_url=f"{server.base_url}/v1",
        max_retries=0,
        timeout=TIMEOUT,
    )


Case = tuple[Callable[[ProviderServer], LlmClient], tuple[str, ...], str]

# A client, a whole answer of "hello", and the keep-alive its servers send.
CASES: dict[str, Case] = {
    "anthropic": (anthropic_client, wire.claude_text("hel", "lo"), wire.PING),
    "responses": (responses_client, wire.responses_text("hel", "lo"), COMMENT),
}


async def answer(client: LlmClient, deadline: float = DEADLINE) -> Worker:
    worker = Worker(client)
    with anyio.fail_after(deadline):
        assert await worker.run("hi") is WorkerResult.FINISHED
    return worker


class TestTheTerminalEventEndsTheResponse:
    @pytest.mark.anyio
    @pytest.mark.parametrize("keep_alive", [False, True], ids=["silent", "keep-alives"])
    @pytest.mark.parametrize("name", CASES)
    async def test_a_stream_held_open_after_it_ends_the_run_at_once(
        self, server: ProviderServer, name: str, keep_alive: bool
    ) -> None:
        """A complete response whose server holds the stream open (silent, or sending
        keep-alives) is the answer: the run does not wait for the body to end."""
        make, frames, ping = CASES[name]
        server.add(stalled_stream(*frames, keep_alive=ping if keep_alive else None))
        async with make(server) as client:
            worker = await answer(client)
        assert worker.final_text == "hello"

    @pytest.mark.anyio
    @pytest.mark.parametrize("name", CASES)
    async def test_the_next_request_goes_out_after_a_stream_held_open(
        self, server: ProviderServer, name: str
    ) -> None:
        """The stream held open is closed: the client's next request is answered."""
        make, frames, ping = CASES[name]
        server.add(stalled_stream(*frames, keep_alive=ping), stream(*frames))
        async with make(server) as client:
            await answer(client)
            worker = await answer(client)
        assert worker.final_text == "hello"
        assert len(server.requests) == 2

    @pytest.mark.anyio
    async def test_an_incomplete_response_ends_at_its_event(self, server: ProviderServer) -> None:
        """``response.incomplete`` is terminal too."""
        frames = wire.ResponseEvents().start().text("hel").incomplete("max_output_tokens")
        server.add(stalled_stream(*frames, keep_alive=COMMENT))
        async with responses_client(server) as client:
            worker = Worker(client)
            with anyio.fail_after(DEADLINE):
                await worker.run("hi")
        answered = worker.history[-1]
        assert isinstance(answered, AssistantMessage)
        assert (answered.text, answered.stop_reason) == ("hel", "max_tokens")

    @pytest.mark.anyio
    async def test_an_error_event_after_message_stop_is_not_the_responses(
        self, server: ProviderServer
    ) -> None:
        """What follows ``message_stop`` does not belong to the response: an ``error`` event
        there fails nothing."""
        frames = (*wire.claude_text("hel", "lo"), wire.error_event("overloaded_error", "later"))
        server.add(stream(*frames))
        async with anthropic_client(server) as client:
            worker = await answer(client)
        assert worker.final_text == "hello"

    @pytest.mark.anyio
    async def test_an_error_event_after_response_completed_is_not_the_responses(
        self, server: ProviderServer
    ) -> None:
        """The same after ``response.completed``."""
        error = {"type": "error", "code": "server_error", "message": "later", "param": None}
        frames = (*wire.responses_text("hel", "lo"), wire.event("error", error))
        server.add(stream(*frames))
        async with responses_client(server) as client:
            worker = await answer(client)
        assert worker.final_text == "hello"


class TestStreamsWithoutATerminalEvent:
    @pytest.mark.anyio
    async def test_chat_reads_the_usage_chunk_after_the_finish_reason(
        self, server: ProviderServer
    ) -> None:
        """Chat Completions reads on to ``[DONE]``: the usage chunk comes after
        ``finish_reason``."""
        server.add(stream(*wire.chat_text("hel", "lo", usage=(11, 7))))
        async with OpenAIChatClient(
            "gpt-test-mini", api_key="test-key", base_url=f"{server.base_url}/v1", max_retries=0
        ) as client:
            worker = await answer(client)
        assert worker.history[-1].usage == Usage(11, 7)

    @needs_gemini_sdk
    @pytest.mark.anyio
    async def test_gemini_reads_a_usage_chunk_after_the_finish_reason(
        self, server: ProviderServer
    ) -> None:
        """Gemini reads to the end of the body: a chunk with the usage may follow the one with
        ``finishReason``."""
        usage: dict[str, Any] = {
            "usageMetadata": wire.gemini_usage(5, 3),
            "modelVersion": wire.GEMINI_MODEL,
            "responseId": wire.GEMINI_RESPONSE_ID,
        }
        frames = (*wire.gemini_text("hello", usage=(1, 1)), f"data: {json.dumps(usage)}\r\n\r\n")
        server.add(stream(*frames))
        async with GeminiClient(
            "gemini-test", api_key="k", base_url=server.base_url, max_retries=0
        ) as client:
            worker = await answer(client)
        assert worker.final_text == "hello"
        assert worker.history[-1].usage == Usage(5, 3)
