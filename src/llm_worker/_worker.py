"""``Worker`` and ``LockedWorker``: a conversation, its tools, and the runs that continue it.

A ``Worker`` is the only way an application registers tools. ``lock()``
freezes what a provider caches as the prompt prefix (system prompt, tool
definitions, history so far) and hands back a ``LockedWorker``, which can only
append to history by running. ``unlock()`` gives the ``Worker`` back.

Guarantees of a run (``run``/``resume``/``retry`` and their ``*_stream``
forms; each tested under the same words):

- Every tool call gets exactly one result, in call order, whatever happens:
  unknown tool, skipped, denied, failed, aborted, cancelled.
- Allowed calls of one response run concurrently (a ``sequential`` tool's
  call runs alone); hooks run one at a time, pre-hooks in call order before
  any call of the response runs, post-hooks in call order as results come.
- Pre-hooks and approval policies are asked once per call; a call held for a
  decision runs only after ``resume(decisions)`` approves it.
- Cancelling a run cancels its running tools at once. A plain-def tool's
  thread cannot be interrupted: it is abandoned, may still finish, and its
  result is dropped.
- At most ``Limits.max_concurrent_calls`` calls run at once; each is held to
  the input limits and timeout, and its result to ``Limits.max_result_bytes``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, NoReturn, cast, overload

from typing_extensions import TypeVar

from ._annotations import is_class
from ._approvals import Decision, PendingCall
from ._client import LlmClient, ToolChoice
from ._context import deps_fit, deps_types_fit, run_checked
from ._conversation import MAX_COUNT, AssistantMessage, Message, RunUsage
from ._exceptions import WorkerStateError
from ._hooks import (
    PostHookResult,
    PostToolCallContext,
    PreHookResult,
    ToolCallContext,
)
from ._instrumentation import Instrumentation
from ._limits import Limits, check_count
from ._run import RunStream, Start
from ._safe_text import bounded_repr
from ._server import (
    ToolEntry,
    ToolServerHandle,
    add_entries,
    entry_of,
    make_entries,
)
from ._session import RunStateWarning, Session, WorkerResult, checked_system_prompt
from ._state import RunState
from ._types import ToolDefinition

if TYPE_CHECKING:
    from ._output import RunOutput

__all__ = ["LockedWorker", "RunStateWarning", "Worker", "WorkerResult", "check_output_options"]

DepsT = TypeVar("DepsT", default=None)
OutputT = TypeVar("OutputT", default=Any)
_D = TypeVar("_D")
_O = TypeVar("_O")


class _WorkerBase(Generic[DepsT, OutputT]):
    """What a Worker and a LockedWorker both offer."""

    __slots__ = ("_run_deps_type", "_session")

    _session: Session
    # What each run checks its deps against: the session's deps_type if a run can check it
    # (run_checked), decided when the Worker is built; None: not checked.
    _run_deps_type: type[Any] | None

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
        """The most model requests one ``run()``, ``resume()`` or ``retry()`` may make."""
        return self._session.max_turns

    @property
    def limits(self) -> Limits:
        """What each tool call is allowed, and the budgets of a run. Assignable between runs
        (and while paused); ``WorkerStateError`` while a run is in progress."""
        return self._session.limits

    @limits.setter
    def limits(self, value: Limits) -> None:
        self._require_owner()
        self._session.require_not_running("worker.limits = ...")
        if not isinstance(value, Limits):
            raise TypeError(f"limits must be a Limits, not {type(value).__name__}")
        self._session.limits = value

    @property
    def is_paused(self) -> bool:
        """Whether calls wait for decisions; ``resume(decisions)`` continues the run (once
        the stream that paused it is closed)."""
        return self._session.is_paused

    @property
    def pending(self) -> tuple[PendingCall, ...]:
        """The calls waiting for a decision, in call order (empty unless paused)."""
        return self._session.pending

    @property
    def pause_id(self) -> str | None:
        """The id of the current pause (``None`` unless paused), new at each pause: pass it
        to ``resume(decisions, pause_id=...)`` to refuse decisions meant for another pause."""
        return self._session.pause_id

    @property
    def usage(self) -> RunUsage:
        """What the whole conversation has cost: requests, tool calls and tokens."""
        return self._session.usage

    @property
    def run_usage(self) -> RunUsage:
        """What the current (or last) run has cost: what the budgets of ``Limits`` count."""
        return self._session.run_usage

    @property
    def state(self) -> RunState:
        """The conversation as a ``RunState`` value (``to_json()`` to save it)."""
        return self._session.snapshot()

    @property
    def output(self) -> OutputT:
        """The final answer of the last finished run, validated into its ``output_type``
        (the answer's text for a run without one).

        Raises ``WorkerStateError`` before a run has finished, and while a run is
        paused or after one failed; and after a run given an ``output_type`` that is
        not the worker's (its answer is not of this type: read ``stream.output``).
        """
        session = self._session
        if not session.has_output:
            raise WorkerStateError(
                "There is no output: no run of this worker has finished since it last "
                "started one (a paused run has its output once resume() finishes it)"
            )
        if session.own_output:
            raise WorkerStateError(
                "worker.output has the type of the Worker's output_type, but the last run "
                "was given its own output_type; read its answer from the run's stream "
                "(stream.output of run_stream(..., output_type=...), or RunFinished.output)"
            )
        value: OutputT = session.output
        return value

    @property
    def final_text(self) -> str | None:
        """The text of the last assistant message, if any."""
        for message in reversed(self._session.history):
            if isinstance(message, AssistantMessage):
                return message.text
        return None

    def add_pre_tool_call_hook(
        self, hook: Callable[[ToolCallContext[DepsT]], PreHookResult]
    ) -> Callable[[ToolCallContext[DepsT]], PreHookResult]:
        """Run ``hook`` before each tool call (after those added earlier). Returns ``hook``."""
        self._require_owner()
        self._session.pre_hooks.append(hook)
        return hook

    def add_post_tool_call_hook(
        self, hook: Callable[[PostToolCallContext[DepsT]], PostHookResult]
    ) -> Callable[[PostToolCallContext[DepsT]], PostHookResult]:
        """Run ``hook`` after each tool call (after those added earlier). Returns ``hook``."""
        self._require_owner()
        self._session.post_hooks.append(hook)
        return hook

    # -- runs --------------------------------------------------------------------------

    @overload
    def run_stream(
        self,
        user_input: str,
        *,
        deps: DepsT | None = None,
        allowed_tools: Sequence[str] | None = None,
        tool_choice: ToolChoice = "auto",
        output_type: None = None,
    ) -> RunStream[DepsT, OutputT]: ...
    @overload
    def run_stream(
        self,
        user_input: str,
        *,
        deps: DepsT | None = None,
        allowed_tools: Sequence[str] | None = None,
        tool_choice: ToolChoice = "auto",
        output_type: type[_O],
    ) -> RunStream[DepsT, _O]: ...
    @overload
    def run_stream(  # a type that is not a class (int | str, Literal[...]): Any output
        self,
        user_input: str,
        *,
        deps: DepsT | None = None,
        allowed_tools: Sequence[str] | None = None,
        tool_choice: ToolChoice = "auto",
        output_type: object,
    ) -> RunStream[DepsT, Any]: ...
    def run_stream(
        self,
        user_input: str,
        *,
        deps: DepsT | None = None,
        allowed_tools: Sequence[str] | None = None,
        tool_choice: ToolChoice = "auto",
        output_type: Any = None,
    ) -> RunStream[DepsT, Any]:
        """``run()``, as a stream of events: ``async with worker.run_stream(...) as s:``.

        See ``run`` for the arguments and ``RunStream`` for the events;
        ``stream.output`` has the type of ``output_type``.
        """
        self._require_owner()
        self._check_deps(deps, "run")
        output = self._output_of(output_type, tool_choice)
        self._check_tool_choice(tool_choice, output)
        allowed = _names(allowed_tools)
        if allowed is not None:
            self._session.check_allowed_tools(allowed, _output_tool(output))
        return RunStream(
            self._session,
            Start("run", user_input=user_input),
            deps=deps,
            tool_choice=tool_choice,
            allowed_tools=allowed,
            output=output,
            own_output=self._is_own(output_type),
        )

    def resume_stream(
        self,
        decisions: Mapping[str, Decision] | Decision | None = None,
        *,
        pause_id: str | None = None,
        deps: DepsT | None = None,
    ) -> RunStream[DepsT, Any]:
        """``resume()``, as a stream of events. Its ``output`` is of the paused run's
        ``output_type`` (maybe not the worker's: typed ``Any``)."""
        self._require_owner()
        self._check_deps(deps, "resume")
        return RunStream(
            self._session,
            Start("resume", decisions=decisions, pause_id=pause_id),
            deps=deps,
            tool_choice=None,
            allowed_tools=None,
            output=self._continued_output(),
        )

    def retry_stream(self, *, deps: DepsT | None = None) -> RunStream[DepsT, Any]:
        """``retry()``, as a stream of events. Its ``output`` is of the failed run's
        ``output_type`` (maybe not the worker's: typed ``Any``)."""
        self._require_owner()
        self._check_deps(deps, "retry")
        return RunStream(
            self._session,
            Start("retry"),
            deps=deps,
            tool_choice=None,
            allowed_tools=None,
            output=self._continued_output(),
        )

    async def run(
        self,
        user_input: str,
        *,
        deps: DepsT | None = None,
        allowed_tools: Sequence[str] | None = None,
        tool_choice: ToolChoice = "auto",
        output_type: Any = None,
    ) -> WorkerResult:
        """Send ``user_input`` and handle the model's tool calls until it answers.

        Every tool call gets exactly one result, in call order. ``deps`` reach
        tools that take a ``ToolContext`` and hooks (``ctx.deps``).
        ``allowed_tools`` names the tools the model may call in this run (the
        definitions sent stay all of them); a call to another gets an error
        result and does not run. ``tool_choice``: ``"auto"``, ``"required"``,
        ``"none"`` or a tool's name, for the first request (then ``"auto"``,
        so a forced call cannot loop; ``"none"`` stays). ``output_type`` (any
        type pydantic validates; default: the worker's) asks for a structured
        answer: ``worker.output`` is then the answer validated into it (if the
        worker has an ``output_type`` of another type, ``worker.output`` raises:
        read the answer from ``run_stream(...)``'s ``stream.output``).

        Returns ``FINISHED``, or ``PAUSED`` when calls wait for a decision.
        Raises ``WorkerAbortedError`` when a hook aborts, ``MaxTurnsExceededError``
        after ``max_turns`` requests, ``UsageLimitExceededError`` when a budget
        is used up, ``HookError`` when a hook fails, ``ProviderError`` /
        ``LlmClientError`` when the model's response fails,
        ``OutputValidationError`` when its answer does not fit ``output_type``
        after ``output_retries`` retries.
        """
        return await _drain(
            self.run_stream(
                user_input,
                deps=deps,
                allowed_tools=allowed_tools,
                tool_choice=tool_choice,
                output_type=output_type,
            )
        )

    async def resume(
        self,
        decisions: Mapping[str, Decision] | Decision | None = None,
        *,
        pause_id: str | None = None,
        deps: DepsT | None = None,
    ) -> WorkerResult:
        """Continue a paused run with a decision for every pending call.

        ``decisions`` maps each pending call's id to ``Approve()`` (optionally
        with other arguments) or ``Deny(reason)``; a single decision applies
        to every pending call. Approved calls run (their pre-hooks are not
        asked again), denied ones get the reason as their result; then the run
        goes on as ``run()`` does. ``pause_id`` (the ``worker.pause_id`` the
        decisions were made for) ties them to that pause: call ids may repeat
        in a later response, pause ids do not. Raises ``WorkerStateError`` if
        the worker is not paused, ``pause_id`` is not the current pause's, or a
        pending call has no decision (nothing changes then).
        """
        return await _drain(self.resume_stream(decisions, pause_id=pause_id, deps=deps))

    async def retry(self, *, deps: DepsT | None = None) -> WorkerResult:
        """Ask the model again for the answer it still owes, without a new message.

        For after a run that ended before the model answered: a ``ProviderError``,
        a cancelled request, ``MaxTurnsExceededError``, ``UsageLimitExceededError``
        (raise the budget first). The history is sent as it is; nothing is
        added first. The run's budgets go on counting.
        """
        return await _drain(self.retry_stream(deps=deps))

    def _output_of(self, output_type: Any, tool_choice: ToolChoice) -> RunOutput | None:
        """What a new run asks of its answer: ``output_type``, else the worker's; ``None``
        for text."""
        session = self._session
        if output_type is None:
            output_type = session.output_type
        if output_type is None or output_type is str:
            return None
        from ._output import OUTPUT_TOOL_NAME, RunOutput, answers_natively  # pydantic validators

        native = answers_natively(session.client, output_type)
        if not native:
            if entry_of(session.handle, OUTPUT_TOOL_NAME) is not None:
                raise ValueError(
                    f"this worker has a tool named {OUTPUT_TOOL_NAME!r}, the name its client "
                    f"(without native structured output) needs for the final answer; "
                    f"rename the tool"
                )
            if tool_choice == "none":
                raise ValueError(
                    "tool_choice='none' leaves this client no way to give a structured "
                    "answer (it answers through a tool); drop output_type or tool_choice"
                )
        return RunOutput(output_type, native=native, retries=session.output_retries)

    def _is_own(self, output_type: object) -> bool:
        """Whether a run's ``output_type`` is not the worker's, so ``worker.output`` (typed
        by the worker's) cannot give its answer. A worker without one has ``output: Any``."""
        workers = self._session.output_type
        return workers is not None and output_type is not None and output_type != workers

    def _continued_output(self) -> RunOutput | None:
        # A resume or retry goes on with its run's output (or, in a worker that loaded the
        # run's state, with the worker's own output_type).
        session = self._session
        if session.run_output is not None:
            return session.run_output
        output = self._output_of(None, session.tool_choice)
        if output is not None and session.paused is not None:
            session.take_saved_answer(output, session.paused)  # load_state() checked it fits
        return output

    def _check_tool_choice(self, tool_choice: object, output: RunOutput | None) -> None:
        self._session.check_tool_choice(tool_choice, _output_tool(output))

    def _check_deps(self, deps: object, method: str) -> None:
        session = self._session
        if session.deps_type is not None:
            deps_type = self._run_deps_type  # None: a type a run cannot check (a Protocol)
            if deps_type is not None and not deps_fit(deps, deps_type):
                _deps_refused(deps, deps_type, "deps_type=", method)
            return
        # Without deps_type, the deps must be what each ToolContext[Deps] of a tool asks
        # for (one check per Deps type, usually none or one), or the tool fails on them.
        for wanted, tool_name in session.tool_deps.items():
            if not deps_fit(deps, wanted):
                why = f"tool {tool_name!r} takes ToolContext[{wanted.__qualname__}]"
                _deps_refused(deps, wanted, why, method)

    def _require_owner(self) -> None:
        if self._session.owner is not self:
            self._stale()

    def _stale(self) -> NoReturn:
        raise NotImplementedError


async def _drain(stream: RunStream[Any]) -> WorkerResult:
    async with stream:
        async for _ in stream:
            pass
    result = stream.result
    assert result is not None  # the stream ends with RunFinished or RunPaused, or raises
    return result


def check_output_options(output_type: object, output_retries: object) -> None:
    """Refuse what ``output_type=`` / ``output_retries=`` cannot be, where they are given."""
    if not isinstance(output_retries, int) or output_retries < 0:
        raise ValueError(f"output_retries must be an int of at least 0, got {output_retries!r}")
    if output_type is not None and output_type is not str:
        from ._output_schema import output_shape

        # A type pydantic cannot validate fails here, not later (as a run asks for it).
        output_shape(output_type, mode="validation")


def _deps_refused(deps: object, wanted: type[Any], why: str, method: str) -> NoReturn:
    given = f"got {type(deps).__qualname__}"
    if deps is None:
        given = f"{method}() was given none: pass deps={wanted.__qualname__}(...)"
        if method != "run":
            given += " (deps are not kept from the run that paused or failed)"
    raise TypeError(f"this worker's runs take deps of type {wanted.__qualname__} ({why}); {given}")


def _output_tool(output: RunOutput | None) -> str | None:
    """The tool a run's structured answer comes in, if it comes in one."""
    return None if output is None or output.tool is None else output.tool.name


def _wanted_deps(entry: ToolEntry) -> type[Any] | None:
    """The Deps a generated tool's ``ToolContext[Deps]`` asks for, if a run can check it."""
    return run_checked(getattr(entry.tool, "deps_type", None))


def _check_deps_type(entry: ToolEntry, deps_type: type[Any]) -> None:
    # A generated tool says which Deps its ToolContext[Deps] wants (deps_type).
    wanted = _wanted_deps(entry)
    if wanted is not None and not deps_types_fit(deps_type, wanted):
        raise TypeError(
            f"tool {entry.meta.name!r} takes ToolContext[{wanted.__qualname__}], but this "
            f"worker's runs give deps of type {deps_type.__qualname__} (deps_type=)"
        )


def _check_client(client: object) -> None:
    """Refuse what is not an ``LlmClient`` here, not at the first run (which would leave its
    message in the history, and fail again at every run)."""
    hint = 'Worker(OpenAIChatClient("gpt-4o")), or any LlmClient'
    if isinstance(client, str):
        raise TypeError(
            f"Worker() takes a client, not the string {bounded_repr(client, 60)}; a model's "
            f"name goes to its provider's client: {hint}"
        )
    if isinstance(client, type):
        raise TypeError(
            f"Worker() takes a client, not the class {client.__qualname__}; make one: "
            f"Worker({client.__qualname__}(...)) (e.g. {hint})"
        )
    if not callable(getattr(client, "stream", None)):
        raise TypeError(
            f"Worker() takes a client (an LlmClient, with a stream(request) method), not "
            f"{bounded_repr(client, 60)}: {hint}"
        )


def _names(allowed_tools: Sequence[str] | None) -> Sequence[str] | None:
    if allowed_tools is None:
        return None
    if isinstance(allowed_tools, str) or not all(isinstance(n, str) for n in allowed_tools):
        raise TypeError("allowed_tools must be a list of tool names")
    return allowed_tools


class Worker(_WorkerBase[DepsT, OutputT]):
    """A conversation with a model and the tools it may call.

    >>> worker = Worker(client, system_prompt="You are terse.")
    >>> worker.register_tools([app.search.definition()])
    >>> result = await worker.run("find cats")

    ``deps_type`` (optional) is the type of the ``deps`` every run passes to
    tools that take a ``ToolContext[Deps]``: type checkers then check ``run(...,
    deps=...)``, and each run checks it too. ``output_type`` (optional) is the type
    of every run's final answer (``worker.output``; a pydantic model, a
    dataclass, ``list[int]``...): a model's answer that does not validate is
    sent back with what was wrong, up to ``output_retries`` times.
    ``instrumentation`` observes every run (``llm_worker.otel.OpenTelemetry()``
    traces them).
    """

    __slots__ = ()

    @overload
    def __init__(
        self,
        client: LlmClient,
        *,
        system_prompt: str | None = None,
        max_turns: int = 10,
        limits: Limits | None = None,
        deps_type: type[DepsT] | None = None,
        output_type: type[OutputT] | None = None,
        output_retries: int = 1,
        instrumentation: Instrumentation | None = None,
    ) -> None: ...
    # A type that is not a class (int | str, Literal[...]): the output is Any.
    @overload
    def __init__(
        self: Worker[None, Any],
        client: LlmClient,
        *,
        system_prompt: str | None = None,
        max_turns: int = 10,
        limits: Limits | None = None,
        deps_type: None = None,
        output_type: object,
        output_retries: int = 1,
        instrumentation: Instrumentation | None = None,
    ) -> None: ...
    @overload
    def __init__(
        self: Worker[_D, Any],
        client: LlmClient,
        *,
        system_prompt: str | None = None,
        max_turns: int = 10,
        limits: Limits | None = None,
        deps_type: type[_D],
        output_type: object,
        output_retries: int = 1,
        instrumentation: Instrumentation | None = None,
    ) -> None: ...
    def __init__(
        self,
        client: LlmClient,
        *,
        system_prompt: str | None = None,
        max_turns: int = 10,
        limits: Limits | None = None,
        deps_type: type[Any] | None = None,
        output_type: object = None,
        output_retries: int = 1,
        instrumentation: Instrumentation | None = None,
    ) -> None:
        _check_client(client)
        # A NaN would never end a tool loop; more than MAX_COUNT could not be saved in a state.
        check_count("max_turns", max_turns, 1, maximum=MAX_COUNT)
        if limits is not None and not isinstance(limits, Limits):
            raise TypeError(f"limits must be a Limits, not {type(limits).__name__}")
        if deps_type is not None and not is_class(deps_type):
            raise TypeError(f"deps_type must be a class, not {deps_type!r}")
        check_output_options(output_type, output_retries)
        self._session = Session(
            client,
            system_prompt,
            max_turns,
            limits or Limits(),
            deps_type,
            instrumentation,
            output_type,
            output_retries,
        )
        self._run_deps_type = None if deps_type is None else run_checked(deps_type)
        self._session.owner = self

    def register_tool(
        self,
        definition: ToolDefinition,
        *,
        requires_approval: (
            bool | Callable[[ToolCallContext[DepsT]], bool | Awaitable[bool]] | None
        ) = None,
        sequential: bool | None = None,
    ) -> None:
        """Register one tool; raises ``DuplicateToolError`` if its name is taken.

        ``requires_approval``: ``True`` holds every call of the tool for a
        human's decision, a function of the call's ``ToolCallContext``
        returning a bool decides per call (typed for this worker's deps, as a
        hook is). ``sequential=True``: its calls run alone, no other call of
        the response at the same time. Both default to the tool's own
        (``@tool(requires_approval=..., sequential=...)``), else off.
        """
        self.register_tools(
            (definition,), requires_approval=requires_approval, sequential=sequential
        )

    def register_tools(
        self,
        definitions: Iterable[ToolDefinition],
        *,
        requires_approval: (
            bool | Callable[[ToolCallContext[DepsT]], bool | Awaitable[bool]] | None
        ) = None,
        sequential: bool | None = None,
    ) -> None:
        """Register a batch: all or none; each factory is called once (see ``register_tool``)."""
        self._require_owner()
        session = self._session
        entries = make_entries(definitions, requires_approval, sequential)
        if session.deps_type is not None:
            for entry in entries.values():
                _check_deps_type(entry, session.deps_type)
        add_entries(session.server, entries)
        for entry in entries.values():  # once registered: a refused batch asks for nothing
            wanted = _wanted_deps(entry)
            if wanted is not None:
                session.tool_deps.setdefault(wanted, entry.meta.name)

    @property
    def system_prompt(self) -> str | None:
        """The system prompt sent with every request."""
        return self._session.system_prompt

    @system_prompt.setter
    def system_prompt(self, value: str | None) -> None:
        self._require_owner()
        self._session.system_prompt = checked_system_prompt(value)

    def set_history(self, messages: Sequence[Message]) -> None:
        """Replace the conversation; ``RunStateError`` if a tool call lacks its result.

        The history must be one a worker could have made: each assistant
        message's tool calls followed by exactly one ``ToolResult`` each, in
        call order, with unique ids within the message. Nothing changes if not.
        """
        self._require_owner()
        self._session.set_history(messages)

    def clear_history(self) -> None:
        """Forget the conversation."""
        self._require_owner()
        self._session.set_history((), "clear_history()")

    def load_state(self, state: RunState) -> None:
        """Continue the conversation ``state`` holds (``RunState.from_json(text)``).

        Register the same tools first: a paused call to a tool this worker does
        not have raises ``RunStateError``, and nothing is loaded; so does an answer
        the paused response gave (``final_result``) that does not fit this worker's
        ``output_type``. A state taken with another system prompt or other tool
        definitions loads, with a ``RunStateWarning``: the provider's prompt cache
        will not match.
        """
        self._require_owner()
        self._session.restore(state)

    def lock(self) -> LockedWorker[DepsT, OutputT]:
        """Freeze the prompt prefix and return the ``LockedWorker``; this object stops working."""
        self._require_owner()
        self._session.require_not_running("lock()")
        locked: LockedWorker[DepsT, OutputT] = LockedWorker._create(self._session, self)
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


class LockedWorker(_WorkerBase[DepsT, OutputT]):
    """A worker whose system prompt, tools and past history are frozen.

    It can run, resume, take hooks and ``unlock()``; it cannot register tools.
    Get one from ``Worker.lock()``.
    """

    __slots__ = ("_worker",)

    _worker: Worker[DepsT, OutputT]

    def __init__(self) -> None:
        raise TypeError("LockedWorker has no public constructor; use Worker.lock()")

    @property
    def system_prompt(self) -> str | None:
        """The system prompt sent with every request (frozen while locked)."""
        return self._session.system_prompt

    @staticmethod
    def _create(session: Session, worker: Worker[_D, _O]) -> LockedWorker[_D, _O]:
        self = cast("LockedWorker[_D, _O]", object.__new__(LockedWorker))
        self._session = session
        self._run_deps_type = worker._run_deps_type
        self._worker = worker
        return self

    def unlock(self) -> Worker[DepsT, OutputT]:
        """Give back the ``Worker`` (the same object ``lock()`` was called on)."""
        self._require_owner()
        self._session.require_not_running("unlock()")
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
