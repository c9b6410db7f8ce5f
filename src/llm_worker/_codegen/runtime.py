"""What generated tools run per call: validate → call → serialise. The hot path.

Everything known at build time (function, flags) sits in closure cells, and
the validator joins them at the first call; a call does one emptiness check,
one validation (a longer input is first checked against the input limits, unless
the worker just did, and one over 1 024 characters screened: a second
validation), the call itself and, for non-``str`` results, one ``to_json``
(a container after one look at what it holds, which serialising must not read:
see "what a result's plain containers hold" below).
Error messages are only worked out once validation has failed. What is not on
that path is about hostile tools: their ``repr()`` runs in a thread, their
exceptions all become ``ToolError``s, and their threads are bounded
(``threads``).
"""

from __future__ import annotations

import gc
import inspect
import json
import logging
import marshal
import math
from collections import deque
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Iterable,
    Iterator,
    Sequence,
)
from dataclasses import dataclass
from itertools import compress, filterfalse
from typing import Any, ClassVar, Final, Literal, cast

from pydantic import BaseModel, ValidationError
from pydantic_core import SchemaValidator, to_json, to_jsonable_python

from .._batch import TURN
from .._content import ContentPart, DataPart, MediaPart, TextPart, ToolReturn
from .._context import ToolContext
from .._exceptions import (
    ExecutionFailedError,
    InternalToolError,
    InvalidArgumentError,
    ToolError,
    passes_through,
)
from .._fail_fast import SCREENED_FROM, screen_of
from .._limits import input_limit_problem, known_within_limits
from .._model_texts import (
    AN_ITERATOR,
    MIXED_PARTS,
    NOT_AWAITED,
    PART_INSIDE,
    TIMED_OUT,
    UNSERIALIZABLE,
    describe_validation_error,
)
from .._options import ThreadOption
from .._registry import ToolMethod
from .._safe_text import model_safe_text, valid_unicode
from .._strict_json import non_finite_problem
from .._timeouts import TimedOut, within
from .dedicated import dedicated_thread_of
from .introspect import is_async_function, unwrapped
from .non_finite import admits_non_finite
from .threads import run_in_thread

__all__ = ["GeneratedTool", "MethodTarget", "inside_problem", "make_execute", "serialize_result"]

logger = logging.getLogger("llm_worker")


@dataclass(frozen=True, slots=True)
class MethodTarget:
    """The method a generated tool calls, as declared.

    Held as data, not as a function on the tool class: doctest collects a class's
    functions, and would run the method's doctests a second time.
    """

    owner: type
    attr_name: str
    func: Callable[..., Any]
    is_async: bool


class GeneratedTool:
    """Base of every generated ``Tool<Pascal>`` class: holds the app instance as ``ctx``."""

    __slots__ = ("_method", "ctx")

    args_model: ClassVar[type[BaseModel]]  # a LazyArgsModel that gives the model when read
    tool_name: ClassVar[str]
    _target: ClassVar[MethodTarget]

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        # A subclass of the app may override the method (and a test patch the class's):
        # call what `type(ctx).method` is now, found once, when the tool is made.
        app_type: type[object] = type(ctx)  # pyright: ignore[reportUnknownVariableType]
        self._method = _resolve_method(type(self), app_type)

    async def execute(self, input_json: str) -> str | ToolReturn:  # replaced in each class
        raise NotImplementedError

    def __repr__(self) -> str:
        ctx = self.ctx
        return f"<{type(self).__qualname__} ctx=<{type(ctx).__qualname__} at {id(ctx):#x}>>"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.ctx,))


_MISSING: Final = object()
_UNMADE: Final = object()


def _resolve_method(tool_class: type[GeneratedTool], app_type: type) -> Callable[..., Any]:
    target = tool_class._target
    name = target.attr_name
    found: object = inspect.getattr_static(app_type, name, _MISSING)
    if found is _MISSING:  # not the registry's class, nor a subclass overriding the tool
        raise TypeError(
            f"{tool_class.__qualname__} takes an instance of {target.owner.__qualname__}, "
            f"not of {app_type.__qualname__} (which has no method {name!r})"
        )
    if isinstance(found, ToolMethod):
        found = cast("ToolMethod[Any, ..., Any]", found).__func__
    if found is target.func:
        return target.func
    if isinstance(found, (staticmethod, classmethod)) or not callable(found):
        # Called as the base method would be (with the app first), or not at all.
        kind = type(found).__name__  # pyright: ignore[reportUnknownArgumentType]
        raise TypeError(
            f"{app_type.__qualname__}.{name} overrides the tool "
            f"{target.owner.__qualname__}.{name} with {kind}, not a method; override "
            f"it with a method"
        )
    method = cast("Callable[..., Any]", found)  # a function, or a callable wrapper of one
    # An async tool awaits what the method returns; a plain one runs it in a thread.
    is_async = target.is_async
    fits = is_async_function(method) if is_async else not inspect.iscoroutinefunction(method)
    if fits:
        return method if hasattr(type(method), "__get__") else _unbound(method)
    tool_kind = "an async def" if target.is_async else "a plain def"
    if inspect.isfunction(method):
        override_kind = "a plain def" if target.is_async else "an async def"
    else:
        kind = type(method).__name__
        override_kind = f"a callable {kind} that is{' not' * target.is_async} async"
    raise TypeError(
        f"{app_type.__qualname__}.{name} overrides the tool "
        f"{target.owner.__qualname__}.{name} ({tool_kind}) with {override_kind}; "
        f"keep the same kind"
    )


def _unbound(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` called as ``app.method(...)`` calls it: a callable that is not a
    descriptor (a ``Mock`` a test patched in) gets no ``self``."""

    def call(app: object, /, **kwargs: Any) -> Any:
        return method(**kwargs)

    return call


def make_execute(
    *,
    get_args_model: Callable[[], type[BaseModel]],
    field_names: tuple[str, ...],
    tool_name: str,
    is_async: bool,
    thread: ThreadOption,
    strict: bool,
    timeout: float | None,
    max_input_bytes: int,
    max_input_depth: int,
    context_param: str | None = None,
) -> Callable[[GeneratedTool, str], Awaitable[str | ToolReturn]]:
    """Build the ``execute`` method of one generated tool class.

    For a method that takes a ``ToolContext`` (as ``context_param``) the same
    function is also the class's ``execute_with_context(input_json, context)``;
    ``execute(input_json)`` alone gives it an empty context (no deps, no call id).

    ``get_args_model`` gives the ``Args`` model (creating it if nothing has read
    it yet); its validator is built on the first call.

    ``execute`` returns a ``str`` or raises a ``ToolError``: whatever the method
    raises or returns, only cancellation, ``KeyboardInterrupt`` and ``SystemExit``
    pass through. Making the result text (``repr()`` is the user's code) happens
    inside the timeout, and off the event loop unless pydantic serialises it.

    In a Worker's run, a call whose turn threads of earlier calls still keep
    (``_batch.Turn``) first waits for them, inside its timeout: a tool with a timeout
    of its own waits in it (``execute._waits_its_turn``, read by ``ToolEntry``); for any
    other the run waits, inside ``Limits.tool_timeout``.
    """
    validate_json: Callable[..., Any] | None = None
    # The screen of inputs too long to validate unscreened, made at the first one (None:
    # the arguments' schema runs code of the application's, and gets none).
    screen: SchemaValidator | object | None = _UNMADE
    scan_numbers = True  # until the model is known: could pydantic let NaN through?
    # Inputs this short can be neither too big nor too deep: skip the checks.
    always_within_limits = min(max_input_bytes // 4, max_input_depth)

    async def execute(
        self: GeneratedTool, input_json: str, context: ToolContext[Any] | None = None
    ) -> str | ToolReturn:
        nonlocal validate_json, screen, scan_numbers
        if validate_json is None:
            model = get_args_model()
            validate_json = model.__pydantic_validator__.validate_json
            scan_numbers = admits_non_finite(model.__pydantic_core_schema__)
        if not input_json or input_json.isspace():
            input_json = "{}"
        elif len(input_json) > always_within_limits:
            # Not if the worker running this call checked this very text against limits
            # at least as strict: the depth scan goes over every bracket of it.
            if not known_within_limits(input_json, max_input_bytes, max_input_depth):
                problem = input_limit_problem(input_json, max_input_bytes, max_input_depth)
                if problem is not None:
                    raise InvalidArgumentError(problem)
            if len(input_json) > SCREENED_FROM:
                if screen is _UNMADE:
                    screen = screen_of(get_args_model().__pydantic_core_schema__)
                if isinstance(screen, SchemaValidator):
                    try:  # its errors, if any, with bounded work
                        screen.validate_json(input_json, strict=strict)
                    except ValidationError as exc:
                        raise InvalidArgumentError(
                            describe_validation_error(exc, field_names)
                        ) from exc
        try:
            args = validate_json(input_json, strict=strict)
        except ValidationError as exc:
            raise InvalidArgumentError(describe_validation_error(exc, field_names)) from exc
        except BaseException as exc:  # a user's validator raised something pydantic passes on
            if passes_through(exc):
                raise
            raise InvalidArgumentError(f"{type(exc).__name__}: {model_safe_text(exc)}") from exc
        kwargs: dict[str, Any] = args.__dict__
        if scan_numbers:  # NaN, Infinity or 1e400 where pydantic does not refuse them
            problem = non_finite_problem(kwargs.values())
            if problem is not None:
                raise InvalidArgumentError(problem)
        if context_param is not None:
            if context is None:
                context = ToolContext(call_id="", tool_name=tool_name, deps=None)
            kwargs = {**kwargs, context_param: context}
        try:
            if timeout is not None:
                return await _run_with_timeout(
                    self._method, self.ctx, kwargs, is_async, thread, timeout, tool_name
                )
            if is_async:
                result = await self._method(self.ctx, **kwargs)
            elif thread is True:
                done = await run_in_thread(
                    _call_to_text, self._method, self.ctx, kwargs, tool_name, tool_name=tool_name
                )
                return await _finished(done, tool_name) if isinstance(done, _Wrapped) else done
            elif thread:  # "dedicated": the app object's own thread
                done = await dedicated_thread_of(self.ctx).run(
                    _call_to_text, self._method, self.ctx, kwargs, tool_name
                )
                return await _finished(done, tool_name) if isinstance(done, _Wrapped) else done
            else:
                result = self._method(self.ctx, **kwargs)
                if inspect.iscoroutine(result) and _wraps_async(self._method):
                    result = await result
            # _result_text, inlined: this is the hot path.
            if type(result) is str:
                return result
            text = _text_of(result, tool_name)
            return await _repr_in_thread(result, tool_name) if text is None else text
        except ToolError:
            raise
        except BaseException as exc:  # Exception, or a BaseException of the tool's own
            if passes_through(exc):
                raise
            raise ExecutionFailedError(model_safe_text(exc)) from exc

    if timeout is not None:
        execute._waits_its_turn = True  # type: ignore[attr-defined]
    return execute


async def _run_with_timeout(
    func: Callable[..., Any],
    ctx: object,
    kwargs: dict[str, Any],
    is_async: bool,
    thread: ThreadOption,
    timeout: float,
    tool_name: str,
) -> str | ToolReturn:
    text = await within(_run(func, ctx, kwargs, is_async, thread, tool_name), timeout)
    if isinstance(text, TimedOut):
        raise ExecutionFailedError(TIMED_OUT.format(name=tool_name, seconds=timeout))
    return text


async def _run(
    func: Callable[..., Any],
    ctx: object,
    kwargs: dict[str, Any],
    is_async: bool,
    thread: ThreadOption,
    tool_name: str,
) -> str | ToolReturn:
    turn = TURN.get()
    if turn is not None and turn.threads:  # threads of earlier calls keep its turn
        await turn.wait(tool_name)  # within the timeout
    if is_async or not thread:
        result = await func(ctx, **kwargs) if is_async else func(ctx, **kwargs)
        if not is_async and inspect.iscoroutine(result) and _wraps_async(func):
            result = await result
        return result if type(result) is str else await _result_text(result, tool_name)
    if thread is True:
        # Threads cannot be interrupted: abandon it; it may still finish on its own.
        text = await run_in_thread(_call_to_text, func, ctx, kwargs, tool_name, tool_name=tool_name)
    else:
        text = await dedicated_thread_of(ctx).run(_call_to_text, func, ctx, kwargs, tool_name)
    return await _finished(text, tool_name) if isinstance(text, _Wrapped) else text


async def _result_text(result: object, tool_name: str) -> str | ToolReturn:
    """The text of a result that is not a ``str``: JSON by pydantic, else ``repr()`` in a thread.

    Parts or a ``ToolReturn`` are a rich result, returned as a ``ToolReturn``."""
    text = _text_of(result, tool_name)
    return await _repr_in_thread(result, tool_name) if text is None else text


def _text_of(result: object, tool_name: str) -> str | ToolReturn | None:
    """What ``_result_text`` gives, short of ``repr()``: ``None`` if only that can tell."""
    kind = type(result)
    # The usual results, JSON at once: a number or None holds nothing; a dict, list or
    # tuple is looked into first (``_refuse_inside``: at once if its items' types tell it
    # holds nothing to look at), and a list or tuple is rich only if it begins with a part.
    if kind in _SCALARS:
        return _json_text(result)
    if kind is dict:
        if not _INERT.issuperset(map(type, result.values())):  # type: ignore[attr-defined]
            _refuse_inside(result, tool_name)
        return _json_text(result)
    if kind is list or kind is tuple:
        if _INERT.issuperset(map(type, result)):  # type: ignore[call-overload]
            return _json_text(result)  # no part in it either
        if not (result and isinstance(result[0], _PARTS)):  # type: ignore[index]
            _refuse_inside(result, tool_name)
            return _json_text(result)
    if isinstance(result, str):  # a str subclass (a StrEnum member...) is still text
        return str.__str__(result)
    rich = rich_return(result, tool_name)
    if rich is not None:
        return rich
    _refuse_unfinished(result, tool_name)
    _refuse_inside(result, tool_name)  # a set, a deque, a dict subclass...; else nothing to walk
    return _json_text(result)


async def _repr_in_thread(result: object, tool_name: str) -> str:
    # repr() is the tool's code, and may be slow: never on the event loop.
    return await run_in_thread(_repr_text, result, tool_name, tool_name=tool_name)


def _call_to_text(
    func: Callable[..., Any], ctx: object, kwargs: dict[str, Any], tool_name: str
) -> str | ToolReturn | _Wrapped:
    """A thread tool's call and its result's text, both in the worker thread."""
    result = func(ctx, **kwargs)
    if type(result) is str:
        return result
    if inspect.iscoroutine(result) and _wraps_async(func):
        return _Wrapped(result)  # awaited on the event loop, where a coroutine runs
    text = _text_of(result, tool_name)
    return _repr_text(result, tool_name) if text is None else text


class _Wrapped:
    """The coroutine a plain-``def`` wrapper of an ``async def`` returned, from its thread."""

    __slots__ = ("coroutine",)

    def __init__(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        self.coroutine = coroutine


def _wraps_async(func: Callable[..., Any]) -> bool:
    """Whether ``func`` is a ``functools.wraps`` wrapper of an ``async def``: a coroutine it
    returns is the wrapped method's, to await (a wrapper may also run it itself)."""
    return inspect.iscoroutinefunction(unwrapped(func))


async def _finished(wrapped: _Wrapped, tool_name: str) -> str | ToolReturn:
    result = await wrapped.coroutine
    return result if type(result) is str else await _result_text(result, tool_name)


_PARTS = (TextPart, MediaPart, DataPart)
_RICH = (ToolReturn, *_PARTS)
_NEVER_RICH = frozenset({int, float, bool, dict, type(None)})  # the usual results, told at once
_SCALARS = frozenset({int, float, bool, type(None)})


def rich_return(result: object, tool_name: str) -> ToolReturn | None:
    """``result`` as a ``ToolReturn`` if it is one, a content part, or a list or tuple of parts.

    A list or tuple that begins with a part but holds anything else is refused:
    as JSON, its media would reach the model as base64 text, past every limit.
    """
    # Most results are not rich: their type, or one isinstance(), says so (a list or tuple: its
    # first item's).
    kind = type(result)
    if kind in _NEVER_RICH:
        return None
    if kind is list or kind is tuple:
        items = cast("Sequence[object]", result)
        if not items or not isinstance(items[0], _PARTS):
            return None
        if all(isinstance(item, _PARTS) for item in items):
            return ToolReturn(cast("Sequence[ContentPart]", items))
        raise InternalToolError(MIXED_PARTS.format(name=tool_name, kind=kind.__name__))
    if not isinstance(result, _RICH):
        return None
    return result if isinstance(result, ToolReturn) else ToolReturn(result)


_FINISHED = frozenset({int, float, bool, dict, list, tuple, type(None)})
_ITERATORS: tuple[type, ...] = (Iterator, AsyncIterator)  # generators, count(), map()...


def _refuse_unfinished(result: object, tool_name: str) -> None:
    """Refuse a result that is not one yet: serialising an iterator could run forever."""
    if type(result) in _FINISHED:
        return
    if inspect.isawaitable(result):
        if inspect.iscoroutine(result):
            result.close()  # it never ran; closed, it is not reported as never awaited
            kind = "a coroutine"
        else:
            kind = f"an awaitable {type(result).__name__}"
        raise InternalToolError(NOT_AWAITED.format(name=tool_name, kind=kind))
    if isinstance(result, _ITERATORS):
        raise InternalToolError(AN_ITERATOR.format(name=tool_name, kind=type(result).__name__))


def _refuse_inside(result: object, tool_name: str) -> None:
    """Refuse a result whose plain containers hold what serialising must not read: an
    iterator, or a content part (see ``_scan``)."""
    found = _inside(result, True)
    if found is None:
        return
    found, where = _located(result, found, True)
    kind = type(found).__name__
    if isinstance(found, _RICH):
        raise InternalToolError(PART_INSIDE.format(name=tool_name, kind=kind, where=where))
    raise InternalToolError(AN_ITERATOR.format(name=tool_name, kind=f"{kind} at {where}"))


def inside_problem(value: object) -> str | None:
    """What ``value`` holds in its plain containers that serialising would read forever (an
    iterator: ``_scan``), or is itself, or ``None``: for a ``ToolReturn``'s metadata, which
    may hold parts."""
    if _refused(type(value), False):
        return (
            f"it is an iterator ({type(value).__name__}), which serialising would read, "
            f"forever if it is endless; give a list"
        )
    found = _inside(value, False)
    if found is None:
        return None
    found, where = _located(value, found, False)
    return (
        f"it holds an iterator ({type(found).__name__} at {where}), which serialising "
        f"would read, forever if it is endless; give a list"
    )


_BYTES_MODES: tuple[Literal["utf8", "base64"], ...] = ("utf8", "base64")


def _json_text(result: object) -> str | None:
    try:  # _pydantic_json's first try, inline: every JSON result's path
        return to_json(result, inf_nan_mode="strings").decode()
    except Exception:
        pass
    text = _pydantic_json(result, _BYTES_MODES[1:])
    if text is not None:
        return text
    # A lone surrogate (a file name os.listdir gave) has no UTF-8, so pydantic refuses a
    # text holding one: then each text is made valid (U+FFFD), as a text result is; in
    # plain dicts and lists first, else in the JSON data pydantic makes of the value.
    try:
        text = _pydantic_json(_valid_json(result))
        if text is not None:
            return text
        for bytes_mode in _BYTES_MODES:
            try:
                data = _valid_json(to_jsonable_python(result, bytes_mode=bytes_mode))
            except Exception:
                continue
            return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except Exception:  # too deep to walk, or still not JSON
        pass
    return None


def _pydantic_json(
    value: object, bytes_modes: tuple[Literal["utf8", "base64"], ...] = _BYTES_MODES
) -> str | None:
    # Bytes that are not UTF-8 text go as base64, still the string the schema says.
    for bytes_mode in bytes_modes:
        try:
            # NaN and infinities are not JSON; "NaN" as a string still tells the model.
            return to_json(value, inf_nan_mode="strings", bytes_mode=bytes_mode).decode()
        except Exception:  # not serialisable, too deep, a serializer of the user's failed
            pass
    return None


_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}  # pydantic's spelling


def _valid_json(data: object, depth: int = 0) -> object:
    """``data`` with its texts (keys too) valid and NaN as ``"NaN"``, through its plain
    containers (each a list, but for dicts); anything else as it is. ``ValueError`` if they
    nest deeper than pydantic writes."""
    if isinstance(data, str):
        return valid_unicode(data)
    if isinstance(data, float) and not math.isfinite(data):
        return _NON_FINITE[float.__repr__(data)]
    items = _items_of(type(data))
    if items is None:
        return data
    if depth >= _MAX_DEPTH:
        raise ValueError("nested too deep to write")
    depth += 1
    if items is _DICT_VALUES:
        return {
            valid_unicode(key) if isinstance(key, str) else key: _valid_json(value, depth)
            for key, value in _DICT_ITEMS(cast("dict[object, object]", data))
        }
    return [_valid_json(item, depth) for item in items(data)]


# -- what a result's plain containers hold, before it is serialised ----------------------
#
# pydantic writes what a dict, list, tuple, set or deque holds, and reads an iterator in one
# to its end: forever, for an endless one, on whatever thread serialises it, where no
# timeout interrupts it. A content part in one would be written as JSON: its media as
# base64 text, past every limit on media. So before a result is serialised, one walk
# (``_scan``) goes through its plain containers, no deeper than pydantic writes (what lies
# deeper it refuses to write), and finds either. What is in a model, a dataclass or any
# other value is not looked into: pydantic writes those by their fields.
#
# The walk reads whole levels at C speed (``gc.get_referents``: a container's items), and
# looks at their types, each classified once (``_kind_of``):
_LEAF: Final = 0  # a str, bytes, a number, None: holds nothing
_OTHER: Final = 1  # a model, a dataclass, a datetime, a type...: not looked into
_ITERATOR: Final = 2  # a generator, count(), map(), an async generator...
_PART: Final = 3  # a TextPart, MediaPart or DataPart (or a ToolReturn of them)
# ...and for a container, how its items are read: its base class's own way, never its
# subclass's (an __iter__ of the tool's could be endless too).
_Items = Callable[[Any], Iterable[object]]
_DICT_VALUES: Final[_Items] = dict[object, object].values
_DICT_ITEMS: Final = dict[object, object].items
_SET_ITEMS: Final[_Items] = set[object].__iter__
_FROZENSET_ITEMS: Final[_Items] = frozenset[object].__iter__
_CONTAINERS: tuple[tuple[type, _Items], ...] = (
    (dict, _DICT_VALUES),
    (list, list[object].__iter__),
    (tuple, tuple[object, ...].__iter__),
    (set, _SET_ITEMS),
    (frozenset, _FROZENSET_ITEMS),
    (deque, deque[object].__iter__),
)
_KINDS: dict[type, int | _Items] = {
    **dict.fromkeys((str, int, float, bool, type(None), bytes), _LEAF),
    **dict(_CONTAINERS),
}
# The types found to hold nothing to look at (leaves, others), and the container types: a
# walk compares the set of a level's types with these, at C speed.
_INERT: set[type] = {kind for kind, found in _KINDS.items() if found == _LEAF}
_CONTAINER_TYPES: set[type] = {kind for kind, _ in _CONTAINERS}
_PLAIN = frozenset(_CONTAINER_TYPES)  # their items are what gc.get_referents gives
_MAX_KINDS = 4096  # types kept (classes made at run time could be without end)
_MAX_DEPTH = 256  # containers deeper than pydantic writes (254 levels) are not walked


def _kind_of(kind: type[object]) -> int | _Items:
    """What the walk does with a value of type ``kind`` (see above), kept for the next."""
    found = _KINDS.get(kind)
    if found is not None:
        return found
    found = _OTHER
    try:
        if issubclass(kind, (str, bytes, bytearray, int, float)):  # StrEnum, IntEnum, bool...
            found = _LEAF
        else:
            for container, items in _CONTAINERS:
                if issubclass(kind, container):
                    found = items
                    break
            else:
                if issubclass(kind, _RICH):
                    found = _PART
                elif issubclass(kind, _ITERATORS):
                    found = _ITERATOR
    except Exception:  # a metaclass of the tool's: nothing to look into
        found = _OTHER
    if len(_KINDS) < _MAX_KINDS:
        _KINDS[kind] = found
        if found in (_LEAF, _OTHER):
            _INERT.add(kind)
        elif not isinstance(found, int):
            _CONTAINER_TYPES.add(kind)
    return found


def _items_of(kind: type) -> _Items | None:
    """How the items of a container of type ``kind`` are read; ``None`` if it is none."""
    found = _kind_of(kind)
    return None if isinstance(found, int) else found


def _inside(data: object, parts: bool) -> object | None:
    """The first iterator (or, if ``parts``, content part) in ``data``'s plain containers, or
    ``None``. Data of Python's core types only (what ``marshal`` writes: most JSON-like
    data) holds neither, which marshal tells at C speed, as fast as pydantic writes it."""
    if _items_of(type(data)) is None:  # not a container: nothing in it is looked into
        return None
    try:
        marshal.dumps(cast(Any, data))
    except ValueError:  # something else in it (a model, a datetime...), or very deep
        return _scan(data, parts)
    return None


def _scan(data: object, parts: bool) -> object | None:
    """The first iterator (or, if ``parts``, content part) that the plain containers of
    ``data`` hold, a level at a time, each container once; ``None`` if none."""
    level = [data]
    seen = {id(data)}
    for _ in range(_MAX_DEPTH):
        if set(map(type, level)) <= _PLAIN:  # the usual: their items at C speed
            children = gc.get_referents(*level)
        else:  # a subclass's own attributes are not what pydantic writes
            children = [item for box in level for item in _items_of(type(box))(box)]  # type: ignore[misc]
        types = list(map(type, children))
        kinds = set(types)
        if kinds <= _INERT:
            return None
        refused = {kind for kind in kinds - _INERT if _refused(kind, parts)}
        if refused:
            first: object = next(compress(children, map(refused.__contains__, types)))
            return first
        if kinds.isdisjoint(_CONTAINER_TYPES):
            return None
        boxes = compress(children, map(_CONTAINER_TYPES.__contains__, types))
        by_id = {id(box): box for box in boxes}  # each once, in order
        new = list(filterfalse(seen.__contains__, by_id))
        if not new:
            return None
        seen.update(new)
        level = list(map(by_id.__getitem__, new))
    return None


def _refused(kind: type[object], parts: bool) -> bool:
    """Whether the walk refuses a value of type ``kind``: an iterator, or (if ``parts``) a part."""
    found = _kind_of(kind)
    return found == _ITERATOR or (found == _PART and parts)


def _located(data: object, found: object, parts: bool) -> tuple[object, str]:
    """The first value the walk refuses in ``data`` (``_scan`` found ``found``), reading
    its containers in order, and where it is, as Python subscripts: ``['rows'][3]`` (an item
    of a set: ``{…}``)."""
    located = _path_to(data, parts)
    if located is None:  # the walk reads a dict's keys too, where no path leads
        return found, "a dict's key"
    found, path = located
    steps: list[str] = []
    for key in path:
        if key is _MEMBER:
            steps.append("{…}")
        elif type(key) is str or type(key) is int:
            shown = repr(key)
            steps.append(f"[{shown if len(shown) <= 40 else shown[:39] + '…'}]")
        else:
            steps.append(f"[<{type(key).__name__}>]")
    where = "".join(steps)
    if len(where) <= _MAX_WHERE:
        return found, where
    kept: list[str] = []  # the keys nearest to it, after a "…"
    size = 1
    for step in reversed(steps):
        size += len(step)
        if size > _MAX_WHERE:
            break
        kept.append(step)
    return found, "…" + "".join(reversed(kept))


_MAX_WHERE = 200  # characters of where a refused value is
_MEMBER: Final = object()  # the key of an item of a set


def _path_to(data: object, parts: bool) -> tuple[object, list[object]] | None:
    """The first value the walk refuses in ``data`` (a level at a time, as ``_scan`` goes,
    each level in order), and the keys that lead to it."""
    parents: dict[int, tuple[object, object]] = {}  # a container's: its container, its key
    level = [data]
    for _ in range(_MAX_DEPTH):
        below: list[object] = []
        for box in level:
            items = _items_of(type(box))
            assert items is not None
            keyed: Iterable[tuple[object, object]]
            if items is _DICT_VALUES:
                keyed = _DICT_ITEMS(cast("dict[object, object]", box))
            elif items is _SET_ITEMS or items is _FROZENSET_ITEMS:
                keyed = ((_MEMBER, item) for item in items(box))
            else:
                keyed = enumerate(items(box))
            for key, item in keyed:
                if _refused(type(item), parts):
                    path = [key]
                    while box is not data:
                        box, key = parents[id(box)]
                        path.append(key)
                    return item, path[::-1]
                if _items_of(type(item)) is not None and id(item) not in parents:
                    parents[id(item)] = (box, key)
                    below.append(item)
        level = below
    return None


def _repr_text(result: object, tool_name: str) -> str:
    if isinstance(result, BaseModel):  # pydantic's own kind of value: a serializer failed
        logger.warning(
            "Tool %r returned a %s pydantic could not serialise (a serializer of its "
            "raised?); the model reads its repr()",
            tool_name,
            type(result).__name__,
        )
    try:
        return repr(result)
    except Exception as exc:  # a broken __repr__, a RecursionError...
        raise InternalToolError(
            UNSERIALIZABLE.format(
                name=tool_name, kind=type(result).__name__, error=type(exc).__name__
            )
        ) from exc


def serialize_result(result: object) -> str:
    """Compact JSON by pydantic; ``repr()`` for what pydantic cannot serialise."""
    if isinstance(result, str):  # a str subclass (a StrEnum member...) is still text
        return str.__str__(result)
    text = _json_text(result)
    return repr(result) if text is None else text
