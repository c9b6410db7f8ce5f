"""A typical user module: must type-check with zero errors under mypy --strict and pyright strict.

It is also run by tests/test_typing.py, so every line here is real, working usage.
"""

from __future__ import annotations

import threading
from typing import Annotated

import mcp
from pydantic import BaseModel, Field
from typing_extensions import assert_type

from llm_worker import (
    BoundToolMethod,
    Description,
    LlmToolDefinition,
    Tool,
    ToolDefinition,
    ToolError,
    ToolExecutionError,
    ToolMeta,
    ToolMethod,
    ToolServer,
    ToolServerHandle,
    tool,
    tool_definitions,
    tool_metas,
    tool_registry,
)
from llm_worker.mcp import mcp_tool_definitions


class Address(BaseModel):
    street: str
    city: Annotated[str, Field(description="city name")]


class Customer(BaseModel):
    name: str
    addresses: list[Address] = []


@tool_registry
class Shop:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    @tool
    async def search(
        self,
        query: Annotated[str, Description("what to look for")],
        limit: int = 10,
    ) -> str:
        """Search the catalogue."""
        return f"{self.prefix}{query} (limit {limit})"

    @tool
    def add(self, a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @tool(name="register_customer")
    async def enroll(self, customer: Customer) -> dict[str, int]:
        """Enroll a customer."""
        return {customer.name: len(customer.addresses)}


@tool_registry
class Catalog:
    @tool
    def find(
        self,
        query: Annotated[str, Field(description="what to look for")],
        limit: int = Field(5, ge=1),
        tags: list[str] = Field(default_factory=list),  # noqa: B008
    ) -> str:
        """Find items; Field(...) defaults are real values in a direct call too."""
        return f"{query} (limit {limit}, tags {tags})"


class Counter:
    """A hand-written Tool."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0

    async def execute(self, input_json: str) -> str:
        with self._lock:
            n = self.count
            self.count += 1
        return f"count: {n}"


def counter_definition() -> tuple[ToolMeta, Tool]:
    meta = ToolMeta(name="counter", description="Increment", input_schema={"type": "object"})
    return meta, Counter()


async def main() -> list[str]:
    shop = Shop("shop:")

    # Calling the methods directly keeps their signatures.
    assert_type(await shop.search("cats", limit=3), str)
    assert_type(shop.add(1, 2), int)
    assert_type(await shop.enroll(Customer(name="ann")), dict[str, int])
    assert_type(await Shop.search(shop, "dogs"), str)
    bound: BoundToolMethod[[int, int], int] = shop.add
    assert_type(bound(3, 4), int)

    # Definitions, metas and names.
    search_definition: ToolDefinition = shop.search.definition()
    by_class: ToolDefinition = Shop.add.definition(shop)
    meta: ToolMeta = shop.search.meta()
    name: str = Shop.enroll.tool_name
    assert_type(shop.enroll.tool_name, str)  # the bound method's too
    assert_type(shop.enroll.args_model, type[BaseModel])
    metas: list[ToolMeta] = tool_metas(Shop)
    method: ToolMethod[Shop, ..., object] = Shop.search

    # Registering: one by one via app.search.definition(), or all via tool_definitions(app).
    server = ToolServer()
    server.register_tool(search_definition)
    server.register_tools([by_class, counter_definition])
    other = ToolServer()
    other.register_tools(tool_definitions(shop))

    # Using the tools through a handle.
    handle: ToolServerHandle = server.handle()
    entry = handle.get_tool("search")
    if entry is not None:
        entry_meta, entry_tool = entry
        assert_type(entry_meta, ToolMeta)
        assert_type(entry_tool, Tool)
    definitions: list[LlmToolDefinition] = handle.tool_definitions_sorted()
    results = [
        await handle.call_tool("search", '{"query": "cats"}'),
        await handle.call_tool("add", '{"a": 1, "b": 2}'),
        await handle.call_tool("counter", ""),
        await other.handle().call_tool(
            "register_customer", '{"customer": {"name": "bo", "addresses": []}}'
        ),
    ]
    try:
        await handle.call_tool("add", '{"a": "one"}')
    except ToolExecutionError as exc:
        cause = exc.__cause__
        results.append(cause.message if isinstance(cause, ToolError) else exc.detail)

    results += [meta.name, name, str(len(metas)), str(len(definitions)), method.__name__]
    results += [str(len(handle)), bound.__name__]
    results.append(assert_type(Catalog().find("lamp"), str))
    return results


async def mcp_names(session: mcp.ClientSession) -> list[tuple[str, str]]:
    """The local and the server's name of each tool of an MCP server (docs/mcp.md)."""
    definitions = await mcp_tool_definitions(session)
    registered: list[ToolDefinition] = list(definitions)  # each is a ToolDefinition too
    assert len(registered) == len(definitions)
    return [(definition.meta.name, definition.remote_name) for definition in definitions]
