"""``@tool`` marks a method; ``@tool_registry`` turns the marked methods of a class into tools.

For each ``@tool`` method ``search`` of class ``MyApp``, ``@tool_registry``
attaches, in one step at the end (nothing is attached if anything fails):

    MyApp.SearchArgs          pydantic model of the arguments
    MyApp.ToolSearch          the Tool: ToolSearch(app).execute(input_json)
    MyApp.search_definition   app.search_definition() -> ToolDefinition

and records the tools, in declaration order, in ``MyApp.__llm_worker_tools__``.
``MyApp.search`` itself stays callable as before; ``app.search.definition()``
is the spelling type checkers understand.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Concatenate, Generic, Protocol, TypeVar, cast, overload

from typing_extensions import ParamSpec, Self, final

from ._meta import ToolMeta
from ._options import ToolOptions
from ._types import ToolDefinition

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ._codegen.runtime import BuiltTool

__all__ = [
    "BoundToolMethod",
    "ToolMethod",
    "tool",
    "tool_definitions",
    "tool_metas",
    "tool_registry",
]

_AppT = TypeVar("_AppT")
_AppT_contra = TypeVar("_AppT_contra", contravariant=True)
_P = ParamSpec("_P")
_R = TypeVar("_R")
_R_co = TypeVar("_R_co", covariant=True)
_ClassT = TypeVar("_ClassT", bound=type)

_TOOLS_ATTR = "__llm_worker_tools__"


class ToolMethod(Generic[_AppT_contra, _P, _R_co]):
    """A method marked with ``@tool``. Behaves like the method it wraps.

    On an instance it gives a ``BoundToolMethod`` (call it, or ask it for
    ``.definition()``); on the class it gives itself.
    """

    __func__: Callable[Concatenate[_AppT_contra, _P], _R_co]
    __name__: str
    __qualname__: str
    options: ToolOptions

    def __init__(
        self, func: Callable[Concatenate[_AppT_contra, _P], _R_co], options: ToolOptions
    ) -> None:
        given: object = func
        if isinstance(given, ToolMethod):
            raise TypeError(f"@tool is applied twice to {func.__qualname__}")
        if isinstance(given, (staticmethod, classmethod)):
            kind = "staticmethod" if isinstance(given, staticmethod) else "classmethod"
            raise TypeError(f"@tool cannot wrap a {kind}; a tool is an instance method")
        if not callable(given):
            raise TypeError(f"@tool expects a function, got {type(given).__name__}")
        qualname: str = getattr(func, "__qualname__", "")
        parts = qualname.split(".")
        if len(parts) < 2 or parts[-2] == "<locals>":
            raise TypeError(
                f"@tool can only decorate methods defined in a class body; "
                f"{qualname or func!r} is not a method (put it in a @tool_registry class)"
            )
        functools.update_wrapper(self, func)
        self.__func__ = func
        self.options = options
        self._built: BuiltTool | None = None

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> Self: ...
    @overload
    def __get__(
        self, instance: _AppT_contra, owner: type | None = None
    ) -> BoundToolMethod[_P, _R_co]: ...
    def __get__(
        self, instance: _AppT_contra | None, owner: type | None = None
    ) -> Self | BoundToolMethod[_P, _R_co]:
        if instance is None:
            return self
        return BoundToolMethod(self, instance)

    def __call__(self, app: _AppT_contra, /, *args: _P.args, **kwargs: _P.kwargs) -> _R_co:
        return self.__func__(app, *args, **kwargs)

    @property
    def tool_name(self) -> str:
        """The name the model calls this tool by."""
        return self._require_built().name

    @property
    def args_model(self) -> type[BaseModel]:
        """The generated ``<Pascal>Args`` model."""
        return self._require_built().args_model

    def meta(self) -> ToolMeta:
        """This tool's ``ToolMeta`` (no instance needed)."""
        return self._require_built().meta()

    def definition(self, app: _AppT_contra) -> ToolDefinition:
        """The ``ToolDefinition`` of this tool bound to ``app``."""
        return self._require_built().definition(app)

    def _require_built(self) -> BuiltTool:
        built = self._built
        if built is None:
            raise TypeError(
                f"{self.__qualname__} is marked @tool, but its class is not decorated "
                f"with @tool_registry"
            )
        return built

    def __repr__(self) -> str:
        return f"<tool method {self.__qualname__}>"


@final
class BoundToolMethod(Generic[_P, _R_co]):
    """A ``@tool`` method bound to an instance: call it, or get its ``definition()``."""

    __slots__ = ("__self__", "_method")

    def __init__(self, method: ToolMethod[Any, _P, _R_co], instance: object) -> None:
        self._method = method
        self.__self__ = instance

    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R_co:
        return self._method.__func__(self.__self__, *args, **kwargs)

    def definition(self) -> ToolDefinition:
        """The ``ToolDefinition`` of this tool bound to this instance."""
        return self._method.definition(self.__self__)

    def meta(self) -> ToolMeta:
        """This tool's ``ToolMeta``."""
        return self._method.meta()

    @property
    def __func__(self) -> Callable[..., _R_co]:
        return self._method.__func__

    @property
    def __name__(self) -> str:
        return self._method.__func__.__name__

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]
        return self._method.__func__.__doc__

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BoundToolMethod):
            return NotImplemented
        bound = cast("BoundToolMethod[..., Any]", other)
        return self._method is bound._method and self.__self__ is bound.__self__

    def __hash__(self) -> int:
        return hash((id(self._method), id(self.__self__)))

    def __repr__(self) -> str:
        instance = self.__self__
        return (
            f"<bound tool method {self._method.__qualname__} of "
            f"<{type(instance).__qualname__} at {id(instance):#x}>>"
        )


class _ToolDecorator(Protocol):
    def __call__(
        self, func: Callable[Concatenate[_AppT, _P], _R], /
    ) -> ToolMethod[_AppT, _P, _R]: ...


@overload
def tool(func: Callable[Concatenate[_AppT, _P], _R], /) -> ToolMethod[_AppT, _P, _R]: ...
@overload
def tool(
    *,
    name: str | None = None,
    thread: bool = True,
    strict: bool | None = None,
    timeout: float | None = None,
    max_input_bytes: int | None = None,
    max_input_depth: int | None = None,
) -> _ToolDecorator: ...
def tool(
    func: Callable[Concatenate[_AppT, _P], _R] | None = None,
    /,
    *,
    name: str | None = None,
    thread: bool = True,
    strict: bool | None = None,
    timeout: float | None = None,
    max_input_bytes: int | None = None,
    max_input_depth: int | None = None,
) -> ToolMethod[_AppT, _P, _R] | _ToolDecorator:
    """Mark a method of a ``@tool_registry`` class as a tool.

    ``name`` overrides the tool name (default: the method name). A plain
    ``def`` runs in a worker thread unless ``thread=False``. ``strict=False``
    lets pydantic coerce (``"5"`` for an int), accepting more than the schema
    says. ``timeout`` (seconds) cancels an async tool, or abandons a thread
    tool, that runs longer. ``max_input_bytes`` / ``max_input_depth`` refuse
    larger or deeper argument JSON before it is parsed. Unset options come
    from ``@tool_registry(...)``, then from the defaults.
    """
    options = ToolOptions(
        name=name,
        thread=thread,
        strict=strict,
        timeout=timeout,
        max_input_bytes=max_input_bytes,
        max_input_depth=max_input_depth,
    )

    def wrap(f: Callable[Concatenate[_AppT, _P], _R], /) -> ToolMethod[_AppT, _P, _R]:
        return ToolMethod(f, options)

    if func is None:
        return cast(_ToolDecorator, wrap)
    return wrap(func)


@overload
def tool_registry(cls: _ClassT, /) -> _ClassT: ...
@overload
def tool_registry(
    *,
    strict: bool | None = None,
    timeout: float | None = None,
    max_input_bytes: int | None = None,
    max_input_depth: int | None = None,
) -> Callable[[_ClassT], _ClassT]: ...
def tool_registry(
    cls: _ClassT | None = None,
    /,
    *,
    strict: bool | None = None,
    timeout: float | None = None,
    max_input_bytes: int | None = None,
    max_input_depth: int | None = None,
) -> _ClassT | Callable[[_ClassT], _ClassT]:
    """Generate the tools of every ``@tool`` method of a class (see the module docstring).

    The keyword options are defaults for the class's tools (see ``tool``).
    Raises one ``TypeError`` listing every problem if any method cannot be a
    tool; the class is then left untouched.
    """
    defaults = ToolOptions(
        strict=strict,
        timeout=timeout,
        max_input_bytes=max_input_bytes,
        max_input_depth=max_input_depth,
    )

    def wrap(cls: _ClassT) -> _ClassT:
        _process_class(cls, defaults)
        return cls

    if cls is None:
        return wrap
    return wrap(cls)


def _process_class(cls: type, defaults: ToolOptions) -> None:
    # Imported here: it loads pydantic's model machinery, which `import llm_worker` need not.
    from ._codegen import declaration_error, generate

    if not isinstance(cls, type):
        raise TypeError(f"@tool_registry decorates a class, not {type(cls).__name__}")
    inherited: list[BuiltTool] = list(getattr(cls, _TOOLS_ATTR, ()))
    own: list[tuple[str, ToolMethod[Any, ..., Any]]] = []
    problems: list[str] = []
    seen: dict[int, str] = {}
    for attr_name, attr in cls.__dict__.items():
        value = cast(object, attr)
        if isinstance(value, (staticmethod, classmethod)):
            kind = "staticmethod" if isinstance(value, staticmethod) else "classmethod"
            wrapped = cast(object, value.__func__)  # pyright: ignore[reportUnknownMemberType]
            if isinstance(wrapped, ToolMethod):
                problems.append(f"{attr_name}: a tool cannot be a {kind}")
        elif isinstance(value, ToolMethod):
            value = cast("ToolMethod[Any, ..., Any]", value)
            if id(value) in seen:
                problems.append(f"{attr_name}: is the same @tool method as {seen[id(value)]}")
                continue
            if value._built is not None and value._built.owner is not cls:
                problems.append(
                    f"{attr_name}: this @tool method already belongs to "
                    f"{value._built.owner.__qualname__}"
                )
                continue
            seen[id(value)] = attr_name
            own.append((attr_name, value))
    if problems:
        raise declaration_error(cls, problems)
    own_names = {attr_name for attr_name, _ in own}
    kept = [b for b in inherited if b.attr_name not in own_names]
    attrs, records = generate(
        cls,
        [(attr_name, method.__func__, method.options.over(defaults)) for attr_name, method in own],
        {b.name: f"{b.owner.__qualname__}.{b.attr_name}" for b in kept},
    )
    # Attach everything in one loop, only now that all of it was built.
    for attr_name, value in attrs.items():
        setattr(cls, attr_name, value)
    for (_, method), record in zip(own, records, strict=True):
        method._built = record
    # An override keeps its base tool's place; new tools follow, in declaration order.
    by_attr = {record.attr_name: record for record in records}
    ordered = [by_attr.pop(b.attr_name, b) for b in inherited]
    setattr(cls, _TOOLS_ATTR, (*ordered, *by_attr.values()))


def _built_tools(cls: type, caller: str) -> tuple[BuiltTool, ...]:
    built: tuple[BuiltTool, ...] | None = getattr(cls, _TOOLS_ATTR, None)
    if built is None:
        raise TypeError(f"{caller}: {cls.__qualname__} is not a @tool_registry class")
    return built


def tool_definitions(app: object) -> list[ToolDefinition]:
    """Every tool of a registry instance, as ``ToolDefinition``s in declaration order."""
    if isinstance(app, type):
        raise TypeError(
            f"tool_definitions() takes an instance of {app.__qualname__}, not the class "
            f"(for the metas of a class use tool_metas({app.__qualname__}))"
        )
    return [built.definition(app) for built in _built_tools(type(app), "tool_definitions()")]


def tool_metas(cls: type) -> list[ToolMeta]:
    """The ``ToolMeta`` of every tool of a registry class, without creating an instance."""
    if not isinstance(cls, type):
        raise TypeError(
            f"tool_metas() takes a class, not a {type(cls).__qualname__} instance (pass type(app))"
        )
    return [built.meta() for built in _built_tools(cls, "tool_metas()")]
