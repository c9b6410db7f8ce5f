"""Tool definitions in each provider's format: one pure function per format name.

``export_tools(definitions, format, strict=...)`` turns ``LlmToolDefinition``s
(or ``ToolMeta``s, or MCP tool definitions) into JSON-ready dicts. ``FORMATS``
names the formats; the CLI takes its ``--format`` choices from it. Nothing here
mutates its input: each schema is parsed anew from its JSON text, and every
rewrite builds new dicts.

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
mcp                ``{"name", "description", "inputSchema"}`` (an MCP ``tools/list`` entry);
                   from a ``ToolMeta``, also its ``title``, ``annotations`` (the hints
                   it says) and ``outputSchema``, where it has them
=================  =====================================================================

OpenAI strict mode (``strict=True``, only for ``openai`` and ``openai-responses``)
rewrites ``parameters`` into the subset Structured Outputs accepts
(``_strict_schema``); ``gemini`` rewrites them into Gemini's OpenAPI-subset
``Schema`` (``_gemini_schema``); ``anthropic`` makes a root ``anyOf``/``oneOf``/
``allOf`` one object (``_anthropic_schema``). The rewrites are pure and cached by
schema text, so exporting the same tools again costs one JSON parse per tool (each
call returns new dicts). ``docs/export.md`` lists every rule.

Tool names: the provider formats (``openai``, ``openai-responses``,
``anthropic``, ``gemini``) refuse a name those providers would reject
(``_tool_names``: Gemini's rule is its own); ``neutral`` and ``mcp`` take any name.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import Any, Literal, Protocol, TypeAlias, get_args

from ._anthropic_schema import AnthropicSchemaError, anthropic_schema
from ._gemini_schema import GeminiSchemaError, gemini_schema
from ._meta import LlmToolDefinition, ToolAnnotations, ToolMeta
from ._strict_schema import StrictSchemaError, strict_schema
from ._tool_names import (
    GEMINI_TOOL_NAME_RULE,
    TOOL_NAME_RULE,
    is_valid_gemini_tool_name,
    is_valid_tool_name,
    provider_safe_names,
)

__all__ = ["FORMATS", "STRICT_FORMATS", "FormatName", "export_tools"]

FormatName = Literal["neutral", "openai", "openai-responses", "anthropic", "gemini", "mcp"]

JsonSchema = dict[str, Any]


class _HasMeta(Protocol):
    """What holds one tool's ``ToolMeta`` as ``.meta``: an ``McpToolDefinition``."""

    @property
    def meta(self) -> ToolMeta: ...


Exportable: TypeAlias = "LlmToolDefinition | ToolMeta | _HasMeta"
"""What ``export_tools`` takes: a definition, a meta, or what ``mcp_tool_definitions`` gives."""

# ---------------------------------------------------------------------------
# The formats. Each takes (name, description, parameters) -> one tool; the parameters
# were rewritten already where the format (or strict mode) needs it.


def _neutral(name: str, description: str, schema: JsonSchema, strict: bool) -> dict[str, Any]:
    return {"name": name, "description": description, "input_schema": schema}


def _openai(name: str, description: str, schema: JsonSchema, strict: bool) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name, "description": description, "parameters": schema}
    if strict:
        function["strict"] = True
    return {"type": "function", "function": function}


def _openai_responses(
    name: str, description: str, schema: JsonSchema, strict: bool
) -> dict[str, Any]:
    return {
        "type": "function",
        "name": name,
        "description": description,
        "parameters": schema,
        "strict": strict,
    }


def _anthropic(name: str, description: str, schema: JsonSchema, strict: bool) -> dict[str, Any]:
    return {"name": name, "description": description, "input_schema": schema}


def _gemini(name: str, description: str, schema: JsonSchema, strict: bool) -> dict[str, Any]:
    declaration: dict[str, Any] = {"name": name, "description": description}
    if schema.get("properties"):  # Gemini rejects an OBJECT without properties
        declaration["parameters"] = schema
    return declaration


def _mcp(name: str, description: str, schema: JsonSchema, strict: bool) -> dict[str, Any]:
    return {"name": name, "description": description, "inputSchema": schema}


# MCP's names for the ToolAnnotations fields.
_MCP_HINTS = {
    "read_only": "readOnlyHint",
    "destructive": "destructiveHint",
    "idempotent": "idempotentHint",
    "open_world": "openWorldHint",
}


def _mcp_extras(meta: ToolMeta) -> dict[str, Any]:
    """What a ``ToolMeta`` tells MCP hosts besides the schema: only what it says."""
    extras: dict[str, Any] = {}
    if meta.title is not None:
        extras["title"] = meta.title
    hints = _mcp_hints(meta.annotations)
    if hints:
        extras["annotations"] = hints
    output_schema = meta.output_schema
    if output_schema is not None:
        extras["outputSchema"] = output_schema
    return extras


def _mcp_hints(annotations: ToolAnnotations) -> dict[str, bool]:
    """The MCP tool annotations (``readOnlyHint``...) of ``annotations``, the said ones only."""
    return {
        hint: value
        for field, hint in _MCP_HINTS.items()
        if (value := getattr(annotations, field)) is not None
    }


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

_MCP_RENAMES = f"{TOOL_NAME_RULE} (mcp_tool_definitions() does so for an MCP server's tools)"
# Formats whose providers refuse some names: which names they take, and what, in words.
_NAME_RULES: Mapping[str, tuple[Callable[[str], bool], str]] = {
    "openai": (is_valid_tool_name, _MCP_RENAMES),
    "openai-responses": (is_valid_tool_name, _MCP_RENAMES),
    "anthropic": (is_valid_tool_name, _MCP_RENAMES),
    "gemini": (is_valid_gemini_tool_name, GEMINI_TOOL_NAME_RULE),
}


def export_tools(
    definitions: Iterable[Exportable],
    format: FormatName,
    *,
    strict: bool = False,
) -> list[dict[str, Any]]:
    """The tools in ``format`` (one of ``FORMATS``), as JSON-ready dicts, in the given order.

    ``definitions`` holds ``LlmToolDefinition``s (``handle.tool_definitions_sorted()``),
    ``ToolMeta``s (``tool_metas(cls)``) or what ``mcp_tool_definitions()`` returns.
    ``strict=True`` (``openai`` and ``openai-responses`` only) rewrites each
    schema for OpenAI's strict mode. ``ValueError`` names every tool whose name
    the format's provider refuses, names given to two tools, or every place of
    every schema that has no form in the format; an unknown format raises
    ``ValueError`` too.

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
    if isinstance(definitions, (LlmToolDefinition, ToolMeta)) or _meta_of(definitions):
        raise TypeError("export_tools() takes a list of definitions; wrap a single one in [...]")
    specs = [_spec_of(definition) for definition in definitions]
    if format in _NAME_RULES:
        _check_names(specs, format)
    _check_unique(specs)
    kind = "strict" if strict else format if format in ("gemini", "anthropic") else None
    tools: list[dict[str, Any]] = []
    problems: list[str] = []
    for spec in specs:
        text = spec.input_schema_json
        try:
            if kind is not None:
                text = _rewritten(kind, text)
        except (StrictSchemaError, GeminiSchemaError, AnthropicSchemaError) as exc:
            problems.extend(f"{spec.name}: {problem}" for problem in exc.problems)
            continue
        tool = formatter(spec.name, spec.description, json.loads(text), strict)
        if format == "mcp" and isinstance(spec, ToolMeta):
            tool.update(_mcp_extras(spec))
        tools.append(tool)
    if problems:
        lines = "\n".join(f"  {problem}" for problem in problems)
        what = "strict OpenAI" if strict else "Gemini" if format == "gemini" else "Anthropic"
        raise ValueError(f"Cannot make {what} schemas:\n{lines}")
    return tools


def _meta_of(value: object) -> ToolMeta | None:
    meta = getattr(value, "meta", None)
    return meta if isinstance(meta, ToolMeta) else None


def _spec_of(definition: object) -> LlmToolDefinition | ToolMeta:
    if isinstance(definition, (LlmToolDefinition, ToolMeta)):
        return definition
    meta = _meta_of(definition)
    if meta is not None:
        return meta
    raise TypeError(
        f"export_tools() takes LlmToolDefinition or ToolMeta objects, or MCP tool definitions, "
        f"not {type(definition).__name__}: pass handle.tool_definitions_sorted(), "
        f"tool_metas(YourClass) (or YourClass.method.meta()), or await mcp_tool_definitions(...)"
    )


def _check_names(specs: list[LlmToolDefinition | ToolMeta], format: str) -> None:
    valid, rule = _NAME_RULES[format]
    bad = [spec.name for spec in specs if not valid(spec.name)]
    if not bad:
        return
    # A provider-safe name is refused by Gemini only for its first character (a digit, '-').
    safe = {
        name: new if valid(new) else f"_{new}"
        for name, new in zip(bad, provider_safe_names(bad), strict=True)
    }
    lines = "\n".join(f"  {name!r} (for instance {safe[name]!r})" for name in bad)
    raise ValueError(
        f"Tool names the {format} format's provider refuses; rename them to {rule}:\n{lines}"
    )


def _check_unique(specs: list[LlmToolDefinition | ToolMeta]) -> None:
    # Every provider refuses a request with two tools of one name.
    seen: set[str] = set()
    twice: set[str] = set()
    for spec in specs:
        (twice if spec.name in seen else seen).add(spec.name)
    if twice:
        names = ", ".join(repr(name) for name in sorted(twice)[:20])
        raise ValueError(f"Two tools with one name cannot be exported together: {names}")


@lru_cache(maxsize=16_384)
def _rewritten(kind: str, schema_json: str) -> str:
    """The rewrite of one schema, as JSON text: made once per distinct schema."""
    schema = json.loads(schema_json)
    rewrite = {"strict": strict_schema, "gemini": gemini_schema, "anthropic": anthropic_schema}
    return json.dumps(rewrite[kind](schema), ensure_ascii=False)
