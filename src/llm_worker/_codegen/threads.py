"""Plain-``def`` tools in worker threads: a bounded number per event loop, abandoned ones included.

A thread cannot be interrupted, so a tool thread whose call timed out or was
cancelled is abandoned (``abandon_on_cancel=True``): the call ends at once,
the thread runs on. anyio's thread limiter then forgets the thread on
asyncio (its slot is free again) but not on trio, so on asyncio hung tools
used to pile up threads without bound.

``run_in_thread`` counts every tool thread of the event loop from the moment
it is started until the function returns, abandoned or not, and starts no
more than ``anyio.to_thread.current_default_thread_limiter().total_tokens``
(40 by default) at once, on asyncio and trio alike. A call that finds them all
taken waits for one to end: inside its timeout, so a call that waits too long
times out like any other.
"""

from __future__ import annotations

import enum
import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar, cast

import anyio
import anyio.to_thread

__all__ = ["run_in_thread"]

T = TypeVar("T")

# An abandoned thread frees its slot from its own thread, without waking the event loop
# (a call back into a loop that is shutting down could block forever): waiting calls also
# look again this often.
_RECHECK_SECONDS = 0.1


class _State(enum.Enum):
    PENDING = "pending"  # handed to anyio, not started yet
    RUNNING = "running"
    ABANDONED = "abandoned"  # the call went away while it ran: the thread frees the slot
    DONE = "done"  # returned, raised, or never to start


class _ToolThreads:
    """The tool threads of one event loop."""

    __slots__ = ("alive", "freed", "lock", "waiting")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.alive = 0  # started and not yet returned, or about to start
        self.waiting = 0
        self.freed = anyio.Event()

    def try_acquire(self, bound: float) -> bool:
        with self.lock:
            if self.alive < bound:
                self.alive += 1
                return True
        return False

    async def acquire(self, limiter: anyio.CapacityLimiter) -> None:
        """Wait for a free slot (the bound is read each time: it may change at run time)."""
        while not self.try_acquire(limiter.total_tokens):
            self.waiting += 1
            try:
                with anyio.move_on_after(_RECHECK_SECONDS):
                    await self.freed.wait()
            finally:
                self.waiting -= 1

    def release(self) -> None:
        """Free a slot, on the event loop's thread."""
        with self.lock:
            self.alive -= 1
        if self.waiting:
            self.freed.set()
            self.freed = anyio.Event()


# Keyed by the event loop's default thread limiter (one per loop): looking that up is the
# one per-loop lookup a thread call needs, and anyio.to_thread is handed it.
_TOOL_THREADS: weakref.WeakKeyDictionary[anyio.CapacityLimiter, _ToolThreads] = (
    weakref.WeakKeyDictionary()
)


class _Call(Generic[T]):
    __slots__ = ("func", "state", "threads")

    def __init__(self, func: Callable[[], T], threads: _ToolThreads) -> None:
        self.func = func
        self.threads = threads
        self.state = _State.PENDING

    def run(self) -> T | None:
        """In the worker thread."""
        threads = self.threads
        with threads.lock:
            if self.state is not _State.PENDING:
                return None  # the call went away before the thread started
            self.state = _State.RUNNING
        try:
            return self.func()
        finally:
            self._finish()

    def _finish(self) -> None:
        """In the worker thread, when ``func`` is done: free the slot if the call was abandoned."""
        threads = self.threads
        with threads.lock:
            if self.state is _State.ABANDONED:
                threads.alive -= 1
            self.state = _State.DONE

    def settle(self) -> None:
        """On the event loop, once the call is over: free the slot, or leave it to the thread."""
        threads = self.threads
        with threads.lock:
            if self.state is _State.RUNNING:
                self.state = _State.ABANDONED
                return
            self.state = _State.DONE
        threads.release()


async def run_in_thread(func: Callable[[], T]) -> T:
    """``func()`` in a worker thread, within this event loop's bound on tool threads.

    Cancellation (a timeout, a cancelled run) abandons the thread: this returns
    at once, and the thread keeps its slot until ``func`` returns.
    """
    limiter = anyio.to_thread.current_default_thread_limiter()
    threads = _TOOL_THREADS.get(limiter)
    if threads is None:
        threads = _TOOL_THREADS[limiter] = _ToolThreads()
    if not threads.try_acquire(limiter.total_tokens):
        await threads.acquire(limiter)
    call = _Call(func, threads)
    try:
        result = await anyio.to_thread.run_sync(call.run, abandon_on_cancel=True, limiter=limiter)
    finally:
        call.settle()
    # None only if the thread never ran func, and then nobody waits for this.
    return cast(T, result)
