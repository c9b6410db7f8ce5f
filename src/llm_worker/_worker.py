"""``Worker`` and ``LockedWorker``: the conversation, its tools, and the turn loop.

A ``Worker`` is the only way an application registers tools. ``lock()``
freezes what a provider caches as the prompt prefix (system prompt, tool
definitions, history so far) and hands back a ``LockedWorker``, which can only
append to history by running. ``unlock()`` gives the ``Worker`` back.

Guarantees of ``run`` and ``resume`` (each tested under the same words):

- Every tool call gets exactly one result, in call order, whatever happens:
  unknown tool, skipped, failed, aborted, cancelled.
- Allowed calls of one response run concurrently; hooks run one at a time, in call order.
- Cancelling a run cancels its running tools at once. A plain-def tool's
  thread cannot be interrupted: it is abandoned, may still finish, and its
  result is dropped.
- At most ``Limits.max_concurrent_calls`` calls run at once; each is held to
  the input limits and timeout, and its result to ``Limits.max_result_bytes``.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from typing import NoReturn

import anyio

from ._client import (
    Completion,
    LlmClient,
    LlmEvent,
    LlmRequest,
    TextDelta,
    ToolInputDelta,
    ToolUseStart,
    ToolUseStop,
)
from ._conversation import AssistantMessage, Message, ToolCall, ToolResult, UserMessage
from ._exceptions import (
    ExecutionFailedError,
    InvalidArgumentError,
    LlmClientError,
    MaxTurnsExceededError,
    ToolNotFoundError,
    WorkerAbortedError,
    WorkerStateError,
)
from ._hooks import (
    Abort,
    Continue,
    Pause,
    PostToolCallContext,
    PostToolCallHook,
    PreToolCallHook,
    Skip,
    ToolCallContext,
    run_post_hooks,
    run_pre_hooks,
)
from ._limits import Limits, cap_result, input_limit_problem
from ._model_texts import ABORTED, CANCELLED, NOT_RUN, SKIPPED, TIMED_OUT, WITHHELD
from ._server import ToolServer, ToolServerHandle, call_for_model
from ._types import ToolDefinition

__all__ = ["LockedWorker", "Worker", "WorkerResult"]

logger = logging.getLogger("llm_worker")


class WorkerResult(enum.Enum):
    """How a run ended (errors are raised, not returned)."""

    FINISHED = "finished"
    """The model answered without calling tools."""
    PAUSED = "paused"
    """A ``pre_tool_call`` hook returned ``Pause()``; call ``resume()`` to go on."""


class _Phase(enum.Enum):
    IDLE = "idle"
    RUNNING = "running"
    PAUSED = "paused"


@dataclass
class _Batch:
    """The tool calls of one response while they are being handled."""

    calls: tuple[ToolCall, ...]
    results: list[ToolResult | None]
    next_index: int  # first call not yet decided by the pre-hooks
    turns: int  # model requests made so far in this run


class _Session:
    """The state a Worker and its LockedWorker share; only the current owner may change it."""

    def __init__(
        self, client: LlmClient, system_prompt: str | None, max_turns: int, limits: Limits
    ) -> None:
        self.client = client
        self.system_prompt = system_prompt
        self.max_turns = max_turns
        self.limits = limits
        self.history: list[Message] = []
        self.server = ToolServer()
        self.handle = self.server.handle()
        self.pre_hooks: list[PreToolCallHook] = []
        self.post_hooks: list[PostToolCallHook] = []
        self.phase = _Phase.IDLE
        self.paused_batch: _Batch | None = None
        self.owner: _WorkerBase | None = None

    # -- the turn loop -------------------------------------------------------------

    async def run(self, user_input: str) -> WorkerResult:
        self.require_phase(_Phase.IDLE, "run()")
        self.history.append(UserMessage(user_input))
        return await self.drive(None)

    async def resume(self) -> WorkerResult:
        if self.phase is not _Phase.PAUSED or self.paused_batch is None:
            raise WorkerStateError("Nothing to resume: the worker is not paused")
        batch, self.paused_batch = self.paused_batch, None
        return await self.drive(batch)

    async def retry(self) -> WorkerResult:
        self.require_phase(_Phase.IDLE, "retry()")
        if not self.history or isinstance(self.history[-1], AssistantMessage):
            raise WorkerStateError("Nothing to retry: the model has answered the last message")
        return await self.drive(None)

    async def drive(self, batch: _Batch | None) -> WorkerResult:
        self.phase = _Phase.RUNNING
        try:
            turns = 0
            if batch is not None:
                turns = batch.turns
                if await self.handle_batch(batch) is WorkerResult.PAUSED:
                    return WorkerResult.PAUSED
            while True:
                if turns >= self.max_turns:
                    raise MaxTurnsExceededError(self.max_turns)
                response = await self.request()
                self.history.append(response)
                turns += 1
                if not response.tool_calls:
                    return WorkerResult.FINISHED
                batch = _Batch(response.tool_calls, [None] * len(response.tool_calls), 0, turns)
                if await self.handle_batch(batch) is WorkerResult.PAUSED:
                    return WorkerResult.PAUSED
        finally:
            if self.phase is _Phase.RUNNING:
                self.phase = _Phase.IDLE

    async def request(self) -> AssistantMessage:
        request = LlmRequest(
            system_prompt=self.system_prompt,
            messages=tuple(self.history),
            tools=tuple(self.handle.tool_definitions_sorted()),
        )
        return await _collect_response(self.client.stream(request))

    async def handle_batch(self, batch: _Batch) -> WorkerResult | None:
        """Pre-hooks, concurrent execution, post-hooks; then append every result in order.

        When there are post-hooks, a result reaches the history only after they
        have seen it (they may redact it); if the batch ends first, that call
        gets the closing text.
        """
        allowed: list[tuple[int, ToolCallContext]] = []
        reviewed = 0  # allowed[:reviewed] went through the post-hooks
        try:
            allowed, stop = await self.decide(batch)
            if isinstance(stop, Abort):
                allowed = []  # an abort stops everything: no call of the batch runs after it
            await self.execute(allowed, batch)
            for index, ctx in allowed:
                result = batch.results[index]
                assert result is not None
                post_ctx = PostToolCallContext(ctx.call, result, ctx.meta, ctx.tool)
                decision = await run_post_hooks(self.post_hooks, post_ctx)
                batch.results[index] = post_ctx.result
                reviewed += 1
                if isinstance(decision, Abort):
                    stop = decision
                    break
        except BaseException as exc:
            # Cancelled, a hook failed, or worse: close the batch so the history stays valid.
            cancelled = isinstance(exc, anyio.get_cancelled_exc_class())
            why = "the run was cancelled" if cancelled else "the run stopped with an error"
            self.withhold(batch, allowed[reviewed:], why)
            self.close_batch(batch, CANCELLED if cancelled else NOT_RUN, "")
            raise
        if isinstance(stop, Abort):
            self.withhold(batch, allowed[reviewed:], f"the run was aborted ({stop.reason})")
            self.close_batch(batch, ABORTED, stop.reason)
            raise WorkerAbortedError(stop.reason)
        if isinstance(stop, Pause):
            self.paused_batch = batch
            self.phase = _Phase.PAUSED
            return WorkerResult.PAUSED
        self.close_batch(batch, NOT_RUN, "")
        return None

    async def decide(
        self, batch: _Batch
    ) -> tuple[list[tuple[int, ToolCallContext]], Abort | Pause | None]:
        """Run the pre-hooks call by call, from ``batch.next_index``, until one stops the batch."""
        allowed: list[tuple[int, ToolCallContext]] = []
        for index in range(batch.next_index, len(batch.calls)):
            call = batch.calls[index]
            entry = self.handle.get_tool(call.name)
            if entry is None:
                batch.results[index] = ToolResult(call.id, str(ToolNotFoundError(call.name)), True)
                continue
            ctx = ToolCallContext(call, entry[0], entry[1])
            decision = await run_pre_hooks(self.pre_hooks, ctx)
            if isinstance(decision, Continue):
                allowed.append((index, ctx))
            elif isinstance(decision, Skip):
                batch.results[index] = ToolResult(call.id, SKIPPED.format(name=call.name), True)
            else:
                batch.next_index = index  # on resume, this call's hooks are asked again
                return allowed, decision
        batch.next_index = len(batch.calls)
        return allowed, None

    async def execute(self, allowed: list[tuple[int, ToolCallContext]], batch: _Batch) -> None:
        """Run the allowed calls, ``max_concurrent_calls`` at a time; each stores its result."""
        results, calls, limits = batch.results, batch.calls, self.limits

        async def call_one(index: int, ctx: ToolCallContext) -> None:
            call_id = calls[index].id  # a hook may rewrite the call, not its id
            content, is_error = await self.call_tool(ctx.call)
            results[index] = ToolResult(
                call_id, cap_result(content, limits.max_result_bytes), is_error
            )

        if len(allowed) == 1:
            await call_one(*allowed[0])
            return
        pending = iter(allowed)

        async def take_calls() -> None:
            for index, ctx in pending:  # shared: each call is taken by one runner
                await call_one(index, ctx)

        async with anyio.create_task_group() as group:
            for _ in range(min(limits.max_concurrent_calls, len(allowed))):
                group.start_soon(take_calls)

    async def call_tool(self, call: ToolCall) -> tuple[str, bool]:
        """One call through the handle, within the limits: ``(content, is_error)``."""
        limits = self.limits
        problem = input_limit_problem(
            call.input_json, limits.max_input_bytes, limits.max_input_depth
        )
        if problem is not None:
            logger.info("Tool %r refused its input: %s", call.name, problem)
            return str(InvalidArgumentError(problem)), True
        with anyio.move_on_after(limits.tool_timeout):
            return await call_for_model(self.handle, call.name, call.input_json)
        # Only the timeout scope can end the block without a return.
        logger.info("Tool %r timed out after %ss", call.name, limits.tool_timeout)
        timed_out = TIMED_OUT.format(name=call.name, seconds=limits.tool_timeout or 0.0)
        return str(ExecutionFailedError(timed_out)), True

    def withhold(
        self, batch: _Batch, unreviewed: Sequence[tuple[int, ToolCallContext]], why: str
    ) -> None:
        """Replace results the post-hooks have not seen (they may redact) with a note."""
        if not self.post_hooks:
            return  # nothing would have reviewed them: they are final as they are
        for index, ctx in unreviewed:
            if batch.results[index] is not None:
                text = WITHHELD.format(name=ctx.call.name, why=why)
                batch.results[index] = ToolResult(batch.calls[index].id, text, True)

    def close_batch(self, batch: _Batch, text: str, reason: str) -> None:
        """Give every call without a result ``text``, then append all results in call order."""
        for index, call in enumerate(batch.calls):
            result = batch.results[index]
            if result is None:
                result = ToolResult(call.id, text.format(name=call.name, reason=reason), True)
            self.history.append(result)
        batch.results = [None] * len(batch.calls)

    # -- state checks ---------------------------------------------------------------

    def require_phase(self, phase: _Phase, what: str) -> None:
        if self.phase is phase:
            return
        if self.phase is _Phase.RUNNING:
            raise WorkerStateError(f"Cannot call {what}: a run is in progress")
        if self.phase is _Phase.PAUSED:
            raise WorkerStateError(
                f"Cannot call {what}: the worker is paused with tool calls pending; "
                f"call resume() first"
            )
        raise WorkerStateError(f"Cannot call {what} now (worker is {self.phase.value})")


async def _collect_response(stream: AsyncIterator[LlmEvent]) -> AssistantMessage:
    """Assemble a stream of events into one ``AssistantMessage``."""
    text: list[str] = []
    starts: dict[int, ToolUseStart] = {}
    fragments: dict[int, list[str]] = {}
    stopped: set[int] = set()
    completion: Completion | None = None
    try:
        async for event in stream:
            if completion is not None:
                raise LlmClientError(f"LlmClient sent {event!r} after the Completion event")
            if isinstance(event, TextDelta):
                text.append(event.text)
            elif isinstance(event, ToolInputDelta):
                if event.index not in starts:
                    raise LlmClientError(
                        f"LlmClient sent input for tool call index {event.index} before its "
                        f"ToolUseStart"
                    )
                if event.index in stopped:
                    raise LlmClientError(
                        f"LlmClient sent input for tool call index {event.index} after its "
                        f"ToolUseStop"
                    )
                fragments[event.index].append(event.fragment)
            elif isinstance(event, ToolUseStart):
                if event.index in starts:
                    raise LlmClientError(f"LlmClient started tool call index {event.index} twice")
                starts[event.index] = event
                fragments[event.index] = []
            elif isinstance(event, ToolUseStop):
                if event.index not in starts:
                    raise LlmClientError(
                        f"LlmClient stopped tool call index {event.index}, which never started"
                    )
                stopped.add(event.index)
            elif isinstance(event, Completion):
                completion = event
            else:
                raise LlmClientError(f"LlmClient sent an unknown event: {event!r}")
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            with anyio.CancelScope(shield=True):
                await aclose()
    if completion is None:
        raise LlmClientError("LlmClient's stream ended without a Completion event")
    calls = tuple(
        ToolCall(start.call_id, start.name, "".join(fragments[index]))
        for index, start in starts.items()
    )
    return AssistantMessage("".join(text), calls, completion.stop_reason, completion.usage)


class _WorkerBase:
    """What a Worker and a LockedWorker both offer."""

    __slots__ = ("_session",)

    _session: _Session

    def tool_server_handle(self) -> ToolServerHandle:
        """The handle of this worker's tools (lookup and calls; no registration)."""
        return self._session.handle

    @property
    def system_prompt(self) -> str | None:
        """The system prompt sent with every request."""
        return self._session.system_prompt

    @property
    def history(self) -> tuple[Message, ...]:
        """The conversation so far (a snapshot)."""
        return tuple(self._session.history)

    @property
    def max_turns(self) -> int:
        """The most model requests one run may make."""
        return self._session.max_turns

    @property
    def limits(self) -> Limits:
        """What each tool call is allowed (sizes, depth, timeout, result size, concurrency)."""
        return self._session.limits

    @property
    def is_paused(self) -> bool:
        """Whether a hook paused the last run; ``resume()`` continues it."""
        return self._session.phase is _Phase.PAUSED

    @property
    def final_text(self) -> str | None:
        """The text of the last assistant message, if any."""
        for message in reversed(self._session.history):
            if isinstance(message, AssistantMessage):
                return message.text
        return None

    def add_pre_tool_call_hook(self, hook: PreToolCallHook) -> PreToolCallHook:
        """Run ``hook`` before each tool call (after those added earlier). Returns ``hook``."""
        self._require_owner()
        self._session.pre_hooks.append(hook)
        return hook

    def add_post_tool_call_hook(self, hook: PostToolCallHook) -> PostToolCallHook:
        """Run ``hook`` after each tool call (after those added earlier). Returns ``hook``."""
        self._require_owner()
        self._session.post_hooks.append(hook)
        return hook

    async def run(self, user_input: str) -> WorkerResult:
        """Send ``user_input`` and handle the model's tool calls until it answers.

        Every tool call gets exactly one result, in call order. Raises
        ``WorkerAbortedError`` when a hook aborts, ``MaxTurnsExceededError``
        after ``max_turns`` requests, ``HookError`` when a hook fails.
        """
        self._require_owner()
        return await self._session.run(user_input)

    async def resume(self) -> WorkerResult:
        """Continue a paused run; calls that already ran are not run again."""
        self._require_owner()
        return await self._session.resume()

    async def retry(self) -> WorkerResult:
        """Ask the model again for the answer it still owes, without a new message.

        For after a run that ended before the model answered: a ``ProviderError``,
        a cancelled request, ``MaxTurnsExceededError``. The history is sent as it
        is; nothing is added first.
        """
        self._require_owner()
        return await self._session.retry()

    def _require_owner(self) -> None:
        if self._session.owner is not self:
            self._stale()

    def _stale(self) -> NoReturn:
        raise NotImplementedError


class Worker(_WorkerBase):
    """A conversation with a model and the tools it may call.

    >>> worker = Worker(client, system_prompt="You are terse.")
    >>> worker.register_tools([app.search.definition()])
    >>> result = await worker.run("find cats")
    """

    __slots__ = ()

    def __init__(
        self,
        client: LlmClient,
        *,
        system_prompt: str | None = None,
        max_turns: int = 10,
        limits: Limits | None = None,
    ) -> None:
        if max_turns < 1:
            raise ValueError(f"max_turns must be at least 1, got {max_turns}")
        self._session = _Session(client, system_prompt, max_turns, limits or Limits())
        self._session.owner = self

    def register_tool(self, definition: ToolDefinition) -> None:
        """Register one tool; raises ``DuplicateToolError`` if its name is taken."""
        self._require_owner()
        self._session.server.register_tool(definition)

    def register_tools(self, definitions: Iterable[ToolDefinition]) -> None:
        """Register a batch: all or none; each factory is called once."""
        self._require_owner()
        self._session.server.register_tools(definitions)

    @property
    def system_prompt(self) -> str | None:
        """The system prompt sent with every request."""
        return self._session.system_prompt

    @system_prompt.setter
    def system_prompt(self, value: str | None) -> None:
        self._require_owner()
        self._session.system_prompt = value

    def set_history(self, messages: Sequence[Message]) -> None:
        """Replace the conversation (for example to restore a saved one)."""
        self._require_owner()
        self._session.require_phase(_Phase.IDLE, "set_history()")
        self._session.history = list(messages)

    def clear_history(self) -> None:
        """Forget the conversation."""
        self.set_history(())

    def lock(self) -> LockedWorker:
        """Freeze the prompt prefix and return the ``LockedWorker``; this object stops working."""
        self._require_owner()
        if self._session.phase is _Phase.RUNNING:
            raise WorkerStateError("Cannot call lock(): a run is in progress")
        locked = LockedWorker._create(self._session, self)
        self._session.owner = locked
        return locked

    def _stale(self) -> NoReturn:
        raise WorkerStateError(
            "This Worker is locked; use the LockedWorker that lock() returned, "
            "or call its unlock() to get this Worker back"
        )

    def __repr__(self) -> str:
        session = self._session
        return (
            f"<Worker tools={len(session.handle)} messages={len(session.history)} "
            f"{session.phase.value}{'' if session.owner is self else ' locked'}>"
        )


class LockedWorker(_WorkerBase):
    """A worker whose system prompt, tools and past history are frozen.

    It can run, resume, take hooks and ``unlock()``; it cannot register tools.
    Get one from ``Worker.lock()``.
    """

    __slots__ = ("_worker",)

    _worker: Worker

    def __init__(self) -> None:
        raise TypeError("LockedWorker has no public constructor; use Worker.lock()")

    @property
    def system_prompt(self) -> str | None:
        """The system prompt sent with every request (frozen while locked)."""
        return self._session.system_prompt

    @classmethod
    def _create(cls, session: _Session, worker: Worker) -> LockedWorker:
        self = object.__new__(cls)
        self._session = session
        self._worker = worker
        return self

    def unlock(self) -> Worker:
        """Give back the ``Worker`` (the same object ``lock()`` was called on)."""
        self._require_owner()
        if self._session.phase is _Phase.RUNNING:
            raise WorkerStateError("Cannot call unlock(): a run is in progress")
        self._session.owner = self._worker
        return self._worker

    def _stale(self) -> NoReturn:
        raise WorkerStateError(
            "This LockedWorker was unlocked; use the Worker that unlock() returned"
        )

    def __repr__(self) -> str:
        session = self._session
        return (
            f"<LockedWorker tools={len(session.handle)} messages={len(session.history)} "
            f"{session.phase.value}>"
        )
