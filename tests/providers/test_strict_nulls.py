"""OpenAI strict mode: the nulls it introduces never reach a tool.

A client made with ``strict=True`` sends each tool's schema rewritten for strict mode,
where an optional argument (and a nested key that may be missing) is required and
nullable, ``null`` meaning "not given". Both OpenAI clients take those nulls out of each
call's arguments (``drop_introduced_nulls`` with the tool's own schema) before the worker
reads them, through the real SDK.
"""

from __future__ import annotations

import json

import pytest
from typing_extensions import NotRequired, TypedDict

from llm_worker import (
    AssistantMessage,
    ToolInputDelta,
    Worker,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker.providers.openai import OpenAIChatClient, OpenAIResponsesClient

from . import wire
from .server import ProviderServer, stream

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(
        r"ignore:Async generator '(openai|httpx2|httpcore2)\.[^']*' was garbage "
        r"collected:ResourceWarning"
    ),
]


class Window(TypedDict):
    start: str
    end: NotRequired[str]


@tool_registry
class Calendar:
    """Free slots in a calendar."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Window, int, str | None]] = []

    @tool
    async def find_slots(
        self, day: str, window: Window, limit: int = 3, tag: str | None = "work"
    ) -> str:
        """Free slots on a day, within a window."""
        self.seen.append((day, window, limit, tag))
        return f"{len(self.seen)} found"


# As strict mode has the model send it: every key, null for those not given; ``tag``
# accepts null, so its null is the model's own.
SENT = '{"day": "mon", "window": {"start": "09:00", "end": null}, "limit": null, "tag": null}'
DROPPED = {"day": "mon", "window": {"start": "09:00"}, "tag": None}


def chat(server: ProviderServer, strict: bool = True) -> OpenAIChatClient:
    return OpenAIChatClient(
        "gpt-test", api_key="k", base_url=f"{server.base_url}/v1", max_retries=0, strict=strict
    )


def responses(server: ProviderServer) -> OpenAIResponsesClient:
    return OpenAIResponsesClient(
        "gpt-test", api_key="k", base_url=f"{server.base_url}/v1", max_retries=0, strict=True
    )


async def calendar_run(client, calendar: Calendar) -> tuple[Worker, list[str]]:
    """A run whose model calls find_slots with ``SENT``; the argument fragments streamed."""
    fragments: list[str] = []
    async with client:
        worker = Worker(client)
        worker.register_tools(tool_definitions(calendar))
        async with worker.run_stream("Find me a slot on Monday.") as events:
            async for event in events:
                if isinstance(event, ToolInputDelta):
                    fragments.append(event.fragment)
    return worker, fragments


class TestChat:
    async def test_introduced_nulls_are_dropped_before_the_tool_runs(self, server):
        """The nested key's null and the optional argument's null are gone (the tool gets
        its default and a window without ``end``); ``tag``'s null, which its type
        accepts, stays. The arguments arrive as one fragment once the call is complete."""
        server.add(
            stream(*wire.chat_tool_calls([("call_1", "find_slots", SENT)], chunk_size=9)),
            stream(*wire.chat_text("Monday 9:00 is free.")),
        )
        calendar = Calendar()
        worker, fragments = await calendar_run(chat(server), calendar)
        assert calendar.seen == [("mon", {"start": "09:00"}, 3, None)]
        assert [json.loads(f) for f in fragments] == [DROPPED]
        call = worker.history[1]
        assert isinstance(call, AssistantMessage)
        assert json.loads(call.tool_calls[0].input_json) == DROPPED
        # What was sent: the strict rewrite, nulls allowed where they mean "not given".
        schema = server.requests[0].json["tools"][0]["function"]["parameters"]
        assert schema["required"] == ["day", "window", "limit", "tag"]
        window = schema["$defs"]["Window"]
        assert window["properties"]["end"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}

    async def test_arguments_without_null_are_kept_as_sent(self, server):
        """Arguments with no ``null`` in their text are passed on exactly as they came."""
        sent = (
            '{"day": "tue", "window": {"start": "10:00", "end": "12:00"}, "limit": 1, "tag": "x"}'
        )
        server.add(
            stream(*wire.chat_tool_calls([("call_1", "find_slots", sent)], chunk_size=7)),
            stream(*wire.chat_text("done")),
        )
        calendar = Calendar()
        _, fragments = await calendar_run(chat(server), calendar)
        assert fragments == [sent]
        assert calendar.seen == [("tue", {"start": "10:00", "end": "12:00"}, 1, "x")]

    async def test_without_strict_the_fragments_stream_and_nulls_stay(self, server):
        """A client without strict streams the fragments as they come and changes
        nothing: the nested null reaches validation, which refuses it."""
        server.add(
            stream(*wire.chat_tool_calls([("call_1", "find_slots", SENT)], chunk_size=9)),
            stream(*wire.chat_text("Sorry.")),
        )
        calendar = Calendar()
        worker, fragments = await calendar_run(chat(server, strict=False), calendar)
        assert "".join(fragments) == SENT
        assert len(fragments) > 1
        assert calendar.seen == []
        assert worker.history[2].is_error


class TestResponses:
    async def test_introduced_nulls_are_dropped_before_the_tool_runs(self, server):
        """The same through the Responses API: the call's arguments, taken when its item
        is done, lose the introduced nulls."""
        server.add(
            stream(*wire.responses_calls([("call_1", "find_slots", SENT)], chunk_size=11)),
            stream(*wire.responses_text("Monday 9:00 is free.")),
        )
        calendar = Calendar()
        _, fragments = await calendar_run(responses(server), calendar)
        assert calendar.seen == [("mon", {"start": "09:00"}, 3, None)]
        assert [json.loads(f) for f in fragments] == [DROPPED]
