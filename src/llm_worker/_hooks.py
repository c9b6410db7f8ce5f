"""Tool-call hooks: what they see (contexts) and what they may decide.

``pre_tool_call(ctx: ToolCallContext)`` runs before a call and returns
``Continue()``, ``Skip()``, ``Abort(reason)`` or ``Pause()``.
``post_tool_call(ctx: PostToolCallContext)`` runs after it and returns
``Continue()`` or ``Abort(reason)``. ``None`` means ``Continue()``. Hooks may
be ``async def`` or plain functions.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeAlias

from ._conversation import ToolCall, ToolResult
from ._exceptions import HookError
from ._meta import ToolMeta
from ._types import Tool

__all__ = [
    "Abort",
    "Continue",
    "Pause",
    "PostToolCallContext",
    "PostToolCallDecision",
    "PostToolCallHook",
    "PreToolCallDecision",
    "PreToolCallHook",
    "Skip",
    "ToolCallContext",
]


@dataclass(frozen=True)
class Continue:
    """Go on: run the call (pre) or keep the result (post)."""


@dataclass(frozen=True)
class Skip:
    """Do not run this call; the model is told it was skipped."""


@dataclass(frozen=True)
class Abort:
    """End the run with ``WorkerAbortedError(reason)``."""

    reason: str


@dataclass(frozen=True)
class Pause:
    """Stop here and return ``WorkerResult.PAUSED``; ``resume()`` asks this hook again."""


PreToolCallDecision: TypeAlias = Continue | Skip | Abort | Pause
PostToolCallDecision: TypeAlias = Continue | Abort


class ToolCallContext:
    """What a ``pre_tool_call`` hook sees. ``call`` may be changed; ``meta`` and ``tool`` not."""

    __slots__ = ("_meta", "_tool", "call")

    def __init__(self, call: ToolCall, meta: ToolMeta, tool: Tool) -> None:
        self.call = call
        self._meta = meta
        self._tool = tool

    @property
    def meta(self) -> ToolMeta:
        """The called tool's metadata."""
        return self._meta

    @property
    def tool(self) -> Tool:
        """The tool instance, for reading its state."""
        return self._tool

    def __repr__(self) -> str:
        return f"ToolCallContext(call={self.call!r}, tool={self._meta.name!r})"


class PostToolCallContext(ToolCallContext):
    """What a ``post_tool_call`` hook sees: also the ``result``, which may be changed."""

    __slots__ = ("result",)

    def __init__(self, call: ToolCall, result: ToolResult, meta: ToolMeta, tool: Tool) -> None:
        super().__init__(call, meta, tool)
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

_PRE_DECISIONS = (Continue, Skip, Abort, Pause)
_POST_DECISIONS = (Continue, Abort)


async def run_pre_hooks(hooks: list[PreToolCallHook], ctx: ToolCallContext) -> PreToolCallDecision:
    """Run hooks in order until one decides something other than ``Continue``."""
    for hook in hooks:
        decision = await _call(hook, ctx, "pre_tool_call", _PRE_DECISIONS)
        call: object = ctx.call
        if not isinstance(call, ToolCall) or not all(
            isinstance(value, str) for value in (call.id, call.name, call.input_json)
        ):
            raise HookError(
                _hook_name(hook),
                "pre_tool_call",
                f"set ctx.call to {call!r}; it must be a ToolCall of strings",
            )
        if not isinstance(decision, Continue):
            return decision
    return Continue()


async def run_post_hooks(
    hooks: list[PostToolCallHook], ctx: PostToolCallContext
) -> PostToolCallDecision:
    """Run hooks in order until one returns ``Abort``.

    A hook may change the result's content and ``is_error``; the result keeps
    answering the model's call id whatever the hook does to it.
    """
    call_id = ctx.result.call_id
    for hook in hooks:
        decision = await _call(hook, ctx, "post_tool_call", _POST_DECISIONS)
        result: object = ctx.result
        if not isinstance(result, ToolResult):
            raise HookError(
                _hook_name(hook),
                "post_tool_call",
                f"set ctx.result to {result!r}, not a ToolResult",
            )
        if result.call_id != call_id:
            ctx.result = dataclasses.replace(result, call_id=call_id)
        if isinstance(decision, Abort):
            return decision
    return Continue()


async def _call(
    hook: Callable[..., object], ctx: ToolCallContext, stage: str, allowed: tuple[type, ...]
) -> PreToolCallDecision:
    try:
        decision = hook(ctx)
        if inspect.isawaitable(decision):
            decision = await decision
    except Exception as exc:
        raise HookError(_hook_name(hook), stage, f"{type(exc).__name__}: {exc}") from exc
    if decision is None:
        return Continue()
    if not isinstance(decision, allowed):
        names = ", ".join(f"{t.__name__}()" for t in allowed)
        raise HookError(
            _hook_name(hook), stage, f"returned {decision!r}; expected one of {names} or None"
        )
    return decision  # type: ignore[return-value]


def _hook_name(hook: Callable[..., object]) -> str:
    return getattr(hook, "__qualname__", None) or repr(hook)
