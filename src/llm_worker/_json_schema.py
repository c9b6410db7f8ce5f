"""Reading JSON Schemas written by anyone: references, ``allOf``, and what a node admits.

The provider rewrites (``_strict_schema``, ``_gemini_schema``) and
``drop_introduced_nulls`` read schemas through these helpers, so they agree
on what a schema means. The reading rules, beyond JSON Schema itself:

- A node without ``type`` but with keywords of one type (``properties``,
  ``items``, ``pattern``, ``minimum``...) is a value of that type (of those
  types, if it has keywords of several): ``{"properties": {...}}`` is an object.
- ``allOf`` (and a ``$ref`` with assertions beside it) is merged into one node:
  written types intersect, ``properties`` and ``required`` join, bounds take
  the tighter value; an entry with ``additionalProperties: false`` keeps only
  its own properties. A merged node without a written type takes the types its
  keywords imply, as any node does. What cannot be merged exactly raises
  ``NoSingleForm`` (a ``SchemaProblem``). A model merged in at many places is
  merged once (``Refs.flat``), and merges of merges stay one flat ``allOf``, so
  merging takes time and space linear in the schema, nested at most
  ``MAX_DEPTH`` levels of ``$ref`` and ``allOf``.
- References are local JSON pointers (``#``, ``#/$defs/X``,
  ``#/definitions/X``, ``#/properties/a``...); any other raises ``SchemaProblem``.

Nothing here mutates a schema; every merge builds new dicts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, TypeGuard

__all__ = [
    "ANNOTATIONS",
    "MAX_DEPTH",
    "NOTED",
    "TYPES",
    "JsonSchema",
    "Merged",
    "NoSingleForm",
    "NoValue",
    "Refs",
    "SchemaProblem",
    "admits_null",
    "allows_type",
    "argument_names_refused",
    "flatten",
    "is_list",
    "is_schema",
    "json_text",
    "json_type",
    "merge",
    "node_count",
    "one_object_root",
    "single_valued",
    "types_of",
    "values_of",
    "written_types",
]

JsonSchema = dict[str, Any]

MAX_DEPTH = 64
"""How deeply nested a schema the rewrites follow (OpenAI itself allows 10 levels of objects)."""

TYPES = ("null", "boolean", "object", "array", "number", "integer", "string")

# Keywords that describe a value without constraining it (kept or dropped, never enforced).
ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$schema",
        "$id",
        "$anchor",
        "$defs",
        "definitions",
        "discriminator",
        "contentMediaType",
        "contentEncoding",
        "contentSchema",
    }
)
# Constraints no provider subset can express: rewrites keep them as a note in the description.
NOTED = frozenset(
    {
        "minLength",
        "maxLength",
        "uniqueItems",
        "minProperties",
        "maxProperties",
        "not",
        "if",
        "then",
        "else",
        "contains",
        "minContains",
        "maxContains",
        "propertyNames",
        "dependentRequired",
        "dependentSchemas",
        "dependencies",
    }
)
# Keywords that say which type a node without "type" is.
_TYPE_KEYWORDS: dict[str, frozenset[str]] = {
    "object": frozenset(
        {
            "properties",
            "required",
            "additionalProperties",
            "patternProperties",
            "propertyNames",
            "minProperties",
            "maxProperties",
            "dependentRequired",
            "dependentSchemas",
            "dependencies",
            "unevaluatedProperties",
        }
    ),
    "array": frozenset(
        {
            "items",
            "prefixItems",
            "additionalItems",
            "minItems",
            "maxItems",
            "uniqueItems",
            "contains",
            "minContains",
            "maxContains",
            "unevaluatedItems",
        }
    ),
    "string": frozenset({"pattern", "minLength", "maxLength", "format"}),
    "number": frozenset(
        {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
    ),
}
_LOWER_BOUNDS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
_UPPER_BOUNDS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")


class SchemaProblem(Exception):
    """A schema the rewrite cannot read or express; ``str()`` says what and why."""


class NoSingleForm(SchemaProblem):
    """An ``allOf`` whose entries no single node says together (two different ``pattern``s):
    a schema that is right, but that a merge cannot write."""


class NoValue(Exception):
    """No value satisfies the schema (an empty ``enum``, ``allOf`` of two types...)."""


class Merged(list[Any]):
    """The ``allOf`` of one property's schemas, made by a merge (not written by the user)."""


def is_schema(value: object) -> TypeGuard[JsonSchema]:
    return isinstance(value, dict)


def is_list(value: object) -> TypeGuard[list[Any]]:
    return isinstance(value, list)


def json_text(value: object) -> str:
    """``value`` as compact, key-sorted JSON: how values are compared and noted."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def json_type(value: object) -> str:
    """The JSON Schema type of a JSON value (``1.0`` is an integer, as JSON Schema says)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def node_count(schema: object) -> int:
    """How many dicts and lists ``schema`` holds (iteratively: any depth is fine)."""
    count = 0
    stack = [schema]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            count += 1
            stack.extend(value.values())  # pyright: ignore[reportUnknownArgumentType]
        elif isinstance(value, list):
            count += 1
            stack.extend(value)  # pyright: ignore[reportUnknownArgumentType]
    return count


class Refs:
    """Resolves the local ``$ref`` pointers of one root schema."""

    __slots__ = ("flat", "root")

    def __init__(self, root: JsonSchema) -> None:
        self.root = root
        # What each reference flattens to (``flatten``): a model that many ``allOf``s
        # reuse, at many levels, is flattened once, not once per path to it.
        self.flat: dict[str, JsonSchema] = {}

    def resolve(self, ref: object) -> JsonSchema | bool:
        """The schema ``ref`` points to; ``SchemaProblem`` if it points to none."""
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise SchemaProblem(f"the $ref {ref!r} is not a local reference (#/...)")
        node: object = self.root
        pointer = ref[1:]
        if "%" in pointer:  # a URI fragment; urllib.parse costs `import llm_worker` 3 ms
            from urllib.parse import unquote

            pointer = unquote(pointer)
        if pointer and not pointer.startswith("/"):
            raise SchemaProblem(f"the $ref {ref!r} names an anchor, not a JSON pointer")
        for part in pointer.split("/")[1:] if pointer else ():
            part = part.replace("~1", "/").replace("~0", "~")
            if is_schema(node) and part in node:
                node = node[part]
            elif is_list(node) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise SchemaProblem(f"the $ref {ref!r} points to nothing")
        if isinstance(node, bool) or is_schema(node):
            return node
        raise SchemaProblem(f"the $ref {ref!r} points to a value that is not a schema")


def types_of(node: JsonSchema) -> set[str] | None:
    """The types ``node`` allows by itself: its ``type``, else those its keywords imply.

    ``None`` means no type constraint (``enum``, ``const`` or ``anyOf`` may
    still constrain it). ``"number"`` includes integers. OpenAPI's ``nullable:
    true`` (in schemas converted from OpenAPI 3.0) adds ``"null"``.
    """
    kind = node.get("type")
    if kind is not None:
        kinds = written_types(kind)
        if node.get("nullable") is True:
            return {*kinds, "null"}
        return set(kinds)
    implied = {t for t, keywords in _TYPE_KEYWORDS.items() if not keywords.isdisjoint(node)}
    return implied or None


def written_types(kind: object) -> list[str]:
    """The types a ``type`` keyword of value ``kind`` names; ``SchemaProblem`` for any
    other value."""
    kinds: list[Any] = kind if is_list(kind) else [kind]
    unknown = [k for k in kinds if k not in TYPES]
    if unknown:
        raise SchemaProblem(f"'type' {unknown[0]!r} is not a JSON Schema type")
    return kinds


def argument_names_refused(root: JsonSchema, rule: re.Pattern[str], refuser: str) -> str | None:
    """The problem naming ``root``'s properties (a tool's arguments) that ``rule`` does not
    match in full, the first 20 of them (``refuser`` says who refuses them, and its rule), or
    ``None``: a provider refuses the whole request for one of them."""
    properties = root.get("properties")
    names = properties if is_schema(properties) else ()
    bad = [name for name in names if rule.fullmatch(name) is None]
    if not bad:
        return None
    return f"argument names {refuser}: " + ", ".join(repr(name) for name in bad[:20])


def allows_type(types: set[str] | None, kind: str) -> bool:
    if types is None or kind in types:
        return True
    return kind == "integer" and "number" in types


def _intersect(a: set[str] | None, b: set[str] | None) -> set[str] | None:
    if a is None or b is None:
        return b if a is None else a
    result = {t for t in a if allows_type(b, t)}
    if "number" in a and "integer" in b:
        result.add("integer")
    return result


def values_of(node: JsonSchema) -> list[Any] | None:
    """The values ``enum``/``const`` allow, or ``None`` if they do not constrain."""
    if "const" in node:
        return [node["const"]]
    enum = node.get("enum")
    return list(enum) if is_list(enum) else None


def flatten(
    schema: object, refs: Refs, resolving: frozenset[str] = frozenset(), depth: int = 0
) -> JsonSchema:
    """``schema`` with its ``$ref`` and ``allOf`` merged in; ``NoValue`` if nothing fits.

    ``anyOf``/``oneOf`` stay (at most one of them may come out of a merge).
    ``SchemaProblem`` past ``MAX_DEPTH`` nested references and ``allOf``s.
    """
    if schema is True:
        return {}
    if not is_schema(schema):
        raise NoValue
    if "$ref" not in schema and "allOf" not in schema:
        return schema
    if depth > MAX_DEPTH:
        raise SchemaProblem(f"the schema nests deeper than {MAX_DEPTH} levels of $ref and allOf")
    own = {k: v for k, v in schema.items() if k not in ("$ref", "allOf")}
    parts: list[JsonSchema] = [own]
    if "$ref" in schema:
        ref = schema["$ref"]
        if not isinstance(ref, str):
            raise SchemaProblem(f"the $ref {ref!r} is not a string")
        flat = refs.flat.get(ref)
        if flat is None:
            if ref in resolving:
                raise SchemaProblem(f"the $ref {ref!r} refers back to itself through allOf or $ref")
            target = refs.resolve(ref)
            flat = refs.flat[ref] = flatten(target, refs, resolving | {ref}, depth + 1)
        parts.append(flat)
    if "allOf" in schema:
        all_of = schema["allOf"]
        if not is_list(all_of):
            raise SchemaProblem("'allOf' is not a list")
        parts.extend(flatten(entry, refs, resolving, depth + 1) for entry in all_of)
    return merge(parts)


def merge(parts: list[JsonSchema]) -> JsonSchema:
    """One node accepting exactly what every node of ``parts`` accepts (flat nodes only).

    The first part's annotations win. ``SchemaProblem`` where no single node can
    say the same; ``NoValue`` when nothing satisfies them all.
    """
    parts = [p for p in parts if p]
    if len(parts) == 1:
        return parts[0]
    result: JsonSchema = {}
    types: set[str] | None = None
    values: list[Any] | None = None
    properties: dict[str, list[Any]] = {}
    required: list[str] = []
    seen: set[str] = set()
    closed: list[set[str]] = []
    items: list[Any] = []
    for part in parts:
        if "type" in part:  # only written types intersect; the merged keywords imply the rest
            types = _intersect(types, types_of(part))
        part_values = values_of(part)
        if part_values is not None:
            if values is None:
                values = part_values
            else:
                accepted = {json_text(p) for p in part_values}
                values = [v for v in values if json_text(v) in accepted]
        own = part.get("properties", {})
        if is_schema(own):
            for name, sub in own.items():
                properties.setdefault(name, []).append(sub)
        names = part.get("required", [])
        if is_list(names):
            for name in names:
                if isinstance(name, str) and name not in seen:
                    seen.add(name)
                    required.append(name)
        extra = part.get("additionalProperties")
        if extra is False:
            closed.append(set(own) if is_schema(own) else set())
        elif extra is not None and extra is not True and extra != {}:
            raise NoSingleForm("allOf of objects with additionalProperties schemas has no merge")
        if "items" in part:
            items.append(part["items"])
        for key, value in part.items():
            _merge_keyword(result, key, value)
    # OpenAPI's nullable is in `types` (types_of reads it), where the parts intersect: one
    # part's nullable copied to the merged node would let a null through the others.
    result.pop("nullable", None)
    if types is not None:
        if not types:
            raise NoValue
        result["type"] = [t for t in TYPES if t in types]
    if values is not None:
        result.pop("const", None)
        result["enum"] = values
    if properties:
        allowed = closed[0].intersection(*closed[1:]) if closed else None
        result["properties"] = {
            name: _all_of(subs)
            for name, subs in properties.items()
            if allowed is None or name in allowed
        }
    if closed:
        result["additionalProperties"] = False
        allowed_names = closed[0].intersection(*closed[1:])
        if any(name not in allowed_names for name in required):
            # No object holds a required key that a closed part forbids.
            if types is None:
                types = types_of({**result, "properties": {}}) or set(TYPES)
            types = types - {"object"}
            if not types:
                raise NoValue
            result["type"] = [t for t in TYPES if t in types]
    if required:
        result["required"] = required
    if items:
        result["items"] = _all_of(items)
    return result


def _all_of(schemas: list[Any]) -> Any:
    """One schema for what all of ``schemas`` accept: a ``Merged`` allOf holding each once.

    An entry that a merge made (``{"allOf": Merged}``) gives its own entries, so a model
    merged in at many levels (its properties again at each) stays one flat list, and the
    result stays small: nested, merges of merges would double at each level.
    """
    entries: dict[int, Any] = {}  # by identity: a merge shares the schemas it merges
    for schema in schemas:
        made = schema.get("allOf") if is_schema(schema) and len(schema) == 1 else None
        for entry in made if isinstance(made, Merged) else [schema]:
            entries.setdefault(id(entry), entry)
    distinct = list(entries.values())
    return distinct[0] if len(distinct) == 1 else {"allOf": Merged(distinct)}


def _merge_keyword(result: JsonSchema, key: str, value: Any) -> None:
    if key in ("type", "enum", "const", "properties", "required", "additionalProperties", "items"):
        return  # merged by the caller
    if key not in result:
        result[key] = value
        return
    old = result[key]
    if key in ANNOTATIONS or key in NOTED or json_text(old) == json_text(value):
        return  # the first annotation wins; a noted constraint is noted once
    if key in _LOWER_BOUNDS and _numbers(old, value):
        result[key] = max(old, value)
    elif key in _UPPER_BOUNDS and _numbers(old, value):
        result[key] = min(old, value)
    elif key == "multipleOf" and _numbers(old, value) and _divides(old, value):
        result[key] = max(old, value)
    elif key == "uniqueItems":
        result[key] = bool(old) or bool(value)
    else:
        raise NoSingleForm(f"allOf with two different {key!r} has no single form")


def _numbers(*values: object) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def _divides(a: float, b: float) -> bool:
    small, large = sorted((a, b))
    try:
        return small > 0 and (large / small).is_integer()
    except OverflowError:  # JSON integers have no bound; a ratio past the largest float
        return False


def admits_null(schema: object, refs: Refs) -> bool:
    """Whether ``null`` is valid for ``schema`` (read as this module's docstring says).

    ``SchemaProblem`` past ``MAX_DEPTH`` nested ``anyOf``s.
    """
    return _admits_null(schema, refs, {}, 0)


def _admits_null(schema: object, refs: Refs, seen: dict[int, object], depth: int) -> bool:
    """``seen``: the ``anyOf`` branches read so far, by identity (held, so no id is reused).

    Null is valid through some branch only if it is through a branch read once, so a
    branch reached again adds nothing: branches reused through ``$ref``s cost linear
    time, and a branch that refers back to its own ``anyOf`` ends the search.
    """
    try:
        node = flatten(schema, refs)
    except NoValue:
        return False
    own_types = types_of(node)
    if own_types is not None and "null" not in own_types:
        return False
    values = values_of(node)
    if values is not None and None not in values:
        return False
    branches = node.get("anyOf", node.get("oneOf"))
    if is_list(branches):
        if depth >= MAX_DEPTH:
            raise SchemaProblem(f"the schema nests deeper than {MAX_DEPTH} levels of anyOf")
        unread = [branch for branch in branches if id(branch) not in seen]
        seen.update((id(branch), branch) for branch in unread)
        return any(_admits_null(branch, refs, seen, depth + 1) for branch in unread)
    return True


def single_valued(schema: object) -> bool:
    """Whether ``schema`` is written as one value other than null (``const``, one ``enum``).

    Only the node as written (or the schemas a merge put together for one
    property) counts: a ``$ref`` is not followed.
    """
    if not is_schema(schema):
        return False
    merged = schema.get("allOf")
    if isinstance(merged, Merged):
        return any(single_valued(part) for part in merged)
    values = values_of(schema)
    return values is not None and len(values) == 1 and values[0] is not None


_COMBINATORS = ("anyOf", "oneOf", "allOf")
_ROOT_KEYWORDS = (*_COMBINATORS, "$ref")
_DEFINITIONS = ("$defs", "definitions")


def one_object_root(schema: Mapping[str, Any]) -> JsonSchema:
    """``schema`` with its root one object, as the providers' tool parameters must be.

    A root ``$ref`` or ``allOf`` is merged in; the properties of ``anyOf``/``oneOf``
    branches join the root's (required where every branch requires them), the branches
    said in the description; ``"type": ["object", "null"]`` is ``"object"``. Any other
    root is returned as it is (new dicts where it changed). ``SchemaProblem`` for a
    root that cannot be read: a ``$ref`` that points to nothing, a ``type`` that names no
    JSON type, nesting past ``MAX_DEPTH``. An ``allOf`` no single node says is left out.
    """
    kind = schema.get("type")
    if not any(key in schema for key in _ROOT_KEYWORDS) and not is_list(kind):
        return dict(schema)
    refs = Refs(dict(schema))
    definitions = {k: v for k, v in schema.items() if k in _DEFINITIONS}
    own = {k: v for k, v in schema.items() if k not in _DEFINITIONS}
    try:
        root = flatten(own, refs)
    except (NoSingleForm, NoValue):  # the tool's validation checks what a merge cannot say
        root = {k: v for k, v in own.items() if k != "allOf"}
    for key in ("anyOf", "oneOf"):
        branches = root.get(key)
        if is_list(branches):
            root = _joined(root, key, branches, refs)
    root = {k: v for k, v in root.items() if k not in _COMBINATORS}
    kind = root.get("type")
    if kind is None or (is_list(kind) and "object" in kind):
        root["type"] = "object"
    return {**root, **definitions}


def _joined(root: JsonSchema, key: str, branches: list[Any], refs: Refs) -> JsonSchema:
    """``root`` with the properties of its ``anyOf``/``oneOf`` branches that can be objects;
    when there are several, they are said in the description."""
    properties = dict(root.get("properties", {})) if is_schema(root.get("properties")) else {}
    written = root.get("required")
    required = [name for name in written if isinstance(name, str)] if is_list(written) else []
    every: set[str] | None = None
    objects: list[Any] = []
    for branch in branches:
        try:
            node = flatten(branch, refs)
        except (SchemaProblem, NoValue):
            node = branch if is_schema(branch) else {}
        types = types_of(node)
        if types is not None and "object" not in types:
            continue  # arguments are an object: a branch of another type never applies
        objects.append(branch)
        own = node.get("properties")
        for name, sub in own.items() if is_schema(own) else ():
            properties.setdefault(name, sub)
        listed = node.get("required")
        names: set[str] = set()
        if is_list(listed):
            names = {name for name in listed if isinstance(name, str)}
        every = names if every is None else every & names
    required += sorted((every or set()) - set(required))
    joined = dict(root)
    if len(objects) > 1:
        note = f"(the arguments match {key} {json_text(objects)})"
        description = root.get("description")
        joined["description"] = f"{description} {note}" if description else note
    if properties:
        joined["properties"] = properties
    if required:
        joined["required"] = required
    return joined
