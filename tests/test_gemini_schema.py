"""Tests for ``llm_worker._gemini_schema``: references, and schemas too big to inline.

The format's other rewrites are pinned in ``tests/test_formats.py`` (``TestGemini``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from support import GEMINI_SDK

from llm_worker import ToolMeta, export_tools
from llm_worker._gemini_schema import MAX_NODES
from llm_worker._json_schema import MAX_DEPTH


def gemini(schema: dict[str, Any]) -> dict[str, Any]:
    [declaration] = export_tools([ToolMeta(name="t", input_schema=schema)], "gemini")
    return declaration["parameters"]


def refusal(schema: dict[str, Any]) -> str:
    with pytest.raises(ValueError, match=r"^Cannot make Gemini schemas:\n  t: ") as info:
        export_tools([ToolMeta(name="t", input_schema=schema)], "gemini")
    return str(info.value).removeprefix("Cannot make Gemini schemas:\n  t: ")


def reused(levels: int) -> dict[str, Any]:
    """$defs L0 -> L1 -> ..., each used twice by the one before."""
    defs: dict[str, Any] = {f"L{levels}": {"type": "string"}}
    for i in range(levels - 1, -1, -1):
        ref = {"$ref": f"#/$defs/L{i + 1}"}
        defs[f"L{i}"] = {"type": "object", "properties": {"left": ref, "right": ref}}
    return {"type": "object", "properties": {"top": {"$ref": "#/$defs/L0"}}, "$defs": defs}


class TestReferences:
    def test_draft_7_definitions_are_inlined(self):
        """A #/definitions/... reference is inlined like a $defs one, not made any value."""
        schema = {
            "type": "object",
            "properties": {"p": {"$ref": "#/definitions/P", "description": "The point"}},
            "required": ["p"],
            "definitions": {"P": {"type": "object", "properties": {"x": {"type": "number"}}}},
        }
        assert gemini(schema)["properties"]["p"] == {
            "type": "OBJECT",
            "description": "The point",
            "properties": {"x": {"type": "NUMBER"}},
        }

    def test_any_local_pointer_is_inlined(self):
        """A reference to another property's schema is inlined too."""
        schema = {
            "type": "object",
            "properties": {
                "first": {"type": "string", "format": "date-time"},
                "second": {"$ref": "#/properties/first"},
            },
        }
        assert gemini(schema)["properties"]["second"] == {"type": "STRING", "format": "date-time"}

    def test_a_reference_to_nothing_is_refused(self):
        """A $ref that resolves to nothing is a ValueError naming it, not a silent any value."""
        schema = {"type": "object", "properties": {"p": {"$ref": "#/definitions/Gone"}}}
        assert refusal(schema) == "the $ref '#/definitions/Gone' points to nothing"


class TestSize:
    def test_small_reuse_is_inlined(self):
        """A model reused at a few levels is inlined everywhere it is used."""
        parameters = gemini(reused(3))
        leaf = parameters["properties"]["top"]
        for _ in range(3):
            leaf = leaf["properties"]["right"]
        assert leaf == {"type": "STRING"}

    @pytest.mark.parametrize("levels", [16, 30])
    def test_exponential_reuse_is_refused(self, levels):
        """Reuse that would inline 2**levels nodes stops at MAX_NODES with one clear error."""
        assert refusal(reused(levels)) == (
            f"the schema has more than {MAX_NODES} nodes once its $refs are inlined (Gemini's "
            "schemas have no references); reuse fewer models, or nest them less"
        )

    def test_a_1000_level_chain_is_refused_without_recursion_error(self):
        """A chain of 1,000 references nests too deep to inline: ValueError, no RecursionError."""
        defs: dict[str, Any] = {"L1000": {"type": "string"}}
        for i in range(999, -1, -1):
            defs[f"L{i}"] = {
                "type": "object",
                "properties": {"next": {"$ref": f"#/$defs/L{i + 1}"}},
            }
        schema = {"type": "object", "properties": {"top": {"$ref": "#/$defs/L0"}}, "$defs": defs}
        assert refusal(schema) == f"the schema nests deeper than {MAX_DEPTH} levels once inlined"


class TestEnums:
    def test_an_enum_of_one_type_is_typed_by_it(self):
        assert gemini({"type": "object", "properties": {"n": {"enum": [1, 2]}}})["properties"] == {
            "n": {"type": "INTEGER", "enum": ["1", "2"], "format": "enum"}
        }

    def test_an_enum_of_several_types_gets_a_branch_per_type(self):
        """Literal[1, "a"]: the model must be able to answer 1 as a number (the tool's
        validator refuses the string "1"), so the values are split by type."""
        schema = {
            "type": "object",
            "properties": {
                "pick": {"enum": [1, "a", 2.5, True], "description": "One of them"},
                "maybe": {"enum": [1, "a", None]},
            },
        }
        properties = gemini(schema)["properties"]
        assert properties["pick"] == {
            "description": "One of them",
            "anyOf": [
                {"type": "INTEGER", "enum": ["1"], "format": "enum"},
                {"type": "STRING", "enum": ["a"], "format": "enum"},
                {"type": "NUMBER", "enum": ["2.5"]},
                {"type": "BOOLEAN"},
            ],
        }
        assert properties["maybe"] == {
            "anyOf": [
                {"type": "INTEGER", "enum": ["1"], "format": "enum"},
                {"type": "STRING", "enum": ["a"], "format": "enum"},
            ],
            "nullable": True,
        }
        if GEMINI_SDK:  # google-genai needs Python 3.11+ (tests/support.py)
            from google.genai import types as genai_types

            genai_types.Schema.model_validate(gemini(schema))


def declared(schema: dict[str, Any]) -> dict[str, Any]:
    """The declaration, checked by google-genai's own ``FunctionDeclaration`` (where it is
    installed: Python 3.11+, tests/support.py)."""
    [declaration] = export_tools([ToolMeta(name="t", input_schema=schema)], "gemini")
    if GEMINI_SDK:
        from google.genai import types

        types.FunctionDeclaration.model_validate(declaration)
    return declaration


PATH = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
MODE = {"type": "object", "properties": {"mode": {"enum": ["r", "w"]}}}
MERGED = {
    "type": "OBJECT",
    "properties": {"path": {"type": "STRING"}, "mode": {"type": "STRING", "enum": ["r", "w"]}},
    "required": ["path"],
}


def without_formats(schema: Any) -> Any:
    """``schema`` without ``format: enum`` (the enum rule's own business)."""
    if isinstance(schema, dict):
        return {k: without_formats(v) for k, v in schema.items() if (k, v) != ("format", "enum")}
    return [without_formats(v) for v in schema] if isinstance(schema, list) else schema


class TestCombinators:
    def test_an_all_of_of_several_entries_is_merged(self):
        """Not dropped (the property became {}, any value), at any level."""
        nested = {"type": "object", "properties": {"opts": {"allOf": [PATH, MODE]}}}
        assert without_formats(declared(nested)["parameters"]["properties"]["opts"]) == MERGED
        assert without_formats(declared({"allOf": [PATH, MODE]})["parameters"]) == MERGED

    def test_an_all_of_nothing_satisfies_is_refused(self):
        schema = {
            "type": "object",
            "properties": {"n": {"allOf": [{"type": "string"}, {"type": "integer"}]}},
        }
        assert refusal(schema) == "no arguments can satisfy this schema"

    def test_a_root_any_of_several_objects_joins_their_properties(self):
        """Gemini's parameters are one object: the declaration lost them all before (and a
        refusal would fail every request of a client with that tool)."""
        declaration = declared({"oneOf": [PATH, MODE]})
        assert without_formats(declaration["parameters"]) == {
            "type": "OBJECT",
            "properties": {
                "path": {"type": "STRING"},
                "mode": {"type": "STRING", "enum": ["r", "w"]},
            },
            "description": "(the arguments match oneOf "
            f"{json.dumps([PATH, MODE], sort_keys=True, ensure_ascii=False)})",
        }

    def test_a_root_any_of_with_one_object_branch_is_that_object(self):
        schema = {"anyOf": [PATH, {"type": "string"}], "description": "A path."}
        parameters = declared(schema)["parameters"]
        assert parameters["properties"] == {"path": {"type": "STRING"}}
        assert parameters["required"] == ["path"]
        assert parameters["type"] == "OBJECT"

    @pytest.mark.parametrize("additional", [True, {}, {"type": "string"}])
    def test_a_root_that_takes_any_keys_is_a_tool_without_parameters(self, additional):
        """As {"type": "object"} is (it was refused, failing every request)."""
        schema = {"type": "object", "additionalProperties": additional}
        assert "parameters" not in declared(schema)

    def test_a_type_list_puts_each_keyword_in_its_types_branch(self):
        """``items`` on a node without a type is refused by Gemini ("only allowed for ARRAY")."""
        schema = {
            "type": "object",
            "properties": {
                "paths": {
                    "type": ["string", "array", "null"],
                    "items": {"type": "string"},
                    "maxLength": 9,
                    "minItems": 1,
                    "description": "One path or several.",
                }
            },
        }
        assert declared(schema)["parameters"]["properties"]["paths"] == {
            "description": "One path or several.",
            "anyOf": [
                {"type": "STRING", "maxLength": 9},
                {"type": "ARRAY", "items": {"type": "STRING"}, "minItems": 1},
            ],
            "nullable": True,
        }


class TestShapes:
    def test_boolean_schemas_are_any_value(self):
        """``true`` is not a Schema google-genai takes; ``{}`` is."""
        schema = {
            "type": "object",
            "properties": {
                "extra": True,
                "values": {"type": "array", "items": True},
                "either": {"anyOf": [True, {"type": "string"}]},
            },
        }
        assert declared(schema)["parameters"]["properties"] == {
            "extra": {},
            "values": {"type": "ARRAY", "items": {}},
            "either": {"anyOf": [{}, {"type": "STRING"}]},
        }

    def test_a_false_schema_is_refused(self):
        schema = {"type": "object", "properties": {"never": False}}
        assert refusal(schema) == "false is not a schema Gemini can take"

    def test_every_array_has_items(self):
        """Gemini refuses an ARRAY without ``items`` ("items: missing field")."""
        schema = {
            "type": "object",
            "properties": {
                "any": {"type": "array"},
                "empty": {"type": "array", "prefixItems": [], "maxItems": 0},
            },
        }
        properties = declared(schema)["parameters"]["properties"]
        assert properties["any"] == {"type": "ARRAY", "items": {}}
        assert properties["empty"] == {"type": "ARRAY", "maxItems": 0, "items": {}}

    def test_a_draft_7_tuple_is_rewritten_as_prefix_items_are(self):
        schema = {
            "type": "object",
            "properties": {"pair": {"type": "array", "items": [{"type": "number"}] * 2}},
        }
        assert declared(schema)["parameters"]["properties"]["pair"] == {
            "type": "ARRAY",
            "items": {"type": "NUMBER"},
        }

    def test_a_maps_values_are_described(self):
        """Gemini takes no additionalProperties (400 "Unknown name"): the values' schema is
        said in the description, not lost."""
        schema = {
            "type": "object",
            "properties": {
                "env": {
                    "type": "object",
                    "additionalProperties": {"type": "integer"},
                    "description": "Variables.",
                },
                "tags": {"type": "object", "additionalProperties": True},
            },
        }
        properties = declared(schema)["parameters"]["properties"]
        assert properties["env"] == {
            "type": "OBJECT",
            "description": 'Variables. (any keys, each value: {"type": "integer"})',
        }
        assert properties["tags"] == {"type": "OBJECT", "description": "(any keys, any values)"}


def test_assertions_the_subset_cannot_say_are_noted():
    """Dropped without a word before (strict mode notes them)."""
    schema = {
        "type": "object",
        "properties": {
            "code": {"type": "string", "not": {"enum": ["root"]}},
            "tags": {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}},
        },
    }
    properties = declared(schema)["parameters"]["properties"]
    assert properties["code"] == {"type": "STRING", "description": '(not: {"enum": ["root"]})'}
    assert properties["tags"]["description"] == '(propertyNames: {"pattern": "^[a-z]+$"})'


class TestMalformedValues:
    @pytest.mark.parametrize(
        ("node", "problem"),
        [
            ({"type": "obj"}, "'type' 'obj' is not a JSON Schema type"),
            ({"type": ["string", {"x": 1}]}, "'type' {'x': 1} is not a JSON Schema type"),
            ({"type": None}, "'type' None is not a JSON Schema type"),
            ({"type": "integer", "minimum": "3"}, "'minimum' is \"3\", not a number"),
            ({"type": "array", "minItems": 1.5}, "'minItems' is 1.5, not an integer"),
            ({"type": "string", "description": 5}, "'description' is 5, not a string"),
            ({"type": "string", "format": []}, "'format' is [], not a string"),
            ({"type": "string", "nullable": "yes"}, "'nullable' is \"yes\", not true or false"),
            ({"enum": "a"}, "'enum' is \"a\", not a list"),
            ({"anyOf": {"type": "string"}}, '\'anyOf\' is {"type": "string"}, not a list'),
            ({"type": "object", "properties": "a"}, "'properties' is \"a\", not an object"),
            ({"type": "array", "items": "x"}, '"x" is not a schema Gemini can take'),
            (
                {"type": "object", "properties": {"a": {}}, "required": [["a"]]},
                "'required' is [[\"a\"]], not a list of property names",
            ),
        ],
    )
    def test_a_value_google_genai_refuses_is_named(self, node, problem):
        """Copied into the declaration before (or a TypeError, for an unhashable format):
        google-genai's Schema refused it, or Gemini refused every request of the client."""
        assert refusal({"type": "object", "properties": {"a": node}}) == problem

    def test_a_whole_number_written_as_a_float_is_an_integer(self):
        """1.0 is an integer, as JSON Schema says (and pydantic reads it as one)."""
        assert gemini({"type": "object", "properties": {"a": {"type": "array", "minItems": 1.0}}})


class TestArgumentNames:
    def test_names_gemini_refuses_are_named(self):
        """google-genai's FunctionDeclaration.parameters: a parameter name is 1 to 64 letters,
        digits or '_', the first a letter or '_'. They were sent before, and Gemini refused
        every request of a client with that tool."""
        names = ["café", "0x", "-dash", "page.size", "a:b", "x" * 65, "ok_1", "_p", "x" * 64]
        schema = {"type": "object", "properties": {name: {"type": "string"} for name in names}}
        assert refusal(schema) == (
            "argument names Gemini refuses (1 to 64 letters, digits or '_', the first a letter "
            f"or '_'): 'café', '0x', '-dash', 'page.size', 'a:b', '{'x' * 65}'"
        )

    def test_only_the_arguments_are_checked(self):
        """The rule is for the function's parameters; a nested object's keys are not them."""
        schema = {
            "type": "object",
            "properties": {"opts": {"type": "object", "properties": {"page.size": {}}}},
        }
        assert gemini(schema)["properties"]["opts"]["properties"] == {"page.size": {}}
