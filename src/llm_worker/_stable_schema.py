"""pydantic's JSON Schema written the same in every process: ``StableJsonSchema``.

A set, whose order changes from process to process (``PYTHONHASHSEED`` for
strings), is written sorted wherever it reaches a schema: in a default, in
``Field(examples=...)`` (where the type is a set) and in ``json_schema_extra``.
Input schemas (``_codegen.schema``) and output schemas (``_output_schema``) are
both written by it.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, JsonSchemaValue
from pydantic_core import CoreSchema, core_schema, to_jsonable_python

if TYPE_CHECKING:  # the type of generate_inner's argument, which pydantic only declares
    from pydantic._internal._core_utils import CoreSchemaOrField

__all__ = ["StableJsonSchema", "is_json_scalar"]


class StableJsonSchema(GenerateJsonSchema):
    """pydantic's JSON Schema, the same bytes in every process: the items of sets (in
    defaults, examples and a model's extra) written in one order, not in the order they
    iterate, which for strings changes with ``PYTHONHASHSEED``."""

    def generate(self, schema: CoreSchema, mode: JsonSchemaMode = "validation") -> JsonSchemaValue:
        result = super().generate(schema, mode)
        return cast("JsonSchemaValue", _examples_in_order(result, result.get("$defs", {})))

    def generate_inner(self, schema: CoreSchemaOrField) -> JsonSchemaValue:
        return super().generate_inner(_with_extra_in_order(schema))

    def get_default_value(self, schema: core_schema.WithDefaultSchema) -> Any:
        default: object = super().get_default_value(schema)
        if not isinstance(default, (set, frozenset)):
            return default
        # Past pydantic's own sort of a set default (by `<`, which orders neither
        # frozensets nor mixed items) to `encode_default`, which orders sets at any depth.
        return _SetDefault(cast(object, default))

    def encode_default(self, dft: Any) -> Any:
        # Pydantic builds a TypeAdapter for every default; a scalar needs none.
        # (Containers go through it: it copies them, and what it writes goes on.)
        if is_json_scalar(dft):
            return dft
        value = dft.value if isinstance(dft, _SetDefault) else cast(object, dft)
        return _sets_in_order(value, super().encode_default(value))


@dataclass(frozen=True, slots=True)
class _SetDefault:
    """A set default on its way to ``encode_default``, in the order it iterates."""

    value: object


def _sets_in_order(value: object, encoded: object) -> object:
    """``encoded``, pydantic's JSON of ``value``, with every set's items in one order.

    A set is written in the order it iterates, which for strings changes from
    process to process (``PYTHONHASHSEED``), so ``value`` is walked along with
    ``encoded``: a set's items in its own order, a dict's and a sequence's in
    theirs, a model's and a dataclass's fields by the keys they are written under.
    What was written in another shape (a custom serializer's) is left as it is.
    """
    written_as = type(encoded)
    if isinstance(value, (set, frozenset, list, tuple, deque)):
        items = list(cast("Iterable[object]", value))
        written = cast("list[object]", encoded) if written_as is list else None
        if written is None or len(written) != len(items):
            return encoded
        ordered = list(map(_sets_in_order, items, written))
        return _sorted_items(ordered) if isinstance(value, (set, frozenset)) else ordered
    if isinstance(value, Mapping):
        mapping = cast("Mapping[object, object]", value)
        by_key = cast("dict[object, object]", encoded) if written_as is dict else None
        if by_key is None or len(by_key) != len(mapping):
            return encoded  # two keys written as one ({1: ..., "1": ...})
        values = map(_sets_in_order, mapping.values(), by_key.values())
        return dict(zip(by_key, values, strict=True))
    fields = _fields_by_key(value)
    if fields is None or written_as is not dict:
        return encoded
    return {
        key: _sets_in_order(fields[key], item) if key in fields else item
        for key, item in cast("dict[str, object]", encoded).items()
    }


def _with_extra_in_order(schema: CoreSchemaOrField) -> CoreSchemaOrField:
    """``schema`` with its ``json_schema_extra`` encoded already, every set's items in one order.

    Pydantic keeps a field's ``json_schema_extra`` as given and encodes it while
    it writes the field, a set in the order it iterates; so it gets the encoded
    copy instead, which encodes to itself.
    """
    metadata: dict[str, Any] = schema.get("metadata") or {}
    given: object = metadata.get("pydantic_js_extra")
    if not isinstance(given, dict):  # none, or a function: it writes what it writes
        return schema
    extra = cast("dict[str, object]", given)
    try:
        encoded: object = to_jsonable_python(extra)
    except Exception:  # pydantic reports it, with the field, when it encodes the original
        return schema
    ordered = {**metadata, "pydantic_js_extra": _sets_in_order(extra, encoded)}
    return cast("CoreSchemaOrField", {**schema, "metadata": ordered})


def _examples_in_order(node: object, defs: Mapping[str, object]) -> object:
    """The JSON Schema ``node`` with every set in its ``examples`` in one order.

    Pydantic encodes ``Field(examples=...)`` when it builds a model, long before
    the schema is written, so the sets in them are lists by then, in the order
    they iterated. What was a set is told by the schema each value is an example
    of: an array with ``uniqueItems``. ``node`` is copied where it changes only.
    """
    schema = _as_schema(node)
    if schema is None:
        return node
    changed: dict[str, object] = {}
    for key, child in schema.items():
        if key == "examples" and type(child) is list:
            items = cast("list[object]", child)
            ordered: object = [_example_in_order(item, schema, defs) for item in items]
        elif key in _SCHEMA_MAPS and isinstance(child, dict):
            subschemas = cast("dict[str, object]", child)
            ordered = {name: _examples_in_order(sub, defs) for name, sub in subschemas.items()}
        elif key in _SCHEMA_LISTS and type(child) is list:
            ordered = [_examples_in_order(sub, defs) for sub in cast("list[object]", child)]
        elif key in _SCHEMA_KEYS:
            ordered = _examples_in_order(child, defs)
        else:
            continue
        if ordered != child:
            changed[key] = ordered
    return {**schema, **changed} if changed else schema


# The keywords whose values are schemas (the others hold data: a default, an enum).
_SCHEMA_MAPS = frozenset({"$defs", "properties", "patternProperties", "dependentSchemas"})
_SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SCHEMA_KEYS = frozenset(
    {"items", "additionalProperties", "not", "contains", "if", "then", "else", "propertyNames"}
)


def _example_in_order(value: object, schema: object, defs: Mapping[str, object]) -> object:
    """``value``, an example of ``schema``, with the items of each array that is a set sorted."""
    node = _schema_of(value, schema, defs)
    if node is None:
        return value
    if type(value) is list:
        prefix = node.get("prefixItems")
        prefix = cast("list[object]", prefix) if type(prefix) is list else []
        rest = node.get("items")
        items = [
            _example_in_order(item, prefix[i] if i < len(prefix) else rest, defs)
            for i, item in enumerate(cast("list[object]", value))
        ]
        return _sorted_items(items) if node.get("uniqueItems") is True else items
    if type(value) is dict:
        named = _as_schema(node.get("properties")) or {}
        rest = node.get("additionalProperties")
        return {
            key: _example_in_order(item, named.get(key, rest), defs)
            for key, item in cast("dict[str, object]", value).items()
        }
    return value


def _schema_of(
    value: object, schema: object, defs: Mapping[str, object]
) -> dict[str, object] | None:
    """The schema that describes ``value``: past ``$ref``s, and to the one ``anyOf`` branch
    of ``value``'s JSON type. ``None`` when there is none, or more than one."""
    node = _as_schema(schema)
    for _ in range(_MAX_HOPS):  # a $ref to a $ref..., bounded as a cycle would not be
        if node is None:
            return None
        branches = node.get("anyOf", node.get("oneOf", node.get("allOf")))
        if isinstance(node.get("$ref"), str):
            node = _referenced(node, defs)
        elif type(branches) is list:
            fitting = [b for b in cast("list[object]", branches) if _may_hold(b, value, defs)]
            if len(fitting) != 1:
                return None  # no branch, or several: which one the value is of is not known
            node = _as_schema(fitting[0])
        else:
            return node
    return None


_MAX_HOPS = 32


def _may_hold(schema: object, value: object, defs: Mapping[str, object]) -> bool:
    """Whether ``schema`` (past one ``$ref``) may describe a value of ``value``'s JSON type."""
    node = _as_schema(schema)
    if node is not None and isinstance(node.get("$ref"), str):
        node = _referenced(node, defs)
    if node is None:
        return False
    kind = node.get("type")
    wanted = "array" if type(value) is list else "object" if type(value) is dict else None
    return kind is None or wanted is None or kind == wanted


def _referenced(node: dict[str, object], defs: Mapping[str, object]) -> dict[str, object] | None:
    """The ``$defs`` entry ``node``'s ``$ref`` (``#/$defs/Name``, as pydantic writes) names."""
    return _as_schema(defs.get(str(node["$ref"]).removeprefix("#/$defs/")))


def _as_schema(value: object) -> dict[str, object] | None:
    return cast("dict[str, object]", value) if isinstance(value, dict) else None


def _fields_by_key(value: object) -> dict[str, object] | None:
    """A model's or a dataclass's field values by name and by serialization alias."""
    if isinstance(value, BaseModel):
        fields: dict[str, object] = {**value.__dict__, **(value.__pydantic_extra__ or {})}
        for name, info in type(value).model_fields.items():
            if info.serialization_alias is not None and name in fields:
                fields[info.serialization_alias] = fields[name]
        return fields
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
    return None


def _sorted_items(items: list[object]) -> list[object]:
    """JSON values in one order in any process: their own, then by their JSON text."""
    keyed = [(item, json.dumps(item, sort_keys=True)) for item in items]
    try:
        keyed.sort()  # numbers and strings as pydantic sorts a set default
    except TypeError:  # mixed kinds (1 and "a"), objects
        keyed.sort(key=lambda pair: pair[1])
    return [item for item, _ in keyed]


def is_json_scalar(value: object) -> bool:
    kind = type(value)
    return kind in _JSON_SCALARS or (kind is float and math.isfinite(value))  # type: ignore[arg-type]


_JSON_SCALARS = (str, int, bool, type(None))
