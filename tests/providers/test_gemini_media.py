"""Which media of a rich tool result ``GeminiClient`` sends, through the real SDK.

Gemini answers a part of a media type it does not support with a 400 (INVALID_ARGUMENT,
"... mimeType parameter with value ..., which is not supported"), and every later request
of the conversation would carry the same part. So only the types Gemini documents are
sent (``FUNCTION_RESPONSE_TYPES`` in the function response, ``USER_TURN_TYPES`` in the
user turn after it); any other becomes the note the other clients write in its place.
"""

from __future__ import annotations

import base64
import json

import anyio
import pytest

from llm_worker import (
    MediaPart,
    ProviderError,
    TextPart,
    ToolReturn,
    UserMessage,
    Worker,
    WorkerResult,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker.providers import gemini as gemini_module
from llm_worker.providers.gemini import GeminiClient

from . import wire
from .server import ProviderServer, error, stream

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(
        r"ignore:Async generator '(google|httpx2|httpcore2)\.[^']*' was garbage "
        r"collected:ResourceWarning"
    ),
]

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
DOCX_BYTES = b"PK\x03\x04 the contract"
SVG_BYTES = b"<svg xmlns='http://www.w3.org/2000/svg'/>"
RTF_BYTES = b"{\\rtf1 minutes}"
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR-scan"
PDF = b"%PDF-1.7\n% the signed copy"
MP3 = b"ID3\x04 the call"
VIDEO_URL = "https://media.example.com/walkthrough.mp4"


def urlsafe_b64(data: bytes) -> str:
    """How the Gemini SDK writes bytes."""
    return base64.urlsafe_b64encode(data).decode()


def not_shown(label: str, media_type: str) -> str:
    return f"[{label} not shown: this API cannot take {media_type} in a tool result]"


@tool_registry
class Contracts:
    """A tool whose result holds media of every kind: ``parts`` is what it returns."""

    def __init__(self, *parts: TextPart | MediaPart) -> None:
        self.parts = parts

    @tool
    async def fetch_contract(self) -> ToolReturn:
        """Fetch the contract and what came with it."""
        return ToolReturn(list(self.parts))


def gemini(server: ProviderServer) -> GeminiClient:
    return GeminiClient("gemini-test", api_key="k", base_url=server.base_url, max_retries=0)


def call_then(*replies) -> tuple:
    """The model calls fetch_contract, then ``replies`` answer the requests after it."""
    return (stream(*wire.gemini_calls([("fetch_contract", {})], ids=["fc_1"])), *replies)


def inline_types(body: dict) -> list[str]:
    """The MIME type of every ``inline_data`` / ``file_data`` anywhere in a request body."""
    found: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("inline_data", "inlineData", "file_data", "fileData"):
                    found.append(value["mime_type"])
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(body)
    return found


def function_response(body: dict) -> dict:
    """The function response of the request's tool turn (the model's turn is before it)."""
    contents = body["contents"]
    turn = next(c for c in contents if c["role"] == "user" and "functionResponse" in c["parts"][0])
    return turn["parts"][0]["functionResponse"]


async def run_with(server: ProviderServer, *parts: TextPart | MediaPart) -> dict:
    """A worker run whose tool returns ``parts``; the body of the request after the call."""
    server.add(*call_then(stream(*wire.gemini_text("Read it."))))
    async with gemini(server) as client:
        worker = Worker(client)
        worker.register_tools(tool_definitions(Contracts(*parts)))
        with anyio.fail_after(20):
            assert await worker.run("summarise the contract") is WorkerResult.FINISHED
    return server.requests[1].json


class TestTypesGeminiRefuses:
    async def test_a_docx_an_svg_and_an_rtf_become_notes(self, server):
        """A Word document, an SVG image and an ``application/rtf`` file are types Gemini
        does not take: none is sent as ``inline_data``; the function response's output has
        the note for each in its place, and no user turn of attachments is added."""
        parts = (
            TextPart("Here is the contract:"),
            MediaPart(DOCX, data=DOCX_BYTES, name="contract.docx"),
            MediaPart("image/svg+xml", data=SVG_BYTES),
            MediaPart("application/rtf", data=RTF_BYTES, name="minutes.rtf"),
        )
        body = await run_with(server, *parts)
        assert inline_types(body) == []
        response = function_response(body)
        assert "parts" not in response
        assert response["response"] == {
            "output": "\n".join(
                [
                    "Here is the contract:",
                    not_shown(f"'contract.docx' ({DOCX}, {len(DOCX_BYTES)} bytes)", DOCX),
                    not_shown(f"image/svg+xml ({len(SVG_BYTES)} bytes)", "image/svg+xml"),
                    not_shown(
                        f"'minutes.rtf' (application/rtf, {len(RTF_BYTES)} bytes)",
                        "application/rtf",
                    ),
                ]
            )
        }
        assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]

    async def test_a_refused_type_by_url_and_in_capitals_is_a_note_too(self, server):
        """The type is read case-insensitively and without its parameters, as the other
        clients read it; an SVG given by URL is no more sendable than its bytes."""
        parts = (
            MediaPart("IMAGE/SVG+XML; charset=utf-8", url="https://example.com/logo.svg"),
            MediaPart("Application/MSWord", data=b"\xd0\xcf\x11\xe0"),
        )
        body = await run_with(server, *parts)
        assert inline_types(body) == []
        output = function_response(body)["response"]["output"]
        assert output == "\n".join(
            [
                not_shown(
                    "IMAGE/SVG+XML; charset=utf-8 at https://example.com/logo.svg",
                    "IMAGE/SVG+XML; charset=utf-8",
                ),
                not_shown("Application/MSWord (4 bytes)", "Application/MSWord"),
            ]
        )

    async def test_the_conversation_goes_on_and_retry_works(self, server):
        """Nothing Gemini refuses stays in the history's request: after a failed request
        (here a retryable 503), ``retry()`` sends the same body, now accepted, and the
        run finishes; a later run sends it again."""
        server.add(
            *call_then(
                error(503, wire.gemini_error(503, "Overloaded", "UNAVAILABLE")),
                stream(*wire.gemini_text("Read it.")),
                stream(*wire.gemini_text("Still there.")),
            )
        )
        tool_parts = (TextPart("Contract:"), MediaPart(DOCX, data=DOCX_BYTES))
        async with gemini(server) as client:
            worker = Worker(client)
            worker.register_tools(tool_definitions(Contracts(*tool_parts)))
            with anyio.fail_after(20):
                with pytest.raises(ProviderError) as info:
                    await worker.run("summarise the contract")
                assert (info.value.status, info.value.retryable) == (503, True)
                assert await worker.retry() is WorkerResult.FINISHED
                assert await worker.run("and the dates?") is WorkerResult.FINISHED
        failed, retried, later = (r.json for r in server.requests[1:])
        assert retried == failed
        assert later["contents"][: len(retried["contents"])] == retried["contents"]
        for body in (failed, retried, later):
            assert inline_types(body) == []
            assert DOCX in function_response(body)["response"]["output"]
        assert worker.final_text == "Still there."
        assert worker.history[-2] == UserMessage("and the dates?")


class TestTypesGeminiTakes:
    async def test_an_image_a_pdf_audio_and_video_go_as_before(self, server):
        """A PNG (its type in capitals, with a parameter) and a PDF go in the function
        response's parts; MP3 audio and a video by URL in the user turn after it, the
        output noting them; a docx beside them becomes its note, before that line."""
        parts = (
            TextPart("Scan and call:"),
            MediaPart("IMAGE/PNG; charset=binary", data=PNG),
            MediaPart("application/pdf", data=PDF, name="signed.pdf"),
            MediaPart("audio/mpeg", data=MP3),
            MediaPart(DOCX, data=DOCX_BYTES),
            MediaPart("video/mp4", url=VIDEO_URL),
        )
        body = await run_with(server, *parts)
        response = function_response(body)
        assert response["parts"] == [
            {"inline_data": {"mime_type": "image/png", "data": urlsafe_b64(PNG)}},
            {"inline_data": {"mime_type": "application/pdf", "data": urlsafe_b64(PDF)}},
        ]
        assert response["response"] == {
            "output": "\n".join(
                [
                    "Scan and call:",
                    not_shown(f"{DOCX} ({len(DOCX_BYTES)} bytes)", DOCX),
                    f"[attached in the next user message: audio/mpeg ({len(MP3)} bytes), "
                    f"video/mp4 at {VIDEO_URL}]",
                ]
            )
        }
        assert body["contents"][-1] == {
            "role": "user",
            "parts": [
                {"text": "[attachments of the result of tool call fc_1:]"},
                {"inlineData": {"mime_type": "audio/mpeg", "data": urlsafe_b64(MP3)}},
                {"fileData": {"file_uri": VIDEO_URL, "mime_type": "video/mp4"}},
            ],
        }
        assert DOCX not in inline_types(body)

    async def test_every_type_gemini_documents_is_sent(self, server):
        """Each documented type is sent as ``inline_data``, under its own name: none of
        them becomes a note."""
        documented = sorted(gemini_module.FUNCTION_RESPONSE_TYPES | gemini_module.USER_TURN_TYPES)
        body = await run_with(server, *(MediaPart(t, data=b"x") for t in documented))
        assert sorted(inline_types(body)) == documented
        assert "not shown" not in json.dumps(body)

    async def test_other_names_of_documented_types_go_under_geminis(self, server):
        """What ``mimetypes.guess_type`` names a ``.wav``, ``.avi`` or ``.jpg`` file
        (``audio/x-wav``, ``video/x-msvideo``, and the common ``image/jpg``) is sent under
        the name Gemini documents, not dropped for a note."""
        wav, jpeg = b"RIFF$\x00\x00\x00WAVE", b"\xff\xd8\xff\xe0 photo"
        parts = (
            MediaPart("audio/x-wav", data=wav),
            MediaPart("Image/JPG", data=jpeg),
            MediaPart("video/x-msvideo", url="https://media.example.com/call.avi"),
        )
        body = await run_with(server, *parts)
        assert function_response(body)["parts"] == [
            {"inline_data": {"mime_type": "image/jpeg", "data": urlsafe_b64(jpeg)}}
        ]
        assert body["contents"][-1]["parts"][1:] == [
            {"inlineData": {"mime_type": "audio/wav", "data": urlsafe_b64(wav)}},
            {
                "fileData": {
                    "file_uri": "https://media.example.com/call.avi",
                    "mime_type": "video/avi",
                }
            },
        ]
        assert "not shown" not in json.dumps(body)

    async def test_a_text_file_of_a_type_off_the_list_goes_as_plain_text(self, server):
        """A YAML or Rust source file's bytes go as ``text/plain`` (as the other clients
        send a text file's text), made valid UTF-8; by URL it stays a note (Gemini would
        fetch it under its own type), and a non-text type stays a note."""
        yaml = b"retries: 3\nname: caf\xc3\xa9 \xff\n"
        parts = (
            MediaPart("text/x-yaml", data=yaml, name="config.yaml"),
            MediaPart("text/x-rust; charset=utf-8", data=b"fn main() {}"),
            MediaPart("text/x-toml", url="https://example.com/Cargo.toml"),
            MediaPart("application/octet-stream", data=b"\x00\x01"),
        )
        body = await run_with(server, *parts)
        response = function_response(body)
        fixed = "retries: 3\nname: caf\u00e9 \ufffd\n".encode()
        assert response["parts"] == [
            {"inline_data": {"mime_type": "text/plain", "data": urlsafe_b64(fixed)}},
            {"inline_data": {"mime_type": "text/plain", "data": urlsafe_b64(b"fn main() {}")}},
        ]
        assert response["response"]["output"] == "\n".join(
            [
                not_shown(
                    "text/x-toml at https://example.com/Cargo.toml",
                    "text/x-toml",
                ),
                not_shown("application/octet-stream (2 bytes)", "application/octet-stream"),
            ]
        )


async def test_the_documented_types_are_lower_case_and_without_parameters():
    """The sets are compared with ``mime_type()`` (lower-cased, parameters dropped); what a
    function response takes, a user turn takes too."""
    in_response, in_user_turn = gemini_module.FUNCTION_RESPONSE_TYPES, gemini_module.USER_TURN_TYPES
    for media_type in in_response | in_user_turn:
        assert media_type == media_type.lower().strip()
        assert ";" not in media_type
    assert in_response <= in_user_turn  # what a function response takes, a user turn does
