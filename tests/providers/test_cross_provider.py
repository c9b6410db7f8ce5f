"""One conversation carried across providers through its saved run state: each client
sends back its own provider's items and drops only what it cannot read.

Anthropic thinks and calls a tool; Gemini continues from the loaded state, then OpenAI's
Responses API, then Anthropic again. Every step runs the real SDK against the local
server (each client speaks its own wire format to it) and asserts what was sent.
"""

from __future__ import annotations

import base64

import pytest
from support import GEMINI_SDK, assert_history_valid, needs_gemini_sdk

from llm_worker import RunState, Worker, tool_definitions
from llm_worker.providers.anthropic import AnthropicClient
from llm_worker.providers.openai import OpenAIResponsesClient

from . import wire
from .server import stream

if GEMINI_SDK:  # google-genai needs Python 3.11+ (tests/support.py)
    from llm_worker.providers.gemini import GeminiClient

pytestmark = [
    needs_gemini_sdk,  # the conversation goes through Gemini
    pytest.mark.filterwarnings(
        r"ignore:Async generator '(anthropic|openai|google|httpx2|httpcore2)\.[^']*' was garbage "
        r"collected:ResourceWarning"
    ),
]

SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
GEMINI_SIGNATURE = base64.b64encode(b"\x12\xfbgemini thought").decode()
ENCRYPTED = "gAAAAABoWaS0x4m3K1Jd0cXqPyVJ5u1NfWtGmvHnHf0"
SKIP = "skip_thought_signature_validator"


def worker_for(client, notes, state: str | None = None) -> Worker:
    worker = Worker(client, system_prompt="You keep notes.")
    worker.register_tools(tool_definitions(notes))
    if state is not None:
        worker.load_state(RunState.from_json(state))
    return worker


@pytest.mark.anyio
async def test_a_conversation_moves_between_providers(server, notes):
    """Each client keeps and resends its own items (Anthropic's thinking, Gemini's thought
    signature, the Responses reasoning item) and drops the others': a message from
    another provider goes as its text and tool calls."""
    server.add(
        # 1. Anthropic: thinking, then a call; then the answer.
        stream(
            *wire.claude_message(
                [
                    *wire.thinking_block(0, ["Note it."], SIGNATURE),
                    *wire.tool_use_block(1, "toolu_1", "add_note", ['{"title": "milk"}']),
                ],
                "tool_use",
            )
        ),
        stream(*wire.claude_text("Noted milk.")),
        # 2. Gemini: a thought signature on its call; then the answer.
        stream(
            *wire.gemini_calls(
                [("add_note", {"title": "eggs"})], ids=["fc_2"], signature=GEMINI_SIGNATURE
            )
        ),
        stream(*wire.gemini_text("Noted eggs.")),
        # 3. Responses: a reasoning item, then the answer.
        stream(
            *wire.add_reasoning(wire.ResponseEvents().start(), ["Both saved."], ENCRYPTED)
            .text("Milk and eggs.")
            .completed()
        ),
        # 4. Anthropic again.
        stream(*wire.claude_text("Still milk and eggs.")),
    )
    base = server.base_url
    async with (
        AnthropicClient("claude-test", api_key="k", base_url=base, max_retries=0) as claude,
        GeminiClient("gemini-test", api_key="k", base_url=base, max_retries=0) as gemini,
        OpenAIResponsesClient("gpt-test", api_key="k", base_url=f"{base}/v1", max_retries=0) as gpt,
    ):
        first = worker_for(claude, notes)
        await first.run("remember milk")
        second = worker_for(gemini, notes, first.state.to_json())
        await second.run("and eggs")
        third = worker_for(gpt, notes, second.state.to_json())
        await third.run("what do I have?")
        fourth = worker_for(claude, notes, third.state.to_json())
        await fourth.run("sure?")
    assert_history_valid(fourth.history)
    assert notes.notes == {"milk": "", "eggs": ""}
    requests = [r.json for r in server.requests]

    # Gemini drops Anthropic's thinking; the call goes with the skip signature.
    gemini_history = requests[2]["contents"]
    assert gemini_history[1] == {
        "role": "model",
        "parts": [
            {
                "functionCall": {"id": "toolu_1", "args": {"title": "milk"}, "name": "add_note"},
                "thoughtSignature": SKIP,
            }
        ],
    }
    assert gemini_history[3] == {"role": "model", "parts": [{"text": "Noted milk."}]}

    # Responses drops the thinking and the thought signature: text and calls only.
    gpt_input = requests[4]["input"]
    assert gpt_input[1:9] == [
        {
            "type": "function_call",
            "call_id": "toolu_1",
            "name": "add_note",
            "arguments": '{"title": "milk"}',
        },
        {"type": "function_call_output", "call_id": "toolu_1", "output": "saved milk"},
        {"role": "assistant", "content": "Noted milk."},
        {"role": "user", "content": "and eggs"},
        {
            "type": "function_call",
            "call_id": "fc_2",
            "name": "add_note",
            "arguments": '{"title": "eggs"}',
        },
        {"type": "function_call_output", "call_id": "fc_2", "output": "saved eggs"},
        {"role": "assistant", "content": "Noted eggs."},
        {"role": "user", "content": "what do I have?"},
    ]

    # Anthropic sends its own thinking back, and the others' turns as text and tool_use.
    claude_history = requests[5]["messages"]
    assert claude_history[1]["content"] == [
        {"type": "thinking", "thinking": "Note it.", "signature": SIGNATURE},
        {"type": "tool_use", "id": "toolu_1", "name": "add_note", "input": {"title": "milk"}},
    ]
    assert claude_history[5] == {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "fc_2", "name": "add_note", "input": {"title": "eggs"}}
        ],
    }
    assert claude_history[9] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Milk and eggs."}],
    }
    # Every item is still in the history, for a client that can read it.
    providers = [
        {item.provider for item in message.provider_items}
        for message in fourth.history
        if getattr(message, "provider_items", ())
    ]
    assert providers == [{"anthropic"}, {"gemini"}, {"openai"}]
