"""A hypothesis state machine driving a ``Worker`` with hostile, generated model output.

Each step runs (or resumes, or is refused) one run of a ``Worker`` whose ``ScriptedClient``
replays responses hypothesis made up: tool calls to known and unknown names, argument text
that is valid, invalid, truncated, huge or deeply nested, hook decisions of every kind
(continue, skip, abort, pause, answer the call, cancel the run, raise, return nonsense),
human decisions on resume (approve, approve with other arguments, deny), and tool
behaviours (return, return too much, raise ``ValueError``, raise a ``ToolError``, hang past
a timeout, cancel the run), on an ``async def`` tool, a plain-``def`` (thread) tool and a
hand-written ``Tool``. A run is driven either by ``run()``/``resume()`` or by reading its
event stream, sometimes leaving the stream after a drawn number of events.

After every step:

- every tool call in history has exactly one result, in order, with matching ids (the calls
  of a paused response have none until it is resumed);
- every result is what that call should have produced, given its arguments, the hook and
  human decisions taken and how the run ended; no result text has a traceback, a path or
  an object address, or is over ``max_result_bytes``;
- a read stream's events agree with the history: at most one ``ToolCallFinished`` per call,
  carrying exactly the result the history has, after that call's ``ToolCallRunning`` if it
  ran; held calls never run before they are decided;
- only ``WorkerAbortedError``, ``MaxTurnsExceededError`` and ``HookError`` escaped, each
  for the reason the script gave;
- no tool coroutine and no task is left running, and no more than ``max_concurrent_calls``
  tools ever ran at once.

At teardown every abandoned thread has finished (their sleeps are short). Each step runs in
its own event loop (``anyio.run``): asyncio for the main pass, trio for a smaller second one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any, Literal, get_args

import anyio
import anyio.from_thread
import anyio.lowlevel
import pytest
import trio
import trio.lowlevel
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    rule,
)

from llm_worker import (
    Abort,
    Approve,
    AssistantMessage,
    Continue,
    Deny,
    ExecutionFailedError,
    HookError,
    InvalidArgumentError,
    Limits,
    LlmEvent,
    LlmRequest,
    MaxTurnsExceededError,
    Pause,
    PostToolCallContext,
    RunEvent,
    Skip,
    SyntheticResult,
    ToolCall,
    ToolCallContext,
    ToolCallFinished,
    ToolCallRunning,
    ToolMeta,
    ToolResult,
    UserMessage,
    Worker,
    WorkerAbortedError,
    WorkerResult,
    WorkerStateError,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker._limits import cap_result
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

# -- the configuration under test ---------------------------------------------------------------

W_BYTES, W_DEPTH = 2000, 8  # the Worker's input limits
T_BYTES, T_DEPTH = 1000, 6  # the generated tools' own (tighter) input limits
# Timeouts are well above what a call takes on a loaded machine, and still rare: only calls
# that "hang" wait for them.
THREAD_TIMEOUT = 0.1  # @tool(timeout=) of the thread tool
WORKER_TIMEOUT = 0.2  # Limits.tool_timeout: the async and hand-written tools' only timeout
THREAD_HANG = 0.3  # how long a "hanging" thread sleeps: past both timeouts
MAX_RESULT = 1000
MAX_CONCURRENT = 2
MAX_TURNS = 3
THREADS_FINISH_WITHIN = 5.0  # abandoned threads sleep THREAD_HANG; this bound is generous
STEP_PATIENCE = 10.0  # a step takes milliseconds: only a hang reaches this

LIMITS = Limits(
    max_input_bytes=W_BYTES,
    max_input_depth=W_DEPTH,
    tool_timeout=WORKER_TIMEOUT,
    max_result_bytes=MAX_RESULT,
    max_concurrent_calls=MAX_CONCURRENT,
)

Mode = Literal["return", "big", "raise_value", "raise_tool", "hang", "cancel_run"]
MODES: tuple[str, ...] = get_args(Mode)
ASYNC, THREAD, HAND = "act_async", "act_thread", "act_hand"
GENERATED = (ASYNC, THREAD)
KNOWN = (ASYNC, THREAD, HAND)
BIG = "é" * 600 + "!"  # 1201 bytes: over MAX_RESULT

# What the model reads (the exact texts of _model_texts.py).
NOT_FOUND = "Tool '{name}' not found"
SKIPPED = "Tool call '{name}' was skipped by the application; it did not run"
ABORTED = "Tool call '{name}' did not run: the run was aborted ({reason})"
CANCELLED = "Tool call '{name}' was cancelled before it finished"
STOPPED = "Tool call '{name}' was cancelled before it finished: {why}"
WITHHELD = "Tool call '{name}' ran, but its result was withheld: {why}"
NOT_RUN = "Tool call '{name}' did not run: the run stopped with an error"
DENIED = "Tool call '{name}' was denied; it did not run: {reason}"
TIMED_OUT = "Execution failed: tool '{name}' timed out after {seconds:g}s"
SCRUBBED_VALUE_ERROR = "Execution failed: cannot read <path> for <Widget object>"
HAND_VALUE_ERROR = f"Internal error: tool '{HAND}' failed unexpectedly (ValueError)"
REFUSED = "Execution failed: refused"
BAD_PRE = (
    "returned 'nonsense'; expected one of Continue(), Skip(), Abort(), Pause(), "
    "SyntheticResult() or None"
)
BAD_POST = "returned 'nonsense'; expected one of Continue(), Abort() or None"


def too_big(size: int, limit: int) -> tuple[str, bool]:
    return f"Invalid argument: input is {size} bytes, over the limit of {limit} bytes", True


def too_deep(limit: int) -> tuple[str, bool]:
    return f"Invalid argument: input nests deeper than the limit of {limit} levels", True


class Widget:
    """Something whose repr has a memory address."""


class Lab:
    """What the tools share with the test: counters, and the current run's cancel scope."""

    def __init__(self) -> None:
        self.scope: anyio.CancelScope | None = None
        self.async_running = 0
        self.async_most = 0
        self.lock = threading.Lock()
        self.threads_running = 0

    async def act(self, mode: str, text: str) -> str:
        self.async_running += 1
        self.async_most = max(self.async_most, self.async_running)
        try:
            await anyio.lowlevel.checkpoint()
            if mode == "big":
                return BIG
            if mode == "raise_value":
                raise ValueError(f"cannot read /srv/data/secret.txt for {Widget()}")
            if mode == "raise_tool":
                raise ExecutionFailedError("refused")
            if mode == "hang":
                await anyio.sleep(3600)
            if mode == "cancel_run":
                assert self.scope is not None
                self.scope.cancel()
                await anyio.sleep(3600)
            return text
        finally:
            self.async_running -= 1

    def act_in_thread(self, mode: str, text: str) -> str:
        with self.lock:
            self.threads_running += 1
        try:
            if mode == "big":
                return BIG
            if mode == "raise_value":
                raise ValueError(f"cannot read /srv/data/secret.txt for {Widget()}")
            if mode == "raise_tool":
                raise ExecutionFailedError("refused")
            if mode == "hang":
                time.sleep(THREAD_HANG)
            if mode == "cancel_run":
                scope = self.scope
                assert scope is not None
                # If the run already ended (this thread was abandoned), there is nothing to do.
                with contextlib.suppress(Exception):
                    anyio.from_thread.run_sync(scope.cancel)
            return text
        finally:
            with self.lock:
                self.threads_running -= 1


@tool_registry(max_input_bytes=T_BYTES, max_input_depth=T_DEPTH)
class Acts:
    """The generated tools: one async, one plain def (run in a thread, own timeout)."""

    def __init__(self, lab: Lab) -> None:
        self.lab = lab

    @tool
    async def act_async(self, mode: Mode, text: str = "", data: list[Any] | None = None) -> str:
        """Act as ``mode`` says."""
        return await self.lab.act(mode, text)

    @tool(timeout=THREAD_TIMEOUT)
    def act_thread(self, mode: Mode, text: str = "", data: list[Any] | None = None) -> str:
        """Act as ``mode`` says, in a worker thread."""
        return self.lab.act_in_thread(mode, text)


def parse_args(input_json: str) -> dict[str, Any] | None:
    """The arguments, if ``input_json`` is valid for the tools' schema; else ``None``.

    A reference validator: agrees with the generated tools (pydantic, strict) on the inputs
    the strategies produce.
    """
    try:
        value = json.loads(input_json if input_json.strip() else "{}")
    except ValueError:
        return None
    if not isinstance(value, dict) or set(value) - {"mode", "text", "data"}:
        return None
    mode, text, data = value.get("mode"), value.get("text", ""), value.get("data")
    if not isinstance(mode, str) or mode not in MODES or not isinstance(text, str):
        return None
    if data is not None and not isinstance(data, list):
        return None
    return value


class HandTool:
    """A hand-written ``Tool``: validates by itself; only the worker's limits protect it."""

    def __init__(self, lab: Lab) -> None:
        self.lab = lab

    async def execute(self, input_json: str) -> str:
        args = parse_args(input_json)
        if args is None:
            raise InvalidArgumentError("arguments do not match the schema")
        return await self.lab.act(args["mode"], args.get("text", ""))


HAND_META = ToolMeta(
    name=HAND,
    description="Act as mode says.",
    input_schema={
        "type": "object",
        "properties": {
            "mode": {"enum": list(MODES)},
            "text": {"type": "string"},
            "data": {"type": "array"},
        },
        "required": ["mode"],
        "additionalProperties": False,
    },
)


class PerRunClient:
    """An ``LlmClient`` replaying, for each run, a fresh ``ScriptedClient`` script."""

    def __init__(self) -> None:
        self.script = ScriptedClient()

    def new_run(self, responses: list[ScriptedResponse | str]) -> None:
        self.script = ScriptedClient(responses)

    def stream(self, request: LlmRequest) -> AsyncIterator[LlmEvent]:
        return self.script.stream(request)


# -- strategies ----------------------------------------------------------------------------------


def depth_of(value: Any) -> int:
    """JSON nesting depth: a scalar is 0, ``[]`` and ``{}`` are 1."""
    if isinstance(value, dict):
        return 1 + max(map(depth_of, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth_of, value), default=0)
    return 0


def nested(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


# Mostly harmless; hangs and cancellations are rarer so examples stay quick.
modes = st.sampled_from(
    ["return"] * 4 + ["big", "raise_value", "raise_tool"] + ["hang", "cancel_run"]
)
texts = st.text(max_size=12)


@st.composite
def valid_args(draw: st.DrawFn) -> str:
    args: dict[str, Any] = {"mode": draw(modes)}
    if draw(st.booleans()):
        args["text"] = draw(texts)
    if draw(st.booleans()):
        args["data"] = draw(st.lists(st.integers(0, 9) | st.text(max_size=3), max_size=3))
    return json.dumps(args)


@st.composite
def deep_args(draw: st.DrawFn) -> str:
    args = {"mode": draw(modes), "text": draw(texts), "data": nested(draw(st.integers(1, 10)))}
    return json.dumps(args)


@st.composite
def huge_args(draw: st.DrawFn) -> str:
    size = draw(st.integers(T_BYTES - 100, W_BYTES + 100))
    return json.dumps({"mode": draw(st.sampled_from(["return", "big"])), "text": "x" * size})


@st.composite
def invalid_args(draw: st.DrawFn) -> str:
    return draw(
        st.sampled_from(
            [
                '{"mode": 5}',
                '{"mode": "dance"}',
                '{"mode": "return", "text": 7}',
                '{"mode": "return", "extra": true}',
                '{"text": "no mode"}',
                '["mode", "return"]',
                '"return"',
                "null",
                "",
                "mode=return",
            ]
        )
        | st.text(max_size=20)
    )


@st.composite
def truncated_args(draw: st.DrawFn) -> str:
    whole = draw(valid_args() | deep_args())
    return whole[: draw(st.integers(0, len(whole) - 1))]


def weighted(**weights: int) -> st.SearchStrategy[str]:
    """``sampled_from`` with each choice repeated ``weight`` times."""
    return st.sampled_from([choice for choice, weight in weights.items() for _ in range(weight)])


# Well-formed arguments most often, so that tool behaviours get exercised.
arguments = st.one_of(
    valid_args(), valid_args(), valid_args(), invalid_args(), truncated_args(), huge_args(),
    deep_args(),
)  # fmt: skip
known_names = st.sampled_from(KNOWN)
names = st.one_of(known_names, known_names, known_names, st.text("abc_xyz", max_size=10))
# Mostly "go on", so that runs get far; every other decision still comes up often.
pre_decisions = weighted(
    continue_=12, none=4, skip=2, answer=1, abort=1, pause=3, cancel=1, raise_=1, bad=1
).map(lambda d: d.rstrip("_"))
# What a human answers for a held call: approve, approve with other (valid) arguments, deny.
human_decisions = st.sampled_from(["approve", "approve", "change", "deny"])
post_decisions = weighted(continue_=16, none=3, abort=1, raise_=1, bad=1, rewrite=2).map(
    lambda d: d.rstrip("_")
)


@dataclass
class CallSpec:
    """A generated tool call and the decisions its hooks will take."""

    name: str
    arguments: str
    pre: str
    post: str


call_specs = st.builds(CallSpec, names, arguments, pre_decisions, post_decisions)


@dataclass
class ResponseSpec:
    text: str
    calls: list[CallSpec]
    chunk_size: int | None
    interleave: bool


response_specs = st.builds(
    ResponseSpec,
    st.sampled_from(["", "Let me check."]),
    st.lists(call_specs, min_size=1, max_size=4),
    st.sampled_from([None, None, 7, 64]),
    st.booleans(),
)
scripts = st.lists(response_specs, max_size=MAX_TURNS)


@dataclass
class Outcome:
    """How one run/resume ended."""

    result: WorkerResult | None = None
    error: BaseException | None = None
    cancelled: bool = False  # a cancel scope ended it, or the stream's reader left early
    new_tasks: int = 0
    async_left: int = 0
    decisions: list[tuple[str, str, str]] = field(default_factory=list)  # (stage, id, decision)
    events: list[RunEvent] | None = None  # what the stream yielded, when it was read
    left: bool = False  # the reader left the stream before it ended
    resumed: tuple[str, ...] = ()  # the calls of the response a resume continued


def count_tasks(backend: str) -> int:
    """Tasks alive in the current event loop."""
    if backend == "asyncio":
        return len(asyncio.all_tasks())

    def walk(task: trio.lowlevel.Task) -> int:
        return 1 + sum(walk(c) for n in task.child_nurseries for c in n.child_tasks)

    return walk(trio.lowlevel.current_root_task())


def kind_of(content: str, is_error: bool) -> str:
    """A short label for a result, for hypothesis' statistics."""
    if not is_error:
        return "rewritten" if content.startswith("rewritten c") else "returned"
    if "timed out after" in content:
        return "timed out"
    for marker in ("Invalid argument", "Execution failed", "Internal error", "not found"):
        if marker in content:
            return marker
    for marker in ("skipped", "aborted", "cancelled", "stopped with an error"):
        if marker in content:
            return f"did not run ({marker})"
    return "?"


# -- the machine ---------------------------------------------------------------------------------


class WorkerMachine(RuleBasedStateMachine):
    """Runs, resumes and refusals of one Worker, checked after every step."""

    backend = "asyncio"

    def __init__(self) -> None:
        super().__init__()
        self.lab = Lab()
        self.client = PerRunClient()
        self.worker = Worker(self.client, max_turns=MAX_TURNS, limits=LIMITS)
        self.worker.register_tools(tool_definitions(Acts(self.lab)))
        self.worker.register_tool(lambda: (HAND_META, HandTool(self.lab)))
        self.worker.add_pre_tool_call_hook(self.pre_hook)
        self.worker.add_post_tool_call_hook(self.post_hook)
        self.next_id = 0
        self.pre_plans: dict[str, str] = {}
        self.post_plans: dict[str, str] = {}
        self.last_pre: dict[str, str] = {}  # the decision that settled each call
        self.last_post: dict[str, str] = {}
        self.human: dict[str, str] = {}  # how a human decided each held call
        self.calls: dict[str, ToolCall] = {}  # as they run: a human may change the arguments
        self.asked: set[str] = set()  # calls the pre-hook was asked about
        self.checked = 0  # history items already checked
        self.outcome = Outcome()

    # -- hooks --------------------------------------------------------------------------------

    async def pre_hook(self, ctx: ToolCallContext) -> Any:
        assert ctx.call.id not in self.asked, f"pre-hook asked twice about {ctx.call.id}"
        self.asked.add(ctx.call.id)
        decision = self.pre_plans.get(ctx.call.id, "continue")
        self.last_pre[ctx.call.id] = decision
        self.outcome.decisions.append(("pre", ctx.call.id, decision))
        if decision == "continue":
            return Continue()
        if decision == "none":
            return None
        if decision == "skip":
            return Skip()
        if decision == "answer":
            return SyntheticResult(f"answered {ctx.call.id}")
        if decision == "abort":
            return Abort(f"abort at {ctx.call.id}")
        if decision == "pause":
            return Pause()
        if decision == "cancel":
            assert self.lab.scope is not None
            self.lab.scope.cancel()
            return None
        if decision == "raise":
            raise ValueError(f"pre hook failed at {ctx.call.id}")
        return "nonsense"

    def post_hook(self, ctx: PostToolCallContext) -> Any:
        decision = self.post_plans.get(ctx.call.id, "continue")
        self.last_post[ctx.call.id] = decision
        self.outcome.decisions.append(("post", ctx.call.id, decision))
        if decision == "abort":
            return Abort(f"post abort at {ctx.call.id}")
        if decision == "raise":
            raise ValueError(f"post hook failed at {ctx.call.id}")
        if decision == "bad":
            return "nonsense"
        if decision == "rewrite":
            ctx.result = replace(ctx.result, content=f"rewritten {ctx.call.id}", is_error=False)
        return None if decision == "none" else Continue()

    # -- driving ------------------------------------------------------------------------------

    def drive(self, action: str, how: str, leave_after: int, decisions: Any = None) -> Outcome:
        """One run (``action`` "run") or resume, read by ``how``: "call" (run()/resume()),
        "stream" (every event), or "leave" (the stream, left after ``leave_after`` events)."""
        self.outcome = outcome = Outcome()

        async def go() -> None:
            tasks_before = count_tasks(self.backend)
            # A step takes milliseconds; a hang (a timeout that never fires) fails the test.
            with anyio.fail_after(STEP_PATIENCE), anyio.CancelScope() as scope:
                self.lab.scope = scope
                try:
                    if how == "call":
                        if action == "run":
                            outcome.result = await self.worker.run("go")
                        else:
                            outcome.result = await self.worker.resume(decisions)
                    else:
                        await self.read_stream(action, how, leave_after, decisions, outcome)
                except (WorkerAbortedError, MaxTurnsExceededError, HookError) as exc:
                    outcome.error = exc
            outcome.cancelled = outcome.cancelled or scope.cancelled_caught
            outcome.async_left = self.lab.async_running
            outcome.new_tasks = count_tasks(self.backend) - tasks_before

        anyio.run(go, backend=self.backend)
        return outcome

    async def read_stream(
        self, action: str, how: str, leave_after: int, decisions: Any, outcome: Outcome
    ) -> None:
        outcome.events = events = []
        stream = (
            self.worker.run_stream("go")
            if action == "run"
            else self.worker.resume_stream(decisions)
        )
        async with stream:
            async for event_ in stream:
                events.append(event_)
                if how == "leave" and len(events) >= leave_after:
                    outcome.cancelled = outcome.left = True  # the run is cancelled
                    break
        outcome.result = stream.result
        if outcome.cancelled and outcome.result is not None:
            outcome.cancelled = outcome.left = False  # it had ended before the reader left

    @rule(data=st.data())
    def step(self, data: st.DataObject) -> None:
        """Resume the paused run with drawn decisions, or run the worker on a freshly
        generated script; either way read by a drawn reader."""
        how = data.draw(st.sampled_from(["call", "call", "stream", "leave"]), label="reader")
        leave_after = data.draw(st.integers(1, 40), label="leave after") if how == "leave" else 0
        if self.worker.is_paused:
            resumed = tuple(p.call.id for p in self.worker.state.paused_calls)
            decisions: dict[str, Approve | Deny] = {}
            for pending in self.worker.pending:
                call_id = pending.call.id
                choice = data.draw(human_decisions, label=f"decide {call_id}")
                self.human[call_id] = choice
                if choice == "deny":
                    decisions[call_id] = Deny(f"denied {call_id}")
                elif choice == "change":
                    changed = data.draw(valid_args(), label=f"arguments for {call_id}")
                    decisions[call_id] = Approve(changed)
                    self.calls[call_id] = replace(self.calls[call_id], input_json=changed)
                else:
                    decisions[call_id] = Approve()
            outcome = self.drive("resume", how, leave_after, decisions)
            outcome.resumed = resumed
            self.check_outcome(outcome)
            return
        responses: list[ScriptedResponse | str] = []
        for spec in data.draw(scripts, label="script"):
            calls = []
            for call in spec.calls:
                call_id = f"c{self.next_id}"
                self.next_id += 1
                self.pre_plans[call_id] = call.pre
                self.post_plans[call_id] = call.post
                calls.append(ScriptedCall(call.name, call.arguments, id=call_id))
                self.calls[call_id] = ToolCall(call_id, call.name, call.arguments)
            responses.append(ScriptedResponse(spec.text, calls, spec.chunk_size, spec.interleave))
        responses.append(data.draw(st.sampled_from(["done", "All good."]), label="answer"))
        self.client.new_run(responses)
        self.check_outcome(self.drive("run", how, leave_after))

    @rule()
    def refusal(self) -> None:
        """A paused worker refuses run(); an unpaused one refuses resume(). Neither changes
        the history."""
        before = self.worker.history
        paused = self.worker.is_paused

        async def go() -> None:
            with pytest.raises(WorkerStateError) as info:
                await (self.worker.run("again") if paused else self.worker.resume(Approve()))
            assert str(info.value) == (
                "Cannot call run(): the worker is paused with tool calls waiting for "
                "decisions (worker.pending); call resume(decisions) first"
                if paused
                else "Nothing to resume: the worker is not paused"
            )

        anyio.run(go, backend=self.backend)
        assert self.worker.history == before
        assert self.worker.is_paused == paused

    # -- checks -------------------------------------------------------------------------------

    def check_outcome(self, outcome: Outcome) -> None:
        """The run ended for a reason the script gave, and left nothing running."""
        assert outcome.async_left == 0, "a tool coroutine is still running"
        assert outcome.new_tasks == 0, "a task is still running"
        pre_or_post = [(stage, d) for stage, _, d in outcome.decisions]
        error = outcome.error
        # The decision that ended the run: the last abort or failing hook.
        stops = [d for d in outcome.decisions if d[2] in ("abort", "raise", "bad")]
        if isinstance(error, WorkerAbortedError):
            stage, call_id, decision = stops[-1]
            assert decision == "abort", outcome.decisions
            prefix = "abort at " if stage == "pre" else "post abort at "
            assert error.reason == prefix + call_id
            assert str(error) == f"Run aborted by a hook: {error.reason}"
        elif isinstance(error, HookError):
            stage, call_id, decision = stops[-1]
            assert decision in ("raise", "bad"), outcome.decisions
            assert error.stage == f"{stage}_tool_call"
            assert error.hook == f"WorkerMachine.{stage}_hook"
            if decision == "raise":
                assert isinstance(error.__cause__, ValueError)
                assert error.problem == f"ValueError: {stage} hook failed at {call_id}"
            else:
                assert error.problem == (BAD_PRE if stage == "pre" else BAD_POST)
            assert str(error) == f"{error.stage} hook {error.hook} failed: {error.problem}"
        elif isinstance(error, MaxTurnsExceededError):
            assert error.max_turns == MAX_TURNS
        elif outcome.cancelled:
            asked_to_cancel = (
                outcome.left
                or ("pre", "cancel") in pre_or_post
                or any(self.mode_of(call_id) == "cancel_run" for _, call_id, _ in outcome.decisions)
                or any(self.mode_of(call_id) == "cancel_run" for call_id in outcome.resumed)
            )
            assert asked_to_cancel, outcome.decisions
        elif outcome.result is WorkerResult.PAUSED:
            assert self.worker.is_paused
            held = {p.call.id for p in self.worker.pending}
            assert held
            assert all(self.last_pre[call_id] == "pause" for call_id in held), held
        else:
            assert outcome.result is WorkerResult.FINISHED
            assert self.worker.final_text in ("done", "All good.")
        if outcome.result is not WorkerResult.PAUSED:
            assert not self.worker.is_paused
        event(
            "ended: "
            + (
                type(error).__name__
                if error
                else "cancelled"
                if outcome.cancelled
                else str(outcome.result and outcome.result.value)
            )
        )
        self.check_new_results(outcome)

    def mode_of(self, call_id: str) -> str | None:
        args = parse_args(self.calls[call_id].input_json)
        return None if args is None else args["mode"]

    def check_new_results(self, outcome: Outcome) -> None:
        """Every result that appeared in this step is one its call could have produced, and
        a read stream's events say the same."""
        history = self.worker.history
        disruptions = self.disruptions(outcome)
        new = [item for item in history[self.checked :] if isinstance(item, ToolResult)]
        for item in new:
            self.check_result(self.calls[item.call_id], item, disruptions)
        self.checked = len(history)
        if outcome.events is not None:
            known = {r.call_id: r for r in new}
            # A paused response's calls decided without running have their results already.
            for paused in self.worker.state.paused_calls:
                if paused.result is not None:
                    known[paused.call.id] = paused.result
            self.check_events(outcome.events, known)

    def disruptions(self, outcome: Outcome) -> set[str]:
        """The texts a call may read when the run ended early (``{name}`` left to fill)."""
        error = outcome.error
        if isinstance(error, WorkerAbortedError):
            why = f"the run was aborted ({error.reason})"
            return {
                ABORTED.replace("{reason}", error.reason),
                STOPPED.replace("{why}", why),
                WITHHELD.replace("{why}", why),
            }
        if isinstance(error, HookError):
            why = "the run stopped with an error"
            return {NOT_RUN, STOPPED.replace("{why}", why), WITHHELD.replace("{why}", why)}
        if not outcome.cancelled:
            return set()
        texts = {CANCELLED, WITHHELD.replace("{why}", "the run was cancelled")}
        if outcome.left:
            # The reader may have left after the run had already been aborted or failed.
            for stage, call_id, decision in outcome.decisions:
                if decision == "abort":
                    prefix = "abort at " if stage == "pre" else "post abort at "
                    texts |= self.disruptions(Outcome(error=WorkerAbortedError(prefix + call_id)))
                elif decision in ("raise", "bad"):
                    texts |= self.disruptions(Outcome(error=HookError("h", "pre", "p")))
        return texts

    def check_events(self, events: list[RunEvent], results: dict[str, ToolResult]) -> None:
        """At most one ToolCallFinished per call, with the history's result; a call that ran
        was announced running first."""
        running: set[str] = set()
        finished: set[str] = set()
        for item in events:
            if isinstance(item, ToolCallRunning):
                assert item.call.id not in running, f"{item.call.id} ran twice"
                assert item.call.id not in self.paused_ids(), "a held call ran"
                running.add(item.call.id)
            elif isinstance(item, ToolCallFinished):
                call_id = item.call.id
                assert call_id not in finished, f"two results for {call_id}"
                finished.add(call_id)
                assert results.get(call_id) == item.result, (item, results.get(call_id))
                if item.outcome.value == "ran":
                    assert call_id in running, f"{call_id} finished without running"
        event(f"events: {len(events) // 10 * 10}+")

    def paused_ids(self) -> set[str]:
        return {p.call.id for p in self.worker.pending}

    def check_result(self, call: ToolCall, result: ToolResult, disruptions: set[str]) -> None:
        content, is_error = result.content, result.is_error
        event("result: " + kind_of(content, is_error))
        assert "Traceback" not in content
        assert not re.search(r"0x[0-9a-fA-F]{4,}", content)
        assert "/srv/" not in content
        assert len(content.encode()) <= MAX_RESULT
        if any(content == text.format(name=call.name) for text in disruptions):
            assert is_error
            return
        if call.name not in KNOWN:
            assert (content, is_error) == (NOT_FOUND.format(name=call.name), True)
            return
        pre = self.last_pre.get(call.id)
        if pre == "skip":
            assert (content, is_error) == (SKIPPED.format(name=call.name), True)
            return
        if pre == "answer":
            assert (content, is_error) == (f"answered {call.id}", False)
            return
        if pre == "pause" and self.human.get(call.id) == "deny":
            reason = f"denied {call.id}"
            assert (content, is_error) == (DENIED.format(name=call.name, reason=reason), True)
            return
        assert pre in ("continue", "none", "cancel", "pause"), (call, pre, content)
        if self.last_post.get(call.id) == "rewrite":
            assert (content, is_error) == (f"rewritten {call.id}", False)
            return
        expected = self.expected_results(call)
        if expected is None:  # arguments invalid in a way we do not predict exactly
            assert is_error
            assert content.startswith("Invalid argument: "), content
            return
        if (content, is_error) not in expected and (content, is_error) in self.timeouts(call.name):
            # A shared machine can stall a call past its timeout; the model then reads the
            # timeout, which is right. (test_timeouts.py checks timeouts deterministically.)
            event("a call that does not hang timed out (loaded machine)")
            return
        assert (content, is_error) in expected, (call, content, expected, disruptions)

    def expected_results(self, call: ToolCall) -> set[tuple[str, bool]] | None:
        """What ``call`` may produce when it runs to the end; ``None``: some invalid-argument
        text."""
        name, input_json = call.name, call.input_json
        size = len(input_json.encode())
        if size > W_BYTES:
            return {too_big(size, W_BYTES)}
        args = parse_args(input_json)
        if args is None:
            return None
        depth = depth_of(json.loads(input_json)) if input_json.strip() else 1
        if depth > W_DEPTH:
            return {too_deep(W_DEPTH)}
        if name in GENERATED and size > T_BYTES:
            return {too_big(size, T_BYTES)}
        if name in GENERATED and depth > T_DEPTH:
            return {too_deep(T_DEPTH)}
        mode, text = args["mode"], args.get("text", "")
        if mode == "return":
            return {(cap_result(text, MAX_RESULT), False)}
        if mode == "big":
            return {(cap_result(BIG, MAX_RESULT), False)}
        if mode == "raise_value":
            return {(HAND_VALUE_ERROR if name == HAND else SCRUBBED_VALUE_ERROR, True)}
        if mode == "raise_tool":
            return {(REFUSED, True)}
        if mode == "hang":
            return self.timeouts(name)
        # cancel_run: the run is cancelled (the disruption text), unless a thread tool's
        # own timeout fired before its cancel reached the event loop.
        return self.timeouts(name) if name == THREAD else set()

    def timeouts(self, name: str) -> set[tuple[str, bool]]:
        """The timeout results of tool ``name``: its own timeout's, or the worker's."""
        found = {(TIMED_OUT.format(name=name, seconds=WORKER_TIMEOUT), True)}
        if name == THREAD:
            found.add((TIMED_OUT.format(name=name, seconds=THREAD_TIMEOUT), True))
        return found

    @invariant()
    def history_is_complete_and_in_order(self) -> None:
        """Every tool call has exactly one result, in order, with matching ids; only the
        calls of a paused batch wait for theirs."""
        history = self.worker.history
        index = 0
        while index < len(history):
            item = history[index]
            assert not isinstance(item, ToolResult), f"orphan result at {index}: {item}"
            index += 1
            if isinstance(item, AssistantMessage) and item.tool_calls:
                pending = history[index : index + len(item.tool_calls)]
                if not pending and index == len(history) and self.worker.is_paused:
                    break
                assert [r.call_id for r in pending if isinstance(r, ToolResult)] == [
                    c.id for c in item.tool_calls
                ], (item.tool_calls, pending)
                index += len(item.tool_calls)
            else:
                assert isinstance(item, (UserMessage, AssistantMessage))

    @invariant()
    def never_more_than_the_concurrency_cap(self) -> None:
        """No more than ``max_concurrent_calls`` tools ever ran at once."""
        assert self.lab.async_most <= MAX_CONCURRENT

    def teardown(self) -> None:
        """Every abandoned thread finishes on its own, within a bounded time."""
        deadline = time.monotonic() + THREADS_FINISH_WITHIN
        while self.lab.threads_running and time.monotonic() < deadline:
            time.sleep(0.005)
        assert self.lab.threads_running == 0, "an abandoned tool thread never finished"


class TrioWorkerMachine(WorkerMachine):
    """The same machine, each step in a trio event loop."""

    backend = "trio"


STEPS = 6
TestWorkerOnAsyncio = WorkerMachine.TestCase
TestWorkerOnAsyncio.settings = settings(
    max_examples=200,
    stateful_step_count=STEPS,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TestWorkerOnTrio = TrioWorkerMachine.TestCase
TestWorkerOnTrio.settings = settings(
    max_examples=60,
    stateful_step_count=STEPS,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
