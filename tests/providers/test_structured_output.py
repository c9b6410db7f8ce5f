"""Structured output through each provider's real SDK: the schema in the API's own field.

``Worker(..., output_type=...)`` with a provider client asks natively (the clients have
``supports_output_format``): Chat Completions ``response_format``, Responses
``text.format``, Anthropic ``output_config.format``, Gemini ``responseMimeType`` and
``responseJsonSchema``. The local server answers with JSON text, which the worker
validates into ``worker.output``.
"""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, Field
from support import GEMINI_SDK, needs_gemini_sdk

from llm_worker import LlmClient, Worker
from llm_worker.providers.anthropic import AnthropicClient
from llm_worker.providers.openai import OpenAIChatClient, OpenAIResponsesClient

from . import wire
from .server import ProviderServer, stream

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
    celsius: float = Field(ge=-100, description="Degrees.")
    note: str = ""


class Tally(BaseModel):
    counts: dict[str, int]  # keys not named in advance: no strict form


ANSWER = '{"city": "Oslo", "celsius": 3.5}'
FORECAST = Forecast(city="Oslo", celsius=3.5)

FORECAST_PROPERTIES = {
    "city": {"title": "City", "type": "string"},
    "celsius": {"description": "Degrees.", "minimum": -100, "title": "Celsius", "type": "number"},
    "note": {"default": "", "title": "Note", "type": "string"},
}


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


async def forecast_run(client: LlmClient, output_type: object = Forecast) -> Worker:
    async with client:  # type: ignore[attr-defined]
        worker = Worker(client, output_type=output_type)
        await worker.run("Weather in Oslo?")
    return worker


class TestChatCompletions:
    async def test_a_run_answers_in_the_strict_json_schema(self, server):
        """response_format is a strict json_schema named after the type: every property
        required, optional ones as they are (never nullable), objects closed; the answer
        streamed as text becomes ``worker.output``."""
        server.add(stream(*wire.chat_text('{"city": "Os', 'lo", "celsius": 3.5}')))
        worker = await forecast_run(chat(server))
        assert worker.output == FORECAST
        assert server.requests[0].json["response_format"] == {
            "type": "json_schema",
            "json_schema": {
                "name": "Forecast",
                "strict": True,
                "schema": {
                    "type": "object",
                    "title": "Forecast",
                    "properties": {
                        "city": {"type": "string", "title": "City"},
                        "celsius": {
                            "type": "number",
                            "minimum": -100,
                            "title": "Celsius",
                            "description": "Degrees.",
                        },
                        "note": {"type": "string", "title": "Note", "description": '(default: "")'},
                    },
                    "required": ["city", "celsius", "note"],
                    "additionalProperties": False,
                },
            },
        }

    async def test_a_schema_without_a_strict_form_goes_as_it_is(self, server):
        """A type strict mode cannot express (a dict with any keys) is sent as its schema,
        ``strict: false``."""
        server.add(stream(*wire.chat_text('{"counts": {"a": 2}}')))
        worker = await forecast_run(chat(server), Tally)
        assert worker.output == Tally(counts={"a": 2})
        assert server.requests[0].json["response_format"]["json_schema"] == {
            "name": "Tally",
            "strict": False,
            "schema": Tally.model_json_schema(),
        }

    async def test_an_invalid_answer_is_sent_back_and_fixed(self, server):
        """An answer missing a field goes back as a user message saying what is wrong; the
        next request still asks for the schema, and its answer is the output."""
        server.add(
            stream(*wire.chat_text('{"city": "Oslo"}')),
            stream(*wire.chat_text(ANSWER)),
        )
        worker = await forecast_run(chat(server))
        assert worker.output == FORECAST
        first, second = (r.json for r in server.requests)
        assert second["messages"][-2:] == [
            {"role": "assistant", "content": '{"city": "Oslo"}'},
            {
                "role": "user",
                "content": "Your final answer does not match the required format: 'celsius': "
                "missing required argument. Answer again, with only the corrected answer.",
            },
        ]
        assert second["response_format"] == first["response_format"]

    async def test_without_output_type_nothing_is_asked(self, server):
        """A run without output_type sends no response_format."""
        server.add(stream(*wire.chat_text("Hi.")))
        async with chat(server) as client:
            await Worker(client).run("hello")
        assert "response_format" not in server.requests[0].json


class TestResponses:
    async def test_a_run_answers_in_the_text_format(self, server):
        """text.format is the json_schema, with its name, schema and strict flag at the
        format's own level."""
        server.add(stream(*wire.responses_text(ANSWER)))
        worker = await forecast_run(responses(server))
        assert worker.output == FORECAST
        text_format = server.requests[0].json["text"]["format"]
        assert {k: v for k, v in text_format.items() if k != "schema"} == {
            "type": "json_schema",
            "name": "Forecast",
            "strict": True,
        }
        assert text_format["schema"]["required"] == ["city", "celsius", "note"]
        assert text_format["schema"]["additionalProperties"] is False


class TestAnthropic:
    async def test_a_run_answers_in_the_output_config_format(self, server):
        """output_config.format is the json_schema rewritten as the SDK's messages.parse
        does: objects closed, keywords the API does not take moved into the description."""
        server.add(stream(*wire.claude_text('{"city": "Oslo", ', '"celsius": 3.5}')))
        worker = await forecast_run(claude(server))
        assert worker.output == FORECAST
        assert server.requests[0].json["output_config"] == {
            "format": {
                "type": "json_schema",
                "schema": {
                    "type": "object",
                    "title": "Forecast",
                    "properties": {
                        "city": {"type": "string", "title": "City"},
                        "celsius": {
                            "type": "number",
                            "title": "Celsius",
                            "description": "Degrees.\n\n{minimum: -100}",
                        },
                        "note": {"type": "string", "title": "Note", "description": "{default: }"},
                    },
                    "additionalProperties": False,
                    "required": ["city", "celsius"],
                },
            }
        }

    async def test_an_output_config_in_extra_body_keeps_the_format(self, server):
        """``extra_body={"output_config": {"effort": ...}}`` is merged with the format, not
        put in its place."""
        server.add(stream(*wire.claude_text(ANSWER)))
        client = AnthropicClient(
            "claude-test",
            api_key="k",
            base_url=server.base_url,
            max_retries=0,
            extra_body={"output_config": {"effort": "low"}},
        )
        worker = await forecast_run(client)
        assert worker.output == FORECAST
        sent = server.requests[0].json["output_config"]
        assert sent["effort"] == "low"
        assert sent["format"]["type"] == "json_schema"

    async def test_a_client_told_otherwise_asks_through_the_tool(self, server):
        """``supports_output_format = False`` on a client: no output_config; the worker
        offers its final_result tool and asks for a tool call instead."""
        server.add(
            stream(*wire.claude_tool_calls([("toolu_1", "final_result", ANSWER)])),
        )
        client = claude(server)
        client.supports_output_format = False
        worker = await forecast_run(client)
        assert worker.output == FORECAST
        body = server.requests[0].json
        assert "output_config" not in body
        assert [t["name"] for t in body["tools"]] == ["final_result"]
        assert body["tool_choice"] == {"type": "any"}


@needs_gemini_sdk
class TestGemini:
    async def test_a_run_answers_in_the_response_json_schema(self, server):
        """responseMimeType application/json and responseJsonSchema, the type's schema; a
        type that is not an object is asked for wrapped, without the worker's own marker,
        and given back unwrapped."""
        server.add(stream(*wire.gemini_text('{"result": [3, ', "1, 2]}")))
        worker = await forecast_run(gemini(server), list[int])
        assert worker.output == [3, 1, 2]
        config = server.requests[0].json["generationConfig"]
        assert config == {
            "responseMimeType": "application/json",
            "responseJsonSchema": {
                "type": "object",
                "properties": {"result": {"type": "array", "items": {"type": "integer"}}},
                "required": ["result"],
            },
        }

    async def test_the_schema_beside_the_config_given(self, server):
        """The schema joins the client's own config fields."""
        server.add(stream(*wire.gemini_text(ANSWER)))
        client = GeminiClient(
            "gemini-test",
            api_key="k",
            base_url=server.base_url,
            max_retries=0,
            config={"temperature": 0.1},
        )
        worker = await forecast_run(client)
        assert worker.output == FORECAST
        config = server.requests[0].json["generationConfig"]
        assert config["temperature"] == 0.1
        assert config["responseJsonSchema"]["properties"] == FORECAST_PROPERTIES
        assert json.dumps(config).count("x-llm-worker") == 0
