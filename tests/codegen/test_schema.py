"""``_codegen.schema``: a tool's schema put together field by field equals the whole model's.

Every case builds a real tool through ``@tool_registry`` and compares
``input_schema_of`` (the pieces) with ``model_schema_of`` (pydantic on the
whole ``Args`` model) as JSON text, so key order counts too.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import inspect
import json
import os
import re
import subprocess
import sys
import uuid
from typing import Annotated, Any, Generic, Literal, NewType, Optional, TypeVar, Union

import annotated_types
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field
from typing_extensions import TypeAliasType, TypedDict

from llm_worker import Description, tool, tool_registry
from llm_worker._codegen import schema as schema_module
from llm_worker._codegen.introspect import ParameterSpec, introspect_method
from llm_worker._codegen.schema import input_schema_of, model_schema_of
from llm_worker._options import ToolOptions
from llm_worker._registry import BuiltTool

from . import _schema_types as other_module

REQUIRED = inspect.Parameter.empty
T = TypeVar("T")


class Window(BaseModel):
    """A range of dates."""

    start: str
    end: str | None = None


class Tree(BaseModel):
    label: str
    children: list[Tree] = []


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Movie(TypedDict):
    title: str
    year: int


@dataclasses.dataclass
class Point:
    x: float
    y: float


class Flag(BaseModel):
    on: int | bool = True  # other_module.Flag says 1: equal, but not the same JSON


class Same(BaseModel):
    a: int


class Unhashable:
    """Metadata in Annotated[...] that cannot be a cache key."""

    __hash__ = None  # type: ignore[assignment]


class Holder(BaseModel):
    window: Window
    other: other_module.Window | None = None


class Page(BaseModel, Generic[T]):
    items: list[T]
    next: str | None = None


def in_seconds(schema: dict[str, Any]) -> None:
    """A json_schema_extra that reads the description pydantic has written so far."""
    schema["description"] = f"{schema.get('description')} (in seconds)"


BOUNDED = Annotated[float, Field(ge=-1, le=1)]  # one FieldInfo, shared by two fields below
IN_SECONDS = Annotated[int, Field(json_schema_extra=in_seconds)]
TITLED_BY_DEFAULT = Annotated[
    int, Field(field_title_generator=lambda name, info: f"d={info.default}")
]
OptionalInt = TypeAliasType("OptionalInt", Optional[int])  # noqa: UP045
UserId = NewType("UserId", int)

# (annotation, default) pairs, one field each; the descriptions are added by the tests.
FIELDS: list[tuple[Any, Any]] = [
    (str, REQUIRED),
    (str, "fast"),
    (int, 5),
    (float, 0.5),
    (float, float("inf")),
    (bool, False),
    (bytes, REQUIRED),
    (None, None),
    (Any, REQUIRED),
    (Any, {"a": [1, 2]}),
    (list[str], REQUIRED),
    (list[str], ["a", "b"]),
    (list[int] | None, None),
    (Optional[list[int]], None),  # noqa: UP045 (the old spelling must agree too)
    (dict[str, int], {}),
    (dict[int, str], REQUIRED),
    (set[str], {"b", "a", "c"}),
    (frozenset[int], frozenset({3, 1})),
    (tuple[int, str], (1, "a")),
    (tuple[int, ...], ()),
    (Literal["a"], "a"),
    (Literal["a", "b"], "b"),
    (Literal[1, "a", None], None),
    (Literal[True], REQUIRED),
    (Union[int, str], 3),  # noqa: UP007
    (int | bool, 1),
    (int | bool, True),
    (Window, REQUIRED),
    (Window | None, None),
    (list[Window], REQUIRED),
    (Window, Window(start="2026-01-01")),
    (Tree, REQUIRED),
    (Tree | None, None),
    (Holder, REQUIRED),
    (Color, Color.RED),
    (Color | None, None),
    (Level, Level.HIGH),
    (Movie, REQUIRED),
    (Point, REQUIRED),
    (datetime.datetime, REQUIRED),
    (datetime.date, datetime.date(2026, 11, 30)),
    (datetime.timedelta, datetime.timedelta(seconds=90)),
    (uuid.UUID, REQUIRED),
    (decimal.Decimal, decimal.Decimal("1.5")),
    (Annotated[int, Field(ge=1, le=10)], 3),
    (Annotated[int, annotated_types.Ge(1)], 1),
    (Annotated[int, annotated_types.Ge(True)], 1),
    (Annotated[str, Field(max_length=5, pattern="^[a-z]+$")], REQUIRED),
    (Annotated[str, Field(description="from Field")], REQUIRED),
    (Annotated[str, Field(examples=["x"], json_schema_extra={"x-kind": "q"})], ""),
    (Annotated[int, Field(title="Count")], 0),
    (int, Field(5, ge=1)),
    (int, Field(description="required, from Field")),
    (list[int], Field(default_factory=list)),
    (Annotated[int, Field(7)], REQUIRED),
    (Annotated[int, Field(7)], 9),
    (IN_SECONDS, 5),
    (Annotated[int, Field(json_schema_extra={"description": "from extra"})], REQUIRED),
    (Annotated[int, Field(deprecated="use y")], 5),
    (int, Field(5, deprecated="use y")),
    (int, Field(5, validate_default=True, exclude=True, frozen=True)),
    (list[int], Field(default_factory=lambda data: [len(data)])),
    (float, -0.0),
    (BOUNDED, 0.0),
    (BOUNDED, -0.0),
    (int, None),
    (OptionalInt, 5),
    (UserId, 3),
    (Page[int], REQUIRED),
    (Page[Window] | None, None),
    (Annotated[str, Unhashable()], "s"),
    # Equal Field(...)s written twice: one cache entry, apart by their defaults.
    (Annotated[int | bool, Field(description="flag")], 1),
    (Annotated[int | bool, Field(description="flag")], True),
    (Annotated[float, Field(ge=-1)], 0.0),
    (Annotated[float, Field(ge=-1)], -0.0),
    # Constraints with defaults, the everyday pydantic way.
    (Annotated[int, Field(ge=1, le=100, description="At most this many")], 7),
    (Annotated[list[str], Field(max_length=10)], []),
    (Annotated[list[str], Field(max_length=3)], ["a"]),
    (Annotated[tuple[int, ...], Field(max_length=3)], (1, 2)),
    (list[dict[str, int]], [{"a": 1}]),
    (Annotated[Literal["fast", "exact"], Field(description="How hard")], "fast"),
    # Nested dicts in a default: pydantic sorts their keys.
    (dict[str, dict[str, int]], {"k": {"b": 1, "a": 2}}),
    (dict[str, list[dict[str, int]]], {"k": [{"b": 1, "a": 2}]}),
    # Field(...) that reads the field: its name, its default.
    (Annotated[int, Field(field_title_generator=lambda name, info: name.upper())], REQUIRED),
    (TITLED_BY_DEFAULT, 3),
]
DESCRIPTIONS = [None, "What to look for", 'Ünïcödé, "quotes" and\nnew lines']


def _stable_id(field: tuple[Any, Any]) -> str:
    """The field's repr without object addresses or set order: the same test ids in every
    process (pytest-xdist's workers collect them separately)."""
    annotation, default = field
    if isinstance(default, (set, frozenset)):
        shown = f"{type(default).__name__}({sorted(default, key=repr)!r})"
    else:
        shown = repr(default)
    return re.sub(r" at 0x[0-9a-f]+", "", f"({annotation!r}, {shown})")


def build_tool(fields: list[tuple[str, Any, Any, str | None]]) -> BuiltTool:
    """A registry with one tool ``run(self, <fields>)``; fields are (name, type, default, text)."""
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {"return": str}
    for name, annotation, default, description in fields:
        if description is not None:
            annotation = Annotated[annotation, Description(description)]
        parameters.append(
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
            )
        )
        annotations[name] = annotation

    def run(self: Any, **kwargs: Any) -> str:
        return "ok"

    run.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    run.__annotations__ = annotations
    run.__qualname__ = "Generated.run"
    registry = tool_registry(type("Generated", (), {"__module__": __name__, "run": tool(run)}))
    (record,) = registry.__llm_worker_tools__
    return record


def parameters_of(record: BuiltTool) -> tuple[ParameterSpec, ...]:
    """The parameters of ``record``'s tool, read as @tool_registry read them."""
    func = vars(record.owner)[record.attr_name].__func__
    spec = introspect_method(record.owner, record.attr_name, func, ToolOptions(), [])
    assert spec is not None
    return spec.parameters


class WholeModel:
    """The ``get_args_model`` given to ``input_schema_of``, noting whether it was asked."""

    def __init__(self, record: BuiltTool) -> None:
        self.record = record
        self.asked = False

    def __call__(self) -> type[BaseModel]:
        self.asked = True
        return self.record.args_model


def assembled_and_whole(record: BuiltTool) -> tuple[str, str, bool]:
    """Both schemas as JSON text, and whether the pieces had to ask the whole model.

    The assembled one is written out first: if the whole model's schema changed
    anything the two share, the texts differ.
    """
    whole_model = WholeModel(record)
    assembled = json.dumps(input_schema_of(parameters_of(record), whole_model))
    whole = json.dumps(model_schema_of(record.args_model))
    return assembled, whole, whole_model.asked


def _union(members: list[Any]) -> Any:
    return Union[tuple(members)]  # noqa: UP007  # pyright: ignore[reportInvalidTypeArguments]


_LEAVES = st.sampled_from(
    [str, int, float, bool, None, Any, Window, Tree, Color, Level, Point, Movie,
     other_module.Window, Literal["a", "b"], Literal[1], Annotated[int, Field(ge=0)],
     Annotated[str, Field(description="inner")]]
)  # fmt: skip
# Not Annotated[<a recursive model>, Field(description=...)] inside another type: pydantic
# 2.14 then puts that description on every later use of the model, in every model's
# schema, including pieces already asked for. The two ways would differ, by order of use.
ANNOTATIONS = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(
        inner.map(lambda t: list[t]),  # type: ignore[valid-type]
        inner.map(lambda t: dict[str, t]),  # type: ignore[valid-type]
        inner.map(lambda t: tuple[t, ...]),  # type: ignore[valid-type]
        inner.map(lambda t: Optional[t]),  # noqa: UP045 (t may be None or Any)
        st.lists(inner, min_size=2, max_size=3).map(_union),
    ),
    max_leaves=4,
)
DEFAULTS = st.sampled_from([REQUIRED, REQUIRED, None, 0, "s", True, 1.5, [1], {"k": "v"}])
# Fields whose pieces cannot vouch for the whole: Holder's two Window types get
# module-qualified definition names.
FALLS_BACK = (Holder,)


@pytest.mark.filterwarnings("ignore::pydantic.json_schema.PydanticJsonSchemaWarning")
class TestAgainstTheWholeModel:
    @pytest.mark.parametrize("description", DESCRIPTIONS, ids=["plain", "described", "unicode"])
    @pytest.mark.parametrize(("annotation", "default"), FIELDS, ids=[_stable_id(f) for f in FIELDS])
    def test_one_field(self, annotation, default, description):
        """Each kind of field gives the whole model's JSON, from the pieces alone."""
        record = build_tool([("value", annotation, default, description)])
        assembled, whole, asked = assembled_and_whole(record)
        assert assembled == whole
        assert asked == (annotation in FALLS_BACK)

    def test_no_fields(self):
        """No parameters: an empty object that admits nothing else."""
        assembled, whole, asked = assembled_and_whole(build_tool([]))
        assert assembled == whole
        assert assembled == '{"additionalProperties": false, "properties": {}, "type": "object"}'
        assert not asked

    @settings(max_examples=150, deadline=None)
    @given(
        st.lists(
            st.tuples(st.sampled_from(FIELDS), st.sampled_from(DESCRIPTIONS)),
            max_size=7,
        )
    )
    # Mixes that once gave the pieces and the whole model different schemas:
    @example([((BOUNDED, 0.0), None), ((BOUNDED, -0.0), None)])  # one cache key for two
    @example([((int | bool, 1), None), ((int | bool, True), None)])  # 1 == True, not in JSON
    @example([((IN_SECONDS, 5), DESCRIPTIONS[1])])  # the extra reads the description
    @example([((Flag, REQUIRED), None), ((other_module.Flag, REQUIRED), None)])
    @example([((dict[str, dict[str, int]], {"k": {"b": 1, "a": 2}}), None)])  # sorted keys
    @example([((TITLED_BY_DEFAULT, 3), None), ((int, 3), None)])  # the title reads the default
    def test_any_mix_of_fields(self, chosen):
        """Several fields together: shared and nested definitions merge as pydantic merges them."""
        fields = [
            (f"arg_{i}", annotation, default, description)
            for i, ((annotation, default), description) in enumerate(chosen)
        ]
        assembled, whole, _ = assembled_and_whole(build_tool(fields))
        assert assembled == whole

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.tuples(ANNOTATIONS, DEFAULTS, st.sampled_from(DESCRIPTIONS)), max_size=5))
    # Union order: typing once handed the second of these the first one's annotation.
    @example([(list[str | float], None, None)])
    @example([(list[float | str], None, None)])
    @example([(list[Window | Tree], None, None), (list[Tree | Window], None, None)])
    def test_any_nested_types(self, chosen):
        """Random nestings of lists, dicts, tuples, unions and models."""
        fields = [
            (f"arg_{i}", annotation, default, description)
            for i, (annotation, default, description) in enumerate(chosen)
        ]
        assembled, whole, _ = assembled_and_whole(build_tool(fields))
        assert assembled == whole

    @pytest.mark.parametrize(
        "pair",
        [(Flag, other_module.Flag), (Same, other_module.Same)],
        ids=["equal-but-not-identical", "identical"],
    )
    def test_two_classes_of_one_name(self, pair):
        """pydantic merges same-named definitions only when their JSON is the same."""
        mine, theirs = pair
        record = build_tool([("mine", mine, REQUIRED, None), ("theirs", theirs, REQUIRED, None)])
        assembled, whole, _ = assembled_and_whole(record)
        assert assembled == whole


class TestThePieces:
    def test_common_fields_need_no_model(self):
        """Plain types, descriptions and defaults: no Args model is asked for, or created."""
        record = build_tool([("query", str, REQUIRED, "q"), ("window", Window | None, None, None)])
        whole_model = WholeModel(record)
        input_schema_of(parameters_of(record), whole_model)
        assert not whole_model.asked
        assert repr(vars(record.owner)["RunArgs"]).endswith("not created yet>")

    def test_equal_but_different_defaults_are_kept_apart(self):
        """1 and True are equal, and hash alike, but are different JSON."""
        one = build_tool([("value", int | bool, 1, None)])
        true = build_tool([("value", int | bool, True, None)])
        assert '"default": 1}' in assembled_and_whole(one)[0]
        assert '"default": true}' in assembled_and_whole(true)[0]

    def test_unhashable_metadata(self):
        """Metadata that cannot be hashed (so not cached) still gives the schema."""
        record = build_tool([("value", Annotated[str, Unhashable()], REQUIRED, "v")])
        assembled, whole, asked = assembled_and_whole(record)
        assert assembled == whole
        assert not asked


@dataclasses.dataclass(frozen=True)
class Cursor:
    """Equal, and printed alike, whatever its `token`: only pydantic's JSON tells them apart."""

    size: int
    token: str = dataclasses.field(default="", compare=False, repr=False)


class Tag(str):
    """A str that always prints as Tag."""

    def __repr__(self) -> str:
        return "Tag"


class TestCacheKeys:
    def test_defaults_equal_and_printed_alike_are_not_shared(self):
        """Two defaults that == and repr cannot tell apart each get pydantic's own JSON."""
        for token in ("a", "b"):
            record = build_tool([("cursor", Cursor, Cursor(10, token), None)])
            assembled, whole, _ = assembled_and_whole(record)
            assert assembled == whole
            assert f'"token": "{token}"' in assembled

    def test_field_values_are_compared_by_value(self):
        """Field(...) attributes that print alike but differ are different keys."""
        for value in ("one", "two"):
            annotation = Annotated[int, Field(json_schema_extra={"x-tag": Tag(value)})]
            assembled, whole, _ = assembled_and_whole(build_tool([("n", annotation, 1, None)]))
            assert assembled == whole
            assert f'"x-tag": "{value}"' in assembled

    def test_the_users_default_is_left_alone(self):
        """Writing the schema changes nothing in a default, even one that looks like a $ref."""
        default = {"note": "#/$defs/Window-Input"}
        record = build_tool([("w", Window, REQUIRED, None), ("d", dict[str, str], default, None)])
        input_schema_of(parameters_of(record), WholeModel(record))
        model_schema_of(record.args_model)
        assert default == {"note": "#/$defs/Window-Input"}


class TestWhenThePiecesCannotVouch:
    def test_two_models_with_one_name_leave_the_naming_to_pydantic(self):
        """Two Window types: the whole model names them, by module."""
        record = build_tool(
            [("mine", Window, REQUIRED, None), ("theirs", other_module.Window, REQUIRED, None)]
        )
        whole_model = WholeModel(record)
        schema = input_schema_of(parameters_of(record), whole_model)
        assert whole_model.asked
        mine, theirs = schema["$defs"]  # pydantic qualifies both names with their modules
        assert mine != theirs
        assert mine.endswith("Window")
        assert theirs.endswith("Window")

    def test_a_renamed_field_is_no_piece(self):
        """A field pydantic would rename is not taken as a piece."""
        # @tool refuses aliases (see test_introspect); the pieces still check the name.
        renamed = ParameterSpec("value", Annotated[int, Field(alias="renamed")], REQUIRED, None)
        assert schema_module._field_schema(renamed) is None


# Set defaults at every depth, each with more items than hash order leaves alone.
_SET_DEFAULTS = """
import dataclasses, json
from pydantic import BaseModel
from llm_worker import tool, tool_metas, tool_registry

class Options(BaseModel):
    flags: set[str] = {"alpha", "beta", "gamma", "delta", "epsilon"}

@dataclasses.dataclass
class Box:
    labels: frozenset[str] = frozenset({"ant", "bee", "cat", "dog", "eel"})

@tool_registry
class Sets:
    @tool
    def pick(
        self,
        top: set[str] = {"red", "green", "blue", "cyan", "magenta"},
        mixed: set[int | str] = {3, "x", 1, "y", "z"},
        groups: set[frozenset[str]] = {frozenset({"a", "b"}), frozenset({"c"}), frozenset({"d"})},
        options: Options = Options(),
        box: Box = Box(),
        by_name: dict[str, frozenset[str]] = {"k": frozenset({"p", "q", "r", "s", "t"})},
        pair: tuple[int, set[str]] = (1, {"u", "v", "w", "x", "y"}),
    ) -> str:
        return ""

[meta] = tool_metas(Sets)
print(json.dumps({name: p["default"] for name, p in meta.input_schema["properties"].items()}))
"""


class TestSetDefaults:
    def test_sets_at_any_depth_are_written_alike_in_every_process(self):
        """Set items, in a set default or nested in another default (a model's field, a
        dict's value), come out sorted whatever PYTHONHASHSEED is; pydantic sorted only a
        top-level set, of items `<` orders."""
        outputs = set()
        for seed in ("0", "1", "2", "3", "4"):
            result = subprocess.run(
                [sys.executable, "-c", _SET_DEFAULTS],
                env={**os.environ, "PYTHONHASHSEED": seed},
                capture_output=True,
                text=True,
                check=True,
                timeout=60,
            )
            outputs.add(result.stdout)
        [output] = outputs
        assert json.loads(output) == {
            "top": ["blue", "cyan", "green", "magenta", "red"],
            "mixed": ["x", "y", "z", 1, 3],  # by their JSON text, as they do not compare
            "groups": [["a", "b"], ["c"], ["d"]],
            "options": {"flags": ["alpha", "beta", "delta", "epsilon", "gamma"]},
            "box": {"labels": ["ant", "bee", "cat", "dog", "eel"]},
            "by_name": {"k": ["p", "q", "r", "s", "t"]},
            "pair": [1, ["u", "v", "w", "x", "y"]],
        }
