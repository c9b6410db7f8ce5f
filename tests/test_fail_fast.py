"""The screen of long inputs (``_fail_fast.py``): an input with millions of errors costs the
first few, and the screen never refuses what pydantic's own validation accepts.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from typing import Annotated, Any, Literal

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    WrapValidator,
    model_validator,
)
from pydantic.dataclasses import dataclass as pydantic_dataclass
from typing_extensions import NotRequired, TypedDict

from llm_worker import (
    RunState,
    RunStateError,
    ToolResult,
    Worker,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker._fail_fast import SCREENED_FROM, screen_of
from llm_worker._output_schema import output_shape
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse


class Item(BaseModel):
    a: int
    b: int
    c: str


class Order(BaseModel):
    lines: list[Item]
    notes: dict[str, Item] = {}


@tool_registry
class Shop:
    """Tools whose arguments nest collections of models."""

    @tool
    async def save(self, items: list[Item]) -> str:
        """Save items."""
        return f"saved {len(items)}"

    @tool
    async def order(self, order: Order) -> str:
        """Place an order."""
        return f"{len(order.lines)} lines, {len(order.notes)} notes"

    @tool
    async def either(self, things: list[Item | Order]) -> str:
        """Items or orders."""
        return f"{len(things)} things"


def many(n: int, value: str = "{}") -> str:
    return "[" + ",".join([value] * n) + "]"


async def model_reads(name: str, arguments: str) -> ToolResult:
    """The result the model reads for one call of ``name`` with ``arguments``."""
    script = [ScriptedResponse(tool_calls=[ScriptedCall(name, arguments)]), "done"]
    worker = Worker(ScriptedClient(script))
    worker.register_tools(tool_definitions(Shop()))
    with anyio.fail_after(30):
        await worker.run("go")
    result = worker.history[2]
    assert isinstance(result, ToolResult)
    return result


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("name", "arguments", "first"),
    [
        ("save", f'{{"items": {many(100_000)}}}', "'items[0].a': missing"),
        ("order", f'{{"order": {{"lines": {many(100_000)}}}}}', "'order.lines[0].a': missing"),
        (
            "order",
            '{"order": {"lines": [], "notes": {'
            + ",".join(f'"k{i}": {{}}' for i in range(50_000))
            + "}}}",
            "'order.notes.k0.a': missing",
        ),
        ("either", f'{{"things": {many(50_000)}}}', "'things[0]"),
    ],
)
async def test_a_call_with_very_many_errors_reads_as_its_first_item(name, arguments, first):
    """A list (a dict) of 100 000 bad items, at the top or inside a nested model: the model
    reads the first bad item's errors; pydantic alone made every item's (3 for each item,
    all built and counted: "and 299990 more errors")."""
    result = await model_reads(name, arguments)
    assert result.is_error
    assert first in result.content
    assert "[1]" not in result.content
    assert "k1" not in result.content
    assert "more errors" not in result.content


@pytest.mark.anyio
async def test_a_long_valid_call_runs_as_it_would_unscreened():
    """A long input that is valid reaches the tool as pydantic makes it: the screen only
    reads it."""
    item = '{"a": 1, "b": 2, "c": "x"}'
    result = await model_reads("save", f'{{"items": {many(1_000, item)}}}')
    assert (result.is_error, result.content) == (False, "saved 1000")


def test_a_structured_answer_with_very_many_errors_reads_as_its_first():
    """The structured answer of a run (output_type) is screened the same way."""
    shape = output_shape(list[Item], mode="validation")
    with pytest.raises(ValidationError) as info:
        shape.validate_json(f'{{"result": {many(100_000)}}}')
    assert info.value.error_count() == 3
    assert shape.validate_json('{"result": [{"a": 1, "b": 2, "c": "x"}]}') == [
        Item(a=1, b=2, c="x")
    ]


def test_a_saved_state_with_very_many_bad_messages_names_the_first():
    """RunState.from_json of a file with 200 000 bad messages names the first bad one."""
    state = json.loads(RunState.from_json(_empty_state()).to_json())
    state["history"] = [{"type": "user"}] * 200_000
    with pytest.raises(RunStateError) as info:
        RunState.from_json(json.dumps(state))
    assert "history.0" in str(info.value)
    assert "history.1" not in str(info.value)


def _empty_state() -> str:
    return Worker(ScriptedClient()).state.to_json()


# -- the screen is never stricter than pydantic -------------------------------------------


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Loose(BaseModel):
    model_config = ConfigDict(coerce_numbers_to_str=True)
    text: str
    kind: Literal["a", "b"] = "a"


@pydantic_dataclass
class Point:
    x: float
    y: float = 0.0


@dataclasses.dataclass
class Plain:
    name: str


class Shape(TypedDict):
    sides: int
    label: NotRequired[str]


class Tree(BaseModel):
    value: int
    children: list[Tree] = []


class Tag(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str


class Everything(BaseModel):
    """Arguments running none of the application's code: the screen is made for them."""

    loose: list[Loose] = []
    points: dict[str, Point] = {}
    plain: list[Plain] = []
    shapes: list[Shape] = []
    tree: Tree | None = None
    colours: set[Colour] = set()
    tags: Annotated[frozenset[Tag], Field(max_length=1)] = frozenset()
    pair: tuple[int, str] | None = None
    made: list[int] = Field(default_factory=lambda: [1])
    either: list[Loose | Point | int] = []


_ADAPTER = TypeAdapter(Everything)
_SCREEN = screen_of(_ADAPTER.core_schema)


def _split(value: Any) -> Any:
    return value.split(",") if isinstance(value, str) else value


class Shout(enum.Enum):
    HI = "hi"

    @classmethod
    def _missing_(cls, value: object) -> Shout | None:
        return cls.HI if isinstance(value, str) and value.lower() == "hi" else None


class Before(BaseModel):
    n: int

    @model_validator(mode="before")
    @classmethod
    def from_text(cls, value: Any) -> Any:
        return {"n": len(value)} if isinstance(value, str) else value


class After(BaseModel):
    street: str

    @model_validator(mode="after")
    def short(self) -> After:
        return self


class Built(BaseModel):
    x: int

    def __init__(self, **data: Any) -> None:  # takes {"y": ...} too
        if "y" in data:
            data = {"x": data.pop("y")}
        super().__init__(**data)


RUNS_THE_APPLICATIONS_CODE: list[Any] = [
    list[Before],
    dict[str, Before],
    tuple[After, After],  # a model used twice: its ref on the validator's node
    list[Built],
    Annotated[list[str], BeforeValidator(_split)],
    set[Annotated[list[int], AfterValidator(tuple)]],
    Annotated[int, WrapValidator(lambda v, handler: handler(v))],
    Annotated[set[Annotated[str, AfterValidator(str.lower)]], Field(max_length=1)],
    list[Shout],
]


@pytest.mark.parametrize("annotation", RUNS_THE_APPLICATIONS_CODE)
def test_no_screen_is_made_of_what_runs_the_applications_code(annotation):
    """A validator, a custom __init__, an Enum's _missing_: what the application's code
    accepts, only it knows. Such arguments get no screen (validated by pydantic alone)."""
    assert screen_of(TypeAdapter(annotation).core_schema) is None


@pytest.mark.anyio
async def test_a_long_valid_call_of_a_model_with_a_validator_runs():
    """Long inputs of arguments with validators run as pydantic validates them (a screen
    that dropped the validator refused them, or raised)."""

    @tool_registry
    class Labels:
        @tool
        async def label(self, tags: list[Before], home: After, work: After) -> str:
            """Label."""
            return f"{sum(tag.n for tag in tags)} {home.street[:3]} {work.street}"

        ToolLabel: Any

    arguments = json.dumps(
        {"tags": ["abcde"] * 300, "home": {"street": "a" * 2_000}, "work": {"street": "b"}}
    )
    assert len(arguments) > SCREENED_FROM
    assert await Labels.ToolLabel(Labels()).execute(arguments) == "1500 aaa b"
    shape = output_shape(list[Before], mode="validation")
    assert len(json.dumps({"result": ["abc"] * 500})) > SCREENED_FROM
    assert shape.validate_json(json.dumps({"result": ["abc"] * 500})) == [Before(n=3)] * 500


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(-2, 2, allow_nan=False),
    st.sampled_from(["", "a", "b", "red", "blue", "1,2", "x"]),
)
_json = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.sampled_from(
                ["text", "kind", "x", "y", "name", "sides", "label", "value", "children"]
            ),
            inner,
            max_size=4,
        ),
    ),
    max_leaves=12,
)
_fields = st.sampled_from(list(Everything.model_fields))
_documents = st.dictionaries(_fields, _json, max_size=4)


@settings(max_examples=400, deadline=None)
@given(_documents)
def test_the_screen_refuses_only_what_pydantic_refuses(document):
    """For any input: pydantic accepting it means the screen accepts it; the screen
    refusing it means pydantic refuses it too, the screen's first error about an
    argument pydantic's errors are about (a collection the screen stops at its first bad
    item may be, for pydantic, too long before any item is read)."""
    assert _SCREEN is not None
    text = json.dumps(document)
    real = _errors(_ADAPTER.validate_json, text)
    screened = _errors(_SCREEN.validate_json, text)
    if screened is not None:
        assert real is not None, f"the screen refused what pydantic accepts: {screened}"
        (loc, _) = screened[0]
        assert any(_nested(loc, other) or _nested(other, loc) for other, _ in real), (
            screened[0],
            real,
        )


def _nested(inner: tuple[Any, ...], outer: tuple[Any, ...]) -> bool:
    return inner[: len(outer)] == outer


def _errors(validate: Any, text: str) -> list[tuple[Any, str]] | None:
    try:
        validate(text)
    except ValidationError as exc:
        return [(error["loc"], error["type"]) for error in exc.errors()]
    return None


def test_the_long_inputs_are_the_screened_ones():
    """Inputs up to SCREENED_FROM characters go to pydantic alone: too few values to make
    many errors."""
    assert 512 <= SCREENED_FROM <= 16_384
