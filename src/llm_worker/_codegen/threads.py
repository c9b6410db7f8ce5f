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
times out like any other (and a warning says that it waited for a thread, and why).

An abandoned thread also keeps what its call held in a Worker's run: the turn
of a ``sequential`` tool, a slot of ``Limits.max_concurrent_calls``. Its call
leaves it in the call's ``Turn`` (``_batch.keep_turn``), where the next call
waits for it to end, inside that call's timeout.
"""

from __future__ import annotations

import collections
import logging
import threading
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar, cast

import anyio  # its submodules load when first used: `import llm_worker` stays cheap

from .._batch import keep_turn

__all__ = ["run_in_thread"]

T = TypeVar("T")

logger = logging.getLogger("llm_worker")

# An abandoned thread frees its slot from its own thread, without waking the event loop
# (a call back into a loop that is shutting down could block forever): waiting calls also
# look again this often.
_RECHECK_SECONDS = 0.1


class _ToolThreads:
    """The tool threads of one event loop.

    ``alive`` is only touched on the event loop's thread; an abandoned thread
    hands its slot back through ``freed`` (appending to a deque is atomic), so
    starting a thread takes no lock.
    """

    __slots__ = ("abandoned", "alive", "freed", "lock", "waiting", "wake")

    def __init__(self) -> None:
        self.lock = threading.Lock()  # for each call's handshake with its thread
        self.alive = 0  # started and not yet returned, or about to start
        self.abandoned = 0  # of those, the ones whose call ended before them
        self.freed: collections.deque[None] = collections.deque()
        self.waiting = 0
        self.wake = anyio.Event()

    def try_acquire(self, bound: float) -> bool:
        self.count_freed()
        if self.alive < bound:
            self.alive += 1
            return True
        return False

    def count_freed(self) -> None:
        """Take back the slots abandoned threads handed back."""
        freed = self.freed
        while freed:
            freed.popleft()
            self.alive -= 1
            self.abandoned -= 1

    async def acquire(self, limiter: anyio.CapacityLimiter, name: str) -> None:
        """Wait for a free slot (the bound is read each time: it may change at run time)."""
        try:
            while not self.try_acquire(limiter.total_tokens):
                self.waiting += 1
                try:
                    with anyio.move_on_after(_RECHECK_SECONDS):
                        await self.wake.wait()
                finally:
                    self.waiting -= 1
        except anyio.get_cancelled_exc_class():
            # The call's result says only that it timed out (or stopped): say why, in
            # counts read now (a slot may have come free as it ended).
            self.count_freed()
            logger.warning(
                "A call of tool %r ended waiting for a thread: this event loop's tool "
                "threads were busy (%d alive of %s, %d of them abandoned by calls that "
                "timed out or were cancelled)",
                name,
                self.alive,
                limiter.total_tokens,
                self.abandoned,
            )
            raise

    def release(self) -> None:
        """Free a slot, on the event loop's thread."""
        self.alive -= 1
        if self.waiting:
            self.wake.set()
            self.wake = anyio.Event()


# Keyed by the event loop's default thread limiter (one per loop): looking that up is the
# one per-loop lookup a thread call needs, and anyio.to_thread is handed it. The last one
# used is kept at hand: most programs run one loop.
_TOOL_THREADS: weakref.WeakKeyDictionary[anyio.CapacityLimiter, _ToolThreads] = (
    weakref.WeakKeyDictionary()
)
_LAST_USED: list[tuple[object, _ToolThreads | None]] = [(None, None)]


def _tool_threads(limiter: anyio.CapacityLimiter) -> _ToolThreads:
    seen, threads = _LAST_USED[0]
    if seen is limiter and threads is not None:
        return threads
    threads = _TOOL_THREADS.get(limiter)
    if threads is None:
        threads = _TOOL_THREADS[limiter] = _ToolThreads()
    _LAST_USED[0] = (limiter, threads)
    return threads


class _Call(Generic[T]):
    """One call's thread: who frees its slot, the call or the thread, is decided under the lock."""

    __slots__ = ("args", "error", "func", "gone", "running", "threads")

    def __init__(
        self, threads: _ToolThreads, func: Callable[..., T], args: tuple[Any, ...]
    ) -> None:
        self.threads = threads
        self.func = func
        self.args = args
        self.running = False
        self.gone = False  # the call ended (cancelled) before the thread did
        self.error: BaseException | None = None

    def run(self) -> T | None:
        """In the worker thread."""
        threads = self.threads
        with threads.lock:
            if self.gone:
                return None  # the call went away before the thread started
            self.running = True
        try:
            return self.func(*self.args)
        except BaseException as exc:
            # Raised on the event loop, not handed to anyio: asyncio throws a thread's
            # exception into the awaiting coroutine, and a GeneratorExit thrown in closes
            # every coroutine it passes.
            self.error = exc
            return None
        finally:
            with threads.lock:
                self.running = False
                gone = self.gone
            if gone:
                threads.freed.append(None)

    def leave(self) -> bool:
        """On the event loop, when the call ends early: whether the thread still runs.

        If it does, it frees the slot when ``func`` returns; if not, the caller does.
        """
        with self.threads.lock:
            self.gone = True
            running = self.running
        if running:
            self.threads.abandoned += 1  # on the event loop: the thread frees it through `freed`
        return running


async def run_in_thread(func: Callable[..., T], *args: Any, tool_name: str) -> T:
    """``func(*args)`` in a worker thread, within this event loop's bound on tool threads
    (for a call of ``tool_name``).

    Cancellation (a timeout, a cancelled run) abandons the thread: this returns
    at once, and the thread keeps its slot until ``func`` returns.
    """
    limiter = anyio.to_thread.current_default_thread_limiter()
    threads = _tool_threads(limiter)
    if not threads.try_acquire(limiter.total_tokens):
        await threads.acquire(limiter, tool_name)
    call = _Call(threads, func, args)
    try:
        result = await anyio.to_thread.run_sync(call.run, abandon_on_cancel=True, limiter=limiter)
    except BaseException:
        if call.leave():
            keep_turn(call)  # it keeps what its call held in a run
        else:
            threads.release()
        raise
    threads.release()  # the thread has returned (or raised): its slot is free
    if call.error is not None:
        raise call.error
    # None only if the thread never ran func, and then nobody waits for this.
    return cast(T, result)
