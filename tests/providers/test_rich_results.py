"""Rich tool results through each provider's real SDK: what the local server received.

A tool returns a ``ToolReturn`` of text, an image, a PDF and data; each client sends the
parts as its API takes them (``docs/providers.md``, "Rich tool results"): Anthropic as
``tool_result`` blocks, Responses as ``function_call_output`` items, Chat Completions as
the tool message's text plus one user message of media after the turn's tool messages,
Gemini as the function response's ``parts`` (and a user turn for what those cannot hold).
A result without media is sent exactly as a text result, and metadata never is.
"""

from __future__ import annotations

import base64
import json
from urllib.parse import quote

import pytest
from support import GEMINI_SDK, needs_gemini_sdk

from llm_worker import (
    AssistantMessage,
    DataPart,
    LlmClient,
    LlmRequest,
    MediaPart,
    TextPart,
    ToolCall,
    ToolResult,
    ToolReturn,
    UserMessage,
    Worker,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker._content import ContentPart, text_of
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

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR-chart"
PDF = b"%PDF-1.7\n% the Q3 report"
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt -clip"
NOTES = "Line one.\nLine two: caf\u00e9.".encode()
CHART_URL = "https://charts.example.com/2025.png"
REPORT_URL = "https://files.example.com/q3.pdf"
VIDEO_URL = "https://media.example.com/demo.mp4"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def urlsafe_b64(data: bytes) -> str:
    """How the Gemini SDK writes bytes."""
    return base64.urlsafe_b64encode(data).decode()


def data_url(media_type: str, data: bytes) -> str:
    return f"data:{media_type};base64,{b64(data)}"


@tool_registry
class Reports:
    """Sales reports, with charts."""

    @tool
    async def sales_report(self, year: int) -> ToolReturn:
        """The sales of a year: a line of text, the chart, the PDF and the figures."""
        return ToolReturn(
            [
                TextPart(f"Sales in {year}:"),
                MediaPart("image/png", data=PNG),
                MediaPart("application/pdf", data=PDF, name="q3.pdf"),
                DataPart.of({"total": 1200}),
            ],
            metadata={"source": "warehouse-secret"},
        )

    @tool
    async def plain(self) -> str:
        """A text result."""
        return "just text"


REPORT_TEXT = 'Sales in 2025:\n{"total":1200}'


def rich_history(*parts: ContentPart, call_id: str = "call_1") -> list:
    """A user message, a call, and its result holding ``parts``."""
    return [
        UserMessage("report"),
        AssistantMessage("", (ToolCall(call_id, "sales_report", '{"year": 2025}'),)),
        ToolResult(call_id, text_of(parts), parts=tuple(parts)),
    ]


async def send(client: LlmClient, messages: list) -> None:
    """One request with ``messages``, read to its end."""
    async for _ in client.stream(LlmRequest(None, messages, ())):
        pass


async def report_run(client: LlmClient, server: ProviderServer, replies: tuple) -> dict:
    """A worker run whose model calls sales_report then answers; the second request body."""
    server.add(*replies)
    worker = Worker(client)
    worker.register_tools(tool_definitions(Reports()))
    await worker.run("How did 2025 go?")
    assert worker.final_text == "Good year."
    body = server.requests[1].json
    assert "warehouse-secret" not in json.dumps(body)  # metadata is the application's
    return body


# -- Anthropic --------------------------------------------------------------------------


def claude(server: ProviderServer) -> AnthropicClient:
    return AnthropicClient("claude-test", api_key="k", base_url=server.base_url, max_retries=0)


class TestAnthropic:
    async def test_a_tool_returns_an_image_and_a_pdf(self, server):
        """A tool's text, image, PDF and data become the tool_result's content blocks, in
        order: text, base64 image, base64 document titled with its name, the data's JSON."""
        replies = (
            stream(*wire.claude_tool_calls([("toolu_1", "sales_report", '{"year": 2025}')])),
            stream(*wire.claude_text("Good year.")),
        )
        async with claude(server) as client:
            body = await report_run(client, server, replies)
        assert body["messages"][-1] == {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "is_error": False,
                    "content": [
                        {"type": "text", "text": "Sales in 2025:"},
                        {
                            "type": "image",
                            "source": {
                                "type": "base64",
                                "media_type": "image/png",
                                "data": b64(PNG),
                            },
                        },
                        {
                            "type": "document",
                            "source": {
                                "type": "base64",
                                "media_type": "application/pdf",
                                "data": b64(PDF),
                            },
                            "title": "q3.pdf",
                        },
                        {"type": "text", "text": '{"total":1200}'},
                    ],
                }
            ],
        }

    async def test_urls_text_documents_and_what_it_cannot_take(self, server):
        """Images and PDFs by URL go as url sources, a text document as a plain-text
        source; audio, video and other documents become a note in their place."""
        server.add(stream(*wire.claude_text("ok")))
        parts = (
            MediaPart("image/png", url=CHART_URL),
            MediaPart("application/pdf", url=REPORT_URL),
            MediaPart("text/plain", data=NOTES, name="notes.txt"),
            MediaPart("audio/wav", data=WAV, name="clip.wav"),
            MediaPart("video/mp4", url=VIDEO_URL),
            MediaPart("application/zip", data=b"PK"),
        )
        async with claude(server) as client:
            await send(client, rich_history(*parts))
        result = server.requests[0].json["messages"][-1]["content"][0]
        assert result["content"] == [
            {"type": "image", "source": {"type": "url", "url": CHART_URL}},
            {"type": "document", "source": {"type": "url", "url": REPORT_URL}},
            {
                "type": "document",
                "source": {"type": "text", "media_type": "text/plain", "data": NOTES.decode()},
                "title": "notes.txt",
            },
            {
                "type": "text",
                "text": f"['clip.wav' (audio/wav, {len(WAV)} bytes) not shown: this API "
                "cannot take audio/wav in a tool result]",
            },
            {
                "type": "text",
                "text": f"[video/mp4 at {VIDEO_URL} not shown: this API cannot take "
                "video/mp4 in a tool result]",
            },
            {
                "type": "text",
                "text": "[application/zip (2 bytes) not shown: this API cannot take "
                "application/zip in a tool result]",
            },
        ]

    async def test_text_and_data_parts_alone_are_a_text_result(self, server):
        """A result of text and data parts only is sent as its text, as a text result is."""
        server.add(stream(*wire.claude_text("ok")))
        async with claude(server) as client:
            await send(client, rich_history(TextPart("a"), DataPart.of([1, 2])))
        result = server.requests[0].json["messages"][-1]["content"][0]
        assert result["content"] == "a\n[1,2]"


# -- OpenAI Responses -------------------------------------------------------------------


def responses(server: ProviderServer) -> OpenAIResponsesClient:
    return OpenAIResponsesClient(
        "gpt-test", api_key="k", base_url=f"{server.base_url}/v1", max_retries=0
    )


class TestResponses:
    async def test_a_tool_returns_an_image_and_a_pdf(self, server):
        """The function_call_output's output is a list of items in the parts' order:
        input_text, input_image (a data URL), input_file (file_data and filename)."""
        replies = (
            stream(*wire.responses_calls([("call_1", "sales_report", '{"year": 2025}')])),
            stream(*wire.responses_text("Good year.")),
        )
        async with responses(server) as client:
            body = await report_run(client, server, replies)
        assert body["input"][-1] == {
            "type": "function_call_output",
            "call_id": "call_1",
            "output": [
                {"type": "input_text", "text": "Sales in 2025:"},
                {"type": "input_image", "image_url": data_url("image/png", PNG)},
                {
                    "type": "input_file",
                    "file_data": data_url("application/pdf", PDF),
                    "filename": "q3.pdf",
                },
                {"type": "input_text", "text": '{"total":1200}'},
            ],
        }

    async def test_urls_and_what_it_cannot_take(self, server):
        """URLs go as image_url and file_url; a document without a name gets one from its
        type; audio and video become a note."""
        server.add(stream(*wire.responses_text("ok")))
        parts = (
            MediaPart("image/jpeg", url=CHART_URL),
            MediaPart("application/pdf", url=REPORT_URL, name="q3.pdf"),
            MediaPart("text/plain", data=NOTES),
            MediaPart("audio/wav", data=WAV),
            MediaPart("video/mp4", url=VIDEO_URL),
        )
        async with responses(server) as client:
            await send(client, rich_history(*parts))
        assert server.requests[0].json["input"][-1]["output"] == [
            {"type": "input_image", "image_url": CHART_URL},
            {"type": "input_file", "file_url": REPORT_URL, "filename": "q3.pdf"},
            {
                "type": "input_file",
                "file_data": data_url("text/plain", NOTES),
                "filename": "document.txt",
            },
            {
                "type": "input_text",
                "text": f"[audio/wav ({len(WAV)} bytes) not shown: this API cannot take "
                "audio/wav in a tool result]",
            },
            {
                "type": "input_text",
                "text": f"[video/mp4 at {VIDEO_URL} not shown: this API cannot take "
                "video/mp4 in a tool result]",
            },
        ]


# -- OpenAI Chat Completions ------------------------------------------------------------


def chat(server: ProviderServer) -> OpenAIChatClient:
    return OpenAIChatClient(
        "gpt-test", api_key="k", base_url=f"{server.base_url}/v1", max_retries=0
    )


ATTACHED = (
    f"[attached in the next user message: image/png ({len(PNG)} bytes), "
    f"'q3.pdf' (application/pdf, {len(PDF)} bytes)]"
)


class TestChat:
    async def test_the_media_follow_the_tool_messages_in_a_user_message(self, server):
        """The tool message has the text and a note naming the media; one user message
        after the turn's tool messages has, per result with media, a line naming its call
        and then its media (image_url, file). A text result of the same turn is as ever."""
        replies = (
            stream(
                *wire.chat_tool_calls(
                    [
                        ("call_1", "sales_report", '{"year": 2025}'),
                        ("call_2", "plain", "{}"),
                        ("call_3", "sales_report", '{"year": 2024}'),
                    ]
                )
            ),
            stream(*wire.chat_text("Good year.")),
        )
        async with chat(server) as client:
            body = await report_run(client, server, replies)
        media = [
            {"type": "image_url", "image_url": {"url": data_url("image/png", PNG)}},
            {
                "type": "file",
                "file": {"file_data": data_url("application/pdf", PDF), "filename": "q3.pdf"},
            },
        ]
        assert body["messages"][2:] == [
            {"role": "tool", "tool_call_id": "call_1", "content": f"{REPORT_TEXT}\n{ATTACHED}"},
            {"role": "tool", "tool_call_id": "call_2", "content": "just text"},
            {
                "role": "tool",
                "tool_call_id": "call_3",
                "content": f"{REPORT_TEXT.replace('2025', '2024')}\n{ATTACHED}",
            },
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "[attachments of the result of tool call call_1:]"},
                    *media,
                    {"type": "text", "text": "[attachments of the result of tool call call_3:]"},
                    *media,
                ],
            },
        ]

    async def test_the_user_message_stays_after_its_turn_in_later_requests(self, server):
        """Converted once and kept: the next request still has the media right after the
        tool messages, before the next assistant message."""
        replies = (
            stream(*wire.chat_tool_calls([("call_1", "sales_report", '{"year": 2025}')])),
            stream(*wire.chat_tool_calls([("call_2", "plain", "{}")])),
            stream(*wire.chat_text("Good year.")),
        )
        server.add(*replies)
        async with chat(server) as client:
            worker = Worker(client)
            worker.register_tools(tool_definitions(Reports()))
            await worker.run("How did 2025 go?")
        second, third = (r.json["messages"] for r in server.requests[1:])
        roles = [(m["role"], m.get("tool_call_id")) for m in third]
        assert roles == [
            ("user", None),
            ("assistant", None),
            ("tool", "call_1"),
            ("user", None),
            ("assistant", None),
            ("tool", "call_2"),
        ]
        assert third[:4] == second
        assert third[3]["content"][1]["type"] == "image_url"

    async def test_audio_text_documents_and_what_it_cannot_take(self, server):
        """WAV and MP3 bytes go as input_audio, a text document as its text, an image URL as
        image_url; video, audio by URL and other documents are notes in the tool message."""
        server.add(stream(*wire.chat_text("ok")))
        parts = (
            TextPart("Files:"),
            MediaPart("audio/wav", data=WAV),
            MediaPart("audio/mpeg", data=b"ID3-mp3"),
            MediaPart("text/plain", data=NOTES, name="notes.txt"),
            MediaPart("image/webp", url=CHART_URL),
            MediaPart("video/mp4", url=VIDEO_URL),
            MediaPart("audio/wav", url="https://media.example.com/a.wav"),
            MediaPart("application/pdf", url=REPORT_URL),
        )
        async with chat(server) as client:
            await send(client, rich_history(*parts))
        tool_message, user_message = server.requests[0].json["messages"][-2:]
        assert tool_message["content"].splitlines() == [
            "Files:",
            f"[video/mp4 at {VIDEO_URL} not shown: this API cannot take video/mp4 in a tool "
            "result]",
            "[audio/wav at https://media.example.com/a.wav not shown: this API cannot take "
            "audio/wav in a tool result]",
            f"[application/pdf at {REPORT_URL} not shown: this API cannot take "
            "application/pdf in a tool result]",
            f"[attached in the next user message: audio/wav ({len(WAV)} bytes), audio/mpeg "
            f"(7 bytes), 'notes.txt' (text/plain, {len(NOTES)} bytes), image/webp at "
            f"{CHART_URL}]",
        ]
        assert user_message["content"] == [
            {"type": "text", "text": "[attachments of the result of tool call call_1:]"},
            {"type": "input_audio", "input_audio": {"data": b64(WAV), "format": "wav"}},
            {"type": "input_audio", "input_audio": {"data": b64(b"ID3-mp3"), "format": "mp3"}},
            {
                "type": "text",
                "text": f"[file 'notes.txt' (text/plain, {len(NOTES)} bytes):]\n{NOTES.decode()}",
            },
            {"type": "image_url", "image_url": {"url": CHART_URL}},
        ]

    async def test_a_text_document_is_sent_after_a_line_naming_it(self, server):
        """A ``text/*`` document's text is headed by the line naming it that the tool
        message's note uses (its name, as Anthropic's document title, if it has one): it
        does not read as the user's own words."""
        server.add(stream(*wire.chat_text("ok")))
        parts = (
            MediaPart("text/csv", data=b"a,b\n1,2", name="t.csv"),
            MediaPart("text/markdown", data=b"# Notes"),
        )
        async with chat(server) as client:
            await send(client, rich_history(*parts))
        tool_message, user_message = server.requests[0].json["messages"][-2:]
        assert tool_message["content"] == (
            "[attached in the next user message: 't.csv' (text/csv, 7 bytes), text/markdown "
            "(7 bytes)]"
        )
        assert user_message["content"][1:] == [
            {"type": "text", "text": "[file 't.csv' (text/csv, 7 bytes):]\na,b\n1,2"},
            {"type": "text", "text": "[file text/markdown (7 bytes):]\n# Notes"},
        ]

    async def test_an_empty_text_part_adds_no_line(self, server):
        """A result's empty text part adds no empty line to its text (the other clients
        leave it out as their APIs refuse empty text)."""

        @tool_registry
        class Chart:
            @tool
            async def chart(self) -> ToolReturn:
                """A chart and its figures."""
                return ToolReturn(
                    [
                        TextPart("chart follows"),
                        TextPart(""),
                        DataPart.of({"k": 1}),
                        MediaPart("image/png", data=PNG),
                        TextPart(""),
                    ]
                )

        server.add(
            stream(*wire.chat_tool_calls([("call_1", "chart", "{}")])),
            stream(*wire.chat_text("Good year.")),
        )
        async with chat(server) as client:
            worker = Worker(client)
            worker.register_tools(tool_definitions(Chart()))
            await worker.run("chart?")
        result = worker.history[2]
        assert isinstance(result, ToolResult)
        assert result.content == 'chart follows\n{"k":1}'
        tool_message = server.requests[1].json["messages"][2]
        assert tool_message["content"] == (
            f'chart follows\n{{"k":1}}\n[attached in the next user message: image/png '
            f"({len(PNG)} bytes)]"
        )

    async def test_media_it_cannot_take_at_all_need_no_user_message(self, server):
        """A result whose media all become notes adds no user message."""
        server.add(stream(*wire.chat_text("ok")))
        async with chat(server) as client:
            await send(client, rich_history(MediaPart("video/mp4", url=VIDEO_URL)))
        messages = server.requests[0].json["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
        assert messages[-1]["content"].startswith(f"[video/mp4 at {VIDEO_URL} not shown")


# -- Gemini -----------------------------------------------------------------------------


def gemini(server: ProviderServer) -> GeminiClient:
    return GeminiClient("gemini-test", api_key="k", base_url=server.base_url, max_retries=0)


@needs_gemini_sdk
class TestGemini:
    async def test_a_tool_returns_an_image_and_a_pdf(self, server):
        """The function response has the text as its output and the image and PDF as its
        parts (inline data); no other turn is added."""
        replies = (
            stream(*wire.gemini_calls([("sales_report", {"year": 2025})], ids=["fc_1"])),
            stream(*wire.gemini_text("Good year.")),
        )
        async with gemini(server) as client:
            body = await report_run(client, server, replies)
        assert body["contents"][-1] == {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "id": "fc_1",
                        "name": "sales_report",
                        "response": {"output": REPORT_TEXT},
                        "parts": [
                            {"inline_data": {"mime_type": "image/png", "data": urlsafe_b64(PNG)}},
                            {
                                "inline_data": {
                                    "mime_type": "application/pdf",
                                    "data": urlsafe_b64(PDF),
                                }
                            },
                        ],
                    }
                }
            ],
        }

    async def test_other_media_go_in_a_user_turn_after_the_responses(self, server):
        """URLs go as file_data; audio, video and documents a function response cannot hold
        go in a user turn after the turn's responses, headed by the call, with a note in the
        response's output."""
        server.add(stream(*wire.gemini_text("ok")))
        parts = (
            TextPart("Files:"),
            MediaPart("image/png", url=CHART_URL),
            MediaPart("audio/wav", data=WAV),
            MediaPart("video/mp4", url=VIDEO_URL),
        )
        async with gemini(server) as client:
            await send(client, rich_history(*parts))
        responses, attachments = server.requests[0].json["contents"][-2:]
        response = responses["parts"][0]["functionResponse"]
        assert response["parts"] == [
            {"file_data": {"file_uri": CHART_URL, "mime_type": "image/png"}}
        ]
        assert response["response"] == {
            "output": f"Files:\n[attached in the next user message: audio/wav ({len(WAV)} "
            f"bytes), video/mp4 at {VIDEO_URL}]"
        }
        assert attachments == {
            "role": "user",
            "parts": [
                {"text": "[attachments of the result of tool call call_1:]"},
                {"inlineData": {"mime_type": "audio/wav", "data": urlsafe_b64(WAV)}},
                {"fileData": {"file_uri": VIDEO_URL, "mime_type": "video/mp4"}},
            ],
        }

    async def test_the_user_turn_stays_after_its_responses_in_later_requests(self, server):
        """Kept with the converted history: a later request has it right after the
        responses, before the next model turn."""
        server.add(stream(*wire.gemini_text("ok")), stream(*wire.gemini_text("ok")))
        history = rich_history(MediaPart("audio/wav", data=WAV))
        async with gemini(server) as client:
            await send(client, history)
            await send(client, [*history, AssistantMessage("ok"), UserMessage("and?")])
        first, second = (r.json["contents"] for r in server.requests)
        assert second[: len(first)] == first
        assert [c["role"] for c in second] == ["user", "model", "user", "user", "model", "user"]


# -- Parts by data: and gs:// URL: sent in a form the API takes ---------------------------

GS_CHART = "gs://charts/2025.png"
BAD_DATA = "data:image/png;base64,not base64!"  # holds no bytes that can be read


def by_url_parts() -> tuple[MediaPart, ...]:
    """An image by a base64 data: URL, a PDF by a percent-encoded one, an image on Cloud
    Storage, and a data: URL that cannot be read."""
    return (
        MediaPart("image/png", url=data_url("image/png", PNG)),
        MediaPart("application/pdf", url=f"DATA:application/pdf,{quote(PDF)}", name="q3.pdf"),
        MediaPart("image/png", url=GS_CHART),
        MediaPart("image/png", url=BAD_DATA),
    )


# The notes say why the part is not there: its URL, not its type (which the API takes).
GS_NOTE = f"[image/png at {GS_CHART} not shown: this API does not fetch gs:// URLs]"
BAD_NOTE = (
    f"[image/png (a data: URL of {len(BAD_DATA)} bytes) not shown: its data: URL holds no "
    "bytes that can be read]"
)


class TestPartsByUrl:
    async def test_anthropic(self, server):
        """A data: URL's bytes go as base64 sources (the API fetches only http(s) URLs); a
        gs:// URL, and a data: URL that cannot be read, are notes."""
        server.add(stream(*wire.claude_text("ok")))
        async with claude(server) as client:
            await send(client, rich_history(*by_url_parts()))
        assert server.requests[0].json["messages"][-1]["content"][0]["content"] == [
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": b64(PNG)},
            },
            {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": b64(PDF)},
                "title": "q3.pdf",
            },
            {"type": "text", "text": GS_NOTE},
            {"type": "text", "text": BAD_NOTE},
        ]

    async def test_responses(self, server):
        """A data: URL's bytes go as a part's bytes do: input_image's data URL, input_file's
        file_data (file_url is for http(s)); gs:// and an unreadable data: URL are notes."""
        server.add(stream(*wire.responses_text("ok")))
        async with responses(server) as client:
            await send(client, rich_history(*by_url_parts()))
        assert server.requests[0].json["input"][-1]["output"] == [
            {"type": "input_image", "image_url": data_url("image/png", PNG)},
            {
                "type": "input_file",
                "file_data": data_url("application/pdf", PDF),
                "filename": "q3.pdf",
            },
            {"type": "input_text", "text": GS_NOTE},
            {"type": "input_text", "text": BAD_NOTE},
        ]

    async def test_chat(self, server):
        """A data: URL's bytes go in the user message as a part's bytes do (image_url, file);
        gs:// and an unreadable data: URL are notes in the tool message."""
        server.add(stream(*wire.chat_text("ok")))
        async with chat(server) as client:
            await send(client, rich_history(*by_url_parts()))
        tool_message, user_message = server.requests[0].json["messages"][-2:]
        assert tool_message["content"].splitlines() == [GS_NOTE, BAD_NOTE, ATTACHED]
        assert user_message["content"] == [
            {"type": "text", "text": "[attachments of the result of tool call call_1:]"},
            {"type": "image_url", "image_url": {"url": data_url("image/png", PNG)}},
            {
                "type": "file",
                "file": {"file_data": data_url("application/pdf", PDF), "filename": "q3.pdf"},
            },
        ]

    @needs_gemini_sdk
    async def test_gemini(self, server):
        """A data: URL's bytes go as inline_data (Gemini fetches no data: URL); a gs:// URL
        as file_data; an unreadable data: URL is a note."""
        server.add(stream(*wire.gemini_text("ok")))
        async with gemini(server) as client:
            await send(client, rich_history(*by_url_parts()))
        response = server.requests[0].json["contents"][-1]["parts"][0]["functionResponse"]
        assert response["parts"] == [
            {"inline_data": {"mime_type": "image/png", "data": urlsafe_b64(PNG)}},
            {"inline_data": {"mime_type": "application/pdf", "data": urlsafe_b64(PDF)}},
            {"file_data": {"file_uri": GS_CHART, "mime_type": "image/png"}},
        ]
        assert response["response"] == {"output": BAD_NOTE}


# -- What every client writes of a part: notes and file names ----------------------------

CLIP = "data:video/mp4;base64," + "A" * 3_000_000  # 3 MB, within Limits.max_media_bytes


def tool_text(kind: str, body: dict) -> str:
    """All the request says of the result, as JSON: a client's tool_result, output or
    tool message."""
    if kind == "anthropic":
        return json.dumps(body["messages"][-1]["content"][0]["content"])
    if kind == "responses":
        return json.dumps(body["input"][-1]["output"])
    return json.dumps(body["messages"][-1]["content"])


CLIENTS = {"anthropic": claude, "responses": responses, "chat": chat}
REPLIES = {
    "anthropic": lambda: stream(*wire.claude_text("ok")),
    "responses": lambda: stream(*wire.responses_text("ok")),
    "chat": lambda: stream(*wire.chat_text("ok")),
}


class TestNotes:
    @pytest.mark.parametrize("kind", list(CLIENTS))
    async def test_a_data_url_is_named_by_its_size_in_a_note(self, server, kind: str):
        """A video by data: URL an API cannot take becomes a note naming it by its size:
        its 3 MB are not sent as text, past the result cap."""
        server.add(REPLIES[kind]())
        async with CLIENTS[kind](server) as client:
            await send(
                client, rich_history(TextPart("The clip:"), MediaPart("video/mp4", url=CLIP))
            )
        text = tool_text(kind, server.requests[0].json)
        assert f"[video/mp4 (a data: URL of {len(CLIP)} bytes) not shown: this API cannot " in text
        assert len(text) < 1_000

    def test_a_notes_name_url_and_type_are_cut_short(self):
        """A name, a URL and a media type's parameters of any length are cut at 200
        characters each in the note."""
        from llm_worker.providers._parts import attached_note, not_sent

        media_type = "video/mp4; codecs=" + "a" * 5_000
        url = "https://media.example.com/" + "b" * 5_000
        part = MediaPart(media_type, url=url, name="c" * 5_000)
        shown_type = media_type[:199] + "…"
        label = f"{'c' * 199 + '…'!r} ({shown_type}) at {url[:199]}…"
        assert not_sent(part, part) == (
            f"[{label} not shown: this API cannot take {shown_type} in a tool result]"
        )
        assert attached_note([part]) == f"[attached in the next user message: {label}]"
        named = MediaPart("video/mp4", data=b"1234", name="\n" * 5_000)
        assert not_sent(named, named).startswith(
            f"[{chr(10) * 199 + '…'!r} (video/mp4, 4 bytes) not"
        )


class TestAnthropicBlankText:
    async def test_whitespace_only_texts_are_left_out_of_a_tool_result(self, server):
        """A text part of whitespace only (a blank caption) is not a block of the
        tool_result: the API refuses such text blocks, as in assistant messages."""
        server.add(stream(*wire.claude_text("ok")))
        parts = (TextPart("\n"), MediaPart("image/png", data=PNG), TextPart(" \t"), TextPart("ok"))
        async with claude(server) as client:
            await send(client, rich_history(*parts))
        blocks = server.requests[0].json["messages"][-1]["content"][0]["content"]
        assert [block["type"] for block in blocks] == ["image", "text"]
        assert blocks[1] == {"type": "text", "text": "ok"}


class TestFileNames:
    @pytest.mark.parametrize(
        ("media_type", "filename"),
        [
            ("application/pdf", "document.pdf"),
            ("text/markdown", "document.md"),
            ("text/javascript", "document.js"),
            ("application/xml", "document.xml"),
            ("TEXT/CSV; charset=utf-8", "document.csv"),
            (
                "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
                "document.docx",
            ),
            ("application/vnd.oasis.opendocument.text", "document.odt"),
            ("application/x-llm-worker-unknown", "document"),
        ],
    )
    async def test_an_unnamed_document_is_named_from_a_fixed_table(
        self, server, media_type: str, filename: str
    ):
        """The file name of a document without one comes from FILE_EXTENSIONS, never the
        host's mimetypes (whose /etc/mime.types, or its absence, would change the request)."""
        server.add(stream(*wire.responses_text("ok")))
        async with responses(server) as client:
            await send(client, rich_history(MediaPart(media_type, data=b"x")))
        (item,) = server.requests[0].json["input"][-1]["output"]
        assert item["filename"] == filename
