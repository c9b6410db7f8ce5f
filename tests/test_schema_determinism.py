"""The bytes ``llm-worker schema`` writes: the same in every process, and nothing unused.

Set values in ``Field(examples=...)`` and ``json_schema_extra`` come out in one
order. Pydantic writes a set in the order it iterates, which for strings changes from
process to process (``PYTHONHASHSEED``). Set defaults were sorted already
(``tests/codegen/test_schema.py``); these are the other places a set reaches
the schema. Each case runs in fresh processes with different hash seeds, as
``llm-worker schema --check`` does in CI, and the outputs must be the same bytes.

OpenAI strict mode writes a ``$defs`` entry only when a ``$ref`` in its output
refers to it (a reference it inlines needs none).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, given, settings
from pydantic import BaseModel, Field
from strategies import hand_written_schemas
from support import defs_referenced, defs_used

from llm_worker import ToolMeta, export_tools, tool, tool_metas, tool_registry
from llm_worker._strict_schema import StrictSchemaError, strict_schema

SEEDS = ("0", "1", "2", "3", "4", "5")
# Eight items: a hash order that happens to be sorted is a 1-in-40320 chance.
WORDS = ["ant", "bee", "cat", "dog", "eel", "fox", "gnu", "hen"]

_TARGET = '''
import dataclasses
from typing import Annotated, Optional
from pydantic import BaseModel, Field
from llm_worker import tool, tool_registry

WORDS = {"hen", "gnu", "fox", "eel", "dog", "cat", "bee", "ant"}


class Filter(BaseModel):
    tags: Annotated[set[str], Field(examples=[set(WORDS)])] = set()
    extra: Annotated[str, Field(json_schema_extra={"x-choices": set(WORDS)})] = "ant"


class Labels(BaseModel):
    labels: frozenset[str] = frozenset()


@tool_registry
class Shop:
    @tool
    async def search(
        self,
        f: Filter,
        colors: Annotated[frozenset[str], Field(examples=[frozenset(WORDS)])] = frozenset(),
        maybe: Annotated[Optional[set[str]], Field(examples=[set(WORDS), None])] = None,
        groups: Annotated[list[set[str]], Field(examples=[[set(WORDS)]])] = [],
        by_key: Annotated[dict[str, set[str]], Field(examples=[{"k": set(WORDS)}])] = {},
        pair: Annotated[tuple[int, set[str]], Field(examples=[(1, set(WORDS))])] = (0, set()),
        labelled: Annotated[Labels, Field(examples=[Labels(labels=frozenset(WORDS))])] = Labels(),
        choice: Annotated[str, Field(json_schema_extra={"x-choices": set(WORDS)})] = "ant",
        nested: Annotated[
            int, Field(json_schema_extra={"x-meta": {"deep": [frozenset(WORDS)]}})
        ] = 1,
        listed: Annotated[list[str], Field(examples=[["hen", "ant"]])] = [],
    ) -> str:
        """Search."""
        return ""
'''


# What a tool returns reaches the schema too (MCP's outputSchema), with its set defaults.
_RETURNING_TARGET = f'''
import enum
from pydantic import BaseModel, Field
from llm_worker import tool, tool_registry

WORDS = {WORDS!r}


class Color(enum.Enum):
    ANT = "ant"
    BEE = "bee"
    CAT = "cat"
    DOG = "dog"


class Report(BaseModel):
    tags: set[str] = Field(set(WORDS), examples=[frozenset(WORDS)])
    colors: frozenset[Color] = frozenset(Color)


@tool_registry
class Reports:
    @tool
    def report(self) -> Report:
        """Make a report."""
        return Report()

    @tool
    def tag_sets(self) -> list[frozenset[str]]:
        """Tags, grouped."""
        return [frozenset(WORDS)]
'''


def _schema_in_processes(tmp_path: Path, *args: str, target: str = _TARGET) -> list[str]:
    """``llm-worker schema`` of the target in one fresh process per seed: their outputs."""
    (tmp_path / "determinism_target.py").write_text(target, encoding="utf-8")
    outputs = []
    for seed in SEEDS:
        result = subprocess.run(
            [sys.executable, "-m", "llm_worker", "schema", "determinism_target", *args],
            capture_output=True,
            text=True,
            encoding="utf-8",
            env={**os.environ, "PYTHONHASHSEED": seed},
            cwd=tmp_path,
            check=False,
            timeout=120,
        )
        assert (result.returncode, result.stderr) == (0, "")
        outputs.append(result.stdout)
    return outputs


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return _schema_in_processes(tmp_path_factory.mktemp("determinism"))


@pytest.fixture(scope="module")
def schema(outputs: list[str]) -> dict[str, Any]:
    [tool] = json.loads(outputs[0])
    return tool["input_schema"]


def test_the_same_bytes_in_every_process(outputs):
    """The neutral output of every hash seed is the same bytes (it was 6 outputs for 6 seeds)."""
    assert len(set(outputs)) == 1


@pytest.mark.parametrize(
    "args", [["--format", "openai-responses"], ["--format", "mcp"]], ids=["openai-responses", "mcp"]
)
def test_other_formats_are_the_same_bytes_in_every_process(tmp_path, args):
    """The formats that carry the examples and extras on are as deterministic."""
    assert len(set(_schema_in_processes(tmp_path, *args))) == 1


def test_output_schemas_are_the_same_bytes_in_every_process(tmp_path):
    """MCP's outputSchema of a returned model with set defaults and examples (it was as
    many outputs as seeds): the sets are written sorted, as in input schemas."""
    outputs = _schema_in_processes(tmp_path, "--format", "mcp", target=_RETURNING_TARGET)
    assert len(set(outputs)) == 1
    report = next(t for t in json.loads(outputs[0]) if t["name"] == "report")
    fields = report["outputSchema"]["properties"]
    assert fields["tags"]["default"] == sorted(WORDS)
    assert fields["tags"]["examples"] == [sorted(WORDS)]
    assert fields["colors"]["default"] == ["ant", "bee", "cat", "dog"]


class TestExamples:
    def test_a_set_example_of_a_parameter_is_sorted(self, schema):
        """Field(examples=[frozenset(...)]) on a tool parameter: the items sorted."""
        assert schema["properties"]["colors"]["examples"] == [WORDS]

    def test_a_set_example_of_a_model_field_is_sorted(self, schema):
        """Field(examples=[{...}]) on a field of a model the tool takes: the items sorted."""
        assert schema["$defs"]["Filter"]["properties"]["tags"]["examples"] == [WORDS]

    def test_a_set_example_of_an_optional_set_is_sorted(self, schema):
        """Through the anyOf of Optional[set[str]], and the None example kept."""
        assert schema["properties"]["maybe"]["examples"] == [WORDS, None]

    def test_sets_inside_an_example_are_sorted(self, schema):
        """A set inside a list, a dict's value, a tuple and a model instance."""
        properties = schema["properties"]
        assert properties["groups"]["examples"] == [[WORDS]]
        assert properties["by_key"]["examples"] == [{"k": WORDS}]
        assert properties["pair"]["examples"] == [[1, WORDS]]
        assert properties["labelled"]["examples"] == [{"labels": WORDS}]

    def test_a_list_example_keeps_its_order(self, schema):
        """Only where the type is a set: a list's order is the user's."""
        assert schema["properties"]["listed"]["examples"] == [["hen", "ant"]]


class TestJsonSchemaExtra:
    def test_a_set_in_json_schema_extra_is_sorted(self, schema):
        """json_schema_extra={"x-choices": {...}} on a parameter and on a model's field."""
        assert schema["properties"]["choice"]["x-choices"] == WORDS
        assert schema["$defs"]["Filter"]["properties"]["extra"]["x-choices"] == WORDS

    def test_a_set_deep_in_json_schema_extra_is_sorted(self, schema):
        """A frozenset in a list in a dict of json_schema_extra."""
        assert schema["properties"]["nested"]["x-meta"] == {"deep": [WORDS]}


# -- OpenAI strict mode: no $defs entry without a $ref to it -------------------------------


def _unreferenced(schema: dict[str, Any]) -> set[str]:
    """The $defs entries nothing outside them, nor another used entry, refers to."""
    return set(schema.get("$defs", {})) - defs_used(schema)


class Addr(BaseModel):
    city: str


class Tree(BaseModel):
    label: str
    children: list[Tree] = []


@tool_registry
class Post:
    @tool
    async def ship(
        self,
        to: Annotated[Addr, Field(description="where it goes")],
        back: Addr | None = None,
    ) -> str:
        """Ship."""
        return ""

    @tool
    async def plant(self, tree: Annotated[Tree, Field(description="the root")]) -> str:
        """Plant."""
        return ""


def _strict_parameters(name: str) -> dict[str, Any]:
    [meta] = [meta for meta in tool_metas(Post) if meta.name == name]
    [exported] = export_tools([meta], "openai", strict=True)
    return exported["function"]["parameters"]


class TestStrictDefs:
    def test_an_inlined_reference_leaves_no_definition(self):
        """A $ref with a description is inlined: its definition is not written as well."""
        schema = strict_schema(
            {
                "type": "object",
                "properties": {"to": {"$ref": "#/$defs/Addr", "description": "where"}},
                "required": ["to"],
                "$defs": {"Addr": {"type": "string"}},
            }
        )
        assert schema == {
            "type": "object",
            "properties": {"to": {"type": "string", "description": "where"}},
            "required": ["to"],
            "additionalProperties": False,
        }

    def test_a_definition_also_referenced_plainly_is_kept(self):
        """One property inlines Addr, another (Optional) refers to it: Addr stays, once."""
        schema = _strict_parameters("ship")
        assert set(schema["$defs"]) == {"Addr"}
        assert "$ref" not in schema["properties"]["to"]
        assert _unreferenced(schema) == set()

    def test_a_recursive_definition_inlined_at_the_top_is_kept_for_its_recursion(self):
        """Tree inlined for its description still refers to itself below: Tree stays."""
        schema = _strict_parameters("plant")
        assert set(schema["$defs"]) == {"Tree"}
        assert _unreferenced(schema) == set()

    def test_a_definition_only_a_dropped_branch_referred_to_is_left_out(self):
        """An object branch nothing satisfies is dropped, with the $ref one of its
        properties made: the definition of that $ref goes too."""
        schema = strict_schema(
            {
                "type": "object",
                "properties": {
                    "x": {
                        "anyOf": [
                            {
                                "type": "object",
                                "properties": {
                                    "a": {"$ref": "#/$defs/Addr"},
                                    "b": {"type": "string", "enum": [1]},
                                },
                                "required": ["a", "b"],
                                "additionalProperties": False,
                            },
                            {"type": "string"},
                        ]
                    }
                },
                "required": ["x"],
                "$defs": {"Addr": {"type": "string"}},
            }
        )
        assert schema["properties"]["x"] == {"type": "string"}
        assert "$defs" not in schema

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(schema=hand_written_schemas())
    def test_every_definition_is_referenced(self, schema):
        """Whatever the schema: each $defs entry of the strict form is reached by a $ref."""
        try:
            result = strict_schema(schema)
        except StrictSchemaError:
            return
        assert _unreferenced(result) == set()

    def test_the_reviewers_shop(self):
        """review r1 good:Shop: no $ref in the output, so no $defs (it held Addr and Color)."""
        meta = ToolMeta(
            name="ship",
            description="d",
            input_schema={
                "type": "object",
                "properties": {
                    "to": {"$ref": "#/$defs/Addr", "description": "where"},
                    "color": {"$ref": "#/$defs/Color", "default": "red"},
                },
                "required": ["to"],
                "$defs": {
                    "Addr": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                        "required": ["city"],
                    },
                    "Color": {"enum": ["red", "blue"], "type": "string"},
                },
            },
        )
        [exported] = export_tools([meta], "openai", strict=True)
        parameters = exported["function"]["parameters"]
        assert defs_referenced(parameters) == set()
        assert "$defs" not in parameters
