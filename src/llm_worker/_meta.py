"""Immutable tool descriptions: ``ToolMeta`` (registered) and ``LlmToolDefinition`` (sent).

Both hold a name, a description and a JSON-Schema object. A ``ToolMeta`` also
holds what the application (and MCP) may know of a tool but a model is not
sent: a ``title``, ``ToolAnnotations`` (read-only, destructive...) and the
JSON Schema of its result. The schema is kept
as JSON text and parsed anew on every read, so nothing a caller does to a dict
it passed in or got back can reach a registered tool. Equality and hashing
use a key-sorted rendering, so two schemas that differ only in key order are
equal.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, NoReturn

from typing_extensions import Self, final

__all__ = ["LlmToolDefinition", "ToolAnnotations", "ToolMeta"]


@dataclass(frozen=True, repr=False)
class ToolAnnotations:
    """Hints about what a tool does, for the application and MCP hosts (never for trust).

    ``None`` is "not said". They are MCP's tool annotations: ``read_only``
    (``readOnlyHint``: changes nothing), ``destructive`` (may delete or
    overwrite), ``idempotent`` (calling twice with the same arguments does no
    more), ``open_world`` (reaches things outside the application: the web...).
    A hook or an approval policy can read them: ``meta.annotations.destructive``.
    """

    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None
    open_world: bool | None = None

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if value is not None and not isinstance(value, bool):
                raise TypeError(
                    f"ToolAnnotations.{item.name} must be a bool or None, not {value!r}"
                )

    def over(self, defaults: ToolAnnotations) -> ToolAnnotations:
        """These annotations, with every unsaid one taken from ``defaults``."""
        return ToolAnnotations(
            **{
                item.name: getattr(defaults, item.name)
                if getattr(self, item.name) is None
                else getattr(self, item.name)
                for item in fields(self)
            }
        )

    def __repr__(self) -> str:
        said = (f"{item.name}={getattr(self, item.name)!r}" for item in fields(self))
        return f"ToolAnnotations({', '.join(s for s in said if not s.endswith('=None'))})"


_NO_ANNOTATIONS = ToolAnnotations()

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
        if input_schema is None:
            schema_json = _EMPTY_OBJECT_SCHEMA
        else:
            schema_json = _dump(self, _arguments_object(self, input_schema))
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

    Also, by keyword: ``title`` (a name for people), ``annotations`` (a
    ``ToolAnnotations``) and ``output_schema`` (the JSON Schema of its result,
    an object: what MCP calls ``outputSchema``). Only the first three reach a
    model.

    >>> meta = ToolMeta(name="add", description="Add two numbers")
    >>> meta.with_description("Add two integers").description
    'Add two integers'
    """

    __slots__ = ("_annotations", "_output_json", "_title")

    _title: str | None
    _annotations: ToolAnnotations
    _output_json: str | None

    def __init__(
        self,
        *,
        name: str,
        description: str = "",
        input_schema: Mapping[str, Any] | None = None,
        title: str | None = None,
        annotations: ToolAnnotations | None = None,
        output_schema: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(name=name, description=description, input_schema=input_schema)
        if title is not None and not isinstance(title, str):
            raise TypeError(f"ToolMeta title must be a str or None, not {type(title).__name__}")
        if annotations is not None and not isinstance(annotations, ToolAnnotations):
            raise TypeError(
                f"ToolMeta annotations must be a ToolAnnotations, not {type(annotations).__name__}"
            )
        output_json = None
        if output_schema is not None:
            output_json = _dump(self, output_schema, "output_schema")
            if output_schema.get("type") != "object":
                raise ValueError(
                    'ToolMeta output_schema must be an object schema ({"type": "object", ...}), '
                    "as MCP requires; wrap another result in an object property"
                )
        self._init_extras(title, annotations or _NO_ANNOTATIONS, output_json)

    def _init_extras(
        self, title: str | None, annotations: ToolAnnotations, output_json: str | None
    ) -> None:
        object.__setattr__(self, "_title", title)
        object.__setattr__(self, "_annotations", annotations)
        object.__setattr__(self, "_output_json", output_json)

    @classmethod
    def _from_parts(cls, name: str, description: str, schema_json: str) -> Self:
        self = super()._from_parts(name, description, schema_json)
        self._init_extras(None, _NO_ANNOTATIONS, None)
        return self

    @classmethod
    def _restore(
        cls,
        name: str,
        description: str,
        schema_json: str,
        title: str | None,
        annotations: ToolAnnotations,
        output_json: str | None,
    ) -> ToolMeta:
        self = super()._from_parts(name, description, schema_json)
        self._init_extras(title, annotations, output_json)
        return self

    @property
    def title(self) -> str | None:
        """A name for people (MCP's ``title``), if one was given."""
        return self._title

    @property
    def annotations(self) -> ToolAnnotations:
        """What the tool says about itself: read-only, destructive... (all ``None`` if unsaid)."""
        return self._annotations

    @property
    def output_schema(self) -> dict[str, Any] | None:
        """The JSON Schema (an object) of the tool's result, if it declares one; a fresh copy."""
        text = self._output_json
        return None if text is None else json.loads(text)

    @property
    def output_schema_json(self) -> str | None:
        """The output schema as the compact JSON text it is kept as (nothing parsed or copied)."""
        return self._output_json

    def _copy(self, **changes: Any) -> ToolMeta:
        keywords: dict[str, Any] = {
            "name": self._name,
            "description": self._description,
            "input_schema": self.input_schema,
            "title": self._title,
            "annotations": self._annotations,
            "output_schema": self.output_schema,
        }
        keywords.update(changes)
        return ToolMeta(**keywords)

    def with_description(self, description: str) -> ToolMeta:
        """Return a copy with another description."""
        return self._copy(description=description)

    def with_input_schema(self, input_schema: Mapping[str, Any]) -> ToolMeta:
        """Return a copy with another input schema."""
        return self._copy(input_schema=input_schema)

    def with_annotations(self, annotations: ToolAnnotations) -> ToolMeta:
        """Return a copy with other annotations."""
        return self._copy(annotations=annotations)

    def to_llm_definition(self) -> LlmToolDefinition:
        """The provider-neutral definition of this tool, as sent to a model."""
        return LlmToolDefinition._from_parts(self._name, self._description, self._schema_json)

    def _extras(self) -> tuple[str | None, ToolAnnotations, str | None]:
        output = self._output_json
        if output is not None:
            output = json.dumps(json.loads(output), sort_keys=True)
        return (self._title, self._annotations, output)

    def __eq__(self, other: object) -> bool:
        equal = super().__eq__(other)
        if equal is not True:
            return equal
        assert isinstance(other, ToolMeta)
        return self._extras() == other._extras()

    def __hash__(self) -> int:
        return hash((super().__hash__(), self._extras()))

    def __repr__(self) -> str:
        text = super().__repr__()[:-1]
        if self._title is not None:
            text += f", title={self._title!r}"
        if self._annotations != _NO_ANNOTATIONS:
            text += f", annotations={self._annotations!r}"
        if self._output_json is not None:
            text += f", output_schema={self._output_json}"
        return text + ")"

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            ToolMeta._restore,
            (
                self._name,
                self._description,
                self._schema_json,
                self._title,
                self._annotations,
                self._output_json,
            ),
        )


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


def _arguments_object(owner: _ToolSpec, schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """``schema`` as the object schema of a call's arguments: the model sends a JSON object,
    and MCP and the providers refuse a root without ``"type": "object"`` (one such tool
    made a served ``tools/list`` fail for every tool). A root without a type gets it."""
    if not isinstance(schema, Mapping):
        return schema  # _dump says what is wrong
    kind = schema.get("type")
    if kind == "object":
        return schema
    if kind is None:  # no type (or null)
        return {**schema, "type": "object"}
    if isinstance(kind, (list, tuple)) and "object" in kind:  # ["object", "null"]
        return {**schema, "type": "object"}  # MCP takes "object" alone; the call sends one
    if isinstance(kind, (set, frozenset)):
        return schema  # not JSON: _dump says so
    raise ValueError(
        f'{type(owner).__name__} input_schema must be an object schema ({{"type": "object", '
        f"...}}): the model sends a call's arguments as a JSON object, not {kind!r}"
    )


def _dump(owner: _ToolSpec, schema: Mapping[str, Any], what: str = "input_schema") -> str:
    if not isinstance(schema, Mapping):
        raise TypeError(
            f"{type(owner).__name__} {what} must be a mapping (a JSON-Schema object), "
            f"not {type(schema).__name__}"
        )
    try:
        return json.dumps(schema, ensure_ascii=False, allow_nan=False, default=_plain_mapping)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{type(owner).__name__} {what} must be JSON-serialisable: {exc}") from exc
    except RecursionError:  # json's encoder recurses once per nested dict or list
        raise TypeError(
            f"{type(owner).__name__} {what} nests too deeply to be sent as JSON "
            f"(keep it under a few hundred levels)"
        ) from None


def _plain_mapping(value: object) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return dict(value)  # pyright: ignore[reportUnknownArgumentType]
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
