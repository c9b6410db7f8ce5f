"""One thread per app object, for plain-``def`` tools whose objects belong to a thread.

sqlite3 connections, COM objects and GUI toolkits may only be used from the
thread that made them. A registry (or a tool) declared with
``thread="dedicated"`` runs every such call of one app object on that object's
own thread, one call at a time, in the order they come: an object the tools
create (say a connection opened on first use) is always used from the thread
that made it.

The event loop never blocks on that thread: a call queues its job and waits on
an event the thread sets when the job is done. A call that is cancelled or
times out stops waiting at once; its job still runs if it had started (a
thread cannot be interrupted), and its result is dropped. Each call runs in a
copy of its caller's context (as anyio's threads run theirs). The thread is a
daemon, started on the first call and ended when the app object is garbage
collected; an object that cannot be weakly referenced (a ``__slots__`` class
without ``__weakref__``) keeps its thread for the life of the process.
"""

from __future__ import annotations

import contextvars
import queue
import threading
import weakref
from collections.abc import Callable
from contextlib import suppress
from typing import Any, Generic, TypeVar

import anyio  # its submodules load when first used: `import llm_worker` stays cheap

from .._batch import keep_turn

__all__ = ["DedicatedThread", "dedicated_thread_of"]

T = TypeVar("T")


_EMPTY_CONTEXT = contextvars.Context()


class _Job(Generic[T]):
    __slots__ = (
        "args",
        "context",
        "done",
        "error",
        "func",
        "gone",
        "lock",
        "result",
        "running",
        "started",
        "token",
    )

    def __init__(self, func: Callable[..., T], args: tuple[Any, ...]) -> None:
        self.func: Callable[..., T] | None = func
        self.args = args
        # The call's own context, as anyio's threads give it: it sees the caller's values,
        # and what it sets stays in the call (the thread serves every call of its object).
        self.context = contextvars.copy_context()
        self.done = anyio.Event()
        self.token = anyio.lowlevel.current_token()
        self.lock = threading.Lock()
        self.started = False
        self.running = False  # started and not returned (read without the lock: a bool)
        self.gone = False  # the caller stopped waiting
        self.result: T | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        """On the dedicated thread."""
        with self.lock:
            if self.gone:
                return  # cancelled before it started: never run it
            self.started = self.running = True
        func, args = self.func, self.args
        # Dropped as soon as they ran: the app object they hold must not outlive its calls
        # (its end ends the thread).
        self.func, self.args = None, ()
        assert func is not None
        try:
            self.result = self.context.run(func, *args)
        except BaseException as exc:  # handed to the caller, who decides what escapes
            self.error = exc
        finally:
            del func, args
            self.running = False
        with suppress(RuntimeError):  # the caller's event loop is gone
            anyio.from_thread.run_sync(self.done.set, token=self.token)

    def leave(self) -> bool:
        """The caller stops waiting: whether the job still runs (then it runs on)."""
        with self.lock:
            self.gone = True
            if not self.started:
                # It will never run, but stays queued until the thread gets to it (maybe
                # never, behind a call that hangs): only a placeholder, not the call's
                # arguments and context (a request's objects, a copy of its contextvars).
                self.func, self.args, self.context = None, (), _EMPTY_CONTEXT
            return self.running


class DedicatedThread:
    """A daemon thread running queued calls one at a time, in order."""

    __slots__ = ("__weakref__", "_jobs", "_lock", "_name", "_thread")

    def __init__(self, name: str) -> None:
        self._name = name
        self._jobs: queue.SimpleQueue[_Job[Any] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    async def run(self, func: Callable[..., T], *args: Any) -> T:
        """``func(*args)`` on this thread; cancellation stops the waiting, not the call."""
        if self._thread is None:
            self._start()
        job = _Job(func, args)
        self._jobs.put(job)
        try:
            await job.done.wait()
        except BaseException:
            if job.leave():
                keep_turn(job)  # it keeps what its call held in a run (_batch.Turn)
            raise
        if job.error is not None:
            raise job.error
        return job.result  # type: ignore[return-value]

    def stop(self) -> None:
        """Let the thread end once the calls queued before have run."""
        self._jobs.put(None)

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                thread = threading.Thread(
                    target=_serve, args=(self._jobs,), name=self._name, daemon=True
                )
                thread.start()
                self._thread = thread

    def __repr__(self) -> str:
        alive = self._thread is not None and self._thread.is_alive()
        return f"<DedicatedThread {self._name!r} {'running' if alive else 'not started'}>"


def _serve(jobs: queue.SimpleQueue[_Job[Any] | None]) -> None:
    while True:
        job = jobs.get()
        if job is None:
            return
        job.run()
        del job  # not kept while the thread waits for the next one


# Keyed by id() of the app object, which need not be hashable (a plain dataclass is not), and
# holding a weak reference to it: its thread ends with it. An object that cannot be weakly
# referenced is held instead, and keeps its thread for the life of the process. An entry
# whose object is not the one asked about is a dead object's whose id came round again.
_THREADS: dict[int, tuple[Callable[[], object], DedicatedThread]] = {}
# Reentrant: the weak reference's callback takes it too, and garbage collection may run
# that callback on a thread that holds it.
_LOCK = threading.RLock()


def dedicated_thread_of(app: object) -> DedicatedThread:
    """The dedicated thread of ``app`` (made on first use)."""
    key = id(app)
    found = _THREADS.get(key)
    if found is not None and found[0]() is app:
        return found[1]
    with _LOCK:
        found = _THREADS.get(key)
        if found is not None and found[0]() is app:
            return found[1]
        thread = DedicatedThread(f"llm-worker {type(app).__qualname__}")
        referent: Callable[[], object]
        try:
            referent = weakref.ref(app, lambda ref: _ended(key, ref, thread))
        except TypeError:  # not weakly referenceable (a __slots__ class without __weakref__)
            referent = lambda: app  # noqa: E731
        _THREADS[key] = (referent, thread)
        return thread


def _ended(key: int, ref: weakref.ref[object], thread: DedicatedThread) -> None:
    """The app object of ``thread`` is gone: the thread ends, and its entry goes."""
    thread.stop()
    with _LOCK:
        found = _THREADS.get(key)
        if found is not None and found[0] is ref:  # not a later object's of the same id
            del _THREADS[key]
