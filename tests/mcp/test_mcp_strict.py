"""MCP tools under OpenAI strict mode, and MCP tool names providers refuse.

The server is a low-level SDK server in this process (spoken to over the SDK's
``Client``, JSON-RPC on memory streams) whose tools are listed as the
reference filesystem server lists them, and which validates arguments the
way that server does: a ``null`` for ``head`` is an error there ("Expected
number, received null").
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import jsonschema
import mcp.types as types
import pytest
from mcp.server import Server
from mcp_support import connect

from llm_worker import export_tools
from llm_worker.mcp import McpToolDefinition, mcp_tool_definitions

READ_TEXT_FILE = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "tail": {"type": "number", "description": "If provided, returns only the last N lines"},
        "head": {"type": "number", "description": "If provided, returns only the first N lines"},
    },
    "required": ["path"],
    "additionalProperties": False,
    "$schema": "http://json-schema.org/draft-07/schema#",
}
SEARCH = {  # a null is a real value here: "no cursor"
    "type": "object",
    "properties": {"query": {"type": "string"}, "cursor": {"type": ["string", "null"]}},
    "required": ["query"],
}
NO_ARGUMENTS = {"type": "object"}
LONG_NAME = "read_" + "x" * 295
NAMES = ["read_text_file", "files.read", "files_read", "my tool", "../../etc/passwd", LONG_NAME]


def filesystem(calls: list[tuple[str, dict[str, Any]]]) -> Server[Any]:
    """A server with read_text_file, search and a few tools whose names providers refuse."""
    schemas = {"read_text_file": READ_TEXT_FILE, "search": SEARCH}
    tools = [
        types.Tool(
            name=name, description=f"Tool {name}", input_schema=schemas.get(name, NO_ARGUMENTS)
        )
        for name in [*NAMES, "search"]
    ]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = params.arguments or {}
        calls.append((params.name, arguments))
        schema = schemas.get(params.name, NO_ARGUMENTS)
        errors = [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(arguments)]
        if errors:
            return types.CallToolResult(
                content=[types.TextContent(text="; ".join(errors))], is_error=True
            )
        return types.CallToolResult(content=[types.TextContent(text=f"{params.name} ok")])

    return Server("filesystem", on_list_tools=list_tools, on_call_tool=call_tool)


async def definitions(session: Any) -> dict[str, McpToolDefinition]:
    found = await mcp_tool_definitions(session)
    return {d.remote_name: d for d in found if isinstance(d, McpToolDefinition)}


class TestStrictModeCalls:
    @pytest.mark.anyio
    async def test_the_server_refuses_null(self):
        """The server, like the real one, answers an error for head: null."""
        calls: list[tuple[str, dict[str, Any]]] = []
        with anyio.fail_after(10):
            async with connect(filesystem(calls)) as session:
                result = await session.call_tool("read_text_file", {"path": "/a", "head": None})
        assert result.is_error
        assert "None is not of type 'number'" in result.content[0].text  # type: ignore[union-attr]

    @pytest.mark.anyio
    async def test_introduced_nulls_never_reach_the_server(self):
        """A strict-mode call of read_text_file sends no null the strict schema introduced."""
        calls: list[tuple[str, dict[str, Any]]] = []
        with anyio.fail_after(10):
            async with connect(filesystem(calls)) as session:
                found = await definitions(session)
                definition = found["read_text_file"]
                [exported] = export_tools([definition], "openai", strict=True)
                arguments = {"path": "/a", "head": None, "tail": 3}
                # What a strict-mode model sends is valid against the strict schema...
                jsonschema.validate(arguments, exported["function"]["parameters"])
                _, tool = definition()
                text = await tool.execute(json.dumps(arguments))
        # ... and the server gets the call without the introduced null.
        assert text == "read_text_file ok"
        assert calls == [("read_text_file", {"path": "/a", "tail": 3})]

    @pytest.mark.anyio
    async def test_a_null_the_schema_accepts_is_sent(self):
        """A null the server's schema accepts is a value: it is sent."""
        calls: list[tuple[str, dict[str, Any]]] = []
        with anyio.fail_after(10):
            async with connect(filesystem(calls)) as session:
                _, tool = (await definitions(session))["search"]()
                await tool.execute('{"query": "q", "cursor": null}')
        assert calls == [("search", {"query": "q", "cursor": None})]


class TestNames:
    @pytest.mark.anyio
    async def test_names_providers_refuse_are_renamed_locally(self):
        """Local names follow the provider rule; the server's names are kept for calls."""
        calls: list[tuple[str, dict[str, Any]]] = []
        with anyio.fail_after(10):
            async with connect(filesystem(calls)) as session:
                found = await mcp_tool_definitions(session)
                local = {d.remote_name: d.meta.name for d in found}  # type: ignore[attr-defined]
                renamed = found[1]
                _, tool = renamed()
                await tool.execute("{}")
        hashed_dots = local["files.read"]
        assert local == {
            "read_text_file": "read_text_file",
            "files.read": hashed_dots,
            "files_read": "files_read",
            "my tool": "my_tool",
            "../../etc/passwd": "_etc_passwd",
            LONG_NAME: local[LONG_NAME],
            "search": "search",
        }
        # files.read would be files_read, which another tool is called: it gets a hash.
        assert hashed_dots.startswith("files_read_")
        assert len(hashed_dots) == len("files_read_") + 8
        assert local[LONG_NAME].startswith(LONG_NAME[:55])
        assert len(local[LONG_NAME]) == 64
        assert calls == [("files.read", {})]

    @pytest.mark.anyio
    async def test_the_definitions_export_for_every_provider(self):
        """export_tools takes what mcp_tool_definitions returns, in every format."""
        with anyio.fail_after(10):
            async with connect(filesystem([])) as session:
                found = await mcp_tool_definitions(session)
        for fmt in ("openai", "openai-responses", "anthropic", "gemini", "mcp", "neutral"):
            tools = export_tools(found, fmt)
            assert len(tools) == len(found)
        strict = export_tools(found, "openai", strict=True)
        assert [t["function"]["name"] for t in strict] == [d.meta.name for d in found]  # type: ignore[attr-defined]

    @pytest.mark.anyio
    async def test_a_definition_made_directly_follows_the_rule(self):
        """McpToolDefinition(session, tool) on its own renames a refused name the same way."""
        with anyio.fail_after(10):
            async with connect(filesystem([])) as session:
                tool = types.Tool(name="files.read", input_schema=NO_ARGUMENTS)
                definition = McpToolDefinition(session, tool)
        assert (definition.meta.name, definition.remote_name) == ("files_read", "files.read")

    @pytest.mark.anyio
    async def test_a_prefix_is_part_of_the_name(self):
        """With a prefix the rule applies to the whole local name."""
        with anyio.fail_after(10):
            async with connect(filesystem([])) as session:
                found = await mcp_tool_definitions(session, prefix="fs.")
        names = [d.meta.name for d in found]  # type: ignore[attr-defined]
        assert names[0] == "fs_read_text_file"
        assert all(len(name) <= 64 for name in names)
