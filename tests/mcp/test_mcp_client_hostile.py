"""The MCP client against servers that send what MCP or JSON Schema does not allow.

- A tool whose inputSchema or outputSchema is no valid JSON Schema (``"type": "strin"``,
  ``"minimum": "zero"``, ``"type": 5``, a ``$ref`` to nothing) is left out with a warning
  naming it and the problem; the server's other tools are offered. An outputSchema made
  invalid after the listing fails the call with a text the model can read, not as a bug.
- A result that is not valid MCP (a content block of no known type, no ``content``) is a
  failed call naming where, logged once at INFO; a listing that is not valid MCP is a
  RuntimeError saying so.
- ``mcp_tool_definitions`` gives up on a server that does not answer ``tools/list`` (or
  whose answer the SDK drops) after ``timeout`` seconds, with a ``TimeoutError``.
- A tool listed twice with different schemas is left out (the SDK would check its results
  against the last listing's outputSchema, the definition having the first's).
- An ``isError`` result with no text says what its ``structuredContent`` says.

The SDK's own server refuses to send what is not valid MCP, so those cases use a raw
stdio server (``RAW_SERVER``) with the SDK's client; the others an SDK server in process.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.server import Server
from mcp_support import GUARD, connect, run_logs, scripted, server_env, warnings_of

from llm_worker import ExecutionFailedError, ToolResult, Worker
from llm_worker.mcp import mcp_tool_definitions

pytestmark = pytest.mark.anyio

OBJECT = {"type": "object"}


def tool(name: str, input_schema: Any = OBJECT, description: str = "", **fields: Any) -> types.Tool:
    return types.Tool(name=name, description=description, input_schema=input_schema, **fields)


def sdk_server(listings: list[list[types.Tool]], answer: types.CallToolResult) -> Server[Any]:
    """An SDK server listing ``listings[0]``, then each next one at each next tools/list
    (the last one from then on); every call answers ``answer``."""
    listed = 0

    async def list_tools(ctx: Any, params: Any) -> Any:
        nonlocal listed
        tools = listings[min(listed, len(listings) - 1)]
        listed += 1
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:
        return answer

    return Server("hostile", on_list_tools=list_tools, on_call_tool=call_tool)


# A stdio MCP server with no SDK: argv[1] is JSON, {"listing": the tools/list result's JSON
# text, "results": {tool name: the tools/call result}}. It sends them as they are.
RAW_SERVER = """
import json, sys
config = json.loads(sys.argv[1])
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    head = '{"jsonrpc": "2.0", "id": ' + json.dumps(message["id"]) + ', "result": '
    if message["method"] == "initialize":
        result = json.dumps({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                             "serverInfo": {"name": "raw", "version": "1"}})
    elif message["method"] == "tools/list":
        result = config["listing"]
    elif message["method"] == "tools/call":
        result = json.dumps(config["results"][message["params"]["name"]])
    else:
        result = "{}"
    print(head + result + "}", flush=True)
"""


def raw_server(listing: str, results: dict[str, Any] | None = None) -> StdioServerParameters:
    config = json.dumps({"listing": listing, "results": results or {}})
    return StdioServerParameters(
        command=sys.executable, args=["-c", RAW_SERVER, config], env=server_env()
    )


def listing_of(*names: str) -> str:
    return json.dumps({"tools": [{"name": name, "inputSchema": OBJECT} for name in names]})


def read_by_model(worker: Worker[Any]) -> list[str]:
    return [str(m.content) for m in worker.history if isinstance(m, ToolResult)]


OK = types.CallToolResult(content=[types.TextContent(text="ok")])


class TestSchemasThatAreNoJsonSchema:
    async def test_a_tool_whose_input_schema_is_no_json_schema_is_left_out(self, caplog):
        """ "type": "strin" or "minimum": "zero" in an inputSchema (which every provider would
        refuse, failing every request of the worker): that tool is left out with a warning
        saying where its schema is wrong; the good one is offered and called."""
        tools = [
            tool("good"),
            tool("typo", {"type": "object", "properties": {"x": {"type": "strin"}}}),
            tool("zero", {"type": "object", "properties": {"y": {"minimum": "zero"}}}),
        ]
        with caplog.at_level(logging.INFO, logger="llm_worker"), anyio.fail_after(GUARD):
            async with connect(sdk_server([tools], OK)) as session:
                definitions = await mcp_tool_definitions(session)
                worker = Worker(scripted("good"))
                worker.register_tools(definitions)
                await worker.lock().run("go")
        assert [d.meta.name for d in definitions] == ["good"]
        assert read_by_model(worker) == ["ok"]
        assert warnings_of(caplog) == [
            "MCP tool 'typo' is not offered: its inputSchema is not a valid JSON Schema "
            "(at /properties/x/type: 'strin' is not valid under any of the given schemas)",
            "MCP tool 'zero' is not offered: its inputSchema is not a valid JSON Schema "
            "(at /properties/y/minimum: 'zero' is not of type 'number')",
        ]

    async def test_a_long_problem_is_cut_short_in_the_warning(self, caplog):
        """The problem quotes the schema's values, which may be long: the warning is cut."""
        long_enum = {"type": "object", "properties": {"x": {"enum": "v" * 5000}}}
        with caplog.at_level(logging.WARNING, logger="llm_worker"), anyio.fail_after(GUARD):
            async with connect(sdk_server([[tool("long", long_enum)]], OK)) as session:
                assert await mcp_tool_definitions(session) == []
        [warning] = warnings_of(caplog)
        assert warning.startswith("MCP tool 'long' is not offered: its inputSchema is not a")
        assert len(warning) < 400
        assert warning.endswith("…)")

    async def test_a_tool_whose_output_schema_is_no_json_schema_is_left_out(self, caplog):
        """ "type": 5 or a $ref to nothing in an outputSchema (every call of it would fail in
        the SDK's check of the result, as an "Internal error"): left out with a warning; a
        tool whose $ref resolves is offered and its result checked."""
        good = {
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/count"}},
            "$defs": {"count": {"type": "integer"}},
        }
        tools = [
            tool("typed_5", output_schema={"type": "object", "properties": {"a": {"type": 5}}}),
            tool("nowhere", output_schema={"type": "object", "properties": {"a": {"$ref": "#/x"}}}),
            tool("good", output_schema=good),
        ]
        answer = types.CallToolResult(
            content=[types.TextContent(text='{"a": 1}')], structured_content={"a": 1}
        )
        with caplog.at_level(logging.INFO, logger="llm_worker"), anyio.fail_after(GUARD):
            async with connect(sdk_server([tools], answer)) as session:
                definitions = await mcp_tool_definitions(session)
                worker = Worker(scripted("good"))
                worker.register_tools(definitions)
                await worker.lock().run("go")
        assert [d.meta.name for d in definitions] == ["good"]
        assert read_by_model(worker) == ['{"a": 1}']
        assert warnings_of(caplog) == [
            "MCP tool 'typed_5' is not offered: its outputSchema is not a valid JSON Schema "
            "(at /properties/a/type: 5 is not valid under any of the given schemas)",
            "MCP tool 'nowhere' is not offered: its outputSchema is not a valid JSON Schema "
            "(its $ref '#/x' points to nothing)",
        ]

    async def test_an_output_schema_made_invalid_after_the_listing_fails_the_call(self, caplog):
        """The server lists a valid outputSchema, then (listed again) one with "type": 5: the
        call fails with a text the model can act on, logged once at INFO, with no traceback
        and nothing at ERROR."""
        valid = {"type": "object", "properties": {"a": {"type": "integer"}}}
        invalid = {"type": "object", "properties": {"a": {"type": 5}}}
        server = sdk_server(
            [[tool("x", output_schema=valid)], [tool("x", output_schema=invalid)]],
            types.CallToolResult(content=[], structured_content={"a": 1}),
        )
        with caplog.at_level(logging.INFO, logger="llm_worker"), anyio.fail_after(GUARD):
            async with connect(server) as session:
                definitions = await mcp_tool_definitions(session)
                await session.list_tools()  # the SDK now checks results against `invalid`
                worker = Worker(scripted("x"))
                worker.register_tools(definitions)
                await worker.lock().run("go")
        text = (
            "Execution failed: MCP tool 'x' has an output schema that is not a valid JSON "
            "Schema, so its results cannot be checked"
        )
        assert read_by_model(worker) == [text]
        assert run_logs(caplog) == [("INFO", f"Tool 'x' failed: {text}", False)]


class TestResultsThatAreNotMcp:
    async def test_a_result_that_is_not_valid_mcp_is_a_failed_call(self, caplog):
        """A content block of no known type, or no "content" at all: the model reads that the
        server's result is not valid MCP and where; each is logged once at INFO."""
        results = {"weird": {"content": [{"type": "weird", "foo": 1}]}, "empty": {}}
        params = raw_server(listing_of("weird", "empty"), results)
        with caplog.at_level(logging.INFO, logger="llm_worker"), anyio.fail_after(GUARD):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                worker = Worker(scripted("weird", "empty"))
                worker.register_tools(await mcp_tool_definitions(session))
                await worker.lock().run("go")
        texts = [
            "Execution failed: MCP tool 'weird' sent a result that is not valid MCP: at "
            "/content/0/TextContent/text: Field required (and 12 more errors)",
            "Execution failed: MCP tool 'empty' sent a result that is not valid MCP: at "
            "/content: Field required",
        ]
        assert read_by_model(worker) == texts
        assert run_logs(caplog) == [
            ("INFO", f"Tool '{name}' failed: {text}", False)
            for name, text in zip(["weird", "empty"], texts, strict=True)
        ]

    async def test_a_listing_that_is_not_valid_mcp_is_a_clear_error(self):
        """One tool with a root inputSchema of "type": "string" makes the SDK refuse the
        whole tools/list: a RuntimeError says the listing is not valid MCP, and where."""
        listing = json.dumps(
            {
                "tools": [
                    {"name": "ok", "inputSchema": OBJECT},
                    {"name": "s", "inputSchema": {"type": "string"}},
                ]
            }
        )
        with anyio.fail_after(GUARD):
            async with (
                stdio_client(raw_server(listing)) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                with pytest.raises(RuntimeError) as info:
                    await mcp_tool_definitions(session)
        assert str(info.value) == (
            "the MCP server's tools/list is not valid MCP: at /tools/1/inputSchema/type: "
            "Input should be 'object'"
        )


class TestListingTimeout:
    async def test_a_server_that_never_answers_the_listing_is_a_timeout_error(self):
        """tools/list never answered: TimeoutError after `timeout` seconds, naming what did
        not answer and how long it was waited for."""
        never = anyio.Event()

        async def list_tools(ctx: Any, params: Any) -> Any:
            await never.wait()

        server = Server("silent", on_list_tools=list_tools)
        with anyio.fail_after(GUARD):
            async with connect(server) as session:
                with pytest.raises(TimeoutError) as info:
                    await mcp_tool_definitions(session, timeout=0.2)
        assert str(info.value) == "the MCP server did not answer tools/list within 0.2 s"

    async def test_an_entered_client_is_bounded_too(self):
        """An mcp.Client in place of its session: the same TimeoutError."""
        never = anyio.Event()

        async def list_tools(ctx: Any, params: Any) -> Any:
            await never.wait()

        with anyio.fail_after(GUARD):
            async with Client(Server("silent", on_list_tools=list_tools), mode="legacy") as client:
                with pytest.raises(TimeoutError, match=r"^the MCP server did not answer"):
                    await mcp_tool_definitions(client, timeout=0.2)

    async def test_a_later_page_has_its_own_timeout(self):
        """Each page is waited for `timeout` seconds: a second page never answered says so."""
        never = anyio.Event()

        async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> Any:
            if params is None or params.cursor is None:
                return types.ListToolsResult(tools=[tool("a")], next_cursor="2")
            await never.wait()

        server = Server("slow", on_list_tools=list_tools)
        with anyio.fail_after(GUARD):
            async with connect(server) as session:
                with pytest.raises(TimeoutError) as info:
                    await mcp_tool_definitions(session, timeout=0.2)
        assert str(info.value) == "the MCP server did not answer tools/list (page 2) within 0.2 s"

    async def test_an_answer_the_sdk_drops_is_a_timeout_error(self):
        """A listing nested too deeply for the SDK's JSON reader is dropped (logged by the
        SDK), never answered: the TimeoutError comes, instead of a wait for ever."""
        deep: dict[str, Any] = {"type": "string"}
        for _ in range(150):
            deep = {"type": "object", "properties": {"a": deep}}
        listing = json.dumps({"tools": [{"name": "deep", "inputSchema": deep}]})
        with anyio.fail_after(GUARD):
            async with (
                stdio_client(raw_server(listing)) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                with pytest.raises(TimeoutError, match=r"within 0\.5 s$"):
                    await mcp_tool_definitions(session, timeout=0.5)

    async def test_no_timeout_waits_as_long_as_the_server_takes(self):
        """timeout=None waits for the answer, however long."""

        async def list_tools(ctx: Any, params: Any) -> Any:
            await anyio.sleep(0.3)
            return types.ListToolsResult(tools=[tool("late")])

        with anyio.fail_after(GUARD):
            async with connect(Server("late", on_list_tools=list_tools)) as session:
                definitions = await mcp_tool_definitions(session, timeout=None)
        assert [d.meta.name for d in definitions] == ["late"]

    @pytest.mark.parametrize(
        ("timeout", "error", "message"),
        [
            ("60", TypeError, "timeout must be a number of seconds or None, not str"),
            (True, TypeError, "timeout must be a number of seconds or None, not bool"),
            (0, ValueError, "timeout must be a positive number of seconds, not 0"),
            (float("nan"), ValueError, "timeout must be a positive number of seconds, not nan"),
        ],
    )
    async def test_a_timeout_that_is_no_time_is_refused(self, timeout, error, message):
        with anyio.fail_after(GUARD):
            async with connect(sdk_server([[tool("a")]], OK)) as session:
                with pytest.raises(error) as info:
                    await mcp_tool_definitions(session, timeout=timeout)
        assert str(info.value) == message


class TestToolsListedTwice:
    async def test_a_tool_listed_again_with_another_output_schema_is_left_out(self, caplog):
        """First listed without an outputSchema, then with one: the SDK checks results against
        the last, the definition would say none. The tool is left out with a warning; the
        other tools are offered."""
        schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
        tools = [tool("a"), tool("b"), tool("a", output_schema=schema)]
        with caplog.at_level(logging.WARNING, logger="llm_worker"), anyio.fail_after(GUARD):
            async with connect(sdk_server([tools], OK)) as session:
                definitions = await mcp_tool_definitions(session)
        assert [d.meta.name for d in definitions] == ["b"]
        assert warnings_of(caplog) == [
            "MCP tool 'a' is not offered: the server lists it more than once with different "
            "outputSchemas, and which one holds is unknown"
        ]

    async def test_a_tool_listed_again_with_another_input_schema_is_left_out(self, caplog):
        """Two inputSchemas for one name: which one the server checks is unknown."""
        other = {"type": "object", "properties": {"x": {"type": "string"}}}
        tools = [tool("a"), tool("a", other), tool("a")]
        with caplog.at_level(logging.WARNING, logger="llm_worker"), anyio.fail_after(GUARD):
            async with connect(sdk_server([tools], OK)) as session:
                assert await mcp_tool_definitions(session) == []
        assert warnings_of(caplog) == [
            "MCP tool 'a' is not offered: the server lists it more than once with different "
            "inputSchemas, and which one holds is unknown"
        ]

    async def test_a_tool_listed_again_as_it_was_is_offered(self, caplog):
        """The same schemas (keys in another order, another description): offered once."""
        first = {"type": "object", "properties": {"x": {"type": "string"}}}
        again = {"properties": {"x": {"type": "string"}}, "type": "object"}
        tools = [tool("a", first), tool("a", again, description="again")]
        with caplog.at_level(logging.WARNING, logger="llm_worker"), anyio.fail_after(GUARD):
            async with connect(sdk_server([tools], OK)) as session:
                definitions = await mcp_tool_definitions(session)
                answer = await definitions[0]()[1].execute("{}")
        assert [d.meta.name for d in definitions] == ["a"]
        assert answer == "ok"
        assert warnings_of(caplog) == [
            "MCP server lists tool 'a' more than once: only its first listing is used "
            "(calls of either would go to the same remote tool)"
        ]


class TestErrorsWithoutText:
    async def test_an_error_told_only_in_structured_content_reaches_the_model(self):
        """isError with no text block but structuredContent: the model reads its JSON."""
        answer = types.CallToolResult(
            content=[], structured_content={"error": "quota exceeded"}, is_error=True
        )
        with anyio.fail_after(GUARD):
            async with connect(sdk_server([[tool("q")]], answer)) as session:
                (definition,) = await mcp_tool_definitions(session)
                with pytest.raises(ExecutionFailedError) as info:
                    await definition()[1].execute("{}")
        assert str(info.value) == 'Execution failed: {"error":"quota exceeded"}'

    async def test_a_long_structured_error_is_capped_as_a_text_is(self):
        """Its JSON is cut to an error text's 500 characters, as the server's text would be."""
        answer = types.CallToolResult(
            content=[], structured_content={"error": "x" * 5000}, is_error=True
        )
        with anyio.fail_after(GUARD):
            async with connect(sdk_server([[tool("q")]], answer)) as session:
                (definition,) = await mcp_tool_definitions(session)
                with pytest.raises(ExecutionFailedError) as info:
                    await definition()[1].execute("{}")
        assert info.value.message.startswith('{"error":"xxx')
        assert len(info.value.message) <= 500

    async def test_an_error_with_neither_says_it_has_no_message(self):
        """No text and no structuredContent: the words as before."""
        answer = types.CallToolResult(content=[], is_error=True)
        with anyio.fail_after(GUARD):
            async with connect(sdk_server([[tool("q")]], answer)) as session:
                (definition,) = await mcp_tool_definitions(session)
                with pytest.raises(ExecutionFailedError) as info:
                    await definition()[1].execute("{}")
        assert info.value.message == "MCP tool 'q' reported an error (no message)"
