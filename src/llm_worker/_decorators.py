"""``@tool`` marks a method; ``@tool_registry`` turns the marked methods of a class into tools.

For each ``@tool`` method ``search`` of class ``MyApp``, ``@tool_registry``
attaches, in one step at the end (nothing is attached if anything fails):

    MyApp.SearchArgs          pydantic model of the arguments
    MyApp.ToolSearch          the Tool: ToolSearch(app).execute(input_json)
    MyApp.search_definition   app.search_definition() -> ToolDefinition

and records the tools, in declaration order, in ``MyApp.__llm_worker_tools__``
(the nouns, ``ToolMethod`` and ``BuiltTool``, live in ``_registry``).
``MyApp.search`` itself stays callable as before; ``app.search.definition()``
is the spelling type checkers understand.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Concatenate, Protocol, TypeVar, cast, overload

from typing_extensions import ParamSpec

from ._meta import ToolAnnotations, ToolMeta
from ._options import ThreadOption, ToolOptions
from ._registry import (
    TOOLS_ATTR,
    BuiltTool,
    ToolMethod,
    attach_tools,
    declaration_error,
    dropped_tool_methods,
    name_clashes,
    own_tool_methods,
    qualified_name,
    registered_tools,
    took_over_tools,
)
from ._types import ToolDefinition

if TYPE_CHECKING:
    from ._hooks import ApprovalPolicy

__all__ = ["tool", "tool_definitions", "tool_metas", "tool_registry"]

_AppT = TypeVar("_AppT")
_P = ParamSpec("_P")
_R = TypeVar("_R")
_ClassT = TypeVar("_ClassT", bound=type)


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
    thread: ThreadOption | None = None,
    strict: bool | None = None,
    timeout: float | None = None,
    max_input_bytes: int | None = None,
    max_input_depth: int | None = None,
    requires_approval: ApprovalPolicy | None = None,
    sequential: bool | None = None,
    title: str | None = None,
    annotations: ToolAnnotations | None = None,
) -> _ToolDecorator: ...
def tool(
    func: Callable[Concatenate[_AppT, _P], _R] | None = None,
    /,
    *,
    name: str | None = None,
    thread: ThreadOption | None = None,
    strict: bool | None = None,
    timeout: float | None = None,
    max_input_bytes: int | None = None,
    max_input_depth: int | None = None,
    requires_approval: ApprovalPolicy | None = None,
    sequential: bool | None = None,
    title: str | None = None,
    annotations: ToolAnnotations | None = None,
) -> ToolMethod[_AppT, _P, _R] | _ToolDecorator:
    """Mark a method of a ``@tool_registry`` class as a tool.

    ``name`` overrides the tool name (default: the method name). A plain
    ``def`` runs in a worker thread; ``thread=False`` runs it on the event loop's
    thread, ``thread="dedicated"`` on its app object's own thread, one call at a
    time (for objects that belong to the thread that made them: sqlite3...). ``strict=False``
    lets pydantic coerce (``"5"`` for an int), accepting more than the schema
    says. ``timeout`` (seconds) cancels an async tool, or abandons a thread
    tool, that runs longer. ``max_input_bytes`` / ``max_input_depth`` refuse
    larger or deeper argument JSON before it is parsed. ``requires_approval``
    (``True``, or a function of the call's ``ToolCallContext`` returning a bool)
    holds a Worker's calls of the tool for a human's decision; ``sequential=True``
    runs each call alone, no other call of its response at the same time.
    ``title`` (a name for people) and ``annotations`` (``ToolAnnotations``:
    read-only, destructive, idempotent, open-world) go into its ``ToolMeta``
    for the application and MCP hosts; the model is not sent them. Unset
    options come from ``@tool_registry(...)``, then from the defaults.
    """
    options = ToolOptions(
        name=name,
        thread=thread,
        strict=strict,
        timeout=timeout,
        max_input_bytes=max_input_bytes,
        max_input_depth=max_input_depth,
        requires_approval=requires_approval,
        sequential=sequential,
        title=title,
        annotations=annotations,
    )

    def wrap(f: Callable[Concatenate[_AppT, _P], _R], /) -> ToolMethod[_AppT, _P, _R]:
        given: object = f
        if isinstance(given, (staticmethod, classmethod)):
            method = cast("staticmethod[..., Any] | classmethod[Any, ..., Any]", given)
            if _in_a_class_body(method):
                # @tool above @staticmethod: made what @staticmethod above @tool makes, which
                # @tool_registry refuses with the class's other problems, all in one error.
                marked: Any = ToolMethod(cast(Any, method.__func__), options)
                static = isinstance(method, staticmethod)
                made: object = staticmethod(marked) if static else classmethod(marked)
                return cast("ToolMethod[_AppT, _P, _R]", made)
        return ToolMethod(f, options)

    if func is None:
        return cast(_ToolDecorator, wrap)
    return wrap(func)


def _in_a_class_body(method: staticmethod[..., Any] | classmethod[Any, ..., Any]) -> bool:
    """Whether the function under ``method`` is defined in a class body (whose class,
    once built by ``@tool_registry``, can be named in the error); elsewhere ``@tool``
    refuses it at once."""
    qualname = str(getattr(method.__func__, "__qualname__", ""))
    owner = qualname.rpartition(".")[0]
    return bool(owner) and not owner.endswith("<locals>")


@overload
def tool_registry(cls: _ClassT, /) -> _ClassT: ...
@overload
def tool_registry(
    *,
    thread: ThreadOption | None = None,
    strict: bool | None = None,
    timeout: float | None = None,
    max_input_bytes: int | None = None,
    max_input_depth: int | None = None,
    requires_approval: ApprovalPolicy | None = None,
    sequential: bool | None = None,
    annotations: ToolAnnotations | None = None,
) -> Callable[[_ClassT], _ClassT]: ...
def tool_registry(
    cls: _ClassT | None = None,
    /,
    *,
    thread: ThreadOption | None = None,
    strict: bool | None = None,
    timeout: float | None = None,
    max_input_bytes: int | None = None,
    max_input_depth: int | None = None,
    requires_approval: ApprovalPolicy | None = None,
    sequential: bool | None = None,
    annotations: ToolAnnotations | None = None,
) -> _ClassT | Callable[[_ClassT], _ClassT]:
    """Generate the tools of every ``@tool`` method of a class (see the module docstring).

    The keyword options are defaults for the class's tools (see ``tool``).
    Raises one ``TypeError`` listing every problem if any method cannot be a
    tool; the class is then left untouched.
    """
    defaults = ToolOptions(
        thread=thread,
        strict=strict,
        timeout=timeout,
        max_input_bytes=max_input_bytes,
        max_input_depth=max_input_depth,
        requires_approval=requires_approval,
        sequential=sequential,
        annotations=annotations,
    )

    def wrap(cls: _ClassT) -> _ClassT:
        _process_class(cls, defaults, _defining_locals(cls, sys._getframe(1)))
        return cls

    if cls is None:
        return wrap
    _process_class(cls, defaults, _defining_locals(cls, sys._getframe(1)))
    return cls


def _defining_locals(cls: type, frame: types.FrameType | None) -> dict[str, Any] | None:
    """The names of the scope whose code defines ``cls`` (``None`` at module level).

    With ``from __future__ import annotations`` a method's annotations are text: a
    type defined in that function (a test's model) is only found there, as pydantic
    finds it for a model's fields. ``@tool_registry`` may be called from elsewhere
    (a base's ``__init_subclass__``, a helper decorator): the scope is the frame, from
    ``frame`` outwards, running the code ``cls.__qualname__`` names as its enclosing
    scope, never the caller's own names.
    """
    if not isinstance(cls, type):
        return None  # _process_class says what is wrong
    scope = cls.__qualname__.rpartition(".")[0].removesuffix(".<locals>")
    if not scope:
        return None  # a module's class: its annotations see the module's names
    while frame is not None:
        if _runs_scope(frame, scope, cls.__module__):
            return dict(frame.f_locals)
        frame = frame.f_back
    return None  # the defining function has returned: its names are gone


def _runs_scope(frame: types.FrameType, scope: str, module: str) -> bool:
    """Whether ``frame`` runs the function or class body ``scope`` (a qualname) of ``module``."""
    code = frame.f_code
    if sys.version_info >= (3, 11):
        runs = code.co_qualname == scope
    else:  # no co_qualname: the last part of the name
        runs = code.co_name == scope.rpartition(".")[2]
    return runs and frame.f_globals.get("__name__") == module


def _process_class(
    cls: type, defaults: ToolOptions, defining_locals: dict[str, Any] | None = None
) -> None:
    # Imported here: it loads pydantic's model machinery, which `import llm_worker` need not.
    from ._codegen import generate

    if not isinstance(cls, type):
        raise TypeError(f"@tool_registry decorates a class, not {type(cls).__name__}")
    if took_over_tools(cls):
        return  # attrs or dataclass(slots=True) rebuilt a registry class: its tools are its own
    if TOOLS_ATTR in cls.__dict__:
        # Its generated attributes would all clash with the ones already there.
        problem = (
            f"{cls.__name__} is already a @tool_registry class; decorate it once "
            f"(a base class's __init_subclass__ may decorate it too)"
        )
        raise declaration_error(qualified_name(cls), [problem])
    own, problems = own_tool_methods(cls)
    own_names = {attr_name for attr_name, _ in own}
    kept = [b for b in registered_tools(cls) or () if b.attr_name not in own_names]
    problems += dropped_tool_methods(cls) + name_clashes(kept)
    problems += _replaced_inherited_names([attr_name for attr_name, _ in own], kept)
    # Every problem at once: the methods' own (generate's) too.
    attrs, records = generate(
        cls,
        [(attr_name, method.__func__, method.options.over(defaults)) for attr_name, method in own],
        {b.name: f"{b.owner.__qualname__}.{b.attr_name}" for b in kept},
        problems,
        defining_locals,
    )
    attach_tools(cls, attrs, [method for _, method in own], records)


def _replaced_inherited_names(own: list[str], kept: list[BuiltTool]) -> list[str]:
    """The problems of new tools whose generated names are an inherited tool's.

    ``get_user`` in a base and ``getUser`` in the subclass both make ``GetUserArgs``
    and ``ToolGetUser``: the subclass's would hide the base tool's, and
    ``Sub.ToolGetUser`` run the other method. In one class that is a declaration
    error (``_codegen``'s plan); so it is here.
    """
    from ._codegen.plan import generated_names

    inherited = {
        name: f"{record.owner.__qualname__}.{record.attr_name}"
        for record in kept
        for name in generated_names(record.attr_name)
    }
    return [
        f"{attr_name}: generated name {name!r} is also generated for the inherited tool "
        f"{inherited[name]}, which it would hide (rename the method)"
        for attr_name in own
        for name in generated_names(attr_name)
        if name in inherited
    ]


def _built_tools(cls: type, caller: str) -> tuple[BuiltTool, ...]:
    built = registered_tools(cls)
    if built is None:
        raise TypeError(f"{caller}: {cls.__qualname__} is not a @tool_registry class")
    problems = name_clashes(built)  # a subclass of two registries, not decorated itself
    if TOOLS_ATTR not in cls.__dict__:  # ... or with @tool methods of its own
        problems += dropped_tool_methods(cls, own=True)
    if problems:
        raise declaration_error(qualified_name(cls), problems)
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
