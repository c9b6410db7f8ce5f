"""Limits (``_limits.py``): input size and depth, the result cap, model-safe error texts.

Each limit is tested where it applies: in ``input_limit_problem`` / ``cap_result`` /
``model_safe_text`` themselves, in the ``execute`` of generated tools (``@tool`` and
``@tool_registry`` options) and in a ``Worker`` (``Limits``), for generated and hand-written
tools alike. Error texts are the contract, so they are asserted exactly.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import re
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support import Raises, Returns, hand_written

from llm_worker import (
    ExecutionFailedError,
    InvalidArgumentError,
    Limits,
    TextPart,
    ToolExecutionError,
    ToolResult,
    ToolReturn,
    ToolServer,
    Worker,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker._execution import valid_text
from llm_worker._limits import (
    DEFAULT_MAX_INPUT_BYTES,
    DEFAULT_MAX_INPUT_DEPTH,
    cap_result,
    cap_texts,
    input_limit_problem,
)
from llm_worker._safe_text import model_safe_text
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

NOTE = re.compile(
    r"\n\[truncated: (\d+) of (\d+) bytes dropped; "
    r"narrow the request \(filter, paginate or ask for less\) to see the rest\]\Z"
)


def too_big(size: int, limit: int) -> str:
    return f"input is {size} bytes, over the limit of {limit} bytes"


def too_deep(limit: int) -> str:
    return f"input nests deeper than the limit of {limit} levels"


def sized_input(size: int) -> str:
    """``{"text": "xxx..."}`` of exactly ``size`` UTF-8 bytes."""
    text = '{"text": "' + "x" * (size - 12) + '"}'
    assert len(text.encode()) == size
    return text


def nested_input(depth: int) -> str:
    """``{"data": [[...]]}`` nesting exactly ``depth`` levels (the object is level 1)."""
    return '{"data": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


def split_capped(text: str) -> tuple[str, int, int]:
    """``(kept, dropped, total)`` of a capped result; fails if the note is missing."""
    match = NOTE.search(text)
    assert match is not None, f"no truncation note in {text[-200:]!r}"
    return text[: match.start()], int(match.group(1)), int(match.group(2))


# -- tools ---------------------------------------------------------------------------------


@tool_registry
class Defaults:
    """Tools with no limit options: the library defaults apply."""

    def __init__(self) -> None:
        self.calls = 0

    @tool
    async def take(self, text: str = "", data: list[Any] | None = None) -> str:
        """Accept text and nested lists."""
        self.calls += 1
        return f"took {len(text)} chars"


@tool_registry(max_input_bytes=100, max_input_depth=5)
class Registry:
    """A registry with its own limits, and tools overriding some of them."""

    def __init__(self) -> None:
        self.calls = 0

    @tool
    async def inherits(self, text: str = "", data: list[Any] | None = None) -> str:
        """Both limits from the registry."""
        self.calls += 1
        return "ok"

    @tool(max_input_bytes=50, max_input_depth=3)
    async def own(self, text: str = "", data: list[Any] | None = None) -> str:
        """Both limits its own."""
        self.calls += 1
        return "ok"

    @tool(max_input_bytes=50)
    def own_bytes(self, text: str = "", data: list[Any] | None = None) -> str:
        """Its own size limit, the registry's depth limit (a plain def, run in a thread)."""
        self.calls += 1
        return "ok"


# (class, method, size limit, depth limit): a tool's option wins over its registry's,
# which wins over the default.
PRECEDENCE = [
    pytest.param(Defaults, "take", DEFAULT_MAX_INPUT_BYTES, DEFAULT_MAX_INPUT_DEPTH, id="default"),
    pytest.param(Registry, "inherits", 100, 5, id="registry"),
    pytest.param(Registry, "own", 50, 3, id="tool"),
    pytest.param(Registry, "own_bytes", 50, 5, id="tool-bytes-registry-depth"),
]


class CountingTool:
    """A hand-written ``Tool`` that records its inputs and answers ``"ok"``."""

    def __init__(self) -> None:
        self.inputs: list[str] = []

    async def execute(self, input_json: str) -> str:
        self.inputs.append(input_json)
        return "ok"


class Rig:
    """A Worker on a ScriptedClient; ``results(calls)`` runs one response of ``calls``."""

    def __init__(self, *definitions: Any, limits: Limits | None = None) -> None:
        self.client = ScriptedClient()
        self.worker = Worker(self.client, limits=limits)
        self.worker.register_tools(definitions)

    async def results(self, calls: Sequence[ScriptedCall]) -> list[ToolResult]:
        """Run ``calls`` then an answer; the results the model's next request carried."""
        self.client.add(ScriptedResponse(tool_calls=calls), "done")
        before = len(self.client.requests)
        await self.worker.run("go")
        carried = self.client.requests[before + 1].messages
        return [m for m in carried if isinstance(m, ToolResult)][-len(calls) :]


# -- Limits ---------------------------------------------------------------------------------


class TestLimits:
    def test_defaults(self):
        """The defaults: 1 MB and 64 levels of input, 300 s, 100 kB of result, 16 calls."""
        assert Limits() == Limits(
            max_input_bytes=1_000_000,
            max_input_depth=64,
            tool_timeout=300.0,
            max_result_bytes=100_000,
            max_concurrent_calls=16,
        )
        assert (DEFAULT_MAX_INPUT_BYTES, DEFAULT_MAX_INPUT_DEPTH) == (1_000_000, 64)

    def test_worker_uses_defaults_unless_given(self):
        """A Worker without ``limits=`` has ``Limits()``; with it, exactly what it was given."""
        assert Worker(ScriptedClient()).limits == Limits()
        limits = Limits(max_input_bytes=10, tool_timeout=None)
        assert Worker(ScriptedClient(), limits=limits).limits is limits

    def test_frozen(self):
        """Limits is an immutable value."""
        with pytest.raises(dataclasses.FrozenInstanceError):
            Limits().max_input_bytes = 5  # type: ignore[misc]

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"max_input_bytes": 0}, "Limits.max_input_bytes must be at least 1, got 0"),
            ({"max_input_depth": -1}, "Limits.max_input_depth must be at least 1, got -1"),
            (
                {"max_result_bytes": 255},
                "Limits.max_result_bytes must be at least 256 (room for the truncation note), "
                "got 255",
            ),
            ({"max_concurrent_calls": 0}, "Limits.max_concurrent_calls must be at least 1, got 0"),
            ({"tool_timeout": 0}, "Limits.tool_timeout must be positive, got 0"),
            ({"tool_timeout": -0.5}, "Limits.tool_timeout must be positive, got -0.5"),
        ],
    )
    def test_invalid_values_are_refused(self, kwargs, message):
        """Each out-of-range value raises ValueError naming the field and the value."""
        with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
            Limits(**kwargs)

    def test_nan_timeout_is_refused(self):
        """``tool_timeout=nan`` is refused like any other non-positive timeout.

        (anyio refuses a NaN deadline, so an accepted NaN makes every call an internal error.)
        """
        with pytest.raises(ValueError, match=r"^Limits\.tool_timeout must be positive, got nan$"):
            Limits(tool_timeout=math.nan)

    def test_no_timeout(self):
        """``tool_timeout=None`` means no time limit."""
        assert Limits(tool_timeout=None).tool_timeout is None

    @pytest.mark.parametrize(
        "field",
        [
            "max_input_bytes",
            "max_input_depth",
            "max_result_bytes",
            "max_media_bytes",
            "max_concurrent_calls",
            "max_requests",
            "max_input_tokens",
            "max_output_tokens",
        ],
    )
    @pytest.mark.parametrize(
        ("value", "shown"),
        [
            (math.nan, "float nan"),  # `nan < 1` is false: a range check alone lets it in
            (math.inf, "float inf"),
            (1e6, "float 1000000.0"),
            (True, "bool True"),
            ("100", "str '100'"),
        ],
        ids=["nan", "inf", "float", "bool", "str"],
    )
    def test_counts_must_be_ints(self, field, value, shown):
        """Every size, count and budget is an int: NaN, a float, a bool or a str raises
        TypeError naming the field and the value, at construction and at ``replace``."""
        budget = field in ("max_requests", "max_input_tokens", "max_output_tokens")
        message = f"Limits.{field} must be an int{' (or None)' if budget else ''}, got {shown}"
        with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
            Limits(**{field: value})
        with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
            dataclasses.replace(Limits(), **{field: value})

    def test_a_nan_input_limit_no_longer_passes_everything(self):
        """The reviewer's case: ``max_input_bytes=nan`` made every input fit the limit."""
        with pytest.raises(TypeError, match=r"^Limits\.max_input_bytes must be an int"):
            Limits(max_input_bytes=math.nan)

    @pytest.mark.parametrize(
        ("value", "message"),
        [
            (True, "Limits.tool_timeout must be a number of seconds (or None), got bool True"),
            ("30", "Limits.tool_timeout must be a number of seconds (or None), got str '30'"),
        ],
        ids=["bool", "str"],
    )
    def test_timeout_must_be_a_number(self, value, message):
        """``tool_timeout`` is a number of seconds: a bool or a str raises TypeError."""
        with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
            Limits(tool_timeout=value)

    def test_timeout_of_infinity_means_no_limit(self):
        """``tool_timeout=math.inf`` is allowed: a deadline that never comes, like ``None``;
        an int number of seconds is allowed too."""
        assert Limits(tool_timeout=math.inf).tool_timeout == math.inf
        assert Limits(tool_timeout=30).tool_timeout == 30

    def test_huge_values_are_shown_short(self):
        """A mistaken huge value is shown cut in the message, not whole."""
        with pytest.raises(TypeError) as info:
            Limits(max_input_bytes="x" * 1_000_000)  # type: ignore[arg-type]
        assert len(str(info.value)) < 200

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"timeout": 0}, "timeout must be a positive number of seconds, got 0"),
            ({"timeout": math.nan}, "timeout must be a positive number of seconds, got nan"),
            ({"max_input_bytes": 0}, "max_input_bytes must be at least 1, got 0"),
            ({"max_input_depth": -1}, "max_input_depth must be at least 1, got -1"),
        ],
    )
    @pytest.mark.parametrize("decorator", [tool, tool_registry], ids=["tool", "tool_registry"])
    def test_invalid_decorator_options_are_refused(self, decorator, kwargs, message):
        """``@tool(...)`` and ``@tool_registry(...)`` refuse bad limits when they are applied."""
        with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
            decorator(**kwargs)

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"max_input_bytes": math.nan}, "max_input_bytes must be an int, not float nan"),
            ({"max_input_depth": 1.5}, "max_input_depth must be an int, not float 1.5"),
            ({"max_input_bytes": True}, "max_input_bytes must be an int, not bool True"),
            ({"timeout": True}, "timeout must be a number of seconds, not bool"),
            ({"timeout": "5"}, "timeout must be a number of seconds, not str"),
        ],
    )
    @pytest.mark.parametrize("decorator", [tool, tool_registry], ids=["tool", "tool_registry"])
    def test_decorator_options_of_the_wrong_type_are_refused(self, decorator, kwargs, message):
        """A NaN size passed the range check (`nan < 1` is false) and then allowed any
        input; a bool is not a size."""
        with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
            decorator(**kwargs)


# -- input_limit_problem ----------------------------------------------------------------------


class TestInputLimitProblem:
    def test_within_limits(self):
        """An input within both limits has no problem."""
        assert input_limit_problem('{"a": [1, [2]]}', 100, 3) is None

    def test_size_at_the_limit_is_allowed(self):
        """Exactly ``max_bytes`` bytes is allowed; one more is not."""
        assert input_limit_problem(sized_input(50), 50, 10) is None
        assert input_limit_problem(sized_input(51), 50, 10) == too_big(51, 50)

    def test_size_counts_utf8_bytes_not_characters(self):
        """Size is in UTF-8 bytes: 30 characters of 'é' are 60 bytes."""
        text = '"' + "é" * 30 + '"'
        assert len(text) == 32
        assert input_limit_problem(text, 61, 10) == too_big(62, 61)
        assert input_limit_problem(text, 62, 10) is None
        assert input_limit_problem("😀" * 10, 39, 10) == too_big(40, 39)

    def test_depth_at_the_limit_is_allowed(self):
        """Exactly ``max_depth`` levels are allowed; one more is not."""
        assert input_limit_problem(nested_input(5), 1000, 5) is None
        assert input_limit_problem(nested_input(6), 1000, 5) == too_deep(5)

    def test_brackets_inside_strings_do_not_count(self):
        """Brackets inside JSON strings, escaped quotes included, are not nesting."""
        text = '{"t": "[[[[[[[[{{{{{{", "u": "\\"[[[[[[[[\\"", "v": [["]]]]"]]}'
        assert input_limit_problem(text, 1000, 3) is None
        assert input_limit_problem(text, 1000, 2) == too_deep(2)

    def test_sibling_containers_are_not_nesting(self):
        """Many brackets side by side are one level deep, not many."""
        text = "[" + ",".join(["[]"] * 500) + "]"
        assert input_limit_problem(text, 10_000, 2) is None

    def test_unbalanced_input_is_judged_by_its_deepest_point(self):
        """Invalid JSON (unclosed brackets) is still refused once it nests too deep."""
        assert input_limit_problem("[" * 10, 1000, 9) == too_deep(9)
        assert input_limit_problem("[" * 9, 1000, 9) is None

    def test_size_is_reported_before_depth(self):
        """An input over both limits is reported for its size."""
        assert input_limit_problem("[" * 200, 100, 3) == too_big(200, 100)

    @settings(max_examples=100)
    @given(st.recursive(st.integers() | st.text(max_size=5), lambda c: st.lists(c, max_size=3)))
    def test_depth_agrees_with_the_nesting_of_the_value(self, value):
        """For any JSON value, the reported depth problem agrees with its real nesting."""

        def depth(v: Any) -> int:
            return 1 + max(map(depth, v), default=0) if isinstance(v, list) else 0

        text = json.dumps(value)
        real = depth(value)
        assert input_limit_problem(text, 10**6, max(real, 1)) is None
        if real > 1:
            assert input_limit_problem(text, 10**6, real - 1) == too_deep(real - 1)


# -- input limits of generated tools ------------------------------------------------------------


class TestGeneratedToolInputLimits:
    @pytest.mark.parametrize(("cls", "method", "max_bytes", "max_depth"), PRECEDENCE)
    @pytest.mark.anyio
    async def test_size_limit_and_precedence(self, cls, method, max_bytes, max_depth):
        """An input one byte over the tool's size limit (tool > registry > default) is refused;
        one at the limit runs."""
        app = cls()
        execute = getattr(type(app), method).definition(app)()[1].execute
        assert await execute(sized_input(max_bytes)) in ("ok", f"took {max_bytes - 12} chars")
        with pytest.raises(InvalidArgumentError) as info:
            await execute(sized_input(max_bytes + 1))
        assert str(info.value) == f"Invalid argument: {too_big(max_bytes + 1, max_bytes)}"
        assert app.calls == 1

    @pytest.mark.parametrize(("cls", "method", "max_bytes", "max_depth"), PRECEDENCE)
    @pytest.mark.anyio
    async def test_depth_limit_and_precedence(self, cls, method, max_bytes, max_depth):
        """An input one level deeper than the tool's depth limit (tool > registry > default)
        is refused; one at the limit runs."""
        app = cls()
        execute = getattr(type(app), method).definition(app)()[1].execute
        await execute(nested_input(max_depth))
        with pytest.raises(InvalidArgumentError) as info:
            await execute(nested_input(max_depth + 1))
        assert info.value.message == too_deep(max_depth)
        assert app.calls == 1

    @pytest.mark.anyio
    async def test_limits_are_checked_before_validation(self):
        """Input over a limit gets the limit's message even when it is not JSON at all,
        and the method is not called."""
        app = Registry()
        execute = app.own.definition()()[1].execute
        with pytest.raises(InvalidArgumentError) as info:
            await execute("[" * 40)
        assert info.value.message == too_deep(3)
        with pytest.raises(InvalidArgumentError) as info:
            await execute("not json " * 10)
        assert info.value.message == too_big(90, 50)
        assert app.calls == 0

    @pytest.mark.anyio
    async def test_through_the_handle_the_error_is_chained(self):
        """Through ``call_tool`` the refusal is a ToolExecutionError chained to the
        InvalidArgumentError."""
        server = ToolServer()
        server.register_tools(tool_definitions(Registry()))
        with pytest.raises(ToolExecutionError) as info:
            await server.handle().call_tool("own", sized_input(60))
        assert str(info.value) == f"Tool execution failed: Invalid argument: {too_big(60, 50)}"
        assert isinstance(info.value.__cause__, InvalidArgumentError)


# -- input limits of a Worker ---------------------------------------------------------------------


class TestWorkerInputLimits:
    @pytest.mark.anyio
    async def test_size_limit_applies_to_a_hand_written_tool(self):
        """A hand-written tool is held to the worker's size limit: it is not called and the
        model reads the limit."""
        hand = CountingTool()
        rig = Rig(hand_written("hand", hand), limits=Limits(max_input_bytes=100))
        big, fits = '"' + "é" * 60 + '"', '"' + "é" * 49 + '"'
        results = await rig.results([ScriptedCall("hand", big), ScriptedCall("hand", fits)])
        assert results[0].content == f"Invalid argument: {too_big(122, 100)}"
        assert results[0].is_error
        assert results[1] == ToolResult(results[1].call_id, "ok", False)
        assert hand.inputs == [fits]

    @pytest.mark.anyio
    async def test_depth_limit_applies_to_a_hand_written_tool(self):
        """A hand-written tool is held to the worker's depth limit."""
        hand = CountingTool()
        rig = Rig(hand_written("hand", hand), limits=Limits(max_input_depth=4))
        results = await rig.results(
            [ScriptedCall("hand", nested_input(5)), ScriptedCall("hand", nested_input(4))],
        )
        assert results[0].content == f"Invalid argument: {too_deep(4)}"
        assert results[0].is_error
        assert results[1].content == "ok"
        assert hand.inputs == [nested_input(4)]

    @pytest.mark.anyio
    async def test_worker_limit_is_applied_before_a_looser_tool_limit(self):
        """A generated tool whose own limit is looser is refused at the worker's limit."""
        app = Defaults()
        rig = Rig(*tool_definitions(app), limits=Limits(max_input_bytes=30, max_input_depth=2))
        results = await rig.results(
            [ScriptedCall("take", sized_input(31)), ScriptedCall("take", nested_input(3))]
        )
        assert [r.content for r in results] == [
            f"Invalid argument: {too_big(31, 30)}",
            f"Invalid argument: {too_deep(2)}",
        ]
        assert app.calls == 0

    @pytest.mark.anyio
    async def test_a_tighter_tool_limit_reports_its_own_value(self):
        """Within the worker's limits, a tool's tighter limit refuses with its own numbers."""
        rig = Rig(*tool_definitions(Registry()))
        results = await rig.results(
            [ScriptedCall("own", sized_input(51)), ScriptedCall("own", nested_input(4))]
        )
        assert [r.content for r in results] == [
            f"Invalid argument: {too_big(51, 50)}",
            f"Invalid argument: {too_deep(3)}",
        ]

    @pytest.mark.anyio
    async def test_a_hook_rewritten_input_is_what_is_checked(self):
        """The limits apply to the call as the pre-tool-call hooks left it."""
        hand = CountingTool()
        rig = Rig(hand_written("hand", hand), limits=Limits(max_input_bytes=20))

        def shrink(ctx):
            ctx.call = dataclasses.replace(ctx.call, input_json="{}")

        rig.worker.add_pre_tool_call_hook(shrink)
        results = await rig.results([ScriptedCall("hand", "x" * 500)])
        assert results[0].content == "ok"
        assert hand.inputs == ["{}"]


# -- cap_result ----------------------------------------------------------------------------------


class TestCapResult:
    @pytest.mark.parametrize(
        "char", ["a", "é", "€", "😀"], ids=["1-byte", "2-byte", "3-byte", "4-byte"]
    )
    def test_text_at_the_cap_is_unchanged(self, char):
        """A text of exactly ``max_bytes`` bytes (or less) comes back unchanged."""
        width = len(char.encode())
        text = char * (1200 // width)
        assert len(text.encode()) == 1200
        assert cap_result(text, 1200) is text
        assert cap_result(text, 5000) is text
        assert cap_result("", 1) == ""

    @pytest.mark.parametrize(
        "char", ["a", "é", "€", "😀"], ids=["1-byte", "2-byte", "3-byte", "4-byte"]
    )
    @pytest.mark.parametrize("max_bytes", range(1000, 1004))
    def test_never_splits_a_character(self, char, max_bytes):
        """Whatever byte the cap falls on, the kept text is whole characters, a prefix of the
        text, and the note's numbers add up: kept bytes + dropped = total."""
        text = char * 2000
        total = len(text.encode())
        capped = cap_result(text, max_bytes)
        kept, dropped, reported_total = split_capped(capped)
        assert text.startswith(kept)
        assert kept == char * len(kept)
        assert reported_total == total
        assert len(kept.encode()) + dropped == total
        assert len(capped.encode()) <= max_bytes

    def test_one_byte_over_is_truncated(self):
        """A text one byte over the cap is truncated and says so."""
        text = "a" * 1000 + "é"
        capped = cap_result(text, 1001)
        kept, dropped, total = split_capped(capped)
        assert total == 1002
        assert kept + text[len(kept) :] == text
        assert len(kept) + dropped == 1002

    def test_note_text(self):
        """The note tells the model how much was dropped and to narrow its request."""
        capped = cap_result("x" * 10_000, 1000)
        kept, dropped, _ = split_capped(capped)
        assert capped == kept + (
            f"\n[truncated: {dropped} of 10000 bytes dropped; "
            "narrow the request (filter, paginate or ask for less) to see the rest]"
        )

    @settings(max_examples=200)
    @given(text=st.text(min_size=0, max_size=3000), max_bytes=st.integers(200, 4000))
    @example(text="é" * 1500, max_bytes=2999)
    @example(text="😀" * 1000, max_bytes=3998)
    def test_any_text(self, text, max_bytes):
        """For any text and cap: unchanged if it fits; otherwise a prefix of whole characters
        plus a correct note, never longer than the cap, using nearly all of it."""
        data = text.encode("utf-8", "surrogatepass")
        capped = cap_result(text, max_bytes)
        if len(data) <= max_bytes:
            assert capped == text
            return
        kept, dropped, total = split_capped(capped)
        assert text.startswith(kept)
        assert total == len(data)
        assert len(kept.encode()) + dropped == total
        assert max_bytes - 64 < len(capped.encode()) <= max_bytes


class TestCapTexts:
    @settings(max_examples=200)
    @given(
        texts=st.lists(st.text(max_size=400), max_size=30),
        max_bytes=st.integers(256, 4000),
    )
    @example(texts=["x" * 300] * 200, max_bytes=1000)
    def test_the_texts_of_one_result_share_the_cap(self, texts, max_bytes):
        """Joined by lines they fit the cap: the first ones whole, the one that crosses it
        cut with the note (counting what all of them lost), none after it."""
        capped = cap_texts(texts, max_bytes, separator=1)
        joined = "\n".join(texts).encode("utf-8", "surrogatepass")
        if len(joined) <= max_bytes:
            assert capped == texts
            return
        assert len("\n".join(capped).encode()) <= max_bytes
        *whole, last = capped
        assert whole == texts[: len(whole)]
        kept, dropped, total = split_capped(last)
        assert texts[len(whole)].startswith(kept)
        assert total == len(joined)
        assert len("\n".join([*whole, kept]).encode()) + dropped == total

    def test_one_text_is_capped_as_cap_result_caps_it(self):
        assert cap_texts(["é" * 900], 1000) == [cap_result("é" * 900, 1000)]

    def test_a_lone_surrogate_the_cut_keeps_stays_for_the_caller_to_replace(self):
        """The cut keeps lone surrogates (3 bytes each, as counted), so a file name read
        from the disk reads as itself with U+FFFD, never as another name without it."""
        text = "caf\udce9.txt\n" + "x" * 5_000
        cut = cap_result(text, 1_000)
        assert cut.startswith("caf\udce9.txt\n")
        assert len(valid_text(text, 1_000).encode()) <= 1_000
        assert valid_text(text, 1_000).startswith("caf\ufffd.txt\n")
        many = cap_result("\udce9" * 200_000, 100_000)
        assert many.count("\udce9") > 30_000  # not the note alone


class RichTool:
    """A hand-written ``Tool`` that answers a ``ToolReturn`` of many text parts."""

    async def execute(self, input_json: str) -> ToolReturn:
        return ToolReturn([TextPart(f"part {n}: " + "x" * 300) for n in range(200)])


class TestRichResultCap:
    @pytest.mark.anyio
    async def test_a_result_of_many_text_parts_is_capped_as_a_whole(self):
        """Each part got room of its own (256 bytes once the cap was spent): 200 parts
        reached the model as 48 KB with a cap of 1 000 bytes."""
        rig = Rig(hand_written("rich", RichTool()), limits=Limits(max_result_bytes=1000))
        [result] = await rig.results([ScriptedCall("rich")])
        assert len(result.content.encode()) <= 1000
        assert result.content.startswith("part 0: xxx")
        _, _, total = split_capped(result.content)
        assert total == sum(len(f"part {n}: ") + 300 for n in range(200)) + 199  # + the lines


class TestWorkerResultCap:
    @pytest.mark.anyio
    async def test_long_result_is_capped(self):
        """A result over ``max_result_bytes`` reaches the model cut, with the note."""
        text = "€" * 1000
        rig = Rig(hand_written("long", Returns(text)), limits=Limits(max_result_bytes=500))
        [result] = await rig.results([ScriptedCall("long")])
        assert result.content == cap_result(text, 500)
        kept, dropped, total = split_capped(result.content)
        assert (len(kept.encode()) + dropped, total) == (3000, 3000)
        assert not result.is_error

    @pytest.mark.anyio
    async def test_result_at_the_cap_is_untouched(self):
        """A result of exactly ``max_result_bytes`` bytes is passed on unchanged."""
        text = "é" * 250
        rig = Rig(hand_written("fits", Returns(text)), limits=Limits(max_result_bytes=500))
        [result] = await rig.results([ScriptedCall("fits")])
        assert result.content == text

    @pytest.mark.anyio
    async def test_long_error_is_capped_too(self):
        """An error text over the cap is cut the same way and stays an error."""

        @tool_registry
        class Loud:
            @tool
            async def shout(self) -> str:
                raise ExecutionFailedError("A" * 5000)

        rig = Rig(*tool_definitions(Loud()), limits=Limits(max_result_bytes=1000))
        [result] = await rig.results([ScriptedCall("shout")])
        kept, _, total = split_capped(result.content)
        assert kept.startswith("Execution failed: AAAA")
        assert total == len("Execution failed: ") + 5000
        assert result.is_error

    @pytest.mark.anyio
    async def test_default_cap_is_100_000_bytes(self):
        """With default limits a 100 000-byte result passes and a 100 001-byte one is cut."""
        rig = Rig(
            hand_written("fits", Returns("x" * 100_000)),
            hand_written("over", Returns("x" * 100_001)),
        )
        fits, over = await rig.results([ScriptedCall("fits"), ScriptedCall("over")])
        assert fits.content == "x" * 100_000
        kept, dropped, total = split_capped(over.content)
        assert (len(kept) + dropped, total) == (100_001, 100_001)


# -- model_safe_text -----------------------------------------------------------------------------


class Widget:
    def poke(self) -> None:
        pass


def helper() -> None:
    pass


class TestModelSafeText:
    def test_file_not_found_loses_its_path(self):
        """An OSError's absolute path is replaced by ``<path>``."""
        exc = FileNotFoundError(2, "No such file or directory", "/srv/app/data/report.csv")
        assert model_safe_text(exc) == "[Errno 2] No such file or directory: '<path>'"

    def test_windows_path_is_hidden(self):
        """A Windows absolute path is replaced too."""
        exc = OSError(r"cannot open C:\Users\bob\secrets\key.txt now")
        assert model_safe_text(exc) == "cannot open <path> now"

    def test_urls_and_relative_paths_are_kept(self):
        """URLs and relative paths are not file paths of this machine: they stay."""
        exc = ValueError("see https://example.com/a/b/c and data/input.csv")
        assert model_safe_text(exc) == "see https://example.com/a/b/c and data/input.csv"

    def test_object_repr_loses_its_address(self):
        """``<mod.Widget object at 0x...>`` becomes ``<Widget object>``."""
        exc = ValueError(f"cannot use {Widget()} here")
        assert model_safe_text(exc) == "cannot use <Widget object> here"
        assert model_safe_text(ValueError(str(object()))) == "<object object>"

    def test_function_repr_loses_its_address(self):
        """A function's repr (``<function helper at 0x...>``) keeps its words, not its address."""
        assert model_safe_text(ValueError(f"bad callback {helper}")) == (
            "bad callback <function helper>"
        )

    def test_nested_reprs_lose_every_address(self):
        """A bound method's repr, which holds an object repr, keeps no address either."""
        text = model_safe_text(ValueError(f"cannot call {Widget().poke}"))
        assert text == "cannot call <bound method Widget.poke of <Widget object>>"

    def test_long_message_is_shortened(self):
        """A message over 500 characters is cut to 500, ending in an ellipsis."""
        text = model_safe_text(ValueError("x" * 2000))
        assert text == "x" * 499 + "…"

    def test_empty_message_gives_the_class_name(self):
        """An exception without a message is named by its class."""
        assert model_safe_text(KeyError()) == "KeyError"
        assert model_safe_text(ValueError("   ")) == "ValueError"

    def test_embedded_traceback_is_dropped(self):
        """A message carrying a traceback keeps only its first line."""
        exc = RuntimeError(
            "worker died\nTraceback (most recent call last):\n"
            '  File "/srv/app/job.py", line 3, in run\nKeyError: 1'
        )
        assert model_safe_text(exc) == "worker died"

    def test_plain_multiline_message_is_kept(self):
        """A multi-line message without a traceback is kept as it is."""
        assert model_safe_text(ValueError("first\nsecond")) == "first\nsecond"


class TestModelFacingErrors:
    @pytest.mark.anyio
    async def test_generated_tool_error_is_scrubbed_and_logged(self, caplog):
        """The model reads a scrubbed text; the ``llm_worker`` logger gets the tool's own
        exception at ERROR, as it does for a hand-written tool's bug."""

        @tool_registry
        class Files:
            @tool
            def read(self, name: str) -> str:
                raise FileNotFoundError(2, "No such file or directory", f"/srv/app/{name}")

        caplog.set_level(logging.INFO, logger="llm_worker")
        rig = Rig(*tool_definitions(Files()))
        [result] = await rig.results([ScriptedCall("read", {"name": "x.txt"})])
        assert result.content == "Execution failed: [Errno 2] No such file or directory: '<path>'"
        assert result.is_error
        [record] = [r for r in caplog.records if r.name == "llm_worker"]
        assert record.levelno == logging.ERROR
        assert record.getMessage() == (
            "Tool 'read' raised FileNotFoundError: "
            "Execution failed: [Errno 2] No such file or directory: '<path>'"
        )
        assert record.exc_info is not None
        original = record.exc_info[1]
        assert isinstance(original, FileNotFoundError)
        assert original.filename == "/srv/app/x.txt"

    @pytest.mark.anyio
    async def test_hand_written_tool_crash_is_an_internal_error(self, caplog):
        """A hand-written tool raising a non-ToolError: the model reads only the exception's
        class; the exception is logged at ERROR."""
        exc = RuntimeError(f"broken {Widget()} in /srv/app/x.py")
        rig = Rig(hand_written("hand", Raises(exc)))
        caplog.set_level(logging.INFO, logger="llm_worker")
        [result] = await rig.results([ScriptedCall("hand")])
        assert result.content == "Internal error: tool 'hand' failed unexpectedly (RuntimeError)"
        [record] = [r for r in caplog.records if r.name == "llm_worker"]
        assert record.levelno == logging.ERROR
        assert record.getMessage() == "Tool 'hand' raised RuntimeError"
        assert record.exc_info is not None
        assert record.exc_info[1] is exc

    @pytest.mark.anyio
    async def test_model_never_reads_paths_reprs_or_tracebacks(self):
        """Across failure kinds, no result text has a traceback, an absolute path or an
        object address."""

        @tool_registry
        class Nasty:
            @tool
            async def deep_fail(self) -> str:
                try:
                    {}["k"]
                except KeyError as exc:
                    raise ValueError(f"lookup in {Widget()} at /opt/app/lookup.py") from exc
                return "unreachable"

            @tool
            def thread_fail(self) -> str:
                open("/nonexistent/dir/file.txt")  # noqa: SIM115
                return "unreachable"

        rig = Rig(
            *tool_definitions(Nasty()),
            hand_written("hand", Raises(OSError("/etc/shadow: denied"))),
        )
        results = await rig.results(
            [
                ScriptedCall("deep_fail"),
                ScriptedCall("thread_fail"),
                ScriptedCall("hand"),
                ScriptedCall("deep_fail", {"unexpected": object.__name__}),
            ],
        )
        assert [r.content for r in results] == [
            "Execution failed: lookup in <Widget object> at <path>",
            "Execution failed: [Errno 2] No such file or directory: '<path>'",
            "Internal error: tool 'hand' failed unexpectedly (OSError)",
            "Invalid argument: 'unexpected': unexpected argument (this tool takes: no arguments)",
        ]
        for result in results:
            assert "Traceback" not in result.content
            assert not re.search(r"0x[0-9a-f]{4,}", result.content)
            assert "/opt" not in result.content
            assert "/nonexistent" not in result.content


class TestHostileInputTakesLinearTime:
    def test_unterminated_string_with_escaped_quotes(self):
        """An unterminated string full of escaped quotes is scanned in linear time.

        (It once took quadratic time, freezing the event loop for seconds on 60 KB.)
        Run in a subprocess with a generous bound, so a regression fails instead of hanging.
        """
        import subprocess
        import sys

        code = (
            "from llm_worker._limits import input_limit_problem\n"
            "bad = '\"' + '\\\\\"' * 200_000 + '[' * 65\n"
            "print(input_limit_problem(bad, 10_000_000, 64))\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        # Inside a string (even an unterminated one) brackets do not nest.
        assert done.stdout == "None\n"


class TestOsErrorPaths:
    @pytest.mark.parametrize(
        "filename",
        [r"C:\Users\bob\key.txt", "/home/bob/My Documents/tax 2024.pdf", "relative/secret.txt"],
    )
    def test_os_error_filenames_are_scrubbed(self, filename):
        """An OSError's file name never reaches the model, whatever its form."""
        text = model_safe_text(FileNotFoundError(2, "No such file or directory", filename))
        assert text == "[Errno 2] No such file or directory: '<path>'"


class TestCapResultCopiesLittle:
    @pytest.mark.parametrize("char", ["x", "é", "😀"])
    def test_capping_a_huge_result_never_copies_it_whole(self, char):
        """Capping 20 MB of text costs well under a megabyte, whatever its characters.

        (Encoding it whole cost one and a half times its size.)
        """
        import tracemalloc

        text = char * (20_000_000 // len(char.encode()))
        tracemalloc.start()
        try:
            capped = cap_result(text, 1000)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        kept, dropped, total = split_capped(capped)
        assert total == len(text.encode())
        assert len(kept.encode()) + dropped == total
        assert peak < 1_000_000

    @given(
        text=st.text(st.characters(exclude_categories=())),  # lone surrogates too
        max_bytes=st.integers(min_value=256, max_value=2000),
    )
    def test_same_as_encoding_it_whole(self, text, max_bytes):
        """The chunked count agrees with encoding the text whole, lone surrogates included."""
        capped = cap_result(text, max_bytes)
        data = text.encode("utf-8", "surrogatepass")
        if len(data) <= max_bytes:
            assert capped is text
        else:
            kept, dropped, total = split_capped(capped)
            assert total == len(data)
            assert dropped == len(data) - len(kept.encode("utf-8", "surrogatepass"))
