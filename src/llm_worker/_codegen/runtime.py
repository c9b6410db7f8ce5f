"""What generated tools run per call: validate → call → serialise. The hot path.

Everything known at build time (function, flags) sits in closure cells, and
the validator joins them at the first call; a call does one emptiness check,
one validation, the call itself and, for non-``str`` results, one ``to_json``.
Error messages are only worked out once validation has failed.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, cast

import anyio.to_thread
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError, to_json

from .._exceptions import ExecutionFailedError, InvalidArgumentError, ToolError
from .._limits import input_limit_problem, model_safe_text
from .._model_texts import TIMED_OUT, describe_validation_error
from .._registry import ToolMethod

__all__ = ["GeneratedTool", "make_execute", "serialize_result"]


class GeneratedTool:
    """Base of every generated ``Tool<Pascal>`` class: holds the app instance as ``ctx``."""

    __slots__ = ("_method", "ctx")

    args_model: ClassVar[type[BaseModel]]  # a LazyArgsModel that gives the model when read
    tool_name: ClassVar[str]
    _owner: ClassVar[type]
    _attr_name: ClassVar[str]
    _func: ClassVar[Callable[..., Any]]
    _is_async: ClassVar[bool]

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        # A subclass of the app may override the method: call what `ctx.method` would.
        cls = type(self)
        app_type: type[object] = type(ctx)  # pyright: ignore[reportUnknownVariableType]
        self._method = cls._func if app_type is cls._owner else _resolve_method(cls, app_type)

    async def execute(self, input_json: str) -> str:  # replaced in every generated class
        raise NotImplementedError

    def __repr__(self) -> str:
        ctx = self.ctx
        return f"<{type(self).__qualname__} ctx=<{type(ctx).__qualname__} at {id(ctx):#x}>>"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.ctx,))


def _resolve_method(tool_class: type[GeneratedTool], app_type: type) -> Callable[..., Any]:
    name = tool_class._attr_name
    found: object = inspect.getattr_static(app_type, name, None)
    if isinstance(found, ToolMethod):
        found = cast("ToolMethod[Any, ..., Any]", found).__func__
    if not inspect.isfunction(found) or found is tool_class._func:
        return tool_class._func
    if inspect.iscoroutinefunction(found) != tool_class._is_async:
        kinds = ("an async def", "a plain def")
        tool_kind, override_kind = kinds if tool_class._is_async else kinds[::-1]
        raise TypeError(
            f"{app_type.__qualname__}.{name} overrides the tool "
            f"{tool_class._owner.__qualname__}.{name} ({tool_kind}) with {override_kind}; "
            f"keep the same kind"
        )
    return found


def make_execute(
    *,
    get_args_model: Callable[[], type[BaseModel]],
    field_names: tuple[str, ...],
    tool_name: str,
    is_async: bool,
    thread: bool,
    strict: bool,
    timeout: float | None,
    max_input_bytes: int,
    max_input_depth: int,
) -> Callable[[GeneratedTool, str], Awaitable[str]]:
    """Build the ``execute`` method of one generated tool class.

    ``get_args_model`` gives the ``Args`` model (creating it if nothing has read
    it yet); its validator is built on the first call.
    """
    validate_json: Callable[..., Any] | None = None
    # Inputs this short can be neither too big nor too deep: skip the checks.
    always_within_limits = min(max_input_bytes // 4, max_input_depth)

    async def execute(self: GeneratedTool, input_json: str) -> str:
        nonlocal validate_json
        if validate_json is None:
            validate_json = get_args_model().__pydantic_validator__.validate_json
        if not input_json or input_json.isspace():
            input_json = "{}"
        elif len(input_json) > always_within_limits:
            problem = input_limit_problem(input_json, max_input_bytes, max_input_depth)
            if problem is not None:
                raise InvalidArgumentError(problem)
        try:
            args = validate_json(input_json, strict=strict)
        except ValidationError as exc:
            raise InvalidArgumentError(describe_validation_error(exc, field_names)) from exc
        except Exception as exc:  # a user's validator raised something pydantic passes on
            raise InvalidArgumentError(f"{type(exc).__name__}: {model_safe_text(exc)}") from exc
        try:
            if timeout is not None:
                result = await _call_with_timeout(
                    self._method, self.ctx, args.__dict__, is_async, thread, timeout, tool_name
                )
            elif is_async:
                result = await self._method(self.ctx, **args.__dict__)
            elif thread:
                result = await anyio.to_thread.run_sync(
                    functools.partial(self._method, self.ctx, **args.__dict__),
                    abandon_on_cancel=True,
                )
            else:
                result = self._method(self.ctx, **args.__dict__)
        except ToolError:
            raise
        except Exception as exc:
            raise ExecutionFailedError(model_safe_text(exc)) from exc
        if type(result) is str:
            return result
        return serialize_result(result)

    return execute


async def _call_with_timeout(
    func: Callable[..., Any],
    ctx: object,
    kwargs: dict[str, Any],
    is_async: bool,
    thread: bool,
    timeout: float,
    tool_name: str,
) -> Any:
    result: Any = None
    with anyio.move_on_after(timeout) as scope:
        if is_async:
            result = await func(ctx, **kwargs)
        elif thread:
            # Threads cannot be interrupted: abandon it; it may still finish on its own.
            result = await anyio.to_thread.run_sync(
                functools.partial(func, ctx, **kwargs), abandon_on_cancel=True
            )
        else:
            result = func(ctx, **kwargs)
    if scope.cancelled_caught:
        raise ExecutionFailedError(TIMED_OUT.format(name=tool_name, seconds=timeout))
    return result


def serialize_result(result: object) -> str:
    """Compact JSON by pydantic; ``repr()`` for what pydantic cannot serialise."""
    if isinstance(result, str):  # a str subclass (a StrEnum member...) is still text
        return str.__str__(result)
    try:
        # NaN and infinities are not JSON; "NaN" as a string still tells the model.
        return to_json(result, inf_nan_mode="strings").decode()
    except (PydanticSerializationError, ValueError, TypeError, UnicodeDecodeError):
        return repr(result)
