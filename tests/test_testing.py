"""``llm_worker.testing.ScriptedClient``: the public test double that replays a script."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

import anyio
import pytest
from support import Lab

from llm_worker import (
    AssistantMessage,
    Completion,
    LlmClientError,
    LlmEvent,
    LlmRequest,
    ProviderError,
    ProviderItem,
    ProviderItemDone,
    ReasoningDelta,
    TextDelta,
    ToolInputDelta,
    ToolUseStart,
    ToolUseStop,
    Usage,
    UserMessage,
    Worker,
    tool_definitions,
)
from llm_worker.testing import (
    ScriptedCall,
    ScriptedClient,
    ScriptedResponse,
    ScriptExhaustedError,
)

REQUEST = LlmRequest(system_prompt=None, messages=(UserMessage("hi"),), tools=())


async def events_of(client: ScriptedClient, request: LlmRequest = REQUEST) -> list[LlmEvent]:
    return [event async for event in client.stream(request)]


class TestScriptedCall:
    def test_string_arguments_are_sent_as_they_are(self):
        """String arguments are the input JSON, byte for byte (even if not valid JSON)."""
        assert ScriptedCall("x", '{"a" : 1 }').input_json == '{"a" : 1 }'
        assert ScriptedCall("x", "not json").input_json == "not json"

    def test_mapping_arguments_are_dumped(self):
        """Mapping arguments become JSON text, non-ASCII kept as is."""
        assert ScriptedCall("x", {"q": "café", "n": [1, None]}).input_json == (
            '{"q": "café", "n": [1, null]}'
        )

    def test_defaults(self):
        """A call defaults to "{}" arguments and no fixed id."""
        call = ScriptedCall("x")
        assert call.input_json == "{}"
        assert call.id is None


class TestScriptedClient:
    @pytest.mark.anyio
    async def test_plain_string_step(self):
        """A str step is a text answer: one TextDelta, then Completion("end_turn")."""
        client = ScriptedClient(["Hello there"])
        assert await events_of(client) == [TextDelta("Hello there"), Completion("end_turn")]

    @pytest.mark.anyio
    async def test_response_with_text_and_calls(self):
        """A response streams its text, then each call's start, input and stop, then Completion."""
        client = ScriptedClient(
            [
                ScriptedResponse(
                    "Looking.",
                    [ScriptedCall("search", {"q": "cats"}), ScriptedCall("ping", id="mine")],
                )
            ]
        )
        assert await events_of(client) == [
            TextDelta("Looking."),
            ToolUseStart(0, "call_0_0", "search"),
            ToolInputDelta(0, '{"q": "cats"}'),
            ToolUseStop(0),
            ToolUseStart(1, "mine", "ping"),
            ToolInputDelta(1, "{}"),
            ToolUseStop(1),
            Completion("tool_use"),
        ]

    @pytest.mark.anyio
    async def test_empty_response(self):
        """An empty response is just a Completion."""
        client = ScriptedClient([ScriptedResponse()])
        assert await events_of(client) == [Completion("end_turn")]

    @pytest.mark.anyio
    async def test_ids_number_requests_and_calls(self):
        """Default call ids are call_<request number>_<call index>; explicit ids are kept."""
        one = ScriptedResponse(tool_calls=[ScriptedCall("a"), ScriptedCall("b")])
        client = ScriptedClient(
            [one, one, ScriptedResponse(tool_calls=[ScriptedCall("a", id="z")])]
        )
        ids = []
        for _ in range(3):
            ids.append([e.call_id for e in await events_of(client) if isinstance(e, ToolUseStart)])
        assert ids == [["call_0_0", "call_0_1"], ["call_1_0", "call_1_1"], ["z"]]

    @pytest.mark.anyio
    async def test_stop_reason_and_usage(self):
        """A response's stop_reason and usage go into its Completion."""
        usage = Usage(10, 2)
        client = ScriptedClient([ScriptedResponse("x", stop_reason="max_tokens", usage=usage)])
        events = await events_of(client)
        assert events[-1] == Completion("max_tokens", usage)

    @pytest.mark.anyio
    async def test_records_every_request(self):
        """Every request is recorded in order, as the very object the caller sent."""
        client = ScriptedClient(["a", "b"])
        second = LlmRequest("sys", (), ())
        await events_of(client)
        await events_of(client, second)
        assert client.requests == [REQUEST, second]
        assert client.requests[1] is second

    @pytest.mark.anyio
    async def test_callable_step_receives_the_request(self):
        """A callable step is called with the request and may return a str or a response."""
        seen: list[LlmRequest] = []

        def by_request(request: LlmRequest) -> str:
            seen.append(request)
            return f"{len(request.messages)} messages"

        def as_response(request: LlmRequest) -> ScriptedResponse:
            return ScriptedResponse(tool_calls=[ScriptedCall("echo", {"text": "x"})])

        client = ScriptedClient([by_request, as_response])
        assert await events_of(client) == [TextDelta("1 messages"), Completion("end_turn")]
        assert seen == [REQUEST]
        assert (await events_of(client))[0] == ToolUseStart(0, "call_1_0", "echo")

    @pytest.mark.anyio
    async def test_exhausted_script(self):
        """A request past the end raises ScriptExhaustedError (a RuntimeError), still recorded."""
        client = ScriptedClient(["only"])
        await events_of(client)
        with pytest.raises(ScriptExhaustedError) as info:
            await events_of(client)
        assert str(info.value) == (
            "ScriptedClient got request #2 but its script has 1 responses; the request ends "
            "with UserMessage(text='hi')"
        )
        assert isinstance(info.value, RuntimeError)
        assert len(client.requests) == 2

    @pytest.mark.anyio
    async def test_exhausted_script_through_a_worker(self):
        """A Worker whose script runs out raises ScriptExhaustedError from run()."""
        client = ScriptedClient(
            [ScriptedResponse(tool_calls=[ScriptedCall("echo", {"text": "a"})])]
        )
        worker = Worker(client)
        worker.register_tools(tool_definitions(Lab()))
        with pytest.raises(
            ScriptExhaustedError, match=r"^ScriptedClient got request #2 but its script has 1 "
        ):
            await worker.run("go")

    @pytest.mark.anyio
    async def test_add_and_remaining(self):
        """add() appends steps; remaining counts the unused ones."""
        client = ScriptedClient(["a"])
        assert client.remaining == 1
        client.add("b", ScriptedResponse("c"))
        assert client.remaining == 3
        await events_of(client)
        assert client.remaining == 2
        assert [e for e in await events_of(client) if isinstance(e, TextDelta)] == [TextDelta("b")]

    @pytest.mark.anyio
    async def test_a_step_added_after_the_script_ran_out_is_the_next_one(self):
        """The request that found no step used none: the step added next answers the next."""
        client = ScriptedClient(["a"])
        await events_of(client)
        with pytest.raises(ScriptExhaustedError):
            await events_of(client)
        client.add("b")
        assert client.remaining == 1
        with anyio.fail_after(5):
            assert [e for e in await events_of(client) if isinstance(e, TextDelta)] == [
                TextDelta("b")
            ]
        assert client.remaining == 0
        assert len(client.requests) == 3
        with pytest.raises(ScriptExhaustedError, match=r"^ScriptedClient got request #4 but its"):
            await events_of(client)

    def test_repr(self):
        """repr shows requests made and steps remaining."""
        assert repr(ScriptedClient(["a", "b"])) == "<ScriptedClient requests=0 remaining=2>"


class TestChunking:
    @pytest.mark.anyio
    async def test_response_chunk_size_splits_text_and_arguments(self):
        """chunk_size splits the text and each argument JSON into pieces of that many chars."""
        client = ScriptedClient(
            [ScriptedResponse("abcdefg", [ScriptedCall("t", '{"a":1}')], chunk_size=3)]
        )
        assert await events_of(client) == [
            TextDelta("abc"),
            TextDelta("def"),
            TextDelta("g"),
            ToolUseStart(0, "call_0_0", "t"),
            ToolInputDelta(0, '{"a'),
            ToolInputDelta(0, '":1'),
            ToolInputDelta(0, "}"),
            ToolUseStop(0),
            Completion("tool_use"),
        ]

    @pytest.mark.anyio
    async def test_client_chunk_size_applies_to_every_step(self):
        """ScriptedClient(chunk_size=n) splits plain str steps too."""
        client = ScriptedClient(["héllo"], chunk_size=2)
        assert await events_of(client) == [
            TextDelta("hé"),
            TextDelta("ll"),
            TextDelta("o"),
            Completion("end_turn"),
        ]

    @pytest.mark.anyio
    async def test_response_chunk_size_wins_over_the_clients(self):
        """A response's own chunk_size overrides the client's."""
        client = ScriptedClient([ScriptedResponse("abcd", chunk_size=2)], chunk_size=1)
        assert await events_of(client) == [TextDelta("ab"), TextDelta("cd"), Completion("end_turn")]

    @pytest.mark.anyio
    async def test_interleave_alternates_fragments(self):
        """interleave=True alternates the calls' fragments after all starts, then all stops."""
        client = ScriptedClient(
            [
                ScriptedResponse(
                    tool_calls=[ScriptedCall("a", "1234"), ScriptedCall("b", "56")],
                    chunk_size=1,
                    interleave=True,
                )
            ]
        )
        assert await events_of(client) == [
            ToolUseStart(0, "call_0_0", "a"),
            ToolUseStart(1, "call_0_1", "b"),
            ToolInputDelta(0, "1"),
            ToolInputDelta(1, "5"),
            ToolInputDelta(0, "2"),
            ToolInputDelta(1, "6"),
            ToolInputDelta(0, "3"),
            ToolInputDelta(0, "4"),
            ToolUseStop(0),
            ToolUseStop(1),
            Completion("tool_use"),
        ]

    @pytest.mark.anyio
    async def test_chunks_rejoin_to_the_original(self):
        """For any chunk size, the fragments of a call join back to its input JSON."""
        arguments = r'{"q": "caf\u00e9 \ud83d\ude00 ü"}'
        for size in range(1, len(arguments) + 2):
            client = ScriptedClient(
                [ScriptedResponse(tool_calls=[ScriptedCall("t", arguments)], chunk_size=size)]
            )
            pieces = [e.fragment for e in await events_of(client) if isinstance(e, ToolInputDelta)]
            assert "".join(pieces) == arguments
            assert all(len(p) <= size for p in pieces)
            assert len(pieces) == -(-len(arguments) // size)


class TestScriptChecks:
    @pytest.mark.parametrize("chunk_size", [0, -1, 1.5, True, "2"])
    def test_chunk_size_is_checked_when_the_script_is_written(self, chunk_size):
        """A chunk_size that is not a whole number of at least 1 is refused at once,
        by the response and by the client, not at the request that would use it."""
        expected = f"chunk_size must be a whole number of at least 1, got {chunk_size!r}"
        with pytest.raises(ValueError, match=re.escape(expected)):
            ScriptedResponse(text="hello", chunk_size=chunk_size)
        with pytest.raises(ValueError, match=re.escape(expected)):
            ScriptedClient(["hello"], chunk_size=chunk_size)

    def test_a_step_that_is_no_response_is_refused_when_the_script_is_written(self):
        """A step that is neither a response, a str nor a function fails at once, by number."""
        expected = (
            "ScriptedClient step #2 is int, not a ScriptedResponse, a str or a function of "
            "the request returning one"
        )
        with pytest.raises(TypeError, match=f"^{re.escape(expected)}$"):
            ScriptedClient(["fine", 42])  # type: ignore[list-item]
        client = ScriptedClient(["fine"])
        with pytest.raises(TypeError, match=f"^{re.escape(expected)}$"):
            client.add(42)  # type: ignore[arg-type]
        assert client.remaining == 1

    @pytest.mark.anyio
    async def test_a_function_step_returning_no_response_names_the_step(self):
        """It failed with "AttributeError: 'int' object has no attribute 'chunk_size'"."""

        def count(request: LlmRequest) -> int:
            return len(request.messages)

        client = ScriptedClient(["first", count])  # type: ignore[list-item]
        await events_of(client)
        with pytest.raises(TypeError) as info, anyio.fail_after(5):
            await events_of(client)
        assert str(info.value) == (
            f"ScriptedClient step #2 ({count.__qualname__}) returned int, not a "
            f"ScriptedResponse or a str"
        )

    def test_remaining_never_negative(self):
        """remaining stays at 0 once the script has run out."""
        client = ScriptedClient(["only"])

        async def go() -> None:
            for _ in range(2):
                with contextlib.suppress(ScriptExhaustedError):
                    async for _ in client.stream(LlmRequest(None, (), ())):
                        pass

        anyio.run(go)
        assert client.remaining == 0


class TestScriptsAsWritten:
    def test_a_single_step_without_a_list_is_refused(self):
        """ScriptedClient("Paris") answered "P", then "a", "r"...: a str is an iterable of
        steps to the type checkers, so the constructor refuses it, and one response."""
        for single in ("Paris", ScriptedResponse("Paris"), lambda request: "Paris"):
            with pytest.raises(TypeError, match=r"^ScriptedClient takes a list of steps, not "):
                ScriptedClient(single)  # type: ignore[arg-type]

    @pytest.mark.anyio
    async def test_an_endless_iterator_answers_every_request(self):
        """itertools.repeat("ok") filled memory when the client was made: an iterator's
        steps are taken as requests come."""
        taken = 0

        def endless() -> Iterator[str]:  # as itertools.repeat("ok"), but it counts
            nonlocal taken
            while taken < 1_000:  # a client that reads it all fails, not fills memory
                taken += 1
                yield "ok"
            raise AssertionError("the script was read past the requests")

        client = ScriptedClient(endless())
        assert client.remaining is None
        worker = Worker(client)
        with anyio.fail_after(5):
            for _ in range(3):
                await worker.run("hi")
        assert worker.history[-1] == AssistantMessage("ok", (), "end_turn")
        assert len(client.requests) == 3
        assert repr(client) == "<ScriptedClient requests=3 remaining=unknown>"
        assert taken == 3

    @pytest.mark.anyio
    async def test_an_iterator_runs_out_then_added_steps_follow(self):
        """A finite iterator's steps, then those added to the script, then the error."""
        client = ScriptedClient(step for step in ["a", "b"])
        client.add("c")
        with anyio.fail_after(5):
            texts = [
                [e.text for e in await events_of(client) if isinstance(e, TextDelta)]
                for _ in range(3)
            ]
            assert texts == [["a"], ["b"], ["c"]]
            assert client.remaining is None  # the iterator's end is not known yet
            with pytest.raises(ScriptExhaustedError):
                await events_of(client)
            assert client.remaining == 0

    @pytest.mark.anyio
    async def test_an_iterators_bad_step_is_named_when_taken(self):
        client = ScriptedClient(iter(["a", 42]))  # type: ignore[list-item]
        await events_of(client)
        with pytest.raises(TypeError, match=r"^ScriptedClient step #2 is int, not a "):
            await events_of(client)

    @pytest.mark.anyio
    async def test_calls_given_as_a_generator_are_all_sent(self):
        """The calls of a generator were read twice: the second pass found none, and the
        response said tool_use with no calls."""
        response = ScriptedResponse(tool_calls=(ScriptedCall(n) for n in ["a", "b"]))
        assert response.tool_calls == (ScriptedCall("a"), ScriptedCall("b"))
        starts = [
            e for e in await events_of(ScriptedClient([response])) if isinstance(e, ToolUseStart)
        ]
        assert [e.name for e in starts] == ["a", "b"]

    def test_a_response_is_checked_when_written(self):
        with pytest.raises(TypeError, match=r"^ScriptedResponse tool_calls takes a list of "):
            ScriptedResponse(tool_calls=ScriptedCall("a"))  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"^ScriptedResponse tool_calls holds str, not "):
            ScriptedResponse(tool_calls=["a"])  # type: ignore[list-item]
        with pytest.raises(TypeError, match=r"^ScriptedResponse text must be a str, not int"):
            ScriptedResponse(text=3)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"^ScriptedResponse error must be an exception"):
            ScriptedResponse(error="boom")  # type: ignore[arg-type]

    def test_mapping_arguments_are_written_when_the_call_is(self):
        """A later change to the mapping changed the call; a mapping JSON cannot encode
        failed mid-run with json's TypeError, naming no call."""
        from types import MappingProxyType

        arguments = {"query": "cats"}
        call = ScriptedCall("search", arguments)
        arguments["query"] = "dogs"
        assert call.input_json == '{"query": "cats"}'
        assert ScriptedCall("search", MappingProxyType({"n": 1})).input_json == '{"n": 1}'
        with pytest.raises(TypeError, match=r"^ScriptedCall 'search': its arguments cannot be "):
            ScriptedCall("search", {"when": object()})
        with pytest.raises(TypeError, match=r"^ScriptedCall 'search': arguments must be JSON "):
            ScriptedCall("search", 3)  # type: ignore[arg-type]


class TestWhatRealClientsSend:
    @pytest.mark.anyio
    async def test_reasoning_and_provider_items(self):
        """Reasoning comes first, provider items before the completion; the worker keeps
        the items with the message."""
        item = ProviderItem("acme", "thinking", '{"signature": "x"}')
        response = ScriptedResponse(text="ok", reasoning="hmm", provider_items=[item], chunk_size=2)
        assert await events_of(ScriptedClient([response])) == [
            ReasoningDelta("hm"),
            ReasoningDelta("m"),
            TextDelta("ok"),
            ProviderItemDone(item),
            Completion("end_turn"),
        ]
        worker = Worker(ScriptedClient([response]))
        with anyio.fail_after(5):
            await worker.run("hi")
        assert worker.history[-1].provider_items == (item,)  # type: ignore[union-attr]

    @pytest.mark.anyio
    async def test_an_error_after_the_events_leaves_nothing_half_received(self):
        """A response that fails after its text and calls: the run fails with the error,
        and nothing of the response enters the history; retry() asks again."""
        failing = ScriptedResponse(
            text="half", tool_calls=[ScriptedCall("echo")], error=ProviderError("acme", "lost")
        )
        client = ScriptedClient([failing, "whole"])
        events: list[LlmEvent] = []

        async def read() -> None:
            async for event in client.stream(REQUEST):
                events.append(event)

        with pytest.raises(ProviderError, match="lost"):
            await read()
        assert not any(isinstance(e, Completion) for e in events)
        assert TextDelta("half") in events
        worker = Worker(ScriptedClient([failing, "whole"]))
        with anyio.fail_after(5):
            with pytest.raises(ProviderError):
                await worker.run("hi")
            assert worker.history == (UserMessage("hi"),)
            await worker.retry()
        assert worker.history[-1] == AssistantMessage("whole", (), "end_turn")
        assert not isinstance(failing.error, LlmClientError)
