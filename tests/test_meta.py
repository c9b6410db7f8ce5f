"""Tests for ``ToolMeta`` and ``LlmToolDefinition`` (``llm_worker._meta``)."""

from __future__ import annotations

import copy
import json
import pickle
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import (
    CountingDefinition,
    json_objects,
    json_schemas,
    snake_names,
    tool_metas,
)

from llm_worker import LlmToolDefinition, ToolDefinition, ToolMeta, ToolServer

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "search query"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["query"],
    "additionalProperties": False,
}


def reversed_keys(value: Any) -> Any:
    """The same JSON value with every object's keys in reverse insertion order."""
    if isinstance(value, dict):
        return {key: reversed_keys(value[key]) for key in reversed(list(value))}
    if isinstance(value, list):
        return [reversed_keys(item) for item in value]
    return value


SpecClass = type[ToolMeta] | type[LlmToolDefinition]
SPEC_CLASSES = pytest.mark.parametrize("cls", [ToolMeta, LlmToolDefinition])

# Drawing schemas dominates these properties' run time; 50 examples keep the module quick.
QUICK = settings(max_examples=50)


class TestConstruction:
    @SPEC_CLASSES
    def test_keywords(self, cls: SpecClass) -> None:
        """name, description and input_schema are given as keywords and read back."""
        meta = cls(name="search", description="Run a search.", input_schema=SCHEMA)
        assert meta.name == "search"
        assert meta.description == "Run a search."
        assert meta.input_schema == SCHEMA

    @SPEC_CLASSES
    def test_defaults(self, cls: SpecClass) -> None:
        """Without description and schema: an empty description and an empty object schema."""
        meta = cls(name="ping")
        assert meta.description == ""
        assert meta.input_schema == {"type": "object", "properties": {}}
        assert meta == cls(name="ping", description="", input_schema=None)

    @SPEC_CLASSES
    def test_positional_arguments_rejected(self, cls: SpecClass) -> None:
        """The fields are keyword-only."""
        with pytest.raises(TypeError):
            cls("ping")

    @SPEC_CLASSES
    @pytest.mark.parametrize(
        ("kwargs", "field"),
        [
            ({"name": 1}, "name"),
            ({"name": None}, "name"),
            ({"name": "x", "description": b"bytes"}, "description"),
            ({"name": "x", "description": None}, "description"),
        ],
    )
    def test_non_str_fields_rejected(
        self,
        cls: SpecClass,
        kwargs: dict[str, Any],
        field: str,
    ) -> None:
        """A name or description that is not a str raises TypeError naming the field."""
        with pytest.raises(TypeError, match=field):
            cls(**kwargs)

    @QUICK
    @given(name=snake_names(), description=st.text(), schema=json_schemas())
    def test_round_trip(self, name: str, description: str, schema: dict[str, Any]) -> None:
        """Any name, description and JSON-Schema object read back equal to what was given."""
        meta = ToolMeta(name=name, description=description, input_schema=schema)
        assert (meta.name, meta.description, meta.input_schema) == (name, description, schema)

    def test_non_ascii_kept(self) -> None:
        """Non-ASCII text in the description and the schema is kept as is."""
        schema = {"type": "object", "description": "検索クエリ文字列 🔍"}
        meta = ToolMeta(name="search", description="検索を実行する", input_schema=schema)
        assert meta.description == "検索を実行する"
        assert meta.input_schema == schema

    def test_any_mapping_accepted(self) -> None:
        """input_schema may be any Mapping of JSON data, not only a dict."""
        meta = ToolMeta(name="x", input_schema=MappingProxyType({"type": "object"}))
        assert meta.input_schema == {"type": "object"}


class TestBadSchema:
    @SPEC_CLASSES
    @pytest.mark.parametrize(
        "schema",
        [
            [{"type": "object"}],
            "{}",
            b"{}",
            42,
            {("type",): "object"},
            {"type": {"object"}},
            {"default": object()},
            {"minimum": float("nan")},
            {"maximum": float("inf")},
        ],
        ids=[
            "list",
            "str",
            "bytes",
            "int",
            "tuple-key",
            "set-value",
            "object-value",
            "nan",
            "infinity",
        ],
    )
    def test_type_error(self, cls: SpecClass, schema: Any) -> None:
        """A non-mapping or non-JSON-serialisable schema raises TypeError."""
        with pytest.raises(TypeError, match="input_schema"):
            cls(name="x", input_schema=schema)

    @pytest.mark.parametrize("schema", [["not", "a", "mapping"], {"default": object()}])
    def test_with_input_schema_type_error(self, schema: Any) -> None:
        """with_input_schema rejects bad schemas the same way, leaving the original as it was."""
        meta = ToolMeta(name="x", input_schema=SCHEMA)
        with pytest.raises(TypeError, match="input_schema"):
            meta.with_input_schema(schema)
        assert meta.input_schema == SCHEMA


class TestImmutability:
    @SPEC_CLASSES
    @pytest.mark.parametrize("attr", ["name", "description", "input_schema", "other"])
    def test_setattr_raises(self, cls: SpecClass, attr: str) -> None:
        """Setting any attribute, existing or new, raises AttributeError and changes nothing."""
        meta = cls(name="x", description="d", input_schema=SCHEMA)
        with pytest.raises(AttributeError):
            setattr(meta, attr, "changed")
        assert meta == cls(name="x", description="d", input_schema=SCHEMA)

    @SPEC_CLASSES
    @pytest.mark.parametrize("attr", ["name", "description", "input_schema", "_name"])
    def test_delattr_raises(self, cls: SpecClass, attr: str) -> None:
        """Deleting an attribute raises AttributeError and changes nothing."""
        meta = cls(name="x", description="d", input_schema=SCHEMA)
        with pytest.raises(AttributeError):
            delattr(meta, attr)
        assert meta.name == "x"
        assert meta.description == "d"
        assert meta.input_schema == SCHEMA

    @SPEC_CLASSES
    def test_no_instance_dict(self, cls: SpecClass) -> None:
        """There is no __dict__ to write the fields through."""
        assert not hasattr(cls(name="x"), "__dict__")

    @SPEC_CLASSES
    def test_input_schema_is_a_fresh_copy(self, cls: SpecClass) -> None:
        """Each read of input_schema returns a new dict, nested containers included."""
        meta = cls(name="x", input_schema=SCHEMA)
        first, second = meta.input_schema, meta.input_schema
        assert first == second
        assert first is not second
        assert first["properties"] is not second["properties"]

    @SPEC_CLASSES
    def test_mutating_returned_schema(self, cls: SpecClass) -> None:
        """Mutating the dict input_schema returned, at any depth, never changes the meta."""
        meta = cls(name="x", input_schema=SCHEMA)
        got = meta.input_schema
        got["type"] = "array"
        got["properties"]["query"]["type"] = "integer"
        got["properties"]["tags"]["items"]["type"] = "number"
        got["required"].append("tags")
        del got["additionalProperties"]
        assert meta.input_schema == SCHEMA

    @SPEC_CLASSES
    def test_mutating_given_schema(self, cls: SpecClass) -> None:
        """Mutating the dict passed in, at any depth, never changes the meta."""
        given = copy.deepcopy(SCHEMA)
        meta = cls(name="x", input_schema=given)
        given["properties"]["query"]["type"] = "integer"
        given["required"].clear()
        given["extra"] = True
        assert meta.input_schema == SCHEMA

    @QUICK
    @given(schema=json_schemas(), junk=json_objects())
    def test_mutations_never_leak(self, schema: dict[str, Any], junk: dict[str, Any]) -> None:
        """Whatever is written into the given or the returned dict, the meta keeps its schema."""
        original = copy.deepcopy(schema)
        meta = ToolMeta(name="x", input_schema=schema)
        schema.update(junk)
        schema["properties"] = junk
        got = meta.input_schema
        got.update(junk)
        got["properties"] = junk
        assert meta.input_schema == original

    def test_registered_schema_unaffected_by_mutations(self) -> None:
        """No dict passed in or read back can change a registered tool's schema."""
        given = copy.deepcopy(SCHEMA)
        meta = ToolMeta(name="search", description="Search.", input_schema=given)
        server = ToolServer()
        server.register_tool(CountingDefinition(meta))
        handle = server.handle()
        expected = json.dumps([meta.to_llm_definition().to_dict()])

        given["properties"]["query"]["type"] = "integer"
        meta.input_schema["properties"].clear()
        entry = handle.get_tool("search")
        assert entry is not None
        entry[0].input_schema["required"].append("tags")
        listed = handle.tool_definitions_sorted()
        listed[0].input_schema["type"] = "array"
        listed[0].to_dict()["input_schema"]["properties"]["tags"] = None
        listed.clear()

        assert handle.tool_definitions_sorted()[0].input_schema == SCHEMA
        assert json.dumps([d.to_dict() for d in handle.tool_definitions_sorted()]) == expected
        entry = handle.get_tool("search")
        assert entry is not None
        assert entry[0].input_schema == SCHEMA


class TestEquality:
    @SPEC_CLASSES
    def test_equal_values(self, cls: SpecClass) -> None:
        """Two instances built from equal values are equal and hash alike."""
        a = cls(name="x", description="d", input_schema=SCHEMA)
        b = cls(name="x", description="d", input_schema=copy.deepcopy(SCHEMA))
        assert a == b
        assert not a != b  # noqa: SIM202 - checks __ne__ too
        assert hash(a) == hash(b)
        assert len({a, b}) == 1

    @QUICK
    @given(schema=json_schemas())
    def test_key_order_insensitive(self, schema: dict[str, Any]) -> None:
        """Schemas differing only in key order (at any depth) are equal and hash alike."""
        a = ToolMeta(name="x", input_schema=schema)
        b = ToolMeta(name="x", input_schema=reversed_keys(schema))
        assert a == b
        assert hash(a) == hash(b)
        assert a.to_llm_definition() == b.to_llm_definition()
        assert hash(a.to_llm_definition()) == hash(b.to_llm_definition())

    @pytest.mark.parametrize(
        "other",
        [
            {"name": "y", "description": "d", "input_schema": SCHEMA},
            {"name": "x", "description": "e", "input_schema": SCHEMA},
            {"name": "x", "description": "d", "input_schema": {**SCHEMA, "required": []}},
            {"name": "x", "description": "d", "input_schema": {**SCHEMA, "x": 1}},
        ],
        ids=["name", "description", "schema-value", "schema-key"],
    )
    def test_unequal_values(self, other: dict[str, Any]) -> None:
        """Any differing field makes the metas unequal."""
        a = ToolMeta(name="x", description="d", input_schema=SCHEMA)
        assert a != ToolMeta(**other)
        assert len({a, ToolMeta(**other)}) == 2

    def test_list_order_matters(self) -> None:
        """Arrays keep their order: a reordered ``required`` is a different schema."""
        a = ToolMeta(name="x", input_schema={"required": ["a", "b"]})
        b = ToolMeta(name="x", input_schema={"required": ["b", "a"]})
        assert a != b

    def test_meta_and_definition_differ(self) -> None:
        """A ToolMeta never equals an LlmToolDefinition, even with the same fields."""
        meta = ToolMeta(name="x", description="d", input_schema=SCHEMA)
        assert meta != meta.to_llm_definition()
        assert meta.to_llm_definition() != meta

    @SPEC_CLASSES
    @pytest.mark.parametrize("other", [None, "x", ("x", "", {}), {"name": "x"}])
    def test_other_types_unequal(self, cls: SpecClass, other: object) -> None:
        """Comparing with an unrelated object is simply unequal."""
        assert cls(name="x") != other

    @QUICK
    @given(meta=tool_metas())
    def test_usable_as_dict_key(self, meta: ToolMeta) -> None:
        """A meta and an equal copy find the same dict entry."""
        table = {meta: "found"}
        copy_ = ToolMeta(
            name=meta.name, description=meta.description, input_schema=meta.input_schema
        )
        assert table[copy_] == "found"


class TestWithMethods:
    def test_with_description(self) -> None:
        """with_description returns a new meta with the new text; the original is unchanged."""
        meta = ToolMeta(name="x", description="old", input_schema=SCHEMA)
        new = meta.with_description("new")
        assert new is not meta
        assert type(new) is ToolMeta
        assert (new.name, new.description, new.input_schema) == ("x", "new", SCHEMA)
        assert (meta.name, meta.description, meta.input_schema) == ("x", "old", SCHEMA)

    def test_with_input_schema(self) -> None:
        """with_input_schema returns a new meta with the new schema; the original is unchanged."""
        meta = ToolMeta(name="x", description="d", input_schema=SCHEMA)
        new = meta.with_input_schema({"type": "object"})
        assert new is not meta
        assert type(new) is ToolMeta
        assert (new.name, new.description, new.input_schema) == ("x", "d", {"type": "object"})
        assert meta.input_schema == SCHEMA

    def test_with_input_schema_copies(self) -> None:
        """The dict given to with_input_schema is copied: later mutation has no effect."""
        given = copy.deepcopy(SCHEMA)
        new = ToolMeta(name="x").with_input_schema(given)
        given["properties"]["query"]["type"] = "integer"
        assert new.input_schema == SCHEMA

    def test_chained(self) -> None:
        """The builder style of the Rust original works by chaining."""
        meta = (
            ToolMeta(name="counter")
            .with_description("Increment the counter")
            .with_input_schema({"type": "object"})
        )
        assert meta == ToolMeta(
            name="counter", description="Increment the counter", input_schema={"type": "object"}
        )

    @QUICK
    @given(meta=tool_metas(), description=st.text(), schema=json_schemas())
    def test_with_methods_match_constructor(
        self, meta: ToolMeta, description: str, schema: dict[str, Any]
    ) -> None:
        """with_...() equals building the meta anew with that one field changed."""
        assert meta.with_description(description) == ToolMeta(
            name=meta.name, description=description, input_schema=meta.input_schema
        )
        assert meta.with_input_schema(schema) == ToolMeta(
            name=meta.name, description=meta.description, input_schema=schema
        )


class TestLlmDefinition:
    def test_to_llm_definition(self) -> None:
        """to_llm_definition carries name, description and schema over unchanged."""
        meta = ToolMeta(name="x", description="d", input_schema=SCHEMA)
        definition = meta.to_llm_definition()
        assert type(definition) is LlmToolDefinition
        assert definition == LlmToolDefinition(name="x", description="d", input_schema=SCHEMA)

    def test_to_dict(self) -> None:
        """to_dict gives exactly name, description and input_schema, in that order."""
        definition = LlmToolDefinition(name="x", description="d", input_schema=SCHEMA)
        as_dict = definition.to_dict()
        assert as_dict == {"name": "x", "description": "d", "input_schema": SCHEMA}
        assert list(as_dict) == ["name", "description", "input_schema"]

    def test_to_dict_is_a_copy(self) -> None:
        """Mutating what to_dict returned leaves the definition unchanged."""
        definition = LlmToolDefinition(name="x", description="d", input_schema=SCHEMA)
        as_dict = definition.to_dict()
        as_dict["name"] = "y"
        as_dict["input_schema"]["properties"].clear()
        assert definition.to_dict() == {"name": "x", "description": "d", "input_schema": SCHEMA}

    @QUICK
    @given(meta=tool_metas())
    def test_to_dict_json_round_trip(self, meta: ToolMeta) -> None:
        """to_dict output survives json.dumps/json.loads unchanged."""
        as_dict = meta.to_llm_definition().to_dict()
        assert json.loads(json.dumps(as_dict)) == as_dict


class TestPickle:
    @QUICK
    @given(meta=tool_metas())
    def test_meta_round_trip(self, meta: ToolMeta) -> None:
        """A pickled ToolMeta loads back equal, with the same type and fields."""
        loaded = pickle.loads(pickle.dumps(meta))
        assert type(loaded) is ToolMeta
        assert loaded == meta
        assert hash(loaded) == hash(meta)
        assert loaded.input_schema == meta.input_schema

    @QUICK
    @given(meta=tool_metas())
    def test_definition_round_trip(self, meta: ToolMeta) -> None:
        """A pickled LlmToolDefinition loads back equal, with the same to_dict()."""
        definition = meta.to_llm_definition()
        loaded = pickle.loads(pickle.dumps(definition))
        assert type(loaded) is LlmToolDefinition
        assert loaded == definition
        assert loaded.to_dict() == definition.to_dict()

    @pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
    def test_every_protocol(self, protocol: int) -> None:
        """Every pickle protocol round-trips, and the loaded meta is still immutable."""
        meta = ToolMeta(name="x", description="d", input_schema=SCHEMA)
        loaded = pickle.loads(pickle.dumps(meta, protocol=protocol))
        assert loaded == meta
        with pytest.raises(AttributeError):
            loaded.name = "y"

    @SPEC_CLASSES
    def test_copy_and_deepcopy(self, cls: SpecClass) -> None:
        """copy.copy and copy.deepcopy give equal values."""
        meta = cls(name="x", description="d", input_schema=SCHEMA)
        assert copy.copy(meta) == meta
        assert copy.deepcopy(meta) == meta


class TestRepr:
    @SPEC_CLASSES
    def test_repr(self, cls: SpecClass) -> None:
        """The repr names the class and shows every field, with no memory address."""
        meta = cls(name="search", description="Run it.", input_schema={"type": "object"})
        text = repr(meta)
        assert text.startswith(f"{cls.__name__}(name='search', description='Run it.', ")
        assert "input_schema=" in text
        assert '"type"' in text or "'type'" in text
        assert "0x" not in text

    @pytest.mark.parametrize(
        ("given", "kept"),
        [
            ({}, {"type": "object"}),
            ({"type": None, "properties": {}}, {"type": "object", "properties": {}}),
            ({"type": ["object", "null"]}, {"type": "object"}),
            ({"type": "object", "properties": {}}, {"type": "object", "properties": {}}),
        ],
        ids=["no-type", "null-type", "object-or-null", "object"],
    )
    def test_the_arguments_are_an_object(self, given, kept) -> None:
        """MCP takes "type": "object" alone (one tool without it hid every tool of a
        served tools/list); a root that can be an object is one."""
        assert ToolMeta(name="x", input_schema=given).input_schema == kept

    @pytest.mark.parametrize("kind", ["string", "notobject", ["string", "null"], ("string",)])
    def test_a_root_that_is_no_object_is_refused(self, kind) -> None:
        with pytest.raises(ValueError, match="input_schema must be an object schema"):
            ToolMeta(name="x", input_schema={"type": kind})

    def test_repr_distinguishes_values(self) -> None:
        """Metas that differ have different reprs."""
        a = ToolMeta(name="a", description="d", input_schema={"type": "object"})
        assert repr(a) != repr(a.with_description("e"))
        assert repr(a) != repr(a.with_input_schema({"type": "object", "properties": {}}))


class TestReinitialisation:
    def test_init_cannot_run_again(self):
        """Calling __init__ on an existing ToolMeta cannot change it."""
        meta = ToolMeta(name="a", description="d")
        with pytest.raises(AttributeError, match="immutable"):
            meta.__init__(name="renamed", description="hijacked")  # type: ignore[misc]
        assert (meta.name, meta.description) == ("a", "d")


class TestToolDefinitionAlias:
    def test_get_type_hints_resolves_it_in_user_modules(self):
        """A user function annotated with ToolDefinition can be introspected at run time."""
        import typing

        def make() -> ToolDefinition:
            raise NotImplementedError

        hints = typing.get_type_hints(make)
        assert hints["return"] == ToolDefinition


# -- title, annotations, output schema -------------------------------------------------------


def test_a_meta_keeps_title_annotations_and_output_schema_as_values() -> None:
    from llm_worker import ToolAnnotations

    output = {"type": "object", "properties": {"n": {"type": "integer"}}}
    meta = ToolMeta(
        name="rm",
        description="Remove.",
        title="Remove a file",
        annotations=ToolAnnotations(destructive=True, idempotent=True),
        output_schema=output,
    )
    assert meta.title == "Remove a file"
    assert meta.annotations == ToolAnnotations(destructive=True, idempotent=True)
    assert meta.output_schema == output
    meta.output_schema["type"] = "array"  # type: ignore[index]
    assert meta.output_schema == output  # a fresh copy each time
    # value semantics cover the new fields, and key order does not matter
    same = ToolMeta(
        name="rm",
        description="Remove.",
        title="Remove a file",
        annotations=ToolAnnotations(idempotent=True, destructive=True),
        output_schema={"properties": {"n": {"type": "integer"}}, "type": "object"},
    )
    assert meta == same
    assert hash(meta) == hash(same)
    assert meta != ToolMeta(name="rm", description="Remove.")
    assert meta != meta.with_annotations(ToolAnnotations(read_only=True))
    # copies keep them; the model's definition leaves them out
    assert meta.with_description("Delete.").annotations.destructive is True
    assert meta.with_input_schema({"type": "object"}).title == "Remove a file"
    assert (
        meta.to_llm_definition() == ToolMeta(name="rm", description="Remove.").to_llm_definition()
    )
    again = pickle.loads(pickle.dumps(meta))
    assert again == meta
    assert again.output_schema == output
    assert repr(meta) == (
        "ToolMeta(name='rm', description='Remove.', input_schema="
        '{"type": "object", "properties": {}}, title=\'Remove a file\', '
        "annotations=ToolAnnotations(destructive=True, idempotent=True), "
        'output_schema={"type": "object", "properties": {"n": {"type": "integer"}}})'
    )


def test_a_plain_meta_shows_none_of_the_new_fields() -> None:
    meta = ToolMeta(name="x")
    assert (meta.title, meta.output_schema) == (None, None)
    assert meta.annotations.destructive is None
    assert "annotations" not in repr(meta)
    assert "title" not in repr(meta)


def test_bad_title_annotations_or_output_schema_are_refused() -> None:
    from llm_worker import ToolAnnotations

    with pytest.raises(TypeError, match="title must be a str"):
        ToolMeta(name="x", title=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="annotations must be a ToolAnnotations"):
        ToolMeta(name="x", annotations={"readOnlyHint": True})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="output_schema must be an object schema"):
        ToolMeta(name="x", output_schema={"type": "integer"})
    with pytest.raises(TypeError, match="output_schema must be a mapping"):
        ToolMeta(name="x", output_schema=[1])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"ToolAnnotations\.read_only must be a bool"):
        ToolAnnotations(read_only="yes")  # type: ignore[arg-type]
