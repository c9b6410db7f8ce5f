"""What a ``Worker`` refuses where it is given it, not at a run: a client that is not one,
a system prompt that is no text, ``allowed_tools`` naming no tool of the worker, deps that
a tool's ``ToolContext[Deps]`` cannot use (with no ``deps_type``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from support import calls, results_of

from llm_worker import ToolContext, Worker, WorkerResult, tool, tool_registry
from llm_worker.providers.openai import OpenAIChatClient
from llm_worker.testing import ScriptedClient

pytestmark = pytest.mark.anyio

HINT = 'Worker(OpenAIChatClient("gpt-4o")), or any LlmClient'


@dataclass
class Deps:
    user: str


@dataclass
class Answer:
    n: int


@tool_registry
class Tools:
    @tool
    async def search(self, q: str) -> str:
        """Search."""
        return q

    @tool
    async def whoami(self, ctx: ToolContext[Deps]) -> str:
        """The asking user."""
        return ctx.deps.user

    @tool
    async def key(self, ctx: ToolContext) -> str:  # type: ignore[type-arg]
        """The call's key (asks for no deps)."""
        return ctx.idempotency_key

    @tool
    async def nothing(self, ctx: ToolContext[None]) -> str:
        """Asks for deps of None."""
        return repr(ctx.deps)

    @tool
    async def anything(self, ctx: ToolContext[Any]) -> str:
        """Takes any deps."""
        return repr(ctx.deps)


def worker_with(client: ScriptedClient, *names: str, **options: Any) -> Worker[Any, Any]:
    tools = Tools()
    worker: Worker[Any, Any] = Worker(client, **options)
    worker.register_tools([getattr(tools, name).definition() for name in names])
    return worker


class TestClient:
    def test_a_model_name_is_refused_with_the_client_to_make(self):
        """Worker("openai:gpt-4o"), the pydantic-ai habit, says which client to make."""
        with pytest.raises(TypeError) as caught:
            Worker("openai:gpt-4o")  # type: ignore[call-overload]
        assert str(caught.value) == (
            "Worker() takes a client, not the string 'openai:gpt-4o'; a model's name goes to "
            f"its provider's client: {HINT}"
        )

    @pytest.mark.parametrize("cls", [OpenAIChatClient, ScriptedClient])
    def test_a_client_class_is_refused_with_how_to_make_one(self, cls):
        """A client's class, not a client: its stream() would lack its self."""
        name = cls.__qualname__
        with pytest.raises(TypeError) as caught:
            Worker(cls)  # type: ignore[call-overload]
        assert str(caught.value) == (
            f"Worker() takes a client, not the class {name}; make one: Worker({name}(...)) "
            f"(e.g. {HINT})"
        )

    @pytest.mark.parametrize(("client", "shown"), [(None, "None"), (42, "42"), ({}, "{}")])
    def test_what_has_no_stream_is_refused(self, client, shown):
        with pytest.raises(TypeError) as caught:
            Worker(client)  # type: ignore[call-overload]
        assert str(caught.value) == (
            f"Worker() takes a client (an LlmClient, with a stream(request) method), not "
            f"{shown}: {HINT}"
        )

    def test_an_object_whose_stream_is_not_callable_is_refused(self):
        class NotAClient:
            stream = "nope"

        with pytest.raises(TypeError, match=r"with a stream\(request\) method"):
            Worker(NotAClient())  # type: ignore[call-overload]


class TestSystemPrompt:
    @pytest.mark.parametrize("prompt", [123, b"You are terse.", ["You are terse."]])
    def test_what_is_no_str_is_refused_where_it_is_given(self, prompt):
        """Given to Worker() or set later, a prompt that is not a str (nor None) is a
        TypeError then, not a failure of every request (or of worker.state) after."""
        with pytest.raises(TypeError) as info:
            Worker(ScriptedClient(), system_prompt=prompt)
        shown = type(prompt).__name__
        assert str(info.value) == f"system_prompt must be a str or None, not {shown}"
        worker = Worker(ScriptedClient(), system_prompt="kept")
        with pytest.raises(TypeError):
            worker.system_prompt = prompt
        assert worker.system_prompt == "kept"

    async def test_a_lone_surrogate_is_sent_as_valid_unicode(self):
        """A lone surrogate (bytes decoded with surrogateescape) cannot be encoded as UTF-8:
        the prompt keeps U+FFFD in its place, so requests and saved states can be."""
        client = ScriptedClient(["hi", "again"])
        worker = Worker(client, system_prompt="be \udce9 terse")
        assert worker.system_prompt == "be \ufffd terse"
        with anyio.fail_after(10):
            await worker.run("go")
            worker.system_prompt = "\ud800 new"
            await worker.run("again")
        assert [r.system_prompt for r in client.requests] == ["be \ufffd terse", "\ufffd new"]
        for request in client.requests:
            assert request.system_prompt is not None
            request.system_prompt.encode("utf-8")
        worker.state.to_json().encode("utf-8")
        worker.system_prompt = None
        assert worker.system_prompt is None


class TestAllowedTools:
    async def test_a_name_that_is_no_tool_is_refused_before_the_run(self):
        """Like tool_choice='serch': a ValueError naming it and the tools; the model is
        asked nothing and the history stays empty."""
        client = ScriptedClient(["ok"])
        worker = worker_with(client, "search")
        with pytest.raises(ValueError, match=r"^allowed_tools names") as caught:
            await worker.run("q", allowed_tools=["search", "serch", "fetch"])
        assert str(caught.value) == (
            "allowed_tools names what is not a tool of this worker: 'serch', 'fetch' "
            "(its tools: 'search')"
        )
        assert client.requests == []
        assert worker.history == ()

    async def test_a_worker_without_tools_says_so(self):
        worker = worker_with(ScriptedClient(["ok"]))
        with pytest.raises(ValueError, match=r"'search' \(its tools: none\)"):
            worker.run_stream("q", allowed_tools=["search"])

    async def test_the_tools_of_the_worker_and_an_empty_list_are_taken(self):
        client = ScriptedClient(["ok", "ok"])
        worker = worker_with(client, "search", "key")
        with anyio.fail_after(5):
            assert await worker.run("q", allowed_tools=["search"]) is WorkerResult.FINISHED
            assert await worker.run("q", allowed_tools=[]) is WorkerResult.FINISHED
        assert [r.allowed_tools for r in client.requests] == [("search",), ()]

    async def test_the_output_tool_is_a_name_only_of_a_run_answering_through_it(self):
        """final_result is allowed where the run's answer comes in that tool."""
        client = ScriptedClient([calls(("final_result", {"n": 1}))], supports_output_format=False)
        worker = worker_with(client, "search")
        with anyio.fail_after(5):
            await worker.run("q", output_type=Answer, allowed_tools=["final_result"])
        assert worker.output == Answer(1)
        assert client.requests[0].allowed_tools == ("final_result",)  # named once
        with pytest.raises(ValueError, match="'final_result' "):
            worker.run_stream("q", allowed_tools=["final_result"])  # a text answer

    async def test_names_are_checked_when_the_stream_is_made_as_tool_choice_is(self):
        """Both are checked against the tools registered when run_stream() is called: a
        tool registered after it is not one either may name for that run."""
        client = ScriptedClient(["ok"])
        worker = worker_with(client)
        with pytest.raises(ValueError, match="tool_choice='search'"):
            worker.run_stream("q", tool_choice="search")
        with pytest.raises(ValueError, match=r"allowed_tools names .*'search'"):
            worker.run_stream("q", allowed_tools=["search"])
        worker.register_tools([Tools().search.definition()])
        with anyio.fail_after(5):
            await worker.run("q", tool_choice="search", allowed_tools=["search"])


class TestDepsOfToolsWithoutDepsType:
    async def test_a_run_without_the_deps_a_tool_asks_for_is_refused(self):
        """The deps_type check's words, naming the tool that asks: before anything is sent."""
        client = ScriptedClient([calls(("whoami", {})), "ok"])
        worker = worker_with(client, "search", "whoami")
        with pytest.raises(TypeError) as caught:
            worker.run_stream("q")
        assert str(caught.value) == (
            "this worker's runs take deps of type Deps (tool 'whoami' takes "
            "ToolContext[Deps]); run() was given none: pass deps=Deps(...)"
        )
        with pytest.raises(TypeError) as caught:
            worker.run_stream("q", deps="a string")
        assert str(caught.value) == (
            "this worker's runs take deps of type Deps (tool 'whoami' takes "
            "ToolContext[Deps]); got str"
        )
        assert client.requests == []
        assert worker.history == ()

    async def test_a_run_with_the_deps_runs_the_tool(self):
        client = ScriptedClient([calls(("whoami", {})), "ok"])
        worker = worker_with(client, "whoami")
        with anyio.fail_after(5):
            await worker.run("q", deps=Deps("ada"))
        assert [(r.content, r.is_error) for r in results_of(worker.history)] == [("ada", False)]

    async def test_a_resume_is_checked_too(self):
        from llm_worker import Approve, Pause

        client = ScriptedClient([calls(("whoami", {})), "ok"])
        worker = worker_with(client, "whoami")
        worker.add_pre_tool_call_hook(lambda ctx: Pause())
        with anyio.fail_after(5):
            assert await worker.run("q", deps=Deps("ada")) is WorkerResult.PAUSED
        with pytest.raises(TypeError, match=r"deps are not kept from the run that paused"):
            worker.resume_stream(Approve())
        with anyio.fail_after(5):
            await worker.resume(Approve(), deps=Deps("ada"))
        assert results_of(worker.history)[0].content == "ada"

    async def test_tools_that_ask_for_no_checkable_deps_take_any(self):
        """A bare ToolContext, ToolContext[None] (None fits) and ToolContext[Any] ask for
        nothing a run could lack."""
        client = ScriptedClient([calls(("key", {}), ("nothing", {}), ("anything", {})), "ok"])
        worker = worker_with(client, "key", "nothing", "anything")
        with anyio.fail_after(5):
            await worker.run("q")
        assert [r.is_error for r in results_of(worker.history)] == [False, False, False]

    def test_a_tool_of_any_deps_registers_on_a_worker_with_deps_type(self):
        """ToolContext[Any] takes the worker's Deps (typing.Any is a class on 3.11+)."""
        worker = worker_with(ScriptedClient(), "anything", deps_type=Deps)
        assert len(worker.tool_server_handle()) == 1
