"""Anthropic's tool ``input_schema``: any JSON Schema, but one object at the top.

The Messages API refuses a whole request when a tool's schema has ``anyOf``,
``oneOf`` or ``allOf`` at its root ("input_schema does not support oneOf, allOf,
or anyOf at the top level"), which unions of argument shapes (zod's
``z.union``, an "id or path" tool of an MCP server) give. ``anthropic_schema``
makes such a root one object: an ``allOf`` (and a root ``$ref``) is merged in;
the properties of ``anyOf``/``oneOf`` branches join the root's, required where
every branch requires them, and the branches themselves are said in the
description, as the rewrites note what they cannot keep. Any other schema is
returned as it is. The tool's own validation still checks the whole schema.

The API also refuses (again the whole request) an argument name outside
``[a-zA-Z0-9_.-]{1,64}`` ("Property keys should match pattern ..."): such a
schema raises ``AnthropicSchemaError`` naming them, where it is exported.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ._json_schema import (
    JsonSchema,
    NoValue,
    Refs,
    SchemaProblem,
    flatten,
    is_list,
    is_schema,
    json_text,
)

__all__ = ["AnthropicSchemaError", "anthropic_schema"]

_COMBINATORS = ("anyOf", "oneOf", "allOf")
_DEFINITIONS = ("$defs", "definitions")
_ARGUMENT_NAME = re.compile(r"[a-zA-Z0-9_.-]{1,64}")


class AnthropicSchemaError(Exception):
    """A schema the Messages API refuses; ``problems`` says why."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(problems)
        self.problems = problems


def anthropic_schema(schema: Mapping[str, Any]) -> JsonSchema:
    """``schema`` with a root Anthropic accepts (new dicts where it changed), or
    ``AnthropicSchemaError``."""
    root = _one_object(schema)
    properties = root.get("properties")
    bad = [
        name
        for name in (properties if is_schema(properties) else ())
        if _ARGUMENT_NAME.fullmatch(name) is None
    ]
    if bad:
        names = ", ".join(repr(name) for name in bad[:20])
        raise AnthropicSchemaError(
            [
                f"argument names the Messages API refuses (1 to 64 letters, digits, '_', "
                f"'.' or '-'): {names}"
            ]
        )
    return root


def _one_object(schema: Mapping[str, Any]) -> JsonSchema:
    if not any(key in schema for key in _COMBINATORS):
        return dict(schema)
    refs = Refs(dict(schema))
    definitions = {k: v for k, v in schema.items() if k in _DEFINITIONS}
    own = {k: v for k, v in schema.items() if k not in _DEFINITIONS}
    try:
        root = flatten(own, refs)
    except (SchemaProblem, NoValue):
        root = {k: v for k, v in own.items() if k != "allOf"}
    for key in ("anyOf", "oneOf"):
        branches = root.get(key)
        if is_list(branches):
            root = _joined(root, key, branches, refs)
    root = {k: v for k, v in root.items() if k not in _COMBINATORS}
    return {**root, "type": "object", **definitions}


def _joined(root: JsonSchema, key: str, branches: list[Any], refs: Refs) -> JsonSchema:
    """``root`` with its ``anyOf``/``oneOf`` branches' properties, the branches noted."""
    properties = dict(root.get("properties", {})) if is_schema(root.get("properties")) else {}
    required: list[str] = list(root.get("required", [])) if is_list(root.get("required")) else []
    every: set[str] | None = None
    for branch in branches:
        try:
            node = flatten(branch, refs)
        except (SchemaProblem, NoValue):
            node = branch if is_schema(branch) else {}
        own = node.get("properties")
        for name, sub in own.items() if is_schema(own) else ():
            properties.setdefault(name, sub)
        listed = node.get("required")
        names: set[str] = set()
        if is_list(listed):
            names = {name for name in listed if isinstance(name, str)}
        every = names if every is None else every & names
    required += sorted((every or set()) - set(required))
    note = f"(the arguments match {key} {json_text(branches)})"
    description = root.get("description")
    joined = {**root, "description": f"{description} {note}" if description else note}
    if properties:
        joined["properties"] = properties
    if required:
        joined["required"] = required
    return joined
