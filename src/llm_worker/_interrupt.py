"""Ctrl-C as ``KeyboardInterrupt`` on every Python, for the blocking entry points
(``llm-worker mcp serve``, ``llm_worker.mcp.serve()``)."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Awaitable, Callable
from types import FrameType

import anyio

__all__ = ["run_until_ctrl_c"]


def run_until_ctrl_c(func: Callable[[], Awaitable[None]]) -> None:
    """``anyio.run(func)``, where Ctrl-C raises ``KeyboardInterrupt`` on every Python.

    asyncio's runner answers Ctrl-C by cancelling the main task, and turns the
    ``CancelledError`` that comes out into a ``KeyboardInterrupt``, telling it
    from other cancellations with ``Task.uncancel()``. Python 3.10 has no
    ``uncancel()``, and there anyio's copy of the runner lets the
    ``CancelledError`` out as it is. So on 3.10 the runner's SIGINT handler is
    wrapped, to know that Ctrl-C came: only then is that ``CancelledError`` a
    ``KeyboardInterrupt`` (any other one is a bug, and reported as one).
    """
    if sys.version_info >= (3, 11):
        anyio.run(func)
        return
    interrupted = False

    async def noting_ctrl_c() -> None:
        nonlocal interrupted
        runners = signal.getsignal(signal.SIGINT)  # installed in the main thread only
        if not callable(runners) or threading.current_thread() is not threading.main_thread():
            await func()
            return

        def on_sigint(signum: int, frame: FrameType | None) -> None:
            nonlocal interrupted
            interrupted = True
            runners(signum, frame)

        signal.signal(signal.SIGINT, on_sigint)
        try:
            await func()
        finally:  # before the runner puts its predecessor back, which it does only over its own
            if signal.getsignal(signal.SIGINT) is on_sigint:
                signal.signal(signal.SIGINT, runners)

    import asyncio  # anyio.run has imported it

    try:
        anyio.run(noting_ctrl_c)
    except asyncio.CancelledError:
        if interrupted:
            raise KeyboardInterrupt from None
        raise
