"""Tests for ``llm_worker._strict_schema``: OpenAI strict mode for any schema, and its nulls.

The schemas come from real MCP servers' ``tools/list`` answers (the reference
servers' filesystem, fetch and memory tools, GitHub's, FastMCP's and zod's
output shapes) and from the shapes OpenAI's Structured Outputs guide
documents; ``hand_written_schemas()`` (``tests/strategies.py``) draws more.
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from strategies import hand_written_schemas
from typing_extensions import NotRequired, TypedDict

from llm_worker import InvalidArgumentError, ToolMeta, export_tools, tool, tool_registry
from llm_worker._json_schema import MAX_DEPTH
from llm_worker._strict_schema import drop_introduced_nulls

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
STRICT_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6"}
STRICT_FORMATS |= {"uuid"}
LOOK_AROUND = ("(?=", "(?!", "(?<=", "(?<!")

# --- Real tool listings --------------------------------------------------------------------

# @modelcontextprotocol/server-filesystem (zod-to-json-schema output).
READ_TEXT_FILE = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "tail": {
            "type": "number",
            "description": "If provided, returns only the last N lines of the file",
        },
        "head": {
            "type": "number",
            "description": "If provided, returns only the first N lines of the file",
        },
    },
    "required": ["path"],
    "additionalProperties": False,
    "$schema": "http://json-schema.org/draft-07/schema#",
}
EDIT_FILE = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "edits": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "oldText": {
                        "type": "string",
                        "description": "Text to search for - must match exactly",
                    },
                    "newText": {"type": "string", "description": "Text to replace with"},
                },
                "required": ["oldText", "newText"],
                "additionalProperties": False,
            },
        },
        "dryRun": {
            "type": "boolean",
            "default": False,
            "description": "Preview changes using git-style diff format",
        },
    },
    "required": ["path", "edits"],
    "additionalProperties": False,
    "$schema": "http://json-schema.org/draft-07/schema#",
}
LIST_ALLOWED_DIRECTORIES = {"type": "object"}
# mcp-server-fetch (pydantic model_json_schema()).
FETCH = {
    "description": "Parameters for fetching a URL.",
    "properties": {
        "url": {
            "description": "URL to fetch",
            "format": "uri",
            "minLength": 1,
            "title": "Url",
            "type": "string",
        },
        "max_length": {
            "default": 5000,
            "description": "Maximum number of characters to return.",
            "exclusiveMaximum": 1000000,
            "exclusiveMinimum": 0,
            "title": "Max Length",
            "type": "integer",
        },
        "raw": {
            "default": False,
            "description": "Get the actual HTML content of the requested page.",
            "title": "Raw",
            "type": "boolean",
        },
    },
    "required": ["url"],
    "title": "Fetch",
    "type": "object",
}
# @modelcontextprotocol/server-memory.
CREATE_ENTITIES = {
    "type": "object",
    "properties": {
        "entities": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The name of the entity"},
                    "entityType": {"type": "string", "description": "The type of the entity"},
                    "observations": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "An array of observation contents",
                    },
                },
                "required": ["name", "entityType", "observations"],
            },
        }
    },
    "required": ["entities"],
}
# github-mcp-server: optional arrays and numbers, no defaults.
CREATE_ISSUE = {
    "type": "object",
    "properties": {
        "owner": {"type": "string", "description": "Repository owner"},
        "repo": {"type": "string", "description": "Repository name"},
        "title": {"type": "string", "description": "Issue title"},
        "body": {"type": "string", "description": "Issue body content"},
        "assignees": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Usernames to assign to this issue",
        },
        "milestone": {"type": "number", "description": "Milestone number"},
    },
    "required": ["owner", "repo", "title"],
}
# FastMCP: a pydantic model of the function's arguments, Optional spelled anyOf.
FASTMCP_ADD = {
    "properties": {
        "a": {"title": "A", "type": "integer"},
        "b": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None, "title": "B"},
    },
    "required": ["a"],
    "title": "addArguments",
    "type": "object",
}
# zod-to-json-schema with $refStrategy "root": draft 7's definitions.
ZOD_DEFINITIONS = {
    "type": "object",
    "properties": {
        "from": {"$ref": "#/definitions/Point"},
        "to": {"$ref": "#/definitions/Point", "description": "Where it ends"},
    },
    "required": ["from", "to"],
    "additionalProperties": False,
    "definitions": {
        "Point": {
            "type": "object",
            "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
            "required": ["x", "y"],
            "additionalProperties": False,
        }
    },
    "$schema": "http://json-schema.org/draft-07/schema#",
}
# OpenAI's Structured Outputs guide: a recursive UI schema (root recursion with "#").
OPENAI_UI = {
    "type": "object",
    "properties": {
        "type": {"type": "string", "enum": ["div", "button", "header", "section", "field"]},
        "label": {"type": "string"},
        "children": {"type": "array", "items": {"$ref": "#"}},
        "attributes": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "value": {"type": "string"}},
                "required": ["name", "value"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["type", "label", "children", "attributes"],
    "additionalProperties": False,
}
# The guide's linked list: recursion through $defs, optional by a null type.
OPENAI_LINKED_LIST = {
    "type": "object",
    "properties": {"linked_list": {"$ref": "#/$defs/linked_list_node"}},
    "$defs": {
        "linked_list_node": {
            "type": "object",
            "properties": {
                "value": {"type": "number"},
                "next": {"anyOf": [{"$ref": "#/$defs/linked_list_node"}, {"type": "null"}]},
            },
            "additionalProperties": False,
            "required": ["next", "value"],
        }
    },
    "additionalProperties": False,
    "required": ["linked_list"],
}
# The guide's optional field: a type list with null (the enum leaves null out, so it is not).
OPENAI_WEATHER = {
    "type": "object",
    "properties": {
        "location": {"type": "string", "description": "City and country e.g. Bogotá, Colombia"},
        "units": {
            "type": ["string", "null"],
            "enum": ["celsius", "fahrenheit"],
            "description": "Units the temperature will be returned in.",
        },
    },
    "required": ["location", "units"],
    "additionalProperties": False,
}
# Anthropic's tool-use guide: get_weather, with an optional enum.
ANTHROPIC_WEATHER = {
    "type": "object",
    "properties": {
        "location": {
            "type": "string",
            "description": "The city and state, e.g. San Francisco, CA",
        },
        "unit": {
            "type": "string",
            "enum": ["celsius", "fahrenheit"],
            "description": "The unit of temperature",
        },
    },
    "required": ["location"],
}


class Opts(TypedDict):
    depth: NotRequired[int]
    mode: str


@tool_registry
class Options:
    @tool
    async def configure(self, opts: Opts) -> str:
        return str(opts)


REAL_SCHEMAS = {
    "read_text_file": READ_TEXT_FILE,
    "edit_file": EDIT_FILE,
    "list_allowed_directories": LIST_ALLOWED_DIRECTORIES,
    "fetch": FETCH,
    "create_entities": CREATE_ENTITIES,
    "create_issue": CREATE_ISSUE,
    "fastmcp_add": FASTMCP_ADD,
    "zod_definitions": ZOD_DEFINITIONS,
    "openai_ui": OPENAI_UI,
    "openai_linked_list": OPENAI_LINKED_LIST,
    "openai_weather": OPENAI_WEATHER,
    "anthropic_weather": ANTHROPIC_WEATHER,
}


def strict(schema: dict[str, Any], name: str = "t") -> dict[str, Any]:
    meta = ToolMeta(name=name, description="d", input_schema=schema)
    [tool] = export_tools([meta], "openai", strict=True)
    return tool["function"]["parameters"]


def refusal(schema: dict[str, Any]) -> str:
    with pytest.raises(ValueError, match=r"^Cannot make strict OpenAI schemas:\n") as info:
        strict(schema)
    return str(info.value)


def nodes(schema: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every schema node of a strict schema, with its path."""
    found: list[tuple[str, dict[str, Any]]] = []
    stack = [(path, schema)]
    while stack:
        where, node = stack.pop()
        if not isinstance(node, dict):
            continue
        found.append((where, node))
        for key in ("properties", "$defs"):
            stack.extend((f"{where}/{key}/{n}", sub) for n, sub in node.get(key, {}).items())
        if isinstance(node.get("items"), dict):
            stack.append((f"{where}/items", node["items"]))
        stack.extend((f"{where}/anyOf/{i}", sub) for i, sub in enumerate(node.get("anyOf", [])))
    return found


def assert_strict_rules(schema: dict[str, Any]) -> None:
    """Every rule of OpenAI's strict mode this test can check."""
    assert schema.get("type") == "object", "the root is an object"
    assert "anyOf" not in schema, "the root is not anyOf"
    defs = schema.get("$defs", {})
    for path, node in nodes(schema):
        assert set(node) <= STRICT_KEYWORDS, (path, set(node) - STRICT_KEYWORDS)
        if "$ref" in node:
            assert set(node) == {"$ref"}, (path, "nothing beside $ref")
            ref = node["$ref"]
            assert ref == "#" or (ref.startswith("#/$defs/") and ref[8:] in defs), (path, ref)
            continue
        if "anyOf" in node:
            assert set(node) <= {"anyOf", "description", "title"}, path
            assert node["anyOf"], path
            assert all(isinstance(b, dict) for b in node["anyOf"]), path
            continue
        assert isinstance(node.get("type"), str), (path, "one type, written")
        if node["type"] == "object":
            assert node["additionalProperties"] is False, path
            assert node["required"] == list(node["properties"]), path
        if node["type"] == "array":
            assert isinstance(node.get("items"), dict), (path, "arrays have items")
        if "format" in node:
            assert node["format"] in STRICT_FORMATS, path
        if "pattern" in node:
            assert not any(t in node["pattern"] for t in LOOK_AROUND), path
        if "default" in node:
            raise AssertionError(f"{path}: default")


# --- What the rewrite must keep: the original's meaning, with the documented changes -------

_NOTED = {"minLength", "maxLength", "uniqueItems", "minProperties", "maxProperties"}
_IMPLIED = {
    "object": {"properties", "required", "additionalProperties"},
    "array": {"items", "prefixItems", "minItems", "maxItems"},
    "string": {"pattern", "minLength", "maxLength"},
    "number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
}


def meaning(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with the changes docs/export.md documents for strict mode, as JSON Schema.

    Constraints strict mode only notes are gone, ``oneOf`` is ``anyOf``, a node
    without ``type`` has the type its keywords imply, a tuple's items are any of
    its item types, and every optional property that strict mode makes required
    as it is (it accepts null, takes one value, or has a default below the top
    level) is required.
    """

    def rewrite(node: Any, top: bool) -> Any:
        if not isinstance(node, dict):
            return node
        if "type" not in node and "$ref" not in node and "allOf" not in node:
            implied = [t for t, keys in _IMPLIED.items() if keys & set(node)]
            if implied:
                node["type"] = implied
        node = {k: v for k, v in node.items() if k not in _NOTED}
        if any(t in str(node.get("pattern", "")) for t in LOOK_AROUND):
            del node["pattern"]
        if "oneOf" in node:
            node["anyOf"] = node.pop("oneOf")
        if "prefixItems" in node:
            items = [rewrite(i, False) for i in node.pop("prefixItems")]
            distinct = [i for n, i in enumerate(items) if i not in items[:n]]
            node["items"] = distinct[0] if len(distinct) == 1 else {"anyOf": distinct}
        for key in ("properties", "$defs", "definitions"):
            if key in node:
                node[key] = {n: rewrite(s, False) for n, s in node[key].items()}
        if isinstance(node.get("items"), dict):
            node["items"] = rewrite(node["items"], False)
        for key in ("anyOf", "allOf"):
            if key in node:
                node[key] = [rewrite(s, top) for s in node[key]]
        node["__top__"] = top
        return node

    result = rewrite(copy.deepcopy(schema), True)
    validator = jsonschema.Draft202012Validator(_untagged(result))

    def require(node: Any) -> None:
        if not isinstance(node, dict):
            return
        top = node.pop("__top__", False)
        properties = node.get("properties", {})
        required = node.setdefault("required", [])
        for name, sub in properties.items():
            if name in required:
                continue
            plain = _untagged(sub)
            values = [plain["const"]] if "const" in plain else plain.get("enum")
            if (
                (values is not None and len(values) == 1 and values[0] is not None)
                or validator.evolve(schema=plain).is_valid(None)
                or (not top and plain.get("default") is not None)
            ):
                required.append(name)
        if not required:
            del node["required"]
        for key in ("properties", "$defs", "definitions"):
            for sub in node.get(key, {}).values():
                require(sub)
        require(node.get("items"))
        for sub in [*node.get("anyOf", []), *node.get("allOf", [])]:
            require(sub)

    require(result)
    return result


def _untagged(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _untagged(v) for k, v in node.items() if k != "__top__"}
    if isinstance(node, list):
        return [_untagged(v) for v in node]
    return node


def fill(value: Any, schema: dict[str, Any]) -> Any:
    """``value`` with a null for each property the strict ``schema`` requires and lacks."""
    validator = jsonschema.Draft202012Validator(schema)
    defs = schema.get("$defs", {})

    def go(value: Any, node: dict[str, Any]) -> Any:
        if "$ref" in node:
            return go(value, schema if node["$ref"] == "#" else defs[node["$ref"][8:]])
        if "anyOf" in node:
            branches = [validator.evolve(schema=branch) for branch in node["anyOf"]]
            for branch, check in zip(node["anyOf"], branches, strict=True):
                if check.is_valid(value):  # a branch that takes the value as it is comes first
                    return go(value, branch)
            for branch, check in zip(node["anyOf"], branches, strict=True):
                filled = go(value, branch)
                if check.is_valid(filled):
                    return filled
            return value
        if isinstance(value, dict) and "properties" in node:
            result = {}
            for name, sub in node["properties"].items():
                if name in value:
                    result[name] = go(value[name], sub)
                elif validator.evolve(schema=sub).is_valid(None):
                    result[name] = None
            return {**value, **result}
        if isinstance(value, list) and "items" in node:
            return [go(item, node["items"]) for item in value]
        return value

    return go(value, schema)


class TestRealSchemas:
    @pytest.mark.parametrize("name", list(REAL_SCHEMAS))
    def test_exports_in_strict_mode(self, name):
        """Each real tool schema exports in strict mode, keeping every strict-mode rule."""
        assert_strict_rules(strict(REAL_SCHEMAS[name]))

    def test_optional_arguments_become_nullable(self):
        """read_text_file: head and tail may be null, which means not given."""
        assert strict(READ_TEXT_FILE) == {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "tail": {
                    "anyOf": [{"type": "number"}, {"type": "null"}],
                    "description": "If provided, returns only the last N lines of the file",
                },
                "head": {
                    "anyOf": [{"type": "number"}, {"type": "null"}],
                    "description": "If provided, returns only the first N lines of the file",
                },
            },
            "required": ["path", "tail", "head"],
            "additionalProperties": False,
        }

    def test_an_object_without_properties_is_a_tool_without_arguments(self):
        """{"type": "object"} (every no-argument MCP tool) is a closed empty object."""
        assert strict(LIST_ALLOWED_DIRECTORIES) == {
            "type": "object",
            "properties": {},
            "required": [],
            "additionalProperties": False,
        }

    def test_an_object_without_type(self):
        """memory's entities have properties but no type: they are the objects they are."""
        item = strict(CREATE_ENTITIES)["properties"]["entities"]["items"]
        assert item["type"] == "object"
        assert item["required"] == ["name", "entityType", "observations"]
        assert item["additionalProperties"] is False

    def test_definitions_become_defs(self):
        """zod's #/definitions/... references resolve: they point into the output's $defs."""
        parameters = strict(ZOD_DEFINITIONS)
        assert parameters["properties"]["from"] == {"$ref": "#/$defs/Point"}
        assert parameters["properties"]["to"]["description"] == "Where it ends"
        assert parameters["$defs"]["Point"]["required"] == ["x", "y"]
        assert "definitions" not in parameters

    def test_root_recursion_is_kept_as_a_definition(self):
        """OpenAI's UI schema refers to its root with "#": that root becomes a $defs entry."""
        parameters = strict(OPENAI_UI)
        assert parameters["properties"]["children"]["items"] == {"$ref": "#/$defs/root"}
        root = {k: v for k, v in parameters.items() if k != "$defs"}
        assert parameters["$defs"]["root"] == root

    def test_constraints_strict_mode_lacks_become_notes(self):
        """fetch: minLength and format uri are noted; exclusive bounds stay."""
        properties = strict(FETCH)["properties"]
        assert properties["url"] == {
            "type": "string",
            "title": "Url",
            "description": "URL to fetch (minLength: 1; format: uri)",
        }
        assert properties["max_length"]["anyOf"][0] == {
            "type": "integer",
            "exclusiveMinimum": 0,
            "exclusiveMaximum": 1000000,
            "title": "Max Length",
        }

    def test_type_lists_and_enums(self):
        """The guide's ["string", "null"] with an enum of strings takes the enum's values only."""
        assert strict(OPENAI_WEATHER)["properties"]["units"] == {
            "type": "string",
            "enum": ["celsius", "fahrenheit"],
            "description": "Units the temperature will be returned in.",
        }
        assert strict(ANTHROPIC_WEATHER)["properties"]["unit"] == {
            "anyOf": [{"type": "string", "enum": ["celsius", "fahrenheit"]}, {"type": "null"}],
            "description": "The unit of temperature",
        }

    def test_a_null_the_schema_accepts_stays_a_null(self):
        """FastMCP's Optional b accepts null already: required as it is, nothing introduced."""
        assert strict(FASTMCP_ADD)["properties"]["b"] == {
            "anyOf": [{"type": "integer"}, {"type": "null"}],
            "title": "B",
        }
        assert drop_introduced_nulls(FASTMCP_ADD, {"a": 1, "b": None}) == {"a": 1, "b": None}

    def test_openapi_nullable_admits_null(self):
        """A schema converted from OpenAPI 3.0 says ``nullable: true``: the model may send
        null (the keyword was dropped, and null with it), and the null is the schema's own."""
        schema = {
            "type": "object",
            "properties": {"note": {"type": "string", "nullable": True}},
            "required": ["note"],
        }
        assert strict(schema)["properties"]["note"] == {
            "anyOf": [{"type": "null"}, {"type": "string"}]
        }
        assert drop_introduced_nulls(schema, {"note": None}) == {"note": None}
        # Merged with a part that refuses null, it refuses null.
        for parts in (
            [{"type": "string"}, {"type": "string", "nullable": True}],
            [{"type": "string", "nullable": True}, {"type": "string"}],
        ):
            merged = {"type": "object", "properties": {"note": {"allOf": parts}}}
            merged["required"] = ["note"]
            assert strict(merged)["properties"]["note"] == {"type": "string"}
        both = [{"type": "string", "nullable": True}, {"type": "string", "nullable": True}]
        merged = {"type": "object", "properties": {"note": {"allOf": both}}, "required": ["note"]}
        assert strict(merged)["properties"]["note"] == {
            "anyOf": [{"type": "null"}, {"type": "string"}]
        }


class TestRewrites:
    def test_look_around_patterns_become_notes(self):
        """A pattern OpenAI's regex engine refuses is kept as a note; a plain one stays."""
        schema = {
            "type": "object",
            "properties": {
                "no_x": {"type": "string", "pattern": "^(?!x).*$"},
                "back": {"type": "string", "pattern": r"(a)\1"},
                "plain": {"type": "string", "pattern": "^[a-z]+$"},
            },
            "required": ["no_x", "back", "plain"],
        }
        properties = strict(schema)["properties"]
        assert properties["no_x"] == {"type": "string", "description": "(pattern: ^(?!x).*$)"}
        assert properties["back"] == {"type": "string", "description": r"(pattern: (a)\1)"}
        assert properties["plain"] == {"type": "string", "pattern": "^[a-z]+$"}

    @pytest.mark.parametrize(
        "root",
        [
            {"type": ["object", "null"], "properties": {"a": {"type": "string"}}},
            {
                "anyOf": [
                    {"type": "object", "properties": {"a": {"type": "string"}}},
                    {"type": "null"},
                ]
            },
            {"oneOf": [{"type": "null"}, {"properties": {"a": {"type": "string"}}}]},
        ],
        ids=["type-list", "anyOf", "oneOf-untyped"],
    )
    def test_root_that_is_not_a_plain_object(self, root):
        """A root that also allows null, or is an anyOf with one object, becomes that object."""
        assert strict(root) == {
            "type": "object",
            "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
            "required": ["a"],
            "additionalProperties": False,
        }

    def test_root_of_several_objects_is_refused(self):
        """An anyOf of two objects at the top level has no strict form: one clear error."""
        assert refusal(
            {
                "anyOf": [
                    {"type": "object", "properties": {"a": {"type": "string"}}},
                    {"type": "object", "properties": {"b": {"type": "string"}}},
                ]
            }
        ) == (
            "Cannot make strict OpenAI schemas:\n"
            "  t: at the top level: the arguments must be one object; an anyOf of several "
            "objects at the top level has no strict form"
        )

    def test_root_that_is_no_object_is_refused(self):
        """A root that is a string is refused, naming what it allows: where a ToolMeta is
        made (no provider takes it), and by the rewrite itself."""
        from llm_worker._strict_schema import StrictSchemaError, strict_schema

        schema = {"type": ["string", "null"]}
        with pytest.raises(ValueError, match=r"input_schema must be an object schema"):
            ToolMeta(name="t", input_schema=schema)
        with pytest.raises(StrictSchemaError) as info:
            strict_schema(schema)
        assert info.value.problems == [
            "at the top level: the arguments must be an object, and this schema allows "
            "null or string"
        ]

    @pytest.mark.parametrize("via", ["ref", "allOf"])
    def test_required_through_a_root_ref_or_allof_stays_required(self, via):
        """A property required through a root $ref or allOf is not made nullable."""
        args = {
            "type": "object",
            "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
            "required": ["x"],
        }
        schema: dict[str, Any] = (
            {"$ref": "#/$defs/Args", "$defs": {"Args": args}}
            if via == "ref"
            else {"allOf": [args, {"description": "Arguments"}]}
        )
        properties = strict(schema)["properties"]
        assert properties["x"] == {"type": "integer"}
        assert properties["y"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}

    def test_allof_is_merged(self):
        """allOf of a model and its extra fields (inheritance) is one object."""
        schema = {
            "type": "object",
            "properties": {
                "pet": {
                    "allOf": [
                        {"$ref": "#/$defs/Animal"},
                        {"properties": {"lives": {"type": "integer", "minimum": 1}}},
                    ]
                }
            },
            "required": ["pet"],
            "$defs": {
                "Animal": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"],
                }
            },
        }
        assert strict(schema)["properties"]["pet"] == {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "lives": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]},
            },
            "required": ["name", "lives"],
            "additionalProperties": False,
        }

    def test_allof_merges_bounds_and_closed_objects(self):
        """Bounds take the tighter value; a closed entry keeps only its own properties."""
        schema = {
            "type": "object",
            "properties": {
                "n": {"allOf": [{"type": "integer", "minimum": 1}, {"minimum": 3, "maximum": 9}]},
                "o": {
                    "allOf": [
                        {"properties": {"a": {"type": "string"}, "b": {"type": "string"}}},
                        {"properties": {"a": {"minLength": 2}}, "additionalProperties": False},
                    ]
                },
            },
            "required": ["n", "o"],
        }
        properties = strict(schema)["properties"]
        assert properties["n"] == {"type": "integer", "minimum": 3, "maximum": 9}
        assert properties["o"]["properties"] == {
            "a": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "(minLength: 2)"}
        }

    def test_arrays_without_items_are_refused(self):
        """An array without items, or with items: true, has no strict form: each is named."""
        message = refusal(
            {
                "type": "object",
                "properties": {
                    "none": {"type": "array"},
                    "any": {"type": "array", "items": True},
                },
                "required": ["none", "any"],
            }
        )
        assert message == (
            "Cannot make strict OpenAI schemas:\n"
            "  t: at properties/none: an array whose items may be any value has no strict form "
            "(give 'items' a type)\n"
            "  t: at properties/any: an array whose items may be any value has no strict form "
            "(give 'items' a type)"
        )

    def test_empty_tuple(self):
        """tuple[()] (no items at all) exports with items and maxItems 0."""
        schema = {
            "type": "object",
            "properties": {"nothing": {"type": "array", "maxItems": 0, "minItems": 0}},
            "required": ["nothing"],
        }
        assert strict(schema)["properties"]["nothing"] == {
            "type": "array",
            "minItems": 0,
            "maxItems": 0,
            "items": {"type": "null"},
        }

    @pytest.mark.parametrize(
        ("ref", "problem"),
        [
            ("invalid", "the $ref 'invalid' is not a local reference (#/...)"),
            ("#/definitions/Gone", "the $ref '#/definitions/Gone' points to nothing"),
            ("#/required", "the $ref '#/required' points to a value that is not a schema"),
            ("https://example.com/s.json", "the $ref 'https://example.com/s.json' is not a local "),
        ],
    )
    def test_unresolvable_refs_are_refused(self, ref, problem):
        """A $ref that resolves to no schema in this one is refused, naming the ref and place."""
        message = refusal({"type": "object", "properties": {"a": {"$ref": ref}}, "required": ["a"]})
        assert message.startswith(
            f"Cannot make strict OpenAI schemas:\n  t: at properties/a: {problem}"
        )

    def test_a_ref_to_any_json_pointer(self):
        """A $ref to a property's schema becomes a $defs entry of its own."""
        schema = {
            "type": "object",
            "properties": {
                "first": {"type": "object", "properties": {"x": {"type": "integer"}}},
                "second": {"$ref": "#/properties/first"},
            },
            "required": ["first", "second"],
        }
        parameters = strict(schema)
        assert parameters["properties"]["second"] == {"$ref": "#/$defs/properties_first"}
        assert parameters["$defs"]["properties_first"] == parameters["properties"]["first"]

    def test_nested_optional_properties(self):
        """Below the top level: without a default, nullable (not given); with one, required."""
        schema = {
            "type": "object",
            "properties": {
                "options": {
                    "type": "object",
                    "properties": {
                        "depth": {"type": "integer"},
                        "mode": {"type": "string", "default": "fast"},
                        "kind": {"const": "x"},
                    },
                }
            },
            "required": ["options"],
        }
        assert strict(schema)["properties"]["options"]["properties"] == {
            "depth": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "mode": {"type": "string", "description": '(default: "fast")'},
            "kind": {"type": "string", "const": "x"},
        }

    def test_ambiguous_nulls_are_refused(self):
        """Branches with the same properties, where null means 'not given' in one, are refused."""
        schema = {
            "type": "object",
            "properties": {
                "v": {
                    "anyOf": [
                        {"type": "object", "properties": {"a": {"type": "integer"}}},
                        {
                            "type": "object",
                            "properties": {"a": {"type": ["integer", "null"]}},
                            "required": ["a"],
                        },
                    ]
                }
            },
            "required": ["v"],
        }
        assert refusal(schema) == (
            "Cannot make strict OpenAI schemas:\n"
            "  t: at properties/v: anyOf branches with the same properties, where a null for 'a' "
            "means 'not given' in one and null in another, have no strict form"
        )

    def test_every_problem_of_every_tool_at_once(self):
        """One ValueError lists every place, in every tool, in order."""
        metas = [
            ToolMeta(name="one", input_schema={"type": "object", "properties": {"a": {}}}),
            ToolMeta(
                name="two",
                input_schema={"type": "object", "properties": {"b": {"type": "object"}}},
            ),
        ]
        with pytest.raises(ValueError, match=r"^Cannot make strict") as info:
            export_tools(metas, "openai-responses", strict=True)
        assert str(info.value) == (
            "Cannot make strict OpenAI schemas:\n"
            "  one: at properties/a: a value of any type (no 'type') has no strict form\n"
            "  two: at properties/b: an object with keys not named in advance (no 'properties') "
            "has no strict form"
        )


def _chain(levels: int) -> dict[str, Any]:
    """$defs L0 -> L1 -> ... each used twice by the one before: 2**levels paths."""
    defs: dict[str, Any] = {f"L{levels}": {"type": "string"}}
    for i in range(levels - 1, -1, -1):
        ref = {"$ref": f"#/$defs/L{i + 1}", "description": f"level {i + 1}"}
        defs[f"L{i}"] = {
            "type": "object",
            "properties": {"left": ref, "right": ref},
            "required": ["left", "right"],
        }
    return {"type": "object", "properties": {"top": {"$ref": "#/$defs/L0"}}, "$defs": defs}


def _nested(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}, "required": ["a"]}
    return schema


class TestDefNames:
    @pytest.mark.parametrize(
        ("key", "ref"),
        [("x/y", "#/$defs/x~1y"), ("a~b", "#/$defs/a~0b"), ("x y", "#/$defs/x%20y")],
        ids=["slash", "tilde", "space"],
    )
    def test_a_def_whose_name_needs_escaping_is_still_referred_to(self, key, ref):
        """A $defs key that a reference must escape gets a name that needs none: every
        reference of the output resolves, and validates what the input validates."""
        schema = {
            "type": "object",
            "properties": {"a": {"$ref": ref}},
            "required": ["a"],
            "$defs": {key: {"type": "string"}},
        }
        jsonschema.validate({"a": "ok"}, schema)
        out = strict(schema)
        name = key.replace("/", "_").replace("~", "_").replace(" ", "_")
        assert list(out["$defs"]) == [name]
        assert out["properties"]["a"] == {"$ref": f"#/$defs/{name}"}
        assert_strict_rules(out)
        jsonschema.validate({"a": "ok"}, out)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({"a": 1}, out)


class TestSize:
    @pytest.mark.parametrize("levels", [16, 30, 1000])
    def test_reused_definitions_stay_linear(self, levels):
        """A definition reused at every level: the strict schema stays the size of the input."""
        schema = _chain(levels)
        parameters = strict(schema)
        assert_strict_rules(parameters)
        assert len(json.dumps(parameters)) < 4 * len(json.dumps(schema))

    def test_deep_nesting_is_refused_clearly(self):
        """Nesting past MAX_DEPTH levels is refused with one clear error, never RecursionError."""
        message = refusal(_nested(300))
        assert f"nests deeper than {MAX_DEPTH} levels" in message

    def test_nesting_within_the_limit_exports(self):
        """Up to MAX_DEPTH levels export in strict mode."""
        assert_strict_rules(strict(_nested(MAX_DEPTH // 2)))

    def test_a_1000_level_schema_is_refused_by_tool_meta(self):
        """ToolMeta refuses a schema too deep to send as JSON: a TypeError, no RecursionError."""
        with pytest.raises(TypeError, match=r"^ToolMeta input_schema nests too deeply"):
            ToolMeta(name="deep", input_schema=_nested(1000))


class TestDropIntroducedNulls:
    def test_top_level(self):
        """read_text_file: the nulls strict mode introduced for head and tail are left out."""
        assert drop_introduced_nulls(READ_TEXT_FILE, {"path": "/a", "head": None, "tail": 5}) == {
            "path": "/a",
            "tail": 5,
        }

    def test_nothing_to_drop_returns_the_same_object(self):
        """Without a null, the arguments come back as they are (the same object)."""
        arguments = {"path": "/a", "head": 3}
        assert drop_introduced_nulls(READ_TEXT_FILE, arguments) is arguments

    def test_the_input_is_not_changed(self):
        """Dropping copies what it drops from."""
        arguments = {"path": "/a", "head": None, "nested": {"x": None}}
        before = copy.deepcopy(arguments)
        drop_introduced_nulls(READ_TEXT_FILE, arguments)
        assert arguments == before

    def test_required_and_genuine_nulls_stay(self):
        """A null for a required argument, or one the schema accepts, is sent on as it is."""
        assert drop_introduced_nulls(READ_TEXT_FILE, {"path": None}) == {"path": None}
        assert drop_introduced_nulls(FASTMCP_ADD, {"a": 1, "b": None}) == {"a": 1, "b": None}

    def test_nested_through_refs_and_arrays(self):
        """Nulls in nested objects, reached through $ref, anyOf and arrays, are dropped too."""
        schema = {
            "type": "object",
            "properties": {
                "points": {"type": "array", "items": {"$ref": "#/definitions/P"}},
                "maybe": {"anyOf": [{"$ref": "#/definitions/P"}, {"type": "null"}]},
            },
            "required": ["points", "maybe"],
            "definitions": {
                "P": {
                    "type": "object",
                    "properties": {"x": {"type": "number"}, "label": {"type": "string"}},
                    "required": ["x"],
                }
            },
        }
        arguments = {"points": [{"x": 1, "label": None}], "maybe": {"x": 2, "label": None}}
        assert drop_introduced_nulls(schema, arguments) == {
            "points": [{"x": 1}],
            "maybe": {"x": 2},
        }
        assert drop_introduced_nulls(schema, {"points": [], "maybe": None}) == {
            "points": [],
            "maybe": None,
        }

    def test_the_branch_with_the_keys_sent(self):
        """In an anyOf of objects, the branch with exactly the keys the model sent decides."""
        schema = {
            "type": "object",
            "properties": {
                "shape": {
                    "anyOf": [
                        {
                            "type": "object",
                            "properties": {"r": {"type": "number"}, "note": {"type": "string"}},
                            "required": ["r"],
                        },
                        {
                            "type": "object",
                            "properties": {
                                "w": {"type": "number"},
                                "note": {"type": ["string", "null"]},
                            },
                            "required": ["w", "note"],
                        },
                    ]
                }
            },
            "required": ["shape"],
        }
        assert drop_introduced_nulls(schema, {"shape": {"r": 1, "note": None}}) == {
            "shape": {"r": 1}
        }
        assert drop_introduced_nulls(schema, {"shape": {"w": 1, "note": None}}) == {
            "shape": {"w": 1, "note": None}
        }

    def test_a_branch_of_values_is_no_array(self):
        """An anyOf of a const and a tuple: an array is read by the tuple, nulls dropped there."""
        schema = {
            "type": "object",
            "properties": {
                "c": {"anyOf": [{"const": "x"}, {"$ref": "#/$defs/Pair"}]},
            },
            "$defs": {
                "Pair": {
                    "type": "array",
                    "prefixItems": [
                        {"type": "string"},
                        {"properties": {"a": {"type": "string"}}, "additionalProperties": False},
                    ],
                    "minItems": 2,
                    "maxItems": 2,
                }
            },
        }
        assert drop_introduced_nulls(schema, {"c": [{"a": None}, {"a": None}]}) == {"c": [{}, {}]}

    def test_the_array_branch_whose_items_fit(self):
        """Of two array types, the one whose items may be objects reads a list of objects."""
        pair = {
            "type": "array",
            "prefixItems": [
                {"type": "string"},
                {"properties": {"a": {"type": "string"}}, "additionalProperties": False},
            ],
            "minItems": 2,
            "maxItems": 2,
        }
        schema = {
            "type": "object",
            "properties": {"b": {"anyOf": [{"type": "array", "items": {"type": "string"}}, pair]}},
        }
        sent = {"b": ["x", {"a": None}]}
        assert drop_introduced_nulls(schema, sent) == {"b": ["x", {}]}

    def test_nested_defaults_are_not_dropped(self):
        """Below the top level a property with a default is sent by the model, never null."""
        schema = {
            "type": "object",
            "properties": {
                "o": {"type": "object", "properties": {"m": {"type": "string", "default": "x"}}}
            },
            "required": ["o"],
        }
        assert drop_introduced_nulls(schema, {"o": {"m": None}}) == {"o": {"m": None}}

    @pytest.mark.anyio
    async def test_a_generated_tool_with_a_typed_dict(self):
        """A TypedDict's NotRequired key comes out nullable; dropped, the tool takes the call."""
        tool = Options.ToolConfigure(Options())
        schema = Options.configure.meta().input_schema
        assert strict(schema)["$defs"]["Opts"]["properties"]["depth"] == {
            "anyOf": [{"type": "integer"}, {"type": "null"}]
        }
        sent = {"opts": {"depth": None, "mode": "fast"}}
        with pytest.raises(InvalidArgumentError, match=r"'opts\.depth'"):
            await tool.execute(json.dumps(sent))
        assert (
            await tool.execute(json.dumps(drop_introduced_nulls(schema, sent)))
            == "{'mode': 'fast'}"
        )

    def test_a_branch_too_short_for_the_array_is_not_chosen(self):
        """An empty tuple's branch (maxItems 0) comes first: the two items were read against
        it, and the introduced null of the second stayed (the tool then refused a string
        that was never sent). Found by TestAnySchema."""
        pair = {
            "type": "array",
            "prefixItems": [
                {"type": "string"},
                {"properties": {"b": {"type": "string"}}, "additionalProperties": False},
            ],
            "minItems": 2,
            "maxItems": 2,
        }
        schema = {
            "properties": {"a": {"anyOf": [{"type": "array", "maxItems": 0}, pair]}},
            "additionalProperties": False,
        }
        assert drop_introduced_nulls(schema, {"a": ["s", {"b": None}]}) == {"a": ["s", {}]}
        too_long = {"properties": {"a": {"anyOf": [pair, {"type": "array", "minItems": 3}]}}}
        three = ["s", {"b": None}, None]
        assert drop_introduced_nulls(too_long, {"a": three}) == {"a": three}

    def test_an_unreadable_schema_leaves_the_arguments(self):
        """A schema it cannot read (a $ref to nothing) gives the arguments back as they are."""
        arguments = {"a": None}
        schema = {"type": "object", "properties": {"a": {"$ref": "#/nowhere"}}}
        assert drop_introduced_nulls(schema, arguments) is arguments


class TestAnySchema:
    @settings(
        max_examples=int(os.environ.get("STRICT_EXAMPLES", "100")),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(schema=hand_written_schemas(), data=st.data())
    def test_refused_or_strict_and_equivalent(self, schema, data):
        """Any schema is refused with ValueError, or strict and accepting what it accepted.

        (a) the strict schema keeps every checkable strict-mode rule; (b) what it
        accepts, once the introduced nulls are dropped, the original accepts
        (with the documented changes), and back.
        """
        try:
            parameters = strict(schema)
        except ValueError as exc:
            refused = str(exc)
        else:
            refused = None
        if refused is not None:
            assert refused.startswith("Cannot make strict OpenAI schemas:\n  t: at ")
            return
        assert_strict_rules(parameters)
        reference = _untagged(meaning(schema))
        original = jsonschema.Draft202012Validator(reference)
        rewritten = jsonschema.Draft202012Validator(parameters)
        sent = data.draw(from_schema(parameters), label="sent")
        assert original.is_valid(drop_introduced_nulls(schema, sent)), sent
        meant = data.draw(from_schema(reference), label="meant")
        if not isinstance(meant, dict):  # arguments are always an object
            assert not rewritten.is_valid(meant)
            return
        filled = fill(meant, parameters)
        assert rewritten.is_valid(filled), filled
        assert drop_introduced_nulls(schema, filled) == meant
