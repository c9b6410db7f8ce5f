"""What a tool's result is checked for so that the run state it enters can be read back: a
``DataPart`` of text that is not JSON, a ``MediaPart`` field of the wrong type, and a
``ToolError`` whose text is a ``str`` subclass with methods of its own."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from pydantic_core import PydanticSerializationError, to_json
from support import calls, hand_written, results_of

from llm_worker import (
    DataPart,
    ExecutionFailedError,
    MediaPart,
    RunState,
    ToolExecutionError,
    ToolResult,
    ToolServer,
    Worker,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker.testing import ScriptedClient

pytestmark = pytest.mark.anyio

DEEP = "[" * 5000 + "]" * 5000  # deeper than json.loads (and so RunState.from_json) reads


def nested(depth: int) -> list[Any]:
    """A list ``depth`` lists deep."""
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


class Makes:
    """A hand-written ``Tool`` returning what ``make`` makes when it runs."""

    def __init__(self, make: Callable[[], object]) -> None:
        self.make = make

    async def execute(self, input_json: str) -> Any:
        return self.make()


@tool_registry
class Reports:
    @tool
    def report(self) -> DataPart:
        """A report whose JSON is broken."""
        return DataPart("{not json")

    @tool
    def ok(self) -> str:
        """Answers."""
        return "ok"


async def run_and_reload(*names: str, extra: list[Any]) -> list[ToolResult]:
    """One response calling each of ``names`` (concurrently), then a final answer: the
    results, after checking the run's state saves and loads."""
    worker = Worker(ScriptedClient([calls(*((name, {}) for name in names)), "Done."]))
    worker.register_tools([*tool_definitions(Reports()), *extra])
    with anyio.fail_after(10):
        await worker.run("go")
    loaded = RunState.from_json(worker.state.to_json())
    assert loaded.history == worker.state.history
    return results_of(worker.history)


class TestDataPartText:
    @pytest.mark.parametrize("text", ["{not json", "", "[1,", "{'a': 1}"])
    def test_text_that_is_not_json_is_refused(self, text: str) -> None:
        with pytest.raises(ValueError, match="DataPart json_text is not JSON"):
            DataPart(text)

    def test_text_deeper_than_a_run_state_reads_is_refused(self) -> None:
        with pytest.raises(ValueError, match="DataPart json_text nests too deep"):
            DataPart(DEEP)

    @pytest.mark.parametrize("text", [b"[1]", 5, None])
    def test_text_that_is_not_a_str_is_refused(self, text: object) -> None:
        with pytest.raises(TypeError, match="DataPart json_text must be a str"):
            DataPart(text)  # type: ignore[arg-type]

    @pytest.mark.parametrize("text", ["[NaN]", " {} ", "[" * 500 + "]" * 500])
    def test_text_a_run_state_reads_is_kept(self, text: str) -> None:
        """What RunState.from_json reads back (json.loads takes NaN) is what it takes."""
        assert DataPart(text).json_text == text

    def test_what_of_writes_is_what_the_constructor_takes(self) -> None:
        """DataPart.of does not parse its text again: that is sound while pydantic writes
        nothing deeper than json.loads reads."""
        for depth in range(1, 400, 7):
            try:
                text = to_json(nested(depth)).decode()
            except PydanticSerializationError:
                break
            assert DataPart.of(nested(depth)) == DataPart(text)
        else:
            pytest.fail("pydantic wrote 400 levels: check DataPart.of's shortcut")

    async def test_a_tool_methods_data_part_that_is_not_json_is_its_error(self) -> None:
        """The call fails, not the loading of a state saved later; the call beside it
        answers."""
        results = await run_and_reload("report", "ok", extra=[])
        assert [(r.is_error, r.parts) for r in results] == [(True, ()), (False, ())]
        assert "DataPart json_text is not JSON" in results[0].content
        assert results[1].content == "ok"

    @pytest.mark.parametrize("text", ["{not json", DEEP])
    async def test_a_hand_written_tools_data_part_that_is_not_json_is_its_error(
        self, text: str
    ) -> None:
        extra = [hand_written("hand", Makes(lambda: DataPart(text)))]
        results = await run_and_reload("hand", "ok", extra=extra)
        assert [(r.content, r.is_error) for r in results] == [
            ("Internal error: tool 'hand' failed unexpectedly (ValueError)", True),
            ("ok", False),
        ]


class TestMediaPartFields:
    @pytest.mark.parametrize(
        ("fields", "message"),
        [
            ({"data": b"x", "name": 5}, "MediaPart name must be a str, not int"),
            ({"data": b"x", "name": b"x"}, "MediaPart name must be a str, not bytes"),
            ({"url": 5}, "MediaPart url must be a str, not int"),
            ({"url": b"http://x/a.png"}, "MediaPart url must be a str, not bytes"),
        ],
    )
    def test_a_field_of_the_wrong_type_is_refused(
        self, fields: dict[str, Any], message: str
    ) -> None:
        with pytest.raises(TypeError, match=message):
            MediaPart("image/png", **fields)

    def test_str_fields_are_kept(self) -> None:
        part = MediaPart("application/pdf", url="https://x/a.pdf", name="a.pdf")
        assert (part.url, part.name) == ("https://x/a.pdf", "a.pdf")

    @pytest.mark.parametrize("name", [5, b"x"])
    async def test_a_tools_media_part_of_the_wrong_type_is_its_error(self, name: Any) -> None:
        extra = [hand_written("hand", Makes(lambda: MediaPart("image/png", data=b"x", name=name)))]
        results = await run_and_reload("hand", "ok", extra=extra)
        assert [(r.content, r.is_error) for r in results] == [
            ("Internal error: tool 'hand' failed unexpectedly (TypeError)", True),
            ("ok", False),
        ]


class HostileText(str):
    """A str subclass whose own methods raise: what capping and encoding text call."""

    def isascii(self) -> bool:
        raise RuntimeError("isascii")

    def encode(self, *args: Any, **kwargs: Any) -> bytes:
        raise RuntimeError("encode")


class HostileTextError(ExecutionFailedError):
    """A ToolError whose ``__str__`` returns a ``HostileText``."""

    def __str__(self) -> str:
        return HostileText("Execution failed: no such row")


def raise_hostile() -> object:
    raise HostileTextError("x")


class TestErrorTextOfAStrSubclass:
    async def test_the_model_reads_it_as_plain_text(self) -> None:
        """The call is its error result, the call beside it answers, the run goes on."""
        extra = [hand_written("hand", Makes(raise_hostile))]
        results = await run_and_reload("hand", "ok", extra=extra)
        assert [(r.content, r.is_error) for r in results] == [
            ("Execution failed: no such row", True),
            ("ok", False),
        ]
        assert type(results[0].content) is str
        assert json.loads(json.dumps(results[0].content)) == results[0].content

    async def test_call_tool_raises_its_error_with_plain_text(self) -> None:
        server = ToolServer()
        server.register_tool(hand_written("hand", Makes(raise_hostile)))
        with anyio.fail_after(10), pytest.raises(ToolExecutionError) as caught:
            await server.handle().call_tool("hand", "{}")
        assert str(caught.value) == "Tool execution failed: Execution failed: no such row"
