"""A call's own context: what a tool sets in a ``ContextVar`` stays the tool's.

asyncio and trio run every task in a copy of the context it was started from,
so a value one task sets is seen by no other. The worker runs most calls
without a task of their own (a task costs more than most calls), in the
run's task or a runner's: ``isolated`` gives each call the copy a task would
have had, taken when the call starts. The call sees what the application and
the hooks set before it; nothing it sets reaches them, or the calls after it.
"""

from __future__ import annotations

import contextvars
import types
from collections.abc import Callable, Coroutine, Generator
from typing import Any, TypeVar, cast

__all__ = ["isolated"]

T = TypeVar("T")


def isolated(call: Coroutine[Any, Any, T]) -> Coroutine[Any, Any, T]:
    """``call``, every step of it in one copy of the current context (taken now)."""
    # A generator-based coroutine: awaited, sent to and thrown into like ``call``.
    return cast("Coroutine[Any, Any, T]", _steps(call, contextvars.copy_context().run))


@types.coroutine
def _steps(call: Coroutine[Any, Any, T], run: Callable[..., Any]) -> Generator[Any, Any, T]:
    try:
        waiting = run(call.send, None)
    except StopIteration as done:  # most calls never wait
        result: T = done.value
        return result
    while True:
        try:
            sent = yield waiting
        except GeneratorExit:
            run(call.close)
            raise
        except BaseException as exc:  # a cancellation, delivered where the call waits
            try:
                waiting = run(call.throw, exc)
            except StopIteration as done:
                result = done.value
                return result
        else:
            try:
                waiting = run(call.send, sent)
            except StopIteration as done:
                result = done.value
                return result
