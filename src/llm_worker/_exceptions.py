"""Every exception llm_worker raises at run time.

    ToolError                      raised by a tool; its text is what the model reads
    ├── InvalidArgumentError       the model's arguments were not acceptable
    ├── ExecutionFailedError       the tool ran and failed
    └── InternalToolError          the tool is broken, not the call

    ToolServerError                raised by ToolServer / ToolServerHandle
    ├── DuplicateToolError         a name is already registered
    ├── ToolNotFoundError          no tool has that name
    └── ToolExecutionError         the tool raised a ToolError (chained as __cause__)

    WorkerError                    raised by Worker / LockedWorker
    ├── WorkerStateError           the call is not allowed in the worker's current state
    ├── WorkerAbortedError         a hook returned Abort(reason)
    ├── MaxTurnsExceededError      the model kept calling tools for max_turns requests
    ├── UsageLimitExceededError    the run used up a budget of Limits (requests, tokens)
    ├── RunStateError              a history or saved run state is not one the worker can continue
    ├── HookError                  a hook raised or returned something it may not
    ├── LlmClientError             the LlmClient broke the event protocol
    └── ProviderError              the model provider refused or failed the request

Each class builds its own message from its fields, so every raiser words it
the same way. Texts that reach a model never carry tracebacks or reprs of
internal objects. Declaration mistakes are plain ``TypeError``s raised at
import time, not part of this tree.
"""

from __future__ import annotations

from typing import Any, cast

from ._model_texts import shown_name

__all__ = [
    "DuplicateToolError",
    "ExecutionFailedError",
    "HookError",
    "InternalToolError",
    "InvalidArgumentError",
    "LlmClientError",
    "MaxTurnsExceededError",
    "OutputValidationError",
    "ProviderError",
    "RunStateError",
    "ToolError",
    "ToolExecutionError",
    "ToolNotFoundError",
    "ToolServerError",
    "UsageLimitExceededError",
    "WorkerAbortedError",
    "WorkerError",
    "WorkerStateError",
    "passes_through",
]


def passes_through(exc: BaseException) -> bool:
    """Whether a tool's ``exc`` goes on to the caller: cancellation, ``KeyboardInterrupt``,
    ``SystemExit``. So does an exception group holding one of them (from a task group in
    the tool). Anything else a tool raises becomes the text of a failed call, so does an
    asyncio ``CancelledError`` while nothing cancels the task (a future someone else
    cancelled, awaited by the tool): that is the tool's failure, not a cancellation.
    """
    import anyio  # only on a failure's path: `import llm_worker` does not import anyio

    if isinstance(exc, (KeyboardInterrupt, SystemExit)):
        return True
    if isinstance(exc, anyio.get_cancelled_exc_class()):
        return _task_is_cancelled()
    if isinstance(exc, Exception):
        return False
    grouped: object = getattr(exc, "exceptions", None)  # a BaseExceptionGroup
    return isinstance(grouped, tuple) and any(
        isinstance(inner, BaseException) and passes_through(inner)
        for inner in cast("tuple[object, ...]", grouped)
    )


def _task_is_cancelled() -> bool:
    # asyncio counts the cancellations asked of a task (3.11+); anyio's scopes ask too.
    # Elsewhere (trio, or before 3.11) a cancellation is taken for one.
    import sys

    asyncio = sys.modules.get("asyncio")
    task = None
    if asyncio is not None and sys.version_info >= (3, 11):
        try:
            task = asyncio.current_task()
        except RuntimeError:  # no running loop (trio)
            task = None
    return task is None or task.cancelling() > 0


class ToolError(Exception):
    """A tool call failed; ``str(error)`` is the text the model sees."""

    __slots__ = ("message",)
    _prefix = ""

    def __init__(self, message: str) -> None:
        given: object = message
        if not isinstance(given, str):  # `raise ExecutionFailedError(exc) from exc`
            message = _text_of_message(given)
        # The whole text is the one argument, so str() is Exception's own, and slots spare
        # a __dict__: a failed call is a hot path too (see benchmarks/README.md).
        self.args = (self._prefix + message,)
        self.message = message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message,), self.__dict__)


def _text_of_message(value: object) -> str:
    """A message that is not a ``str`` (an exception, most often) as text made safe for a
    model, as a ``@tool`` method's unexpected exception's is: this text was not written
    for a model either."""
    from ._safe_text import model_safe_text, safe_text  # only on this path

    if isinstance(value, BaseException):
        return model_safe_text(value)
    try:
        text = str(value)
    except Exception:  # a broken __str__ must not break the error path
        text = ""
    return safe_text(text) or type(value).__name__


class InvalidArgumentError(ToolError):
    """The input was not JSON, not an object, or failed validation."""

    _prefix = "Invalid argument: "


class ExecutionFailedError(ToolError):
    """The tool ran and raised; the message says what went wrong."""

    _prefix = "Execution failed: "


class InternalToolError(ToolError):
    """The tool itself is broken (a bug, not a bad call)."""

    _prefix = "Internal error: "


class ToolServerError(Exception):
    """Base class of the errors raised by ``ToolServer`` and ``ToolServerHandle``."""


class DuplicateToolError(ToolServerError):
    """A tool with this name is already registered (or appears twice in one batch)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        return f"Tool with name '{self.name}' already registered"


class ToolNotFoundError(ToolServerError, LookupError):
    """No tool with this name is registered."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        return f"Tool '{shown_name(self.name)}' not found"


class ToolExecutionError(ToolServerError):
    """The tool raised a ``ToolError``; that error is ``__cause__``."""

    __slots__ = ("detail", "name")

    def __init__(self, name: str, detail: str) -> None:
        self.args = (f"Tool execution failed: {detail}",)  # str() is Exception's (see ToolError)
        self.name = name
        self.detail = detail

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.name, self.detail), self.__dict__)


class WorkerError(Exception):
    """Base class of the errors that end a ``Worker`` run or refuse a call."""


class WorkerStateError(WorkerError, RuntimeError):
    """The call is not allowed in this state (the message says what to use instead)."""


class WorkerAbortedError(WorkerError):
    """A hook returned ``Abort(reason)``; every tool call still got a result in history."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    def __str__(self) -> str:
        return f"Run aborted by a hook: {self.reason}"


class MaxTurnsExceededError(WorkerError):
    """``max_turns`` requests of one ``run()``, ``resume()`` or ``retry()`` got no final
    answer (they asked for tools, gave an answer ``output_type`` refused, or paused)."""

    def __init__(self, max_turns: int) -> None:
        super().__init__(max_turns)
        self.max_turns = max_turns

    def __str__(self) -> str:
        return (
            f"The model had not answered after {self.max_turns} requests "
            f"(max_turns={self.max_turns}); the run was stopped"
        )


class UsageLimitExceededError(WorkerError):
    """The run used up one of its budgets (``Limits.max_requests``, ``max_input_tokens``...).

    ``limit`` names the ``Limits`` field, ``maximum`` its value and ``used``
    what the run had used when it stopped, before the next model request. The
    history is valid: raise the budget (``worker.limits = ...``) and call
    ``retry()`` to go on.
    """

    def __init__(self, limit: str, maximum: int, used: int) -> None:
        super().__init__(limit, maximum, used)
        self.limit = limit
        self.maximum = maximum
        self.used = used

    def __str__(self) -> str:
        what = (
            "model requests"
            if self.limit == "max_requests"
            else self.limit.removeprefix("max_").replace("_", " ")
        )
        return (
            f"The run has used {self.used} {what} of its budget of {self.maximum} "
            f"(Limits.{self.limit}); it was stopped before the next model request"
        )


class OutputValidationError(WorkerError):
    """The model's final answer did not match ``output_type``, after every retry it had.

    ``problems`` is what was wrong with the last answer (pydantic's errors, as
    the model was told them); ``attempts`` how many answers were tried. The
    history keeps every answer and what the model was told.
    """

    def __init__(self, problems: str, attempts: int) -> None:
        super().__init__(problems, attempts)
        self.problems = problems
        self.attempts = attempts

    def __str__(self) -> str:
        return (
            f"The model's final answer did not match the output type after {self.attempts} "
            f"attempt{'s' if self.attempts != 1 else ''}: {self.problems}"
        )


class RunStateError(WorkerError, ValueError):
    """A history or a saved ``RunState`` cannot be continued; the message says what is wrong.

    Nothing of it was loaded: the worker is as it was.
    """


class HookError(WorkerError):
    """A hook raised (chained as ``__cause__``) or returned a value it may not."""

    def __init__(self, hook: str, stage: str, problem: str) -> None:
        super().__init__(hook, stage, problem)
        self.hook = hook
        self.stage = stage
        self.problem = problem

    def __str__(self) -> str:
        return f"{self.stage} hook {self.hook} failed: {self.problem}"


class LlmClientError(WorkerError):
    """The model client sent events that do not make a valid response."""


class ProviderError(WorkerError):
    """The model provider answered with an error, or the connection to it failed.

    ``provider`` names it (``"openai"``, ``"anthropic"``...), ``status`` is the
    HTTP status when there was one (429 rate limit, 529 overloaded, 401 auth,
    400 bad request...), ``message`` the provider's own words, and
    ``retryable`` whether trying again later can help; ``retry_after``, the
    seconds the provider asked to wait before that (its ``Retry-After``), if it
    said. Nothing of the failed response enters the history.
    """

    def __init__(
        self,
        provider: str,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(provider, message, status, retryable)
        self.provider = provider
        self.message = message
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after

    def __reduce__(self) -> tuple[object, ...]:
        return (
            _provider_error,
            (self.provider, self.message, self.status, self.retryable, self.retry_after),
        )

    def __str__(self) -> str:
        status = f" (HTTP {self.status})" if self.status is not None else ""
        return f"{self.provider} request failed{status}: {self.message}"


def _provider_error(
    provider: str,
    message: str,
    status: int | None,
    retryable: bool,
    retry_after: float | None = None,  # not in what an earlier version pickled
) -> ProviderError:
    return ProviderError(
        provider, message, status=status, retryable=retryable, retry_after=retry_after
    )
