"""What ``_hooks.py`` checks of what hooks and approval policies do: a policy that changes
the call, a post-hook's result no run state can keep, and failures whose text or repr is
broken or huge. Each is the hook's ``HookError``, and the history stays one a worker can
continue and save."""

from __future__ import annotations

import dataclasses
from typing import Any

import anyio
import pytest
from mcp import Client
from support import Lab, assert_history_valid, calls, results_of

from llm_worker import (
    DataPart,
    HookError,
    MediaPart,
    RunState,
    TextPart,
    ToolCall,
    ToolResult,
    ToolServer,
    Worker,
    WorkerResult,
    tool_definitions,
)
from llm_worker.mcp import create_server
from llm_worker.testing import ScriptedClient

pytestmark = pytest.mark.anyio

NOT_RUN = "Tool call 'echo' did not run: the run stopped with an error"


def echo_worker(requires_approval: Any = None) -> tuple[Worker, Lab]:
    """A worker whose model calls ``echo`` twice, then answers."""
    lab = Lab()
    client = ScriptedClient([calls(("echo", {"text": "a"}), ("echo", {"text": "b"})), "done"])
    worker = Worker(client)
    worker.register_tools(tool_definitions(lab), requires_approval=requires_approval)
    return worker, lab


async def run_failing(worker: Worker) -> HookError:
    with anyio.fail_after(10), pytest.raises(HookError) as caught:
        await worker.run("go")
    return caught.value


def assert_continuable(worker: Worker) -> None:
    """Every call answered, nothing held, and the state saves and loads back."""
    assert not worker.is_paused
    assert_history_valid(worker.history)
    RunState.from_json(worker.state.to_json())


def policy_setting(change: Any, needs_approval: bool) -> Any:
    def policy(ctx: Any) -> bool:
        ctx.call = change(ctx.call)
        return needs_approval

    return policy


# -- an approval policy decides; it does not change the call ------------------------------

CALL_CHANGES = {
    "id": lambda call: dataclasses.replace(call, id="other"),
    "tool": lambda call: dataclasses.replace(call, name="fail"),
    "arguments": lambda call: dataclasses.replace(call, input_json='{"text": "z"}'),
    "not-a-call": lambda call: "rm -rf /",
}


class TestApprovalPolicies:
    @pytest.mark.parametrize("needs_approval", [False, True], ids=["runs", "held"])
    @pytest.mark.parametrize("change", list(CALL_CHANGES.values()), ids=list(CALL_CHANGES))
    async def test_a_policy_that_changes_the_call_is_a_hook_error(self, change, needs_approval):
        """A policy that set ctx.call made run() die on an AssertionError with calls left
        unanswered (another id), ran a tool under another's name, or raised a raw
        AttributeError (a str): now no call runs or waits, and the history stays valid."""
        worker, lab = echo_worker(policy_setting(change, needs_approval))
        error = await run_failing(worker)
        assert error.stage == "requires_approval"
        assert "an approval policy decides whether a call needs approval, it may not " in (
            error.problem
        )
        assert lab.log == []
        assert results_of(worker.history) == [
            ToolResult("call_0_0", NOT_RUN, True),
            ToolResult("call_0_1", NOT_RUN, True),
        ]
        assert_continuable(worker)

    async def test_the_refusal_names_the_call_it_was_set_to(self):
        worker, _ = echo_worker(policy_setting(CALL_CHANGES["id"], True))
        error = await run_failing(worker)
        assert error.problem == (
            "set ctx.call to ToolCall(id='other', name='echo', input_json='{\"text\": \"a\"}'); "
            "an approval policy decides whether a call needs approval, it may not change the "
            "call (a pre_tool_call hook may change its arguments)"
        )

    @pytest.mark.parametrize(
        "same", [lambda call: call, dataclasses.replace], ids=["itself", "an-equal-copy"]
    )
    async def test_a_policy_may_set_the_call_it_was_given(self, same):
        """Setting ctx.call to the call, or to an equal copy of it, changes nothing."""
        worker, lab = echo_worker(policy_setting(same, False))
        with anyio.fail_after(10):
            assert await worker.run("go") is WorkerResult.FINISHED
        assert lab.log == ["echo a", "echo b"]

    async def test_a_policy_sees_the_call_a_pre_hook_rewrote(self):
        """The check compares with the call the policy was given, not the model's: a
        pre-hook's rewrite stays allowed."""
        seen: list[str] = []

        def policy(ctx: Any) -> bool:
            seen.append(ctx.call.input_json)
            return False

        worker, lab = echo_worker(policy)

        def rewrite(ctx: Any) -> None:
            ctx.call = dataclasses.replace(ctx.call, input_json='{"text": "y"}')

        worker.add_pre_tool_call_hook(rewrite)
        with anyio.fail_after(10):
            assert await worker.run("go") is WorkerResult.FINISHED
        assert seen == ['{"text": "y"}', '{"text": "y"}']
        assert lab.log == ["echo y", "echo y"]

    async def test_a_served_tool_whose_policy_changes_the_call_is_refused(self):
        """An MCP server ignored what a policy set: the call is refused, as a failing
        policy's is."""
        server = ToolServer()
        server.register_tools(
            tool_definitions(Lab()),
            requires_approval=policy_setting(CALL_CHANGES["arguments"], False),
        )
        with anyio.fail_after(10):
            async with Client(create_server(server)) as client:
                result = await client.call_tool("echo", {"text": "a"})
        assert result.is_error
        assert [block.text for block in result.content] == [  # type: ignore[union-attr]
            "Internal error: could not tell whether tool call 'echo' needs approval (HookError)"
        ]


# -- a post-hook's result is one a run state can keep -------------------------------------

IMAGE = MediaPart("image/png", url="https://x.test/a.png")


def altered(part: Any, **fields: object) -> Any:
    """``part`` with ``fields`` changed past the checks its class makes where it is made (a
    frozen dataclass still takes ``object.__setattr__``): what the run state writes is
    checked again when a hook hands the result over."""
    part = dataclasses.replace(part)
    for name, value in fields.items():
        object.__setattr__(part, name, value)
    return part


BAD_RESULTS = {
    "is_error-str": (
        lambda r: dataclasses.replace(r, is_error="yes"),
        "tool_result.is_error: Input should be a valid boolean",
    ),
    "is_error-none": (
        lambda r: dataclasses.replace(r, is_error=None),
        "tool_result.is_error: Input should be a valid boolean",
    ),
    "is_error-int": (
        lambda r: dataclasses.replace(r, is_error=1),
        "tool_result.is_error: Input should be a valid boolean",
    ),
    "media-url-int": (
        lambda r: dataclasses.replace(r, content="", parts=(altered(IMAGE, url=5),)),
        "tool_result.parts.0.media.url: Input should be a valid string",
    ),
    "media-name-int": (
        lambda r: dataclasses.replace(r, content="", parts=(altered(IMAGE, name=3),)),
        "tool_result.parts.0.media.name: Input should be a valid string",
    ),
    "data-not-json": (
        lambda r: dataclasses.replace(
            r, content="{", parts=(altered(DataPart("1"), json_text="{"),)
        ),
        "the data part of the result of call 'call_0_0': DataPart json_text is not JSON",
    ),
    "part-a-str": (
        lambda r: dataclasses.replace(r, content="a", parts=("a",)),
        "set ctx.result's parts to ('a',); each must be a TextPart, MediaPart or DataPart",
    ),
    "parts-a-str": (
        lambda r: dataclasses.replace(r, content="a", parts="a"),
        "set ctx.result's parts to 'a'; each must be a TextPart, MediaPart or DataPart",
    ),
}


class TestPostHookResults:
    @pytest.mark.parametrize(
        ("change", "problem"), list(BAD_RESULTS.values()), ids=list(BAD_RESULTS)
    )
    async def test_a_result_no_state_can_keep_is_a_hook_error(self, change, problem):
        """Kept, such a result made a state that RunState.from_json refused, or (a part that
        is not one) a raw AttributeError out of run(); now it is the hook's HookError, and
        the history holds no trace of it."""
        worker, _ = echo_worker()

        def hook(ctx: Any) -> None:
            ctx.result = change(ctx.result)

        worker.add_post_tool_call_hook(hook)
        error = await run_failing(worker)
        assert (error.stage, error.hook) == ("post_tool_call", hook.__qualname__)
        assert problem in error.problem
        assert error.__cause__ is None  # the problem is what the hook set, not an exception
        assert_continuable(worker)

    async def test_parts_given_as_a_list_are_kept_as_a_tuple(self):
        """A list of real parts is a result a state keeps: the history holds it as a tuple."""
        worker, _ = echo_worker()

        def hook(ctx: Any) -> None:
            ctx.result = dataclasses.replace(ctx.result, content="x", parts=[TextPart("x")])

        worker.add_post_tool_call_hook(hook)
        with anyio.fail_after(10):
            assert await worker.run("go") is WorkerResult.FINISHED
        assert [r.parts for r in results_of(worker.history)] == [(TextPart("x"),)] * 2
        assert_continuable(worker)


# -- a failure's text is guarded and bounded ----------------------------------------------


class BrokenText(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text")


class BrokenRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


HUGE = 5_000_000


def raising(error: BaseException) -> Any:
    def hook(ctx: Any) -> None:
        raise error

    return hook


def add(worker: Worker, stage: str, hook: Any) -> None:
    if stage == "pre_tool_call":
        worker.add_pre_tool_call_hook(hook)
    else:
        worker.add_post_tool_call_hook(hook)


def worker_with(stage: str, hook: Any) -> Worker:
    """A worker running ``hook`` at ``stage`` (a hook's or the approval policy's)."""
    worker, _ = echo_worker(hook if stage == "requires_approval" else None)
    if stage != "requires_approval":
        add(worker, stage, hook)
    return worker


STAGES = ["pre_tool_call", "post_tool_call", "requires_approval"]


class TestFailureTexts:
    @pytest.mark.parametrize("stage", STAGES)
    async def test_an_exception_whose_text_fails(self, stage):
        """A __str__ that raises let a raw RuntimeError out of run(): the HookError names
        the exception's class, and chains it."""
        worker = worker_with(stage, raising(BrokenText()))
        error = await run_failing(worker)
        assert (error.stage, error.problem) == (stage, "BrokenText")
        assert isinstance(error.__cause__, BrokenText)
        assert_continuable(worker)

    @pytest.mark.parametrize("stage", STAGES)
    async def test_an_exception_with_a_huge_text(self, stage):
        worker = worker_with(stage, raising(ValueError("x" * HUGE)))
        error = await run_failing(worker)
        assert error.problem.startswith("ValueError: xxx")
        assert len(str(error)) < 1_000
        assert_continuable(worker)

    @pytest.mark.parametrize(
        ("stage", "returned"),
        [
            ("pre_tool_call", BrokenRepr()),
            ("pre_tool_call", "x" * HUGE),
            ("post_tool_call", "x" * HUGE),
            ("requires_approval", BrokenRepr()),
            ("requires_approval", "x" * HUGE),
        ],
        ids=["pre-broken", "pre-huge", "post-huge", "policy-broken", "policy-huge"],
    )
    async def test_a_returned_value_whose_repr_fails_or_is_huge(self, stage, returned):
        """A decision that is not one is shown bounded, and by its class if its repr fails
        (which let a raw RuntimeError out of run(); a huge one made a HookError as long)."""
        worker = worker_with(stage, lambda ctx: returned)
        error = await run_failing(worker)
        assert error.problem.startswith("returned ")
        assert len(str(error)) < 1_000
        if isinstance(returned, BrokenRepr):
            assert error.problem.startswith("returned <BrokenRepr instance at 0x")
        assert_continuable(worker)

    @pytest.mark.parametrize("value", [BrokenRepr(), "x" * HUGE], ids=["broken", "huge"])
    @pytest.mark.parametrize("stage", STAGES)
    async def test_a_call_or_result_set_to_what_has_no_fit_repr(self, stage, value):
        """What a hook sets ctx.call or ctx.result to is shown bounded as well."""
        target = "result" if stage == "post_tool_call" else "call"

        def hook(ctx: Any) -> bool | None:
            setattr(ctx, target, value)
            return False if stage == "requires_approval" else None

        worker = worker_with(stage, hook)
        error = await run_failing(worker)
        assert error.problem.startswith(f"set ctx.{target} to ")
        assert len(str(error)) < 1_000
        assert_continuable(worker)

    async def test_a_huge_call_id_is_shown_bounded(self):
        """Ids are the model's, as long as it likes: a hook that changes one is told so in
        a bounded text."""
        worker, _ = echo_worker()

        def rewrite(ctx: Any) -> None:
            ctx.call = ToolCall("y" * HUGE, ctx.call.name, ctx.call.input_json)

        worker.add_pre_tool_call_hook(rewrite)
        error = await run_failing(worker)
        assert error.problem.startswith("changed the call id from 'call_0_0' to 'yyy")
        assert len(str(error)) < 1_000

    async def test_a_hook_whose_repr_fails_is_named_by_its_class(self):
        """A callable object without __qualname__ is named by its repr, bounded and guarded."""

        class Gate:
            def __call__(self, ctx: Any) -> None:
                raise ValueError("closed")

            def __repr__(self) -> str:
                raise RuntimeError("no repr")

        worker, _ = echo_worker()
        worker.add_pre_tool_call_hook(Gate())
        error = await run_failing(worker)
        assert error.hook.startswith("<Gate instance at 0x")
        assert error.problem == "ValueError: closed"
