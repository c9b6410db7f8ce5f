"""Properties of generated tools: whatever the input, execute() answers or says why not."""

import enum
import json
import math
import re
from typing import Annotated, Any, Literal

import anyio
import jsonschema
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from pydantic import BaseModel, Field

from llm_worker import Description, InvalidArgumentError, tool, tool_registry
from llm_worker._registry import BuiltTool

# JSON values as json.loads would return them (no NaN / infinities).
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=10,
)

# Objects whose keys are mostly the tools' own argument names, so validation goes deep.
argument_names = st.sampled_from(["a", "b", "query", "limit", "tags", "tag", "name", "weight"])
json_objects = st.dictionaries(argument_names | st.text(max_size=5), json_values, max_size=5)

# Text with lone surrogates mixed in: not encodable as UTF-8.
surrogate_text = st.text(
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF) | st.sampled_from('{}[]":, a1'),
    min_size=1,
).filter(lambda s: any(0xD800 <= ord(c) <= 0xDFFF for c in s))

PROPERTY_SETTINGS = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


class Tag(BaseModel):
    name: str
    weight: float = 1.0


@tool_registry
class Example:
    @tool
    async def nothing(self) -> str:
        """Takes no arguments."""
        return "nothing"

    @tool
    async def add(self, a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @tool(thread=False)
    def rich(
        self,
        query: Annotated[str, Description("what to look for")],
        limit: int = 10,
        tags: list[str] = [],  # noqa: B006
        tag: Tag | None = None,
    ) -> dict[str, Any]:
        """A bit of everything."""
        return {"query": query, "limit": limit, "tags": tags, "tag": tag}


RECORDS: list[BuiltTool] = list(Example.__llm_worker_tools__)
RECORD_IDS = [record.name for record in RECORDS]
VALIDATORS = {
    record.name: jsonschema.Draft202012Validator(record.meta().input_schema) for record in RECORDS
}


def _execute(record: BuiltTool, input_json: str) -> str:
    """Run one call on asyncio; return its text or raise what it raised."""
    return anyio.run(record.tool_class(Example()).execute, input_json, backend="asyncio")


def _answers_or_rejects(record: BuiltTool, input_json: str) -> bool:
    """Run one call: True if it answered with a str, False if it was rejected as invalid."""
    try:
        result = _execute(record, input_json)
    except InvalidArgumentError as exc:
        message = exc.message
    else:
        assert type(result) is str
        return True
    assert message
    assert "Traceback" not in message
    return False


# Schema-valid inputs tried first, one per tool: the extremes of the numbers and strings.
SCHEMA_INSTANCES: dict[str, dict[str, Any]] = {
    "nothing": {},
    "add": {"a": -(2**63), "b": 2**63},
    "rich": {"query": "", "limit": 0, "tags": [""], "tag": {"name": "", "weight": -0.0}},
}


class TestArbitraryInput:
    @pytest.mark.parametrize("record", RECORDS, ids=RECORD_IDS)
    @PROPERTY_SETTINGS
    @given(text=st.text())
    def test_any_text(self, record, text):
        """For any text, execute returns a str or raises InvalidArgumentError."""
        _answers_or_rejects(record, text)

    @pytest.mark.parametrize("record", RECORDS, ids=RECORD_IDS)
    @PROPERTY_SETTINGS
    @given(value=json_values)
    def test_any_json_value(self, record, value):
        """For any JSON value, execute returns a str or raises InvalidArgumentError."""
        _answers_or_rejects(record, json.dumps(value))

    @pytest.mark.parametrize("record", RECORDS, ids=RECORD_IDS)
    @PROPERTY_SETTINGS
    @given(value=json_objects)
    # null for an argument with a default was once refused, though it means the default;
    # a bool is no integer, and an integer is a number, for the schema and the validator alike.
    @example(value={"query": "q", "limit": None, "tags": None, "tag": None})
    @example(value={"a": True, "b": 1})
    @example(value={"query": "q", "tag": {"name": "n", "weight": 2}})
    def test_any_json_object(self, record, value):
        """For any JSON object, execute answers (and the schema agrees) or rejects it.

        One leniency is by design (docs/results-and-errors.md): null for an
        argument with a default reads as that default, so the schema is asked
        about the input with such nulls left out.
        """
        accepted = _answers_or_rejects(record, json.dumps(value))
        if accepted:
            required = record.meta().input_schema.get("required", [])
            as_meant = {k: v for k, v in value.items() if v is not None or k in required}
            assert VALIDATORS[record.name].is_valid(as_meant), value

    @pytest.mark.parametrize("record", RECORDS, ids=RECORD_IDS)
    @settings(max_examples=50, deadline=None)
    @given(text=surrogate_text)
    def test_lone_surrogates(self, record, text):
        """Input containing lone surrogates is rejected as invalid."""
        with pytest.raises(InvalidArgumentError):
            _execute(record, text)

    @pytest.mark.parametrize("record", RECORDS, ids=RECORD_IDS)
    @pytest.mark.parametrize(
        "input_json",
        [
            "[" * 100_000 + "]" * 100_000,
            '{"a":' * 100_000 + "1" + "}" * 100_000,
            '{"tags": ' + "[" * 100_000 + "]" * 100_000 + "}",
            '{"query": "q", "tag": ' + '{"name":' * 100_000 + '"x"' + "}" * 100_000 + "}",
        ],
        ids=["arrays", "objects", "in-argument", "in-nested-model"],
    )
    def test_deep_nesting(self, record, input_json):
        """100 000-deep JSON gives InvalidArgumentError, not a crash."""
        with pytest.raises(InvalidArgumentError):
            _execute(record, input_json)


class TestSchemaAgreesWithValidation:
    @pytest.mark.parametrize("record", RECORDS, ids=RECORD_IDS)
    def test_schema_is_valid_json_schema(self, record):
        """Each input_schema is valid against the JSON Schema 2020-12 metaschema."""
        schema = record.meta().input_schema
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False

    @pytest.mark.parametrize("record", RECORDS, ids=RECORD_IDS)
    def test_unknown_argument_rejected_by_both(self, record):
        """An unknown argument is invalid for the schema and for execute alike."""
        assert not VALIDATORS[record.name].is_valid({"unexpected": 1})
        with pytest.raises(InvalidArgumentError):
            _execute(record, '{"unexpected": 1}')

    @pytest.mark.parametrize(
        "value",
        [{"a": "5", "b": 1}, {"a": 1.5, "b": 1}, {"a": True, "b": 1}, {"a": None, "b": 1}],
    )
    def test_no_lax_coercion(self, value):
        """What the schema calls a wrong type, execute rejects too: no lax coercion."""
        assert not VALIDATORS["add"].is_valid(value)
        with pytest.raises(InvalidArgumentError):
            _execute(RECORDS[1], json.dumps(value))

    @pytest.mark.parametrize("record", RECORDS, ids=RECORD_IDS)
    def test_schema_instances_are_accepted(self, record):
        """Every instance generated from input_schema passes execute's validation."""
        schema = record.meta().input_schema

        @settings(
            max_examples=100,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        )
        @given(instance=from_schema(schema))
        @example(instance=SCHEMA_INSTANCES[record.name])
        def check(instance: Any) -> None:
            try:
                result = _execute(record, json.dumps(instance))
            except InvalidArgumentError as exc:
                raise AssertionError(
                    f"schema-valid input {instance!r} was rejected: {exc}"
                ) from exc
            assert type(result) is str

        check()

    def test_the_examples(self):
        """The properties above run over these three tools."""
        assert [record.meta().name for record in RECORDS] == ["nothing", "add", "rich"]


class TestReproducibleInCI:
    def test_the_ci_profile_draws_the_same_examples_every_run(self):
        """Under the ci profile (tests/conftest.py) a property tries the same inputs each run."""
        ci = settings(settings.get_profile("ci"), max_examples=20)

        def draws() -> list[Any]:
            seen: list[Any] = []

            @ci
            @given(value=json_values)
            def record(value: Any) -> None:
                seen.append(value)

            record()
            return seen

        first, second = draws(), draws()
        assert len(first) == 20
        assert first == second


# -- what pydantic once read more loosely than the schema says --------------------------


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@tool_registry
class Loose:
    @tool
    async def count(self, counts: dict[int, int]) -> str:
        """Counts by id."""
        return json.dumps(sorted(counts.items()))

    @tool
    async def choose(self, n: Literal[0, 1, "1"] = 0, level: Level = Level.LOW) -> str:
        """Choices."""
        return f"{n!r} {level!r}"

    @tool
    async def bounded(self, counts: dict[Annotated[int, Field(ge=-5, lt=100)], int]) -> str:
        """Counts by an id from -5 to 99."""
        return json.dumps(sorted(counts.items()))


LOOSE = {record.name: record for record in Loose.__llm_worker_tools__}

# Keys around integers: their spellings (signs, zeros, spaces, digits of other scripts).
integer_keys = st.integers(-(10**20), 10**20).map(str) | st.text(
    st.sampled_from("0123456789-+ _.e\u0661"), max_size=4
)
json_scalars = (
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-3, 3) | st.text(max_size=2)
)


def _run_loose(name: str, arguments: dict[str, Any]) -> str | None:
    """The tool's answer, or None if it refused the arguments."""
    record = LOOSE[name]
    try:
        return str(
            anyio.run(record.tool_class(Loose()).execute, json.dumps(arguments), backend="asyncio")
        )
    except InvalidArgumentError:
        return None


class TestLooseReadingsAgreeWithTheSchema:
    @PROPERTY_SETTINGS
    @given(counts=st.dictionaries(integer_keys, st.integers(0, 9), max_size=4))
    @example(counts={"1": 5, "01": 7, " 1": 9, "+1": 11})  # once read as {1: 11}
    @example(counts={"0": 1, "-0": 2})
    def test_int_keys(self, counts: dict[str, int]) -> None:
        """Any keys: the tool takes them exactly when the schema does, and loses none."""
        schema = LOOSE["count"].meta().input_schema
        admitted = jsonschema.Draft202012Validator(schema).is_valid({"counts": counts})
        answer = _run_loose("count", {"counts": counts})
        assert (answer is not None) == admitted, counts
        if answer is not None:
            assert json.loads(answer) == sorted([int(k), v] for k, v in counts.items())

    @PROPERTY_SETTINGS
    @given(counts=st.dictionaries(integer_keys | st.integers(-12, 120).map(str), st.integers(0, 9)))
    @example(counts={"-5": 1, "99": 2})
    @example(counts={"-6": 1})  # the schema's pattern once let it through
    @example(counts={"100": 1})
    def test_bounded_int_keys(self, counts: dict[str, int]) -> None:
        """Keys with bounds: the tool takes them exactly when the schema does."""
        schema = LOOSE["bounded"].meta().input_schema
        admitted = jsonschema.Draft202012Validator(schema).is_valid({"counts": counts})
        assert (_run_loose("bounded", {"counts": counts}) is not None) == admitted, counts

    @PROPERTY_SETTINGS
    @given(n=json_scalars, level=json_scalars)
    @example(n=True, level=1)  # true was read as 1
    @example(n=0, level=True)
    @example(n=False, level=2)
    def test_literal_and_enum_choices(self, n: Any, level: Any) -> None:
        """Any JSON scalars: the tool takes them exactly when the schema does."""
        arguments = {"n": n, "level": level}
        schema = LOOSE["choose"].meta().input_schema
        meant = {k: v for k, v in arguments.items() if v is not None}  # null: the default
        admitted = jsonschema.Draft202012Validator(schema).is_valid(meant)
        assert (_run_loose("choose", arguments) is not None) == admitted, arguments


def _in_bounds(key: str, least: int | None, greatest: int | None) -> bool:
    """Whether ``key`` is an integer as json.dumps writes it, from ``least`` to ``greatest``."""
    digits = key.removeprefix("-")
    if not (digits.isascii() and digits.isdigit()) or str(int(key)) != key:
        return False
    return (least is None or least <= int(key)) and (greatest is None or int(key) <= greatest)


class TestIntKeyPatterns:
    @PROPERTY_SETTINGS
    @given(
        least=st.none() | st.integers(-(10**6), 10**6),
        greatest=st.none() | st.integers(-(10**6), 10**6),
        keys=st.lists(integer_keys | st.integers(-(10**7), 10**7).map(str), max_size=20),
    )
    @example(least=0, greatest=None, keys=["0", "-0", "1", "-1", "01"])
    @example(least=18, greatest=None, keys=["17", "18", "19", "99", "100", "180"])
    @example(least=-37, greatest=1234, keys=["-38", "-37", "0", "1234", "1235", "999"])
    @example(least=5, greatest=3, keys=["4", "5"])
    def test_a_pattern_takes_the_integers_in_its_bounds(
        self, least: int | None, greatest: int | None, keys: list[str]
    ) -> None:
        """The pattern of int keys in bounds matches exactly the integers, as json.dumps
        writes them, from the least to the greatest (JSON Schema's minimum is for numbers)."""
        from llm_worker._codegen.json_keys import int_key_pattern

        pattern = int_key_pattern(
            -math.inf if least is None else least, math.inf if greatest is None else greatest
        )
        for key in [
            *keys,
            *(str(b + d) for b in (least, greatest) if b is not None for d in (-1, 0, 1)),
        ]:
            matched = pattern is not None and re.fullmatch(pattern, key) is not None
            assert matched == _in_bounds(key, least, greatest), (pattern, key)
