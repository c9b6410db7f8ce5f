"""Tests for ``llm_worker.mcp._serve``: the MCP server, talked to in-process by the SDK's client.

The same behaviour over real transports (``llm-worker mcp serve`` as a
subprocess, stdio and streamable HTTP) is in ``test_mcp_stdio.py`` and
``test_mcp_http.py``.
"""

from __future__ import annotations

import logging
import socket

import anyio
import mcp_apps
import pytest
from mcp import MCPError
from mcp.server import Server
from mcp.types import INVALID_PARAMS, PaginatedRequestParams
from mcp_support import CALL_IDS, CALLS, connect, dump_tools, exported, text_of
from starlette.applications import Starlette

import llm_worker
from llm_worker import (
    ToolContext,
    ToolMeta,
    ToolServer,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker.mcp import create_http_app, create_server, serve_async
from llm_worker.mcp._serve import _ProgressForwarder

# The structured content of the calls of CALLS that have some: tools with an outputSchema.
STRUCTURED = {("add", False): {"result": 42}, ("centroid", False): {"x": 2, "y": 1}}


class TestCreateServer:
    def test_returns_the_sdk_low_level_server(self):
        """create_server builds the SDK's low-level Server (which serves our schemas as given)."""
        assert isinstance(create_server(ToolServer()), Server)

    @pytest.mark.anyio
    async def test_lists_exactly_our_mcp_export(self):
        """tools/list gives exactly export_tools of every ToolMeta, sorted by name: with the
        outputSchema of each tool that has one."""
        handle = mcp_apps.handle_factory()
        async with connect(create_server(handle)) as session:
            listed = dump_tools(await session.list_tools())
        assert listed == exported(handle)
        schemas = {tool["name"]: tool.get("outputSchema") for tool in listed}
        assert schemas["add"] == {
            "type": "object",
            "properties": {"result": {"type": "integer"}},
            "required": ["result"],
            "x-llm-worker-wrapped": True,
        }
        assert schemas["echo"] is None
        assert [tool["name"] for tool in listed] == [
            "add",
            "broken",
            "centroid",
            "echo",
            "not_text",
            "pid",
            "shout",
        ]

    @pytest.mark.anyio
    async def test_nested_models_keep_their_defs(self):
        """A tool taking nested models is listed with its $defs and $ref untouched."""
        async with connect(create_server(mcp_apps.factory())) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        schema = tools["centroid"].input_schema
        assert schema["properties"]["points"] == {
            "items": {"$ref": "#/$defs/Point"},
            "type": "array",
        }
        assert schema["$defs"]["Point"]["required"] == ["x", "y"]

    @pytest.mark.anyio
    @pytest.mark.parametrize(("name", "arguments", "text", "is_error"), CALLS, ids=CALL_IDS)
    async def test_call(self, name, arguments, text, is_error):
        """tools/call returns the tool's text; every failure is an isError result with our text.
        A tool with an outputSchema also gives structuredContent (the SDK client checked it
        against the schema), wrapped for a result that is not an object; an error never."""
        async with connect(create_server(mcp_apps.factory())) as session:
            result = await session.call_tool(name, arguments)
        assert (text_of(result), result.is_error) == (text, is_error)
        assert result.structured_content == STRUCTURED.get((name, is_error))

    @pytest.mark.anyio
    async def test_no_arguments_means_an_empty_object(self):
        """A tools/call without arguments runs the tool on {}."""
        async with connect(create_server(mcp_apps.factory())) as session:
            result = await session.call_tool("pid")
        assert not result.is_error
        assert text_of(result).isdigit()

    @pytest.mark.anyio
    async def test_unexpected_exception_is_logged_not_sent(self, caplog):
        """A non-ToolError exception is logged with its traceback; the client reads its type."""
        async with connect(create_server(mcp_apps.factory())) as session:
            with caplog.at_level(logging.ERROR, logger="llm_worker"):
                result = await session.call_tool("broken", {})
        assert "secret" not in text_of(result)
        [record] = [r for r in caplog.records if r.name == "llm_worker"]
        assert record.getMessage() == "Tool 'broken' raised KeyError"
        assert record.exc_info is not None
        assert "secret internal detail" in str(record.exc_info[1])

    @pytest.mark.anyio
    async def test_a_cursor_we_never_gave_is_invalid_params(self):
        """tools/list has one page: a cursor is refused with -32602 (as the spec asks of an
        invalid cursor), not answered with the first page again."""
        async with connect(create_server(mcp_apps.handle_factory())) as session:
            with pytest.raises(MCPError) as info:
                await session.list_tools(params=PaginatedRequestParams(cursor="page-2"))
            assert info.value.code == INVALID_PARAMS
            assert "Invalid cursor 'page-2'" in info.value.message
            assert len((await session.list_tools()).tools) > 0  # the session goes on

    @pytest.mark.anyio
    async def test_tools_registered_later_are_listed(self):
        """The server reads the tool map on every request: later registrations are served."""
        server = ToolServer()
        async with connect(create_server(server)) as session:
            assert (await session.list_tools()).tools == []
            server.register_tool(mcp_apps.broken_definition)
            assert [tool.name for tool in (await session.list_tools()).tools] == ["broken"]

    @pytest.mark.anyio
    async def test_server_and_handle_serve_the_same_tools(self):
        """A ToolServer and its handle give the same listing."""
        server = mcp_apps.factory()
        async with connect(create_server(server)) as session:
            from_server = dump_tools(await session.list_tools())
        async with connect(create_server(server.handle())) as session:
            from_handle = dump_tools(await session.list_tools())
        assert from_server == from_handle

    @pytest.mark.anyio
    async def test_tool_without_description_or_arguments(self):
        """A bare ToolMeta is listed with an empty description and an empty object schema."""
        server = ToolServer()
        server.register_tool(lambda: (ToolMeta(name="bare"), mcp_apps.NotTextTool()))
        async with connect(create_server(server)) as session:
            listed = dump_tools(await session.list_tools())
        assert listed == [
            {"name": "bare", "description": "", "inputSchema": {"type": "object", "properties": {}}}
        ]

    @pytest.mark.anyio
    async def test_server_info(self):
        """The name, version (default: llm-worker's) and instructions reach the client."""
        server = create_server(ToolServer(), name="tracker", instructions="Use search first.")
        async with connect(server) as session:
            result = session.initialize_result
        assert result is not None
        assert (result.server_info.name, result.server_info.version) == (
            "tracker",
            llm_worker.__version__,
        )
        assert result.instructions == "Use search first."
        assert result.capabilities.tools is not None

    def test_rejects_other_objects(self):
        """Anything but a ToolServer or ToolServerHandle is a TypeError."""
        with pytest.raises(TypeError) as info:
            create_server([mcp_apps.broken_definition])  # type: ignore[arg-type]
        assert str(info.value) == "expected a ToolServer or ToolServerHandle, not list"


class TestCreateHttpApp:
    def test_is_a_starlette_app_at_the_path(self):
        """create_http_app returns a Starlette app with the MCP endpoint at `path`."""
        app = create_http_app(ToolServer(), path="/tools/mcp")
        assert isinstance(app, Starlette)
        assert [route.path for route in app.routes] == ["/tools/mcp"]  # type: ignore[attr-defined]

    @pytest.mark.parametrize("anyio_backend", ["asyncio"])  # uvicorn's loop in a thread
    @pytest.mark.anyio
    async def test_mounted_as_the_docs_show_it_serves(self):
        """docs/mcp.md: mounted in an app of your own whose lifespan enters the mounted
        app's, a client is served (without it, every request failed)."""
        import threading
        import time

        import uvicorn
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client
        from mcp_support import free_port
        from starlette.routing import Mount

        port = free_port()
        tools_app = create_http_app(mcp_apps.factory(), path="/mcp")
        app = Starlette(
            routes=[Mount("/tools", app=tools_app)],
            lifespan=lambda app: tools_app.router.lifespan_context(tools_app),
        )
        config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        try:
            deadline = time.monotonic() + 10
            while not server.started:
                assert time.monotonic() < deadline, "uvicorn did not start"
                await anyio.sleep(0.05)
            with anyio.fail_after(15):
                url = f"http://127.0.0.1:{port}/tools/mcp"
                async with (
                    streamable_http_client(url) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    listed = await session.list_tools()
        finally:
            server.should_exit = True
            thread.join(10)
        assert listed.tools

    def test_path_must_start_with_a_slash(self):
        """A path without a leading slash is a ValueError."""
        with pytest.raises(ValueError, match=r"^path must start with '/', not 'mcp'$"):
            create_http_app(ToolServer(), path="mcp")


class TestServeAsync:
    @pytest.mark.anyio
    async def test_unknown_transport(self):
        """A transport other than stdio and http is a ValueError, raised before serving."""
        with pytest.raises(ValueError, match=r"^transport must be 'stdio' or 'http', not 'sse'$"):
            await serve_async(ToolServer(), transport="sse")  # type: ignore[arg-type]

    def test_http_needs_asyncio(self):
        """Under trio, the http transport (uvicorn) raises RuntimeError instead of serving."""

        async def main() -> None:
            await serve_async(ToolServer(), transport="http", port=0)

        with pytest.raises(RuntimeError, match=r"^the http transport runs on asyncio \(uvicorn\)"):
            anyio.run(main, backend="trio")

    def test_port_in_use(self):
        """A port that cannot be bound raises OSError naming the address, before serving."""
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen(1)
            port = taken.getsockname()[1]

            async def main() -> None:
                await serve_async(ToolServer(), transport="http", port=port)

            with pytest.raises(OSError, match=rf"^cannot listen on 127\.0\.0\.1:{port}: "):
                anyio.run(main, backend="asyncio")


@tool_registry
class Progressing:
    """A served tool that reports its progress through its ToolContext."""

    @tool
    async def crunch(self, ctx: ToolContext, steps: int) -> str:
        """Crunch numbers, reporting each step."""
        for step in range(1, steps + 1):
            ctx.report_progress(step, steps, f"step {step}")
            await anyio.sleep(0.01)
        return f"crunched as request {ctx.call_id}"

    @tool
    async def chunks(self, ctx: ToolContext, steps: int, wait: bool) -> str:
        """Do each chunk, then report it: the last report comes just before the result."""
        for step in range(1, steps + 1):
            if wait:
                await anyio.sleep(0.01)
            ctx.report_progress(step, steps, f"chunk {step} done")
        return "chunked"

    @tool
    async def exits(self, ctx: ToolContext) -> str:
        """Exit the process, as argparse does on bad arguments."""
        raise SystemExit(2)


class TestProgress:
    @pytest.mark.anyio
    @pytest.mark.parametrize("wait", [True, False])
    async def test_the_last_report_comes_before_the_result(self, wait):
        """The latest report is never the one dropped: a tool that reports its last chunk
        and returns, or reports without ever waiting, still tells the client it is done."""
        server = ToolServer()
        server.register_tools(tool_definitions(Progressing()))
        seen: list[tuple[float, float | None, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, total, message))

        with anyio.fail_after(10):
            async with connect(create_server(server)) as session:
                result = await session.call_tool(
                    "chunks", {"steps": 4, "wait": wait}, progress_callback=on_progress
                )
        assert text_of(result) == "chunked"
        assert seen[-1] == (4.0, 4.0, "chunk 4 done")
        if wait:
            assert [p for p, _, _ in seen] == [1.0, 2.0, 3.0, 4.0]

    @pytest.mark.anyio
    async def test_a_report_made_while_the_one_before_is_sent_still_goes(self):
        """The forwarder, given a slow send (a slow client or transport): the call's last
        report, made while the one before it was still being sent, goes before it ends."""
        sent: list[tuple[float, float | None, str | None]] = []

        async def slow_send(progress: float, total: float | None, message: str | None) -> None:
            await anyio.sleep(0.1)
            sent.append((progress, total, message))

        forwarder = _ProgressForwarder(slow_send)
        sink = forwarder.reports.start("c")
        with anyio.fail_after(5):
            async with anyio.create_task_group() as group:
                group.start_soon(forwarder.run)
                sink.report("c", 1, 2, "half")
                await anyio.sleep(0.05)  # the forwarder is sending "half"
                sink.report("c", 2, 2, "done")
                forwarder.returned()
        assert sent == [(1, 2, "half"), (2, 2, "done")]

    @pytest.mark.anyio
    async def test_a_context_tools_system_exit_is_named(self):
        """As for a tool without a context: the exception's own type, never the task
        group's BaseExceptionGroup around it."""
        server = ToolServer()
        server.register_tools(tool_definitions(Progressing()))
        with anyio.fail_after(10):
            async with connect(create_server(server)) as session:
                result = await session.call_tool("exits", {})
        assert result.is_error
        assert text_of(result) == "Internal error: tool 'exits' failed unexpectedly (SystemExit)"

    @pytest.mark.anyio
    async def test_progress_reports_become_notifications(self):
        """A client that sends a progress token gets notifications/progress from a tool's
        report_progress, the last one last; the tool's call id is the request's id."""
        server = ToolServer()
        server.register_tools(tool_definitions(Progressing()))
        seen: list[tuple[float, float | None, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, total, message))

        with anyio.fail_after(10):
            async with connect(create_server(server)) as session:
                result = await session.call_tool(
                    "crunch", {"steps": 3}, progress_callback=on_progress
                )
        assert not result.is_error
        assert text_of(result).startswith("crunched as request ")
        assert seen, "no progress notification arrived"
        assert seen[-1] == (3.0, 3.0, "step 3")
        assert [p for p, _, _ in seen] == sorted(p for p, _, _ in seen)

    @pytest.mark.anyio
    async def test_without_a_token_no_notifications(self):
        """Without a progress token the tool still runs; its reports go nowhere."""
        server = ToolServer()
        server.register_tools(tool_definitions(Progressing()))
        with anyio.fail_after(10):
            async with connect(create_server(server)) as session:
                result = await session.call_tool("crunch", {"steps": 2})
        assert not result.is_error


@tool_registry
class Measures:
    @tool
    async def mean(self, values: list[float]) -> dict[str, float]:
        """The mean of some numbers."""
        return {"mean": sum(values) / len(values)}


class TestStructuredResults:
    @pytest.mark.anyio
    async def test_each_output_schemas_validator_is_built_once(self):
        """Every call checks its structured result against the tool's output schema with
        the validator built at its first call (it was built anew for every call)."""
        from llm_worker.mcp import _content

        server = ToolServer()
        server.register_tools(tool_definitions(Measures()))
        _content._VALIDATORS.clear()
        with anyio.fail_after(10):
            async with connect(create_server(server)) as session:
                results = [await session.call_tool("mean", {"values": [1, 2, n]}) for n in (3, 6)]
        assert [r.structured_content for r in results] == [{"mean": 2.0}, {"mean": 3.0}]
        assert len(_content._VALIDATORS) == 1
