"""How one tool parameter becomes a field of its ``Args`` model.

Shared by ``build`` (the model itself) and ``schema`` (which asks pydantic for
one field's schema at a time), so both describe exactly the same field.

Models often send ``null`` for "not given", so for an argument with a default
``null`` means that default (OpenAI strict mode relies on it: see ``_formats``).
Unless the type admits ``None`` itself, the field lets ``null`` through and
swaps it for the default; like a default, that value is not validated. The
schema does not mention ``null``: it shows the type, as for any default.

Where pydantic reads JSON more loosely than the schema says, the annotation
is rewritten first (``_as_argument``), at any depth of ``Annotated``, unions,
containers and type aliases (``aliases``), though not inside models, whose
fields are their own: ``Literal`` and Enum choices (``json_choices``), dict
keys (``json_keys``), and TypedDicts and dataclasses, closed as arguments
(``closed_classes``; in their fields, only the classes are closed in turn).
What is rewritten keeps its annotation (``Annotated[Movie, ...]``), so
``Args.model_fields`` shows the types as written, and a union member keeps
its name in errors (``'n.literal[1,2]'``), not the names of the validators
that read it.
"""

from __future__ import annotations

import copy
import threading
import types
from collections.abc import Callable, Hashable
from enum import Enum
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import typing_extensions
from pydantic import ConfigDict, Field, GetCoreSchemaHandler, Tag, TypeAdapter, ValidationInfo
from pydantic_core import CoreSchema, core_schema
from typing_extensions import final

from .._annotations import is_class
from .aliases import aliased, is_type_alias
from .closed_classes import closed, takes_the_holders_config
from .introspect import REQUIRED, DefaultFactory, ParameterSpec, annotation_key
from .json_choices import enum_as_argument, literal_as_argument
from .json_keys import MAPPINGS, key_as_argument

__all__ = ["ARGS_CONFIG", "NULL_MEANS_DEFAULT", "field_of", "fresh_default"]

# Marks the nullable core schema of such a field: `schema` writes only the type.
NULL_MEANS_DEFAULT = "llm_worker_null_means_default"

ARGS_CONFIG = ConfigDict(
    extra="forbid",  # gives `additionalProperties: false`, and rejects what it promises to
    strict=True,  # the schema says integer, so "5" is not one
    allow_inf_nan=False,  # NaN, Infinity and 1e400 are not JSON numbers (see _strict_json)
    defer_build=True,  # creating the model builds no validator; the first validation does
    protected_namespaces=(),  # `model_name` is a fine argument name
)
# What ARGS_CONFIG gives a TypedDict or dataclass argument without a config of its own.
_ARGUMENT_CLASS_CONFIG = ConfigDict(
    extra="forbid", strict=True, allow_inf_nan=False, protected_namespaces=()
)


def field_of(param: ParameterSpec) -> tuple[Any, Any]:
    """The ``(annotation, default)`` pair ``create_model`` takes for ``param``."""
    annotation, default, factory = param.annotation, param.default, param.default_factory
    annotation = _as_argument(annotation)
    if factory is not None:  # the Field(default_factory=...) in `annotation` stays in charge
        annotation = _null_means_default(annotation, _factory_marker(factory))
        return (annotation, Field(description=param.description))
    if default is REQUIRED:
        default = ...
    else:
        annotation = _null_means_default(annotation, _default_marker(default))
    return (annotation, Field(default, description=param.description))


def _null_means_default(annotation: Any, marker: _NullMeansDefault) -> Any:
    if _admits_none(annotation):
        return annotation
    return Annotated[annotation, marker]


@final
class _NullMeansDefault:
    """``Annotated`` metadata of one field: its validator reads ``null`` as the default.

    A new one is made for every field, and it is equal only to itself. That is
    what keeps fields apart: ``typing`` caches ``Annotated[...]`` by equality,
    and ``list[str | float] == list[float | str]``, so a marker shared by two
    fields would hand the second one the first one's type, union order and all
    (its validator would then disagree with its schema).
    """

    __slots__ = ("_wrap",)

    def __init__(self, wrap: Callable[[CoreSchema], CoreSchema]) -> None:
        self._wrap = wrap

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        return self._wrap(handler(source))

    def __repr__(self) -> str:
        return f"<null means the default, at {id(self):#x}>"


# -- reading JSON as the schema says -----------------------------------------------------


def _as_argument(annotation: Any) -> Any:
    """``annotation`` read from JSON as its schema says (see the module docstring)."""
    return _rewritten(annotation, every=True)


def _in_a_closed_class(annotation: Any) -> Any:
    """A field of a closed TypedDict or dataclass: only the classes in it are closed."""
    return _rewritten(annotation, every=False)


def _rewritten(annotation: Any, *, every: bool) -> Any:
    """``annotation`` with every rewrite (``every``), or with its classes closed only."""
    if is_class(annotation):
        return _class_as_argument(annotation, every=every)
    value = aliased(annotation)
    if value is not None:
        return _alias_as_argument(annotation, value, every=every)
    args = get_args(annotation)
    origin = get_origin(annotation)
    if origin is Literal:
        return literal_as_argument(annotation, args) if every else annotation
    if origin is Annotated:
        base = _rewritten(args[0], every=every)
        return annotation if base is args[0] else Annotated[(base, *annotation.__metadata__)]
    keyed = every and origin in MAPPINGS
    rewritten = tuple(
        key_as_argument(arg) if keyed and i == 0 else _rewritten(arg, every=every)
        for i, arg in enumerate(args)
    )
    if is_class(origin) and takes_the_holders_config(origin):  # Box[int]
        return closed(annotation, origin, rewritten, _ARGUMENT_CLASS_CONFIG, _in_a_closed_class)
    if all(new is old for new, old in zip(rewritten, args, strict=True)):
        return annotation
    if origin is Union or isinstance(annotation, types.UnionType):
        named = every and sum(arg is not _NoneType for arg in args) > 1  # named in errors
        members = (
            _named_as_written(new, old) if named and new is not old else new
            for new, old in zip(rewritten, args, strict=True)
        )
        return Union[tuple(members)]  # noqa: UP007 (the members are not all types)
    if isinstance(annotation, types.GenericAlias):
        return types.GenericAlias(origin, rewritten)
    copy_with = getattr(annotation, "copy_with", None)  # typing's: List[...], Sequence[...]
    return annotation if copy_with is None else copy_with(rewritten)


def _class_as_argument(cls: type[object], *, every: bool) -> Any:
    if issubclass(cls, Enum):
        return enum_as_argument(cls) if every else cls
    if takes_the_holders_config(cls):
        return closed(cls, cls, (), _ARGUMENT_CLASS_CONFIG, _in_a_closed_class)
    return cls


# -- type aliases -------------------------------------------------------------------------

# A TypeAliasType -> what it is as an argument (and in a closed class's field), made once:
# a TypeAliasType of the same name, so its $defs entry is named as before.
_ALIASES: dict[tuple[Any, bool], Any] = {}
_rewriting = threading.local()  # the aliases being rewritten, in this thread


def _alias_as_argument(alias: Any, value: Any, *, every: bool) -> Any:
    key = (alias, every)
    done = _ALIASES.get(key) if is_type_alias(alias) else None
    if done is not None:
        return done
    underway: set[tuple[int, bool]] = getattr(_rewriting, "aliases", None) or set()
    _rewriting.aliases = underway
    token = (id(get_origin(alias) or alias), every)  # Pair for Pair[int]
    if token in underway:
        return alias  # an alias of itself (type Tree = list[Tree] | int): read as it is within
    underway.add(token)
    try:
        new = _rewritten(value, every=every)
    finally:
        underway.discard(token)
    if new is value:
        return alias
    if not is_type_alias(alias):  # a NewType, a generic alias given its arguments
        return Annotated[alias, _ValidatedAs(new)]
    return _ALIASES.setdefault(key, Annotated[alias, _ValidatedAs(_renamed(alias, new))])


def _renamed(alias: Any, value: Any) -> Any:
    """A ``TypeAliasType`` of ``value`` named and placed as ``alias`` (its text annotations
    are resolved in its module); ``value`` itself where it cannot be placed so."""
    new = _make_alias(alias.__name__, value)
    try:
        new.__module__ = alias.__module__
    except (AttributeError, TypeError):
        return value
    return new


_make_alias: Any = typing_extensions.TypeAliasType  # not `X = TypeAliasType("X", ...)`


@final
class _ValidatedAs:
    """``Annotated`` metadata of a type alias: validated (and described) as ``replacement``,
    the alias rewritten. The annotation stays the alias."""

    __slots__ = ("_replacement",)

    def __init__(self, replacement: Any) -> None:
        self._replacement = replacement

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        return handler.generate_schema(self._replacement)

    def __repr__(self) -> str:
        return f"<validated as {self._replacement!r}>"


# -- the names of union members in errors ---------------------------------------------------


def _named_as_written(member: Any, written: Any) -> Any:
    """Union member ``member``, rewritten from ``written``, named in errors as ``written``."""
    if any(isinstance(meta, Tag) for meta in getattr(written, "__metadata__", ())):
        return member  # the user's Tag names it (and may pick it: Discriminator)
    return Annotated[member, _NamedAsWritten(written)]


@final
class _NamedAsWritten:
    """``Annotated`` metadata of a rewritten union member: pydantic-core names a union's
    members in the locations of their errors, and this one after its validators
    (``json-or-python[...]``), so it is given the name of the member as written
    (``literal[1,2]``), as pydantic's ``Tag`` gives one."""

    __slots__ = ("_written",)

    def __init__(self, written: Any) -> None:
        self._written = written

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        name = _validator_name(self._written)
        if name is None:
            return handler(source)
        return Tag(name).__get_pydantic_core_schema__(source, handler)

    def __repr__(self) -> str:
        return f"<named {self._written!r} in errors>"


_VALIDATOR_NAMES: dict[Hashable, str | None] = {}


def _validator_name(annotation: Any) -> str | None:
    """The name pydantic-core gives a validator of ``annotation`` (made once per type)."""
    try:
        key = annotation_key(annotation)
    except TypeError:  # unhashable metadata: not kept
        return _name_of_validator(annotation)
    try:
        return _VALIDATOR_NAMES[key]
    except KeyError:
        return _VALIDATOR_NAMES.setdefault(key, _name_of_validator(annotation))


def _name_of_validator(annotation: Any) -> str | None:
    try:
        return str(TypeAdapter(annotation).validator.title)
    except Exception:  # a type only the whole model resolves: pydantic-core's name stays
        return None


_IMMUTABLE_DEFAULTS = (str, int, float, bool, tuple, frozenset)


def fresh_default(default: Any) -> Any:
    """``default`` for one call: itself if immutable, else a deep copy (as pydantic copies)."""
    return default if type(default) in _IMMUTABLE_DEFAULTS else copy.deepcopy(default)


def _default_marker(default: Any) -> _NullMeansDefault:
    if default is None:  # `x: int = None`: the type would refuse the default, so skip it
        return _NullMeansDefault(_nullable)
    immutable = type(default) in _IMMUTABLE_DEFAULTS  # no copy needed

    def null_means_default(value: Any) -> Any:
        if value is not None:
            return value
        return default if immutable else copy.deepcopy(default)

    return _NullMeansDefault(
        lambda inner: core_schema.no_info_after_validator_function(
            null_means_default, _nullable(inner)
        )
    )


def _factory_marker(factory: DefaultFactory) -> _NullMeansDefault:
    def null_means_default(value: Any, info: ValidationInfo) -> Any:
        return factory(info.data) if value is None else value

    return _NullMeansDefault(
        lambda inner: core_schema.with_info_after_validator_function(
            null_means_default, _nullable(inner)
        )
    )


def _nullable(inner: CoreSchema) -> CoreSchema:
    """``inner``, letting ``null`` through unvalidated; its JSON Schema stays ``inner``'s.

    Not a wrap or before validator: those hand ``inner`` a Python object, which
    strict mode then refuses where the JSON text was valid (``"2024-01-01"`` for
    a date). The swap for the default happens after, on ``None``.
    """
    return core_schema.nullable_schema(inner, metadata={NULL_MEANS_DEFAULT: True})


_NoneType = type(None)


def _admits_none(annotation: Any) -> bool:
    """Whether ``None`` is a valid value of ``annotation``."""
    if annotation is None or annotation is _NoneType or annotation is Any or annotation is object:
        return True
    if isinstance(annotation, types.UnionType):  # X | None, the common case
        return any(arg is _NoneType or _admits_none(arg) for arg in annotation.__args__)
    if is_class(annotation):
        return False
    origin = get_origin(annotation)
    if origin is Annotated:
        return _admits_none(get_args(annotation)[0])
    if origin is Union:
        return any(_admits_none(arg) for arg in get_args(annotation))
    if origin is Literal:
        return None in get_args(annotation)
    value = aliased(annotation)  # TypeAliasType, NewType
    return value is not None and _admits_none(value)
