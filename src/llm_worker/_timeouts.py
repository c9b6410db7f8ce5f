"""A call's timeout, set only once the call waits.

A timeout can end a call only where the call waits, so a call that finishes
without waiting (most in-memory tools) cannot run past one, and a timer for
it costs more than such a call does. So a call runs in a cancel scope with no
deadline, and one that waits gets its deadline, counted from its start, before
it first waits: the same timeout, and timers only for calls that wait.

The scope is entered before the call, so the call's own scopes nest inside it
and its shields hold against it. ``within`` times one call, in a scope of its
own: trio's own on trio (what anyio's wraps there, for two thirds of the cost),
anyio's elsewhere. ``awaited_in`` does the same in a scope the caller keeps for
several calls (a runner's). (asyncio's own ``asyncio.timeout``, set after the
call's first step, would cost a call that never waits nothing at all, but it
cancels the task natively, through the anyio shields of the tool.)
"""

from __future__ import annotations

import sys
import time
import types
from collections.abc import Coroutine, Generator
from typing import Any, Final, Protocol, TypeVar, final

import anyio

__all__ = ["TimedOut", "awaited_in", "within"]

T = TypeVar("T")


@final
class TimedOut:
    """What ``within`` returns for a call its timeout ended."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<timed out>"


_TIMED_OUT: Final = TimedOut()


async def within(call: Coroutine[Any, Any, T], seconds: float) -> T | TimedOut:
    """Await ``call``, ended where it waits past ``seconds``: then a ``TimedOut``."""
    trio = sys.modules.get("trio")
    if trio is not None and trio.lowlevel.in_trio_task():
        with trio.CancelScope() as trio_scope:
            return await awaited_in(trio_scope, call, seconds)
        return _TIMED_OUT  # only the deadline can end the scope without a return
    with anyio.CancelScope() as scope:
        return await awaited_in(scope, call, seconds)
    return _TIMED_OUT


class _Scope(Protocol):  # anyio's and trio's cancel scopes
    @property
    def deadline(self) -> float: ...
    @deadline.setter
    def deadline(self, value: float) -> None: ...


async def awaited_in(scope: _Scope, call: Coroutine[Any, Any, T], seconds: float) -> T:
    """Await ``call`` inside ``scope`` (entered), which ends it where it waits past ``seconds``.

    The scope gets the call's deadline only if the call waits. A deadline the scope
    kept from an earlier call cannot end this one: it is replaced before this call
    first waits, and nothing between the two calls waits.
    """
    started = time.perf_counter()
    try:
        waiting = call.send(None)
    except StopIteration as done:  # it never waited
        result: T = done.value
        return result
    scope.deadline = anyio.current_time() + seconds - (time.perf_counter() - started)
    return await _resume(call, waiting)


@types.coroutine
def _resume(call: Coroutine[Any, Any, T], waiting: Any) -> Generator[Any, Any, T]:
    """``await call`` from where its first step left it, waiting on ``waiting``."""
    while True:
        try:
            sent = yield waiting
        except GeneratorExit:
            call.close()
            raise
        except BaseException as exc:  # a cancellation, delivered where the call waits
            try:
                waiting = call.throw(exc)
            except StopIteration as done:
                result: T = done.value
                return result
        else:
            try:
                waiting = call.send(sent)
            except StopIteration as done:
                result = done.value
                return result
