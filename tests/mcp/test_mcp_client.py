"""Tests for ``llm_worker.mcp._client``: an MCP server's tools as llm-worker tools.

The servers run in the test process (the SDK's ``Client`` over memory
streams, speaking JSON-RPC): ``create_server`` of our own tools, and
``remote``, a low-level SDK server whose tools answer with every kind of
result.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import mcp.types as types
import mcp_apps
import pytest
from mcp import Client, MCPError
from mcp.server import Server
from mcp_support import connect

from llm_worker import (
    DataPart,
    ExecutionFailedError,
    InternalToolError,
    InvalidArgumentError,
    MediaPart,
    TextPart,
    ToolError,
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
from llm_worker.mcp import McpTool, McpToolDefinition, create_server, mcp_tool_definitions
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

OBJECT = {"type": "object", "properties": {}}
LOOKUP_SCHEMA = {
    "type": "object",
    "properties": {"key": {"type": "string", "description": "What to look up"}},
    "required": ["key"],
}

# What each tool of `remote` answers.
RESULTS: dict[str, types.CallToolResult] = {
    "lookup": types.CallToolResult(
        content=[types.TextContent(text="first"), types.TextContent(text="second")]
    ),
    "media": types.CallToolResult(
        content=[
            types.TextContent(text="Here:"),
            types.ImageContent(data="iVBORw0KGgo=", mime_type="image/png"),
            types.AudioContent(data="UklGRg==", mime_type="audio/wav"),
            types.ResourceLink(name="report", uri="file:///tmp/report.pdf"),
            types.EmbeddedResource(
                resource=types.TextResourceContents(uri="file:///notes.txt", text="note text")
            ),
            types.EmbeddedResource(
                resource=types.BlobResourceContents(
                    uri="file:///data.bin", blob="AAEC", mime_type="application/octet-stream"
                )
            ),
        ]
    ),
    "structured": types.CallToolResult(content=[], structured_content={"total": 3, "ok": True}),
    "empty": types.CallToolResult(content=[]),
    "refuse": types.CallToolResult(
        content=[types.TextContent(text="Invalid argument: 'key': too long")], is_error=True
    ),
    "silent_error": types.CallToolResult(content=[], is_error=True),
    "typed": types.CallToolResult(content=[types.TextContent(text="no structured content")]),
    # Its output schema refers to nothing: the SDK's check of the result fails unexpectedly.
}


def remote(
    calls: list[tuple[str, dict[str, Any] | None]] | None = None,
    *,
    pages: int = 1,
    endless: bool = False,
) -> Server[Any]:
    """An SDK server with the tools of RESULTS (plus `quota` and `hang`), recording calls.

    ``pages`` splits the listing into that many pages; ``endless`` never ends it.
    """
    tools = [
        types.Tool(name="lookup", description="Look a key up.", input_schema=LOOKUP_SCHEMA),
        *(types.Tool(name=name, input_schema=OBJECT) for name in RESULTS if name != "lookup"),
        types.Tool(name="quota", input_schema=OBJECT),
        types.Tool(name="hang", input_schema=OBJECT),
    ]
    typed = next(t for t in tools if t.name == "typed")
    typed.output_schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    size = -(-len(tools) // pages)

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> Any:
        page = int(params.cursor) if params is not None and params.cursor is not None else 0
        chunk = tools[page * size : (page + 1) * size]
        more = endless or page + 1 < pages
        return types.ListToolsResult(tools=chunk, next_cursor=str(page + 1) if more else None)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:
        if calls is not None:
            calls.append((params.name, params.arguments))
        if params.name == "quota":
            raise MCPError(-32001, "quota exceeded")
        if params.name == "hang":
            await anyio.sleep_forever()
        return RESULTS[params.name]

    return Server("remote", on_list_tools=list_tools, on_call_tool=call_tool)


async def remote_tools(session: Any, **options: Any) -> dict[str, tuple[ToolMeta, Any]]:
    pairs = [definition() for definition in await mcp_tool_definitions(session, **options)]
    return {meta.name: (meta, tool) for meta, tool in pairs}


class TestMcpToolDefinitions:
    @pytest.mark.anyio
    async def test_one_definition_per_remote_tool_in_order(self):
        """Each remote tool becomes a definition with its name, description and inputSchema."""
        async with connect(remote()) as session:
            listed = (await session.list_tools()).tools
            definitions = await mcp_tool_definitions(session)
        metas = [definition()[0] for definition in definitions]
        assert metas == [
            ToolMeta(
                name=t.name,
                description=t.description or "",
                input_schema=t.input_schema,
                output_schema=t.output_schema,
            )
            for t in listed
        ]
        assert metas[0] == ToolMeta(
            name="lookup", description="Look a key up.", input_schema=LOOKUP_SCHEMA
        )
        assert all(isinstance(d, McpToolDefinition) for d in definitions)

    @pytest.mark.anyio
    async def test_our_own_server_round_trips(self):
        """Served by create_server, our tools come back with the metas they were registered with."""
        handle = mcp_apps.handle_factory()
        async with connect(create_server(handle)) as session:
            metas = [definition()[0] for definition in await mcp_tool_definitions(session)]
        assert [meta.to_llm_definition() for meta in metas] == handle.tool_definitions_sorted()

    @pytest.mark.anyio
    async def test_every_page_is_listed(self):
        """A listing in several pages gives every tool, in order."""
        async with connect(remote()) as session:
            one_page = [d()[0].name for d in await mcp_tool_definitions(session)]
        async with connect(remote(pages=3)) as session:
            three_pages = [d()[0].name for d in await mcp_tool_definitions(session)]
        assert three_pages == one_page
        assert len(one_page) == 9

    @pytest.mark.anyio
    async def test_endless_paging_is_an_error(self):
        """A server whose listing never ends raises RuntimeError after 100 pages."""
        async with connect(remote(endless=True)) as session:
            with pytest.raises(RuntimeError, match=r"^the MCP server's tools/list did not end"):
                await mcp_tool_definitions(session)

    @pytest.mark.anyio
    async def test_listing_errors_propagate(self):
        """A server without tools answers tools/list with an MCP error, which propagates."""
        async with connect(Server("no-tools")) as session:
            with pytest.raises(MCPError):
                await mcp_tool_definitions(session)

    @pytest.mark.anyio
    async def test_prefix_renames_locally_only(self):
        """With a prefix, the local name is prefixed; the call goes out under the remote name."""
        calls: list[tuple[str, Any]] = []
        async with connect(remote(calls)) as session:
            tools = await remote_tools(session, prefix="kb_")
            assert await tools["kb_lookup"][1].execute('{"key": "x"}') == "first\nsecond"
        assert "lookup" not in tools
        assert calls == [("lookup", {"key": "x"})]

    @pytest.mark.anyio
    async def test_accepts_an_mcp_client(self):
        """An entered mcp.Client works like its ClientSession."""
        async with Client(remote(), mode="legacy") as client:
            tools = await remote_tools(client)
            assert await tools["lookup"][1].execute('{"key": "x"}') == "first\nsecond"

    @pytest.mark.anyio
    async def test_rejects_other_objects(self):
        """Anything but a ClientSession or Client is a TypeError."""
        with pytest.raises(TypeError) as info:
            await mcp_tool_definitions(object())  # type: ignore[arg-type]
        assert str(info.value) == (
            "mcp_tool_definitions() takes an mcp.ClientSession or mcp.Client, not object"
        )

    @pytest.mark.anyio
    async def test_each_factory_call_gives_the_same_pair(self):
        """A definition is a plain factory: calling it returns its meta and tool; repr names it."""
        async with connect(remote()) as session:
            [definition, *_] = await mcp_tool_definitions(session)
        assert definition() == definition()
        assert repr(definition) == "<McpToolDefinition 'lookup'>"
        assert repr(definition()[1]) == "<McpTool 'lookup' session=<ClientSession>>"
        assert definition.meta is definition()[0]


class TestMcpTool:
    @pytest.mark.anyio
    async def test_forwards_arguments(self):
        """execute() sends the parsed arguments as tools/call; text blocks are joined by lines."""
        calls: list[tuple[str, Any]] = []
        async with connect(remote(calls)) as session:
            tools = await remote_tools(session)
            text = await tools["lookup"][1].execute('{"key": "k", "n": [1, 2.5, null]}')
        assert text == "first\nsecond"
        assert calls == [("lookup", {"key": "k", "n": [1, 2.5, None]})]

    @pytest.mark.anyio
    @pytest.mark.parametrize("input_json", ["", "  \n"])
    async def test_empty_input_sends_an_empty_object(self, input_json):
        """Empty or whitespace input sends {}."""
        calls: list[tuple[str, Any]] = []
        async with connect(remote(calls)) as session:
            tools = await remote_tools(session)
            await tools["empty"][1].execute(input_json)
        assert calls == [("empty", {})]

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("input_json", "message"),
        [
            ("{", "input is not valid JSON (EOF while parsing an object at line 1 column 1)"),
            ("[1, 2]", "input must be a JSON object, got array"),
            ('"text"', "input must be a JSON object, got string"),
        ],
    )
    async def test_bad_input_is_refused_before_calling(self, input_json, message):
        """Input that is not a JSON object raises InvalidArgumentError and sends nothing."""
        calls: list[tuple[str, Any]] = []
        async with connect(remote(calls)) as session:
            tools = await remote_tools(session)
            with pytest.raises(InvalidArgumentError) as info:
                await tools["lookup"][1].execute(input_json)
        assert info.value.message == message
        assert calls == []

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("name", "returned"),
        [
            (
                "media",
                ToolReturn(
                    [
                        TextPart("Here:"),
                        MediaPart("image/png", data=b"\x89PNG\r\n\x1a\n"),
                        MediaPart("audio/wav", data=b"RIFF"),
                        TextPart("[resource link: report <file:///tmp/report.pdf>]"),
                        TextPart("[resource <file:///notes.txt>]\nnote text"),
                        MediaPart("application/octet-stream", data=b"\0\1\2", name="data.bin"),
                    ]
                ),
            ),
            (
                "structured",
                ToolReturn(
                    [DataPart('{"total":3,"ok":true}')],
                    {"structured_content": {"total": 3, "ok": True}},
                ),
            ),
            ("empty", ""),
        ],
    )
    async def test_result_as_parts(self, name, returned):
        """Every content block becomes a part (media decoded, a link the model's provider
        cannot fetch a note); structured-only content is a DataPart, and in the metadata."""
        async with connect(remote()) as session:
            tools = await remote_tools(session)
            assert await tools[name][1].execute("{}") == returned

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("name", "kind", "text"),
        [
            ("refuse", InvalidArgumentError, "Invalid argument: 'key': too long"),
            (
                "silent_error",
                ExecutionFailedError,
                "Execution failed: MCP tool 'silent_error' reported an error (no message)",
            ),
            ("quota", ExecutionFailedError, "Execution failed: MCP error: quota exceeded"),
        ],
    )
    async def test_remote_errors_keep_their_kind(self, name, kind, text):
        """An isError result or an MCP error response raises ExecutionFailedError with its
        text; one that says its kind as ours do (an llm-worker server's "Invalid argument:
        ...") is that kind, read by the model as it was sent, not prefixed twice."""
        async with connect(remote()) as session:
            tools = await remote_tools(session)
            with pytest.raises(kind) as info:
                await tools[name][1].execute("{}")
        assert str(info.value) == text

    @pytest.mark.anyio
    async def test_our_own_servers_errors_read_as_they_were_sent(self):
        """llm-worker serving llm-worker: the model reads a remote tool's error text as the
        served tool's own model would, once prefixed ("Execution failed: Execution failed:
        no points given" before)."""
        async with connect(create_server(mcp_apps.handle_factory())) as session:
            tools = await remote_tools(session)
            outcomes = {}
            for name, arguments in (("centroid", '{"points": []}'), ("add", '{"a": "x", "b": 1}')):
                with pytest.raises(ToolError) as info:
                    await tools[name][1].execute(arguments)
                outcomes[name] = (type(info.value), str(info.value))
        assert outcomes == {
            "centroid": (ExecutionFailedError, "Execution failed: no points given"),
            "add": (
                InvalidArgumentError,
                "Invalid argument: 'a': Input should be a valid integer (got \"x\")",
            ),
        }

    @pytest.mark.anyio
    async def test_closed_session(self):
        """A call after the session closed raises ExecutionFailedError, not an SDK exception."""
        async with connect(remote()) as session:
            tools = await remote_tools(session)
        with pytest.raises(ExecutionFailedError) as info:
            await tools["lookup"][1].execute('{"key": "x"}')
        assert str(info.value) == "Execution failed: MCP error: Connection closed"
        # Not chained (logged as a failed call, without a traceback); raised while handling it.
        assert isinstance(info.value.__context__, MCPError)

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        "error", [OSError("socket closed"), anyio.BrokenResourceError(), anyio.EndOfStream()]
    )
    async def test_broken_connection(self, error):
        """A transport that fails under the call raises ExecutionFailedError naming the failure."""

        class BrokenSession:
            async def call_tool(self, name: str, arguments: Any, **options: Any) -> Any:
                raise error

        with pytest.raises(ExecutionFailedError) as info:
            await McpTool(BrokenSession(), "lookup").execute("{}")  # type: ignore[arg-type]
        assert info.value.message == (
            f"lost the connection to the MCP server ({type(error).__name__})"
        )

    @pytest.mark.anyio
    async def test_unexpected_sdk_error_is_internal(self, caplog):
        """Another SDK exception raises InternalToolError naming only its type; it is logged
        with its traceback (a schema the SDK cannot use is left out at listing: see
        test_mcp_client_hostile)."""

        class BrokenSession:
            async def call_tool(self, name: str, arguments: Any, **options: Any) -> Any:
                raise LookupError("the SDK's own bug")

        with (
            caplog.at_level(logging.ERROR, logger="llm_worker.mcp"),
            pytest.raises(InternalToolError) as info,
        ):
            await McpTool(BrokenSession(), "lookup").execute("{}")  # type: ignore[arg-type]
        assert info.value.message == "calling MCP tool 'lookup' failed unexpectedly (LookupError)"
        [record] = [r for r in caplog.records if r.name == "llm_worker.mcp"]
        assert record.exc_info is not None
        assert "the SDK's own bug" in str(record.exc_info[1])

    @pytest.mark.anyio
    async def test_cancellation_propagates(self):
        """Cancelling a call in flight cancels it; no ToolError is raised."""
        async with connect(remote()) as session:
            tools = await remote_tools(session)
            with anyio.move_on_after(0.2) as scope:
                await tools["hang"][1].execute("{}")
        assert scope.cancelled_caught


@tool_registry
class Notes:
    """A local tool, next to the remote ones."""

    def __init__(self) -> None:
        self.notes: list[str] = []

    @tool
    async def remember(self, note: str) -> str:
        """Remember a note."""
        self.notes.append(note)
        return f"noted ({len(self.notes)})"


INVALID_ECHO = "Invalid argument: 'text': Input should be a valid string (got 7)"


class TestWorkerWithMcpTools:
    @pytest.mark.anyio
    async def test_local_and_remote_tools_in_one_run(self):
        """A Worker runs local and MCP tools side by side; each result lands in history in order."""
        notes = Notes()
        client = ScriptedClient(
            [
                ScriptedResponse(
                    tool_calls=[
                        ScriptedCall("remember", {"note": "ask about points"}, id="a"),
                        ScriptedCall("centroid", {"points": [{"x": 2, "y": 4}]}, id="b"),
                        ScriptedCall("echo", {"text": 7}, id="c"),
                        ScriptedCall("broken", {}, id="d"),
                    ],
                    chunk_size=3,
                    interleave=True,
                ),
                "The centroid is (2, 4).",
            ]
        )
        worker = Worker(client)
        async with connect(create_server(mcp_apps.factory())) as session:
            worker.register_tools([*tool_definitions(notes), *await mcp_tool_definitions(session)])
            result = await worker.lock().run("Where is the centroid?")
        assert result is WorkerResult.FINISHED
        assert notes.notes == ["ask about points"]
        assert [m for m in worker.history if isinstance(m, ToolResult)] == [
            ToolResult("a", "noted (1)", False),
            ToolResult(
                "b",
                '{"x":2,"y":4}',
                parts=(TextPart('{"x":2,"y":4}'),),
                metadata={"structured_content": {"x": 2, "y": 4}},
            ),
            ToolResult("c", INVALID_ECHO, True),  # as the served tool's own model reads it
            ToolResult("d", "Internal error: tool 'broken' failed unexpectedly (KeyError)", True),
        ]

    @pytest.mark.anyio
    async def test_model_sees_remote_schemas(self):
        """The request carries the remote tools' definitions, sorted with the local ones."""
        client = ScriptedClient(["ok"])
        worker = Worker(client)
        handle = mcp_apps.handle_factory()
        async with connect(create_server(handle)) as session:
            worker.register_tools(
                [*tool_definitions(Notes()), *await mcp_tool_definitions(session, prefix="calc_")]
            )
            await worker.run("hi")
        sent = {d.name: d.to_dict() for d in client.requests[0].tools}
        assert sorted(sent) == sorted(
            ["remember", *(f"calc_{d.name}" for d in handle.tool_definitions_sorted())]
        )
        assert sent["calc_centroid"]["input_schema"] == (
            handle.get_tool("centroid")[0].input_schema  # type: ignore[index]
        )
        assert sent["calc_echo"]["description"] == "Send the text back, repeated."

    @pytest.mark.anyio
    async def test_two_servers_with_prefixes(self):
        """Prefixes let two servers with the same tool names serve one worker."""
        client = ScriptedClient(
            [
                ScriptedResponse(
                    tool_calls=[
                        ScriptedCall("a_add", {"a": 1, "b": 2}, id="1"),
                        ScriptedCall("b_add", {"a": 10, "b": 20}, id="2"),
                    ]
                ),
                "done",
            ]
        )
        worker = Worker(client)
        async with (
            connect(create_server(mcp_apps.factory())) as first,
            connect(create_server(mcp_apps.factory())) as second,
        ):
            worker.register_tools(
                [
                    *await mcp_tool_definitions(first, prefix="a_"),
                    *await mcp_tool_definitions(second, prefix="b_"),
                ]
            )
            await worker.run("add")
        assert [m for m in worker.history if isinstance(m, ToolResult)] == [
            ToolResult(
                "1", "3", parts=(TextPart("3"),), metadata={"structured_content": {"result": 3}}
            ),
            ToolResult(
                "2", "30", parts=(TextPart("30"),), metadata={"structured_content": {"result": 30}}
            ),
        ]


def test_local_tool_server_accepts_remote_definitions():
    """ToolServer.register_tools takes MCP definitions like any other ToolDefinition."""
    server = ToolServer()

    async def main() -> None:
        async with connect(remote()) as session:
            server.register_tools(await mcp_tool_definitions(session))

    anyio.run(main)
    assert len(server.handle()) == 9
