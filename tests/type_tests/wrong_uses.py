"""Wrong uses that mypy --strict and pyright strict must both reject, each on its marked line.

A comment ``# expect: mypy[code] pyright[rule]`` marks the NEXT line: each checker must
report an error there, with (at least) the listed codes. tests/test_typing.py also checks
that no other line of this file gets a diagnostic.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from llm_worker import ToolMeta, ToolServer, tool, tool_registry


@tool_registry
class Shop:
    @tool
    async def search(self, query: str, limit: int = 10) -> str:
        return f"{query} {limit}"

    @tool
    def add(self, a: int, b: int) -> int:
        return a + b


@tool_registry
class Catalog:
    @tool
    def find(
        self, query: Annotated[str, Field(description="what")], limit: int = Field(5, ge=1)
    ) -> str:
        return f"{query} {limit}"


def leave_out_a_required_field() -> None:
    # Field(...) in the annotation, with no default: type checkers know it is required.
    # expect: mypy[call-arg] pyright[reportCallIssue]
    Catalog().find()
    # expect: mypy[arg-type] pyright[reportArgumentType]
    Catalog().find("lamp", limit="five")


def register_through_handle(shop: Shop) -> None:
    handle = ToolServer().handle()
    # expect: mypy[attr-defined] pyright[reportAttributeAccessIssue]
    handle.register_tool(shop.search.definition())
    # expect: mypy[attr-defined] pyright[reportAttributeAccessIssue]
    handle.register_tools([shop.add.definition()])


async def call_with_wrong_arguments(shop: Shop) -> None:
    # expect: mypy[arg-type] pyright[reportArgumentType]
    await shop.search(5)
    # expect: mypy[arg-type] pyright[reportArgumentType]
    await shop.search("cats", limit="ten")
    # expect: mypy[arg-type] pyright[reportArgumentType]
    shop.add(1, "2")
    # expect: mypy[call-arg] pyright[reportCallIssue]
    shop.add(1)
    # expect: mypy[call-arg] pyright[reportCallIssue]
    await shop.search(query="cats", page=2)
    # expect: mypy[arg-type] pyright[reportArgumentType]
    await Shop.search(shop, 5)


def register_non_definitions(shop: Shop) -> None:
    server = ToolServer()
    # expect: mypy[arg-type] pyright[reportArgumentType]
    server.register_tool("search")
    # expect: mypy[arg-type] pyright[reportArgumentType]
    server.register_tool(ToolMeta(name="search"))
    # expect: mypy[arg-type] pyright[reportArgumentType]
    server.register_tool(shop.search)
    # expect: mypy[arg-type] pyright[reportArgumentType]
    server.register_tool(Shop.search.definition)
    # expect: mypy[list-item] pyright[reportArgumentType]
    server.register_tools([shop.search.meta()])


async def misuse_the_core() -> None:
    handle = ToolServer().handle()
    # expect: mypy[arg-type] pyright[reportArgumentType]
    await handle.call_tool("search", {"query": "cats"})
    # expect: mypy[call-arg] pyright[reportCallIssue]
    meta = ToolMeta("search")
    print(meta)


def misspell_a_bound_tool_attribute(shop: Shop) -> None:
    # A bound tool method passes what it lacks on to the function at run time, but to the
    # checkers only its own attributes exist.
    # expect: mypy[attr-defined] pyright[reportAttributeAccessIssue]
    shop.search.defintion()
