"""Anthropic's tool ``input_schema``: any JSON Schema, but one object at the top.

The Messages API refuses a whole request when a tool's schema has ``anyOf``,
``oneOf`` or ``allOf`` at its root ("input_schema does not support oneOf, allOf,
or anyOf at the top level"), which unions of argument shapes (zod's
``z.union``, an "id or path" tool of an MCP server) give. ``anthropic_schema``
makes such a root one object (``_json_schema.one_object_root``, which the Gemini
rewrite uses too): an ``allOf`` (and a root ``$ref``) is merged in; the
properties of ``anyOf``/``oneOf`` branches join the root's, required where every
branch requires them, and the branches themselves are said in the description,
as the rewrites note what they cannot keep. Any other schema is returned as it
is. The tool's own validation still checks the whole schema. A root union it
cannot read (a branch's ``type`` that names no JSON type) raises
``AnthropicSchemaError``.

The API also refuses (again the whole request) an argument name outside
``[a-zA-Z0-9_.-]{1,64}`` ("Property keys should match pattern ..."): such a
schema raises ``AnthropicSchemaError`` naming them, where it is exported.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ._json_schema import JsonSchema, SchemaProblem, argument_names_refused, one_object_root

__all__ = ["AnthropicSchemaError", "anthropic_schema"]

_ARGUMENT_NAME = re.compile(r"[a-zA-Z0-9_.-]{1,64}")


class AnthropicSchemaError(Exception):
    """A schema the Messages API refuses; ``problems`` says why."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(problems)
        self.problems = problems


def anthropic_schema(schema: Mapping[str, Any]) -> JsonSchema:
    """``schema`` with a root Anthropic accepts (new dicts where it changed), or
    ``AnthropicSchemaError``."""
    try:
        root = one_object_root(schema)
    except SchemaProblem as exc:
        raise AnthropicSchemaError([str(exc)]) from None
    refusing = "the Messages API refuses (1 to 64 letters, digits, '_', '.' or '-')"
    problem = argument_names_refused(root, _ARGUMENT_NAME, refusing)
    if problem is not None:
        raise AnthropicSchemaError([problem])
    return root
