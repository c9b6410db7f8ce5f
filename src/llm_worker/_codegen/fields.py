"""How one tool parameter becomes a field of its ``Args`` model.

Shared by ``build`` (the model itself) and ``schema`` (which asks pydantic for
one field's schema at a time), so both describe exactly the same field.
"""

from __future__ import annotations

import copy
import types
from collections.abc import Callable
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BeforeValidator, ConfigDict, Field

from .introspect import REQUIRED, ParameterSpec

__all__ = ["ARGS_CONFIG", "field_of"]

ARGS_CONFIG = ConfigDict(
    extra="forbid",  # gives `additionalProperties: false`, and rejects what it promises to
    strict=True,  # the schema says integer, so "5" is not one
    defer_build=True,  # validator and schema are built on first use: cheap imports
    protected_namespaces=(),  # `model_name` is a fine argument name
)


def field_of(param: ParameterSpec) -> tuple[Any, Any]:
    """The ``(annotation, default)`` pair ``create_model`` takes for ``param``."""
    annotation, default, factory = param.annotation, param.default, param.default_factory
    if factory is not None:
        annotation = _null_means_default(annotation, factory)
        if param.description is None:
            return (annotation, Field(default_factory=factory))
        return (annotation, Field(default_factory=factory, description=param.description))
    if default is REQUIRED:
        default = ...
    else:
        annotation = _null_means_default(annotation, _default_getter(default))
    if param.description is None:
        return (annotation, default)  # a FieldInfo costs time at import; pydantic makes one
    return (annotation, Field(default, description=param.description))


def _null_means_default(annotation: Any, get_default: Callable[[], Any]) -> Any:
    # Models often send null for "not given"; for an argument with a default that
    # is what it means. (OpenAI strict mode relies on it: see _formats.)
    if _admits_none(annotation):
        return annotation

    def null_means_default(value: Any) -> Any:
        return get_default() if value is None else value

    return Annotated[annotation, BeforeValidator(null_means_default)]


_IMMUTABLE_DEFAULTS = (str, int, float, bool, tuple, frozenset)


def _default_getter(default: Any) -> Callable[[], Any]:
    if default is None or type(default) in _IMMUTABLE_DEFAULTS:
        return lambda: default  # no copy needed
    return lambda: copy.deepcopy(default)


def _admits_none(annotation: Any) -> bool:
    if annotation in (None, type(None), Any, object):
        return True
    origin = get_origin(annotation)
    if origin is Annotated:
        return _admits_none(get_args(annotation)[0])
    if origin is Union or isinstance(annotation, types.UnionType):
        return any(_admits_none(arg) for arg in get_args(annotation))
    if origin is Literal:
        return None in get_args(annotation)
    return False
