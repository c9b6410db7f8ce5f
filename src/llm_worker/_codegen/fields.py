"""How one tool parameter becomes a field of its ``Args`` model.

Shared by ``build`` (the model itself) and ``schema`` (which asks pydantic for
one field's schema at a time), so both describe exactly the same field.

Models often send ``null`` for "not given", so for an argument with a default
``null`` means that default (OpenAI strict mode relies on it: see ``_formats``).
Unless the type admits ``None`` itself, the field lets ``null`` through and
swaps it for the default; like a default, that value is not validated. The
schema does not mention ``null``: it shows the type, as for any default.

Where pydantic reads JSON more loosely than the schema says, the annotation
is rewritten first (``_as_argument``), at any depth of ``Annotated``, unions
and containers, though not inside models, whose fields are their own:
``Literal`` and Enum choices (``json_choices``), dict keys (``json_keys``), and
TypedDicts and dataclasses, closed as arguments (``closed_classes``).
"""

from __future__ import annotations

import copy
import types
from collections.abc import Callable
from enum import Enum
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import ConfigDict, Field, GetCoreSchemaHandler, ValidationInfo
from pydantic_core import CoreSchema, core_schema
from typing_extensions import final

from .closed_classes import closed, takes_the_holders_config
from .introspect import REQUIRED, DefaultFactory, ParameterSpec
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
    if isinstance(annotation, type):
        return _class_as_argument(annotation)
    args = get_args(annotation)
    origin = get_origin(annotation)
    if origin is Literal:
        return literal_as_argument(annotation, args)
    if origin is Annotated:
        base = _as_argument(args[0])
        return annotation if base is args[0] else Annotated[(base, *annotation.__metadata__)]
    keyed = origin in MAPPINGS
    rewritten = tuple(
        key_as_argument(arg) if keyed and i == 0 else _as_argument(arg)
        for i, arg in enumerate(args)
    )
    if all(new is old for new, old in zip(rewritten, args, strict=True)):
        return annotation
    if origin is Union or isinstance(annotation, types.UnionType):
        return Union[rewritten]  # noqa: UP007 (the members are not all types)
    if isinstance(annotation, types.GenericAlias):
        return types.GenericAlias(origin, rewritten)
    copy_with = getattr(annotation, "copy_with", None)  # typing's: List[...], Sequence[...]
    return annotation if copy_with is None else copy_with(rewritten)


def _class_as_argument(cls: type[object]) -> Any:
    if issubclass(cls, Enum):
        return enum_as_argument(cls)
    if takes_the_holders_config(cls):
        return closed(cls, _ARGUMENT_CLASS_CONFIG)
    return cls


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
    if isinstance(annotation, type):
        return False
    origin = get_origin(annotation)
    if origin is Annotated:
        return _admits_none(get_args(annotation)[0])
    if origin is Union:
        return any(_admits_none(arg) for arg in get_args(annotation))
    if origin is Literal:
        return None in get_args(annotation)
    aliased = getattr(annotation, "__value__", None) or getattr(annotation, "__supertype__", None)
    return aliased is not None and _admits_none(aliased)  # TypeAliasType, NewType
