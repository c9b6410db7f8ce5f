"""Tool-call hooks: what they see (contexts) and what they may decide.

``pre_tool_call(ctx: ToolCallContext)`` runs once per call, before it runs,
and returns ``Continue()``, ``Skip(reason)``, ``Abort(reason)``,
``Pause(reason)`` or ``SyntheticResult(content)``.
``post_tool_call(ctx: PostToolCallContext)`` runs after a call ran and returns
``Continue()`` or ``Abort(reason)``. ``None`` means ``Continue()``. Hooks may
be ``async def`` or plain functions.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, NoReturn, TypeAlias, TypeGuard

from typing_extensions import TypeVar

from ._content import DataPart, MediaPart, TextPart, check_metadata, text_of
from ._conversation import ToolCall, ToolResult, valid_message
from ._exceptions import HookError, RunStateError, passes_through
from ._meta import ToolMeta
from ._safe_text import bounded_repr, model_safe_text
from ._types import Tool

__all__ = [
    "Abort",
    "ApprovalPolicy",
    "Continue",
    "Pause",
    "PostHookResult",
    "PostToolCallContext",
    "PostToolCallDecision",
    "PostToolCallHook",
    "PreHookResult",
    "PreToolCallDecision",
    "PreToolCallHook",
    "Skip",
    "SyntheticResult",
    "ToolCallContext",
    "needs_approval",
    "run_post_hooks",
    "run_pre_hooks",
]


@dataclass(frozen=True)
class Continue:
    """Go on: run the call (pre) or keep the result (post)."""


@dataclass(frozen=True)
class Skip:
    """Do not run this call; the model is told it was skipped, and ``reason`` if given."""

    reason: str | None = None

    def __post_init__(self) -> None:
        _check_text(self, "reason", self.reason, optional=True)


@dataclass(frozen=True)
class Abort:
    """End the run with ``WorkerAbortedError(reason)``."""

    reason: str

    def __post_init__(self) -> None:
        _check_text(self, "reason", self.reason, optional=False)


@dataclass(frozen=True)
class Pause:
    """Hold this call for a decision: the run pauses, and ``resume()`` takes one.

    ``reason`` is shown in ``worker.pending``. A paused call is decided like a
    call that needs approval (``Approve()`` or ``Deny(reason)``); the hooks are
    not asked about it again.
    """

    reason: str | None = None

    def __post_init__(self) -> None:
        _check_text(self, "reason", self.reason, optional=True)


@dataclass(frozen=True)
class SyntheticResult:
    """Answer the call without running it: the model reads ``content`` as its result."""

    content: str
    is_error: bool = False

    def __post_init__(self) -> None:
        _check_text(self, "content", self.content, optional=False)
        if type(self.is_error) is not bool:
            raise TypeError(
                f"SyntheticResult is_error must be a bool, not {type(self.is_error).__name__}"
            )


def _check_text(decision: object, name: str, value: object, *, optional: bool) -> None:
    # What the model reads and the run state keeps: text, checked where it is made (a
    # number there failed later, past the hook, or made a state that did not load).
    if isinstance(value, str) or (optional and value is None):
        return
    kind = "a str or None" if optional else "a str"
    raise TypeError(f"{type(decision).__name__} {name} must be {kind}, not {type(value).__name__}")


PreToolCallDecision: TypeAlias = Continue | Skip | Abort | Pause | SyntheticResult
PostToolCallDecision: TypeAlias = Continue | Abort


DepsT = TypeVar("DepsT", covariant=True, default=Any)


class ToolCallContext(Generic[DepsT]):
    """What a ``pre_tool_call`` hook sees. ``call`` may be changed; the rest not.

    ``meta`` and ``tool`` are the called tool's, ``deps`` the dependencies the
    run was given (``run(..., deps=...)``; ``None`` if none):
    ``ToolCallContext[Deps]`` types them (a bare ``ToolCallContext``'s are ``Any``).
    """

    __slots__ = ("_deps", "_meta", "_tool", "call")

    def __init__(self, call: ToolCall, meta: ToolMeta, tool: Tool, deps: DepsT = None) -> None:  # type: ignore[assignment]
        self.call = call
        self._meta = meta
        self._tool = tool
        self._deps = deps

    @property
    def meta(self) -> ToolMeta:
        """The called tool's metadata."""
        return self._meta

    @property
    def tool(self) -> Tool:
        """The tool instance, for reading its state."""
        return self._tool

    @property
    def deps(self) -> DepsT:
        """The run's dependencies (``run(..., deps=...)``), or ``None``."""
        return self._deps

    def __repr__(self) -> str:
        return f"ToolCallContext(call={self.call!r}, tool={self._meta.name!r})"


class PostToolCallContext(ToolCallContext[DepsT]):
    """What a ``post_tool_call`` hook sees: also the ``result``, which may be changed."""

    __slots__ = ("result",)

    def __init__(
        self,
        call: ToolCall,
        result: ToolResult,
        meta: ToolMeta,
        tool: Tool,
        deps: DepsT = None,  # type: ignore[assignment]
    ) -> None:
        super().__init__(call, meta, tool, deps)
        self.result = result

    def __repr__(self) -> str:
        return (
            f"PostToolCallContext(call={self.call!r}, result={self.result!r}, "
            f"tool={self._meta.name!r})"
        )


PreToolCallHook: TypeAlias = Callable[
    [ToolCallContext], Awaitable[PreToolCallDecision | None] | PreToolCallDecision | None
]
PostToolCallHook: TypeAlias = Callable[
    [PostToolCallContext],
    Awaitable[PostToolCallDecision | None] | PostToolCallDecision | None,
]
# What a hook given to add_*_hook returns: the adder hands the hook back typed by it.
PreHookResult = TypeVar(
    "PreHookResult", bound=Awaitable[PreToolCallDecision | None] | PreToolCallDecision | None
)
PostHookResult = TypeVar(
    "PostHookResult", bound=Awaitable[PostToolCallDecision | None] | PostToolCallDecision | None
)
ApprovalPolicy: TypeAlias = bool | Callable[[ToolCallContext], bool | Awaitable[bool]]
"""Whether a tool's calls need a human's approval: always, never, or decided per call."""

_PRE_DECISIONS = (Continue, Skip, Abort, Pause, SyntheticResult)
_POST_DECISIONS = (Continue, Abort)


async def run_pre_hooks(hooks: list[PreToolCallHook], ctx: ToolCallContext) -> PreToolCallDecision:
    """Run hooks in order until one decides something other than ``Continue``.

    A hook may give the call other arguments (``ctx.call = replace(ctx.call,
    input_json=...)``), not another id or tool: the result must answer the
    call the model made, and the tool's own hooks must see its calls.
    """
    original = ctx.call
    for hook in hooks:
        decision = await _call(hook, ctx, "pre_tool_call", _PRE_DECISIONS)
        call: object = ctx.call
        if call is not original:
            _check_rewrite(hook, call, original)
        if not isinstance(decision, Continue):
            return decision
    return Continue()


def _check_rewrite(hook: Callable[..., object], call: object, original: ToolCall) -> None:
    # Ids and names are the model's: shown bounded (a model can make one a megabyte long).
    if not _is_call_of_strings(call):
        problem = f"set ctx.call to {bounded_repr(call)}; it must be a ToolCall of strings"
    elif call.id != original.id:
        problem = (
            f"changed the call id from {bounded_repr(original.id)} to {bounded_repr(call.id)}; "
            f"a hook may change a call's arguments, not its id"
        )
    elif call.name != original.name:
        problem = (
            f"changed the tool of call {bounded_repr(original.id)} from "
            f"{bounded_repr(original.name)} to {bounded_repr(call.name)}; a hook may change "
            f"a call's arguments, not which tool it calls (return SyntheticResult(...) or "
            f"Skip(reason) instead)"
        )
    else:
        return
    raise HookError(_hook_name(hook), "pre_tool_call", problem)


def _is_call_of_strings(call: object) -> TypeGuard[ToolCall]:
    return isinstance(call, ToolCall) and all(
        isinstance(value, str) for value in (call.id, call.name, call.input_json)
    )


async def run_post_hooks(
    hooks: list[PostToolCallHook], ctx: PostToolCallContext
) -> PostToolCallDecision:
    """Run hooks in order until one returns ``Abort``.

    A hook may change the result's content and ``is_error``; the result keeps
    answering the model's call id whatever the hook does to it, and a rich
    result's ``content`` stays the text of its ``parts``.
    """
    call_id = ctx.result.call_id
    for hook in hooks:
        before = ctx.result
        decision = await _call(hook, ctx, "post_tool_call", _POST_DECISIONS)
        result: object = ctx.result
        if not isinstance(result, ToolResult) or not isinstance(result.content, str):
            raise HookError(
                _hook_name(hook),
                "post_tool_call",
                f"set ctx.result to {bounded_repr(result)}, not a ToolResult with text content",
            )
        if result is not before:
            result = _kept_result(hook, before, result, call_id)
        ctx.result = result
        if isinstance(decision, Abort):
            return decision
    return Continue()


_PART_TYPES = (TextPart, MediaPart, DataPart)


def _kept_result(
    hook: Callable[..., object], before: ToolResult, after: ToolResult, call_id: str
) -> ToolResult:
    """A hook's new result as the history keeps it, checked as ``set_history`` checks a
    message: a field no run state can keep (``is_error="yes"``, a part that is not one)
    is the hook's ``HookError``, not a run that fails later or a state that does not load."""
    if after.call_id != call_id:  # it answers the model's call, whatever the hook set
        after = dataclasses.replace(after, call_id=call_id)
    parts: object = after.parts
    if not isinstance(parts, (tuple, list)) or not all(
        isinstance(part, _PART_TYPES) for part in parts
    ):
        _refuse_result(
            hook,
            f"set ctx.result's parts to {bounded_repr(parts)}; each must be a "
            f"TextPart, MediaPart or DataPart",
        )
    try:
        check_metadata(after.metadata)
    except (TypeError, ValueError) as exc:  # the run state could not be saved
        _refuse_result(hook, f"set ctx.result's metadata to what is not JSON ({exc})")
    from ._state_json import check_message  # builds the format's validator, once

    try:
        kept = check_message(valid_message(after), "ctx.result")
    except RunStateError as exc:
        _refuse_result(hook, f"set ctx.result to a result no run state can keep ({exc})")
    assert isinstance(kept, ToolResult)
    return _text_agreeing(hook, before, kept) if kept.parts else kept


def _refuse_result(hook: Callable[..., object], problem: str) -> NoReturn:
    raise HookError(_hook_name(hook), "post_tool_call", problem) from None


def _text_agreeing(
    hook: Callable[..., object], before: ToolResult, after: ToolResult
) -> ToolResult:
    """``after`` with ``content`` the text of its ``parts``: whichever the hook changed wins.

    A client sends a rich result's parts, not its ``content``: a hook that redacted
    only the content must not see the parts sent as they were.
    """
    if after.content == text_of(after.parts):
        return after
    if after.parts == before.parts:  # the text was rewritten: it replaces the parts' text
        media = tuple(part for part in after.parts if isinstance(part, MediaPart))
        return dataclasses.replace(after, parts=(TextPart(after.content), *media))
    if after.content == before.content:  # the parts were rewritten: the text follows them
        return dataclasses.replace(after, content=text_of(after.parts))
    raise HookError(
        _hook_name(hook),
        "post_tool_call",
        "changed both the result's content and its parts, and the content is not the "
        "text of the parts (change one of them, or make them agree)",
    )


async def needs_approval(policy: ApprovalPolicy, ctx: ToolCallContext) -> bool:
    """Ask a tool's approval policy about one call; a policy that fails is a ``HookError``.

    A policy decides; it does not change the call (a pre-hook rewrites arguments): one
    that sets ``ctx.call`` to another call is a ``HookError`` too.
    """
    if policy is True or policy is False:
        return policy
    asked = ctx.call
    try:
        answer = policy(ctx)
        if inspect.isawaitable(answer):
            answer = await answer
    except GeneratorExit:
        raise  # the run is being closed
    except BaseException as exc:
        if passes_through(exc):
            raise
        raise _failed(policy, "requires_approval", exc) from exc
    _check_unchanged(policy, ctx.call, asked)
    if not isinstance(answer, bool):
        raise HookError(
            _hook_name(policy),
            "requires_approval",
            f"returned {bounded_repr(answer)}; expected True or False",
        )
    return answer


def _check_unchanged(policy: Callable[..., object], call: object, asked: ToolCall) -> None:
    # The run would answer (or hold) a call the model did not make, or run another tool
    # than the one whose policy was asked; an MCP server would ignore the change.
    if call is asked or (_is_call_of_strings(call) and call == asked):
        return
    raise HookError(
        _hook_name(policy),
        "requires_approval",
        f"set ctx.call to {bounded_repr(call)}; an approval policy decides whether a call "
        f"needs approval, it may not change the call (a pre_tool_call hook may change its "
        f"arguments)",
    )


async def _call(
    hook: Callable[..., object], ctx: ToolCallContext, stage: str, allowed: tuple[type, ...]
) -> PreToolCallDecision:
    try:
        decision = hook(ctx)
        if inspect.isawaitable(decision):
            decision = await decision
    except GeneratorExit:
        raise  # the run is being closed
    except BaseException as exc:
        if passes_through(exc):
            raise
        raise _failed(hook, stage, exc) from exc
    if decision is None:
        return Continue()
    if not isinstance(decision, allowed):
        names = ", ".join(f"{t.__name__}()" for t in allowed)
        raise HookError(
            _hook_name(hook),
            stage,
            f"returned {bounded_repr(decision)}; expected one of {names} or None",
        )
    return decision  # type: ignore[return-value]


def _failed(hook: Callable[..., object], stage: str, exc: BaseException) -> HookError:
    # As for a tool: only a real cancellation, KeyboardInterrupt or SystemExit goes on;
    # anything else (an asyncio CancelledError while nothing cancels the run, a
    # BaseException of the hook's own) is the hook's failure.
    # Its text guarded and bounded: a __str__ that raises, or one of 50 MB, must not
    # replace the HookError (the exception itself is chained, whole).
    kind = type(exc).__name__
    text = model_safe_text(exc)  # the class name when it has no text of its own
    return HookError(_hook_name(hook), stage, kind if text == kind else f"{kind}: {text}")


def _hook_name(hook: Callable[..., object]) -> str:
    name = getattr(hook, "__qualname__", None)
    return name if isinstance(name, str) and name else bounded_repr(hook)
