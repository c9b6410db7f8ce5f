"""Tool definitions in each provider's format: one pure function per format name.

``export_tools(definitions, format, strict=...)`` turns ``LlmToolDefinition``s
into JSON-ready dicts. ``FORMATS`` names the formats; the CLI takes its
``--format`` choices from it. Nothing here mutates its input (a definition's
``input_schema`` is a fresh copy on every read, and every rewrite below builds
new dicts).

=================  =====================================================================
format             one tool becomes
=================  =====================================================================
neutral            ``{"name", "description", "input_schema"}`` (``LlmToolDefinition``)
openai             ``{"type": "function", "function": {"name", "description",
                   "parameters"[, "strict": true]}}`` (Chat Completions ``tools``)
openai-responses   ``{"type": "function", "name", "description", "parameters",
                   "strict"}`` (Responses API ``tools``)
anthropic          ``{"name", "description", "input_schema"}`` (Messages API ``tools``)
gemini             ``{"name", "description"[, "parameters"]}``: a ``FunctionDeclaration``
                   whose ``parameters`` is Gemini's OpenAPI-subset ``Schema``
mcp                ``{"name", "description", "inputSchema"}`` (an MCP ``tools/list`` entry)
=================  =====================================================================

OpenAI strict mode (``strict=True``, only for ``openai`` and ``openai-responses``)
rewrites ``parameters`` into the subset Structured Outputs accepts (OpenAI's
Structured Outputs guide, "Supported schemas"). The rules, applied to every node:

1. Every object gets ``additionalProperties: false`` and lists every property in
   ``required`` (in declaration order), as the ``openai`` SDK's
   ``to_strict_json_schema`` does. An argument that may be left out becomes
   nullable: the model sends ``null`` for "not given", and the tool's
   validation reads ``null`` as the argument's default (``limit: int = 10``
   becomes ``anyOf: [integer, null]``). Fields of nested models are the user's
   own: they stay as their model validates them, and the model sends a value.
2. ``default`` is removed (strict mode does not support it); a default other
   than ``None`` moves into the description as a note, ``"(default: 10)"``, so
   the model can still choose it.
3. Only the documented keywords are kept: ``type``, ``properties``, ``required``,
   ``additionalProperties``, ``items``, ``anyOf``, ``enum``, ``const``, ``$ref``,
   ``$defs``, ``description``, ``title``; for strings ``pattern`` and ``format``
   (date-time, time, date, duration, email, hostname, ipv4, ipv6, uuid); for
   numbers ``multipleOf``, ``maximum``, ``exclusiveMaximum``, ``minimum``,
   ``exclusiveMinimum``; for arrays ``minItems``, ``maxItems``. Of the rest,
   ``minLength``, ``maxLength``, ``uniqueItems``, ``minProperties``,
   ``maxProperties`` and any other ``format`` become a note in the description
   (``"(minLength: 1)"``); the others (``discriminator``, ``examples``...) go.
   The tool's own validation still enforces all of them.
4. ``oneOf`` (pydantic's discriminated unions) becomes ``anyOf``: the branches
   are disjoint, so "any of" accepts the same values. A one-entry ``allOf`` is
   merged into the node. ``prefixItems`` (a tuple) becomes ``items`` accepting
   any of the distinct item schemas (looser: the position of each type is lost).
5. A ``$ref`` with sibling keywords (a field's description next to a model
   reference) is replaced by the referenced schema with the siblings on top, as
   the ``openai`` SDK does. A ``$ref`` back into a schema being inlined (a
   recursive model) becomes ``{"anyOf": [{"$ref": ...}], ...siblings}``. Plain
   ``$ref``/``$defs`` are kept, so recursive models work.
6. What strict mode cannot express at all, an object with keys not named in
   advance (``dict[str, X]``) or a value of any type (``Any``), makes
   ``export_tools`` raise one ``ValueError`` naming every such place in every tool.

Gemini takes "a select subset of an OpenAPI 3.0 schema object" (its ``Schema``:
type, format, description, nullable, enum, items, properties, required, anyOf,
minimum, maximum, minItems, maxItems, minLength, maxLength, pattern,
minProperties, maxProperties, default, ...). The rewrites:

1. ``$ref`` is inlined from ``$defs`` (the field's own keywords, such as its
   description, win over the model's), and ``$defs`` is dropped. A reference back
   into a model being inlined (a recursive model) is cut there and becomes ``{}``
   (any value) plus the field's own keywords, as the ``google-genai`` SDK does.
2. Nullability: a ``{"type": "null"}`` branch of ``anyOf`` (or ``"null"`` in a type
   list, or ``null`` in an ``enum``) is removed and ``nullable: true`` set; an
   ``anyOf`` left with one branch is merged into the node. ``oneOf`` becomes
   ``anyOf``; a one-entry ``allOf`` is merged; ``prefixItems`` becomes ``items``
   as in strict mode.
3. ``const: v`` becomes ``enum: [v]``. Enum values become strings (Gemini's
   ``enum`` is a list of strings; others are written as JSON, ``1`` → ``"1"``), a
   missing ``type`` is inferred from the values, and a ``STRING`` or ``INTEGER``
   enum gets ``format: "enum"``, as the API reference asks.
4. ``type`` is written as Gemini's ``Type`` enum name: ``"string"`` → ``"STRING"``.
5. ``format`` stays where Gemini documents it (``date-time`` and ``enum`` for
   strings, ``float``/``double``, ``int32``/``int64``/``enum``); any other format,
   and ``exclusiveMinimum``, ``exclusiveMaximum``, ``multipleOf`` and
   ``uniqueItems``, become a note in the description: ``"(format: uri)"``,
   ``"(exclusiveMinimum: 0)"``.
6. Everything else outside Gemini's ``Schema`` is dropped: ``additionalProperties``,
   ``$schema``, ``title``, ``examples``, ``discriminator``... and an empty
   ``required`` list.
7. A tool without parameters gets no ``parameters`` at all (Gemini rejects an
   ``OBJECT`` with no properties).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, TypeGuard, get_args

from ._meta import LlmToolDefinition, ToolMeta

__all__ = ["FORMATS", "STRICT_FORMATS", "FormatName", "export_tools"]

FormatName = Literal["neutral", "openai", "openai-responses", "anthropic", "gemini", "mcp"]

JsonSchema = dict[str, Any]

# ---------------------------------------------------------------------------
# The formats. Each takes (name, description, input_schema, strict) -> one tool.


def _neutral(name: str, description: str, schema: JsonSchema, strict: bool) -> dict[str, Any]:
    return {"name": name, "description": description, "input_schema": schema}


def _openai(name: str, description: str, schema: JsonSchema, strict: bool) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name, "description": description}
    if strict:
        function["parameters"] = _strict_parameters(schema)
        function["strict"] = True
    else:
        function["parameters"] = schema
    return {"type": "function", "function": function}


def _openai_responses(
    name: str, description: str, schema: JsonSchema, strict: bool
) -> dict[str, Any]:
    return {
        "type": "function",
        "name": name,
        "description": description,
        "parameters": _strict_parameters(schema) if strict else schema,
        "strict": strict,
    }


def _anthropic(name: str, description: str, schema: JsonSchema, strict: bool) -> dict[str, Any]:
    return {"name": name, "description": description, "input_schema": schema}


def _gemini(name: str, description: str, schema: JsonSchema, strict: bool) -> dict[str, Any]:
    declaration: dict[str, Any] = {"name": name, "description": description}
    parameters = _gemini_schema(schema, defs=schema.get("$defs", {}))
    if parameters.get("properties"):
        declaration["parameters"] = parameters
    return declaration


def _mcp(name: str, description: str, schema: JsonSchema, strict: bool) -> dict[str, Any]:
    return {"name": name, "description": description, "inputSchema": schema}


_Formatter = Callable[[str, str, JsonSchema, bool], dict[str, Any]]

_FORMATTERS: Mapping[str, _Formatter] = {
    "neutral": _neutral,
    "openai": _openai,
    "openai-responses": _openai_responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "mcp": _mcp,
}

FORMATS: tuple[FormatName, ...] = get_args(FormatName)
"""Every format name ``export_tools`` accepts, in the order of ``FormatName``."""

STRICT_FORMATS: tuple[FormatName, ...] = ("openai", "openai-responses")
"""The formats ``strict=True`` applies to."""


def export_tools(
    definitions: Iterable[LlmToolDefinition],
    format: FormatName,
    *,
    strict: bool = False,
) -> list[dict[str, Any]]:
    """The tools in ``format`` (one of ``FORMATS``), as JSON-ready dicts, in the given order.

    ``strict=True`` (``openai`` and ``openai-responses`` only) rewrites each
    schema for OpenAI's strict mode; it raises ``ValueError`` naming every
    schema that cannot be strict. An unknown format raises ``ValueError``.

    >>> from llm_worker import ToolMeta
    >>> meta = ToolMeta(name="ping", description="Ping.")
    >>> export_tools([meta.to_llm_definition()], "mcp")
    [{'name': 'ping', 'description': 'Ping.', 'inputSchema': {'type': 'object', 'properties': {}}}]
    """
    formatter = _FORMATTERS.get(format)
    if formatter is None:
        raise ValueError(f"unknown format {format!r}; choose one of: {', '.join(FORMATS)}")
    if strict and format not in STRICT_FORMATS:
        raise ValueError(
            f"strict=True applies only to the openai and openai-responses formats, not {format!r}"
        )
    if isinstance(definitions, (LlmToolDefinition, ToolMeta)):
        raise TypeError("export_tools() takes a list of definitions; wrap a single one in [...]")
    tools: list[dict[str, Any]] = []
    problems: list[str] = []
    for definition in definitions:
        if not isinstance(definition, (LlmToolDefinition, ToolMeta)):
            raise TypeError(
                f"export_tools() takes LlmToolDefinition objects, not {type(definition).__name__}"
            )
        try:
            tools.append(
                formatter(definition.name, definition.description, definition.input_schema, strict)
            )
        except _StrictSchemaError as exc:
            problems.extend(f"{definition.name}: {problem}" for problem in exc.problems)
    if problems:
        lines = "\n".join(f"  {problem}" for problem in problems)
        raise ValueError(f"Cannot make strict OpenAI schemas:\n{lines}")
    return tools


# ---------------------------------------------------------------------------
# Shared schema helpers.


def _is_schema(value: object) -> TypeGuard[JsonSchema]:
    return isinstance(value, dict)


def _is_list(value: object) -> TypeGuard[list[Any]]:
    return isinstance(value, list)


def _is_null_schema(schema: object) -> bool:
    return _is_schema(schema) and schema.get("type") == "null" and "enum" not in schema


def _merge_all_of(schema: JsonSchema) -> JsonSchema:
    """Merge a one-entry ``allOf`` into the node (the node's own keywords win)."""
    all_of = schema.get("allOf")
    if not (_is_list(all_of) and len(all_of) == 1 and _is_schema(all_of[0])):
        return schema
    rest = {k: v for k, v in schema.items() if k != "allOf"}
    return {**all_of[0], **rest}


def _tuple_items(schema: JsonSchema) -> JsonSchema:
    """``prefixItems`` (a tuple) as ``items``: any of the distinct item schemas."""
    prefix = schema.get("prefixItems")
    if not _is_list(prefix):
        return schema
    choices: list[Any] = []
    for item in [*prefix, *([schema["items"]] if _is_schema(schema.get("items")) else [])]:
        if item not in choices:
            choices.append(item)
    rest = {k: v for k, v in schema.items() if k not in ("prefixItems", "items")}
    if choices:
        rest["items"] = choices[0] if len(choices) == 1 else {"anyOf": choices}
    return rest


def _resolve(root: JsonSchema, ref: str) -> JsonSchema | None:
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not _is_schema(node) or part not in node:
            return None
        node = node[part]
    return node if _is_schema(node) else None


# ---------------------------------------------------------------------------
# OpenAI strict mode.

_STRICT_KEYWORDS = frozenset(
    {
        "$ref",
        "$defs",
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "anyOf",
        "enum",
        "const",
        "description",
        "title",
        "pattern",
        "format",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "minItems",
        "maxItems",
    }
)
_STRICT_FORMATS_SUPPORTED = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
# Dropped keywords that constrain a value: they live on as a note in the description.
_STRICT_NOTED = frozenset(
    {"minLength", "maxLength", "uniqueItems", "minProperties", "maxProperties"}
)


class _StrictSchemaError(Exception):
    def __init__(self, problems: list[str]) -> None:
        super().__init__(problems)
        self.problems = problems


def _strict_parameters(schema: JsonSchema) -> JsonSchema:
    problems: list[str] = []
    result = _nullable_defaults(_strict(schema, schema, "", (), problems), schema)
    if problems:
        raise _StrictSchemaError(problems)
    return result


def _nullable_defaults(strict: JsonSchema, original: JsonSchema) -> JsonSchema:
    """Let each top-level argument that had a default also be ``null``.

    Strict mode requires every property; ``null`` is how the model says "use
    the default", and the tool's validation reads it that way. Nested models
    are the user's own and validate ``null`` as they see fit, so they are left.
    """
    properties = strict.get("properties")
    if not _is_schema(properties):
        return strict
    required = original.get("required", [])
    rewritten: JsonSchema = {}
    for name, sub in properties.items():
        if _is_schema(sub) and name not in required and not _admits_null(sub):
            core = {k: v for k, v in sub.items() if k != "description"}
            outer = {k: v for k, v in sub.items() if k == "description"}
            any_of = core["anyOf"] if set(core) == {"anyOf"} else [core]
            sub = {"anyOf": [*any_of, {"type": "null"}], **outer}
        rewritten[name] = sub
    return {**strict, "properties": rewritten}


def _admits_null(schema: JsonSchema) -> bool:
    kind = schema.get("type")
    if kind == "null" or (_is_list(kind) and "null" in kind):
        return True
    any_of = schema.get("anyOf")
    return _is_list(any_of) and any(_is_schema(s) and _admits_null(s) for s in any_of)


def _strict(
    schema: JsonSchema,
    root: JsonSchema,
    path: str,
    inlining: tuple[str, ...],
    problems: list[str],
) -> JsonSchema:
    node = _tuple_items(_merge_all_of(schema))
    if "oneOf" in node and "anyOf" not in node:
        node = {("anyOf" if k == "oneOf" else k): v for k, v in node.items()}
    several_all_of = _is_list(node.get("allOf"))
    if several_all_of:
        problems.append(f"{_where(path)}: allOf with several schemas has no strict form")
    kept: JsonSchema = {}
    notes: list[str] = []
    for key, value in node.items():
        if key == "default":
            if value is not None:  # a None default needs no note: the type admits null
                notes.append(f"default: {_json(value)}")
        elif key == "format" and value not in _STRICT_FORMATS_SUPPORTED:
            notes.append(f"format: {value}")
        elif key in _STRICT_KEYWORDS:
            kept[key] = value
        elif key in _STRICT_NOTED:
            notes.append(f"{key}: {_json(value)}")
    node = kept

    ref = node.get("$ref")
    if isinstance(ref, str) and (len(node) > 1 or notes):
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        target = _resolve(root, ref)
        if target is not None and ref not in inlining:
            inlined = _strict({**target, **siblings}, root, path, (*inlining, ref), problems)
            return _with_notes(inlined, notes)
        # A recursive reference cannot be inlined; anyOf may carry siblings where $ref may not.
        node = {"anyOf": [{"$ref": ref}], **siblings}

    result: JsonSchema = {}
    for key, value in node.items():
        if key in ("properties", "$defs") and _is_schema(value):
            result[key] = {
                name: _strict(sub, root, _join(path, key, name), inlining, problems)
                if _is_schema(sub)
                else sub
                for name, sub in value.items()
            }
        elif key == "items" and _is_schema(value):
            result[key] = _strict(value, root, _join(path, key), inlining, problems)
        elif key == "anyOf" and _is_list(value):
            result[key] = [
                _strict(sub, root, _join(path, key, str(i)), inlining, problems)
                if _is_schema(sub)
                else sub
                for i, sub in enumerate(value)
            ]
        else:
            result[key] = value

    if not several_all_of and not any(
        k in result for k in ("type", "$ref", "anyOf", "enum", "const")
    ):
        problems.append(f"{_where(path)}: a value of any type (no 'type') has no strict form")
    kind = result.get("type")
    if kind == "object" or (_is_list(kind) and "object" in kind) or "properties" in result:
        extra = result.get("additionalProperties", True if "properties" not in result else None)
        if extra is not None and extra is not False:
            problems.append(
                f"{_where(path)}: an object with keys not named in advance (such as "
                f"dict[str, ...]) has no strict form (strict mode needs additionalProperties false)"
            )
        result["additionalProperties"] = False
        result["required"] = list(result.get("properties", {}))
    return _with_notes(result, notes)


def _join(path: str, *parts: str) -> str:
    return "/".join((path, *parts)) if path else "/".join(parts)


def _where(path: str) -> str:
    return f"at {path}" if path else "at the top level"


# ---------------------------------------------------------------------------
# Gemini.

_GEMINI_KEYWORDS = frozenset(
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
_GEMINI_NOTED = frozenset({"exclusiveMinimum", "exclusiveMaximum", "multipleOf", "uniqueItems"})
_GEMINI_FORMATS = {
    "STRING": frozenset({"date-time", "enum"}),
    "NUMBER": frozenset({"float", "double"}),
    "INTEGER": frozenset({"int32", "int64", "enum"}),
}
_GEMINI_TYPES = {
    "string": "STRING",
    "number": "NUMBER",
    "integer": "INTEGER",
    "boolean": "BOOLEAN",
    "array": "ARRAY",
    "object": "OBJECT",
}


def _gemini_schema(
    schema: JsonSchema, inlining: tuple[str, ...] = (), *, defs: JsonSchema
) -> JsonSchema:
    node = _tuple_items(_merge_all_of(schema))

    if "$ref" in node:
        return _gemini_schema(*_inline_ref(node, defs, inlining), defs=defs)

    node = {("anyOf" if k == "oneOf" else k): v for k, v in node.items()}
    nullable = False

    kind = node.get("type")
    if _is_list(kind):
        kinds = [k for k in kind if k != "null"]
        nullable = len(kinds) < len(kind)
        node = {k: v for k, v in node.items() if k != "type"}
        if len(kinds) == 1:
            node["type"] = kinds[0]
        elif kinds:
            node["anyOf"] = [{"type": k} for k in kinds]
    elif kind == "null":
        node = {k: v for k, v in node.items() if k != "type"}
        nullable = True

    branches = node.get("anyOf")
    if _is_list(branches):
        kept = [b for b in branches if not _is_null_schema(b)]
        nullable = nullable or len(kept) < len(branches)
        rest = {k: v for k, v in node.items() if k != "anyOf"}
        if len(kept) == 1 and _is_schema(kept[0]):
            # One branch left: it becomes the node, and the field's own keywords win.
            branch, inlining = _inline_ref(kept[0], defs, inlining)
            merged = {**branch, **rest}
            if nullable:
                merged["nullable"] = True
            return _gemini_schema(merged, inlining, defs=defs)
        node = {**rest, "anyOf": kept}

    if "const" in node:
        node = {k: v for k, v in node.items() if k != "const"} | {"enum": [node["const"]]}

    notes: list[str] = []
    result: JsonSchema = {}
    for key, value in node.items():
        if key == "properties" and _is_schema(value):
            result[key] = {
                name: _gemini_schema(sub, inlining, defs=defs) if _is_schema(sub) else sub
                for name, sub in value.items()
            }
        elif key == "items" and _is_schema(value):
            result[key] = _gemini_schema(value, inlining, defs=defs)
        elif key == "anyOf" and _is_list(value):
            result[key] = [
                _gemini_schema(sub, inlining, defs=defs) if _is_schema(sub) else sub
                for sub in value
            ]
        elif key in _GEMINI_NOTED:
            notes.append(f"{key}: {_json(value)}")
        elif key in _GEMINI_KEYWORDS:
            result[key] = value

    if "enum" in result and _is_list(result["enum"]):
        values: list[Any] = result["enum"]
        if None in values:
            nullable = True
            values = [v for v in values if v is not None]
        if "type" not in result:
            inferred = _json_type_of(values)
            if inferred is not None:
                result["type"] = inferred
        result["enum"] = [v if isinstance(v, str) else _json(v) for v in values]

    if isinstance(result.get("type"), str):
        result["type"] = _GEMINI_TYPES.get(result["type"], result["type"].upper())
    if "enum" in result and result.get("type") in ("STRING", "INTEGER"):
        result.setdefault("format", "enum")
    fmt = result.get("format")
    if fmt is not None and fmt not in _GEMINI_FORMATS.get(result.get("type", ""), ()):
        del result["format"]
        notes.insert(0, f"format: {fmt}")
    result = _with_notes(result, notes)
    if nullable:
        result["nullable"] = True
    if result.get("required") == []:
        del result["required"]
    return result


def _inline_ref(
    schema: JsonSchema, defs: JsonSchema, inlining: tuple[str, ...]
) -> tuple[JsonSchema, tuple[str, ...]]:
    """``schema`` with its ``$ref`` replaced by the model it names (its own keywords win).

    A reference back into a model that is being inlined is cut: only the
    node's own keywords stay (``{}`` means any value), as google-genai does.
    """
    ref = schema.get("$ref")
    if not isinstance(ref, str):
        return schema, inlining
    siblings = {k: v for k, v in schema.items() if k != "$ref"}
    name = ref.removeprefix("#/$defs/")
    target = defs.get(name) if ref.startswith("#/$defs/") else None
    if not _is_schema(target) or name in inlining:
        return siblings, inlining
    return {**target, **siblings}, (*inlining, name)


def _with_notes(schema: JsonSchema, notes: list[str]) -> JsonSchema:
    """``schema`` with ``(note; note)`` added to its description."""
    if not notes:
        return schema
    note = f"({'; '.join(notes)})"
    description = schema.get("description")
    return {**schema, "description": f"{description} {note}" if description else note}


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


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
