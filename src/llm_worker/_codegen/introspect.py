"""Stage 1: read one ``@tool`` method (signature, type hints, docstring) into a ``MethodSpec``.

Nothing the registry keeps is built here (a type pydantic might refuse is tried
once on a throwaway model). Problems are appended to ``errors`` as one line
each, naming the method and the fix, so the registry can report all of them at once.
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import dataclasses
import inspect
import re
import types
import typing
from collections.abc import Callable, Collection, Hashable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, cast, get_args, get_origin

import typing_extensions
from pydantic import create_model
from pydantic.fields import FieldInfo

from .._annotations import is_class
from .._context import ToolContext
from .._docstrings import parse_docstring
from .._options import Description, ToolOptions
from .._tool_names import is_valid_tool_name
from .closed_classes import closing_problem
from .json_keys import mapping_key_problem

__all__ = [
    "REQUIRED",
    "DefaultFactory",
    "MethodSpec",
    "ParameterSpec",
    "annotation_key",
    "has_field_info",
    "introspect_method",
    "is_async_function",
    "unwrapped",
]


REQUIRED: Any = inspect.Parameter.empty

DefaultFactory = Callable[[dict[str, Any]], Any]


@dataclass(frozen=True)
class ParameterSpec:
    """One argument of a tool, ready to become a pydantic field."""

    name: str
    annotation: Any  # resolved; Description taken out into ``description``
    default: Any  # REQUIRED when the parameter has no default (or has default_factory)
    description: str | None
    # From Field(default_factory=...), which stays in ``annotation``; given the
    # arguments validated so far, as pydantic gives them to a factory that takes them.
    default_factory: DefaultFactory | None = None


@dataclass(frozen=True)
class MethodSpec:
    """Everything the registry needs to know about one ``@tool`` method."""

    attr_name: str
    tool_name: str
    func: Callable[..., Any]
    parameters: tuple[ParameterSpec, ...]
    description: str
    is_async: bool
    options: ToolOptions
    # The parameter annotated ToolContext[Deps], if any (not an argument), and its Deps.
    context_param: str | None = None
    context_deps: Any = None
    # The return annotation, resolved (None if there is none or it cannot be resolved).
    returns: Any = None


def introspect_method(
    cls: type,
    attr_name: str,
    func: Callable[..., Any],
    options: ToolOptions,
    errors: list[str],
    defining_locals: Mapping[str, Any] | None = None,
) -> MethodSpec | None:
    """Read ``func`` (a method of ``cls``) or append its problems to ``errors``;
    ``defining_locals``: the names of the function ``cls`` is defined in."""
    start = len(errors)
    tool_name = options.name if options.name is not None else attr_name
    if not is_valid_tool_name(tool_name):  # what every provider accepts
        errors.append(
            f"{attr_name}: tool name {tool_name!r} is not valid; use 1-64 letters, digits, "
            f"'_' or '-' (what model providers accept)"
        )
    if _is_generator_function(func):
        errors.append(f"{attr_name}: generator methods cannot be tools; return a list instead")
    try:
        names: Collection[str] | None = inspect.signature(func).parameters
    except (TypeError, ValueError):  # reported with the parameters
        names = None
    description, doc_params = parse_docstring(
        func.__doc__, where=f"{cls.__qualname__}.{attr_name}", source=func, parameters=names
    )
    context: dict[str, Any] = {}
    # A functools.wraps wrapper from another module: the annotations are the wrapped
    # function's, written in its module.
    module: dict[str, Any] = getattr(unwrapped(func), "__globals__", {})
    scope = _annotation_scope(cls, attr_name, module, defining_locals)
    parameters = _read_parameters(attr_name, func, doc_params, errors, context, module, scope)
    if len(errors) > start or parameters is None:
        return None
    return MethodSpec(
        attr_name=attr_name,
        tool_name=tool_name,
        func=func,
        parameters=parameters,
        description=description if description is not None else f"Tool: {tool_name}",
        is_async=inspect.iscoroutinefunction(func),
        options=options,
        context_param=context.get("name"),
        context_deps=context.get("deps"),
        returns=context.get("returns"),
    )


def _annotation_scope(
    cls: type, attr_name: str, module: Mapping[str, Any], defining_locals: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The names a method's annotations written as text see before its module's.

    Python's order at the ``def``: the class body's names bound above the method,
    then the defining function's (and the class itself, which its module cannot
    see yet); the module and builtins come after. The names bound from the method
    on are only forward references (``x: Kind``, ``Kind`` defined further down),
    found when nothing else has the name: a tool named ``list`` or ``date`` hides
    neither the builtin nor the import, as when Python evaluates the annotations.
    """
    body = vars(cls)
    names = list(body)  # in the order the class body bound them
    above = names.index(attr_name) if attr_name in body else len(names)
    forward = {
        name: body[name]
        for name in names[above:]
        if name not in module and name not in builtins.__dict__
    }
    earlier = {name: body[name] for name in names[:above]}
    return {**forward, **(defining_locals or {}), cls.__name__: cls, **earlier}


def is_async_function(func: Callable[..., Any]) -> bool:
    """Whether ``func`` is an ``async def``, a wrapper of one (``functools.wraps``), or an
    object whose ``__call__`` is one."""
    if inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(unwrapped(func)):
        return True
    call = getattr(type(func), "__call__", None)  # noqa: B004 (an object's own __call__)
    return not inspect.isfunction(func) and inspect.iscoroutinefunction(call)


def _is_generator_function(func: Callable[..., Any]) -> bool:
    # The function itself: a wrapper of a generator may return a list of it.
    return inspect.isasyncgenfunction(func) or inspect.isgeneratorfunction(func)


def unwrapped(func: Callable[..., Any]) -> Callable[..., Any]:
    """What ``functools.wraps`` decorators wrap, innermost (``func`` itself if none)."""
    try:
        return cast("Callable[..., Any]", inspect.unwrap(func))
    except ValueError:  # a __wrapped__ cycle
        return func


def _read_parameters(
    attr_name: str,
    func: Callable[..., Any],
    doc_params: dict[str, str],
    errors: list[str],
    context: dict[str, Any],
    module: dict[str, Any],
    scope: dict[str, Any],
) -> tuple[ParameterSpec, ...] | None:
    """The arguments of ``func``; its ``ToolContext`` parameter, if any, and its return
    annotation go to ``context``. Annotations that are text resolve in ``scope``, then
    ``module`` (the globals of the function that wrote them)."""
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        errors.append(f"{attr_name}: cannot read its signature ({exc})")
        return None
    params = list(signature.parameters.values())
    if not params or params[0].kind not in (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
    ):
        errors.append(f"{attr_name}: a tool method must take 'self' as its first parameter")
        return None
    hints = _resolve_hints(attr_name, func, params[1:], errors, module, scope)
    context["returns"] = hints.get("return")
    specs: list[ParameterSpec] = []
    for param in params[1:]:
        problem = _parameter_kind_problem(param)
        if problem is not None:
            errors.append(f"{attr_name}: {problem}")
            continue
        if param.name not in hints:
            if param.annotation is inspect.Parameter.empty:
                errors.append(
                    f"{attr_name}: parameter {param.name!r} has no type annotation "
                    f"(add one, e.g. {param.name}: str)"
                )
            continue  # unresolvable annotations were reported by _resolve_hints
        found, deps = _tool_context(hints[param.name])
        if found:
            if "name" in context:
                errors.append(
                    f"{attr_name}: parameters {context['name']!r} and {param.name!r} both "
                    f"take the ToolContext; keep one"
                )
            context.update(name=param.name, deps=deps)
            continue
        try:
            hint, default, default_factory = _read_default(hints[param.name], param.default)
        except Exception as exc:  # pydantic refuses the Field(...) combination
            errors.append(f"{attr_name}: parameter {param.name!r}: {_pydantic_reason(exc)}")
            continue
        alias = _alias(hint)
        if alias is not None:
            errors.append(
                f"{attr_name}: parameter {param.name!r} has the alias {alias!r}; a tool's "
                f"arguments are named by its parameters, so rename the parameter instead"
            )
            continue
        annotation, description = _split_description(hint)
        if description is None:
            description = doc_params.get(param.name)
        qualifier = _class_qualifier(annotation)
        if qualifier is not None:
            errors.append(
                f"{attr_name}: parameter {param.name!r} is marked {qualifier}, which only "
                f"class attributes take; drop it from the annotation"
            )
            continue
        type_problem = _unsupported_type(annotation)
        if type_problem is not None:
            errors.append(
                f"{attr_name}: parameter {param.name!r} has type {_type_name(annotation)}, "
                f"which pydantic cannot validate or describe in JSON Schema ({type_problem})"
            )
            continue
        argument_problem = mapping_key_problem(annotation) or closing_problem(annotation)
        if argument_problem is not None:
            errors.append(f"{attr_name}: parameter {param.name!r}: {argument_problem}")
            continue
        specs.append(ParameterSpec(param.name, annotation, default, description, default_factory))
    return tuple(specs)


def _tool_context(hint: Any) -> tuple[bool, Any]:
    """Whether ``hint`` is ``ToolContext``, ``ToolContext[Deps]`` (or either ``| None``),
    and its ``Deps`` (``None`` when not given)."""
    if hint is ToolContext:
        return True, None
    if get_origin(hint) is ToolContext:
        return True, get_args(hint)[0]
    if isinstance(hint, types.UnionType) or get_origin(hint) is typing.Union:
        members = [arg for arg in get_args(hint) if arg is not type(None)]
        if len(members) == 1:
            return _tool_context(members[0])
    return False, None


def _read_default(hint: Any, default: Any) -> tuple[Any, Any, DefaultFactory | None]:
    """``(annotation, default, default_factory)`` as pydantic reads them; may raise.

    ``x: T = Field(5, ge=1)`` means ``x: Annotated[T, Field(5, ge=1)]``, as in
    pydantic: the ``FieldInfo`` joins the metadata, where it outranks earlier ones.
    """
    if isinstance(default, FieldInfo):
        annotated: Any = Annotated[hint, default]
        if not _made_for(annotated, hint):  # one Field object, defaulting two parameters
            annotated = Annotated[hint, copy.copy(default)]  # a FieldInfo equals only itself
        hint, default = annotated, REQUIRED
    if not has_field_info(hint):
        return hint, default, None
    if default is REQUIRED:
        info = FieldInfo.from_annotation(hint)
    else:
        info = FieldInfo.from_annotated_attribute(hint, default)
    factory = info.default_factory
    if factory is None:
        return hint, (REQUIRED if info.is_required() else info.default), None
    if getattr(info, "default_factory_takes_validated_data", False):  # pydantic >= 2.10
        return hint, REQUIRED, cast("DefaultFactory", factory)
    return hint, REQUIRED, lambda _validated_data: cast("Callable[[], Any]", factory)()


def _class_qualifier(annotation: Any) -> str | None:
    base = get_args(annotation)[0] if get_origin(annotation) is Annotated else annotation
    for qualifier, name in ((typing.ClassVar, "ClassVar"), (typing.Final, "Final")):
        if base is qualifier or get_origin(base) is qualifier:
            return name
    if isinstance(base, dataclasses.InitVar):
        return "InitVar"
    return None


def _alias(annotation: Any) -> object:
    for meta in getattr(annotation, "__metadata__", ()):
        if isinstance(meta, FieldInfo) and (meta.alias or meta.validation_alias) is not None:
            return meta.alias or meta.validation_alias
    return None


def annotation_key(annotation: Any) -> Hashable:
    """A key equal for annotations pydantic reads alike; ``TypeError`` if there is none.

    The annotation itself, but for ``Field(...)`` metadata: a ``FieldInfo`` is
    equal only to itself, so ``Annotated[int, Field(ge=1)]`` written in two
    places would never match. Its attributes stand in for it, each by value
    (lists and dicts as tuples) and by ``repr``: values that compare equal and
    print alike are taken as alike (``ge=1`` and ``ge=True`` print apart).
    """
    if not has_field_info(annotation):
        key: Hashable = annotation
    else:
        key = (
            Annotated,
            annotation.__origin__,
            tuple(
                _field_info_key(m) if isinstance(m, FieldInfo) else m
                for m in annotation.__metadata__
            ),
        )
    hash(key)
    return key


def _field_info_key(info: FieldInfo) -> Hashable:
    # Which attributes were given matters too: a later Field(description=None) overrides.
    given = tuple(sorted(getattr(info, "_attributes_set", ())))
    values = tuple((name, _by_value(value), repr(value)) for name, value in info.__repr_args__())
    return (FieldInfo, values, given)


def _by_value(value: object) -> object:
    if type(value) in (list, tuple):
        return (type(value), tuple(_by_value(item) for item in cast("list[object]", value)))
    if type(value) is dict:
        items = cast("dict[object, object]", value).items()
        return (dict, tuple((key, _by_value(item)) for key, item in items))
    return value


def has_field_info(annotation: Any) -> bool:
    """Whether ``annotation`` is ``Annotated[...]`` with a pydantic ``Field(...)`` in it."""
    metadata: tuple[Any, ...] = getattr(annotation, "__metadata__", ())
    return any(isinstance(m, FieldInfo) for m in metadata)


def _parameter_kind_problem(param: inspect.Parameter) -> str | None:
    if param.kind is inspect.Parameter.VAR_POSITIONAL:
        return f"*{param.name} is not supported; a tool takes named arguments only"
    if param.kind is inspect.Parameter.VAR_KEYWORD:
        return f"**{param.name} is not supported; a tool takes named arguments only"
    if param.kind is inspect.Parameter.POSITIONAL_ONLY:
        return f"parameter {param.name!r} is positional-only; tools pass arguments by name"
    if param.name.startswith("_") or param.name == "model_config":
        return (
            f"parameter {param.name!r} cannot be an argument name (pydantic reserves it); rename it"
        )
    return None


def _resolve_hints(
    attr_name: str,
    func: Callable[..., Any],
    params: list[inspect.Parameter],
    errors: list[str],
    globalns: dict[str, Any],
    localns: dict[str, Any],
) -> dict[str, Any]:
    # typing_extensions': typing's on Python 3.10 makes `d: date = None` Optional[date].
    try:
        return typing_extensions.get_type_hints(func, globalns, localns, include_extras=True)
    except Exception:
        pass
    # Resolve one parameter at a time, to say which annotation failed and why.
    hints: dict[str, Any] = {}
    for param in params:
        if param.annotation is inspect.Parameter.empty:
            continue
        holder: Callable[[], None] = lambda: None  # noqa: E731
        holder.__annotations__ = {param.name: param.annotation}
        try:
            hints.update(
                typing_extensions.get_type_hints(holder, globalns, localns, include_extras=True)
            )
        except Exception as exc:
            errors.append(
                f"{attr_name}: cannot resolve the annotation of parameter {param.name!r} "
                f"({type(exc).__name__}: {exc}); define or import it before the class"
            )
    returns = getattr(func, "__annotations__", {}).get("return")
    if returns is not None:
        holder = lambda: None  # noqa: E731
        holder.__annotations__ = {"return": returns}
        # The result's schema is only for MCP hosts: an unresolvable one is just left out.
        with contextlib.suppress(Exception):
            hints.update(
                typing_extensions.get_type_hints(holder, globalns, localns, include_extras=True)
            )
    return hints


def _split_description(annotation: Any) -> tuple[Any, str | None]:
    """Take the description out of an ``Annotated`` type.

    The first that exists: ``Description("...")``, ``Field(description=...)``,
    a plain string (``Annotated[int, "First number"]``, as the OpenAI Agents
    SDK, FastMCP and LangChain read it); within one kind, the last one written.
    ``Description`` and the strings leave the annotation; ``Field`` stays in it.
    """
    if get_origin(annotation) is not Annotated:
        return annotation, None
    base, *metadata = get_args(annotation)
    described = [m.text for m in metadata if isinstance(m, Description)]
    field_descriptions = [
        m.description for m in metadata if isinstance(m, FieldInfo) and m.description is not None
    ]
    strings = [m for m in metadata if isinstance(m, str)]
    rest = [m for m in metadata if not isinstance(m, (Description, str))]
    found = described or field_descriptions or strings
    description = found[-1] if found else None
    if not rest:
        return base, description
    rebuilt: Any = Annotated[(base, *rest)]
    if not _made_for(rebuilt, base):
        return annotation, description  # the user's own: pydantic reads Description too
    return rebuilt, description


def _made_for(annotated: Any, base: Any) -> bool:
    """Whether ``annotated``, just made as ``Annotated[base, ...]``, is about ``base`` itself.

    ``typing`` caches ``Annotated[...]`` by equality, and ``list[str | float] ==
    list[float | str]``: with metadata equal to an earlier one's, it hands back
    the alias made for the other type, union order and all.
    """
    inner = get_args(base)[0] if get_origin(base) is Annotated else base
    return cast(object, annotated.__origin__) is inner


# Types pydantic is known to validate and describe; anything else is tried once.
_KNOWN_LEAVES: frozenset[Any] = frozenset({str, int, float, bool, bytes, type(None), None, Any})
_KNOWN_CONTAINERS: frozenset[Any] = frozenset(
    {list, set, frozenset, tuple, dict, typing.Union, typing.Literal}
)
_checked_types: dict[Any, str | None] = {}


def _unsupported_type(annotation: Any) -> str | None:
    """Why pydantic can't handle ``annotation``, or ``None`` if it can (memoised).

    Plain leaves and standard containers are checked structurally, which costs
    nothing; any other type is given to pydantic, since building its schema is
    the only real test.
    """
    try:
        key = annotation_key(annotation)
    except TypeError:  # unhashable metadata inside Annotated
        return _try_with_pydantic(annotation)
    try:
        return _checked_types[key]
    except KeyError:
        problem = _checked_types[key] = _check_type(annotation)
        return problem


def _check_type(annotation: Any) -> str | None:
    if annotation in _KNOWN_LEAVES:
        return None
    origin = get_origin(annotation)
    if origin is typing.Literal:
        return None
    if origin in _KNOWN_CONTAINERS or _is_union_type(annotation):
        for arg in get_args(annotation):
            if arg is not Ellipsis:
                problem = _unsupported_type(arg)
                if problem is not None:
                    return problem
        return None
    return _try_with_pydantic(annotation)


def _try_with_pydantic(annotation: Any) -> str | None:
    # A throwaway one-field model, not a TypeAdapter: Field(...) metadata such as
    # deprecated= belongs on a field, and is refused anywhere else.
    try:
        create_model("Check", x=annotation).model_json_schema()
    except Exception as exc:
        return _pydantic_reason(exc)
    return None


def _is_union_type(annotation: Any) -> bool:
    return isinstance(annotation, types.UnionType)


def _type_name(annotation: Any) -> str:
    if is_class(annotation):
        return annotation.__qualname__
    if get_origin(annotation) is Annotated:
        base, *metadata = get_args(annotation)
        parts = [_type_name(base), *(_metadata_text(m) for m in metadata)]
        return f"Annotated[{', '.join(parts)}]"
    return repr(annotation).replace("typing.", "").replace("collections.abc.", "")


def _metadata_text(meta: object) -> str:
    """``Field(...)`` as it was written (pydantic's repr shows its internals instead)."""
    if not isinstance(meta, FieldInfo):
        return repr(meta)
    given: dict[str, object] = dict(getattr(meta, "_attributes_set", {}))
    for item in meta.metadata:
        if dataclasses.is_dataclass(item) and not isinstance(item, type):
            given.update(dataclasses.asdict(item))
        else:
            given.update(vars(item))
    return f"Field({', '.join(f'{k}={v!r}' for k, v in given.items())})"


# Lines of pydantic's errors that only say where it was building, or point to its docs.
_WRAPPER_LINE = re.compile(
    r"^(?:\w+Error: )?(?:Error building \".*\" validator:|Field \".*\":)$|^\^+$"
    r"|^For further information visit "
)


def _pydantic_reason(exc: BaseException) -> str:
    """pydantic's reason on one line: its own words, without the 'Error building' frames."""
    lines = [line.strip() for line in str(exc).strip().splitlines()]
    kept = [line for line in lines if line and not _WRAPPER_LINE.match(line)]
    reason = " ".join(line.removeprefix("SchemaError: ") for line in kept)
    return reason or type(exc).__name__
