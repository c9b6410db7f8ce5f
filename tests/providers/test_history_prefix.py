"""Each client converts only the messages its last request did not have (``HistoryPrefix``),
and the result is always what converting the whole history gives: when the history grows,
when ``set_history`` or ``load_state`` replaces it, when an edit changes an earlier message.
"""

from __future__ import annotations

import dataclasses

import pytest
from support import GEMINI_SDK, needs_gemini_sdk

from llm_worker import AssistantMessage, ToolCall, ToolResult, UserMessage
from llm_worker.providers._common import HistoryPrefix
from llm_worker.providers.anthropic import claude_messages
from llm_worker.providers.openai import chat_messages, responses_input

from . import wire
from .server import stream
from .test_anthropic import make_client, make_worker

if GEMINI_SDK:  # google-genai needs Python 3.11+ (tests/support.py)
    from llm_worker.providers.gemini import gemini_contents


def turn(number: int) -> list:
    call = ToolCall(f"call_{number}", "get_note", f'{{"title": "n{number}"}}')
    return [AssistantMessage(f"Looking {number}.", (call,), "tool_use"), ToolResult(call.id, "x")]


HISTORY = [UserMessage("go"), *turn(0), *turn(1), UserMessage("more"), *turn(2)]

CONVERTERS = {
    "anthropic": lambda messages, prefix: claude_messages(messages, prefix),
    "chat": lambda messages, prefix: chat_messages("system", messages, prefix),
    "responses": lambda messages, prefix: responses_input(messages, prefix),
    "gemini": lambda messages, prefix: gemini_contents(messages, prefix),
}


def dumped(value: object) -> object:
    """Gemini's model turns are SDK objects: compare them as data."""
    if isinstance(value, list):
        return [dumped(item) for item in value]
    dump = getattr(value, "model_dump", None)
    return dump(exclude_none=True) if dump is not None else value


@pytest.mark.parametrize(
    "provider",
    [
        pytest.param(name, marks=needs_gemini_sdk) if name == "gemini" else name
        for name in CONVERTERS
    ],
)
class TestPrefix:
    def test_growing_history(self, provider):
        """Request after request on a growing history, split anywhere (inside a run of
        tool results too), gives what converting the whole history gives."""
        convert = CONVERTERS[provider]
        for split in range(1, len(HISTORY) + 1):
            prefix: HistoryPrefix = HistoryPrefix()
            convert(HISTORY[:split], prefix)
            assert dumped(convert(HISTORY, prefix)) == dumped(convert(HISTORY, None))

    def test_a_pending_result_joins_the_next_one(self, provider):
        """A history that ends in one tool result, then gets another: both results go in
        one turn, as from a whole conversion."""
        call_a, call_b = ToolCall("a", "get_note", "{}"), ToolCall("b", "get_note", "{}")
        messages = [
            UserMessage("go"),
            AssistantMessage("", (call_a, call_b), "tool_use"),
            ToolResult("a", "1"),
            ToolResult("b", "2"),
        ]
        convert = CONVERTERS[provider]
        prefix: HistoryPrefix = HistoryPrefix()
        convert(messages[:3], prefix)
        assert dumped(convert(messages, prefix)) == dumped(convert(messages, None))

    def test_replaced_history(self, provider):
        """A history whose earlier message changed (an edit, another conversation loaded)
        is converted anew, and so is a shorter one."""
        convert = CONVERTERS[provider]
        prefix: HistoryPrefix = HistoryPrefix()
        convert(HISTORY, prefix)
        edited = list(HISTORY)
        edited[1] = dataclasses.replace(edited[1], text="Edited.")
        assert dumped(convert(edited, prefix)) == dumped(convert(edited, None))
        shorter = HISTORY[:3]
        assert dumped(convert(shorter, prefix)) == dumped(convert(shorter, None))

    def test_returned_lists_are_not_changed_later(self, provider):
        """What one request was given stays as it was when later requests extend it."""
        convert = CONVERTERS[provider]
        prefix: HistoryPrefix = HistoryPrefix()
        first = convert(HISTORY[:4], prefix)
        before = dumped(first)
        convert(HISTORY, prefix)
        assert dumped(first) == before


@pytest.mark.anyio
async def test_set_history_between_runs_is_sent_as_set(server, notes):
    """Through a worker: after ``set_history`` with an edited first answer, the next
    request sends the edited history, not the one converted before."""
    server.add(stream(*wire.claude_text("One.")), stream(*wire.claude_text("Two.")))
    async with make_client(server) as client:
        worker = make_worker(client, notes)
        await worker.run("first")
        edited = list(worker.history)
        edited[1] = AssistantMessage("Edited one.", (), "end_turn")
        worker.set_history(edited)
        await worker.run("second")
    assert server.requests[1].json["messages"] == [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": [{"type": "text", "text": "Edited one."}]},
        {"role": "user", "content": "second"},
    ]
