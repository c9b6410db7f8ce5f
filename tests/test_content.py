"""Rich results (``_content.py``, ``_execution.rich_result``): what a tool returns besides text,
what the worker keeps of it, what the limits do to it, and how it survives the run state."""

from __future__ import annotations

import base64
import json
import math
import pickle
import re
import sys

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic_core import to_json
from support import calls, results_of

from llm_worker import (
    DataPart,
    Limits,
    MediaPart,
    RunState,
    RunStateError,
    TextPart,
    ToolResult,
    ToolReturn,
    ToolServer,
    Worker,
    WorkerResult,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker._content import _has_digit_run, data_url_bytes
from llm_worker.testing import ScriptedClient, ScriptedResponse

pytestmark = pytest.mark.anyio

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4  # 1032 bytes, every byte value


@tool_registry
class Charts:
    def __init__(self) -> None:
        self.png = PNG

    @tool
    def chart(self, title: str) -> ToolReturn:
        """Draw a chart."""
        return ToolReturn(
            [TextPart(f"The chart {title}:"), MediaPart("image/png", data=self.png)],
            metadata={"title": title, "points": 3},
        )

    @tool
    async def image(self) -> MediaPart:
        """Just an image."""
        return MediaPart("image/png", data=self.png)

    @tool
    def parts(self) -> list[TextPart | DataPart]:
        """Text and data."""
        return [TextPart("rows:"), DataPart.of({"rows": [1, 2]})]

    @tool
    def text_only(self) -> ToolReturn:
        """A ToolReturn of plain text."""
        return ToolReturn("just text")

    @tool
    def linked(self) -> ToolReturn:
        """A document by URL."""
        return ToolReturn(MediaPart("application/pdf", url="https://example.com/a.pdf", name="a"))

    @tool
    def bad_part(self) -> ToolReturn:
        """Returns something that is not a part."""
        return ToolReturn(["text", 42])  # type: ignore[list-item]

    @tool
    def bad_metadata(self) -> ToolReturn:
        """Metadata that is not JSON."""
        return ToolReturn("ok", metadata=object())

    @tool
    def big_text(self) -> ToolReturn:
        """Long text among parts."""
        return ToolReturn([TextPart("x" * 5_000), MediaPart("image/png", data=b"p")])


async def run_one(name: str, arguments: dict[str, object] | None = None, **limits: int):
    client = ScriptedClient([calls((name, arguments or {})), ScriptedResponse(text="done")])
    worker = Worker(client, limits=Limits(**limits))
    worker.register_tools(tool_definitions(Charts()))
    with anyio.fail_after(10):
        assert await worker.run("go") is WorkerResult.FINISHED
    (result,) = results_of(worker.history)
    return result, worker, client


async def test_a_tool_return_keeps_its_parts_in_order_and_its_metadata() -> None:
    result, _, client = await run_one("chart", {"title": "sales"})
    assert not result.is_error
    assert result.parts == (TextPart("The chart sales:"), MediaPart("image/png", data=PNG))
    assert result.metadata == {"title": "sales", "points": 3}
    # content is the text a text-only reader gets: the media are left to the provider client
    assert result.content == "The chart sales:"
    # the scripted model got the same result, parts and all (what a provider client sends)
    sent = [m for m in client.requests[-1].messages if isinstance(m, ToolResult)]
    assert sent == [result]


async def test_a_part_or_a_list_of_parts_from_a_tool_method_is_a_rich_result() -> None:
    image, _, _ = await run_one("image")
    assert image.parts == (MediaPart("image/png", data=PNG),)
    assert image.content == ""
    mixed, _, _ = await run_one("parts")
    assert mixed.parts == (TextPart("rows:"), DataPart('{"rows":[1,2]}'))
    assert mixed.content == 'rows:\n{"rows":[1,2]}'
    assert mixed.parts[1].value == {"rows": [1, 2]}  # type: ignore[union-attr]


async def test_a_text_only_tool_return_is_a_plain_text_result() -> None:
    result, _, _ = await run_one("text_only")
    assert result == ToolResult(result.call_id, "just text")
    assert result.parts == ()
    assert result.metadata is None
    assert "parts" not in repr(result)


async def test_a_media_part_by_url_keeps_its_url_and_name() -> None:
    result, _, _ = await run_one("linked")
    (part,) = result.parts
    assert isinstance(part, MediaPart)
    assert (part.url, part.name, part.kind, part.size) == (
        "https://example.com/a.pdf",
        "a",
        "document",
        0,
    )


async def test_media_past_the_byte_cap_is_replaced_by_a_note_saying_what_was_dropped() -> None:
    result, _, _ = await run_one("chart", {"title": "t"}, max_media_bytes=1000)
    assert not result.is_error
    assert result.parts[0] == TextPart("The chart t:")
    note = result.parts[1]
    assert isinstance(note, TextPart)
    assert note.text == (
        "[image/png of 1032 bytes from tool 'chart' dropped: over the limit of 1000 bytes "
        "for media in one result]"
    )
    assert note.text in result.content


async def test_text_parts_share_the_result_text_cap() -> None:
    result, _, _ = await run_one("big_text", max_result_bytes=1_000)
    text = result.parts[0]
    assert isinstance(text, TextPart)
    assert len(text.text.encode()) <= 1_000
    assert "truncated" in text.text
    assert result.parts[1] == MediaPart("image/png", data=b"p")


@pytest.mark.parametrize("name", ["bad_part", "bad_metadata"])
async def test_a_tool_return_that_cannot_be_sent_is_an_error_result_naming_the_tool(
    name: str,
) -> None:
    result, _worker, _ = await run_one(name)
    assert result.is_error
    assert result.content.startswith(f"Internal error: tool '{name}' returned a ToolReturn")
    assert result.parts == ()


async def test_call_tool_gives_the_text_of_a_rich_result() -> None:
    server = ToolServer()
    server.register_tools(tool_definitions(Charts()))
    handle = server.handle()
    assert await handle.call_tool("chart", '{"title": "q"}') == "The chart q:"
    assert await handle.call_tool("parts", "{}") == 'rows:\n{"rows":[1,2]}'


def test_parts_validate_what_they_are_given() -> None:
    with pytest.raises(ValueError, match="MIME type"):
        MediaPart("png", data=b"x")
    with pytest.raises(ValueError, match="either data"):
        MediaPart("image/png")
    with pytest.raises(ValueError, match="either data"):
        MediaPart("image/png", data=b"x", url="https://x")
    with pytest.raises(TypeError, match="bytes"):
        MediaPart("image/png", data="x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="str"):
        TextPart(3)  # type: ignore[arg-type]
    assert MediaPart("audio/wav", data=b"1234").kind == "audio"
    assert MediaPart("VIDEO/mp4", data=b"").kind == "video"
    assert repr(MediaPart("image/png", data=PNG)) == "MediaPart('image/png', 1032 bytes)"


@pytest.mark.parametrize(
    "media_type",
    [
        "image/png\r\nX-Evil: 1",
        "image/png; charset=x\r\nX-Evil: 1",
        "text/plain; charset=utf-8\x00",
        "text/plain;\tcharset=utf-8",
        "image/",
        "/png",
        "image/png/x",
        "image png",
        " image/png",
        "image/png ",
        "image/.png",
        "ima(ge)/png",
        "image/" + "p" * 128,
        "",
        "/",
    ],
)
def test_a_media_type_must_be_type_slash_subtype(media_type: str) -> None:
    """A media type that is not RFC 6838's type/subtype (a line break in its parameters
    too) is refused, naming the rule and the value."""
    with pytest.raises(ValueError, match="MIME type") as caught:
        MediaPart(media_type, data=b"x")
    assert str(caught.value) == (
        "MediaPart media_type must be a MIME type, type/subtype such as 'image/png' "
        f"(parameters after ';' allowed, no control characters), not {media_type!r}"
    )


@pytest.mark.parametrize(
    "media_type",
    [
        "image/png",
        "IMAGE/SVG+XML; charset=utf-8",
        "text/plain;charset=utf-8",
        "text/x-rust; charset=utf-8",
        'multipart/mixed; boundary="a b"',
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "application/x-www-form-urlencoded",
        "video/x-msvideo",
        "application/ld+json",
        "audio/L16; rate=16000",
        "image/" + "p" * 127,
    ],
)
def test_media_types_as_written_are_taken(media_type: str) -> None:
    """Any type/subtype of RFC 6838's characters, with parameters, in any case."""
    assert MediaPart(media_type, data=b"x").media_type == media_type


URL_REFUSED = (
    "MediaPart url must be an http(s), data: or gs:// URL a provider can fetch: {what}; "
    "give a local file's bytes instead, MediaPart(media_type, data=...)"
)


@pytest.mark.parametrize(
    ("url", "what"),
    [
        ("", "'' has no scheme (a path is not a URL)"),
        ("charts/q3.png", "'charts/q3.png' has no scheme (a path is not a URL)"),
        ("/tmp/q3.pdf", "'/tmp/q3.pdf' has no scheme (a path is not a URL)"),
        ("C:\\charts\\q3.png", "'C:\\\\charts\\\\q3.png' has no scheme (a path is not a URL)"),
        (" https://x.test/a.png", "' https://x.test/a.png' has no scheme (a path is not a URL)"),
        (
            "file:///tmp/q3.pdf",
            "'file:///tmp/q3.pdf' is a URL of scheme 'file', which no provider fetches",
        ),
        (
            "ftp://x.test/a.png",
            "'ftp://x.test/a.png' is a URL of scheme 'ftp', which no provider fetches",
        ),
        (
            "s3://bucket/a.png",
            "'s3://bucket/a.png' is a URL of scheme 's3', which no provider fetches",
        ),
        ("q" * 300, f"'{'q' * 99}…' has no scheme (a path is not a URL)"),
    ],
)
def test_a_url_no_provider_fetches_is_refused(url: str, what: str) -> None:
    """A path, a file:// URL or another scheme no provider fetches is refused where the
    part is made, saying what to give instead (every API would refuse it, in this request
    and every later one)."""
    with pytest.raises(ValueError, match=r"^MediaPart url must be") as caught:
        MediaPart("image/png", url=url)
    assert str(caught.value) == URL_REFUSED.format(what=what)


@pytest.mark.parametrize(
    "url",
    [
        "https://charts.example.com/q3.png",
        "HTTP://charts.example.com/q3.png",
        "data:image/png;base64,iVBORw0KGgo=",
        "gs://bucket/q3.png",
        "https://generativelanguage.googleapis.com/v1beta/files/abc-123",
    ],
)
def test_urls_a_provider_fetches_are_taken(url: str) -> None:
    """http(s), data: and gs:// (Gemini on Vertex AI), the scheme in any case."""
    assert MediaPart("image/png", url=url).url == url


def test_parts_are_frozen_hashable_and_picklable() -> None:
    parts = (TextPart("a"), MediaPart("image/png", data=PNG), DataPart.of([1, "b"]))
    for part in parts:
        assert pickle.loads(pickle.dumps(part)) == part
        assert hash(part) == hash(pickle.loads(pickle.dumps(part)))
    with pytest.raises(AttributeError):
        parts[0].text = "b"  # type: ignore[misc]


def _state_with(result: ToolResult) -> RunState:
    from llm_worker import AssistantMessage, RunUsage, ToolCall, UserMessage

    call = ToolCall(result.call_id, "chart", "{}")
    return RunState(
        history=[UserMessage("go"), AssistantMessage("", (call,)), result],
        paused=None,
        turns=0,
        run_usage=RunUsage(),
        usage=RunUsage(),
        tool_choice="auto",
        allowed_tools=None,
        fingerprint="sha256:x",
    )


def test_the_run_state_json_keeps_every_part_bytes_and_all() -> None:
    result = ToolResult(
        "c1",
        "see:\n{}",
        False,
        (
            TextPart("see:"),
            MediaPart("image/png", data=PNG),
            MediaPart("application/pdf", url="https://x/a.pdf", name="a.pdf"),
            DataPart("{}"),
        ),
        {"k": [1, None]},
    )
    state = _state_with(result)
    text = state.to_json()
    data = json.loads(text)
    media = data["history"][2]["parts"][1]
    assert base64.b64decode(media["data"]) == PNG
    again = RunState.from_json(text)
    assert again == state
    assert again.history[2] == result
    assert again.history[2].metadata == {"k": [1, None]}  # type: ignore[union-attr]


def test_a_text_result_is_written_as_before() -> None:
    data = json.loads(_state_with(ToolResult("c1", "plain")).to_json())
    assert data["history"][2] == {
        "type": "tool_result",
        "call_id": "c1",
        "content": "plain",
        "is_error": False,
    }


@pytest.mark.parametrize(
    ("part", "message"),
    [
        (
            {"type": "media", "media_type": "image/png", "data": "@@@", "url": None, "name": None},
            "media part",
        ),
        (
            {"type": "media", "media_type": "png", "data": "AA==", "url": None, "name": None},
            "media part",
        ),
        (
            {
                "type": "media",
                "media_type": "image/png",
                "data": None,
                "url": "charts/q3.png",
                "name": None,
            },
            "a media part of the result of call 'c1' is not valid: MediaPart url must be",
        ),
        ({"type": "data", "json": "{nope"}, "not JSON"),
        ({"type": "sound", "text": "x"}, "Not a valid run state"),
    ],
)
def test_a_corrupt_part_in_a_run_state_is_a_run_state_error(part: dict, message: str) -> None:
    data = json.loads(_state_with(ToolResult("c1", "x", False, (TextPart("x"),))).to_json())
    data["history"][2]["parts"] = [part]
    with pytest.raises(RunStateError, match=message):
        RunState.from_json(json.dumps(data))


@tool_registry
class PartSequences:
    @tool
    def as_tuple(self) -> tuple[TextPart, MediaPart]:
        """Parts in a tuple."""
        return (TextPart("chart:"), MediaPart("image/png", data=PNG))

    @tool
    def mixed(self) -> list[object]:
        """Parts, then a plain value."""
        return [TextPart("chart:"), MediaPart("image/png", data=PNG), "and some text"]

    @tool
    async def mixed_tuple(self) -> tuple[object, ...]:
        """A part, then a number."""
        return (TextPart("rows:"), 3)


async def run_sequence(name: str, **limits: int) -> ToolResult:
    client = ScriptedClient([calls((name, {})), ScriptedResponse(text="done")])
    worker = Worker(client, limits=Limits(**limits))
    worker.register_tools(tool_definitions(PartSequences()))
    with anyio.fail_after(10):
        assert await worker.run("go") is WorkerResult.FINISHED
    (result,) = results_of(worker.history)
    return result


async def test_a_tuple_of_parts_is_a_rich_result_as_a_list_is() -> None:
    """Its media is a part, under the media cap: never base64 text for the model."""
    result = await run_sequence("as_tuple")
    assert result.parts == (TextPart("chart:"), MediaPart("image/png", data=PNG))
    capped = await run_sequence("as_tuple", max_media_bytes=1000)
    assert capped.content == (
        "chart:\n[image/png of 1032 bytes from tool 'as_tuple' dropped: over the limit of "
        "1000 bytes for media in one result]"
    )


@pytest.mark.parametrize(
    ("name", "kind"), [pytest.param("mixed", "list"), pytest.param("mixed_tuple", "tuple")]
)
async def test_parts_mixed_with_other_values_are_an_error_not_base64_text(
    name: str, kind: str
) -> None:
    result = await run_sequence(name)
    assert result.is_error
    assert result.content == (
        f"Internal error: tool '{name}' returned content parts mixed with other values "
        f"({kind}); return only parts (text as a TextPart), or no parts"
    )


class TestDataPartOfBigInts:
    """``DataPart.of`` makes only text a run state reads back: an int of more digits than
    Python reads (``sys.get_int_max_str_digits()``) is refused as ``DataPart(text)`` is."""

    def test_an_int_of_more_digits_than_python_reads_is_a_value_error(self) -> None:
        value = {"n": 2000, "factorial": math.factorial(2000)}  # 5 736 digits
        with pytest.raises(ValueError, match=r"^DataPart json_text is not JSON") as made:
            DataPart.of(value)
        with pytest.raises(ValueError, match=r"^DataPart json_text is not JSON") as constructed:
            DataPart(to_json(value).decode())  # the text DataPart.of would have made
        assert str(made.value) == str(constructed.value)
        # Python's own words: "(4300 digits)" from 3.11, "(4300)" on 3.10.
        assert "Exceeds the limit (4300" in str(made.value)

    def test_digits_up_to_the_limit_and_digits_in_texts_are_taken(self) -> None:
        limit = sys.get_int_max_str_digits()
        assert DataPart.of([10 ** (limit - 1)]).value == [10 ** (limit - 1)]
        assert DataPart.of({"digits": "7" * 10_000}).value == {"digits": "7" * 10_000}

    def test_without_a_limit_any_int_is_taken(self) -> None:
        before = sys.get_int_max_str_digits()
        sys.set_int_max_str_digits(0)
        try:
            big = 10**10_000
            assert DataPart.of([big]).value == [big]
        finally:
            sys.set_int_max_str_digits(before)

    async def test_a_tool_making_one_fails_its_call_and_the_state_still_loads(self) -> None:
        @tool_registry
        class MathTools:
            @tool
            def factorial(self, n: int) -> ToolReturn:
                """n! as structured data."""
                return ToolReturn([DataPart.of({"n": n, "factorial": math.factorial(n)})])

        worker = Worker(ScriptedClient([calls(("factorial", {"n": 2000})), "done"]))
        worker.register_tools(tool_definitions(MathTools()))
        with anyio.fail_after(10):
            await worker.run("what is 2000!?")
        (result,) = results_of(worker.history)
        assert result.is_error
        assert result.content.startswith("Execution failed: DataPart json_text is not JSON")
        RunState.from_json(worker.state.to_json())

    @given(st.text(alphabet="0123456789a", max_size=60), st.integers(min_value=1, max_value=12))
    def test_a_digit_run_is_found_wherever_it_is(self, text: str, length: int) -> None:
        """Only every length-th character is looked at, and the runs through it measured."""
        assert _has_digit_run(text, length) == (re.search(f"[0-9]{{{length}}}", text) is not None)


class TestDataUrlBytes:
    """``data_url_bytes``: the bytes a ``data:`` URL holds, as the provider clients and the
    MCP server send them, or ``None`` for one that holds none it can read."""

    def test_base64_in_any_case(self) -> None:
        """Base64 after ``;base64``, the scheme and ``;base64`` written in any case."""
        png = b"\x89PNG\r\n\x1a\n-chart"
        encoded = base64.b64encode(png).decode()
        assert data_url_bytes(f"data:image/png;base64,{encoded}") == png
        assert data_url_bytes(f"DATA:image/png;BASE64,{encoded}") == png
        assert data_url_bytes(f"Data:image/png;charset=x;Base64 ,{encoded}") == png

    def test_percent_encoding(self) -> None:
        """Without ``;base64`` the body is percent-encoded text, read as UTF-8 bytes; escapes
        in base64 are read too, and MIME base64's line breaks let through."""
        assert data_url_bytes("data:text/plain,caf%C3%A9%2C ok") == "café, ok".encode()
        assert data_url_bytes("data:,café") == "café".encode()
        assert data_url_bytes("data:;base64,YWJj%2B%2F8%3D") == b"abc\xfb\xff"
        assert data_url_bytes("data:;base64,YWJj\r\nZGVm") == b"abcdef"
        assert data_url_bytes("data:,") == b""

    @pytest.mark.parametrize(
        "url",
        [
            "https://charts.example.com/a.png",
            "gs://bucket/a.png",
            "data:image/png;base64",  # no comma: no body
            "data:image/png;base64,not base64!",
            "data:image/png;base64,YWJ",  # base64 cut short
            "data:;base64,%FF%FE",  # escapes that are not UTF-8 text
            "data:;base64,YW\u00e9J",  # not ASCII
            "data:text/plain,\ud800",  # a lone surrogate
        ],
    )
    def test_none_for_any_other_url_or_one_that_cannot_be_read(self, url: str) -> None:
        assert data_url_bytes(url) is None

    @given(st.text(max_size=80), st.booleans())
    def test_never_more_bytes_than_the_url_has(self, body: str, encoded: bool) -> None:
        """Never more bytes than the URL has in UTF-8 (what a part's URL counts against
        Limits.max_media_bytes)."""
        url = f"data:application/octet-stream{';base64' if encoded else ''},{body}"
        data = data_url_bytes(url)
        assert data is None or len(data) <= len(url.encode("utf-8", "surrogatepass"))
