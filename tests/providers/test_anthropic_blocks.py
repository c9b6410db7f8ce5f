"""``AnthropicClient`` with the blocks beyond text and tool_use: extended thinking (with
signatures, redacted), server tools and their results, citations, ``pause_turn``,
compaction. The real SDK streams them from a local server exactly as Anthropic documents
them (``wire.py``); each test asserts what the worker kept and what the next request sent.
"""

from __future__ import annotations

import itertools
import json

import anyio
import pytest
from support import assert_history_valid

from llm_worker import (
    AssistantMessage,
    ProviderItem,
    ReasoningDelta,
    RunState,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
    Worker,
    WorkerResult,
)

from . import wire
from .server import stream
from .test_anthropic import make_client, make_worker, tool_result, tool_use

pytestmark = pytest.mark.filterwarnings(
    r"ignore:Async generator '(anthropic|httpx2|httpcore2)\.[^']*' was garbage "
    r"collected:ResourceWarning"
)

THINKING = {"thinking": {"type": "enabled", "budget_tokens": 2048}}
SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
REDACTED = (
    "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5URj"
)
THOUGHT = ("The user wants milk noted. ", "I'll call add_note.")


def thinking(text: str, signature: str = SIGNATURE) -> dict:
    return {"type": "thinking", "thinking": text, "signature": signature}


def kept(message: AssistantMessage) -> list[tuple[str, str, dict]]:
    """The message's provider items: provider, kind and the block they hold."""
    return [(item.provider, item.kind, item.json()) for item in message.provider_items]


def as_kept(blocks: list[dict]) -> list[tuple[str, str, dict]]:
    return [("anthropic", block["type"], block) for block in blocks]


def thinking_then_call(call_id: str = "toolu_01A", title: str = "milk") -> tuple[str, ...]:
    return wire.claude_message(
        [
            *wire.thinking_block(0, THOUGHT, SIGNATURE),
            *wire.tool_use_block(1, call_id, "add_note", wire.split(f'{{"title": "{title}"}}', 5)),
        ],
        "tool_use",
        usage={"output_tokens": 90, "output_tokens_details": {"thinking_tokens": 60}},
    )


class TestThinking:
    @pytest.mark.anyio
    async def test_thinking_then_tool_use_is_sent_back_whole(self, server, notes):
        """A thinking block (text streamed, then its signature) before a tool_use block is
        kept with the message, shown as reasoning, and sent back unchanged, in front of the
        tool_use, on the request that carries the tool result, as the API requires."""
        server.add(stream(*thinking_then_call()), stream(*wire.claude_text("Noted.")))
        async with make_client(server, extra_body=THINKING) as client:
            worker = make_worker(client, notes)
            with anyio.fail_after(10):
                async with worker.run_stream("remember milk") as events:
                    seen = [event async for event in events]
        reasoning = [event.text for event in seen if isinstance(event, ReasoningDelta)]
        assert reasoning == list(THOUGHT)
        assert not [
            event for event in seen if isinstance(event, TextDelta) and event.text != "Noted."
        ]
        blocks = [
            thinking("".join(THOUGHT)),
            tool_use("toolu_01A", "add_note", {"title": "milk"}),
        ]
        call = ToolCall("toolu_01A", "add_note", '{"title": "milk"}')
        message = worker.history[1]
        assert (message.text, message.tool_calls, message.stop_reason) == ("", (call,), "tool_use")
        assert kept(message) == as_kept(blocks)
        assert worker.history[1].usage == Usage(50, 90, reasoning_tokens=60)
        second = server.requests[1].json
        assert second["thinking"] == THINKING["thinking"]
        assert second["messages"][1:] == [
            {"role": "assistant", "content": blocks},
            {"role": "user", "content": [tool_result("toolu_01A", "saved milk")]},
        ]
        assert notes.notes == {"milk": ""}

    @pytest.mark.anyio
    async def test_redacted_thinking_is_kept_in_place(self, server, notes):
        """A ``redacted_thinking`` block (its encrypted ``data``, no text to show) goes back
        unchanged, in its place among the thinking, text and tool_use blocks."""
        redacted = {"type": "redacted_thinking", "data": REDACTED}
        frames = wire.claude_message(
            [
                *wire.whole_block(0, redacted),
                *wire.thinking_block(1, ["Saving it."], SIGNATURE),
                *wire.text_block(2, "Let me save that."),
                *wire.tool_use_block(3, "toolu_01B", "add_note", ['{"title": "tea"}']),
            ],
            "tool_use",
        )
        server.add(stream(*frames), stream(*wire.claude_text("Done.")))
        async with make_client(server, extra_body=THINKING) as client:
            worker = make_worker(client, notes)
            await worker.run("remember tea")
        assert worker.history[1].text == "Let me save that."
        assert server.requests[1].json["messages"][1]["content"] == [
            redacted,
            thinking("Saving it."),
            {"type": "text", "text": "Let me save that."},
            tool_use("toolu_01B", "add_note", {"title": "tea"}),
        ]

    @pytest.mark.anyio
    async def test_multi_turn_tool_conversation_with_thinking(self, server, notes):
        """Two runs with thinking before each call: every later request carries every
        earlier assistant turn as it came, thinking included, and extends the one before."""
        server.add(
            stream(*thinking_then_call("toolu_1", "milk")),
            stream(*wire.claude_text("Noted milk.")),
            stream(*thinking_then_call("toolu_2", "eggs")),
            stream(*wire.claude_text("Noted eggs.")),
        )
        async with make_client(server, extra_body=THINKING) as client:
            worker = make_worker(client, notes)
            locked = worker.lock()
            await locked.run("remember milk")
            await locked.run("and eggs")
        assert_history_valid(locked.history)
        bodies = [r.json["messages"] for r in server.requests]
        for earlier, later in itertools.pairwise(bodies):
            assert later[: len(earlier)] == earlier
        last = bodies[3]
        assert last[1]["content"][0] == thinking("".join(THOUGHT))
        assert last[5]["content"] == [
            thinking("".join(THOUGHT)),
            tool_use("toolu_2", "add_note", {"title": "eggs"}),
        ]

    @pytest.mark.anyio
    async def test_thinking_survives_a_saved_and_loaded_state(self, server, notes):
        """The thinking blocks travel in ``RunState`` JSON: a new worker, with the same
        tools, loads the state and its next request sends them back unchanged."""
        server.add(
            stream(*thinking_then_call("toolu_1", "milk")),
            stream(*wire.claude_text("Noted milk.")),
            stream(*thinking_then_call("toolu_2", "eggs")),
            stream(*wire.claude_text("Noted eggs.")),
        )
        async with make_client(server, extra_body=THINKING) as client:
            first = make_worker(client, notes)
            await first.run("remember milk")
            saved = first.state.to_json()
            second = make_worker(client, notes)
            second.load_state(RunState.from_json(saved))
            assert await second.run("and eggs") is WorkerResult.FINISHED
        assert second.history[:4] == first.history
        assert second.history[1].provider_items == first.history[1].provider_items
        before, after = server.requests[1].json["messages"], server.requests[2].json["messages"]
        assert after[: len(before)] == before
        assert after[1]["content"][0] == thinking("".join(THOUGHT))
        assert server.requests[3].json["messages"][5]["content"][0] == thinking("".join(THOUGHT))

    @pytest.mark.anyio
    async def test_edited_calls_rebuild_the_message(self, server, notes):
        """A message whose tool calls no longer match its kept blocks (edited with
        ``set_history``) is sent as its text and calls, without the blocks."""
        blocks = [thinking("Hm."), tool_use("toolu_old", "add_note", {"title": "x"})]
        items = tuple(ProviderItem("anthropic", b["type"], json.dumps(b)) for b in blocks)
        edited = AssistantMessage(
            "", (ToolCall("toolu_new", "get_note", '{"title": "y"}'),), "tool_use", None, items
        )
        server.add(stream(*wire.claude_text("Ok.")))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            worker.set_history(
                [UserMessage("go"), edited, ToolResult("toolu_new", "nothing", is_error=True)]
            )
            await worker.run("again")
        assert server.requests[0].json["messages"][1] == {
            "role": "assistant",
            "content": [tool_use("toolu_new", "get_note", {"title": "y"})],
        }

    @pytest.mark.anyio
    async def test_a_kept_whitespace_text_block_is_not_sent_back(self, server, notes):
        """Thinking, a text block of only whitespace, a tool_use: the message keeps every
        block as it came, but the next request sends the thinking and the tool_use only,
        since the API refuses a text block without non-whitespace text."""
        blank = {"type": "text", "text": " \n"}
        call = tool_use("toolu_01A", "add_note", {"title": "milk"})
        frames = wire.claude_message(
            [
                *wire.thinking_block(0, THOUGHT, SIGNATURE),
                *wire.text_block(1, blank["text"]),
                *wire.tool_use_block(2, "toolu_01A", "add_note", ['{"title": "milk"}']),
            ],
            "tool_use",
        )
        server.add(stream(*frames), stream(*wire.claude_text("Noted.")))
        async with make_client(server, extra_body=THINKING) as client:
            worker = make_worker(client, notes)
            with anyio.fail_after(10):
                assert await worker.run("remember milk") is WorkerResult.FINISHED
        assert kept(worker.history[1]) == as_kept([thinking("".join(THOUGHT)), blank, call])
        assert server.requests[1].json["messages"][1] == {
            "role": "assistant",
            "content": [thinking("".join(THOUGHT)), call],
        }


CITATION = {
    "type": "web_search_result_location",
    "url": "https://en.wikipedia.org/wiki/Claude_Shannon",
    "title": "Claude Shannon - Wikipedia",
    "encrypted_index": "Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNm",
    "cited_text": "Claude Elwood Shannon (April 30, 1916 - February 24, 2001)",
}
SEARCH_INPUT = '{"query": "claude shannon birth date"}'
SEARCH_RESULT = {
    "type": "web_search_tool_result",
    "tool_use_id": "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE",
    "content": [
        {
            "type": "web_search_result",
            "title": "Claude Shannon - Wikipedia",
            "url": "https://en.wikipedia.org/wiki/Claude_Shannon",
            "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUtODgxNC1",
            "page_age": "April 30, 2025",
        }
    ],
}
SERVER_USE = {
    "type": "server_tool_use",
    "id": "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE",
    "name": "web_search",
    "input": json.loads(SEARCH_INPUT),
}
WEB_SEARCH = {"tools": [{"type": "web_search_20250305", "name": "web_search", "max_uses": 3}]}


def search_blocks(start: int) -> list[str]:
    return [
        *wire.server_tool_use_block(start, SERVER_USE["id"], "web_search", SEARCH_INPUT),
        *wire.whole_block(start + 1, SEARCH_RESULT),
    ]


class TestServerTools:
    @pytest.mark.anyio
    async def test_search_blocks_and_citations_are_kept_and_sent_back(self, server):
        """A web search answer: text, server_tool_use (input streamed), its result, text
        with a citation, more text. The answer reads with a blank line where the search
        came between texts, no separator inside the cited run; the next request sends
        every block back as it came."""
        frames = wire.claude_message(
            [
                *wire.text_block(0, "I'll search for that information."),
                *search_blocks(1),
                *wire.text_block(3, "Based on the search results, "),
                *wire.cited_text_block(4, "Claude Shannon was born on April 30, 1916", [CITATION]),
                *wire.text_block(5, "."),
            ],
            "end_turn",
            usage={"output_tokens": 40, "server_tool_use": {"web_search_requests": 1}},
        )
        server.add(stream(*frames), stream(*wire.claude_text("You're welcome.")))
        async with make_client(server) as client:
            worker = Worker(client)
            await worker.run("When was Claude Shannon born?")
            await worker.run("thanks")
        answer = worker.history[1]
        assert answer.text == (
            "I'll search for that information.\n\n"
            "Based on the search results, Claude Shannon was born on April 30, 1916."
        )
        blocks = [
            {"type": "text", "text": "I'll search for that information."},
            SERVER_USE,
            SEARCH_RESULT,
            {"type": "text", "text": "Based on the search results, "},
            {
                "type": "text",
                "text": "Claude Shannon was born on April 30, 1916",
                "citations": [CITATION],
            },
            {"type": "text", "text": "."},
        ]
        assert kept(answer) == as_kept(blocks)
        assert [item.kind for item in answer.provider_items] == [
            "text",
            "server_tool_use",
            "web_search_tool_result",
            "text",
            "text",
            "text",
        ]
        assert server.requests[1].json["messages"][1] == {"role": "assistant", "content": blocks}

    @pytest.mark.anyio
    async def test_pause_turn_is_continued_with_the_paused_content(self, server):
        """A turn the API pauses (``pause_turn``) after a search is not the answer: the
        worker sends the history again with the paused blocks as the last assistant turn,
        and the continuation ends the run."""
        paused = wire.claude_message(
            [*wire.text_block(0, "Let me search."), *search_blocks(1)], "pause_turn"
        )
        server.add(
            stream(*paused),
            stream(*wire.claude_text("Shannon was born in 1916.")),
        )
        async with make_client(server, extra_body=WEB_SEARCH) as client:
            worker = Worker(client)
            assert await worker.run("When was Shannon born?") is WorkerResult.FINISHED
        assert len(server.requests) == 2
        assert worker.history[1].stop_reason == "pause_turn"
        assert worker.final_text == "Shannon was born in 1916."
        second = server.requests[1].json
        assert second["tools"] == WEB_SEARCH["tools"]
        assert second["messages"] == [
            {"role": "user", "content": "When was Shannon born?"},
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "Let me search."}, SERVER_USE, SEARCH_RESULT],
            },
        ]

    @pytest.mark.anyio
    async def test_server_tools_are_sent_beside_the_workers_tools(self, server, notes):
        """extra_body's tools add to the worker's (the SDK would let them replace them):
        the worker's first, then the server tool; a forced choice names a tool it sends."""
        server.add(stream(*wire.claude_text("ok")))
        async with make_client(server, extra_body=WEB_SEARCH) as client:
            worker = make_worker(client, notes)
            assert await worker.run("go", tool_choice="add_note") is WorkerResult.FINISHED
        body = server.requests[0].json
        names = [tool["name"] for tool in body["tools"]]
        assert names == [*sorted(n for n in names if n != "web_search"), "web_search"]
        assert "add_note" in names
        assert body["tools"][-1] == WEB_SEARCH["tools"][0]
        assert body["tool_choice"] == {"type": "tool", "name": "add_note"}

    @pytest.mark.anyio
    async def test_text_between_tool_calls_keeps_its_place(self, server, notes):
        """Text after a tool_use block cannot be rebuilt from text-then-calls: the blocks
        are kept and sent in their order."""
        frames = wire.claude_message(
            [
                *wire.tool_use_block(0, "toolu_1", "add_note", ['{"title": "a"}']),
                *wire.text_block(1, "And another."),
                *wire.tool_use_block(2, "toolu_2", "add_note", ['{"title": "b"}']),
            ],
            "tool_use",
        )
        server.add(stream(*frames), stream(*wire.claude_text("Both saved.")))
        async with make_client(server) as client:
            worker = make_worker(client, notes)
            await worker.run("save a and b")
        assert worker.history[1].text == "And another."  # no text before it: no blank line
        assert server.requests[1].json["messages"][1]["content"] == [
            tool_use("toolu_1", "add_note", {"title": "a"}),
            {"type": "text", "text": "And another."},
            tool_use("toolu_2", "add_note", {"title": "b"}),
        ]


class TestCompaction:
    @pytest.mark.anyio
    async def test_compaction_block_and_its_tokens(self, server):
        """A ``compaction`` block (a type this SDK version does not know) is kept with its
        summary and encrypted content and sent back unchanged; the compaction iteration's
        tokens, which the top-level usage leaves out, are counted."""
        frames = wire.claude_message(
            [
                *wire.whole_block(0, {"type": "compaction", "content": ""})[:1],
                wire.event(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {
                            "type": "compaction_delta",
                            "content": "The user asked about notes; milk was saved.",
                            "encrypted_content": "Eu4BCkYICxgCKkBz",
                        },
                    },
                ),
                wire.block_stop(0),
                *wire.text_block(1, "Milk is saved."),
            ],
            "end_turn",
            usage={
                "input_tokens": 30,
                "output_tokens": 6,
                "iterations": [
                    {
                        "type": "compaction",
                        "input_tokens": 180000,
                        "output_tokens": 3500,
                        "cache_read_input_tokens": 0,
                        "cache_creation_input_tokens": 0,
                    },
                    {
                        "type": "message",
                        "input_tokens": 30,
                        "output_tokens": 6,
                        "cache_read_input_tokens": 0,
                        "cache_creation_input_tokens": 0,
                    },
                ],
            },
        )
        server.add(stream(*frames), stream(*wire.claude_text("Yes.")))
        async with make_client(server) as client:
            worker = Worker(client)
            await worker.run("what did I save?")
            await worker.run("sure?")
        answer = worker.history[1]
        assert answer.text == "Milk is saved."
        assert answer.usage == Usage(180030, 3506)
        compaction = {
            "type": "compaction",
            "content": "The user asked about notes; milk was saved.",
            "encrypted_content": "Eu4BCkYICxgCKkBz",
        }
        assert server.requests[1].json["messages"][1]["content"] == [
            compaction,
            {"type": "text", "text": "Milk is saved."},
        ]
