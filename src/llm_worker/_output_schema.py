"""The JSON Schema of what a tool or a run returns, always an object, and its validation.

MCP's ``outputSchema`` and ``structuredContent``, and the providers' structured
output, want an object at the top. A type whose schema is not one (``int``,
``list[str]``, a union) is wrapped in one: ``{"result": <its schema>}``, marked
``"x-llm-worker-wrapped": true`` so whoever reads the schema knows to wrap the
value (and unwrap it) the same way. This module imports pydantic's machinery:
the decorators and the Worker import it only when a schema is asked for.

A schema is of one of pydantic's two modes, and each is what its reader is given:
a run's answer is *validated* (the model writes it, the worker reads it), so the
model is sent the validation-mode schema, whose keys are the ones validation takes
(a field's ``validation_alias``, no ``computed_field``); a tool's result is
*serialized* (the tool returns it, a client reads its JSON), so its
``outputSchema`` is the serialization-mode one (``serialization_alias``, computed
fields included).
"""

from __future__ import annotations

import functools
import types
import typing
import warnings
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, TypeAdapter, create_model
from pydantic_core import SchemaValidator

from ._annotations import is_class
from ._content import DataPart, MediaPart, TextPart, ToolReturn
from ._fail_fast import SCREENED_FROM, screen_of
from ._stable_schema import StableJsonSchema

__all__ = ["WRAPPED", "OutputShape", "SchemaMode", "output_shape", "tool_output_schema"]

WRAPPED = "x-llm-worker-wrapped"
"""The schema keyword marking a non-object result wrapped as ``{"result": value}``."""

SchemaMode = Literal["validation", "serialization"]
"""Which of pydantic's JSON Schemas of a type: of what it validates, or of what it dumps."""

_NOT_STRUCTURED: frozenset[Any] = frozenset(
    {str, type(None), None, Any, object, ToolReturn, TextPart, MediaPart, DataPart}
)


@dataclass(frozen=True)
class OutputShape:
    """An output type as an object schema, and the validator of values of that type."""

    output_type: Any
    schema: dict[str, Any]
    wrapped: bool
    _adapter: TypeAdapter[Any]

    def validate_json(self, text: str) -> Any:
        """The value ``text`` (the object the schema describes) holds; raises
        ``pydantic.ValidationError`` (a long text's first errors, with bounded work)."""
        screen = self._screen if len(text) > SCREENED_FROM else None
        if screen is not None:
            screen.validate_json(text)
        value = self._adapter.validate_json(text)
        return value.result if self.wrapped else value

    @functools.cached_property
    def _screen(self) -> SchemaValidator | None:
        return screen_of(self._adapter.core_schema)

    @functools.cached_property
    def admits_non_finite(self) -> bool:
        """Whether a value pydantic validated may hold NaN or infinity (JSON holds neither)."""
        from ._codegen.non_finite import admits_non_finite

        return admits_non_finite(self._adapter.core_schema)


def output_shape(output_type: Any, *, mode: SchemaMode) -> OutputShape:
    """The ``OutputShape`` of ``output_type``, its schema of ``mode`` ("validation" for what a
    model is asked to answer, "serialization" for what a tool returns); raises ``TypeError``
    naming the type if pydantic cannot validate or describe it."""
    try:
        hash(output_type)
    except TypeError:  # unhashable (an Annotated with a dict...): not cached
        return _build_shape(output_type, mode)
    return _shape(output_type, mode)


@functools.lru_cache(maxsize=256)
def _shape(output_type: Any, mode: SchemaMode) -> OutputShape:
    return _build_shape(output_type, mode)


def _build_shape(output_type: Any, mode: SchemaMode) -> OutputShape:
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(output_type)
        schema = adapter.json_schema(mode=mode, schema_generator=StableJsonSchema)
    except Exception as exc:
        raise TypeError(
            f"output type {_type_name(output_type)} cannot be validated or described in "
            f"JSON Schema by pydantic: {exc}"
        ) from exc
    if schema.get("type") == "object":
        return OutputShape(output_type, schema, False, adapter)
    model: type[BaseModel] = create_model("Output", result=(output_type, ...))
    wrapper: TypeAdapter[Any] = TypeAdapter(model)
    inner = wrapper.json_schema(mode=mode, schema_generator=StableJsonSchema)
    inner.pop("title", None)
    inner[WRAPPED] = True
    properties = inner.get("properties", {})
    if isinstance(properties.get("result"), dict):
        properties["result"].pop("title", None)
    return OutputShape(output_type, inner, True, wrapper)


def tool_output_schema(returns: Any, method: str = "the tool") -> dict[str, Any] | None:
    """The ``outputSchema`` of a tool method returning ``returns``: ``None`` for text (any type
    that may be a ``str``), for rich results, for no annotation, and for types pydantic cannot
    describe."""
    if returns in _NOT_STRUCTURED or _mentions_content(returns) or _may_be_text(returns):
        return None
    try:
        return output_shape(returns, mode="serialization").schema
    except TypeError as exc:
        if getattr(exc.__cause__, "code", None) == "typed-dict-version":
            # A structure meant to be described, refused on Python < 3.12 only: say so, or
            # the tool silently has no outputSchema there and one on 3.12.
            warnings.warn(
                f"{method} returns {_type_name(returns)}, a typing.TypedDict, which pydantic "
                f"describes on Python 3.12+ only: it has no output schema here (use "
                f"typing_extensions.TypedDict)",
                UserWarning,
                stacklevel=2,
            )
        return None


def _mentions_content(tp: Any) -> bool:
    if is_class(tp) and issubclass(tp, (ToolReturn, TextPart, MediaPart, DataPart)):
        return True
    if isinstance(tp, (str, typing.ForwardRef)):
        return True  # an annotation left unresolved: nothing to say about it
    return any(_mentions_content(arg) for arg in get_args(tp) if arg is not Ellipsis)


def _may_be_text(tp: Any) -> bool:
    """Whether a value of ``tp`` may be a ``str`` (``str | None``, a ``StrEnum``...): a tool's
    result text is then the string itself, not its JSON, and tells no structured value."""
    if is_class(tp):
        return issubclass(tp, str)
    origin = get_origin(tp)
    if origin is Literal:
        return any(isinstance(arg, str) for arg in get_args(tp))
    if origin is Annotated:
        return _may_be_text(get_args(tp)[0])
    if origin is Union or origin is types.UnionType:
        return any(_may_be_text(arg) for arg in get_args(tp))
    aliased = getattr(tp, "__supertype__", None) or getattr(tp, "__value__", None)
    return aliased is not None and _may_be_text(aliased)  # a NewType, a `type X = ...` alias


def _type_name(tp: Any) -> str:
    return tp.__qualname__ if is_class(tp) else repr(tp)
