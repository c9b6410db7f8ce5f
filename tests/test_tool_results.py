"""Running one tool call (``_execution.py``, ``_server.py``): what a tool's own objects can do to
the run, metadata the run state could not keep, the result cap's cost, media notes and counts,
a ``ToolError`` given an exception, and what registration says of a bad factory."""

from __future__ import annotations

import itertools
import logging
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import pytest
from support import Raises, Returns, calls, hand_written, results_of

from llm_worker import (
    ExecutionFailedError,
    InvalidArgumentError,
    Limits,
    MediaPart,
    RunState,
    TextPart,
    ToolError,
    ToolExecutionError,
    ToolMeta,
    ToolResult,
    ToolReturn,
    ToolServer,
    Worker,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker._execution import MAX_MEDIA_PARTS, valid_text
from llm_worker.testing import ScriptedClient

pytestmark = pytest.mark.anyio


class BrokenTextError(ExecutionFailedError):
    """A user's error that renders its text lazily, and has a bug there."""

    def __str__(self) -> str:
        raise AttributeError("no template")


class Proxy:
    """What a lazy proxy whose target cannot be made is: even its ``__class__`` raises."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # type: ignore[override]
        raise ConnectionError("db unreachable")


@tool_registry
class App:
    @tool
    async def broken(self) -> str:
        """Raises an error whose text cannot be made."""
        raise BrokenTextError("x")

    @tool
    async def ok(self) -> str:
        """Answers."""
        return "ok"

    @tool
    async def nan_metadata(self) -> ToolReturn:
        """Metadata JSON has no number for."""
        return ToolReturn("t", metadata={"score": float("nan")})

    @tool
    async def lookup(self, key: str) -> str:
        """Wraps the KeyError itself, not its text."""
        try:
            return {"a": "1"}[key]
        except KeyError as exc:
            raise ExecutionFailedError(exc) from exc  # type: ignore[arg-type]


async def run_calls(
    *names: str, limits: Limits | None = None, extra: list[Any] | None = None
) -> tuple[Worker, list[ToolResult]]:
    """One response calling each of ``names`` (concurrently), then a final answer."""
    client = ScriptedClient([calls(*((name, {}) for name in names)), "Done."])
    worker = Worker(client) if limits is None else Worker(client, limits=limits)
    worker.register_tools([*tool_definitions(App()), *(extra or [])])
    with anyio.fail_after(10):
        await worker.run("go")
    return worker, results_of(worker.history)


class TestToolsOwnObjects:
    async def test_an_error_whose_text_cannot_be_made_is_one_error_result(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A ToolError whose __str__ raises is that call's error result, logged; the call
        beside it still answers."""
        with caplog.at_level(logging.ERROR, logger="llm_worker"):
            _, results = await run_calls("broken", "ok")
        assert [(r.content, r.is_error) for r in results] == [
            ("Internal error: tool 'broken' failed unexpectedly (BrokenTextError)", True),
            ("ok", False),
        ]
        assert any("'broken'" in record.getMessage() for record in caplog.records)

    async def test_a_hand_written_tools_error_whose_text_cannot_be_made_is_one_error_result(
        self,
    ) -> None:
        """The same from a hand-written tool."""
        extra = [hand_written("hand", Raises(BrokenTextError("x")))]
        _, results = await run_calls("hand", "ok", extra=extra)
        assert [r.content for r in results] == [
            "Internal error: tool 'hand' failed unexpectedly (BrokenTextError)",
            "ok",
        ]

    async def test_call_tool_raises_tool_execution_error_for_such_an_error(self) -> None:
        """call_tool raises its documented ToolExecutionError, chained to the tool's error."""
        server = ToolServer()
        server.register_tools(tool_definitions(App()))
        with pytest.raises(ToolExecutionError) as caught:
            await server.handle().call_tool("broken", "{}")
        assert str(caught.value) == (
            "Tool execution failed: Internal error: tool 'broken' failed unexpectedly "
            "(BrokenTextError)"
        )
        assert isinstance(caught.value.__cause__, BrokenTextError)

    async def test_a_result_whose_class_raises_is_one_error_result(self) -> None:
        """A hand-written tool's result that raises when looked at is that call's error
        result; the call beside it still answers."""
        _, results = await run_calls("hand", "ok", extra=[hand_written("hand", Returns(Proxy()))])
        assert [(r.content, r.is_error) for r in results] == [
            ("Internal error: tool 'hand' failed unexpectedly (ConnectionError)", True),
            ("ok", False),
        ]


UNSENDABLE = "Internal error: tool '{}' returned a ToolReturn that cannot be sent ({}), not text"


class TestMetadata:
    @pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
    async def test_metadata_with_a_non_finite_number_cannot_be_sent(self, value: float) -> None:
        """NaN or an infinity in metadata is a ToolReturn that cannot be sent, and the run
        state stays JSON."""
        returned = ToolReturn("t", metadata={"score": [value]})
        worker, results = await run_calls("hand", extra=[hand_written("hand", Returns(returned))])
        assert [(r.content, r.is_error) for r in results] == [
            (UNSENDABLE.format("hand", "ValueError"), True)
        ]
        RunState.from_json(worker.state.to_json())

    async def test_a_tool_methods_non_finite_metadata_cannot_be_sent(self) -> None:
        """The same from a @tool method."""
        worker, results = await run_calls("nan_metadata")
        assert results[0].content == UNSENDABLE.format("nan_metadata", "ValueError")
        RunState.from_json(worker.state.to_json())

    @pytest.mark.parametrize(
        ("metadata", "error"),
        [({"score": float("nan")}, "ValueError"), (object(), "PydanticSerializationError")],
    )
    async def test_call_tool_refuses_the_metadata_the_worker_refuses(
        self, metadata: object, error: str
    ) -> None:
        """call_tool raises ToolExecutionError for what the Worker makes an error result."""
        server = ToolServer()
        server.register_tool(hand_written("hand", Returns(ToolReturn("t", metadata=metadata))))
        with pytest.raises(ToolExecutionError) as caught:
            await server.handle().call_tool("hand", "{}")
        assert caught.value.detail == UNSENDABLE.format("hand", error)

    async def test_call_tool_gives_the_text_of_a_return_with_json_metadata(self) -> None:
        """Metadata that is JSON does not change what call_tool returns."""
        server = ToolServer()
        server.register_tool(hand_written("hand", Returns(ToolReturn("t", metadata={"a": 1}))))
        assert await server.handle().call_tool("hand", "{}") == "t"


def traced_peak(function: Any, *args: Any) -> tuple[Any, int]:
    """What ``function(*args)`` returns, and the most memory it held at once, in bytes."""
    tracemalloc.start()
    try:
        result = function(*args)
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


class TestResultCap:
    def test_capping_encodes_only_what_is_kept(self) -> None:
        """20 MB of UTF-8 (and a lone surrogate past the cap) capped at 100 KB holds
        what the cap keeps, not the whole text encoded."""
        text = "é" * 10_000_000 + "\udcff"
        capped, peak = traced_peak(valid_text, text, 100_000)
        assert len(capped.encode()) <= 100_000
        assert peak < 2_000_000  # the whole text encoded: 20 MB

    @pytest.mark.parametrize("text", ["a\udcff" * 10, "é\udcff" * 1_000, "\ud83d" * 5_000])
    def test_lone_surrogates_kept_are_replaced_within_the_cap(self, text: str) -> None:
        """What the cap keeps is valid UTF-8, its U+FFFD included, within the cap."""
        capped = valid_text(text, 1_000)
        assert "\ufffd" in capped or "truncated" in capped
        assert len(capped.encode()) <= 1_000

    async def test_a_rich_results_texts_are_capped_before_they_are_encoded(self) -> None:
        """A ToolReturn's huge text costs what the cap keeps too."""
        returned = ToolReturn(
            [
                TextPart("é" * 10_000_000 + "\udcff"),
                MediaPart("image/png", url="https://x.test/u.png"),
            ]
        )
        tracemalloc.start()
        try:
            _, results = await run_calls("hand", extra=[hand_written("hand", Returns(returned))])
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert len(results[0].content.encode()) <= Limits().max_result_bytes
        assert peak < 5_000_000  # the whole text encoded: 20 MB


class TestMediaLimits:
    async def test_notes_for_dropped_media_count_against_the_result_cap(self) -> None:
        """The notes in place of dropped media are text of the result, within its cap."""
        parts = [TextPart("album:"), *[MediaPart("image/png", data=b"x" * 20)] * 90]
        limits = Limits(max_result_bytes=1_000, max_media_bytes=10)
        _, results = await run_calls(
            "hand", limits=limits, extra=[hand_written("hand", Returns(ToolReturn(parts)))]
        )
        content = results[0].content
        assert content.startswith("album:\n[image/png of 20 bytes from tool 'hand' dropped")
        assert "truncated" in content
        assert len(content.encode()) <= 1_000

    async def test_a_result_holds_at_most_max_media_parts_media_parts(self) -> None:
        """Media parts past MAX_MEDIA_PARTS are dropped, one note saying how many."""
        links = [MediaPart("image/png", url=f"https://example.com/{i}.png") for i in range(250)]
        _, results = await run_calls(
            "hand", extra=[hand_written("hand", Returns(ToolReturn(links)))]
        )
        parts = results[0].parts
        assert parts[:MAX_MEDIA_PARTS] == tuple(links[:MAX_MEDIA_PARTS])
        assert parts[MAX_MEDIA_PARTS:] == (
            TextPart(
                f"[{250 - MAX_MEDIA_PARTS} more media parts from tool 'hand' dropped: over the "
                f"limit of {MAX_MEDIA_PARTS} media parts in one result]"
            ),
        )

    async def test_the_note_of_parts_past_the_count_survives_a_cut_text(self) -> None:
        """When the text before it crosses the result cap, the note saying how many media
        parts were dropped is still read whole, within the cap."""
        links = [MediaPart("image/png", url=f"https://example.com/{i}.png") for i in range(150)]
        parts = [TextPart("x" * 5_000), *links, TextPart("after")]
        limits = Limits(max_result_bytes=1_000)
        _, results = await run_calls(
            "hand", limits=limits, extra=[hand_written("hand", Returns(ToolReturn(parts)))]
        )
        note = (
            "[50 more media parts from tool 'hand' dropped: over the limit of "
            f"{MAX_MEDIA_PARTS} media parts in one result]"
        )
        result = results[0]
        assert result.parts[1 : 1 + MAX_MEDIA_PARTS] == tuple(links[:MAX_MEDIA_PARTS])
        assert result.parts[1 + MAX_MEDIA_PARTS :] == (TextPart(note),)
        cut = result.parts[0]
        assert isinstance(cut, TextPart)
        assert "truncated" in cut.text
        assert result.content == f"{cut.text}\n{note}"
        assert len(result.content.encode()) <= 1_000

    async def test_a_long_media_type_is_cut_short_in_its_note(self) -> None:
        """A dropped part's media type, parameters of any length, is cut in the note."""
        media_type = "image/png; profile=" + "p" * 100_000
        returned = ToolReturn([MediaPart(media_type, data=b"x" * 20)])
        _, results = await run_calls(
            "hand",
            limits=Limits(max_media_bytes=10),
            extra=[hand_written("hand", Returns(returned))],
        )
        assert results[0].content == (
            f"[{media_type[:199]}… of 20 bytes from tool 'hand' dropped: over the limit of 10 "
            "bytes for media in one result]"
        )

    async def test_a_url_counts_its_length_toward_max_media_bytes(self) -> None:
        """A data: URL is media by another name: past max_media_bytes, it is dropped."""
        url = "data:image/png;base64," + "A" * 4_978
        limits = Limits(max_media_bytes=1_000)
        returned = ToolReturn([MediaPart("image/png", url=url)])
        _, results = await run_calls(
            "hand", limits=limits, extra=[hand_written("hand", Returns(returned))]
        )
        assert results[0].content == (
            "[image/png of 5000 bytes from tool 'hand' dropped: over the limit of 1000 bytes "
            "for media in one result]"
        )


class Endless(list[TextPart]):
    """A list whose own iteration never ends: what it holds is one part."""

    def __iter__(self) -> Iterator[TextPart]:
        return itertools.repeat(TextPart("again"))


class TestContent:
    @pytest.mark.parametrize(
        "content",
        [
            pytest.param(lambda: itertools.repeat(TextPart("x")), id="endless iterator"),
            pytest.param(lambda: (part for part in [TextPart("x")]), id="generator"),
            pytest.param(lambda: iter([TextPart("x")]), id="iterator"),
            pytest.param(lambda: {TextPart("x")}, id="set"),
        ],
    )
    async def test_content_that_is_not_a_list_or_tuple_cannot_be_sent(
        self, content: Callable[[], Any]
    ) -> None:
        """An iterator is refused unread (an endless one would block the event loop past
        every timeout), as is any iterable that is not a list or a tuple of parts."""
        returned = ToolReturn(content())
        _, results = await run_calls("hand", extra=[hand_written("hand", Returns(returned))])
        assert [(r.content, r.is_error) for r in results] == [
            (UNSENDABLE.format("hand", "TypeError"), True)
        ]

    async def test_call_tool_refuses_such_content(self) -> None:
        """call_tool raises ToolExecutionError for it, as for metadata it refuses."""
        server = ToolServer()
        returned = ToolReturn(itertools.repeat(TextPart("x")))  # type: ignore[arg-type]
        server.register_tool(hand_written("hand", Returns(returned)))
        with anyio.fail_after(10), pytest.raises(ToolExecutionError) as caught:
            await server.handle().call_tool("hand", "{}")
        assert caught.value.detail == UNSENDABLE.format("hand", "TypeError")

    async def test_a_list_or_tuple_is_read_as_it_is_stored(self) -> None:
        """A list or tuple subclass gives the parts it holds, whatever its __iter__ does."""
        returned = ToolReturn(Endless([TextPart("once")]))
        _, results = await run_calls("hand", extra=[hand_written("hand", Returns(returned))])
        assert results[0] == ToolResult(results[0].call_id, "once")


class TestMessageNotText:
    def test_an_exception_as_the_message_is_its_text_made_safe(self) -> None:
        """ExecutionFailedError(exc) reads as the exception's text, scrubbed."""
        error = ExecutionFailedError(KeyError("zz"))  # type: ignore[arg-type]
        assert (str(error), error.message) == ("Execution failed: 'zz'", "'zz'")
        missing = FileNotFoundError(2, "No such file", "/home/ada/notes.txt")
        assert str(InvalidArgumentError(missing)) == (  # type: ignore[arg-type]
            "Invalid argument: [Errno 2] No such file: '<path>'"
        )

    def test_another_value_as_the_message_is_its_text(self) -> None:
        """A message that is neither a str nor an exception reads as its str()."""
        assert str(ExecutionFailedError(42)) == "Execution failed: 42"  # type: ignore[arg-type]

    async def test_the_model_reads_the_wrapped_exceptions_text(self) -> None:
        """`raise ExecutionFailedError(exc) from exc` in a tool method: the model reads the
        KeyError's text, not a TypeError's."""
        client = ScriptedClient([calls(("lookup", {"key": "zz"})), "Done."])
        worker = Worker(client)
        worker.register_tools(tool_definitions(App()))
        with anyio.fail_after(10):
            await worker.run("go")
        assert results_of(worker.history)[0].content == "Execution failed: 'zz'"

    def test_a_tool_error_with_a_message_pickles(self) -> None:
        """The text made of the message is what a copy holds."""
        import pickle

        error = ExecutionFailedError(KeyError("zz"))  # type: ignore[arg-type]
        copy = pickle.loads(pickle.dumps(error))
        assert (type(copy), str(copy)) == (ExecutionFailedError, str(error))
        assert isinstance(copy, ToolError)


class Echo:
    async def execute(self, input_json: str) -> str:
        return input_json


class NotCallableExecute:
    execute = "nope"


class TestRegistrationMessages:
    @pytest.mark.parametrize(
        ("made", "problem"),
        [
            (3, "got int"),
            ((ToolMeta(name="a"), Echo(), 1), "got a tuple of 3 items"),
            (({"name": "a"}, Echo()), "got (dict, Echo): the first item is not a ToolMeta"),
            (
                (ToolMeta(name="a"), object()),
                "got (ToolMeta, object): object has no execute method",
            ),
            (
                (ToolMeta(name="a"), NotCallableExecute()),
                "got (ToolMeta, NotCallableExecute): NotCallableExecute.execute is a str, "
                "not a method",
            ),
        ],
    )
    def test_a_factory_returning_no_pair_is_told_what_is_wrong(
        self, made: object, problem: str
    ) -> None:
        """The TypeError names what is wrong with what the factory returned."""

        def factory() -> Any:
            return made

        with pytest.raises(TypeError) as caught:
            ToolServer().register_tool(factory)
        assert str(caught.value) == (
            f"tool definition {factory!r} must return (ToolMeta, Tool), {problem}"
        )
