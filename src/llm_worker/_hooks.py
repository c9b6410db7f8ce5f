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
from typing import Any, Generic, TypeAlias

from typing_extensions import TypeVar

from ._content import MediaPart, TextPart, check_metadata, text_of
from ._conversation import ToolCall, ToolResult, valid_message
from ._exceptions import HookError, passes_through
from ._meta import ToolMeta
from ._types import Tool

__all__ = [
    "Abort",
    "ApprovalPolicy",
    "Continue",
    "Pause",
    "PostToolCallContext",
    "PostToolCallDecision",
    "PostToolCallHook",
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


DepsT = TypeVar("DepsT", default=Any)


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
    if not isinstance(call, ToolCall) or not all(
        isinstance(value, str) for value in (call.id, call.name, call.input_json)
    ):
        problem = f"set ctx.call to {call!r}; it must be a ToolCall of strings"
    elif call.id != original.id:
        problem = (
            f"changed the call id from {original.id!r} to {call.id!r}; a hook may change "
            f"a call's arguments, not its id"
        )
    elif call.name != original.name:
        problem = (
            f"changed the tool of call {original.id!r} from {original.name!r} to "
            f"{call.name!r}; a hook may change a call's arguments, not which tool it calls "
            f"(return SyntheticResult(...) or Skip(reason) instead)"
        )
    else:
        return
    raise HookError(_hook_name(hook), "pre_tool_call", problem)


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
                f"set ctx.result to {result!r}, not a ToolResult with text content",
            )
        if result is not before:
            if result.parts:
                result = _text_agreeing(hook, before, result)
            result = valid_message(result)
            try:
                check_metadata(result.metadata)
            except (TypeError, ValueError) as exc:  # the run state could not be saved
                raise HookError(
                    _hook_name(hook),
                    "post_tool_call",
                    f"set ctx.result's metadata to what is not JSON ({exc})",
                ) from None
        if result.call_id != call_id:
            result = dataclasses.replace(result, call_id=call_id)
        ctx.result = result
        if isinstance(decision, Abort):
            return decision
    return Continue()


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
    """Ask a tool's approval policy about one call; a policy that fails is a ``HookError``."""
    if policy is True or policy is False:
        return policy
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
    if not isinstance(answer, bool):
        raise HookError(
            _hook_name(policy), "requires_approval", f"returned {answer!r}; expected True or False"
        )
    return answer


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
            _hook_name(hook), stage, f"returned {decision!r}; expected one of {names} or None"
        )
    return decision  # type: ignore[return-value]


def _failed(hook: Callable[..., object], stage: str, exc: BaseException) -> HookError:
    # As for a tool: only a real cancellation, KeyboardInterrupt or SystemExit goes on;
    # anything else (an asyncio CancelledError while nothing cancels the run, a
    # BaseException of the hook's own) is the hook's failure.
    return HookError(_hook_name(hook), stage, f"{type(exc).__name__}: {exc}")


def _hook_name(hook: Callable[..., object]) -> str:
    return getattr(hook, "__qualname__", None) or repr(hook)
