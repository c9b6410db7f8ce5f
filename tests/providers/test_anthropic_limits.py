"""What Anthropic's Messages API cannot take, through the real SDK on a local server.

- Structured outputs take ``additionalProperties: false`` on every object and no
  recursive schema: an output type with a ``dict[str, X]`` (nested or at the root) or a
  recursive one is asked for through the worker's ``final_result`` tool, never sent as
  a schema that only admits ``{}`` (``AnthropicClient.supports_output_schema``); a
  schema that cannot go never leaves the client.
- Media over the API's size limits (an image over 5 MB of base64, a document larger
  than a whole request) become a note in the request, so the conversation goes on;
  the history keeps them.
"""

from __future__ import annotations

import base64
import json
from typing import Annotated, Any

import anyio
import pytest
from pydantic import BaseModel, ConfigDict, StringConstraints

from llm_worker import (
    AssistantMessage,
    Limits,
    LlmRequest,
    MediaPart,
    OutputFormat,
    ProviderError,
    ToolCall,
    ToolResult,
    ToolReturn,
    UserMessage,
    Worker,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker._output_schema import output_shape
from llm_worker.providers.anthropic import (
    MAX_IMAGE_BASE64,
    MAX_IMAGE_BYTES,
    MAX_PDF_BYTES,
    MAX_REQUEST_BYTES,
    AnthropicClient,
    output_schema_problem,
)

from . import wire
from .server import ProviderServer, error, stream

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(
        r"ignore:Async generator '(anthropic|httpx2|httpcore2)\.[^']*' was garbage "
        r"collected:ResourceWarning"
    ),
]

OUTPUT_TOOL_TEXT = (
    "Give your final answer: call this once you have it, with the answer as its arguments. "
    "Calling it ends your turn."
)


def claude(server: ProviderServer) -> AnthropicClient:
    return AnthropicClient("claude-test", api_key="k", base_url=server.base_url, max_retries=0)


class WordCounts(BaseModel):
    text: str
    counts: dict[str, int]


class Node(BaseModel):
    name: str
    children: list[Node]


class Forecast(BaseModel):
    city: str
    celsius: float


class Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")
    x: int


class Open(BaseModel):
    model_config = ConfigDict(extra="allow")
    x: int


class Prefixed(BaseModel):
    ids: dict[Annotated[str, StringConstraints(pattern="^S_")], str]


class Outer(BaseModel):
    inner: WordCounts


# -- structured output --------------------------------------------------------------------


def schema_of(output_type: Any) -> dict[str, Any]:
    return output_shape(output_type, mode="validation").schema


@pytest.mark.parametrize(
    "output_type",
    [Forecast, Closed, list[int], tuple[int, str], Forecast | None],
    ids=["model", "closed-model", "list", "tuple", "optional-model"],
)
async def test_a_schema_it_can_express_goes_natively(output_type):
    """Objects whose keys are all named (closed by the rewrite: validation drops other
    keys anyway) and everything transform_schema keeps the meaning of."""
    client = AnthropicClient("claude-test", api_key="k")
    assert client.supports_output_schema(schema_of(output_type)) is True


@pytest.mark.parametrize(
    "output_type",
    [
        WordCounts,
        dict[str, int],
        dict[str, Any],
        dict,
        list[dict[str, int]],
        dict[str, int] | None,
        Outer,
        Open,
        Prefixed,
        Node,
        Any,
    ],
    ids=[
        "dict-field",
        "dict-root",
        "dict-any",
        "bare-dict",
        "dicts-in-a-list",
        "optional-dict",
        "dict-in-a-nested-model",
        "extra-allow",
        "pattern-keys",
        "recursive",
        "any",
    ],
)
async def test_a_schema_it_cannot_express_is_refused(output_type):
    """Keys not named in advance (the rewrite would close the object to ``{}``), a ``$ref``
    cycle, a value of no type (which transform_schema cannot read)."""
    client = AnthropicClient("claude-test", api_key="k")
    assert client.supports_output_schema(schema_of(output_type)) is False


DICT_OR_NULL = {"oneOf": [{"type": "object", "additionalProperties": True}, {"type": "null"}]}


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        (
            {"type": "object", "properties": {"a": {"type": ["string", "null"]}}},
            "anthropic.transform_schema cannot read it (AssertionError: ",
        ),
        (
            {"type": "object", "properties": {"p": DICT_OR_NULL}},
            "#/properties/p/oneOf/0 takes keys not named in advance (additionalProperties: "
            "true), and the API takes only additionalProperties: false, which would forbid them",
        ),
        (
            {"type": "object", "properties": {"any": {"type": "object"}}},
            "#/properties/any takes keys not named in advance (no properties)",
        ),
    ],
    ids=["type-list", "dict-in-a-oneof", "any-object"],
)
async def test_what_a_schema_cannot_say_is_named(schema, problem):
    """A list of types makes the SDK's rewrite fail (assert_never); a dict in a oneOf
    branch (made an anyOf) and an object of any keys are found where they are."""
    assert output_schema_problem(schema).startswith(problem)
    assert AnthropicClient("claude-test", api_key="k").supports_output_schema(schema) is False


async def test_a_schema_that_cannot_go_never_leaves_the_client(server):
    """Asked for natively anyway (a caller of the client, not the worker): a non-retryable
    ProviderError naming the place, and no request."""
    output_format = OutputFormat("WordCounts", json.dumps(schema_of(WordCounts)))
    request = LlmRequest(None, [UserMessage("count")], (), output_format=output_format)
    async with claude(server) as client:
        with anyio.fail_after(10), pytest.raises(ProviderError) as caught:
            async for _ in client.stream(request):
                pass
    assert caught.value.retryable is False
    assert "#/properties/counts takes keys not named in advance" in caught.value.message
    assert server.requests == []


async def dict_run(server: ProviderServer, output_type: Any, answer: str) -> Worker:
    server.add(stream(*wire.claude_tool_calls([("toolu_1", "final_result", answer)])))
    async with claude(server) as client:
        worker = Worker(client, output_type=output_type)
        with anyio.fail_after(10):
            await worker.run("Count the words in 'a b a'.")
    return worker


async def test_a_dict_field_is_answered_through_the_final_result_tool(server):
    """``counts: dict[str, int]``: no output_config; the final_result tool with the type's
    schema as it is, a tool call required; the answer keeps its keys."""
    answer = '{"text": "a b a", "counts": {"a": 2, "b": 1}}'
    worker = await dict_run(server, WordCounts, answer)
    assert worker.output == WordCounts(text="a b a", counts={"a": 2, "b": 1})
    assert server.requests[0].json == {
        "model": "claude-test",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": "Count the words in 'a b a'."}],
        "tools": [
            {
                "name": "final_result",
                "description": OUTPUT_TOOL_TEXT,
                "input_schema": {
                    "type": "object",
                    "title": "WordCounts",
                    "properties": {
                        "text": {"type": "string", "title": "Text"},
                        "counts": {
                            "type": "object",
                            "title": "Counts",
                            "additionalProperties": {"type": "integer"},
                        },
                    },
                    "required": ["text", "counts"],
                },
            }
        ],
        "tool_choice": {"type": "any"},
        "stream": True,
    }


async def test_a_dict_at_the_root_is_answered_through_the_final_result_tool(server):
    """``dict[str, int]`` itself: the tool's input is the dict."""
    worker = await dict_run(server, dict[str, int], '{"a": 2, "b": 1}')
    assert worker.output == {"a": 2, "b": 1}
    body = server.requests[0].json
    assert "output_config" not in body
    assert body["tools"] == [
        {
            "name": "final_result",
            "description": OUTPUT_TOOL_TEXT,
            "input_schema": {"type": "object", "additionalProperties": {"type": "integer"}},
        }
    ]
    assert body["tool_choice"] == {"type": "any"}


async def test_a_recursive_type_is_answered_through_the_final_result_tool(server):
    """A tree: structured outputs take no recursive schema, a tool's input schema does."""
    answer = '{"result": {"name": "root", "children": [{"name": "leaf", "children": []}]}}'
    worker = await dict_run(server, Node, answer)
    assert worker.output == Node(name="root", children=[Node(name="leaf", children=[])])
    assert "output_config" not in server.requests[0].json


async def test_a_type_without_dicts_still_goes_natively(server):
    """The other types are unchanged: output_config, no tool."""
    server.add(stream(*wire.claude_text('{"city": "Oslo", "celsius": 3.5}')))
    async with claude(server) as client:
        worker = Worker(client, output_type=Forecast)
        with anyio.fail_after(10):
            await worker.run("Weather in Oslo?")
    assert worker.output == Forecast(city="Oslo", celsius=3.5)
    body = server.requests[0].json
    assert body["output_config"]["format"]["schema"]["additionalProperties"] is False
    assert "tools" not in body


# -- media over the size limits -------------------------------------------------------------


def png(size: int) -> bytes:
    head = b"\x89PNG\r\n\x1a\n"
    return head + b"\x01" * (size - len(head))


def note(media: str, media_type: str, largest: int) -> str:
    return (
        f"[{media} not shown: this API cannot take {media_type} of more than {largest} bytes "
        f"in a tool result]"
    )


@tool_registry
class Camera:
    """A camera whose photos are as large as it is told."""

    def __init__(self, size: int) -> None:
        self.size = size

    @tool
    async def snap(self) -> ToolReturn:
        """Take a photo."""
        return ToolReturn([MediaPart("image/png", data=png(self.size))])


def snap_result(body: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = body["messages"][2]["content"][0]
    return result


async def test_the_limit_is_the_base64_of_5_mb():
    """Anthropic counts an image's base64 text against 5 MB (5242880): 3932160 bytes fit."""
    assert MAX_IMAGE_BYTES == 3_932_160
    assert len(base64.b64encode(bytes(MAX_IMAGE_BYTES))) == MAX_IMAGE_BASE64
    assert len(base64.b64encode(bytes(MAX_IMAGE_BYTES + 1))) > MAX_IMAGE_BASE64


async def test_an_image_over_the_limit_becomes_a_note_and_a_retry_works(server):
    """One byte over: the tool_result holds the note instead; the request that failed
    (overloaded) is retried with the same note and answered; the history keeps the image."""
    size = MAX_IMAGE_BYTES + 1
    server.add(
        stream(*wire.claude_tool_calls([("toolu_1", "snap", "{}")])),
        error(529, wire.anthropic_error("overloaded_error", "Overloaded")),
        stream(*wire.claude_text("The photo was too large to see.")),
    )
    async with claude(server) as client:
        worker = Worker(client)
        worker.register_tools(tool_definitions(Camera(size)))
        with anyio.fail_after(30):
            with pytest.raises(ProviderError):
                await worker.run("Take a photo and describe it.")
            await worker.retry()
    assert worker.final_text == "The photo was too large to see."
    expected = {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": [
            {"type": "text", "text": note(f"image/png ({size} bytes)", "image/png", size - 1)}
        ],
        "is_error": False,
    }
    first, second = server.requests[1].json, server.requests[2].json
    assert snap_result(first) == expected
    assert snap_result(second) == expected
    kept = worker.history[2]  # the history keeps the image: only the request had the note
    assert isinstance(kept, ToolResult)
    assert kept.parts == (MediaPart("image/png", data=png(size)),)


async def test_an_image_at_the_limit_is_sent(server):
    """Exactly 3932160 bytes: its base64, 5242880 characters, goes in the image block."""
    server.add(
        stream(*wire.claude_tool_calls([("toolu_1", "snap", "{}")])),
        stream(*wire.claude_text("A grey square.")),
    )
    async with claude(server) as client:
        worker = Worker(client)
        worker.register_tools(tool_definitions(Camera(MAX_IMAGE_BYTES)))
        with anyio.fail_after(30):
            await worker.run("Take a photo and describe it.")
    (block,) = snap_result(server.requests[1].json)["content"]
    assert block["type"] == "image"
    assert block["source"]["media_type"] == "image/png"
    assert block["source"]["data"] == base64.b64encode(png(MAX_IMAGE_BYTES)).decode()
    assert len(block["source"]["data"]) == MAX_IMAGE_BASE64


async def test_documents_larger_than_a_request_become_notes(server):
    """A PDF whose base64 alone is over the 32 MB a request may be, and a text document
    over it, are notes; a URL (whose size the API finds out) goes as it is."""
    pdf = MediaPart("application/pdf", data=b"%PDF" + bytes(MAX_PDF_BYTES - 3), name="big.pdf")
    text = MediaPart("text/plain", data=b"a" * (MAX_REQUEST_BYTES + 1))
    url = MediaPart("image/png", url="https://example.com/huge.png")
    parts = (pdf, text, url)
    history = [
        UserMessage("read them"),
        AssistantMessage("", (ToolCall("toolu_1", "fetch", "{}"),)),
        ToolResult("toolu_1", "", parts=parts),
    ]
    server.add(stream(*wire.claude_text("ok")))
    async with claude(server) as client:
        with anyio.fail_after(30):
            async for _ in client.stream(LlmRequest(None, history, ())):
                pass
    assert snap_result(server.requests[0].json)["content"] == [
        {
            "type": "text",
            "text": note(
                f"'big.pdf' (application/pdf, {MAX_PDF_BYTES + 1} bytes)",
                "application/pdf",
                MAX_PDF_BYTES,
            ),
        },
        {
            "type": "text",
            "text": note(
                f"text/plain ({MAX_REQUEST_BYTES + 1} bytes)", "text/plain", MAX_REQUEST_BYTES
            ),
        },
        {"type": "image", "source": {"type": "url", "url": "https://example.com/huge.png"}},
    ]


async def test_a_worker_run_with_a_big_pdf_goes_on(server):
    """Through the worker (its media limit raised past the API's): the PDF is a note."""

    @tool_registry
    class Archive:
        @tool
        async def scan(self) -> ToolReturn:
            """Scan the archive."""
            return ToolReturn([MediaPart("application/pdf", data=bytes(MAX_PDF_BYTES + 1))])

    server.add(
        stream(*wire.claude_tool_calls([("toolu_1", "scan", "{}")])),
        stream(*wire.claude_text("Too big to read.")),
    )
    async with claude(server) as client:
        worker = Worker(client, limits=Limits(max_media_bytes=MAX_REQUEST_BYTES))
        worker.register_tools(tool_definitions(Archive()))
        with anyio.fail_after(30):
            await worker.run("Scan the archive.")
    assert worker.final_text == "Too big to read."
    (block,) = snap_result(server.requests[1].json)["content"]
    assert block == {
        "type": "text",
        "text": note(
            f"application/pdf ({MAX_PDF_BYTES + 1} bytes)", "application/pdf", MAX_PDF_BYTES
        ),
    }
