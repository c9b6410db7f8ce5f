"""Rich results through MCP both ways, tool annotations, structured content, progress.

Serve: our ``Gallery`` tools (``mcp_apps``), served by ``create_server`` in
process and by ``llm-worker mcp serve`` over stdio, read by the SDK's client
(which checks ``structuredContent`` against each tool's ``outputSchema``).
Use: a low-level SDK server answering with every kind of content block, read
by our client inside a ``Worker`` with a ``ScriptedClient``, whose requests
show what the model was sent.
"""

from __future__ import annotations

import base64
import enum
import hashlib
import json
from typing import Annotated, Any, Literal, NewType

import anyio
import mcp.types as types
import mcp_apps
import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.server import Server
from mcp_apps import MP4, PDF, PNG, WAV
from mcp_support import APPS, ROOT, SERVE, connect, dump_tools, exported, text_of
from pydantic import BaseModel
from support import collect, results_of

from llm_worker import (
    ContentPart,
    DataPart,
    ExecutionFailedError,
    Limits,
    MediaPart,
    TextPart,
    ToolAnnotations,
    ToolCallProgress,
    ToolMeta,
    ToolResult,
    ToolReturn,
    ToolServer,
    Worker,
    WorkerResult,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker._cli import render_schema
from llm_worker.mcp import create_server, mcp_tool_definitions
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def media_uri(data: bytes, name: str = "") -> str:
    return f"llm-worker://media/{hashlib.sha256(data).hexdigest()}/{name}"


CHART_URL = "https://example.com/chart.png"
# The handshake era (initialize) and the 2026-07-28 one (no server-to-client requests).
ERAS = [pytest.param("legacy", id="handshake"), pytest.param("auto", id="2026")]

MEDIA_META = "llm-worker/media"  # the _meta key of a block made of a MediaPart


def marked(name: str | None = None) -> dict[str, Any]:
    """The _meta of a block made of a MediaPart named ``name`` (or none)."""
    return {MEDIA_META: {} if name is None else {"name": name}}


# What an SDK client reads of Gallery.chart: a block per part, in order.
CHART_BLOCKS: list[types.ContentBlock] = [
    types.TextContent(text="The chart:"),
    types.ImageContent(data=b64(PNG), mime_type="image/png", _meta=marked()),
    types.AudioContent(data=b64(WAV), mime_type="audio/wav", _meta=marked()),
    types.EmbeddedResource(
        resource=types.BlobResourceContents(
            uri=media_uri(PDF, "report%20q3.pdf"), mime_type="application/pdf", blob=b64(PDF)
        ),
        _meta=marked("report q3.pdf"),
    ),
    types.EmbeddedResource(
        resource=types.BlobResourceContents(
            uri=media_uri(MP4), mime_type="video/mp4", blob=b64(MP4)
        ),
        _meta=marked(),
    ),
    types.ResourceLink(name=CHART_URL, uri=CHART_URL, mime_type="image/png", _meta=marked()),
    types.TextContent(text='{"points":[1,2,3]}'),
]

STATS_SCHEMA = {
    "type": "object",
    "title": "Stats",
    "properties": {
        "count": {"title": "Count", "type": "integer"},
        "mean": {"title": "Mean", "type": "number"},
    },
    "required": ["count", "mean"],
}
COUNT_SCHEMA = {
    "type": "object",
    "properties": {"result": {"type": "integer"}},
    "required": ["result"],
    "x-llm-worker-wrapped": True,
}


class TestServedListing:
    @pytest.mark.anyio
    async def test_title_annotations_and_output_schema_reach_an_sdk_client(self):
        """tools/list carries each tool's title, the annotations it says (and no others) and
        its outputSchema (wrapped for a non-object result): our mcp export, exactly."""
        handle = mcp_apps.rich_factory().handle()
        async with connect(create_server(handle)) as session:
            listed = await session.list_tools()
        tools = {tool.name: tool for tool in listed.tools}
        assert tools["chart"].title == "Quarterly chart"
        assert tools["chart"].annotations == types.ToolAnnotations(
            read_only_hint=True, idempotent_hint=True
        )
        assert tools["delete"].annotations == types.ToolAnnotations(
            destructive_hint=True, open_world_hint=False
        )
        assert (tools["delete"].title, tools["stats"].annotations) == (None, None)
        assert tools["stats"].output_schema == STATS_SCHEMA
        assert tools["count"].output_schema == COUNT_SCHEMA
        assert tools["chart"].output_schema is None  # a rich result is not structured
        assert dump_tools(listed) == exported(handle)

    def test_the_schema_command_prints_the_same(self):
        """`llm-worker schema --format mcp` of the class prints what tools/list gives."""
        printed = json.loads(render_schema(["mcp_apps:Gallery"], "mcp"))
        assert printed == exported(mcp_apps.rich_factory().handle())
        assert printed[0]["annotations"] == {"readOnlyHint": True, "idempotentHint": True}


class TestServedResults:
    @pytest.mark.anyio
    async def test_every_part_becomes_its_block(self):
        """Text, image, audio, a named document, a video, a linked image and data: one block
        each, in order; the metadata is sent nowhere."""
        async with connect(create_server(mcp_apps.rich_factory())) as session:
            result = await session.call_tool("chart", {})
        assert not result.is_error
        assert result.content == CHART_BLOCKS
        assert result.structured_content is None
        assert "for the app only" not in result.model_dump_json()

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("name", "arguments", "text", "structured"),
        [
            ("stats", {"values": [1, 2, 3]}, '{"count":3,"mean":2.0}', {"count": 3, "mean": 2.0}),
            ("count", {"text": "one two three"}, "3", {"result": 3}),
        ],
    )
    async def test_structured_content(self, name, arguments, text, structured):
        """A tool with an outputSchema gives structuredContent (a non-object one wrapped) next
        to its JSON text; the SDK client validated it against the schema."""
        async with connect(create_server(mcp_apps.rich_factory())) as session:
            result = await session.call_tool(name, arguments)
        assert (text_of(result), result.structured_content, result.is_error) == (
            text,
            structured,
            False,
        )

    @pytest.mark.anyio
    async def test_names_that_are_not_valid_unicode(self):
        """A media part named (or linked) with a lone surrogate, as os.listdir gives for a
        file name that is not UTF-8, is served with U+FFFD in its place."""

        class Listing:
            async def execute(self, input_json: str) -> ToolReturn:
                return ToolReturn(
                    [
                        MediaPart("application/pdf", data=PDF, name="q\udcff.pdf"),
                        MediaPart("image/png", url="https://example.com/\udcff.png"),
                    ]
                )

        server = ToolServer()
        server.register_tool(lambda: (ToolMeta(name="listing"), Listing()))
        async with connect(create_server(server)) as session:
            result = await session.call_tool("listing", {})
        assert not result.is_error
        pdf, link = result.content
        assert isinstance(pdf, types.EmbeddedResource)
        assert pdf.resource.uri == media_uri(PDF, "q%EF%BF%BD.pdf")
        assert isinstance(link, types.ResourceLink)
        assert link.uri == link.name == "https://example.com/\ufffd.png"

    @pytest.mark.anyio
    @pytest.mark.parametrize("era", ERAS)
    async def test_progress_in_either_era(self, era):
        """A tool's progress reports reach a client that asked for them, in the handshake and
        the 2026-07-28 era, the last one last."""
        seen: list[tuple[float, float | None, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, total, message))

        with anyio.fail_after(10):
            async with Client(create_server(mcp_apps.rich_factory()), mode=era) as client:
                result = await client.call_tool(
                    "crunch", {"steps": 3}, progress_callback=on_progress
                )
        assert text_of(result) == "crunched 3"
        assert seen, "no progress arrived"
        assert seen[-1] == (3, 3, "step 3")

    @pytest.mark.anyio
    async def test_an_error_has_no_structured_content(self):
        """A failed call of a tool with an outputSchema is an isError result without it."""
        async with connect(create_server(mcp_apps.rich_factory())) as session:
            result = await session.call_tool("stats", {"values": "three"})
        assert result.is_error
        assert result.structured_content is None
        assert text_of(result).startswith("Invalid argument: 'values'")

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("returned", "outcome"),
        [
            (ToolReturn([TextPart("Totals:"), DataPart.of({"n": 1})]), {"n": 1}),
            ('{"n": 2}', {"n": 2}),
            ("not json", "not JSON"),
            ('{"n": NaN}', "NaN at /n, which JSON cannot carry as a number"),
            (
                '{"n": 1, "items": [1, -Infinity]}',
                "-Infinity at /items/1, which JSON cannot carry as a number",
            ),
            (
                '{"n": 1e999}',
                "a number out of a float's range at /n, read as Infinity, which JSON cannot "
                "carry as a number",
            ),
            (
                '{"n": 1, "items": [' + "9" * 5000 + "]}",
                "an integer of more than 4300 digits at /items/0, more than Python reads from JSON",
            ),
            ("[" * 100_000, "not JSON"),
            ("[1, 2]", "not a JSON object"),
            (ToolReturn([DataPart.of({"n": 1}), DataPart.of({"n": 2})]), "2 data parts, not one"),
            ('{"n": "two"}', "at /n: 'two' is not of type 'integer'"),
            ("{}", "at /: 'n' is a required property"),
            ('{"n": 1, "items": [1, "x"]}', "at /items/1: 'x' is not of type 'integer'"),
        ],
    )
    async def test_a_hand_written_tool_with_an_output_schema(self, returned, outcome):
        """A hand-written tool declaring an outputSchema: its text (or its one data part) is
        the structured content; a result the schema does not describe (or whose value does
        not fit it, checked as the MCP specification asks) is an isError result."""

        class Declared:
            async def execute(self, input_json: str) -> str | ToolReturn:
                return returned

        server = ToolServer()
        meta = ToolMeta(name="totals", output_schema=TOTALS_SCHEMA)
        server.register_tool(lambda: (meta, Declared()))
        async with connect(create_server(server)) as session:
            result = await session.call_tool("totals", {})
        if isinstance(outcome, dict):
            assert (result.is_error, result.structured_content) == (False, outcome)
        else:
            assert result.is_error
            assert text_of(result) == (
                f"Internal error: tool 'totals' returned a result its output schema does not "
                f"describe ({outcome})"
            )

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("name", "why"),
        [
            (
                "mean",
                "null at /mean where a number belongs: a pydantic model writes NaN and "
                "Infinity, which JSON cannot carry as numbers, as null",
            ),
            ("ratios", "Infinity at /r, which JSON cannot carry as a number"),
            ("maybe", "-Infinity at /m, which JSON cannot carry as a number"),
            ("nan", "NaN at /result, which JSON cannot carry as a number"),
            (
                "factorial",
                "an integer of more than 4300 digits at /result, more than Python reads from JSON",
            ),
        ],
    )
    async def test_a_generated_result_no_json_value_holds_is_named(self, name, why):
        """A generated tool's NaN or infinity (a "NaN" text, or null in a model) or integer of
        more than 4300 digits cannot be structured content: the isError text says so."""
        server = ToolServer()
        server.register_tools(tool_definitions(NotJsonNumbers()))
        async with connect(create_server(server)) as session:
            result = await session.call_tool(name, {})
        assert (result.is_error, result.structured_content) == (True, None)
        assert text_of(result) == (
            f"Internal error: tool '{name}' returned a result its output schema does not "
            f"describe ({why})"
        )

    @pytest.mark.anyio
    async def test_an_output_schema_that_is_not_json_schema(self):
        """A hand-written output schema that is not valid JSON Schema: each call is an isError
        result saying so, and the server goes on serving."""

        class Declared:
            async def execute(self, input_json: str) -> str:
                return '{"n": 1}'

        server = ToolServer()
        meta = ToolMeta(name="totals", output_schema={"type": "object", "required": "n"})
        server.register_tool(lambda: (meta, Declared()))
        async with connect(create_server(server)) as session:
            first = await session.call_tool("totals", {})
            second = await session.call_tool("totals", {})
        assert first.is_error
        assert second.is_error
        assert text_of(second) == (
            "Internal error: tool 'totals' returned a result its output schema does not "
            "describe (its output schema is not a valid JSON Schema)"
        )


class Mean(BaseModel):
    mean: float


@tool_registry
class NotJsonNumbers:
    """Generated tools whose results hold what no JSON number is."""

    @tool
    def mean(self) -> Mean:
        """The mean of nothing."""
        return Mean(mean=float("nan"))

    @tool
    def ratios(self) -> dict[str, float]:
        """A ratio over zero."""
        return {"r": float("inf")}

    @tool
    def maybe(self) -> dict[str, float | None]:
        """A number, maybe."""
        return {"m": float("-inf")}

    @tool
    def nan(self) -> float:
        """Not a number."""
        return float("nan")

    @tool
    def factorial(self) -> int:
        """A big number."""
        return 10**5000


TOTALS_SCHEMA = {
    "type": "object",
    "properties": {
        "n": {"type": "integer"},
        "items": {"type": "array", "items": {"type": "integer"}},
    },
    "required": ["n"],
}


class Colour(str, enum.Enum):
    RED = "red"


Name = NewType("Name", str)


@tool_registry
class Texts:
    """Tools whose results may be text: their text is the string itself, not JSON."""

    @tool
    def maybe(self) -> str | None:
        """A text, maybe."""
        return "42"

    @tool
    def colour(self) -> Colour:
        """A colour."""
        return Colour.RED

    @tool
    def pick(self) -> Literal["a", "b"]:
        """A letter."""
        return "a"

    @tool
    def name(self) -> Annotated[Name, "a name"]:
        """A name."""
        return Name("Ada")

    @tool
    def number(self) -> int | None:
        """No number."""
        return None


class TestResultsThatMayBeText:
    @pytest.mark.anyio
    async def test_no_output_schema_and_no_structured_content(self):
        """A tool whose result may be a str has no outputSchema (its text could not tell a
        string from JSON: "42"); one that may be None but not a str has one."""
        server = ToolServer()
        server.register_tools(tool_definitions(Texts()))
        async with connect(create_server(server)) as session:
            schemas = {t.name: t.output_schema for t in (await session.list_tools()).tools}
            results = {name: await session.call_tool(name, {}) for name in schemas}
        assert {name for name, schema in schemas.items() if schema is not None} == {"number"}
        assert {name: (text_of(r), r.structured_content) for name, r in results.items()} == {
            "maybe": ("42", None),
            "colour": ("red", None),
            "pick": ("a", None),
            "name": ("Ada", None),
            "number": ("null", {"result": None}),
        }


@pytest.fixture(scope="module")
async def served_gallery(anyio_backend, tmp_path_factory):
    """A session with ``llm-worker mcp serve tests.mcp.mcp_apps:rich_factory`` over stdio."""
    params = StdioServerParameters(
        command=SERVE[0], args=[*SERVE[1:], f"{APPS}:rich_factory"], cwd=ROOT
    )
    stderr = tmp_path_factory.mktemp("rich") / "stderr.txt"
    with stderr.open("w", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


class TestOverStdio:
    @pytest.mark.anyio
    async def test_listing(self, served_gallery):
        """Over stdio, tools/list carries the titles, annotations and output schemas."""
        listed = dump_tools(await served_gallery.list_tools())
        assert listed == exported(mcp_apps.rich_factory().handle())

    @pytest.mark.anyio
    async def test_rich_result(self, served_gallery):
        """Over stdio, a rich result arrives as the same blocks."""
        with anyio.fail_after(30):
            result = await served_gallery.call_tool("chart", {})
        assert result.content == CHART_BLOCKS

    @pytest.mark.anyio
    async def test_a_structured_result_holding_infinity(self, served_gallery):
        """Over stdio, a model's infinity (null in its JSON) is an isError result naming it."""
        with anyio.fail_after(30):
            result = await served_gallery.call_tool("stats", {"values": [1e308, 1e308]})
        assert (result.is_error, text_of(result)) == (
            True,
            "Internal error: tool 'stats' returned a result its output schema does not "
            "describe (null at /mean where a number belongs: a pydantic model writes NaN and "
            "Infinity, which JSON cannot carry as numbers, as null)",
        )

    @pytest.mark.anyio
    async def test_structured_result(self, served_gallery):
        """Over stdio, a wrapped result's structuredContent passes the SDK's validation."""
        with anyio.fail_after(30):
            result = await served_gallery.call_tool("count", {"text": "a b"})
        assert (text_of(result), result.structured_content) == ("2", {"result": 2})


# -- use: an SDK server's content, read by our client --------------------------------------

USER_NOTE = "Shown to the user only: 4 rows were hidden"
FOR_USER = types.Annotations(audience=["user"])
OBJECT = {"type": "object", "properties": {}}
TOTAL_SCHEMA = {"type": "object", "properties": {"total": {"type": "integer"}}}

EVERYTHING: list[types.ContentBlock] = [
    types.TextContent(text="Here is q3:"),
    types.ImageContent(data=b64(PNG), mime_type="image/png"),
    types.AudioContent(data=b64(WAV), mime_type="audio/wav"),
    types.EmbeddedResource(
        resource=types.TextResourceContents(uri="file:///notes.txt", text="note text")
    ),
    types.EmbeddedResource(
        resource=types.BlobResourceContents(
            uri="file:///data/q3%20report.pdf", mime_type="application/pdf", blob=b64(PDF)
        )
    ),
    types.EmbeddedResource(resource=types.BlobResourceContents(uri="s3://bucket/raw", blob="AAE=")),
    types.ResourceLink(name="chart", uri=CHART_URL, mime_type="image/png"),
    types.ResourceLink(name="local", uri="file:///tmp/x.png", mime_type="image/png"),
    types.ResourceLink(name="page", uri="https://example.com/page"),
    types.TextContent(text=USER_NOTE, annotations=FOR_USER),
    types.ImageContent(data=b64(b"user png"), mime_type="image/png", annotations=FOR_USER),
    types.TextContent(
        text="for both", annotations=types.Annotations(audience=["user", "assistant"])
    ),
]
# What the model reads of EVERYTHING, part by part.
EVERYTHING_PARTS = (
    TextPart("Here is q3:"),
    MediaPart("image/png", data=PNG),
    MediaPart("audio/wav", data=WAV),
    TextPart("[resource <file:///notes.txt>]\nnote text"),
    MediaPart("application/pdf", data=PDF, name="q3 report.pdf"),
    MediaPart("application/octet-stream", data=b"\0\1", name="raw"),
    MediaPart("image/png", url=CHART_URL, name="chart"),
    TextPart("[resource link: local <file:///tmp/x.png>]"),
    TextPart("[resource link: page <https://example.com/page>]"),
    TextPart("for both"),
)

ANSWERS: dict[str, types.CallToolResult] = {
    "everything": types.CallToolResult(content=EVERYTHING),
    "typed": types.CallToolResult(
        content=[types.TextContent(text='{"total": 3}')], structured_content={"total": 3}
    ),
    "structured_only": types.CallToolResult(content=[], structured_content={"total": 4}),
    "user_only": types.CallToolResult(
        content=[types.TextContent(text=USER_NOTE, annotations=FOR_USER)]
    ),
    "failing": types.CallToolResult(
        content=[
            types.TextContent(text=USER_NOTE, annotations=FOR_USER),
            types.TextContent(text="the disk is full"),
        ],
        is_error=True,
    ),
    "bad_image": types.CallToolResult(
        content=[types.ImageContent(data="not base64!", mime_type="image/png")]
    ),
    "bad_blob": types.CallToolResult(
        content=[
            types.EmbeddedResource(
                resource=types.BlobResourceContents(uri="file:///x.bin", blob="é==")
            )
        ]
    ),
    "bad_type": types.CallToolResult(content=[types.AudioContent(data="AAE=", mime_type="wav")]),
    "wrapped_base64": types.CallToolResult(
        content=[types.ImageContent(data="iVBO\nRw0K\r\nGgo=", mime_type="image/png")]
    ),
}


def remote_tools() -> list[types.Tool]:
    tools = [types.Tool(name=name, input_schema=OBJECT) for name in ANSWERS]
    for listed in tools:
        if listed.name in ("typed", "structured_only"):
            listed.output_schema = TOTAL_SCHEMA
    return [
        *tools,
        types.Tool(
            name="erase",
            title="Erase a file",
            input_schema=OBJECT,
            annotations=types.ToolAnnotations(destructive_hint=True, idempotent_hint=True),
        ),
        types.Tool(
            name="peek",
            input_schema=OBJECT,
            annotations=types.ToolAnnotations(title="Peek at a file", read_only_hint=True),
        ),
        types.Tool(name="crunch", input_schema=OBJECT),
    ]


def remote(calls: list[str] | None = None) -> Server[Any]:
    """An SDK server answering each tool of ANSWERS as it says; `erase` and `peek` answer
    "done", `crunch` reports progress first."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=remote_tools())

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if calls is not None:
            calls.append(params.name)
        if params.name == "crunch":
            for step in (1, 2, 3):
                await ctx.session.report_progress(step, 3, f"step {step}")
                await anyio.sleep(0.02)
        answer = ANSWERS.get(params.name)
        return answer or types.CallToolResult(content=[types.TextContent(text="done")])

    return Server("remote", on_list_tools=list_tools, on_call_tool=call_tool)


async def definitions_of(session: Any) -> dict[str, Any]:
    return {d.meta.name: d for d in await mcp_tool_definitions(session)}


class TestClientDefinitions:
    @pytest.mark.anyio
    async def test_title_annotations_and_output_schema_are_kept(self):
        """The ToolMeta keeps the server's title (else its annotations' title), annotations
        and outputSchema; what the model is sent has none of them."""
        async with connect(remote()) as session:
            metas = {name: d.meta for name, d in (await definitions_of(session)).items()}
        assert (metas["erase"].title, metas["erase"].annotations) == (
            "Erase a file",
            ToolAnnotations(destructive=True, idempotent=True),
        )
        assert (metas["peek"].title, metas["peek"].annotations) == (
            "Peek at a file",
            ToolAnnotations(read_only=True),
        )
        assert metas["typed"].output_schema == TOTAL_SCHEMA
        assert (metas["everything"].title, metas["everything"].annotations) == (
            None,
            ToolAnnotations(),
        )
        assert set(metas["erase"].to_llm_definition().to_dict()) == {
            "name",
            "description",
            "input_schema",
        }

    @pytest.mark.anyio
    async def test_our_served_tools_come_back_whole(self):
        """Served by create_server, our tools come back with their title, annotations and
        output schema."""
        handle = mcp_apps.rich_factory().handle()
        async with connect(create_server(handle)) as session:
            metas = [d.meta for d in await mcp_tool_definitions(session)]
        assert metas == [handle.get_tool(meta.name)[0] for meta in metas]  # type: ignore[index]


class TestClientResults:
    @pytest.mark.anyio
    async def test_every_block_becomes_a_part(self):
        """Images, audio and blobs are decoded into media parts, an http link with a type is a
        part by url, other links and text resources are text; blocks for the user only are
        kept in the metadata."""
        async with connect(remote()) as session:
            tool = (await definitions_of(session))["everything"]()[1]
            returned = await tool.execute("{}")
        assert returned == ToolReturn(
            list(EVERYTHING_PARTS),
            {
                "user_content": [
                    {"type": "text", "text": USER_NOTE, "annotations": {"audience": ["user"]}},
                    {
                        "type": "image",
                        "data": b64(b"user png"),
                        "mimeType": "image/png",
                        "annotations": {"audience": ["user"]},
                    },
                ]
            },
        )

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("name", "returned"),
        [
            (
                "typed",
                ToolReturn([TextPart('{"total": 3}')], {"structured_content": {"total": 3}}),
            ),
            (
                "structured_only",
                ToolReturn([DataPart('{"total":4}')], {"structured_content": {"total": 4}}),
            ),
            (
                "user_only",
                ToolReturn(
                    [],
                    {
                        "user_content": [
                            {
                                "type": "text",
                                "text": USER_NOTE,
                                "annotations": {"audience": ["user"]},
                            }
                        ]
                    },
                ),
            ),
            ("wrapped_base64", ToolReturn([MediaPart("image/png", data=b"\x89PNG\r\n\x1a\n")])),
        ],
    )
    async def test_structured_and_user_content(self, name, returned):
        """structuredContent is kept in the metadata, and is what the model reads when no
        block is for it; base64 broken into lines is read."""
        async with connect(remote()) as session:
            tool = (await definitions_of(session))[name]()[1]
            assert await tool.execute("{}") == returned

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("name", "message"),
        [
            (
                "bad_image",
                "MCP tool 'bad_image' sent an image (image/png) that cannot be read: its data "
                "is not base64",
            ),
            (
                "bad_blob",
                "MCP tool 'bad_blob' sent the resource <file:///x.bin> that cannot be read: its "
                "data is not base64",
            ),
            (
                "bad_type",
                "MCP tool 'bad_type' sent audio (wav) that cannot be read: 'wav' is not a MIME "
                "type",
            ),
            ("failing", "the disk is full"),
        ],
    )
    async def test_unreadable_content_and_errors(self, name, message):
        """Data that is not base64, or a media type that is not one, fails the call with a
        clear error; an isError result's text leaves out what is for the user only."""
        async with connect(remote()) as session:
            tool = (await definitions_of(session))[name]()[1]
            with pytest.raises(ExecutionFailedError) as info:
                await tool.execute("{}")
        assert info.value.message == message


def answering(*blocks: types.ContentBlock) -> Server[Any]:
    """An SDK server whose one tool, ``t``, answers ``blocks``."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="t", input_schema=OBJECT)])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=list(blocks))

    return Server("remote", on_list_tools=list_tools, on_call_tool=call_tool)


async def returned_by(server: Server[Any]) -> Any:
    """What ``t`` returns to a Worker, or the ToolError it raised (caught inside the session,
    whose task group would wrap it)."""
    async with connect(server) as session:
        try:
            return await (await definitions_of(session))["t"]()[1].execute("{}")
        except ExecutionFailedError as exc:
            return exc


def blob_at(uri: str) -> types.EmbeddedResource:
    return types.EmbeddedResource(
        resource=types.BlobResourceContents(uri=uri, mime_type="application/pdf", blob="AAEC")
    )


class TestHostileContent:
    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("block", "message"),
        [
            (
                types.ImageContent(data="iVBORw0KGgo=", mime_type="image/png\r\nX-Evil: 1"),
                "MCP tool 't' sent an image (image/png\\r\\nX-Evil: 1) that cannot be read: "
                "'image/png\\r\\nX-Evil: 1' is not a MIME type",
            ),
            (
                types.AudioContent(data="AAE=", mime_type="audio/"),
                "MCP tool 't' sent audio (audio/) that cannot be read: 'audio/' is not a MIME type",
            ),
            (
                types.EmbeddedResource(
                    resource=types.BlobResourceContents(
                        uri="file:///x.bin", mime_type="application/pdf; x=\n", blob="AAE="
                    )
                ),
                "MCP tool 't' sent the resource <file:///x.bin> that cannot be read: "
                "'application/pdf; x=\\n' is not a MIME type",
            ),
        ],
    )
    async def test_a_media_type_that_is_none_fails_the_call(self, block, message):
        """A mimeType with a line break (a header to inject), or not type/subtype, fails the
        call; the text shows it escaped."""
        failure = await returned_by(answering(block))
        assert isinstance(failure, ExecutionFailedError)
        assert failure.message == message

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("uri", "name"),
        [
            ("file:///x/%2e%2e%2f%2e%2e%2fetc%2fpasswd", "passwd"),
            ("file:///x/..%5C..%5Cboot.ini", "boot.ini"),
            ("file:///x/a%5Cb%5C", None),
            ("file:///x/%2e%2e", None),
            ("file:///x/.", None),
            ("file:///x/%2e", None),
            ("file:///x/", None),
            ("file:///data/q3%20report.pdf", "q3 report.pdf"),
        ],
    )
    async def test_a_blob_is_named_by_its_last_segment_never_a_path(self, uri, name):
        """The name of an embedded blob is the last segment of its uri once unquoted (at '/'
        or '\\'): never '../../etc/passwd'; '.', '..' or nothing gives no name."""
        returned = await returned_by(answering(blob_at(uri)))
        assert returned == ToolReturn([MediaPart("application/pdf", data=b"\0\1\2", name=name)])


class TestInAWorker:
    @pytest.mark.anyio
    async def test_parts_reach_the_history_but_user_content_never_a_request(self):
        """A Worker's history holds the parts and the metadata; no request to the model
        carries the content meant for the user only."""
        client = ScriptedClient(
            [
                ScriptedResponse(
                    tool_calls=[
                        ScriptedCall("everything", {}, id="a"),
                        ScriptedCall("user_only", {}, id="b"),
                    ]
                ),
                "Seen.",
            ]
        )
        worker = Worker(client)
        async with connect(remote()) as session:
            worker.register_tools(await mcp_tool_definitions(session))
            with anyio.fail_after(10):
                assert await worker.run("Show q3") is WorkerResult.FINISHED
        first, second = results_of(worker.history)
        assert first.parts == EVERYTHING_PARTS
        assert first.metadata["user_content"][0]["text"] == USER_NOTE
        assert second == ToolResult(
            "b", "", metadata={"user_content": [second.metadata["user_content"][0]]}
        )
        sent = [m for r in client.requests for m in r.messages if isinstance(m, ToolResult)]
        assert len(sent) == 2
        for result in sent:
            assert USER_NOTE not in result.content
            assert all(USER_NOTE not in repr(part) for part in result.parts)
            assert all(
                not (isinstance(part, MediaPart) and part.data == b"user png")
                for part in result.parts
            )

    @pytest.mark.anyio
    async def test_round_trip_through_our_server_and_client(self):
        """Our parts, served and read back by our client: the same media (bytes, names,
        links), data as its JSON text, and none of the server's metadata."""
        client = ScriptedClient(
            [
                ScriptedResponse(
                    tool_calls=[
                        ScriptedCall("chart", {}, id="a"),
                        ScriptedCall("stats", {"values": [2, 4]}, id="b"),
                    ]
                ),
                "Drawn.",
            ]
        )
        worker = Worker(client)
        async with connect(create_server(mcp_apps.rich_factory())) as session:
            worker.register_tools(await mcp_tool_definitions(session))
            with anyio.fail_after(10):
                await worker.run("Draw the chart")
        chart, stats = results_of(worker.history)
        assert chart.parts == (*mcp_apps.CHART_PARTS[:-1], TextPart('{"points":[1,2,3]}'))
        assert chart.metadata is None
        assert chart.content == 'The chart:\n{"points":[1,2,3]}'
        assert stats == ToolResult(
            "b",
            '{"count":2,"mean":3.0}',
            parts=(TextPart('{"count":2,"mean":3.0}'),),
            metadata={"structured_content": {"count": 2, "mean": 3.0}},
        )

    @pytest.mark.anyio
    @pytest.mark.parametrize("served", ["sdk", "ours"])
    @pytest.mark.parametrize("era", ERAS)
    async def test_progress_becomes_events(self, served, era):
        """The server's progress notifications for a call become ToolCallProgress events of
        that call, after it started and before it finished, in order."""
        client = ScriptedClient(
            [ScriptedResponse(tool_calls=[ScriptedCall("crunch", {"steps": 3}, id="p")]), "ok"]
        )
        worker = Worker(client)
        server = remote() if served == "sdk" else create_server(mcp_apps.rich_factory())
        async with Client(server, mode=era) as session:
            worker.register_tools(await mcp_tool_definitions(session))
            with anyio.fail_after(10):
                events = await collect(worker.run_stream("crunch"))
        progress = [e for e in events if isinstance(e, ToolCallProgress)]
        assert progress, "no progress reached the stream"
        assert {p.call_id for p in progress} == {"p"}
        assert all(p.total == 3 for p in progress)
        values = [p.progress for p in progress]
        assert values == sorted(values)
        assert {p.message for p in progress} <= {"step 1", "step 2", "step 3"}
        kinds = [type(e).__name__ for e in events]
        assert kinds.index("ToolCallRunning") < kinds.index("ToolCallProgress")
        assert kinds.index("ToolCallProgress") < kinds.index("ToolCallFinished")


# -- both ways: media and metadata of our server, read by our client -------------------------


def data_url(media_type: str, data: bytes) -> str:
    return f"data:{media_type};base64,{b64(data)}"


def returning(*parts: ContentPart) -> ToolServer:
    """A ToolServer whose one tool, ``media``, returns ``parts``."""

    class Media:
        async def execute(self, input_json: str) -> ToolReturn:
            return ToolReturn(list(parts))

    server = ToolServer()
    server.register_tool(lambda: (ToolMeta(name="media"), Media()))
    return server


async def served_blocks(server: ToolServer, limits: Limits | None = None) -> list[Any]:
    async with connect(create_server(server, limits=limits)) as session:
        result = await session.call_tool("media", {})
    assert not result.is_error
    return list(result.content)


async def round_trip(*parts: ContentPart) -> ToolResult:
    """The result a Worker keeps of ``parts``, served by our server and read by our client."""
    worker = Worker(
        ScriptedClient([ScriptedResponse(tool_calls=[ScriptedCall("media", {})]), "ok"])
    )
    async with connect(create_server(returning(*parts))) as session:
        worker.register_tools(await mcp_tool_definitions(session))
        with anyio.fail_after(10):
            await worker.run("go")
    (result,) = results_of(worker.history)
    return result


class TestServedMedia:
    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("url", "block"),
        [
            (
                data_url("image/png", PNG),
                types.ImageContent(data=b64(PNG), mime_type="image/png", _meta=marked()),
            ),
            (
                "DATA:image/png;BASE64," + b64(PNG).replace("+", "%2B").replace("=", "%3D"),
                types.ImageContent(data=b64(PNG), mime_type="image/png", _meta=marked()),
            ),
            (
                data_url("audio/wav", WAV),
                types.AudioContent(data=b64(WAV), mime_type="audio/wav", _meta=marked()),
            ),
            (
                data_url("application/pdf", PDF),
                types.EmbeddedResource(
                    resource=types.BlobResourceContents(
                        uri=media_uri(PDF), mime_type="application/pdf", blob=b64(PDF)
                    ),
                    _meta=marked(),
                ),
            ),
        ],
    )
    async def test_a_data_url_is_served_as_its_bytes(self, url, block):
        """A part by data: URL (base64, any case, percent-escaped or not) is served as a part
        with its bytes is: an image, audio, a blob; not a link whose name is the URL."""
        media_type = url[5:].split(";")[0]
        blocks = await served_blocks(returning(MediaPart(media_type, url=url)))
        assert blocks == [block]

    @pytest.mark.anyio
    async def test_a_percent_encoded_data_url_and_a_named_one(self):
        """A data: URL without base64 holds its percent-decoded bytes (a "%" that escapes
        nothing kept, as URL decoding keeps it); a named one keeps its name in the block's
        uri and _meta, as a part with bytes does."""
        text = MediaPart("text/plain", url="data:text/plain,hello%20world%21")
        raw = MediaPart("image/png", url="data:image/png,%ff%")
        named = MediaPart("application/pdf", url=data_url("application/pdf", PDF), name="q3/r.pdf")
        blocks = await served_blocks(returning(text, raw, named))
        assert blocks == [
            types.EmbeddedResource(
                resource=types.BlobResourceContents(
                    uri=media_uri(b"hello world!"),
                    mime_type="text/plain",
                    blob=b64(b"hello world!"),
                ),
                _meta=marked(),
            ),
            types.ImageContent(data=b64(b"\xff%"), mime_type="image/png", _meta=marked()),
            types.EmbeddedResource(
                resource=types.BlobResourceContents(
                    uri=media_uri(PDF, "q3%2Fr.pdf"), mime_type="application/pdf", blob=b64(PDF)
                ),
                _meta=marked("q3/r.pdf"),
            ),
        ]

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        "url",
        ["data:image/png;base64,not base64!", "data:image/png;base64", "data:image/png;base64,%ff"],
    )
    async def test_a_data_url_that_cannot_be_read_stays_a_link(self, url):
        """A data: URL that is not base64, has no data, or escapes no UTF-8 where it is base64
        is served as a link, as any other URL (our client reads it back as that part)."""
        blocks = await served_blocks(returning(MediaPart("image/png", url=url)))
        assert blocks == [
            types.ResourceLink(name=url, uri=url, mime_type="image/png", _meta=marked())
        ]

    @pytest.mark.anyio
    async def test_a_data_url_is_held_to_max_media_bytes(self):
        """Served with limits, a data: URL counts its length against max_media_bytes, as in a
        Worker: over it, the part is the note; its bytes never go out."""
        big = MediaPart("image/png", url=data_url("image/png", PNG * 20))
        (note,) = await served_blocks(returning(big), Limits(max_media_bytes=len(big.url) - 1))
        assert isinstance(note, types.TextContent)
        assert note.text.startswith(f"[image/png of {len(big.url)} bytes from tool 'media'")
        assert await served_blocks(returning(big), Limits(max_media_bytes=len(big.url))) == [
            types.ImageContent(data=b64(PNG * 20), mime_type="image/png", _meta=marked())
        ]

    @pytest.mark.anyio
    async def test_every_media_block_carries_its_part_name(self):
        """Each block made of a MediaPart has _meta "llm-worker/media": {"name": ...} ({} for
        none), an image's and audio's too, which MCP gives no name field."""
        blocks = await served_blocks(
            returning(
                MediaPart("image/png", data=PNG, name="chart.png"),
                MediaPart("audio/wav", data=WAV, name="clip.wav"),
                MediaPart("application/pdf", url="gs://bucket/report.pdf", name="q3/report.pdf"),
                MediaPart("application/pdf", url="gs://bucket/other.pdf"),
            )
        )
        assert [block.meta for block in blocks] == [
            marked("chart.png"),
            marked("clip.wav"),
            marked("q3/report.pdf"),
            marked(),
        ]
        assert [block.name for block in blocks[2:]] == ["q3/report.pdf", "gs://bucket/other.pdf"]


class TestRoundTrip:
    @pytest.mark.anyio
    async def test_a_data_url_comes_back_as_media_and_the_caption_whole(self):
        """A 60 KB image by data: URL, then its caption: the model reads the image as media
        (its bytes) and the caption whole, not the base64 as text cut at the cap."""
        png = PNG + bytes(range(256)) * 240
        result = await round_trip(
            MediaPart("image/png", url=data_url("image/png", png)),
            TextPart("Caption: sales rose 12% in Q3."),
        )
        assert result.parts == (
            MediaPart("image/png", data=png),
            TextPart("Caption: sales rose 12% in Q3."),
        )
        assert result.content == "Caption: sales rose 12% in Q3."

    @pytest.mark.anyio
    async def test_media_names_and_links_come_back_as_returned(self):
        """Names (of images and audio too, and with a '/'), links of any scheme, a link named
        by its own URL: each part comes back as the tool returned it; a data: URL as its
        bytes."""
        parts = (
            TextPart("t"),
            MediaPart("image/png", data=PNG, name="chart.png"),
            MediaPart("audio/wav", data=WAV, name="clip.wav"),
            MediaPart("application/pdf", data=PDF, name="q3/report.pdf"),
            MediaPart("video/mp4", data=MP4),
            MediaPart("application/pdf", url="gs://bucket/report.pdf"),
            MediaPart("image/png", url="https://x.example/a.png", name="https://x.example/a.png"),
            MediaPart("image/png", url="https://x.example/b.png"),
            MediaPart("text/plain; charset=utf-8", data=b"hello", name="n.txt"),
            TextPart("end"),
        )
        image = MediaPart("image/png", url=data_url("image/png", PNG), name="inline.png")
        result = await round_trip(*parts, image)
        assert result.parts == (*parts, MediaPart("image/png", data=PNG, name="inline.png"))
        assert result.content == "t\nend"


class TestClientReadsTheMark:
    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("block", "part"),
        [
            (
                types.ResourceLink(
                    name="r", uri="gs://b/r.pdf", mime_type="application/pdf", _meta=marked("r.pdf")
                ),
                MediaPart("application/pdf", url="gs://b/r.pdf", name="r.pdf"),
            ),
            (
                types.ResourceLink(
                    name="https://x/a.png",
                    uri="https://x/a.png",
                    mime_type="image/png",
                    _meta=marked("https://x/a.png"),
                ),
                MediaPart("image/png", url="https://x/a.png", name="https://x/a.png"),
            ),
            (
                types.ResourceLink(name="r", uri="gs://b/r.pdf", mime_type="application/pdf"),
                TextPart("[resource link: r <gs://b/r.pdf>]"),
            ),
            (  # marked, but of a scheme no MediaPart has: a hostile server's link
                types.ResourceLink(
                    name="r", uri="s3://b/r.pdf", mime_type="application/pdf", _meta=marked()
                ),
                TextPart("[resource link: r <s3://b/r.pdf>]"),
            ),
            (
                types.ResourceLink(name="r", uri="gs://b/r.pdf", _meta=marked()),
                TextPart("[resource link: r <gs://b/r.pdf>]"),
            ),
            (
                types.ResourceLink(
                    name="r",
                    uri="gs://b/r.pdf",
                    mime_type="application/pdf",
                    _meta={MEDIA_META: "r.pdf"},
                ),
                TextPart("[resource link: r <gs://b/r.pdf>]"),
            ),
            (
                types.ImageContent(data=b64(PNG), mime_type="image/png", _meta=marked("c.png")),
                MediaPart("image/png", data=PNG, name="c.png"),
            ),
            (
                types.AudioContent(
                    data=b64(WAV), mime_type="audio/wav", _meta={MEDIA_META: {"name": 3}}
                ),
                MediaPart("audio/wav", data=WAV),
            ),
            (
                types.EmbeddedResource(
                    resource=types.BlobResourceContents(
                        uri="file:///x/a.pdf", mime_type="application/pdf", blob=b64(PDF)
                    ),
                    _meta=marked("q3/report.pdf"),
                ),
                MediaPart("application/pdf", data=PDF, name="q3/report.pdf"),
            ),
            (
                types.EmbeddedResource(
                    resource=types.BlobResourceContents(
                        uri="file:///x/a.pdf", mime_type="application/pdf", blob=b64(PDF)
                    ),
                    _meta=marked(),
                ),
                MediaPart("application/pdf", data=PDF),
            ),
        ],
    )
    async def test_a_block_with_the_media_mark(self, block, part):
        """A block whose _meta has "llm-worker/media" (an object) is a MediaPart's: named by
        it, and a link with a type is a part by url whatever its scheme. Without the mark (or
        with one that is not an object) a block is read as before."""
        returned = await returned_by(answering(block))
        # A result of text alone is a str, as ever.
        assert returned == (part.text if isinstance(part, TextPart) else ToolReturn([part]))


def answering_result(result: types.CallToolResult, output_schema: Any = None) -> Server[Any]:
    """An SDK server whose one tool, ``t``, answers ``result``."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        listed = types.Tool(name="t", input_schema=OBJECT, output_schema=output_schema)
        return types.ListToolsResult(tools=[listed])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return result

    return Server("remote", on_list_tools=list_tools, on_call_tool=call_tool)


def user_image(data: bytes) -> types.ImageContent:
    return types.ImageContent(data=b64(data), mime_type="image/png", annotations=FOR_USER)


def user_text(text: str) -> types.TextContent:
    return types.TextContent(text=text, annotations=FOR_USER)


def dumped(block: types.ContentBlock) -> dict[str, Any]:
    return block.model_dump(mode="json", by_alias=True, exclude_none=True)


def json_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")).encode())


class TestMetadataBounds:
    @pytest.mark.anyio
    async def test_user_content_is_held_to_the_limits(self):
        """Blocks for the user only: those with media data share max_media_bytes, the others
        max_result_bytes, each counting its JSON; one past its share is left out (a smaller one
        after it kept), and user_content_dropped counts them."""
        limits = Limits(max_result_bytes=1_000, max_media_bytes=1_000)
        blocks = [
            user_image(b"x" * 600),
            user_text("y" * 1_000),
            user_image(b"z" * 600),  # the first image took most of the room
            user_image(b"small"),
            user_text("a note"),
            types.TextContent(text="for the model"),
        ]
        server = answering_result(types.CallToolResult(content=blocks))
        async with connect(server) as session:
            (definition,) = await mcp_tool_definitions(session, limits=limits)
            returned = await definition()[1].execute("{}")
        assert json_size(dumped(blocks[0])) <= 1_000 < json_size(dumped(blocks[1]))
        assert returned == ToolReturn(
            [TextPart("for the model")],
            {
                "user_content": [dumped(blocks[0]), dumped(blocks[3]), dumped(blocks[4])],
                "user_content_dropped": 2,
            },
        )

    @pytest.mark.anyio
    @pytest.mark.parametrize("content", ["text", "none"])
    async def test_structured_content_over_max_result_bytes_is_left_out(self, content):
        """structuredContent whose JSON is over max_result_bytes is not kept in the metadata:
        structured_content_dropped gives its size. With no block for the model, the model
        still reads it (the Worker cuts it)."""
        structured = {"rows": "r" * 300}
        size = json_size(structured)
        schema = {"type": "object", "properties": {"rows": {"type": "string"}}}
        blocks = [types.TextContent(text="300 rows")] if content == "text" else []
        server = answering_result(
            types.CallToolResult(content=blocks, structured_content=structured), schema
        )
        async with connect(server) as session:
            (small,) = await mcp_tool_definitions(session, limits=Limits(max_result_bytes=size - 1))
            (large,) = await mcp_tool_definitions(session, limits=Limits(max_result_bytes=size))
            cut = await small()[1].execute("{}")
            whole = await large()[1].execute("{}")
        parts = [TextPart("300 rows")] if content == "text" else [DataPart.of(structured)]
        assert cut == ToolReturn(parts, {"structured_content_dropped": size})
        assert whole == ToolReturn(parts, {"structured_content": structured})

    @pytest.mark.anyio
    async def test_a_workers_history_keeps_what_the_default_limits_allow(self):
        """Without limits, Limits()'s apply: a 200 KB structuredContent and a 30 MB image for
        the user stay out of the history (and of every RunState), counted."""
        structured = {"rows": "r" * 200_000}
        blocks = [types.TextContent(text="done"), user_image(b"\0" * 30_000_000)]
        server = answering_result(
            types.CallToolResult(content=blocks, structured_content=structured),
            {"type": "object"},
        )
        worker = Worker(
            ScriptedClient([ScriptedResponse(tool_calls=[ScriptedCall("t", {})]), "ok"])
        )
        async with connect(server) as session:
            worker.register_tools(await mcp_tool_definitions(session))
            with anyio.fail_after(30):
                await worker.run("go")
        (result,) = results_of(worker.history)
        assert result.metadata == {
            "user_content_dropped": 1,
            "structured_content_dropped": json_size(structured),
        }
        assert len(worker.state.to_json()) < 10_000

    @pytest.mark.anyio
    async def test_limits_must_be_limits(self):
        """limits= takes a Limits."""
        async with connect(answering(types.TextContent(text="x"))) as session:
            with pytest.raises(TypeError, match=r"^limits must be a Limits, not int$"):
                await mcp_tool_definitions(session, limits=5)  # type: ignore[arg-type]
