"""Structured output whose answer a response's stop reason explains, through each
provider's real SDK: cut off at the token limit, refused, blocked by the provider.

Each answer fails validation (JSON cut short, a refusal's words, no text at all); the
model is told why its response ended (and, cut off, to answer shorter), and the run's
``OutputValidationError`` names the stop reason, not only "not valid JSON".

These runs need the loop to pass the stop reason on (``_run.py``:
``output.answer_text(message.text, stop_reason=message.stop_reason)``).
"""

from __future__ import annotations

import json

import anyio
import pytest
from pydantic import BaseModel
from support import GEMINI_SDK, needs_gemini_sdk

from llm_worker import AssistantMessage, LlmClient, OutputValidationError, UserMessage, Worker
from llm_worker.providers.anthropic import AnthropicClient
from llm_worker.providers.openai import OpenAIChatClient, OpenAIResponsesClient

from . import wire
from .server import ProviderServer, stream
from .test_openai_responses import responses_refusal

if GEMINI_SDK:  # google-genai needs Python 3.11+ (tests/support.py)
    from llm_worker.providers.gemini import GeminiClient

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(
        r"ignore:Async generator '(openai|anthropic|httpx2|httpcore2)\.[^']*' was garbage "
        r"collected:ResourceWarning"
    ),
]


class Forecast(BaseModel):
    city: str
    celsius: float


CUT = '{"city": "Os'
REFUSAL = "I can't help with that."
CUT_OFF = "the response was cut off at the output token limit (stop reason 'max_tokens'); "


def chat(server: ProviderServer) -> OpenAIChatClient:
    return OpenAIChatClient(
        "gpt-test", api_key="k", base_url=f"{server.base_url}/v1", max_retries=0
    )


def responses(server: ProviderServer) -> OpenAIResponsesClient:
    return OpenAIResponsesClient(
        "gpt-test", api_key="k", base_url=f"{server.base_url}/v1", max_retries=0
    )


def claude(server: ProviderServer) -> AnthropicClient:
    return AnthropicClient("claude-test", api_key="k", base_url=server.base_url, max_retries=0)


def gemini(server: ProviderServer) -> GeminiClient:
    return GeminiClient("gemini-test", api_key="k", base_url=server.base_url, max_retries=0)


# -- each API's own frames ------------------------------------------------------------------


def chat_cut() -> tuple[str, ...]:
    return (wire.chunk({"role": "assistant", "content": CUT}), wire.chunk({}, "length"), wire.DONE)


def chat_refusal() -> tuple[str, ...]:
    """A refusal as OpenAI streams one: ``delta.refusal`` text, then ``stop``."""
    return (
        wire.chunk({"role": "assistant", "content": None, "refusal": ""}),
        wire.chunk({"refusal": REFUSAL}),
        wire.chunk({}, "stop"),
        wire.DONE,
    )


def chat_filtered() -> tuple[str, ...]:
    return (
        wire.chunk({"role": "assistant", "content": ""}),
        wire.chunk({}, "content_filter"),
        wire.DONE,
    )


def claude_stop(stop_reason: str, text: str) -> tuple[str, ...]:
    return (
        wire.message_start(),
        *wire.text_block(0, text),
        wire.message_delta(stop_reason, 5),
        wire.MESSAGE_STOP,
    )


def gemini_blocked_prompt(reason: str) -> tuple[str, ...]:
    payload = {"promptFeedback": {"blockReason": reason}, "usageMetadata": {"promptTokenCount": 9}}
    return (f"data: {json.dumps(payload)}\r\n\r\n",)


# -- the runs --------------------------------------------------------------------------------


async def failed_run(client: LlmClient, server: ProviderServer, frames: tuple[str, ...]):
    """A run whose two answers (output_retries=1) both come as ``frames``: the error, the
    worker, and what the model was told of the first."""
    server.add(stream(*frames), stream(*frames))
    async with client:  # type: ignore[attr-defined]
        worker = Worker(client, output_type=Forecast, output_retries=1)
        with pytest.raises(OutputValidationError) as caught, anyio.fail_after(10):
            await worker.run("Weather in Oslo?")
    told = worker.history[2]
    assert isinstance(told, UserMessage)
    assert len(server.requests) == 2
    return caught.value, worker, told.text


CASES = [
    pytest.param(chat, chat_cut(), "max_tokens", CUT_OFF, id="chat-length"),
    pytest.param(
        chat,
        chat_refusal(),
        "refusal",
        "the response was a refusal (stop reason 'refusal'); ",
        id="chat-refusal",
    ),
    pytest.param(
        chat,
        chat_filtered(),
        "content_filter",
        "the provider blocked the response (stop reason 'content_filter'); ",
        id="chat-content-filter",
    ),
    pytest.param(
        responses,
        wire.ResponseEvents().start().text(CUT).incomplete("max_output_tokens"),
        "max_tokens",
        CUT_OFF,
        id="responses-max-output-tokens",
    ),
    pytest.param(
        responses,
        responses_refusal("I can't ", "help with that."),
        "refusal",
        "the response was a refusal (stop reason 'refusal'); ",
        id="responses-refusal",
    ),
    pytest.param(
        responses,
        wire.ResponseEvents().start().incomplete("content_filter"),
        "content_filter",
        "the provider blocked the response (stop reason 'content_filter'); ",
        id="responses-content-filter",
    ),
    pytest.param(claude, claude_stop("max_tokens", CUT), "max_tokens", CUT_OFF, id="claude-max"),
    pytest.param(
        claude,
        claude_stop("refusal", REFUSAL),
        "refusal",
        "the response was a refusal (stop reason 'refusal'); ",
        id="claude-refusal",
    ),
    pytest.param(
        gemini,
        wire.gemini_text(CUT, finish_reason="MAX_TOKENS"),
        "max_tokens",
        CUT_OFF,
        id="gemini-max-tokens",
        marks=needs_gemini_sdk,
    ),
    pytest.param(
        gemini,
        (wire.gemini_chunk([], "SAFETY", wire.gemini_usage(12, 0)),),
        "safety",
        "the provider blocked the response (stop reason 'safety'); ",
        id="gemini-safety",
        marks=needs_gemini_sdk,
    ),
    pytest.param(
        gemini,
        gemini_blocked_prompt("PROHIBITED_CONTENT"),
        "prohibited_content",
        "the provider blocked the response (stop reason 'prohibited_content'); ",
        id="gemini-blocked-prompt",
        marks=needs_gemini_sdk,
    ),
]


@pytest.mark.parametrize(("make", "frames", "stop_reason", "why"), CASES)
async def test_the_model_and_the_error_read_why_the_response_ended(
    server, make, frames, stop_reason, why
):
    error, worker, told = await failed_run(make(server), server, frames)
    answers = [m for m in worker.history if isinstance(m, AssistantMessage)]
    assert [m.stop_reason for m in answers] == [stop_reason, stop_reason]
    assert error.problems.startswith(why)
    assert told.startswith(f"Your final answer does not match the required format: {why}")
    ask = "Answer again, shorter, with only the answer."
    assert told.endswith(ask) == (stop_reason == "max_tokens")
