"""What a result's plain containers hold, looked at before it is serialised
(``_codegen/runtime.py``: ``_inside``, ``_scan``; ``_server.json_metadata``): an iterator in
them is refused before anything reads it, a content part too (its media would be base64
text), and ordinary results are what they were."""

from __future__ import annotations

import collections
import dataclasses
import datetime
import itertools
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
import pytest
from pydantic import BaseModel
from support import calls, results_of

from llm_worker import (
    DataPart,
    InternalToolError,
    Limits,
    MediaPart,
    TextPart,
    ToolExecutionError,
    ToolMeta,
    ToolReturn,
    ToolServer,
    Worker,
    WorkerResult,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker._server import json_metadata
from llm_worker.testing import ScriptedClient

pytestmark = pytest.mark.anyio

PNG = b"\x89PNG\r\n\x1a\n" + b"secret pixels" * 20


class Endless:
    """An iterator that would never end, and fails the test if it is read at all (an endless
    one, read, would take the test process's memory before any timeout could fire)."""

    def __iter__(self) -> Iterator[int]:
        return self

    def __next__(self) -> int:
        raise AssertionError("an iterator in a result was read")


async def _numbers() -> AsyncIterator[int]:
    yield 1


def _deep(levels: int, inner: object) -> list[object]:
    value: list[object] = [inner]
    for _ in range(levels - 1):
        value = [value]
    return value


def _cyclic() -> list[object]:
    value: list[object] = [1]
    value.append(value)
    value.append({"rows": Endless()})
    return value


# (what the tool returns, the refused value's type, where it is)
NESTED_ITERATORS: list[tuple[Callable[[], object], str, str]] = [
    (lambda: {"rows": map(str, Endless())}, "map", "['rows']"),
    (lambda: {"rows": itertools.islice(Endless(), None)}, "islice", "['rows']"),
    (lambda: [1, (i for i in Endless())], "generator", "[1]"),
    (lambda: (1, 2, Endless()), "Endless", "[2]"),
    (lambda: {"a": [{"b": ({"c": Endless()},)}]}, "Endless", "['a'][0]['b'][0]['c']"),
    (lambda: {"feed": _numbers()}, "async_generator", "['feed']"),
    (lambda: {"ids": {1, 2, (i for i in ())}}, "generator", "['ids']{…}"),
    (lambda: {"queue": collections.deque([Endless()])}, "Endless", "['queue'][0]"),
    (lambda: collections.OrderedDict(rows=Endless()), "Endless", "['rows']"),
    (lambda: {7: Endless()}, "Endless", "[7]"),
    (lambda: _deep(200, Endless()), "Endless", "…" + "[0]" * 66),  # the last 200 characters
    (_cyclic, "Endless", "[2]['rows']"),
]


@tool_registry
class Feeds:
    """Tools returning what ``returned`` is set to."""

    def __init__(self, returned: Callable[[], object]) -> None:
        self.returned = returned

    @tool(timeout=1)
    async def feed(self) -> object:
        """Return the value, from an async def."""
        return self.returned()

    @tool(timeout=1)
    def feed_in_thread(self) -> object:
        """Return the value, from a plain def (in a thread)."""
        return self.returned()

    @tool(thread=False)
    def feed_inline(self) -> object:
        """Return the value, from a plain def on the event loop."""
        return self.returned()


async def _run(returned: Callable[[], object], name: str = "feed", **limits: Any) -> Any:
    worker = Worker(ScriptedClient([calls((name, {})), "done"]), limits=Limits(**limits))
    worker.register_tools(tool_definitions(Feeds(returned)))
    with anyio.fail_after(10):
        assert await worker.run("go") is WorkerResult.FINISHED
    (result,) = results_of(worker.history)
    return result


class TestNestedIterators:
    @pytest.mark.parametrize("name", ["feed", "feed_in_thread", "feed_inline"])
    @pytest.mark.parametrize(("returned", "kind", "where"), NESTED_ITERATORS)
    async def test_an_iterator_inside_a_result_is_refused_before_it_is_read(
        self, name: str, returned: Callable[[], object], kind: str, where: str
    ) -> None:
        """An endless iterator in a dict or list of the result would be read by pydantic until
        the process ran out of memory, where no timeout interrupts it: refused, unread."""
        result = await _run(returned, name)
        assert result.is_error
        assert result.content == (
            f"Internal error: tool '{name}' returned an iterator ({kind} at {where}), not a "
            f"result; return a list"
        )

    async def test_the_call_ends_as_soon_as_it_returns(self) -> None:
        """Nothing reads it: the call takes no time, far from its 1 s timeout."""
        started = anyio.current_time()
        await _run(lambda: {"rows": map(str, Endless())})
        assert anyio.current_time() - started < 0.5

    def test_the_walk_is_bounded_by_the_containers_not_the_paths_to_them(self) -> None:
        """One list shared at 60 levels is 2**60 paths, and 60 lists: each looked into once.
        In a child process capped at 1.5 GB and 60 s: were each path walked (or the value
        serialised), it would never end."""
        code = textwrap.dedent(
            """
            import resource, sys
            resource.setrlimit(resource.RLIMIT_AS, (1_500_000_000, 1_500_000_000))
            import anyio
            from llm_worker import tool, tool_registry

            value = [map(str, ())]
            for _ in range(60):
                value = [value, value]

            @tool_registry
            class Feed:
                @tool
                async def feed(self) -> object:
                    return value

            async def main():
                try:
                    await Feed.ToolFeed(Feed()).execute("{}")
                except Exception as exc:
                    print(exc)

            anyio.run(main)
            """
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
        )
        assert done.stdout.startswith(
            "Internal error: tool 'feed' returned an iterator (map at [0]"
        )

    async def test_a_generated_tool_refuses_it_when_called_directly(self) -> None:
        """The refusal is the tool's (``execute``): call_tool() and MCP serving see it too."""
        tool_class = Feeds.ToolFeed  # type: ignore[attr-defined]
        with pytest.raises(InternalToolError, match=r"returned an iterator \(map at \['rows'\]\)"):
            await tool_class(Feeds(lambda: {"rows": map(str, [1])})).execute("{}")

    async def test_deeper_than_pydantic_writes_is_not_looked_into(self) -> None:
        """Past 254 levels pydantic refuses to write anything: what is there is never read,
        so it is not looked for (the result is its repr(), as before)."""
        result = await _run(lambda: _deep(300, Endless()))
        assert not result.is_error
        assert result.content.startswith("[[[[")


class TestNestedParts:
    @pytest.mark.parametrize(
        ("returned", "kind", "where"),
        [
            (
                lambda: {"caption": "sales", "image": MediaPart("image/png", data=PNG)},
                "MediaPart",
                "['image']",
            ),
            (lambda: [1, MediaPart("image/png", data=PNG)], "MediaPart", "[1]"),
            (
                lambda: {"parts": [TextPart("a"), MediaPart("image/png", data=PNG)]},
                "TextPart",
                "['parts'][0]",
            ),
            (lambda: {"data": DataPart.of({"a": 1})}, "DataPart", "['data']"),
            (lambda: [ToolReturn([MediaPart("image/png", data=PNG)])], "ToolReturn", "[0]"),
        ],
    )
    async def test_a_part_inside_a_result_is_refused_not_sent_as_base64(
        self, returned: Callable[[], object], kind: str, where: str
    ) -> None:
        """As JSON, a media part's bytes would reach the model as base64 text, past
        max_media_bytes (here 0): refused, naming where it is."""
        result = await _run(returned, max_media_bytes=0)
        assert result.is_error
        assert result.parts == ()
        assert result.content == (
            f"Internal error: tool 'feed' returned a content part ({kind}) inside its result, "
            f"at {where}; return parts as the result itself (a part, a list of parts only, "
            f"or a ToolReturn), and other values in a DataPart"
        )
        assert "c2VjcmV0" not in result.content  # b"secret" in base64

    async def test_parts_as_the_result_itself_are_still_a_rich_result(self) -> None:
        result = await _run(lambda: [TextPart("chart:"), MediaPart("image/png", data=PNG)])
        assert not result.is_error
        assert result.parts == (TextPart("chart:"), MediaPart("image/png", data=PNG))


@dataclasses.dataclass
class Point:
    x: int
    y: int


class User(BaseModel):
    id: int
    name: str


class TestOrdinaryResults:
    @pytest.mark.parametrize(
        ("returned", "text"),
        [
            (
                {"a": 1, "b": "x", "c": 2.5, "d": None, "e": True},
                '{"a":1,"b":"x","c":2.5,"d":null,"e":true}',
            ),
            (
                [{"id": 1, "tags": ["a"], "meta": {"k": (1, 2)}}],
                '[{"id":1,"tags":["a"],"meta":{"k":[1,2]}}]',
            ),
            (
                {"at": datetime.date(2024, 5, 1), "where": Point(3, 4)},
                '{"at":"2024-05-01","where":{"x":3,"y":4}}',
            ),
            (
                [User(id=1, name="Ada"), User(id=2, name="Alan")],
                '[{"id":1,"name":"Ada"},{"id":2,"name":"Alan"}]',
            ),
            ({"ids": frozenset([3])}, '{"ids":[3]}'),
            (collections.deque([1, [2]]), "[1,[2]]"),
            ({"text": "count() map() iter"}, '{"text":"count() map() iter"}'),
            ({"nan": float("nan")}, '{"nan":"NaN"}'),
            ({"k\udcff": ["x"]}, '{"k\ufffd":["x"]}'),
        ],
    )
    async def test_results_without_iterators_or_parts_are_what_they_were(
        self, returned: object, text: str
    ) -> None:
        result = await _run(lambda: returned)
        assert not result.is_error
        assert result.content == text

    async def test_a_shared_list_is_written_each_time_it_appears(self) -> None:
        shared = [1, 2]
        result = await _run(lambda: {"a": shared, "b": [shared, shared]})
        assert result.content == '{"a":[1,2],"b":[[1,2],[1,2]]}'


class TestMetadata:
    async def test_an_iterator_in_metadata_is_refused_before_it_is_read(self) -> None:
        """Metadata is made JSON data for the run state; an iterator in it would be read
        forever: the result is the "cannot be sent" error instead."""
        result = await _run(lambda: ToolReturn("ok", metadata={"rows": Endless()}))
        assert result.is_error
        assert result.content == (
            "Internal error: tool 'feed' returned a ToolReturn that cannot be sent "
            "(TypeError), not text"
        )

    async def test_metadata_that_is_an_iterator_is_refused_before_it_is_read(self) -> None:
        """Not only one inside: metadata that is itself an endless iterator."""
        result = await _run(lambda: ToolReturn("ok", metadata=Endless()))
        assert result.is_error
        assert "ToolReturn that cannot be sent (TypeError)" in result.content
        with pytest.raises(TypeError, match=r"it is an iterator \(Endless\)"):
            json_metadata(Endless())

    async def test_call_tool_refuses_it_the_same(self) -> None:
        class HandWritten:
            async def execute(self, input_json: str) -> object:
                return ToolReturn("ok", metadata=[{"rows": map(str, Endless())}])

        server = ToolServer()
        server.register_tool(lambda: (ToolMeta(name="feed"), HandWritten()))  # type: ignore[arg-type, return-value]
        with anyio.fail_after(10), pytest.raises(ToolExecutionError) as info:
            await server.handle().call_tool("feed", "{}")
        cause = info.value.__cause__
        assert isinstance(cause, TypeError)
        assert str(cause) == (
            "a ToolReturn's metadata must be JSON data: it holds an iterator (map at [0]['rows']), "
            "which serialising would read, forever if it is endless; give a list"
        )

    def test_parts_in_metadata_are_the_application_s_and_not_refused(self) -> None:
        """Metadata never reaches the model: a part in it is not looked for."""
        assert json_metadata({"note": TextPart("x"), "rows": [1, 2]}) == {
            "note": {"text": "x"},
            "rows": [1, 2],
        }

    async def test_ordinary_metadata_is_kept(self) -> None:
        result = await _run(lambda: ToolReturn("ok", metadata={"rows": [1, 2], "at": "now"}))
        assert not result.is_error
        assert result.metadata == {"rows": [1, 2], "at": "now"}
