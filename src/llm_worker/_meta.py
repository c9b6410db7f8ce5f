"""Immutable tool descriptions: ``ToolMeta`` (registered) and ``LlmToolDefinition`` (sent).

Both hold a name, a description and a JSON-Schema object. The schema is kept
as JSON text and parsed anew on every read, so nothing a caller does to a dict
it passed in or got back can reach a registered tool. Equality and hashing
use a key-sorted rendering, so two schemas that differ only in key order are
equal.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NoReturn

from typing_extensions import Self, final

__all__ = ["LlmToolDefinition", "ToolMeta"]

_EMPTY_OBJECT_SCHEMA = '{"type": "object", "properties": {}}'


class _ToolSpec:
    """Shared implementation: name, description and a frozen JSON schema."""

    __slots__ = ("_description", "_name", "_schema_json", "_sorted_json")

    _name: str
    _description: str
    _schema_json: str
    _sorted_json: str

    def __init__(
        self,
        *,
        name: str,
        description: str = "",
        input_schema: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{type(self).__name__} name must be a str, not {type(name).__name__}")
        if not isinstance(description, str):
            raise TypeError(
                f"{type(self).__name__} description must be a str, not {type(description).__name__}"
            )
        schema_json = _EMPTY_OBJECT_SCHEMA if input_schema is None else _dump(self, input_schema)
        self._init(name, description, schema_json)

    def _init(self, name: str, description: str, schema_json: str) -> None:
        if hasattr(self, "_name"):
            raise AttributeError(f"{type(self).__name__} is immutable; it is initialised once")
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_description", description)
        object.__setattr__(self, "_schema_json", schema_json)

    def _canonical_json(self) -> str:
        """The schema with sorted keys, for ``==`` and ``hash``: worked out on first need."""
        try:
            return self._sorted_json
        except AttributeError:
            text = json.dumps(json.loads(self._schema_json), sort_keys=True)
            object.__setattr__(self, "_sorted_json", text)
            return text

    @classmethod
    def _from_parts(cls, name: str, description: str, schema_json: str) -> Self:
        self = cls.__new__(cls)
        self._init(name, description, schema_json)
        return self

    @property
    def name(self) -> str:
        """The tool's name, as the model calls it."""
        return self._name

    @property
    def description(self) -> str:
        """What the tool does, in words for the model."""
        return self._description

    @property
    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of the arguments; a fresh copy on every access."""
        result: dict[str, Any] = json.loads(self._schema_json)
        return result

    @property
    def input_schema_json(self) -> str:
        """The JSON Schema as the compact JSON text it is kept as (nothing parsed or copied)."""
        return self._schema_json

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is immutable; use with_...() for a copy")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, _ToolSpec)
        return (
            self._name == other._name
            and self._description == other._description
            and self._canonical_json() == other._canonical_json()
        )

    def __hash__(self) -> int:
        return hash((type(self), self._name, self._description, self._canonical_json()))

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(name={self._name!r}, description={self._description!r}, "
            f"input_schema={self._schema_json})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self)._from_parts, (self._name, self._description, self._schema_json))


@final
class ToolMeta(_ToolSpec):
    """Immutable metadata of a registered tool: ``name``, ``description``, ``input_schema``.

    >>> meta = ToolMeta(name="add", description="Add two numbers")
    >>> meta.with_description("Add two integers").description
    'Add two integers'
    """

    __slots__ = ()

    def with_description(self, description: str) -> ToolMeta:
        """Return a copy with another description."""
        return ToolMeta(name=self._name, description=description, input_schema=self.input_schema)

    def with_input_schema(self, input_schema: Mapping[str, Any]) -> ToolMeta:
        """Return a copy with another input schema."""
        return ToolMeta(name=self._name, description=self._description, input_schema=input_schema)

    def to_llm_definition(self) -> LlmToolDefinition:
        """The provider-neutral definition of this tool, as sent to a model."""
        return LlmToolDefinition._from_parts(self._name, self._description, self._schema_json)


@final
class LlmToolDefinition(_ToolSpec):
    """The provider-neutral tool definition sent to a model (immutable)."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """``{"name", "description", "input_schema"}`` as plain JSON-ready data."""
        return {
            "name": self._name,
            "description": self._description,
            "input_schema": self.input_schema,
        }


def _dump(owner: _ToolSpec, schema: Mapping[str, Any]) -> str:
    if not isinstance(schema, Mapping):
        raise TypeError(
            f"{type(owner).__name__} input_schema must be a mapping (a JSON-Schema object), "
            f"not {type(schema).__name__}"
        )
    try:
        return json.dumps(schema, ensure_ascii=False, allow_nan=False, default=_plain_mapping)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{type(owner).__name__} input_schema must be JSON-serialisable: {exc}"
        ) from exc
    except RecursionError:  # json's encoder recurses once per nested dict or list
        raise TypeError(
            f"{type(owner).__name__} input_schema nests too deeply to be sent as JSON "
            f"(keep it under a few hundred levels)"
        ) from None


def _plain_mapping(value: object) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return dict(value)  # pyright: ignore[reportUnknownArgumentType]
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
