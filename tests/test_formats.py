"""Tests for ``llm_worker._formats``: provider tool formats and OpenAI strict mode.

Golden files: ``tests/golden/<format>[-strict].json`` hold the exact output (the
bytes ``llm-worker schema cli_targets.example_tools --format <format>`` prints)
for the tools in ``tests/cli_targets/example_tools.py``. After an intended change
to a format or to the example tools, regenerate them and review the diff:

    UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_formats.py -k golden
    git diff tests/golden/

With ``UPDATE_GOLDEN=1`` the golden tests write the files instead of failing.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

import anthropic.types
import anyio
import jsonschema
import mcp.types
import openai
import pydantic
import pytest
from cli_targets import example_tools
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from openai.types.chat import ChatCompletionFunctionToolParam
from openai.types.responses import FunctionToolParam
from strategies import CountingDefinition
from support import GEMINI_SDK, defs_used, needs_gemini_sdk

from llm_worker import (
    Description,
    LlmToolDefinition,
    ToolAnnotations,
    ToolMeta,
    tool,
    tool_metas,
    tool_registry,
)
from llm_worker._formats import _FORMATTERS, FORMATS, STRICT_FORMATS, FormatName, export_tools
from llm_worker._gemini_schema import MAX_NODES
from llm_worker._json_schema import MAX_DEPTH

if GEMINI_SDK:  # google-genai needs Python 3.11+ (tests/support.py)
    from google.genai import types as genai_types

GOLDEN_DIR = Path(__file__).parent / "golden"
EXAMPLE_CLASSES = (example_tools.Library, example_tools.Shelter)


def example_definitions() -> list[LlmToolDefinition]:
    metas = [meta for cls in EXAMPLE_CLASSES for meta in tool_metas(cls)]
    return [meta.to_llm_definition() for meta in sorted(metas, key=lambda m: m.name)]


def render(tools: list[dict[str, Any]]) -> str:
    """The CLI's rendering rule (``llm-worker schema``): sorted keys, 2-space indent, newline."""
    return json.dumps(tools, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def definition(schema: dict[str, Any], name: str = "t") -> LlmToolDefinition:
    return ToolMeta(name=name, description="d", input_schema=schema).to_llm_definition()


def strict_parameters(schema: dict[str, Any]) -> dict[str, Any]:
    [tool_] = export_tools([definition(schema)], "openai", strict=True)
    return tool_["function"]["parameters"]


def gemini_parameters(schema: dict[str, Any]) -> dict[str, Any]:
    [declaration] = export_tools([definition(schema)], "gemini")
    return declaration["parameters"]


def walk(schema: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema node (path, node), following the keywords that hold subschemas."""
    if not isinstance(schema, dict):
        return
    yield path, schema
    for key in ("properties", "$defs", "patternProperties"):
        for name, sub in schema.get(key, {}).items():
            yield from walk(sub, f"{path}/{key}/{name}")
    for key in ("items", "additionalProperties", "not"):
        if isinstance(schema.get(key), dict):
            yield from walk(schema[key], f"{path}/{key}")
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for i, sub in enumerate(schema.get(key, [])):
            yield from walk(sub, f"{path}/{key}/{i}")


def resolve(root: dict[str, Any], ref: str) -> dict[str, Any]:
    node: Any = root
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return node


# A registry for the strict-mode rules: optional, nested, list, enum, literal, union, recursive.


class Tree(pydantic.BaseModel):
    label: str
    children: list[Tree] = []


class Point(pydantic.BaseModel):
    x: int
    y: int = 0


@tool_registry
class StrictCase:
    @tool
    async def everything(
        self,
        name: str,
        nickname: str | None = None,
        limit: int = 10,
        point: Point | None = None,
        points: list[Point] = [],  # noqa: B006 - pydantic copies defaults
        tags: list[str] | None = None,
        color: example_tools.Color = example_tools.Color.RED,
        mode: Literal["fast", "slow"] = "fast",
        key: int | str = 0,
        tree: Annotated[Tree | None, Description("A tree of labels")] = None,
    ) -> str:
        """Take every kind of field."""
        return name


@tool_registry
class FlatCase:
    """Like StrictCase without recursion, for generating inputs from the strict schema."""

    @tool
    async def flat(
        self,
        name: str,
        nickname: str | None = None,
        limit: int = 10,
        point: Point | None = None,
        points: list[Point] = [],  # noqa: B006
        color: example_tools.Color = example_tools.Color.RED,
        mode: Literal["fast", "slow"] = "fast",
        key: int | str = 0,
    ) -> str:
        return name


@tool_registry
class LooseCase:
    @tool
    async def loose(self, meta: dict[str, int], anything: Any, ok: int = 1) -> str:
        return ""


STRICT_KEYWORDS = {
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


def everything_strict() -> dict[str, Any]:
    [meta] = tool_metas(StrictCase)
    [tool_] = export_tools([meta.to_llm_definition()], "openai", strict=True)
    return tool_["function"]["parameters"]


class TestExportTools:
    def test_formats_names_every_format(self):
        """FORMATS lists the six formats, neutral first, each with its formatter."""
        assert FORMATS == ("neutral", "openai", "openai-responses", "anthropic", "gemini", "mcp")
        assert set(_FORMATTERS) == set(FORMATS)

    def test_unknown_format(self):
        """An unknown format raises ValueError naming the choices."""
        with pytest.raises(ValueError, match=r"^unknown format 'claude'; choose one of: ") as info:
            export_tools(example_definitions(), "claude")  # type: ignore[arg-type]
        assert str(info.value).endswith("neutral, openai, openai-responses, anthropic, gemini, mcp")

    @pytest.mark.parametrize("fmt", ["neutral", "anthropic", "gemini", "mcp"])
    def test_strict_only_for_openai(self, fmt):
        """strict=True with a format other than the two OpenAI ones raises ValueError."""
        with pytest.raises(ValueError, match=r"^strict=True applies only") as info:
            export_tools(example_definitions(), fmt, strict=True)
        assert str(info.value) == (
            f"strict=True applies only to the openai and openai-responses formats, not {fmt!r}"
        )

    def test_single_definition_is_rejected(self):
        """A bare definition (not in a list) raises TypeError saying to wrap it."""
        with pytest.raises(TypeError) as info:
            export_tools(example_definitions()[0], "neutral")  # type: ignore[arg-type]
        assert str(info.value) == (
            "export_tools() takes a list of definitions; wrap a single one in [...]"
        )

    def test_non_definition_item_is_rejected(self):
        """An item that is not a definition raises TypeError naming its type and what to pass."""
        with pytest.raises(TypeError) as info:
            export_tools([{"name": "x"}], "neutral")  # type: ignore[list-item]
        assert str(info.value) == (
            "export_tools() takes LlmToolDefinition or ToolMeta objects, or MCP tool definitions, "
            "not dict: pass handle.tool_definitions_sorted(), tool_metas(YourClass) (or "
            "YourClass.method.meta()), or await mcp_tool_definitions(...)"
        )

    def test_a_tool_factory_is_rejected_with_what_to_pass(self):
        """A ToolDefinition factory (app.method.definition()) is refused with what to pass."""
        factory = StrictCase().everything.definition()
        with pytest.raises(
            TypeError, match=r"not ToolFactory: pass handle.tool_definitions_sorted"
        ):
            export_tools([factory], "openai")  # type: ignore[list-item]

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_order_is_kept(self, fmt):
        """Tools come out in the order given (sorting is the caller's choice)."""
        definitions = list(reversed(example_definitions()))
        tools = export_tools(definitions, fmt)
        names = [t["function"]["name"] if fmt == "openai" else t["name"] for t in tools]
        assert names == [d.name for d in definitions]

    @pytest.mark.parametrize(("fmt", "strict"), [(f, False) for f in FORMATS] + [("openai", True)])
    def test_input_is_not_changed(self, fmt, strict):
        """Exporting leaves the definitions as they were, and the output is not shared with them."""
        definitions = example_definitions()
        before = [copy.deepcopy(d.to_dict()) for d in definitions]
        tools = export_tools(definitions, fmt, strict=strict)
        assert [d.to_dict() for d in definitions] == before
        for tool_ in tools:  # mutate everything we got back
            tool_.clear()
        assert [d.to_dict() for d in definitions] == before

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_two_tools_with_one_name_are_refused(self, fmt):
        """Every provider refuses a request naming two tools alike: so does the export."""
        metas = [ToolMeta(name="b"), ToolMeta(name="a"), ToolMeta(name="b"), ToolMeta(name="a")]
        with pytest.raises(ValueError, match=r"^Two tools") as info:
            export_tools(metas, fmt)
        assert str(info.value) == "Two tools with one name cannot be exported together: 'a', 'b'"

    @pytest.mark.parametrize("fmt", ["openai", "openai-responses", "anthropic"])
    def test_names_providers_refuse_are_refused(self, fmt):
        """A provider format refuses names its provider would reject, saying what would do."""
        metas = [ToolMeta(name="files.read"), ToolMeta(name="ok"), ToolMeta(name="x" * 65)]
        with pytest.raises(ValueError, match=r"^Tool names the ") as info:
            export_tools(metas, fmt)
        hashed = f"{'x' * 55}_{hashlib.sha256(b'x' * 65).hexdigest()[:8]}"
        assert str(info.value) == (
            f"Tool names the {fmt} format's provider refuses; rename them to 1 to 64 letters, "
            "digits, '_' or '-' (mcp_tool_definitions() does so for an MCP server's tools):\n"
            "  'files.read' (for instance 'files_read')\n"
            f"  '{'x' * 65}' (for instance '{hashed}')"
        )

    def test_names_gemini_refuses_are_refused(self):
        """Gemini's rule is its own (google-genai's FunctionDeclaration.name): the first
        character a letter or '_' (a name the other providers take: 3d_render, -dash), up
        to 128 of them, '.' and ':' allowed. The export let the first two through before,
        and Gemini refused every request of a client with such a tool."""
        metas = [ToolMeta(name=name) for name in ("3d_render", "-dash", "a b", "ok", "2.x")]
        with pytest.raises(ValueError, match=r"^Tool names the ") as info:
            export_tools(metas, "gemini")
        assert str(info.value) == (
            "Tool names the gemini format's provider refuses; rename them to 1 to 128 "
            "letters, digits, '_', '.', ':' or '-', the first a letter or '_':\n"
            "  '3d_render' (for instance '_3d_render')\n"
            "  '-dash' (for instance '_-dash')\n"
            "  'a b' (for instance 'a_b')\n"
            "  '2.x' (for instance '_2_x')"
        )
        names = ["files.read", "mcp:search", "_x", "x" * 128]
        exported = export_tools([ToolMeta(name=name) for name in names], "gemini")
        assert [tool_["name"] for tool_ in exported] == names
        with pytest.raises(ValueError, match=r"^Tool names the "):
            export_tools([ToolMeta(name="x" * 129)], "gemini")

    @pytest.mark.parametrize("fmt", ["neutral", "mcp"])
    def test_neutral_and_mcp_take_any_name(self, fmt):
        """neutral and mcp keep any name (MCP allows dots)."""
        [tool_] = export_tools([ToolMeta(name="files.read")], fmt)
        assert tool_["name"] == "files.read"

    def test_anything_holding_a_meta_is_accepted(self):
        """An object whose .meta is a ToolMeta (an McpToolDefinition) exports as that meta."""
        meta = ToolMeta(name="ping", description="Ping.")
        holder = CountingDefinition(meta)
        assert export_tools([holder], "openai") == export_tools([meta], "openai")
        assert holder.calls == 0  # a factory is never called

    @pytest.mark.parametrize(("fmt", "strict"), [("openai", True), ("gemini", False)])
    def test_exporting_again_gives_equal_new_dicts(self, fmt, strict):
        """A second export (from the cache) equals the first and shares nothing with it."""
        first = export_tools(example_definitions(), fmt, strict=strict)
        second = export_tools(example_definitions(), fmt, strict=strict)
        assert first == second
        for tool_ in first:
            tool_.clear()
        assert export_tools(example_definitions(), fmt, strict=strict) == second

    def test_tool_meta_is_accepted(self):
        """A ToolMeta exports like its LlmToolDefinition."""
        meta = ToolMeta(name="ping", description="Ping.")
        assert export_tools([meta], "mcp") == export_tools([meta.to_llm_definition()], "mcp")

    def test_mcp_carries_what_a_tool_meta_says_for_hosts(self):
        """mcp: a ToolMeta's title, said annotations and outputSchema join its entry; the
        provider formats (and its LlmToolDefinition) carry none of them."""
        meta = ToolMeta(
            name="wipe",
            description="Wipe a disk.",
            title="Wipe",
            annotations=ToolAnnotations(destructive=True, idempotent=False),
            output_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}},
        )
        [entry] = export_tools([meta], "mcp")
        assert entry == {
            "name": "wipe",
            "title": "Wipe",
            "description": "Wipe a disk.",
            "inputSchema": {"type": "object", "properties": {}},
            "annotations": {"destructiveHint": True, "idempotentHint": False},
            "outputSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
        }
        assert export_tools([meta.to_llm_definition()], "mcp") == [
            {key: entry[key] for key in ("name", "description", "inputSchema")}
        ]
        for fmt in ("neutral", "openai", "openai-responses", "anthropic", "gemini"):
            assert export_tools([meta], fmt) == export_tools([meta.to_llm_definition()], fmt)

    def test_neutral_is_to_dict(self):
        """neutral: each tool is LlmToolDefinition.to_dict()."""
        definitions = example_definitions()
        assert export_tools(definitions, "neutral") == [d.to_dict() for d in definitions]

    def test_anthropic_shape(self):
        """anthropic: {name, description, input_schema}, the schema unchanged (its root is
        one object)."""
        [d] = example_definitions()[:1]
        assert export_tools([d], "anthropic") == [
            {"name": d.name, "description": d.description, "input_schema": d.input_schema}
        ]

    def test_anthropic_root_is_one_object(self):
        """The Messages API refuses a request whose tool has anyOf/oneOf/allOf at the root:
        a "one of these keys" union keeps its properties, the branches are described."""
        either = {
            "type": "object",
            "properties": {"id": {"type": "string"}, "path": {"type": "string"}},
            "oneOf": [{"required": ["id"]}, {"required": ["path"]}],
        }
        [tool] = export_tools(
            [LlmToolDefinition(name="get", description="Get.", input_schema=either)], "anthropic"
        )
        assert tool["input_schema"] == {
            "type": "object",
            "properties": {"id": {"type": "string"}, "path": {"type": "string"}},
            "description": '(the arguments match oneOf [{"required": ["id"]}, '
            '{"required": ["path"]}])',
        }
        pydantic.TypeAdapter(anthropic.types.ToolParam).validate_python(tool)

    def test_anthropic_root_union_of_objects_joins_their_properties(self):
        by_id = {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}
        by_name = {
            "type": "object",
            "properties": {"name": {"type": "string"}, "id": {"type": "integer"}},
            "required": ["name", "id"],
        }
        schema = {"anyOf": [by_id, {"$ref": "#/$defs/ByName"}], "$defs": {"ByName": by_name}}
        [tool] = export_tools(
            [LlmToolDefinition(name="find", description="Find.", input_schema=schema)], "anthropic"
        )
        got = tool["input_schema"]
        assert got["properties"] == {"id": {"type": "integer"}, "name": {"type": "string"}}
        assert got["required"] == ["id"]  # required by every branch
        assert got["type"] == "object"
        assert got["$defs"] == {"ByName": by_name}
        assert not {"anyOf", "oneOf", "allOf"} & set(got)

    def test_anthropic_root_all_of_is_merged(self):
        schema = {
            "allOf": [
                {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                {"properties": {"b": {"type": "integer"}}},
            ]
        }
        [tool] = export_tools(
            [LlmToolDefinition(name="m", description="M.", input_schema=schema)], "anthropic"
        )
        assert tool["input_schema"] == {
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
            "required": ["a"],
        }

    @pytest.mark.parametrize(
        "schema",
        [
            {"$ref": "#/$defs/Args", "$defs": {"Args": {"properties": {"a": {"type": "string"}}}}},
            {"type": ["object", "null"], "properties": {"a": {"type": "string"}}},
        ],
        ids=["root-ref", "type-list"],
    )
    def test_anthropic_root_ref_or_type_list_is_one_object(self, schema):
        """zod-to-json-schema's named root ($ref) and a nullable root: "type": "object"."""
        definition = LlmToolDefinition(name="t", description="T.", input_schema=schema)
        [tool] = export_tools([definition], "anthropic")
        assert tool["input_schema"]["type"] == "object"
        assert tool["input_schema"]["properties"] == {"a": {"type": "string"}}

    def test_anthropic_refuses_argument_names_the_api_refuses(self):
        """The Messages API refuses every request with such a tool (400 "Property keys
        should match pattern '^[a-zA-Z0-9_.-]{1,64}$'"): the export names them instead."""
        schema = {
            "type": "object",
            "properties": {
                "filter[id]": {"type": "string"},
                "café": {"type": "string"},
                "x" * 65: {"type": "string"},
                "page.size": {"type": "integer"},
                "ok-name_2": {"type": "integer"},
            },
        }
        definition = LlmToolDefinition(name="list", description="List.", input_schema=schema)
        with pytest.raises(ValueError, match="argument names the Messages API refuses") as info:
            export_tools([definition], "anthropic")
        assert str(info.value) == (
            "Cannot make Anthropic schemas:\n  list: argument names the Messages API refuses "
            f"(1 to 64 letters, digits, '_', '.' or '-'): 'filter[id]', 'café', '{'x' * 65}'"
        )
        export_tools([definition], "openai")  # other formats take them

    @pytest.mark.parametrize("fmt", ["anthropic", "gemini"])
    @pytest.mark.parametrize(
        ("schema", "problem"),
        [
            ({"anyOf": [{"type": "obj"}]}, "'type' 'obj' is not a JSON Schema type"),
            (
                {"anyOf": [{"type": "object", "properties": {"a": {}}}, {"type": "objet"}]},
                "'type' 'objet' is not a JSON Schema type",
            ),
        ],
    )
    def test_a_root_union_it_cannot_read_is_a_value_error(self, fmt, schema, problem):
        """The root's branches say which arguments there are: one whose type names no JSON
        type raised the internal SchemaProblem before, not the ValueError export_tools says."""
        definition = LlmToolDefinition(name="t", description="T.", input_schema=schema)
        with pytest.raises(ValueError, match=r"^Cannot make (Anthropic|Gemini) schemas") as info:
            export_tools([definition], fmt)
        assert str(info.value).endswith(f"\n  t: {problem}")

    @pytest.mark.parametrize(
        ("fmt", "key"), [("anthropic", "input_schema"), ("gemini", "parameters")]
    )
    def test_a_root_union_beside_required_that_names_no_property(self, fmt, key):
        """``"required": [["a"]]`` raised a TypeError (unhashable list) joining the branches:
        only names are joined, as a branch's required is read."""
        schema = {
            "type": "object",
            "required": [["a"], "b"],
            "anyOf": [{"properties": {"a": {"type": "string"}}, "required": ["a"]}],
        }
        definition = LlmToolDefinition(name="t", description="T.", input_schema=schema)
        [tool_] = export_tools([definition], fmt)
        assert tool_[key]["required"] == ["b", "a"]

    def test_mcp_shape(self):
        """mcp: {name, description, inputSchema} with the schema unchanged."""
        [d] = example_definitions()[:1]
        assert export_tools([d], "mcp") == [
            {"name": d.name, "description": d.description, "inputSchema": d.input_schema}
        ]

    def test_openai_shape(self):
        """openai: a function tool whose parameters are the schema, with no strict key."""
        [d] = example_definitions()[:1]
        assert export_tools([d], "openai") == [
            {
                "type": "function",
                "function": {
                    "name": d.name,
                    "description": d.description,
                    "parameters": d.input_schema,
                },
            }
        ]

    def test_openai_strict_shape(self):
        """openai with strict=True: the function says strict: true."""
        [tool_] = export_tools(example_definitions()[:1], "openai", strict=True)
        assert tool_["type"] == "function"
        assert tool_["function"]["strict"] is True
        assert set(tool_["function"]) == {"name", "description", "parameters", "strict"}

    @pytest.mark.parametrize("strict", [False, True])
    def test_openai_responses_shape(self, strict):
        """openai-responses: a flat function tool that always says whether it is strict."""
        [d] = example_definitions()[:1]
        [tool_] = export_tools([d], "openai-responses", strict=strict)
        assert set(tool_) == {"type", "name", "description", "parameters", "strict"}
        assert (tool_["type"], tool_["name"], tool_["strict"]) == ("function", d.name, strict)
        if not strict:
            assert tool_["parameters"] == d.input_schema

    def test_strict_parameters_are_the_same_in_both_openai_formats(self):
        """Chat Completions and Responses get the same strict parameters."""
        definitions = example_definitions()
        chat = export_tools(definitions, "openai", strict=True)
        responses = export_tools(definitions, "openai-responses", strict=True)
        assert [t["function"]["parameters"] for t in chat] == [t["parameters"] for t in responses]

    @pytest.mark.parametrize("fmt", ["neutral", "openai", "anthropic", "mcp"])
    def test_schemas_are_valid_json_schema(self, fmt):
        """Every exported schema is a valid JSON Schema (2020-12)."""
        for tool_ in export_tools(example_definitions(), fmt):
            schema = tool_.get("input_schema") or tool_.get("inputSchema")
            schema = schema or tool_["function"]["parameters"]
            jsonschema.Draft202012Validator.check_schema(schema)


GOLDEN_CASES = [(fmt, False) for fmt in FORMATS] + [
    ("openai", True),
    ("openai-responses", True),
]


# Every (format, strict) export_tools takes.
EXPORTS = [(fmt, False) for fmt in FORMATS] + [(fmt, True) for fmt in STRICT_FORMATS]


async def outcome(schema: dict[str, Any], fmt: FormatName, strict: bool) -> list[Any] | ValueError:
    """What ``export_tools`` gives for one tool (its tools, or its ``ValueError``), run in a
    worker thread: a rewrite that never ends fails the test (its thread left behind)
    rather than hang the suite. A Worker exports on its event loop, where no timeout
    could stop it."""
    definition = LlmToolDefinition(name="t", description="d", input_schema=schema)
    export = functools.partial(export_tools, [definition], fmt, strict=strict)
    with anyio.fail_after(60):
        try:
            return await anyio.to_thread.run_sync(export, abandon_on_cancel=True)
        except ValueError as exc:
            return exc


def chain(levels: int, combinator: str, leaf: dict[str, Any]) -> dict[str, Any]:
    """$defs L0 ... L<levels>: each level the ``combinator`` of the next one, twice."""
    defs: dict[str, Any] = {f"L{levels}": leaf}
    for i in range(levels - 1, -1, -1):
        ref = {"$ref": f"#/$defs/L{i + 1}"}
        defs[f"L{i}"] = {combinator: [ref, {**ref, "description": f"level {i}"}]}
    return defs


# Schemas as anything may write them: any keyword holding any JSON, references that
# resolve or not, types that are not types, integers past the floats.
_KEYWORDS = (
    "type", "properties", "required", "items", "prefixItems", "additionalItems", "anyOf",
    "oneOf", "allOf", "$ref", "$defs", "definitions", "enum", "const", "format", "description",
    "nullable", "minimum", "maximum", "minItems", "minLength", "pattern", "multipleOf",
    "additionalProperties", "default", "not", "exclusiveMinimum", "title",
)  # fmt: skip
_MADE_UP_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 10**400),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["object", "string", "integer", "array", "null", "obj", "a", "b", "A"]),
    st.sampled_from(["#", "#/$defs/A", "#/definitions/A", "#/properties/a", "#/anyOf/0", "x"]),
)
MADE_UP_SCHEMAS = st.dictionaries(
    st.sampled_from(_KEYWORDS),
    st.recursive(
        _MADE_UP_SCALARS,
        lambda children: st.one_of(
            st.lists(children, max_size=3),
            st.dictionaries(st.sampled_from((*_KEYWORDS, "a", "b", "A")), children, max_size=5),
        ),
        max_leaves=25,
    ),
    max_size=6,
)


class TestTermination:
    @pytest.mark.anyio
    @pytest.mark.parametrize("ref", [None, 5, {}, ["#"]])
    async def test_a_ref_that_is_not_a_string_ends(self, ref):
        """``"$ref": null`` made the Gemini rewrite loop forever (and a Worker on GeminiClient
        with it, on its event loop): a reference that is not a string is refused, wherever
        it is (strict mode refused it already; the other formats send it as it is)."""
        node = {"$ref": ref, "description": "what"}
        schemas = {
            "property": {"type": "object", "properties": {"a": node}},
            "root": {"type": "object", "properties": {"a": {}}, **node},
            "one branch": {
                "type": "object",
                "properties": {"a": {"anyOf": [node, {"type": "null"}]}},
            },
            "allOf": {"type": "object", "properties": {"a": {"allOf": [node]}}},
        }
        for where, schema in schemas.items():
            for fmt, strict in EXPORTS:
                result = await outcome(schema, fmt, strict)
                if fmt == "gemini" or strict or (fmt == "anthropic" and where == "root"):
                    assert isinstance(result, ValueError), (where, fmt)
                    assert f" the $ref {ref!r} is not a " in str(result)
                else:
                    assert isinstance(result, list), (where, fmt)

    @pytest.mark.anyio
    async def test_a_model_reused_by_nested_all_ofs_is_merged_once(self):
        """Each level merged the next one twice: 2**30 merges, for hours (the anthropic
        format's root, strict mode, Gemini). Each reference is merged once now; Gemini,
        which inlines each use of a model, stops at its MAX_NODES."""
        leaf = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
        defs = chain(30, "allOf", leaf)
        root = {"allOf": [{"$ref": "#/$defs/L0"}], "$defs": defs}
        nested = {"type": "object", "properties": {"p": {"$ref": "#/$defs/L0"}}, "$defs": defs}
        for fmt, strict in EXPORTS:
            merged = await outcome(root, fmt, strict)
            assert isinstance(merged, list)
            assert '"a"' in json.dumps(merged)
            result = await outcome(nested, fmt, strict)
            if fmt == "gemini":
                assert f"more than {MAX_NODES} nodes" in str(result)
            else:
                assert isinstance(result, list)

    @pytest.mark.anyio
    async def test_a_model_reused_by_nested_any_ofs_is_read_once(self):
        """Whether an optional property takes null (strict mode asks) read each level's
        branches again: 2**40 reads. Each branch is read once now."""
        schema = {
            "type": "object",
            "properties": {"p": {"$ref": "#/$defs/L0"}},
            "$defs": chain(40, "anyOf", {"type": "string"}),
        }
        for fmt, strict in EXPORTS:
            result = await outcome(schema, fmt, strict)
            if fmt == "gemini":
                assert f"more than {MAX_NODES} nodes" in str(result)
            else:
                assert isinstance(result, list)

    def test_a_branch_that_refers_back_to_its_any_of_is_not_null(self):
        """``A = anyOf[A, string]``: null is not valid for it, so the optional property gets
        strict mode's null for "not given"."""
        schema = {
            "type": "object",
            "properties": {"p": {"$ref": "#/$defs/A"}},
            "$defs": {"A": {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "string"}]}},
        }
        assert strict_parameters(schema)["properties"]["p"] == {
            "anyOf": [{"$ref": "#/$defs/A"}, {"type": "null"}]
        }

    @pytest.mark.parametrize(("fmt", "strict"), [("gemini", False), ("openai", True)])
    def test_all_of_multiples_past_the_floats_is_refused(self, fmt, strict):
        """JSON integers have no bound: the ratio of 10**400 and 3 raised OverflowError."""
        schema = {
            "type": "object",
            "properties": {"n": {"allOf": [{"multipleOf": 10**400}, {"multipleOf": 3}]}},
        }
        with pytest.raises(ValueError, match="allOf with two different 'multipleOf'"):
            export_tools([definition(schema)], fmt, strict=strict)

    @pytest.mark.parametrize("fmt", ["anthropic", "gemini"])
    def test_a_root_nested_past_max_depth_is_refused(self, fmt):
        """allOf in allOf, 400 levels: the merge recursed until Python's limit (a
        RecursionError out of export_tools); past MAX_DEPTH it is a refusal."""
        node: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "string"}}}
        for _ in range(400):
            node = {"allOf": [node]}
        with pytest.raises(ValueError, match=f"nests deeper than {MAX_DEPTH} levels of"):
            export_tools([definition(node)], fmt)

    @pytest.mark.parametrize("fmt", ["anthropic", "gemini"])
    def test_a_root_all_of_no_single_node_says_is_left_out(self, fmt):
        """Not malformed: the tool's validation checks it (as before)."""
        schema = {"allOf": [{"anyOf": [{"required": ["a"]}]}, {"anyOf": [{"required": ["b"]}]}]}
        export_tools([definition(schema)], fmt)

    @pytest.mark.anyio
    @settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
    @given(schema=MADE_UP_SCHEMAS)
    async def test_any_schema_exports_or_is_a_value_error(self, schema):
        """Whatever the schema, every format ends, with its tools or the ValueError
        export_tools documents (no SchemaProblem, TypeError, KeyError, OverflowError...);
        what the gemini format gives, google-genai's FunctionDeclaration takes."""
        try:
            LlmToolDefinition(name="t", description="d", input_schema=schema)
        except (TypeError, ValueError):
            assume(False)  # not a tool's schema at all (its root a string, say)
        for fmt, strict in EXPORTS:
            result = await outcome(schema, fmt, strict)
            if isinstance(result, ValueError):
                assert type(result) is ValueError
                assert str(result).startswith("Cannot make ")
            elif fmt == "gemini" and GEMINI_SDK:
                genai_types.FunctionDeclaration.model_validate(result[0])


class TestGolden:
    @pytest.mark.parametrize(
        ("fmt", "strict"), GOLDEN_CASES, ids=[f + ("-strict" if s else "") for f, s in GOLDEN_CASES]
    )
    def test_golden(self, fmt, strict):
        """The example tools export byte for byte as in tests/golden/."""
        path = GOLDEN_DIR / f"{fmt}{'-strict' if strict else ''}.json"
        text = render(export_tools(example_definitions(), fmt, strict=strict))
        if os.environ.get("UPDATE_GOLDEN") == "1":
            path.write_bytes(text.encode("utf-8"))
        assert path.read_bytes() == text.encode("utf-8")

    def test_golden_files_are_all_known(self):
        """tests/golden/ holds exactly the golden files the tests check."""
        expected = {f"{fmt}{'-strict' if strict else ''}.json" for fmt, strict in GOLDEN_CASES}
        assert {p.name for p in GOLDEN_DIR.iterdir()} == expected


class TestStrictMode:
    def test_every_object_is_closed_and_fully_required(self):
        """Every object node has additionalProperties false and requires all its properties."""
        objects = 0
        for tool_ in export_tools(
            [*example_definitions(), *(m.to_llm_definition() for m in tool_metas(StrictCase))],
            "openai",
            strict=True,
        ):
            for path, node in walk(tool_["function"]["parameters"]):
                if node.get("type") == "object" or "properties" in node:
                    objects += 1
                    assert node["additionalProperties"] is False, path
                    assert node["required"] == list(node["properties"]), path
        assert objects > 10

    def test_no_default_and_only_supported_keywords(self):
        """No node keeps a default or a keyword outside OpenAI's documented strict subset."""
        for tool_ in export_tools(example_definitions(), "openai", strict=True):
            for path, node in walk(tool_["function"]["parameters"]):
                assert set(node) <= STRICT_KEYWORDS, (path, set(node) - STRICT_KEYWORDS)

    def test_optional_fields(self):
        """Every argument with a default is nullable (null means the default), noted in text."""
        properties = everything_strict()["properties"]
        assert properties["nickname"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
        assert properties["tags"] == {
            "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]
        }
        assert properties["limit"] == {
            "anyOf": [{"type": "integer"}, {"type": "null"}],
            "description": "(default: 10)",
        }
        assert properties["name"] == {"type": "string"}

    @pytest.mark.anyio
    async def test_null_for_an_argument_means_its_default(self):
        """The null strict mode allows for an optional argument is read as its default."""
        tool_ = StrictCase.ToolEverything(StrictCase())
        assert (
            StrictCase.everything.args_model.model_validate_json(
                '{"name": "n", "limit": null}'
            ).limit
            == 10
        )
        assert isinstance(await tool_.execute('{"name": "n", "limit": null}'), str)

    def test_nested_and_list_fields(self):
        """A nested model stays a $ref, optional or in a list; its own object is made strict."""
        parameters = everything_strict()
        properties = parameters["properties"]
        assert properties["point"] == {"anyOf": [{"$ref": "#/$defs/Point"}, {"type": "null"}]}
        assert properties["points"] == {
            "anyOf": [{"type": "array", "items": {"$ref": "#/$defs/Point"}}, {"type": "null"}],
            "description": "(default: [])",
        }
        assert parameters["$defs"]["Point"] == {
            "type": "object",
            "title": "Point",
            "properties": {
                "x": {"type": "integer"},
                "y": {"type": "integer", "description": "(default: 0)"},
            },
            "required": ["x", "y"],
            "additionalProperties": False,
        }

    def test_enum_literal_and_union_fields(self):
        """Enum, literal and union arguments with defaults become nullable, noted in text."""
        parameters = everything_strict()
        properties = parameters["properties"]
        assert properties["color"] == {
            "anyOf": [
                {"type": "string", "enum": ["red", "green", "blue"], "title": "Color"},
                {"type": "null"},
            ],
            "description": 'A label colour. (default: "red")',
        }
        assert properties["mode"] == {
            "anyOf": [{"type": "string", "enum": ["fast", "slow"]}, {"type": "null"}],
            "description": '(default: "fast")',
        }
        assert properties["key"] == {
            "anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}],
            "description": "(default: 0)",
        }

    def test_recursive_field(self):
        """A recursive model keeps its $defs entry and refers to itself with $ref."""
        parameters = everything_strict()
        assert parameters["properties"]["tree"] == {
            "anyOf": [{"$ref": "#/$defs/Tree"}, {"type": "null"}],
            "description": "A tree of labels",
        }
        tree = parameters["$defs"]["Tree"]
        assert tree["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}
        assert tree["required"] == ["label", "children"]
        for _, node in walk(parameters):
            if "$ref" in node:
                assert set(node) == {"$ref"}
                resolve(parameters, node["$ref"])  # every reference resolves

    def test_ref_with_siblings_is_inlined(self):
        """A $ref with a description beside it becomes the referenced schema plus the text."""
        [meta] = [m for m in tool_metas(example_tools.Library) if m.name == "file_under"]
        [tool_] = export_tools([meta.to_llm_definition()], "openai", strict=True)
        category = tool_["function"]["parameters"]["properties"]["category"]
        assert category["description"] == "Where the book goes"
        assert category["title"] == "Category"
        assert category["required"] == ["name", "children", "parent"]
        assert category["properties"]["children"]["items"] == {"$ref": "#/$defs/Category"}

    def test_recursive_ref_with_siblings_is_wrapped(self):
        """A self-reference with siblings cannot be inlined: it becomes anyOf [ref] + siblings."""
        schema = {
            "type": "object",
            "properties": {"node": {"$ref": "#/$defs/Node"}},
            "required": ["node"],
            "$defs": {
                "Node": {
                    "type": "object",
                    "properties": {
                        "next": {"$ref": "#/$defs/Node", "description": "the next node"},
                    },
                    "required": ["next"],
                }
            },
        }
        node = strict_parameters(schema)["$defs"]["Node"]
        assert node["properties"]["next"] == {
            "type": "object",
            "properties": {
                "next": {"anyOf": [{"$ref": "#/$defs/Node"}], "description": "the next node"}
            },
            "required": ["next"],
            "additionalProperties": False,
            "description": "the next node",
        }

    def test_rewrites(self):
        """oneOf becomes anyOf, one-entry allOf merges, prefixItems becomes items, notes appear."""
        schema = {
            "type": "object",
            "properties": {
                "pet": {
                    "oneOf": [{"type": "string"}, {"type": "integer"}],
                    "discriminator": {"propertyName": "kind"},
                },
                "merged": {"allOf": [{"type": "string", "pattern": "^a"}], "description": "m"},
                "pair": {
                    "type": "array",
                    "prefixItems": [{"type": "integer"}, {"type": "string"}],
                    "minItems": 2,
                    "maxItems": 2,
                },
                "word": {"type": "string", "minLength": 1, "maxLength": 5, "format": "uri"},
                "day": {"type": "string", "format": "date", "examples": ["2026-01-01"]},
            },
            "required": ["pet", "merged", "pair", "word", "day"],
        }
        properties = strict_parameters(schema)["properties"]
        assert properties == {
            "pet": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "merged": {"type": "string", "pattern": "^a", "description": "m"},
            "pair": {
                "type": "array",
                "items": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                "minItems": 2,
                "maxItems": 2,
            },
            "word": {"type": "string", "description": "(minLength: 1; maxLength: 5; format: uri)"},
            "day": {"type": "string", "format": "date"},
        }

    def test_inexpressible_schemas_raise_one_error(self):
        """dict and Any parameters, and an allOf with no single form, are reported at once."""
        definitions = [m.to_llm_definition() for m in tool_metas(LooseCase)]
        definitions.append(
            definition(
                {
                    "type": "object",
                    "properties": {"both": {"allOf": [{"pattern": "^a"}, {"pattern": "b$"}]}},
                    "required": ["both"],
                },
                name="merge",
            )
        )
        with pytest.raises(ValueError, match=r"^Cannot make strict OpenAI schemas:") as info:
            export_tools(definitions, "openai", strict=True)
        assert str(info.value) == (
            "Cannot make strict OpenAI schemas:\n"
            "  loose: at properties/meta: an object with keys not named in advance (such as "
            "dict[str, ...]) has no strict form (strict mode needs additionalProperties false)\n"
            "  loose: at properties/anything: a value of any type (no 'type') has no strict form\n"
            "  merge: at properties/both: allOf with two different 'pattern' has no single form"
        )

    def test_tuples_of_a_generated_tool(self):
        """tuple[()] gets items and maxItems 0; tuple[int, str] any of its item types."""

        @tool_registry
        class Tuples:
            @tool
            async def f(self, nothing: tuple[()], pair: tuple[int, str]) -> str:
                return ""

        [tool_] = export_tools([Tuples.f.meta()], "openai", strict=True)
        properties = tool_["function"]["parameters"]["properties"]
        assert properties["nothing"] == {
            "type": "array",
            "minItems": 0,
            "maxItems": 0,
            "items": {"type": "null"},
        }
        assert properties["pair"] == {
            "type": "array",
            "minItems": 2,
            "maxItems": 2,
            "items": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        }

    def test_non_strict_keeps_what_strict_rejects(self):
        """Without strict, a dict parameter exports as it is."""
        definitions = [m.to_llm_definition() for m in tool_metas(LooseCase)]
        [tool_] = export_tools(definitions, "openai")
        assert tool_["function"]["parameters"] == definitions[0].input_schema

    @settings(
        max_examples=60,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(
        data=from_schema(
            export_tools(
                [m.to_llm_definition() for m in tool_metas(FlatCase)], "openai", strict=True
            )[0]["function"]["parameters"]
        )
    )
    def test_strict_inputs_pass_validation(self, data):
        """Every input the strict schema allows is accepted by the tool's own validation."""
        FlatCase.FlatArgs.model_validate_json(json.dumps(data))


class TestGemini:
    @needs_gemini_sdk
    def test_declarations_validate_with_google_genai(self):
        """Each declaration validates as google-genai's FunctionDeclaration (no extra keys)."""
        for declaration in export_tools(example_definitions(), "gemini"):
            parsed = genai_types.FunctionDeclaration.model_validate(declaration)
            dumped = parsed.model_dump(mode="json", by_alias=True, exclude_none=True)
            # exclude_none cannot tell "default": null from no default, so compare without them.
            assert dumped == _without_none(declaration)

    def test_only_the_openapi_subset(self):
        """Only Gemini Schema keywords survive ($ref, const... do not); types are upper case."""
        gemini_keys = {
            "type", "format", "description", "nullable", "enum", "items", "properties",
            "required", "anyOf", "minimum", "maximum", "minItems", "maxItems", "minLength",
            "maxLength", "pattern", "minProperties", "maxProperties", "default",
        }  # fmt: skip
        for declaration in export_tools(example_definitions(), "gemini"):
            for path, node in walk(declaration.get("parameters")):
                assert set(node) <= gemini_keys, (declaration["name"], path)
                if "type" in node:
                    assert node["type"] in {
                        "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT",
                    }  # fmt: skip

    def test_no_parameters_for_a_tool_without_arguments(self):
        """A tool without parameters has no parameters key at all."""
        declarations = {d["name"]: d for d in export_tools(example_definitions(), "gemini")}
        assert declarations["ping"] == {"name": "ping", "description": "Tool: ping"}

    def test_refs_are_inlined_and_recursion_is_cut(self):
        """A model is inlined where it is used; its recursive field becomes any value."""
        declarations = {d["name"]: d for d in export_tools(example_definitions(), "gemini")}
        category = declarations["file_under"]["parameters"]["properties"]["category"]
        assert category == {
            "type": "OBJECT",
            "description": "Where the book goes",
            "properties": {
                "name": {"type": "STRING"},
                "children": {"type": "ARRAY", "items": {}, "default": []},
                "parent": {"nullable": True, "default": None},
            },
            "required": ["name"],
        }

    def test_nullable_enum_and_notes(self):
        """null branches become nullable; enums become strings; lost constraints become notes."""
        schema = {
            "type": "object",
            "properties": {
                "n": {"anyOf": [{"type": "integer", "exclusiveMinimum": 0}, {"type": "null"}]},
                "level": {"enum": [1, 2, None]},
                "tag": {"const": "x"},
                "either": {"type": ["string", "integer", "null"]},
                "flag": {"type": ["boolean", "null"], "description": "on?"},
                "url": {"type": "string", "format": "uri", "description": "Link"},
                "when": {"type": "string", "format": "date-time"},
                "pair": {
                    "type": "array",
                    "prefixItems": [{"type": "integer"}],
                    "uniqueItems": True,
                },
            },
            "required": ["n"],
            "additionalProperties": False,
            "title": "Args",
        }
        assert gemini_parameters(schema) == {
            "type": "OBJECT",
            "properties": {
                "n": {"type": "INTEGER", "nullable": True, "description": "(exclusiveMinimum: 0)"},
                "level": {
                    "type": "INTEGER",
                    "enum": ["1", "2"],
                    "format": "enum",
                    "nullable": True,
                },
                "tag": {"type": "STRING", "enum": ["x"], "format": "enum"},
                "either": {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}], "nullable": True},
                "flag": {"type": "BOOLEAN", "nullable": True, "description": "on?"},
                "url": {"type": "STRING", "description": "Link (format: uri)"},
                "when": {"type": "STRING", "format": "date-time"},
                "pair": {
                    "type": "ARRAY",
                    "items": {"type": "INTEGER"},
                    "description": "(uniqueItems: true)",
                },
            },
            "required": ["n"],
        }


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


def _strip_titles(schema: Any) -> Any:
    """``schema`` without any ``title`` keyword (a property named "title" stays)."""
    if isinstance(schema, list):
        return [_strip_titles(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    result = {}
    for key, value in schema.items():
        if key == "title":
            continue
        if key in ("properties", "$defs"):
            result[key] = {name: _strip_titles(sub) for name, sub in value.items()}
        else:
            result[key] = _strip_titles(value)
    return result


def _sdk_as_ours(schema: Any) -> Any:
    """The openai SDK's strict schema with llm_worker's intended differences applied.

    Each difference, and why:
    - ``default``: the SDK keeps a default other than None; strict mode does not
      support ``default``, so llm_worker drops it and writes "(default: X)" into
      the description instead.
    - ``minLength``/``maxLength``: not among OpenAI's documented strict keywords;
      llm_worker moves them into the description as "(minLength: 1)".
    - ``oneOf`` + ``discriminator`` (a discriminated union): the SDK passes them
      on; strict mode documents ``anyOf`` only, so llm_worker writes ``anyOf`` and
      drops the OpenAPI ``discriminator``.
    - ``prefixItems`` (a tuple): not a documented strict keyword; llm_worker
      writes ``items`` accepting any of the distinct item schemas.
    - A top-level argument with a default: the SDK makes it required as it is;
      llm_worker also lets it be ``null``, which the tool reads as the default
      (see ``_nullable``).
    (Titles and the root description are compared apart, see the test.)
    """
    if isinstance(schema, list):
        return [_sdk_as_ours(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    notes = []
    result: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "default":
            notes.append(f"default: {json.dumps(value)}")
        elif key in ("minLength", "maxLength"):
            notes.append(f"{key}: {json.dumps(value)}")
        elif key == "discriminator":
            continue
        elif key == "oneOf":
            result["anyOf"] = _sdk_as_ours(value)
        elif key == "prefixItems":
            distinct = [v for i, v in enumerate(value) if v not in value[:i]]
            result["items"] = distinct[0] if len(distinct) == 1 else {"anyOf": distinct}
        elif key in ("properties", "$defs"):
            result[key] = {name: _sdk_as_ours(sub) for name, sub in value.items()}
        else:
            result[key] = _sdk_as_ours(value)
    if notes:
        note = f"({'; '.join(notes)})"
        result["description"] = (
            f"{result['description']} {note}" if "description" in result else note
        )
    return result


def _nullable(schema: Any, names: list[str]) -> Any:
    """``schema`` with the top-level properties ``names`` made nullable."""
    properties = dict(schema["properties"])
    for name in names:
        sub = properties[name]
        core = {k: v for k, v in sub.items() if k != "description"}
        outer = {k: v for k, v in sub.items() if k == "description"}
        any_of = core["anyOf"] if set(core) == {"anyOf"} else [core]
        properties[name] = {"anyOf": [*any_of, {"type": "null"}], **outer}
    return {**schema, "properties": properties}


def _without_default_nulls(sdk: Any, input_schema: Any) -> Any:
    """``sdk``'s properties with a default as the type only, where ``input_schema`` shows
    no null for them."""
    properties = dict(sdk["properties"])
    defs = sdk.get("$defs", {})
    for name, sub in properties.items():
        ours = input_schema["properties"][name]
        branches = sub.get("anyOf", [])
        null = {"type": "null"}
        if "default" not in sub or null not in branches or null in ours.get("anyOf", []):
            continue
        kept = [b for b in branches if b != null]
        rest = {k: v for k, v in sub.items() if k != "anyOf"}
        if len(kept) > 1:
            properties[name] = {**rest, "anyOf": kept}
        elif "enum" in defs.get(kept[0].get("$ref", "").split("/")[-1], {}):
            # Not nullable, pydantic writes an enum with a default in place.
            properties[name] = {**defs[kept[0]["$ref"].split("/")[-1]], **rest}
        else:
            properties[name] = {**kept[0], **rest}
    return {**sdk, "properties": properties}


def _without_unreferenced_defs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with only the ``$defs`` entries its ``$ref``s reach (through each other too)."""
    used = defs_used(schema)
    kept = {name: sub for name, sub in schema.get("$defs", {}).items() if name in used}
    rest = {k: v for k, v in schema.items() if k != "$defs"}
    return {**rest, "$defs": kept} if kept else rest


class TestSdkCrossChecks:
    @pytest.mark.parametrize(
        "method",
        [
            example_tools.Library.search,
            example_tools.Library.add_book,
            example_tools.Library.file_under,
            example_tools.Shelter.adopt_pet,
            example_tools.Shelter.ping,
            StrictCase.everything,
        ],
        ids=lambda m: m.__name__,
    )
    def test_openai_pydantic_function_tool(self, method):
        """Strict parameters equal openai.pydantic_function_tool's, but for documented changes."""
        sdk = openai.pydantic_function_tool(method.args_model)["function"]["parameters"]
        [tool_] = export_tools([method.meta().to_llm_definition()], "openai", strict=True)
        ours = tool_["function"]["parameters"]
        # The root description: the SDK sends the Args model's docstring ("Generated by
        # llm_worker for ..."); llm_worker's input_schema leaves it out (_codegen/schema.py).
        assert sdk.pop("description").startswith("Generated by llm_worker for ")
        # Titles: pydantic titles every property and the root ("Query", "SearchArgs");
        # llm_worker's input_schema leaves those out, keeping only the $defs titles. Titles
        # document, they never validate, so both sides are compared without them...
        # An argument with a default takes null (for that default): pydantic's own
        # generator shows that null; llm_worker's input_schema shows the type, as any
        # default, and strict mode then makes it nullable. Compared as the type.
        sdk = _without_default_nulls(sdk, method.meta().input_schema)
        with_defaults = [
            name
            for name, sub in sdk["properties"].items()
            if sub.get("default") is not None  # a None default is nullable already
        ]
        expected = _nullable(_strip_titles(_sdk_as_ours(sdk)), with_defaults)
        # The SDK keeps the $defs entry of a reference it inlined; llm_worker writes only
        # the entries a $ref of the output points at.
        assert _without_unreferenced_defs(expected) == _strip_titles(ours)
        # ... and the titles llm_worker keeps are the SDK's.
        for name, sub in ours.get("$defs", {}).items():
            assert sub["title"] == sdk["$defs"][name]["title"]

    def test_openai_param_types(self):
        """Both OpenAI formats validate as the SDK's tool param types."""
        chat = pydantic.TypeAdapter(ChatCompletionFunctionToolParam)
        responses = pydantic.TypeAdapter(FunctionToolParam)
        for strict in (False, True):
            for tool_ in export_tools(example_definitions(), "openai", strict=strict):
                assert chat.validate_python(tool_) == tool_
            for tool_ in export_tools(example_definitions(), "openai-responses", strict=strict):
                assert responses.validate_python(tool_) == tool_

    def test_anthropic_tool_param(self):
        """anthropic output validates as anthropic.types.ToolParam, nothing dropped."""
        adapter = pydantic.TypeAdapter(anthropic.types.ToolParam)
        for tool_ in export_tools(example_definitions(), "anthropic"):
            assert adapter.validate_python(tool_) == tool_

    def test_mcp_tool(self):
        """mcp output validates as mcp.types.Tool and dumps back unchanged."""
        for tool_ in export_tools(example_definitions(), "mcp"):
            parsed = mcp.types.Tool.model_validate(tool_)
            assert parsed.model_dump(by_alias=True, exclude_none=True) == tool_
