"""``llm_worker.providers.anthropic`` against what the wire review (r2) found: call ids
of other providers that Anthropic refuses, a 200 whose body is no stream, and deltas for
a content block that never started.

The real ``anthropic`` SDK against the local scripted server of ``server.py``.
"""

from __future__ import annotations

import json
import re

import anyio
import pytest

from llm_worker import (
    AssistantMessage,
    ProviderError,
    ToolCall,
    ToolResult,
    UserMessage,
    Worker,
    tool_definitions,
)
from llm_worker.providers.anthropic import AnthropicClient

from . import wire
from .app import Notes
from .server import ProviderServer, Reply, stream

pytestmark = pytest.mark.filterwarnings(
    r"ignore:Async generator '(anthropic|httpx2|httpcore2)\.[^']*' was garbage "
    r"collected:ResourceWarning"
)

ANTHROPIC_ID = re.compile(r"[a-zA-Z0-9_-]+")


def make_client(server: ProviderServer) -> AnthropicClient:
    return AnthropicClient(
        wire.CLAUDE_MODEL, api_key="test-key", base_url=server.base_url, max_retries=0
    )


async def failure(client: AnthropicClient) -> ProviderError:
    with anyio.fail_after(10), pytest.raises(ProviderError) as info:
        await Worker(client).run("hi")
    return info.value


class TestForeignCallIds:
    @pytest.mark.anyio
    async def test_ids_anthropic_refuses_are_rewritten_alike(
        self, server: ProviderServer, notes: Notes
    ) -> None:
        """Kimi's ``functions.add_note:0`` and ``functions.add_note:1`` (a history from
        another provider) go out as ids the API takes, the same in ``tool_use`` and in
        ``tool_result``, still two; a valid id goes out as it is."""
        ids = ["functions.add_note:0", "functions.add_note:1", "toolu_01A"]
        history = [
            UserMessage("save a and b"),
            AssistantMessage(
                "",
                tuple(ToolCall(call_id, "add_note", '{"title": "a"}') for call_id in ids),
                "tool_use",
            ),
            *(ToolResult(call_id, "saved a") for call_id in ids),
        ]
        server.add(stream(*wire.claude_text("Done.")))
        async with make_client(server) as client:
            worker = Worker(client)
            worker.register_tools(tool_definitions(notes))
            worker.set_history(history)
            with anyio.fail_after(10):
                await worker.run("thanks")
        _, assistant, results, _ = server.requests[0].json["messages"]
        used = [block["id"] for block in assistant["content"]]
        answered = [block["tool_use_id"] for block in results["content"]]
        assert used == answered
        assert all(ANTHROPIC_ID.fullmatch(call_id) for call_id in used)
        assert len(set(used)) == 3
        assert used[2] == "toolu_01A"
        assert used[0].startswith("functions_add_note_0_")

    @pytest.mark.anyio
    async def test_kept_blocks_send_their_ids_as_the_results_do(
        self, server: ProviderServer, notes: Notes
    ) -> None:
        """A turn sent back from its kept blocks (here, thinking before the call) has its
        ``tool_use`` ids rewritten as its ``tool_result``\\s are (an Anthropic-compatible
        endpoint's ``functions.add_note:0``), on every later request; the other blocks go as
        they came, and the history keeps the id the server gave."""
        call_id = "functions.add_note:0"
        first = wire.claude_message(
            [
                *wire.thinking_block(0, ["I should save it."], "EqQBCkYIBRgCKkDsig"),
                *wire.tool_use_block(1, call_id, "add_note", ['{"title": "milk"}']),
            ],
            "tool_use",
        )
        server.add(stream(*first), stream(*wire.claude_text("Saved.")))
        server.add(stream(*wire.claude_text("Yes.")))
        async with make_client(server) as client:
            worker = Worker(client)
            worker.register_tools(tool_definitions(notes))
            with anyio.fail_after(10):
                await worker.run("remember milk")
                await worker.run("saved?")
        for received in server.requests[1:]:
            _, assistant, results, *_ = received.json["messages"]
            thinking, use = assistant["content"]
            assert thinking == {
                "type": "thinking",
                "thinking": "I should save it.",
                "signature": "EqQBCkYIBRgCKkDsig",
            }
            assert ANTHROPIC_ID.fullmatch(use["id"])
            assert use["id"].startswith("functions_add_note_0_")
            assert [block["tool_use_id"] for block in results["content"]] == [use["id"]]
        kept = [item.json() for item in worker.history[1].provider_items]
        assert [block.get("id") for block in kept] == [None, call_id]


INVALID_KEY = {
    "error": {"message": "Invalid API key provided", "type": "invalid_request_error", "code": 401}
}


class TestBodiesThatAreNoStream:
    @pytest.mark.anyio
    @pytest.mark.parametrize("as_events", [False, True], ids=["json", "event-stream"])
    async def test_a_200_error_body_gives_its_message(
        self, server: ProviderServer, as_events: bool
    ) -> None:
        """A 200 whose body is a JSON error says the body's message and status, not
        retryable: not "the stream ended"."""
        server.add(stream(json.dumps(INVALID_KEY)) if as_events else Reply(body=INVALID_KEY))
        async with make_client(server) as client:
            with anyio.fail_after(10), pytest.raises(ProviderError) as info:
                await Worker(client).run("hi")
        assert (info.value.message, info.value.status, info.value.retryable) == (
            "Invalid API key provided",
            401,
            False,
        )

    @pytest.mark.anyio
    async def test_a_200_error_body_of_a_retryable_type_is_retryable(
        self, server: ProviderServer
    ) -> None:
        """A 200 JSON error that names its kind by type only (``overloaded_error``): the
        status Anthropic documents for it (529), retryable, as for an ``error`` event."""
        server.add(Reply(body=wire.anthropic_error("overloaded_error", "Overloaded")))
        async with make_client(server) as client:
            raised = await failure(client)
        assert (raised.message, raised.status, raised.retryable) == ("Overloaded", 529, True)

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        "frames",
        [
            (": keep-alive\n\n",) * 3,
            ("event: ping\nid: 1\nretry: 10\n\n",),
            ("event: ping\n\n",) * 100,  # past the kept head, which ends inside a name
        ],
        ids=["comments", "fields", "long"],
    )
    async def test_a_stream_of_no_data_still_ended_early(
        self, server: ProviderServer, frames: tuple[str, ...]
    ) -> None:
        """A stream of SSE comments or fields without ``data:`` that then ends: one that
        ended early (retryable), not a body that is no stream."""
        server.add(stream(*frames))
        async with make_client(server) as client:
            raised = await failure(client)
        assert raised.message == "the response stream ended before the response was complete"
        assert raised.retryable is True


class TestBlocksThatNeverStarted:
    @pytest.mark.anyio
    async def test_a_delta_for_a_block_that_never_started_is_a_malformed_stream(
        self, server: ProviderServer
    ) -> None:
        """Text for a block without ``content_block_start``: a malformed stream, not an
        empty answer."""
        delta = {"type": "content_block_delta", "index": 0}
        delta["delta"] = {"type": "text_delta", "text": "Hello"}
        server.add(
            stream(
                wire.message_start(),
                wire.event("content_block_delta", delta),
                wire.block_stop(0),
                wire.message_delta("end_turn", 3),
                wire.MESSAGE_STOP,
            )
        )
        async with make_client(server) as client:
            worker = Worker(client)
            with anyio.fail_after(10), pytest.raises(ProviderError) as info:
                await worker.run("hi")
        assert info.value.message == (
            "the provider sent a malformed stream event (ValueError: a delta for content "
            "block 0, which never started)"
        )
        assert info.value.retryable is False
