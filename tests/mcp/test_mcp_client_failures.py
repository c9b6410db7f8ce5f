"""The MCP client against odd remote servers: repeated tools, renamed tools, failures and logs.

- A tool listed twice (on one page or across pages) is offered once, as first listed,
  with a warning; the other tools of the server are offered as ever.
- The log line of a renamed tool says why it was renamed; a tool listed under the name
  another would be renamed to takes no tool's name away.
- A remote MCP error or a lost connection is a failed call, logged once at INFO
  without a traceback, not a bug logged at ERROR.
- A result whose structuredContent does not match the tool's outputSchema (or is
  missing) is an ExecutionFailedError saying where, not an "Internal error".
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.server import Server
from mcp_support import GUARD, connect, run_logs, scripted, server_env, warnings_of

from llm_worker import ExecutionFailedError, ToolResult, Worker
from llm_worker.mcp import mcp_tool_definitions

pytestmark = pytest.mark.anyio

OBJECT = {"type": "object"}


def tool(name: str, description: str = "", **fields: Any) -> types.Tool:
    return types.Tool(name=name, description=description, input_schema=OBJECT, **fields)


def paged(*pages: list[types.Tool], results: dict[str, Any] | None = None) -> Server[Any]:
    """A server listing ``pages`` one after the other; its calls answer from ``results``."""

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> Any:
        page = 0 if params is None or params.cursor is None else int(params.cursor)
        more = page + 1 < len(pages)
        return types.ListToolsResult(tools=pages[page], next_cursor=str(page + 1) if more else None)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:
        answer = (results or {})[params.name]
        if isinstance(answer, Exception):
            raise answer
        return answer

    return Server("remote", on_list_tools=list_tools, on_call_tool=call_tool)


class TestRepeatedTools:
    async def test_a_tool_repeated_on_a_later_page_is_offered_once(self, caplog):
        """A name on page 1 and again on page 2: the first listing is kept, a warning names
        the tool, and the server's other tools are all offered."""
        server = paged([tool("a", "first"), tool("c")], [tool("a", "second"), tool("b")])
        with caplog.at_level(logging.INFO, logger="llm_worker.mcp"), anyio.fail_after(GUARD):
            async with connect(server) as session:
                definitions = await mcp_tool_definitions(session)
        assert [(d.meta.name, d.meta.description) for d in definitions] == [
            ("a", "first"),
            ("c", ""),
            ("b", ""),
        ]
        assert warnings_of(caplog) == [
            "MCP server lists tool 'a' more than once: only its first listing is used "
            "(calls of either would go to the same remote tool)"
        ]

    async def test_a_tool_repeated_on_one_page_is_offered_once(self, caplog):
        """The same name twice in one page: one definition, which calls the remote tool."""
        done = types.CallToolResult(content=[types.TextContent(text="done")])
        server = paged([tool("a"), tool("a"), tool("b")], results={"a": done})
        with caplog.at_level(logging.INFO, logger="llm_worker.mcp"), anyio.fail_after(GUARD):
            async with connect(server) as session:
                definitions = await mcp_tool_definitions(session)
                answer = await definitions[0]()[1].execute("{}")
        assert [d.meta.name for d in definitions] == ["a", "b"]
        assert answer == "done"
        assert len(warnings_of(caplog)) == 1


class TestRenameLog:
    async def test_the_log_says_why_a_tool_was_renamed(self, caplog):
        """A name providers refuse says so; one that also got a hash suffix says which name
        another tool has."""
        server = paged([tool("files.read"), tool("files_read"), tool("my tool")])
        with caplog.at_level(logging.INFO, logger="llm_worker.mcp"), anyio.fail_after(GUARD):
            async with connect(server) as session:
                definitions = await mcp_tool_definitions(session)
        renamed = definitions[0].meta.name
        assert renamed.startswith("files_read_")
        assert [r.getMessage() for r in caplog.records if r.name == "llm_worker.mcp"] == [
            f"MCP tool 'files.read' is named '{renamed}' here: providers refuse its name, "
            f"and 'files_read' would clash with another tool's name",
            "MCP tool 'my tool' is named 'my_tool' here: providers refuse its name",
        ]


class TestNamesThatClash:
    async def test_a_tool_named_as_another_would_be_renamed_takes_nothing_away(self, caplog):
        """A server listing files.read, files_read and files.read's hashed name (by accident
        or on purpose): every tool is offered under a distinct valid name, each calling its
        own remote tool, and the renaming is logged."""
        names = ["files.read", "files_read", "files_read_601e4eb6"]
        answers = {n: types.CallToolResult(content=[types.TextContent(text=n)]) for n in names}
        server = paged([tool(name) for name in names], results=answers)
        with caplog.at_level(logging.INFO, logger="llm_worker.mcp"), anyio.fail_after(GUARD):
            async with connect(server) as session:
                definitions = await mcp_tool_definitions(session)
                called = [await d()[1].execute("{}") for d in definitions]
        local = [d.meta.name for d in definitions]
        assert local == ["files_read_71384345", "files_read", "files_read_601e4eb6"]
        assert [d.remote_name for d in definitions] == names
        assert called == names
        assert [r.getMessage() for r in caplog.records if r.name == "llm_worker.mcp"] == [
            "MCP tool 'files.read' is named 'files_read_71384345' here: providers refuse its "
            "name, and 'files_read' would clash with another tool's name"
        ]


# A stdio MCP server that writes its JSON as Python's json.dumps does: float("inf") in a
# schema goes out as Infinity (the SDK's own server would send null). It lists the tools
# of its first argument (JSON text, read as json.loads reads it) and answers calls by name.
RAW_SERVER = """
import json, sys
tools = sys.argv[1]
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if message["method"] == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "raw", "version": "1"}}
    elif message["method"] == "tools/list":
        result = {"tools": json.loads(tools)}
    elif message["method"] == "tools/call":
        text = "called " + message["params"]["name"]
        result = {"content": [{"type": "text", "text": text}]}
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"""


def raw_tool(name: str, properties: str = "{}", output: str | None = None) -> str:
    """A tool of RAW_SERVER's listing, as JSON text (which may hold NaN or Infinity)."""
    tool = f'{{"name": "{name}", "inputSchema": {{"type": "object", "properties": {properties}}}'
    return tool + ("}" if output is None else f', "outputSchema": {output}}}')


class TestSchemasNoModelTakes:
    async def test_a_tool_whose_schema_holds_no_json_number_is_left_out(self, caplog):
        """NaN, 1e400 (read as infinity) or -Infinity in a remote tool's schemas (as a Python
        server writing with json.dumps sends float("inf")): that tool is left out with a
        warning naming it and why (mcp_tool_definitions raised TypeError, and none of the
        server's tools could be used); the others are offered and called; a tool left out
        takes no name from another (files.read is files_read, no hash suffix)."""
        tools = [
            raw_tool("ok"),
            raw_tool("nan_bound", '{"x": {"type": "number", "maximum": NaN}}'),
            raw_tool("files_read", '{"x": {"type": "number", "default": 1e400}}'),
            raw_tool("files.read"),
            raw_tool(
                "result", output='{"type": "object", "properties": {"r": {"minimum": -Infinity}}}'
            ),
        ]
        params = StdioServerParameters(
            command=sys.executable,
            args=["-c", RAW_SERVER, f"[{', '.join(tools)}]"],
            env=server_env(),
        )
        with caplog.at_level(logging.INFO, logger="llm_worker.mcp"), anyio.fail_after(GUARD):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                definitions = await mcp_tool_definitions(session)
                worker = Worker(scripted("ok", "files_read"))
                worker.register_tools(definitions)
                await worker.lock().run("go")
        assert [(d.meta.name, d.remote_name) for d in definitions] == [
            ("ok", "ok"),
            ("files_read", "files.read"),
        ]
        assert [m.content for m in worker.history if isinstance(m, ToolResult)] == [
            "called ok",
            "called files.read",
        ]
        refused = "JSON-serialisable: Out of range float values are not JSON compliant"
        assert warnings_of(caplog) == [
            f"MCP tool 'nan_bound' is not offered: its schema cannot be used "
            f"(ToolMeta input_schema must be {refused})",
            f"MCP tool 'files_read' is not offered: its schema cannot be used "
            f"(ToolMeta input_schema must be {refused})",
            f"MCP tool 'result' is not offered: its schema cannot be used "
            f"(ToolMeta output_schema must be {refused})",
        ]


class TestFailureLogs:
    async def test_an_mcp_error_is_logged_once_without_a_traceback(self, caplog):
        """A remote MCP error response: the model reads it, and it is logged once at INFO as a
        failed call, with no traceback and nothing at ERROR."""
        server = paged([tool("quota")], results={"quota": MCPError(-32001, "quota exceeded")})
        with caplog.at_level(logging.INFO, logger="llm_worker"), anyio.fail_after(GUARD):
            async with connect(server) as session:
                worker = Worker(scripted("quota"))
                worker.register_tools(await mcp_tool_definitions(session))
                await worker.lock().run("go")
        text = "Execution failed: MCP error: quota exceeded"
        assert [m for m in worker.history if isinstance(m, ToolResult)] == [
            ToolResult("c0", text, True)
        ]
        assert run_logs(caplog) == [("INFO", f"Tool 'quota' failed: {text}", False)]

    async def test_a_dead_stdio_server_is_logged_without_tracebacks(self, caplog):
        """The server process dies under a call: that call and the next are failures logged
        at INFO, one line each, with no traceback."""
        script = (
            "import os, anyio, mcp.types as t\n"
            "from mcp.server import Server\n"
            "from mcp.server.stdio import stdio_server\n"
            "async def lt(ctx, p):\n"
            "    die = t.Tool(name='die', input_schema={'type': 'object'})\n"
            "    return t.ListToolsResult(tools=[die])\n"
            "async def ct(ctx, p):\n"
            "    os._exit(3)\n"
            "async def main():\n"
            "    s = Server('dying', on_list_tools=lt, on_call_tool=ct)\n"
            "    async with stdio_server() as (r, w):\n"
            "        await s.run(r, w, s.create_initialization_options())\n"
            "anyio.run(main)\n"
        )
        params = StdioServerParameters(
            command=sys.executable, args=["-c", script], env=server_env()
        )
        with caplog.at_level(logging.INFO, logger="llm_worker"), anyio.fail_after(GUARD):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                worker = Worker(scripted("die", "die"))
                worker.register_tools(await mcp_tool_definitions(session))
                await worker.lock().run("go")
        closed = "Execution failed: MCP error: Connection closed"
        assert run_logs(caplog) == [
            ("INFO", f"Tool 'die' failed: {closed}", False),
            ("INFO", f"Tool 'die' failed: {closed}", False),
        ]


COUNT_SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


class TestOutputSchemaMismatch:
    @pytest.mark.parametrize(
        ("structured", "why"),
        [
            ({"n": "two"}, "at /n: 'two' is not of type 'integer'"),
            (None, "no structuredContent"),
        ],
        ids=["mismatch", "missing"],
    )
    async def test_a_result_its_schema_does_not_describe(self, caplog, structured, why):
        """structuredContent that does not match the outputSchema, or none: an
        ExecutionFailedError saying where, logged at INFO without a traceback."""
        answer = types.CallToolResult(
            content=[types.TextContent(text="{}")], structured_content=structured
        )
        server = paged([tool("count", output_schema=COUNT_SCHEMA)], results={"count": answer})
        with caplog.at_level(logging.INFO, logger="llm_worker"), anyio.fail_after(GUARD):
            async with connect(server) as session:
                worker = Worker(scripted("count"))
                worker.register_tools(await mcp_tool_definitions(session))
                await worker.lock().run("go")
        text = (
            f"Execution failed: MCP tool 'count' returned a result its output schema does not "
            f"describe ({why})"
        )
        assert [m for m in worker.history if isinstance(m, ToolResult)] == [
            ToolResult("c0", text, True)
        ]
        assert run_logs(caplog) == [("INFO", f"Tool 'count' failed: {text}", False)]

    async def test_execute_raises_the_same_error(self):
        """Called directly, the tool raises that ExecutionFailedError."""
        answer = types.CallToolResult(
            content=[types.TextContent(text="{}")], structured_content={"n": "two"}
        )
        server = paged([tool("count", output_schema=COUNT_SCHEMA)], results={"count": answer})
        with anyio.fail_after(GUARD):
            async with connect(server) as session:
                [definition] = await mcp_tool_definitions(session)
                with pytest.raises(ExecutionFailedError) as caught:
                    await definition()[1].execute("{}")
        assert caught.value.message == (
            "MCP tool 'count' returned a result its output schema does not describe "
            "(at /n: 'two' is not of type 'integer')"
        )
