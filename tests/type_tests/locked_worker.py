"""A Worker's life under mypy --strict and pyright strict (checked by tests/test_typing_worker.py).

``main()`` is the correct program: build a Worker, register tools, add typed hooks, lock,
run, unlock, register again. Both checkers accept it as it is, and it runs.

``wrong_uses()`` is never called. Each of its lines marked ``# type: ignore[...]`` is an
error both checkers must report: a ``LockedWorker`` cannot register tools, edit the
history or set the system prompt (and ``wrong_deps()``: a hook or an approval policy
typed for other deps than the worker's is refused). The ignores are checked too (mypy
``--warn-unused-ignores``, pyright ``reportUnnecessaryTypeIgnoreComment``), so each one
must really be needed; the test also strips them and asserts the reported line numbers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, Union

from typing_extensions import assert_type

from llm_worker import (
    Abort,
    Approve,
    Continue,
    Deny,
    LockedWorker,
    Pause,
    PostToolCallContext,
    PostToolCallDecision,
    PreToolCallDecision,
    RunEvent,
    RunStream,
    Skip,
    ToolCallContext,
    ToolCallFinished,
    ToolContext,
    ToolServerHandle,
    Worker,
    WorkerResult,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

if TYPE_CHECKING:
    from llm_worker.temporal import DurableWorker


@tool_registry
class Notes:
    def __init__(self) -> None:
        self.notes: list[str] = []

    @tool
    async def add_note(self, text: str) -> str:
        """Store a note."""
        self.notes.append(text)
        return f"noted ({len(self.notes)})"

    @tool
    def count_notes(self) -> int:
        """How many notes there are."""
        return len(self.notes)


@dataclasses.dataclass
class Deps:
    user: str


@dataclasses.dataclass
class OtherDeps:
    tenant: int


@tool_registry
class Account:
    @tool
    async def whoami(self, ctx: ToolContext[Deps], loud: bool = False) -> str:
        """Say who is asking."""
        user: str = ctx.deps.user  # the checkers know ctx.deps is a Deps
        ctx.report_progress(1, 1)
        return user.upper() if loud else user


def guests_ask_first(ctx: ToolCallContext[Deps]) -> bool:
    return ctx.deps.user == "guest"


async def with_deps() -> list[str]:
    """A worker whose runs pass deps to context-taking tools, streamed and resumed; its
    approval policy reads the run's deps."""
    client = ScriptedClient(
        [ScriptedResponse(tool_calls=[ScriptedCall("whoami", {"loud": True})]), "You are ADA."]
    )
    worker = Worker(client, deps_type=Deps)
    worker.register_tools([Account().whoami.definition()], requires_approval=guests_ask_first)
    locked: LockedWorker[Deps] = worker.lock()
    seen: list[str] = []
    async with locked.run_stream("who am I?", deps=Deps("ada")) as stream:
        async for event in stream:
            kind: RunEvent = event
            if isinstance(kind, ToolCallFinished):
                seen.append(kind.result.content)
    if locked.is_paused:
        await locked.resume({"x": Deny("no")}, deps=Deps("ada"))
    return [*seen, str(stream.result), str(locked.run_usage.requests)]


@dataclasses.dataclass
class Forecast:
    city: str
    celsius: float


async def typed_output() -> list[str]:
    """A worker whose runs answer a Forecast (the worker's type), or a list of ints (one run's)."""
    client = ScriptedClient(['{"city": "Oslo", "celsius": 3}', '{"result": [1, 2]}'])
    worker = Worker(client, output_type=Forecast)
    await worker.run("weather?")
    forecast: Forecast = worker.output  # the checkers know worker.output is a Forecast
    async with worker.run_stream("numbers?", output_type=list[int]) as stream:
        async for _ in stream:
            pass
    numbers: list[int] = stream.output
    return [forecast.city, str(sum(numbers))]


def continued_runs_keep_their_own_output_type(worker: Worker[None, Forecast]) -> None:
    """Never called: a paused or failed run may have been given another output_type, so
    what its resume or retry stream answers is typed Any, not the worker's Forecast."""
    assert_type(worker.resume_stream(), RunStream[None, Any])
    assert_type(worker.retry_stream(), RunStream[None, Any])


async def any_output_and_typed_hooks() -> list[str]:
    """Output types that are not classes (a union, a Literal) are Any; hooks used as
    decorators keep their own type, and ToolCallContext[Deps] types ctx.deps."""
    client = ScriptedClient(['{"result": 7}', '{"result": "b"}'])
    worker = Worker(client, output_type=int | str, deps_type=Deps)
    assert_type(worker, Worker[Deps, Any])
    seen: list[str] = []

    @worker.add_pre_tool_call_hook
    async def guard(ctx: ToolCallContext[Deps]) -> Skip | None:
        user: str = ctx.deps.user
        seen.append(user)
        return None

    @worker.add_post_tool_call_hook
    def after(ctx: PostToolCallContext[Deps]) -> None:
        seen.append(ctx.deps.user)

    await worker.run("n?", deps=Deps("ada"))
    first = repr(worker.output)
    async with worker.run_stream(
        "a or b?", deps=Deps("ada"), output_type=Literal["a", "b"]
    ) as stream:
        async for _ in stream:
            pass
    assert_type(stream, RunStream[Deps, Any])
    plain = Worker(ScriptedClient(['{"result": 8}']), output_type=Union[int, None])  # noqa: UP007  (the typing spelling)
    assert_type(plain, Worker[None, Any])
    await plain.run("n?")
    return [first, repr(stream.output), repr(plain.output), guard.__name__]


def wrong_output(worker: Worker[None, Forecast]) -> None:
    text: str = worker.output  # type: ignore[assignment]
    print(text)


async def only_short_notes(ctx: ToolCallContext) -> PreToolCallDecision | None:
    if ctx.meta.name == "add_note" and len(ctx.call.input_json) > 200:
        return Skip()
    if ctx.call.name == "delete_everything":
        return Abort("not allowed")
    return None


def never_pause(ctx: ToolCallContext) -> Pause | None:
    return None


def shout(ctx: PostToolCallContext) -> PostToolCallDecision:
    ctx.result = dataclasses.replace(ctx.result, content=ctx.result.content.upper())
    return Abort("too loud") if len(ctx.result.content) > 1000 else Continue()


def skip_after(ctx: PostToolCallContext) -> Skip:
    return Skip()


async def main() -> list[str]:
    notes = Notes()
    client = ScriptedClient(
        [
            ScriptedResponse(tool_calls=[ScriptedCall("add_note", {"text": "milk"})]),
            "Noted.",
            ScriptedResponse(tool_calls=[ScriptedCall("count_notes")]),
            "One note.",
        ]
    )
    worker: Worker = Worker(client, system_prompt="Keep notes.", max_turns=4)
    worker.register_tools([notes.add_note.definition()])
    worker.add_pre_tool_call_hook(only_short_notes)
    worker.add_post_tool_call_hook(shout)
    worker.system_prompt = "Keep short notes."
    handle: ToolServerHandle = worker.tool_server_handle()

    locked: LockedWorker = worker.lock()
    locked.add_pre_tool_call_hook(never_pause)
    same_handle: ToolServerHandle = locked.tool_server_handle()
    result: WorkerResult = await locked.run("remember milk")
    if locked.is_paused:
        result = await locked.resume(Approve())
    prompt: str | None = locked.system_prompt

    again: Worker = locked.unlock()
    again.register_tools([Notes.count_notes.definition(notes)])
    await again.run("how many?")
    final: str | None = again.final_text
    history_length = len(again.history)
    again.set_history(again.history[:3])
    again.clear_history()
    other = Worker(ScriptedClient())
    other.register_tools(tool_definitions(Notes()))
    return [
        result.value,
        str(prompt),
        str(handle == same_handle),
        str(len(handle)),
        ", ".join(notes.notes),
        str(final),
        str(history_length),
        str(len(client.requests)),
        str(len(other.tool_server_handle())),
    ]


@dataclasses.dataclass
class AdminDeps(Deps):
    admin: bool


def for_other_deps(ctx: ToolCallContext[OtherDeps]) -> None:
    print(ctx.deps.tenant)


def after_for_other_deps(ctx: PostToolCallContext[OtherDeps]) -> None:
    print(ctx.deps.tenant)


def for_any_deps(ctx: ToolCallContext[Deps]) -> None:
    print(ctx.deps.user)


def tenant_one_asks(ctx: ToolCallContext[OtherDeps]) -> bool:
    return ctx.deps.tenant == 1


async def tenant_one_asks_later(ctx: ToolCallContext[OtherDeps]) -> bool:
    return ctx.deps.tenant == 1


async def wrong_deps(
    worker: Worker[Deps], locked: LockedWorker[Deps], durable: DurableWorker[Deps]
) -> None:
    await worker.run("x", deps=OtherDeps(1))  # type: ignore[arg-type]
    await locked.retry(deps="ada")  # type: ignore[arg-type]
    # A hook reads the deps of the worker's runs: one typed for other deps would fail.
    worker.add_pre_tool_call_hook(for_other_deps)  # type: ignore[arg-type]
    locked.add_post_tool_call_hook(after_for_other_deps)  # type: ignore[arg-type]
    # So does an approval policy, asked with the same ToolCallContext.
    definition = Account().whoami.definition()
    worker.register_tool(definition, requires_approval=tenant_one_asks)  # type: ignore[arg-type]
    worker.register_tools([definition], requires_approval=tenant_one_asks_later)  # type: ignore[arg-type]
    durable.register_tools(Account, requires_approval=tenant_one_asks)  # type: ignore[arg-type]


def hooks_for_a_base_of_the_deps(worker: Worker[AdminDeps]) -> None:
    """A hook typed for a base class of the worker's deps reads them as that base."""
    hook = worker.add_pre_tool_call_hook(for_any_deps)
    assert_type(hook, Callable[[ToolCallContext[AdminDeps]], None])


async def ask_everyone(ctx: ToolCallContext) -> bool:
    return True


def policies_for_the_deps(worker: Worker[AdminDeps], durable: DurableWorker[AdminDeps]) -> None:
    """An approval policy typed for the worker's deps, a base class of them, or any deps
    (a bare ToolCallContext), sync or async; or a bool."""
    definition = Account().whoami.definition()
    worker.register_tool(definition, requires_approval=guests_ask_first)
    worker.register_tools([definition], requires_approval=ask_everyone)
    worker.register_tools([definition], requires_approval=lambda ctx: ctx.deps.admin)
    worker.register_tool(definition, requires_approval=True)
    durable.register_tools(Account, requires_approval=guests_ask_first)


def wrong_context(ctx: ToolContext[Deps]) -> None:
    print(ctx.deps.tenant)  # type: ignore[attr-defined]


def wrong_uses(locked: LockedWorker) -> None:
    notes = Notes()
    locked.register_tool(notes.add_note.definition())  # type: ignore[attr-defined]
    locked.register_tools([notes.count_notes.definition()])  # type: ignore[attr-defined]
    locked.system_prompt = "x"  # type: ignore[misc]
    locked.set_history([])  # type: ignore[attr-defined]
    locked.clear_history()  # type: ignore[attr-defined]
    locked.add_post_tool_call_hook(skip_after)  # type: ignore[type-var]
