"""What a ``@tool_registry`` class is made of: its ``@tool`` methods and one record per tool.

    ToolMethod, BoundToolMethod   what ``@tool`` leaves in the class body (a descriptor)
    BuiltTool                     one per tool, kept in declaration order in
                                  ``cls.__llm_worker_tools__`` (like ``__attrs_attrs__``)
    ToolFactory                   the ``ToolDefinition`` a record makes for one app instance

``_decorators`` (the verbs: ``tool``, ``tool_registry``...) and ``_codegen``
(which builds the records) both use these nouns; this module imports neither,
and nothing from pydantic, so ``import llm_worker`` stays cheap.
"""

from __future__ import annotations

import functools
import inspect
import math
import types
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Concatenate, Generic, TypeVar, cast, overload

from typing_extensions import ParamSpec, Self, final

from ._meta import ToolAnnotations, ToolMeta
from ._options import ToolOptions
from ._types import Tool, ToolDefinition

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = [
    "TOOLS_ATTR",
    "BoundToolMethod",
    "BuiltTool",
    "ToolFactory",
    "ToolMethod",
    "attach_tools",
    "declaration_error",
    "dropped_tool_methods",
    "is_tool_registry",
    "own_tool_methods",
    "qualified_name",
    "registered_tools",
    "took_over_tools",
]

_AppT_contra = TypeVar("_AppT_contra", contravariant=True)
_P = ParamSpec("_P")
_R_co = TypeVar("_R_co", covariant=True)

TOOLS_ATTR = "__llm_worker_tools__"
"""The class attribute holding a registry class's ``BuiltTool``s, in declaration order."""


def qualified_name(cls: type) -> str:
    """``package.module.Class``: how declaration errors name a class."""
    return f"{cls.__module__}.{cls.__qualname__}"


def declaration_error(where: str, problems: Sequence[str]) -> TypeError:
    """``Cannot build tools for mod.Class:`` and one indented line per problem."""
    lines = "\n".join(f"  {problem}" for problem in problems)
    return TypeError(f"Cannot build tools for {where}:\n{lines}")


def _not_an_instance_method(method: str, kind: str) -> str:
    return (
        f"{method}: a tool cannot be a {kind}; a tool is an instance method "
        f"(remove @{kind} and take self)"
    )


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
        _refuse_static_or_class_method(given)
        _refuse_non_callable(given)
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
        # What a direct call runs: the function itself, until its class is built
        # (then, for a method with a Field(...) default, a wrapper that fills it in).
        self._call: Callable[Concatenate[_AppT_contra, _P], _R_co] = func

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
        return self._call(app, *args, **kwargs)

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

    # Function-like for introspection (``inspect.iscoroutinefunction``, ``get_type_hints``),
    # as an ordinary method is: the wrapped function's own attributes.
    @property
    def __code__(self) -> types.CodeType:
        return self.__func__.__code__

    @property
    def __defaults__(self) -> tuple[Any, ...] | None:
        return self.__func__.__defaults__

    @property
    def __kwdefaults__(self) -> dict[str, Any] | None:
        return self.__func__.__kwdefaults__

    @property
    def __closure__(self) -> tuple[types.CellType, ...] | None:
        # What attrs reads to point a method's ``__class__`` cell (no-argument
        # ``super()``) at the class it makes in place of the decorated one.
        closure: tuple[types.CellType, ...] | None = getattr(self.__func__, "__closure__", None)
        return closure

    def __set_name__(self, owner: type, name: str) -> None:
        # Called again when a decorator above @tool_registry builds a new class from
        # the decorated one's namespace (@attrs.define, @dataclass(slots=True)).
        built = self._built
        if built is not None and built.owner is not owner:
            _follow_replacement(built.owner, owner)

    def __reduce__(self) -> str | tuple[Any, ...]:
        # Pickled by where it is, as a function is by its name: MyApp.search is self.
        built = self._built
        if built is None:
            return self.__qualname__
        return (getattr, (built.owner, built.attr_name))

    def __repr__(self) -> str:
        return f"<tool method {self.__qualname__}>"


_REPLACEMENTS: weakref.WeakSet[type] = weakref.WeakSet()
"""Classes that took over the tools of the registry class they replace (``took_over_tools``)."""


def _follow_replacement(old: type, new: type) -> None:
    """Make ``new`` the owner of ``old``'s tools if ``new`` is ``old`` rebuilt by a decorator.

    attrs and ``dataclass(slots=True)`` make a class of the same name, module and
    bases from a copy of the old one's namespace (this very ``TOOLS_ATTR`` tuple
    included) and return it in the old one's place. The tools then belong to it:
    pickling finds a class by its name, a subclass's MRO holds only the new one.
    Any other class the method is put in keeps it as it was (``own_tool_methods``
    refuses a tool method of another registry).
    """
    tools = old.__dict__.get(TOOLS_ATTR)
    if (
        tools is None
        or new.__dict__.get(TOOLS_ATTR) is not tools
        or old in new.__mro__
        or (new.__name__, new.__module__) != (old.__name__, old.__module__)
    ):
        return
    for record in cast("tuple[BuiltTool, ...]", tools):
        if record.owner is old:
            record.owner = new
    _REPLACEMENTS.add(new)


def took_over_tools(cls: type) -> bool:
    """Whether ``cls`` replaced a registry class and took over its tools (see ``ToolMethod``).

    Such a class is already built: a base's ``__init_subclass__`` that registers its
    subclasses sees it again, as the class attrs or ``dataclass(slots=True)`` made.
    """
    return cls in _REPLACEMENTS


def _refuse_static_or_class_method(given: object) -> None:
    if not isinstance(given, (staticmethod, classmethod)):
        return
    kind = "staticmethod" if isinstance(given, staticmethod) else "classmethod"
    defined = _defined_in(cast(object, given.__func__))  # pyright: ignore[reportUnknownMemberType]
    if defined is not None:
        where, method = defined
        raise declaration_error(where, [_not_an_instance_method(method, kind)])
    raise TypeError(f"@tool cannot wrap a {kind}; a tool is an instance method")


def _refuse_non_callable(given: object) -> None:
    if callable(given):
        return
    kind = type(given).__name__
    # The method under the decorator: a property's fget, a cached_property's func.
    inner = getattr(given, "fget", None) or getattr(given, "func", None)
    defined = _defined_in(inner) if inner is not None else None
    if defined is not None:
        where, method = defined
        problem = f"{method}: @tool cannot wrap a {kind}; a tool is a method the model calls"
        raise declaration_error(where, [f"{problem} (remove @{kind})"])
    raise TypeError(f"@tool expects a function, got {kind}")


def _defined_in(func: object) -> tuple[str, str] | None:
    """``("mod.Class", "method")`` for a function defined in a class body, else ``None``.

    The class does not exist yet while ``@tool`` runs in its body, but its name is known.
    """
    owner, _, method = str(getattr(func, "__qualname__", "")).rpartition(".")
    if not owner or owner.endswith("<locals>"):
        return None
    return f"{getattr(func, '__module__', '?')}.{owner}", method


class _FunctionAnnotations(dict[str, Any]):
    """A bound tool method's ``__annotations__``: its function's (``typing.get_type_hints``).

    A dict, empty, for the class itself (whose own annotations are read from its
    ``__dict__``); the function's annotations on an instance. Looking them up through
    ``__getattr__`` would find first the empty ``__annotations__`` a base class may have
    been given (``Generic``'s, once anything has asked for them).
    """

    def __get__(self, instance: object, owner: type | None = None) -> dict[str, Any]:
        if instance is None:
            return self
        method = cast("BoundToolMethod[..., Any]", instance)._method
        annotations: dict[str, Any] = method.__func__.__annotations__
        return annotations


class _FunctionModule(str):
    """A bound tool method's ``__module__``: its function's, as a bound method's.

    On the class itself, the class's own module (a ``str``, as pickle and ``help``
    expect of a class's ``__module__``).
    """

    __slots__ = ()

    def __get__(self, instance: object, owner: type | None = None) -> str:
        if instance is None:
            return self
        module: str = cast("BoundToolMethod[..., Any]", instance)._method.__func__.__module__
        return module

    def __reduce__(self) -> tuple[Any, ...]:
        return (str, (str(self),))  # pickle names the class's module with a plain str


@final
class BoundToolMethod(Generic[_P, _R_co]):
    """A ``@tool`` method bound to an instance: call it, or get its ``definition()``."""

    __slots__ = ("__self__", "_method")

    def __init__(self, method: ToolMethod[Any, _P, _R_co], instance: object) -> None:
        self._method = method
        self.__self__ = instance

    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R_co:
        return self._method._call(self.__self__, *args, **kwargs)

    def definition(self) -> ToolDefinition:
        """The ``ToolDefinition`` of this tool bound to this instance."""
        return self._method.definition(self.__self__)

    def meta(self) -> ToolMeta:
        """This tool's ``ToolMeta``."""
        return self._method.meta()

    @property
    def tool_name(self) -> str:
        """The name the model calls this tool by."""
        return self._method.tool_name

    @property
    def args_model(self) -> type[BaseModel]:
        """The generated ``<Pascal>Args`` model."""
        return self._method.args_model

    @property
    def __func__(self) -> Callable[..., _R_co]:
        return self._method.__func__

    @property
    def __name__(self) -> str:
        return self._method.__func__.__name__

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]
        return self._method.__func__.__doc__

    @property
    def __signature__(self) -> inspect.Signature:
        """The method's signature without ``self``, as a bound method's."""
        signature = inspect.signature(self._method.__func__)
        return signature.replace(parameters=tuple(signature.parameters.values())[1:])

    __annotations__ = _FunctionAnnotations()
    __module__ = _FunctionModule(__module__)

    if not TYPE_CHECKING:  # to the checkers, a misspelt attribute is an error

        def __getattr__(self, name: str) -> Any:
            # As a bound method does: what it lacks is the function's (``__code__``, so
            # ``inspect.iscoroutinefunction`` answers; ``__annotations__``, ``__qualname__``).
            if name == "_method":
                raise AttributeError(name)  # not set yet (unpickling, copying)
            try:
                return getattr(self._method.__func__, name)
            except AttributeError:
                raise AttributeError(
                    f"bound tool method {self._method.__qualname__} has no attribute {name!r}"
                ) from None

    def __reduce__(self) -> tuple[Any, ...]:
        built = self._method._built  # the attribute it is under (not always its function's name)
        name = self.__name__ if built is None else built.attr_name
        return (getattr, (self.__self__, name))  # as a bound method pickles

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


class BuiltTool:
    """One tool of a registry class, as ``_codegen`` built it.

    ``meta()`` works its schema out on first use; ``definition(app)`` makes the
    tool's ``ToolDefinition`` for an instance; ``call`` is what a direct call
    of the method runs.
    """

    __slots__ = (
        "_args_model",
        "_input_schema",
        "_meta",
        "_output_schema",
        "annotations",
        "attr_name",
        "call",
        "description",
        "name",
        "owner",
        "title",
        "tool_class",
    )

    def __init__(
        self,
        *,
        owner: type,
        attr_name: str,
        name: str,
        description: str,
        args_model: Callable[[], type[BaseModel]],
        input_schema: Callable[[], dict[str, Any]],
        tool_class: Callable[[Any], Tool],
        call: Callable[..., Any],
        title: str | None = None,
        annotations: ToolAnnotations | None = None,
        output_schema: Callable[[], dict[str, Any] | None] = lambda: None,
    ) -> None:
        self.owner = owner
        self.attr_name = attr_name
        self.name = name
        self.description = description
        self._args_model = args_model
        self._input_schema = input_schema
        self.tool_class = tool_class
        self.call = call
        self.title = title
        self.annotations = annotations
        self._output_schema = output_schema
        self._meta: ToolMeta | None = None

    @property
    def args_model(self) -> type[BaseModel]:
        """The generated ``<Pascal>Args`` model (created on first use)."""
        return self._args_model()

    def meta(self) -> ToolMeta:
        """The tool's ``ToolMeta``; the JSON schema is generated on first use, then kept."""
        meta = self._meta
        if meta is None:
            try:
                schema = self._input_schema()
            except Exception as exc:
                problem = f"{self.attr_name}: no JSON Schema for its arguments ({exc})"
                raise declaration_error(qualified_name(self.owner), [problem]) from exc
            output_schema = self._output_schema()
            try:
                meta = ToolMeta(
                    name=self.name,
                    description=self.description,
                    input_schema=schema,
                    title=self.title,
                    annotations=self.annotations,
                    output_schema=output_schema,
                )
            except (TypeError, ValueError) as exc:
                # Built here, on first use, as the schema is: name the tool it is for.
                problem = _unsendable_schema(self.attr_name, schema, output_schema, exc)
                raise declaration_error(qualified_name(self.owner), [problem]) from exc
            self._meta = meta
        return meta

    def definition(self, app: object) -> ToolFactory:
        """A ``ToolDefinition`` making ``(meta, tool bound to app)``."""
        return ToolFactory(self, app)

    def __repr__(self) -> str:
        return f"<BuiltTool {self.name!r} of {qualified_name(self.owner)}>"


def _unsendable_schema(
    attr_name: str, schema: object, output_schema: object, exc: Exception
) -> str:
    """Why ``ToolMeta`` refused a tool's schema, naming the number JSON cannot hold if any."""
    for what, value in (("arguments", schema), ("result", output_schema)):
        found = _non_finite(value, ())
        if found is not None:
            path, number = found
            pointer = "".join(f"/{key}" for key in path) or "its root"  # a JSON Pointer
            return (
                f"{attr_name}: the JSON Schema of its {what} holds {number!r} at {pointer}, "
                f"which JSON cannot represent (a default of math.inf or float('nan'), say); "
                f"use a finite number or leave it out"
            )
    return f"{attr_name}: {exc}"


def _non_finite(value: object, path: tuple[str, ...]) -> tuple[tuple[str, ...], float] | None:
    """The path to the first NaN or infinity in JSON-like data, or ``None``.

    A loop, not recursion: the schema may be the one refused for nesting too deeply.
    """
    todo: list[tuple[tuple[str, ...], object]] = [(path, value)]
    while todo:
        where, item = todo.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return where, item
        if isinstance(item, dict):
            pairs = [(str(k), v) for k, v in cast("dict[object, object]", item).items()]
        elif isinstance(item, (list, tuple)):
            pairs = [(str(k), v) for k, v in enumerate(cast("list[object]", item))]
        else:
            continue
        todo.extend(((*where, key), inner) for key, inner in reversed(pairs))  # first on top
    return None


class ToolFactory:
    """The ``ToolDefinition`` returned by ``app.search_definition()``.

    Each call returns the tool's (shared, immutable) meta and a new tool
    instance bound to the app.
    """

    __slots__ = ("_app", "_built")

    def __init__(self, built: BuiltTool, app: object) -> None:
        self._built = built
        self._app = app

    def __call__(self) -> tuple[ToolMeta, Tool]:
        return self._built.meta(), self._built.tool_class(self._app)

    @property
    def name(self) -> str:
        """The name the tool will be registered under."""
        return self._built.name

    def __repr__(self) -> str:
        app = self._app
        return (
            f"<ToolDefinition {self._built.name!r} of <{type(app).__qualname__} at {id(app):#x}>>"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (_factory_for, (self._built.owner, self._built.attr_name, self._app))


def _factory_for(owner: type, attr_name: str, app: object) -> ToolFactory:
    built = next(b for b in owner.__dict__[TOOLS_ATTR] if b.attr_name == attr_name)
    return ToolFactory(built, app)


def registered_tools(cls: type) -> tuple[BuiltTool, ...] | None:
    """The tools of a registry class (its own and inherited), or ``None`` for any other class.

    A class ``@tool_registry`` did not decorate has the tools of all its registry
    bases, each as attribute lookup finds it (the most derived override), in the
    order ``dataclasses`` gives fields: the last base's first, an override in its
    base tool's place. ``name_clashes`` says whether two of them share a name.
    """
    own = cls.__dict__.get(TOOLS_ATTR)
    if own is not None:
        return cast("tuple[BuiltTool, ...]", own)
    order = {klass: index for index, klass in enumerate(cls.__mro__)}
    by_attr: dict[str, BuiltTool] = {}
    found = False
    for base in reversed(cls.__mro__[1:]):
        tools = cast("tuple[BuiltTool, ...] | None", base.__dict__.get(TOOLS_ATTR))
        if tools is None:
            continue
        found = True
        for record in tools:
            if record.owner not in order:
                raise _replaced_owner_error(cls, base, record.owner)
            # A base's list holds what it inherited too: the record whose class comes
            # first in the MRO is the one attribute lookup finds (a diamond's override).
            kept = by_attr.get(record.attr_name)
            if kept is None or order[record.owner] < order[kept.owner]:
                by_attr[record.attr_name] = record
    return tuple(by_attr.values()) if found else None


def _replaced_owner_error(cls: type, base: type, owner: type) -> TypeError:
    # A copy ToolMethod.__set_name__ did not take for the same class (another name).
    return TypeError(
        f"{qualified_name(cls)}: its base {qualified_name(base)} holds the tools built for "
        f"{qualified_name(owner)}, a class a decorator applied above @tool_registry replaced; "
        f"put @tool_registry outermost, above the decorator that makes a new class"
    )


def name_clashes(tools: Sequence[BuiltTool]) -> list[str]:
    """The problems of tools that share a name (say, from two registry bases)."""
    first: dict[str, BuiltTool] = {}
    problems: list[str] = []
    for record in tools:
        other = first.setdefault(record.name, record)
        if other is not record:
            problems.append(
                f"tool name {record.name!r} is used by both {_where(other)} and {_where(record)} "
                f"(pass @tool(name=...) to rename one)"
            )
    return problems


def _where(record: BuiltTool) -> str:
    return f"{record.owner.__qualname__}.{record.attr_name}"


def is_tool_registry(cls: object) -> bool:
    """Whether ``cls`` is a ``@tool_registry`` class, or a subclass of one.

    ``False`` for anything else, instances included (ask about ``type(app)``),
    as ``attrs.has`` and ``dataclasses.is_dataclass`` answer for their classes.
    """
    return isinstance(cls, type) and registered_tools(cls) is not None


def own_tool_methods(cls: type) -> tuple[list[tuple[str, ToolMethod[Any, ..., Any]]], list[str]]:
    """The ``@tool`` methods ``cls`` itself defines, in order, and the problems found."""
    own: list[tuple[str, ToolMethod[Any, ..., Any]]] = []
    problems: list[str] = []
    seen: dict[int, str] = {}
    for attr_name, attr in cls.__dict__.items():
        value = cast(object, attr)
        if isinstance(value, (staticmethod, classmethod)):
            kind = "staticmethod" if isinstance(value, staticmethod) else "classmethod"
            wrapped = cast(object, value.__func__)  # pyright: ignore[reportUnknownMemberType]
            if isinstance(wrapped, ToolMethod):
                problems.append(_not_an_instance_method(attr_name, kind))
            elif _hides_a_tool_method(wrapped):
                problems.append(_hidden(attr_name, kind))
        elif isinstance(value, ToolMethod):
            method = cast("ToolMethod[Any, ..., Any]", value)
            if id(method) in seen:
                problems.append(f"{attr_name}: is the same @tool method as {seen[id(method)]}")
                continue
            built = method._built
            if built is not None and built.owner is not cls:
                problems.append(
                    f"{attr_name}: this @tool method already belongs to {built.owner.__qualname__}"
                )
                continue
            seen[id(method)] = attr_name
            own.append((attr_name, method))
        elif _hides_a_tool_method(value):
            problems.append(_hidden(attr_name, type(value).__name__))
    return own, problems


# Where a decorator keeps what it decorates: functools.wraps, property, staticmethod and
# classmethod. (Not partialmethod's `func`: `alias = partialmethod(tool_method, x=1)` is
# another method beside the tool, not the tool hidden.)
_WRAPPED_ATTRS = ("__wrapped__", "fget", "fset", "fdel", "__func__")


def _hides_a_tool_method(value: object) -> bool:
    """Whether ``value`` is a decorator's result with a ``@tool`` method inside."""
    todo, looked = [value], 0
    while todo and looked < 32:  # a chain of wrappers is short; this one may loop
        item = todo.pop()
        looked += 1
        if isinstance(item, (type, types.ModuleType)):
            continue  # a nested class's own methods are its business
        for name in _WRAPPED_ATTRS:
            try:
                inner = cast(object, getattr(item, name, None))
            except Exception:  # an attribute of the user's that fails when read
                continue
            if isinstance(inner, ToolMethod):
                return True
            if inner is not None and inner is not item:
                todo.append(inner)
    return False


def _hidden(attr_name: str, kind: str) -> str:
    if kind == "property":
        return (
            f"{attr_name}: @property hides the @tool method under it, so it would not be a "
            f"tool; a tool is a method the model calls (remove @property)"
        )
    return (
        f"{attr_name}: a decorator applied above @tool (it gave a {kind}) hides the @tool "
        f"method, so it would not be a tool; put @tool outermost, above the other decorators"
    )


def dropped_tool_methods(cls: type, *, own: bool = False) -> list[str]:
    """The problems of ``@tool`` methods ``cls`` inherits (``own``: or defines) from a class
    no ``@tool_registry`` built (a mixin): not tools of ``cls``, so refused, never dropped."""
    problems: list[str] = []
    found: set[str] = set() if own else set(cls.__dict__)
    for base in cls.__mro__ if own else cls.__mro__[1:]:
        for attr_name, attr in base.__dict__.items():
            if attr_name in found:
                continue  # attribute lookup finds another one first
            found.add(attr_name)
            value = cast(object, attr)
            if isinstance(value, ToolMethod) and value._built is None:
                owner = base.__qualname__
                problems.append(
                    f"{attr_name}: {owner}.{attr_name} is marked @tool, but {owner} is not a "
                    f"@tool_registry class, so it would not be a tool; decorate {owner} with "
                    f"@tool_registry too (its tools are then inherited)"
                )
    return problems


def attach_tools(
    cls: type,
    attrs: dict[str, Any],
    methods: Sequence[ToolMethod[Any, ..., Any]],
    records: Sequence[BuiltTool],
) -> None:
    """Give ``cls`` what was built for it, in one loop, only once all of it exists.

    ``records[i]`` is the tool of ``methods[i]``. An override keeps its base
    tool's place in ``TOOLS_ATTR``; new tools follow, in declaration order.
    """
    for attr_name, value in attrs.items():
        setattr(cls, attr_name, value)
    for method, record in zip(methods, records, strict=True):
        method._built = record
        method._call = record.call
    inherited = registered_tools(cls) or ()
    by_attr = {record.attr_name: record for record in records}
    ordered = [by_attr.pop(b.attr_name, b) for b in inherited]
    setattr(cls, TOOLS_ATTR, (*ordered, *by_attr.values()))
