"""Hypothesis strategies shared by the test suite.

- ``snake_names()``: identifiers such as ``get_user`` (also valid tool names).
- ``json_scalars()``, ``json_values()``, ``json_objects()``: data ``json.dumps`` accepts and
  ``json.loads`` gives back equal (no tuples, no NaN or infinities).
- ``json_schemas()``: small JSON-Schema objects, with arbitrary extra JSON inside;
  ``simple_schemas()``: just the empty object schema, for speed.
- ``tool_metas()``: ``ToolMeta`` values; ``tool_meta_sets()``: lists of them with distinct names.
- ``tool_definitions()`` / ``tool_definition_sets()``: ``ToolDefinition`` factories (counting
  their calls) built from those metas, for registration properties.
"""

from __future__ import annotations

import keyword
import string
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from llm_worker import Tool, ToolMeta

__all__ = [
    "CountingDefinition",
    "EchoTool",
    "json_objects",
    "json_scalars",
    "json_schemas",
    "json_values",
    "simple_schemas",
    "snake_names",
    "tool_definition_sets",
    "tool_definitions",
    "tool_meta_sets",
    "tool_metas",
]

_LOWER = string.ascii_lowercase
_LOWER_DIGITS = string.ascii_lowercase + string.digits


def snake_names(*, allow_keywords: bool = False) -> st.SearchStrategy[str]:
    """snake_case identifiers: ``[a-z][a-z0-9]*`` segments joined by single underscores.

    Python keywords (``if``, ``class``...) are left out unless ``allow_keywords``.
    """
    names = st.builds(
        lambda head, rest, segments: "_".join([head + rest, *segments]),
        st.sampled_from(_LOWER),
        st.text(_LOWER_DIGITS, max_size=7),
        st.lists(st.text(_LOWER_DIGITS, min_size=1, max_size=7), max_size=3),
    )
    if allow_keywords:
        return names
    return names.filter(lambda name: not keyword.iskeyword(name))


def json_scalars() -> st.SearchStrategy[Any]:
    """``None``, bools, ints, finite floats and text: the JSON leaves."""
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**53), max_value=2**53),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=20),
    )


def json_values(*, max_leaves: int = 12) -> st.SearchStrategy[Any]:
    """Any JSON value: scalars, lists and string-keyed objects, nested."""
    return st.recursive(
        json_scalars(),
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.dictionaries(st.text(max_size=10), children, max_size=4),
        ),
        max_leaves=max_leaves,
    )


def json_objects(*, max_size: int = 5, max_leaves: int = 12) -> st.SearchStrategy[dict[str, Any]]:
    """A JSON object (``dict[str, Any]``) whose values are any JSON values."""
    return st.dictionaries(
        st.text(max_size=10), json_values(max_leaves=max_leaves), max_size=max_size
    )


_PROPERTY_TYPES = st.sampled_from(["string", "integer", "number", "boolean", "array", "object"])


@st.composite
def json_schemas(draw: st.DrawFn) -> dict[str, Any]:
    """A JSON-Schema object: ``type: object``, some typed properties, maybe ``required``,
    ``additionalProperties`` and arbitrary extra JSON keys (``x-...``)."""
    names = draw(st.lists(snake_names(), max_size=4, unique=True))
    properties: dict[str, Any] = {}
    for name in names:
        prop: dict[str, Any] = {"type": draw(_PROPERTY_TYPES)}
        if draw(st.booleans()):
            prop["description"] = draw(st.text(max_size=30))
        properties[name] = prop
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if names and draw(st.booleans()):
        schema["required"] = draw(st.lists(st.sampled_from(names), unique=True))
    if draw(st.booleans()):
        schema["additionalProperties"] = False
    extra_keys = st.text(_LOWER, min_size=1, max_size=6).map("x-".__add__)
    extra = draw(st.dictionaries(extra_keys, json_values(max_leaves=4), max_size=2))
    schema.update(extra)
    return schema


@st.composite
def tool_metas(
    draw: st.DrawFn,
    names: st.SearchStrategy[str] | None = None,
    schemas: st.SearchStrategy[dict[str, Any]] | None = None,
) -> ToolMeta:
    """A ``ToolMeta`` with a snake-case name (or one from ``names``), any description and
    a schema from ``json_schemas()`` (or from ``schemas``)."""
    name = draw(names if names is not None else snake_names())
    return ToolMeta(
        name=name,
        description=draw(st.text(max_size=40)),
        input_schema=draw(schemas if schemas is not None else json_schemas()),
    )


def simple_schemas() -> st.SearchStrategy[dict[str, Any]]:
    """Cheap to draw: the empty object schema. For properties where the schema is not the point."""
    return st.just({"type": "object", "properties": {}})


def tool_meta_sets(
    *,
    min_size: int = 0,
    max_size: int = 8,
    schemas: st.SearchStrategy[dict[str, Any]] | None = None,
) -> st.SearchStrategy[list[ToolMeta]]:
    """Lists of ``ToolMeta`` with pairwise distinct names (schemas from ``schemas``)."""
    return st.lists(
        tool_metas(schemas=schemas),
        min_size=min_size,
        max_size=max_size,
        unique_by=lambda meta: meta.name,
    )


class EchoTool:
    """A minimal ``Tool``: answers ``"<name>: <input_json>"``."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def execute(self, input_json: str) -> str:
        return f"{self.name}: {input_json}"

    def __repr__(self) -> str:
        return f"EchoTool({self.name!r})"


class CountingDefinition:
    """A ``ToolDefinition`` returning ``(meta, make_tool(meta))`` and counting its calls.

    Each call makes a new tool (as generated definitions do); ``made`` keeps them.
    """

    def __init__(self, meta: ToolMeta, make_tool: Callable[[ToolMeta], Tool] | None = None) -> None:
        self.meta = meta
        self.make_tool: Callable[[ToolMeta], Tool] = make_tool or (lambda meta: EchoTool(meta.name))
        self.calls = 0
        self.made: list[Tool] = []

    def __call__(self) -> tuple[ToolMeta, Tool]:
        self.calls += 1
        tool = self.make_tool(self.meta)
        self.made.append(tool)
        return self.meta, tool

    def __repr__(self) -> str:
        return f"CountingDefinition({self.meta.name!r})"


def tool_definitions(
    metas: st.SearchStrategy[ToolMeta] | None = None,
) -> st.SearchStrategy[CountingDefinition]:
    """One ``CountingDefinition`` (a ``ToolDefinition``) per drawn meta."""
    return (metas if metas is not None else tool_metas()).map(CountingDefinition)


def tool_definition_sets(
    *,
    min_size: int = 0,
    max_size: int = 8,
    schemas: st.SearchStrategy[dict[str, Any]] | None = None,
) -> st.SearchStrategy[list[CountingDefinition]]:
    """Lists of fresh ``CountingDefinition``s whose tool names are pairwise distinct."""
    return tool_meta_sets(min_size=min_size, max_size=max_size, schemas=schemas).map(
        lambda metas: [CountingDefinition(meta) for meta in metas]
    )
