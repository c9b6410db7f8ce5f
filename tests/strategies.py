"""Hypothesis strategies shared by the test suite.

- ``snake_names()``: identifiers such as ``get_user`` (also valid tool names).
- ``json_scalars()``, ``json_values()``, ``json_objects()``: data ``json.dumps`` accepts and
  ``json.loads`` gives back equal (no tuples, no NaN or infinities).
- ``json_schemas()``: small JSON-Schema objects, with arbitrary extra JSON inside;
  ``simple_schemas()``: just the empty object schema, for speed.
- ``hand_written_schemas()``: tool input schemas as hand-written and MCP tools send
  them: ``$ref`` to ``$defs`` or ``definitions``, ``allOf``, ``anyOf``/``oneOf``, type
  lists, missing ``type``, tuples, defaults, constraints strict mode only notes.
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
    "hand_written_schemas",
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


# hand_written_schemas(): a small vocabulary, so that branches and merges meet often.
_PROPERTY_NAMES = ("a", "b", "c")
_VALUES = ("x", "y", 1, 2, 2.5, True, None)
_PATTERNS = ("^a", "b$", "^[ab]+$", "^(?!ab)")  # the last one strict mode only notes


def _leaves() -> st.SearchStrategy[dict[str, Any]]:
    bound = st.integers(-2, 3)
    return st.one_of(
        st.builds(dict, type=st.sampled_from(["string", "integer", "number", "boolean", "null"])),
        st.builds(dict, type=st.just("string"), pattern=st.sampled_from(_PATTERNS)),
        st.builds(dict, type=st.just("string"), minLength=st.integers(1, 3)),
        st.builds(dict, type=st.just("integer"), minimum=bound, maximum=st.integers(4, 9)),
        st.builds(dict, type=st.just("number"), exclusiveMinimum=bound),
        st.builds(dict, type=st.just("integer"), multipleOf=st.sampled_from([2, 3])),
        st.builds(
            dict,
            type=st.lists(
                st.sampled_from(["string", "integer", "boolean", "null"]),
                min_size=2,
                max_size=3,
                unique=True,
            ),
        ),
        st.builds(
            dict, enum=st.lists(st.sampled_from(_VALUES), min_size=1, max_size=4, unique=True)
        ),
        st.builds(dict, const=st.sampled_from(_VALUES)),
        # No "type": the keywords say which.
        st.builds(dict, minimum=bound),
        st.builds(dict, pattern=st.sampled_from(_PATTERNS)),
    )


def _with_description(node: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(st.just(node), st.just({**node, "description": "what it is"}))


@st.composite
def _objects(
    draw: st.DrawFn, children: st.SearchStrategy[dict[str, Any]], *, typed: bool | None = None
) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from(_PROPERTY_NAMES), unique=True, max_size=3))
    properties: dict[str, Any] = {}
    for name in names:
        sub = draw(children)
        if draw(st.integers(0, 3)) == 0:
            sub = {**sub, "default": draw(st.sampled_from(_VALUES))}
        properties[name] = sub
    node: dict[str, Any] = {"properties": properties, "additionalProperties": False}
    if typed if typed is not None else draw(st.booleans()):
        node["type"] = "object"
    required = draw(st.lists(st.sampled_from(names), unique=True)) if names else []
    if required:
        node["required"] = required
    return node


def _nodes(refs: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    leaves: st.SearchStrategy[dict[str, Any]] = _leaves()
    if refs:
        leaves = st.one_of(
            leaves,
            st.sampled_from(refs).flatmap(lambda ref: _with_description({"$ref": ref})),
        )

    def extend(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
        pairs = st.lists(children, min_size=1, max_size=3)
        return st.one_of(
            _objects(children),
            st.builds(dict, type=st.just("array"), items=children, maxItems=st.integers(1, 3)),
            st.builds(
                lambda first, second: {
                    "type": "array",
                    "prefixItems": [first, second],
                    "minItems": 2,
                    "maxItems": 2,
                },
                children,
                children,
            ),
            st.just({"type": "array", "maxItems": 0}),  # tuple[()]
            st.builds(dict, anyOf=pairs),
            st.builds(dict, oneOf=pairs),
            # allOf as people write it: a type and its constraints, an object and its requirements.
            st.builds(
                lambda low: {"allOf": [{"type": "integer"}, {"minimum": low}]}, st.integers(0, 3)
            ),
            st.builds(
                lambda kinds: {"allOf": [{"type": kinds}, {"type": "string"}]},
                st.sampled_from([["string", "integer"], ["string", "null"]]),
            ),
            _objects(children, typed=True).flatmap(
                lambda node: st.builds(
                    lambda required: {"allOf": [node, {"required": required}]},
                    st.lists(st.sampled_from(sorted(node["properties"])), unique=True)
                    if node["properties"]
                    else st.just([]),
                )
            ),
        )

    return st.recursive(leaves, extend, max_leaves=6)


@st.composite
def hand_written_schemas(draw: st.DrawFn) -> dict[str, Any]:
    """A tool's input schema, written by hand or sent by an MCP server.

    Objects are closed (``additionalProperties: false``), so strict mode keeps
    what they accept; ``$defs`` (or draft 7's ``definitions``) refer only to
    earlier entries, so nothing is recursive; ``allOf`` entries never describe
    one property twice; every schema accepts some value.
    """
    container = draw(st.sampled_from(["$defs", "definitions"]))
    defs: dict[str, Any] = {}
    for i in range(draw(st.integers(0, 2))):
        defs[f"D{i}"] = draw(_nodes([f"#/{container}/{name}" for name in defs]))
    children = _nodes([f"#/{container}/{name}" for name in defs])
    root = draw(_objects(children))
    shape = draw(st.integers(0, 3))
    if shape == 1:
        root = {**root, "type": ["object", "null"]}
    elif shape == 2:
        root = {"anyOf": [{**root, "type": "object"}, {"type": "null"}]}
    elif shape == 3:
        names = sorted(root["properties"])
        required = draw(st.lists(st.sampled_from(names), unique=True)) if names else []
        root = {"allOf": [root, {"required": required}]}
    if defs:
        root[container] = defs
    return root


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
