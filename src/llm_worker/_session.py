"""The state a ``Worker`` and its ``LockedWorker`` share: one conversation and its tools.

Between runs everything here is data that ``RunState`` can hold: the
history, the paused response (a ``ToolBatch`` whose calls wait), the
counters and usage. ``snapshot`` and ``restore`` convert between the two.
"""

from __future__ import annotations

import dataclasses
import enum
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._approvals import APPROVAL_NEEDED, Approve, Decision, Deny, PendingCall, new_pause_id
from ._batch import AbandonedThread, CallSlot, SlotState, ToolBatch
from ._client import LlmClient, ToolChoice
from ._conversation import (
    MAX_COUNT,
    AssistantMessage,
    Message,
    RunUsage,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
    valid_message,
)
from ._events import ToolCallOutcome
from ._exceptions import RunStateError, WorkerStateError
from ._hooks import PostToolCallHook, PreToolCallHook
from ._instrumentation import Instrumentation
from ._limits import Limits
from ._model_texts import DENIED, call_text
from ._safe_text import bounded_repr, valid_unicode
from ._server import ToolServer, entry_of, sorted_definitions
from ._state import PausedCall, RunState, check_history, fingerprint_of

if TYPE_CHECKING:
    from ._output import RunOutput
    from ._state_json import CallStatus

__all__ = [
    "Phase",
    "RunStateWarning",
    "Session",
    "UsageTally",
    "WorkerResult",
    "checked_system_prompt",
]


class WorkerResult(enum.Enum):
    """How a run ended (errors are raised, not returned)."""

    FINISHED = "finished"
    """The model answered without calling tools."""
    PAUSED = "paused"
    """Calls wait for decisions (``worker.pending``); ``resume(decisions)`` goes on."""


class RunStateWarning(UserWarning):
    """A state was loaded into a worker whose system prompt or tools differ from its own."""


def checked_system_prompt(value: object) -> str | None:
    """``value`` if it is a ``str`` (as valid Unicode) or ``None``; else ``TypeError``."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"system_prompt must be a str or None, not {type(value).__name__}")
    return valid_unicode(value)  # a lone surrogate would fail every request to encode


class Phase(enum.Enum):
    IDLE = "idle"
    RUNNING = "running"
    PAUSED = "paused"


_STATUS_OF: dict[SlotState, CallStatus] = {
    SlotState.READY: "ready",
    SlotState.HELD: "held",
    SlotState.FINAL: "final",
}


class UsageTally:
    """Running totals of requests, calls and tokens; read as a ``RunUsage``.

    Mutable, so that counting a response costs a few additions, not a new value. Each
    total stops at ``MAX_COUNT``, the most a run state keeps: each response's counts are
    within it, but their sum need not be (a loaded state's totals at the bound, a client
    reporting 2**62 twice). Kept there, the total is still over every budget it reached,
    and the state still saves and loads; no run can really cost 2**63 tokens.
    """

    __slots__ = (
        "cached_input_tokens",
        "input_tokens",
        "output_tokens",
        "reasoning_tokens",
        "requests",
        "tool_calls",
    )

    def __init__(self, start: RunUsage | None = None) -> None:
        start = start or RunUsage()
        self.requests = start.requests
        self.tool_calls = start.tool_calls
        self.input_tokens = start.input_tokens
        self.output_tokens = start.output_tokens
        self.cached_input_tokens = start.cached_input_tokens
        self.reasoning_tokens = start.reasoning_tokens

    def add(self, tool_calls: int, usage: Usage | None) -> None:
        self.requests = min(self.requests + 1, MAX_COUNT)
        self.tool_calls = min(self.tool_calls + tool_calls, MAX_COUNT)
        if usage is not None:
            self.input_tokens = min(self.input_tokens + usage.input_tokens, MAX_COUNT)
            self.output_tokens = min(self.output_tokens + usage.output_tokens, MAX_COUNT)
            self.cached_input_tokens = min(
                self.cached_input_tokens + usage.cached_input_tokens, MAX_COUNT
            )
            self.reasoning_tokens = min(self.reasoning_tokens + usage.reasoning_tokens, MAX_COUNT)

    def value(self) -> RunUsage:
        return RunUsage(
            self.requests,
            self.tool_calls,
            self.input_tokens,
            self.output_tokens,
            self.cached_input_tokens,
            self.reasoning_tokens,
        )


class Session:
    """One conversation: client, prompt, tools, hooks, history, and where the run is."""

    def __init__(
        self,
        client: LlmClient,
        system_prompt: str | None,
        max_turns: int,
        limits: Limits,
        deps_type: type[Any] | None,
        instrumentation: Instrumentation | None,
        output_type: Any = None,
        output_retries: int = 1,
    ) -> None:
        self.client = client
        self.output_type = output_type  # the default of every run (None: text)
        self.output_retries = output_retries
        self.instrumentation = instrumentation
        self.system_prompt = checked_system_prompt(system_prompt)
        self.max_turns = max_turns
        self.limits = limits
        self.deps_type = deps_type
        # Each Deps type a registered tool's ToolContext[Deps] asks for, with the first tool
        # asking: what a run without deps_type checks its deps against.
        self.tool_deps: dict[type[Any], str] = {}
        self.history: list[Message] = []
        self.server = ToolServer()
        self.handle = self.server.handle()
        self.pre_hooks: list[PreToolCallHook] = []
        self.post_hooks: list[PostToolCallHook] = []
        self.phase = Phase.IDLE
        # The running run has given its last event: its history (and pause) are final,
        # only its stream's exit is left. worker.state may be read then.
        self.settled = False
        self.paused: ToolBatch | None = None
        # The id of the pause `paused` is (None when not paused): what ties a decision to
        # the pause a person was shown, when the model reuses call ids in a later one.
        self.pause_id: str | None = None
        self.tally = UsageTally()  # the whole conversation
        self.run_tally = UsageTally()  # the current run, which the budgets count
        # The requests the current run started, failed ones too: what numbers ResponseStarted.
        self.run_requests_sent = 0
        self.tool_choice: ToolChoice = "auto"
        self.allowed_tools: tuple[str, ...] | None = None
        # What the current (or last) run asks of its final answer (None: text), and what the
        # last finished run answered.
        self.run_output: RunOutput | None = None
        self.output: Any = None
        self.has_output = False
        # Whether this worker ran the history's last run (not a loaded or a set history).
        self.ran_last_run = False
        # The current (or last) run was given an output_type that is not the worker's: its
        # answer is not of the type worker.output has.
        self.own_output = False
        # What the last traced run gave a resume or retry of it to link to (RunSpan.link()).
        self.trace_link: Mapping[str, str] | None = None
        self.owner: object = None
        # Threads this worker's calls abandoned (timed out, cancelled) that may still run:
        # what their calls held, a sequential tool's turn and a slot of
        # max_concurrent_calls, they keep until they end, in later runs too (_batch.Turn).
        self.abandoned: list[AbandonedThread] = []
        # Numbers the runs a retry may continue: a new run, a loaded state and a new history
        # each make another. A retry made for one does not continue the next.
        self.run_number = 0

    @property
    def usage(self) -> RunUsage:
        return self.tally.value()

    @property
    def run_usage(self) -> RunUsage:
        return self.run_tally.value()

    def count(self, message: AssistantMessage) -> None:
        """Add a response to what the run and the conversation have cost."""
        calls, usage = len(message.tool_calls), message.usage
        self.tally.add(calls, usage)
        self.run_tally.add(calls, usage)

    # -- phases ----------------------------------------------------------------------

    def require_phase(self, phase: Phase, what: str) -> None:
        if self.phase is phase:
            return
        if self.phase is Phase.RUNNING:
            raise WorkerStateError(f"Cannot call {what}: a run is in progress")
        if self.phase is Phase.PAUSED:
            raise WorkerStateError(
                f"Cannot call {what}: the worker is paused with tool calls waiting for "
                f"decisions (worker.pending); call resume(decisions) first"
            )
        raise WorkerStateError(f"Cannot call {what} now (the worker is {self.phase.value})")

    def require_not_running(self, what: str) -> None:
        if self.phase is Phase.RUNNING:
            raise WorkerStateError(f"Cannot call {what}: a run is in progress")

    @property
    def is_paused(self) -> bool:
        if self.phase is Phase.RUNNING:
            return self.settled and self.paused is not None  # on RunPaused, before the exit
        return self.phase is Phase.PAUSED

    def require_retryable(self) -> None:
        self.require_phase(Phase.IDLE, "retry()")
        if self._answered():
            raise WorkerStateError("Nothing to retry: the model has answered the last message")

    def _answered(self) -> bool:
        """Whether the history ends with the model's answer: a response without calls, or
        the results of one whose call to the output tool was taken (and whose run, if this
        worker ran it, finished)."""
        history = self.history
        if not history:
            return True  # nothing asked
        last = history[-1]
        if isinstance(last, AssistantMessage):
            return last.stop_reason != "pause_turn"
        if not isinstance(last, ToolResult):
            return False
        if self.ran_last_run:  # it knows how that run ended (an abort may follow an answer)
            return self.has_output
        from ._output import OUTPUT_TOOL_NAME  # builds pydantic validators

        if entry_of(self.handle, OUTPUT_TOOL_NAME) is not None:
            return False  # the worker's own tool of that name: its calls are not answers
        index = len(history) - 1
        while index >= 0 and isinstance(history[index], ToolResult):
            index -= 1
        response = history[index] if index >= 0 else None
        if not isinstance(response, AssistantMessage):
            return False
        results = history[index + 1 :]
        return any(
            call.name == OUTPUT_TOOL_NAME and not result.is_error
            for call, result in zip(response.tool_calls, results, strict=False)
            if isinstance(result, ToolResult)
        )

    # -- decisions -------------------------------------------------------------------

    @property
    def pending(self) -> tuple[PendingCall, ...]:
        batch = self.paused
        if batch is None:
            return ()
        return tuple(
            PendingCall(slot.run_call, slot.entry.meta, slot.reason or "")
            for slot in batch.held()
            if slot.entry is not None
        )

    def pause(self, batch: ToolBatch) -> None:
        """Keep ``batch`` waiting for decisions, as a new pause with an id of its own."""
        self.paused = batch
        self.pause_id = new_pause_id()

    def check_pause_id(self, pause_id: str | None) -> None:
        """Raise ``WorkerStateError`` unless ``pause_id`` is ``None`` or the current pause's
        id: a decision made for an earlier pause never decides a later one."""
        if pause_id is None:
            return
        if not isinstance(pause_id, str):
            raise TypeError(
                f"pause_id must be a str (the worker.pause_id the decision is for), not "
                f"{type(pause_id).__name__}"
            )
        current = self.pause_id
        if pause_id == current:
            return
        if current is not None:
            now = f"the run is now paused at {current!r}"
        elif self.phase is Phase.RUNNING:
            now = "a run is in progress"
        else:
            now = "the worker is not paused"
        raise WorkerStateError(
            f"This decision is for pause {bounded_repr(pause_id, 80)}, which has ended; {now} "
            f"(read worker.pending and decide again)"
        )

    def check_decisions(
        self, decisions: Mapping[str, Decision] | Decision | None, pause_id: str | None = None
    ) -> None:
        """Raise ``WorkerStateError`` unless ``decisions`` decides every pending call (of the
        pause ``pause_id`` names, if given)."""
        self.check_pause_id(pause_id)
        if self.phase is Phase.IDLE:
            raise WorkerStateError("Nothing to resume: the worker is not paused")
        if self.phase is Phase.RUNNING and self.paused is not None:
            raise WorkerStateError(
                "Cannot resume: the run is paused, but its stream is still open (a run is "
                "in progress until its `async with` ends); resume after leaving it"
            )
        self.require_phase(Phase.PAUSED, "resume()")
        assert self.paused is not None
        waiting = [slot.call.id for slot in self.paused.held()]
        if isinstance(decisions, (Approve, Deny)):
            self._decided_calls(decisions)  # arguments that cannot be sent raise here
            return
        if decisions is None:
            raise WorkerStateError(
                f"resume() needs a decision for each pending call: {_ids(waiting)} "
                f"(pass {{call_id: Approve() or Deny(reason)}}, or one decision for all)"
            )
        if not isinstance(decisions, Mapping):
            raise TypeError(
                f"resume() takes a mapping of call id to Approve()/Deny(reason), or one "
                f"decision, not {type(decisions).__name__}"
            )
        for call_id, decision in decisions.items():
            if not isinstance(decision, (Approve, Deny)):
                raise TypeError(
                    f"the decision for call {bounded_repr(call_id, 80)} must be Approve() or "
                    f"Deny(reason), not {bounded_repr(decision, 80)}"
                )
        waiting_ids = set(waiting)  # a response may hold many thousands of calls
        unknown = [call_id for call_id in decisions if call_id not in waiting_ids]
        if unknown:
            raise WorkerStateError(
                f"resume() got decisions for calls that are not pending: {_ids(unknown)} "
                f"(pending: {_ids(waiting)})"
            )
        missing = [call_id for call_id in waiting if call_id not in decisions]
        if missing:
            raise WorkerStateError(
                f"resume() needs a decision for each pending call; missing: {_ids(missing)}"
            )
        self._decided_calls(decisions)  # arguments that cannot be sent raise here

    def _decided_calls(
        self, decisions: Mapping[str, Decision] | Decision | None
    ) -> list[tuple[CallSlot, ToolCall | Deny]]:
        """Each held slot with the call it runs as (approved) or its ``Deny``."""
        assert self.paused is not None
        decided: list[tuple[CallSlot, ToolCall | Deny]] = []
        for slot in self.paused.held():
            decision = decisions if isinstance(decisions, (Approve, Deny)) else None
            if decision is None:
                assert isinstance(decisions, Mapping)
                decision = decisions[slot.call.id]
            if isinstance(decision, Deny):
                decided.append((slot, decision))
                continue
            try:
                # Kept as valid Unicode, as a saved state keeps arguments (see _as_decided).
                input_json = valid_unicode(decision.input_json(slot.run_call))
            except RecursionError:  # deeper than json reads or writes (about 1 000 levels)
                raise TypeError(
                    f"the arguments Approve() gives call {bounded_repr(slot.call.id, 80)} nest "
                    f"too deep to send as JSON"
                ) from None
            except (TypeError, ValueError) as exc:
                raise TypeError(
                    f"the arguments Approve() gives call {bounded_repr(slot.call.id, 80)} cannot "
                    f"be sent as JSON: {exc}"
                ) from None
            decided.append((slot, dataclasses.replace(slot.run_call, input_json=input_json)))
        return decided

    def apply_decisions(self, decisions: Mapping[str, Decision] | Decision | None) -> ToolBatch:
        """Take the paused batch, with each held call approved or denied."""
        batch = self.paused
        assert batch is not None
        decided = self._decided_calls(decisions)  # before anything changes
        self.paused = None
        self.pause_id = None
        for slot, decision in decided:
            if isinstance(decision, Deny):
                text = call_text(DENIED, slot.call.name, reason=decision.reason)
                slot.reason = decision.reason
                batch.finalize(slot, ToolResult(slot.call.id, text, True), ToolCallOutcome.DENIED)
            else:
                batch.ready(slot, decision)
        return batch

    # -- tool choice -----------------------------------------------------------------

    def check_tool_choice(self, tool_choice: object, output_tool: str | None) -> None:
        """Raise unless ``tool_choice`` is ``"auto"``, ``"required"``, ``"none"``, the name of
        a tool of this worker, or ``output_tool`` (the tool a structured answer comes in)."""
        if tool_choice in ("auto", "required", "none"):
            return
        if not isinstance(tool_choice, str):
            raise TypeError(
                f"tool_choice must be 'auto', 'required', 'none' or a tool's name, not "
                f"{type(tool_choice).__name__}"
            )
        if entry_of(self.handle, tool_choice) is not None or tool_choice == output_tool:
            return
        raise ValueError(
            f"tool_choice={bounded_repr(tool_choice, 80)} is neither 'auto', 'required', 'none' "
            f"nor the name of a tool of this worker (its tools: {self._tool_names()})"
        )

    def check_allowed_tools(self, names: Sequence[str], output_tool: str | None) -> None:
        """Raise unless each of ``names`` is a tool of this worker or ``output_tool``: a typo
        would otherwise be offered to the model as an available tool."""
        unknown = [
            name for name in names if name != output_tool and entry_of(self.handle, name) is None
        ]
        if unknown:
            raise ValueError(
                f"allowed_tools names what is not a tool of this worker: {_ids(unknown)} "
                f"(its tools: {self._tool_names()})"
            )

    def _tool_names(self) -> str:
        names = ", ".join(repr(d.name) for d in sorted_definitions(self.handle)[:20])
        return names or "none"

    def output_tool(self) -> str | None:
        """The tool the worker's own ``output_type`` is answered through, if it is one: a
        client without native structured output gets the answer as a call."""
        if self.output_type is None or self.output_type is str:
            return None
        from ._output import OUTPUT_TOOL_NAME, answers_natively  # builds pydantic validators

        return None if answers_natively(self.client, self.output_type) else OUTPUT_TOOL_NAME

    # -- run state -------------------------------------------------------------------

    def fingerprint(self) -> str:
        return fingerprint_of(self.system_prompt, sorted_definitions(self.handle))

    def snapshot(self) -> RunState:
        if not self.settled:
            self.require_not_running("worker.state")
        batch = self.paused
        paused = None
        if batch is not None:
            paused = [
                PausedCall(
                    slot.run_call, _STATUS_OF[slot.state], slot.reason, slot.result, slot.outcome
                )
                for slot in batch
            ]
        return RunState(
            history=self.history,
            paused=paused,
            turns=0 if batch is None else batch.turns,
            output_attempts=0 if batch is None else batch.output_attempts,
            run_usage=self.run_usage,
            usage=self.usage,
            tool_choice=self.tool_choice,
            allowed_tools=self.allowed_tools,
            fingerprint=self.fingerprint(),
            trace_link=self.trace_link,
            pause_id=None if batch is None else self.pause_id,
        )

    def restore(self, state: RunState) -> None:
        """Continue from ``state``: all of it, or (``RunStateError``) none of it."""
        self.require_not_running("load_state()")
        if not isinstance(state, RunState):
            raise TypeError(f"load_state() takes a RunState, not {type(state).__name__}")
        output_tool = self.output_tool()
        try:
            self.check_tool_choice(state.tool_choice, output_tool)
            if state.allowed_tools is not None:
                self.check_allowed_tools(state.allowed_tools, output_tool)
        except (TypeError, ValueError) as exc:
            raise RunStateError(f"the state's {exc}") from None
        batch = None
        if state.is_paused:
            message = state.history[-1]
            assert isinstance(message, AssistantMessage)
            batch = ToolBatch(message.tool_calls, state.turns)
            batch.output_attempts = state.output_attempts
            for slot, saved in zip(batch.slots, state.paused_calls, strict=True):
                _restore_slot(self, batch, slot, saved)
            batch.report()  # the events of its results came in the run that paused
            self._check_saved_answer(batch)
        if state.fingerprint != self.fingerprint():
            warnings.warn(
                "the run state was saved by a worker with another system prompt or other "
                "tool definitions; the provider's prompt cache will not match its requests",
                RunStateWarning,
                stacklevel=3,  # the caller of Worker.load_state()
            )
        self.history = [valid_message(message) for message in state.history]
        self.paused = batch
        self.pause_id = state.pause_id if batch is not None else None
        self.phase = Phase.PAUSED if batch is not None else Phase.IDLE
        self.tally = UsageTally(state.usage)
        self.run_tally = UsageTally(state.run_usage)
        self.run_requests_sent = state.run_usage.requests  # a state keeps no failed ones
        self.tool_choice = state.tool_choice
        self.allowed_tools = state.allowed_tools
        self._forget_last_run()
        self.trace_link = state.trace_link

    def _check_saved_answer(self, batch: ToolBatch) -> None:
        """Raise ``RunStateError`` if the answer the loaded paused response ``batch`` gave
        does not fit this worker's ``output_type``: a resume (or a Deny) could not go on
        with it, and the worker would be stuck paused."""
        if self.output_type is None or self.output_type is str:
            return
        from ._output import RunOutput, answers_natively  # builds pydantic validators

        native = answers_natively(self.client, self.output_type)
        output = RunOutput(self.output_type, native=native, retries=self.output_retries)
        self.take_saved_answer(output, batch)

    def take_saved_answer(self, output: RunOutput, batch: ToolBatch) -> None:
        """Give ``output`` (the worker's own, continuing the loaded paused run ``batch``)
        what the run already holds of its answer: the answers that failed before the pause
        count against ``output_retries``, and an answer given through the output tool stands,
        validated again (``RunStateError`` if it does not fit)."""
        from ._output import OUTPUT_TOOL_NAME  # builds pydantic validators

        output.attempts = batch.output_attempts
        if entry_of(self.handle, OUTPUT_TOOL_NAME) is not None:
            return  # the worker's own tool of that name: its calls are not answers
        output.take_answer_of(
            slot.call for slot in batch if slot.result is not None and not slot.result.is_error
        )

    def set_history(self, messages: Sequence[Message], method: str = "set_history()") -> None:
        """Replace the conversation (``method``: what the application called, for errors)."""
        self.require_phase(Phase.IDLE, method)
        from ._state_json import check_message  # builds the format's validator, once

        history = [
            check_message(valid_message(message), f"history[{index}]")
            if isinstance(message, (UserMessage, AssistantMessage, ToolResult))
            else message  # check_history names what it is
            for index, message in enumerate(messages)
        ]
        check_history(history, None)
        self.history = history
        self._forget_last_run()
        # A retry of the new history continues no run: its budgets count from nothing, its
        # requests from 1 (as a loaded state's go on from what its run had spent).
        self.run_tally = UsageTally()
        self.run_requests_sent = 0

    def _forget_last_run(self) -> None:
        self.run_number += 1
        self.ran_last_run = False
        # Another conversation: a resume or retry of it answers with the worker's own
        # output_type, not with what an earlier run asked for (or was already given), links
        # to no earlier run's span, and worker.output has no answer until a run finishes.
        self.run_output = None
        self.trace_link = None
        self.output = None  # its answer is the other conversation's
        self.has_output = False
        self.own_output = False


def _restore_slot(session: Session, batch: ToolBatch, slot: CallSlot, saved: PausedCall) -> None:
    if saved.status == "final":
        assert saved.result is not None
        assert saved.outcome is not None
        slot.reason = saved.reason  # a Skip's, a Deny's: the state keeps it
        batch.finalize(slot, saved.result, saved.outcome)
        return
    entry = entry_of(session.handle, saved.call.name)
    if entry is None:
        raise RunStateError(
            f"paused call {bounded_repr(saved.call.id, 80)} is to tool "
            f"{bounded_repr(saved.call.name, 80)}, which this worker does not have (register "
            f"the same tools before load_state())"
        )
    slot.entry = entry
    if saved.status == "held":
        batch.hold(slot, saved.call, saved.reason or "")
    elif entry.requires_approval is not False:
        # A ready call is one this worker's pre-hooks and policy let through before the
        # pause, if the state is as the worker wrote it. The policy says whether the call
        # needs a person, and only it may: a policy of True always holds it, and a function
        # is asked with the run's deps, which a load has not. So the person decides again.
        batch.hold(slot, saved.call, APPROVAL_NEEDED)
    else:
        batch.ready(slot, saved.call)


def _ids(ids: Sequence[str]) -> str:
    """The first ten of ``ids`` (call ids, tool names), each cut short, and how many more:
    a state's or a model's ids may be of any length, and an error message is not."""
    shown = ", ".join(bounded_repr(call_id, 80) for call_id in ids[:10])
    return shown + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
