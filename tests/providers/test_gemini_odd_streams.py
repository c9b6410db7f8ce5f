"""``llm_worker.providers.gemini`` against what the wire review (r2) found: a part the
SDK cannot read, the retry delay of a 429 given only in its body, and ``partialArgs`` at
an array index far past the end.

The real ``google-genai`` SDK against the local scripted server of ``server.py``.
"""

from __future__ import annotations

import anyio
import pytest

from llm_worker import (
    AssistantMessage,
    ProviderError,
    ProviderItem,
    ToolCall,
    ToolResult,
    UserMessage,
    Worker,
    WorkerResult,
    tool_definitions,
)
from llm_worker.providers.gemini import GeminiClient

from . import wire
from .app import Notes
from .server import ProviderServer, error, stream

pytestmark = pytest.mark.filterwarnings(
    r"ignore:Async generator '(google|httpx2|httpcore2)\.[^']*' was garbage "
    r"collected:ResourceWarning"
)


def make_client(server: ProviderServer) -> GeminiClient:
    return GeminiClient(
        wire.GEMINI_MODEL, api_key="test-key", base_url=server.base_url, max_retries=0
    )


def notes_worker(client: GeminiClient, notes: Notes) -> Worker:
    worker = Worker(client)
    worker.register_tools(tool_definitions(notes))
    return worker


ADD_NOTE = {"functionCall": {"id": "g1", "name": "add_note", "args": {"title": "x"}}}


class TestUnreadableParts:
    @pytest.mark.anyio
    async def test_a_part_the_sdk_cannot_read_is_not_sent_back_empty(
        self, server: ProviderServer, notes: Notes
    ) -> None:
        """A part of a kind newer than the SDK (it reads it as empty) is not kept: the next
        request's model turn has no ``{}`` part, which Gemini refuses."""
        server.add(
            stream(
                wire.gemini_chunk(
                    [{"someFuturePart": {"data": "x"}}, ADD_NOTE], "STOP", wire.gemini_usage(5, 5)
                )
            ),
            stream(*wire.gemini_text("done")),
        )
        async with make_client(server) as client:
            worker = notes_worker(client, notes)
            with anyio.fail_after(10):
                assert await worker.run("hi") is WorkerResult.FINISHED
        parts = server.requests[1].json["contents"][1]["parts"]
        assert {} not in parts
        assert [part["functionCall"]["name"] for part in parts] == ["add_note"]
        assert all(item.data != "{}" for item in worker.history[1].provider_items)

    @pytest.mark.anyio
    async def test_an_empty_part_kept_in_a_saved_history_is_left_out(
        self, server: ProviderServer, notes: Notes
    ) -> None:
        """A history saved before (with the empty part kept) goes on: the part is not sent."""
        answer = AssistantMessage(
            "",
            (ToolCall("g1", "add_note", '{"title": "x"}'),),
            "tool_use",
            provider_items=(
                ProviderItem("gemini", "part", "{}"),
                ProviderItem(
                    "gemini",
                    "function_call",
                    '{"functionCall":{"name":"add_note","args":{"title":"x"},"id":"g1"}}',
                ),
            ),
        )
        server.add(stream(*wire.gemini_text("done")))
        async with make_client(server) as client:
            worker = notes_worker(client, notes)
            worker.set_history([UserMessage("hi"), answer, ToolResult("g1", "saved x")])
            with anyio.fail_after(10):
                await worker.run("go on")
        parts = server.requests[0].json["contents"][1]["parts"]
        assert [list(part) for part in parts] == [["functionCall"]]


def exhausted(delay: str) -> dict:
    """Gemini's 429 body: a QuotaFailure and a RetryInfo asking to wait ``delay``."""
    return {
        "error": {
            "code": 429,
            "status": "RESOURCE_EXHAUSTED",
            "message": "You exceeded your current quota, please check your plan and billing.",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                    "violations": [{"quotaMetric": "generate_content_free_tier_requests"}],
                },
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay},
            ],
        }
    }


class TestRetryDelay:
    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("delay", "wait"),
        [
            ("37s", 37.0),
            ("45.8s", 45.8),
            ("0s", 0.0),
            ("-3s", None),
            ("infs", None),
            ("soon", None),
        ],
    )
    async def test_a_429_gives_the_delay_of_its_body(
        self, server: ProviderServer, delay: str, wait: float | None
    ) -> None:
        """A 429's ``RetryInfo.retryDelay`` (Gemini sends no header) is ``retry_after``:
        finite and non-negative only."""
        server.add(error(429, exhausted(delay)))
        async with make_client(server) as client:
            with anyio.fail_after(10), pytest.raises(ProviderError) as info:
                await Worker(client).run("hi")
        assert (info.value.status, info.value.retryable, info.value.retry_after) == (
            429,
            True,
            wait,
        )

    @pytest.mark.anyio
    async def test_a_header_wins_over_the_body(self, server: ProviderServer) -> None:
        """A ``Retry-After`` header, when one comes, says the wait."""
        server.add(error(429, exhausted("37s"), retry_after="5"))
        async with make_client(server) as client:
            with anyio.fail_after(10), pytest.raises(ProviderError) as info:
                await Worker(client).run("hi")
        assert info.value.retry_after == 5.0


class TestPartialArgsIndex:
    @pytest.mark.anyio
    async def test_an_index_far_past_the_end_is_a_malformed_stream(
        self, server: ProviderServer, notes: Notes
    ) -> None:
        """``$.title[50000000]`` (18 bytes) would pad a list of 50 million items: it is a
        malformed stream, refused at once."""
        frames = [
            wire.gemini_chunk([{"functionCall": {"name": "add_note", "willContinue": True}}]),
            wire.gemini_chunk(
                [
                    {
                        "functionCall": {
                            "partialArgs": [{"jsonPath": "$.title[50000000]", "stringValue": "x"}]
                        }
                    }
                ],
                "STOP",
            ),
        ]
        server.add(stream(*frames))
        async with make_client(server) as client:
            worker = notes_worker(client, notes)
            with anyio.fail_after(10), pytest.raises(ProviderError) as info:
                await worker.run("hi")
        assert info.value.message == (
            "the provider sent a malformed stream event (ValueError: partialArgs index "
            "50000000 skips past the end of a list of 0 items)"
        )
        assert info.value.retryable is False
        assert notes.calls == []

    @pytest.mark.anyio
    async def test_items_in_order_are_put_together(
        self, server: ProviderServer, notes: Notes
    ) -> None:
        """Array items streamed in order (``[0]``, ``[1]``) still make the list."""
        frames = [
            wire.gemini_chunk([{"functionCall": {"name": "add_note", "willContinue": True}}]),
            wire.gemini_chunk(
                [
                    {
                        "functionCall": {
                            "partialArgs": [
                                {"jsonPath": "$.tags[0]", "stringValue": "a"},
                                {"jsonPath": "$.tags[1].name", "stringValue": "b"},
                            ],
                            "willContinue": True,
                        }
                    }
                ]
            ),
            wire.gemini_chunk([{"functionCall": {}}], "STOP"),
        ]
        server.add(stream(*frames), stream(*wire.gemini_text("ok")))
        async with make_client(server) as client:
            worker = notes_worker(client, notes)
            with anyio.fail_after(10):
                await worker.run("hi")
        [call] = worker.history[1].tool_calls
        assert call.input_json == '{"tags": ["a", {"name": "b"}]}'
