"""The tools ``bench_execute.py`` calls, declared the way a user would, and their inputs.

T1 ``ping``       no arguments, async, returns a ``str``
T2 ``add``        ``(a: int, b: int) -> int``, async
T3 ``search``     ``(query, tags, limit=10, filter=None) -> list[Hit]``, async, nested models
T4 ``add_sync``   T2 as a plain ``def``: runs in a worker thread

The bodies do as little as possible, so what is measured is the per-call
machinery around them (validate, call, serialise), not the work of a tool.
"""

from __future__ import annotations

from pydantic import BaseModel

from llm_worker import tool, tool_registry


class Filter(BaseModel):
    field: str
    value: str


class Hit(BaseModel):
    id: int
    title: str
    score: float


_HITS = [Hit(id=i, title=f"hit {i}", score=1.0 / (i + 1)) for i in range(3)]


@tool_registry
class App:
    @tool
    async def ping(self) -> str:
        """Answer 'pong'."""
        return "pong"

    @tool
    async def add(self, a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @tool
    async def search(
        self, query: str, tags: list[str], limit: int = 10, filter: Filter | None = None
    ) -> list[Hit]:
        """Search the index."""
        return _HITS[: min(limit, 2)]

    @tool
    def add_sync(self, a: int, b: int) -> int:
        """Add two integers (plain def: runs in a worker thread)."""
        return a + b


PING_INPUT = "{}"
ADD_INPUT = '{"a": 1, "b": 2}'
ADD_INVALID_INPUT = '{"a": "x", "b": 2}'
SEARCH_INPUT = '{"query": "cats", "tags": ["pets", "animals"], "limit": 5, "filter": {"field": "kind", "value": "cat"}}'  # noqa: E501
