"""Gemini's function parameters: JSON Schema rewritten into its OpenAPI-subset ``Schema``.

``gemini_schema(schema)`` returns the rewrite, or raises ``GeminiSchemaError``
listing what has none: a keyword whose value google-genai's ``Schema`` would
refuse (``"minimum": "3"``, ``"type": "obj"``), or an argument name Gemini
refuses (google-genai's ``FunctionDeclaration.parameters``: 1 to 64 letters,
digits or ``_``, the first a letter or ``_``). The rules are in ``docs/export.md``
("Gemini").

Gemini's ``Schema`` has no references, so every ``$ref`` (to ``$defs``,
``definitions`` or any other place of the schema) is inlined, and a schema
that reuses a model at many levels grows with each level. The rewrite
therefore stops with a clear error past ``MAX_NODES`` nodes (written, or read
while merging ``allOf``s and inlining ``$ref``s) or ``MAX_DEPTH`` levels of
nesting, rather than running for minutes or recursing until Python gives up;
below those bounds it takes time linear in the size of what it writes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ._json_schema import (
    MAX_DEPTH,
    JsonSchema,
    NoValue,
    Refs,
    SchemaProblem,
    allows_type,
    argument_names_refused,
    is_list,
    is_schema,
    json_text,
    json_type,
    merge,
    one_object_root,
    written_types,
)

__all__ = ["MAX_NODES", "GeminiSchemaError", "gemini_schema"]

MAX_NODES = 20_000
"""The most schema nodes a Gemini rewrite writes (references inlined)."""

_KEYWORDS = frozenset(
    {
        "type",
        "format",
        "description",
        "nullable",
        "enum",
        "items",
        "properties",
        "required",
        "anyOf",
        "minimum",
        "maximum",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "pattern",
        "minProperties",
        "maxProperties",
        "default",
    }
)
# Assertions the subset cannot say: the description says them (the tool still checks).
_NOTED = frozenset(
    {
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "uniqueItems",
        "not",
        "if",
        "then",
        "else",
        "propertyNames",
        "patternProperties",
        "dependentRequired",
        "dependentSchemas",
    }
)
# Keywords that apply to values of some JSON types only: where "type": [A, B] splits.
_KEYWORD_TYPES: dict[str, frozenset[str]] = {
    **dict.fromkeys(
        ("items", "prefixItems", "minItems", "maxItems", "uniqueItems"), frozenset({"array"})
    ),
    **dict.fromkeys(
        ("properties", "required", "additionalProperties", "minProperties", "maxProperties"),
        frozenset({"object"}),
    ),
    **dict.fromkeys(("minLength", "maxLength", "pattern"), frozenset({"string"})),
    **dict.fromkeys(
        ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"),
        frozenset({"number", "integer"}),
    ),
}
# The JSON type of each kept keyword's value: google-genai's Schema refuses any other.
_VALUE_TYPES = {
    **dict.fromkeys(("description", "format", "pattern"), "string"),
    **dict.fromkeys(("minimum", "maximum"), "number"),
    **dict.fromkeys(
        ("minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties"),
        "integer",
    ),
    **dict.fromkeys(("enum", "required", "anyOf"), "array"),
    "nullable": "boolean",
    "properties": "object",
}
_A_VALUE = {
    "string": "a string",
    "number": "a number",
    "integer": "an integer",
    "array": "a list",
    "boolean": "true or false",
    "object": "an object",
}
_ARGUMENT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_FORMATS = {
    "STRING": frozenset({"date-time", "enum"}),
    "NUMBER": frozenset({"float", "double"}),
    "INTEGER": frozenset({"int32", "int64", "enum"}),
}
_TYPES = {
    "string": "STRING",
    "number": "NUMBER",
    "integer": "INTEGER",
    "boolean": "BOOLEAN",
    "array": "ARRAY",
    "object": "OBJECT",
}


class GeminiSchemaError(Exception):
    """A schema the Gemini rewrite refuses; ``problems`` says why."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(problems)
        self.problems = problems


class _TooBig(Exception):
    pass


def gemini_schema(schema: Mapping[str, Any]) -> JsonSchema:
    """``schema`` as Gemini's ``Schema`` (new dicts), or ``GeminiSchemaError``."""
    try:
        rewriter = _Gemini(one_object_root(schema))
        root = _arguments(rewriter.node(rewriter.refs.root, (), 0))
    except SchemaProblem as exc:
        raise GeminiSchemaError([str(exc)]) from None
    except NoValue:
        raise GeminiSchemaError(["no arguments can satisfy this schema"]) from None
    except _TooBig as exc:
        raise GeminiSchemaError([str(exc)]) from None
    except RecursionError:
        raise GeminiSchemaError([f"the schema nests deeper than {MAX_DEPTH} levels"]) from None
    refusing = "Gemini refuses (1 to 64 letters, digits or '_', the first a letter or '_')"
    problem = argument_names_refused(root, _ARGUMENT_NAME, refusing)
    if problem is not None:
        raise GeminiSchemaError([problem])
    return root


class _Gemini:
    def __init__(self, root: JsonSchema) -> None:
        self.refs = Refs(root)
        self.left = MAX_NODES

    def spend(self) -> None:
        """One node more, written or read: ``_TooBig`` past ``MAX_NODES``."""
        self.left -= 1
        if self.left < 0:
            raise _TooBig(
                f"the schema has more than {MAX_NODES} nodes once its $refs are inlined "
                f"(Gemini's schemas have no references); reuse fewer models, or nest them less"
            )

    def node(self, schema: object, inlining: tuple[str, ...], depth: int) -> JsonSchema:
        self.spend()
        if depth > MAX_DEPTH:
            raise _TooBig(f"the schema nests deeper than {MAX_DEPTH} levels once inlined")
        if schema is True:
            return {}  # any value
        if not is_schema(schema):
            raise SchemaProblem(f"{json_text(schema)} is not a schema Gemini can take")
        node: JsonSchema
        node, inlining = self.merged(schema, inlining)
        node = _tuple_items(node)

        node = {("anyOf" if k == "oneOf" else k): v for k, v in node.items()}
        nullable = False

        if "type" in node:
            written = written_types(node["type"])
            kinds = [k for k in written if k != "null"]
            nullable = len(kinds) < len(written)
            if len(kinds) == 1:
                node = {**node, "type": kinds[0]}
            else:
                node = {k: v for k, v in node.items() if k != "type"}
                if kinds:
                    node = _type_branches(node, kinds)

        branches = node.get("anyOf")
        if is_list(branches):
            kept = [b for b in branches if not _is_null_schema(b)]
            nullable = nullable or len(kept) < len(branches)
            rest = {k: v for k, v in node.items() if k != "anyOf"}
            if len(kept) == 1 and is_schema(kept[0]):
                # One branch left: it becomes the node, and the field's own keywords win.
                branch, inlining = self.inline(kept[0], inlining)
                merged = {**branch, **rest}
                if nullable:
                    merged["nullable"] = True
                return self.node(merged, inlining, depth + 1)
            node = {**rest, "anyOf": kept}

        if "const" in node:
            node = {k: v for k, v in node.items() if k != "const"} | {"enum": [node["const"]]}

        notes: list[str] = []
        result: JsonSchema = {}
        for key, value in node.items():
            _check_value(key, value)
            if key == "properties":
                result[key] = {
                    name: self.node(sub, inlining, depth + 1) for name, sub in value.items()
                }
            elif key == "items":
                result[key] = self.node(value, inlining, depth + 1)
            elif key == "anyOf":
                result[key] = [self.node(sub, inlining, depth + 1) for sub in value]
            elif key == "additionalProperties" and _open(value) and "properties" not in node:
                # A map: Gemini has no additionalProperties, so its keys and values in words.
                notes.append(_map_note(value, node.get("propertyNames")))
            elif key == "propertyNames" and _is_map(node):
                continue  # said with the map's values
            elif key in _NOTED:
                notes.append(f"{key}: {json_text(value)}")
            elif key in _KEYWORDS:
                result[key] = value

        if "enum" in result:
            values: list[Any] = result["enum"]
            if None in values:
                nullable = True
                values = [v for v in values if v is not None]
            if "type" not in result:
                inferred = _json_type_of(values)
                if inferred is None and values:
                    # Values of several types (Literal[1, "a"]): one branch per type, so
                    # that a model answers 1 as a number, not as the string "1".
                    result = _with_notes(_enum_branches(result, values), notes)
                    if nullable:
                        result["nullable"] = True
                    return result
                if inferred is not None:
                    result["type"] = inferred
            result["enum"] = [v if isinstance(v, str) else json_text(v) for v in values]

        if "type" in result:
            result["type"] = _TYPES[result["type"]]
        if "enum" in result and result.get("type") in ("STRING", "INTEGER"):
            result.setdefault("format", "enum")
        fmt = result.get("format")
        if fmt is not None and fmt not in _FORMATS.get(result.get("type", ""), ()):
            del result["format"]
            notes.insert(0, f"format: {fmt}")
        result = _with_notes(result, notes)
        if nullable:
            result["nullable"] = True
        if result.get("required") == []:
            del result["required"]
        if result.get("type") == "ARRAY" and "items" not in result:
            result["items"] = {}  # Gemini refuses an ARRAY without items; {} is any item
        return result

    def merged(
        self, schema: JsonSchema, inlining: tuple[str, ...]
    ) -> tuple[JsonSchema, tuple[str, ...]]:
        """``schema`` with its ``$ref`` inlined and its ``allOf`` merged in."""
        while "$ref" in schema or "allOf" in schema:
            self.spend()  # what a reused model costs, merged again at each use
            if "$ref" in schema:
                schema, inlining = self.inline(schema, inlining)
                continue
            entries = schema["allOf"]
            if not is_list(entries):
                raise SchemaProblem("'allOf' is not a list")
            parts = [{k: v for k, v in schema.items() if k != "allOf"}]
            for entry in entries:
                if entry is True:
                    continue
                if not is_schema(entry):
                    raise NoValue
                part, _ = self.merged(entry, inlining)
                parts.append(part)
            schema = merge(parts)
        return schema, inlining

    def inline(
        self, schema: JsonSchema, inlining: tuple[str, ...]
    ) -> tuple[JsonSchema, tuple[str, ...]]:
        """``schema`` with its ``$ref`` replaced by what it points to (its own keywords win).

        A reference back into a schema that is being inlined is cut: only the
        node's own keywords stay (``{}`` means any value), as google-genai does.
        """
        if "$ref" not in schema:
            return schema, inlining
        ref = schema["$ref"]  # not a str ("$ref": null...): resolve() says so
        siblings = {k: v for k, v in schema.items() if k != "$ref"}
        target = self.refs.resolve(ref)
        if not is_schema(target) or ref in inlining:
            return siblings, inlining
        return {**target, **siblings}, (*inlining, str(ref))


def _check_value(key: str, value: Any) -> None:
    """``SchemaProblem`` unless ``value`` is what google-genai's ``Schema`` takes for ``key``."""
    expected = _VALUE_TYPES.get(key)
    if expected is not None and not allows_type({expected}, json_type(value)):
        raise SchemaProblem(f"{key!r} is {json_text(value)}, not {_A_VALUE[expected]}")
    if key == "required" and not all(isinstance(name, str) for name in value):
        raise SchemaProblem(f"'required' is {json_text(value)}, not a list of property names")


def _is_null_schema(schema: object) -> bool:
    return is_schema(schema) and schema.get("type") == "null" and "enum" not in schema


def _arguments(root: JsonSchema) -> JsonSchema:
    """The rewritten root (one object already: ``one_object_root``), checked to be one."""
    kind = root.get("type", "OBJECT")
    if kind != "OBJECT":
        raise SchemaProblem(f"the arguments must be an object, not {kind}")
    return root


def _open(additional: object) -> bool:
    """Whether ``additionalProperties`` lets in keys of its own (a map)."""
    return additional is True or is_schema(additional)


def _is_map(node: JsonSchema) -> bool:
    return _open(node.get("additionalProperties")) and "properties" not in node


def _map_note(values: object, keys: object) -> str:
    """A map in words: ``any keys, each value: {...}``, or the keys' ``propertyNames``."""
    any_value = values is True or values == {}
    each = "any values" if any_value else f"each value: {json_text(values)}"
    return f"{'any keys' if keys is None else f'keys: {json_text(keys)}'}, {each}"


def _type_branches(node: JsonSchema, kinds: list[Any]) -> JsonSchema:
    """``"type": [A, B]`` as ``anyOf``, each keyword in the branch of the type it is for."""
    own: JsonSchema = {}
    branches: list[JsonSchema] = [{"type": kind} for kind in kinds]
    for key, value in node.items():
        for_kinds = _KEYWORD_TYPES.get(key)
        if for_kinds is None:
            own[key] = value
            continue
        for branch in branches:
            if branch["type"] in for_kinds:
                branch[key] = value
    return {**own, "anyOf": branches}


def _tuple_items(schema: JsonSchema) -> JsonSchema:
    """``prefixItems`` (a tuple; draft 7's ``items: [...]``) as ``items``: any of the
    distinct item schemas."""
    prefix = schema.get("prefixItems")
    if not is_list(prefix):
        if not is_list(schema.get("items")):
            return schema
        rest = {k: v for k, v in schema.items() if k not in ("items", "additionalItems")}
        later = schema.get("additionalItems")
        return _tuple_items({**rest, "prefixItems": schema["items"], "items": later})
    distinct: dict[str, Any] = {}  # by JSON text: equal item schemas compare in linear time
    for item in [*prefix, *([schema["items"]] if is_schema(schema.get("items")) else [])]:
        distinct.setdefault(json_text(item), item)
    choices = list(distinct.values())
    rest = {k: v for k, v in schema.items() if k not in ("prefixItems", "items")}
    if choices:
        rest["items"] = choices[0] if len(choices) == 1 else {"anyOf": choices}
    return rest


def _with_notes(schema: JsonSchema, notes: list[str]) -> JsonSchema:
    """``schema`` with ``(note; note)`` added to its description."""
    if not notes:
        return schema
    note = f"({'; '.join(notes)})"
    description = schema.get("description")
    return {**schema, "description": f"{description} {note}" if description else note}


def _enum_branches(node: JsonSchema, values: list[Any]) -> JsonSchema:
    """``node`` (an enum of values of several types) as ``anyOf``, one typed enum per type."""
    by_type: dict[str, list[Any]] = {}
    for value in values:
        json_type = _json_type_of([value]) or "string"
        by_type.setdefault(json_type, []).append(value)
    branches: list[JsonSchema] = []
    for json_type, of_type in by_type.items():
        gemini_type = _TYPES.get(json_type, json_type.upper())
        branch: JsonSchema = {"type": gemini_type}
        if gemini_type != "BOOLEAN":  # a BOOLEAN takes no enum
            branch["enum"] = [v if isinstance(v, str) else json_text(v) for v in of_type]
        if gemini_type in ("STRING", "INTEGER"):
            branch["format"] = "enum"
        branches.append(branch)
    rest = {k: v for k, v in node.items() if k not in ("enum", "format")}
    return {**rest, "anyOf": branches}


def _json_type_of(values: list[Any]) -> str | None:
    if not values:
        return None
    if all(isinstance(v, str) for v in values):
        return "string"
    if all(isinstance(v, bool) for v in values):
        return "boolean"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return "integer"
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return "number"
    return None
