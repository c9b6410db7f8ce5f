"""What a model reads about failed validation (``_model_texts.describe_validation_error``).

Many errors at once cost what the message shows, not what the input holds:
60 000 unknown keys are not built into 60 000 error dicts.
"""

from __future__ import annotations

import json
import tracemalloc

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from llm_worker import InvalidArgumentError, tool, tool_registry
from llm_worker._model_texts import describe_validation_error

pytestmark = pytest.mark.anyio


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    a: int
    values: list[int] = []


def error_of(data: object) -> ValidationError:
    try:
        Strict.model_validate_json(json.dumps(data))
    except ValidationError as exc:
        return exc
    raise AssertionError("validation passed")


class TestManyErrors:
    def test_a_few_errors_are_each_described(self):
        """Up to ten errors are named one by one, with what was sent."""
        exc = error_of({"a": "x", "values": [1, "two"]})
        assert describe_validation_error(exc, ("a", "values")) == (
            "'a': Input should be a valid integer (got \"x\"); "
            "'values[1]': Input should be a valid integer (got \"two\")"
        )

    @pytest.mark.parametrize("count", [50, 150])
    def test_past_ten_the_rest_are_counted(self, count):
        """The first ten errors, then how many more: the same text however they were read."""
        exc = error_of({"a": 1, "values": ["x"] * count})
        expected = [f"'values[{i}]': Input should be a valid integer" for i in range(10)]
        text = describe_validation_error(exc, ("a", "values"))
        problems = text.split("; ")
        assert [p.partition(" (got")[0] for p in problems[:10]] == expected
        assert problems[10:] == [f"and {count - 10} more errors"]

    def test_sixty_thousand_unknown_keys_cost_megabytes_not_tens(self):
        """600 KB of unknown keys: the message names ten, and the errors are never all built.

        (Building all 60 001 error dicts took a 39 MB peak.)
        """
        exc = error_of({f"k{i}": 1 for i in range(60_000)})
        tracemalloc.start()
        try:
            text = describe_validation_error(exc, ("a", "values"))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert text.startswith("'a': missing required argument; 'k0': unexpected argument")
        assert text.endswith("; and 59991 more errors")
        assert peak < 12_000_000


class Guarded(BaseModel):
    path: str

    @field_validator("path")
    @classmethod
    def exists(cls, value: str) -> str:
        raise ValueError(f"no such file: /srv/data/{value}")


class TestUserValidatorMessages:
    def test_a_validators_message_is_made_safe(self):
        """A validator's own text is scrubbed like an exception's: its path is hidden."""
        try:
            Guarded.model_validate({"path": "x.csv"})
        except ValidationError as exc:
            text = describe_validation_error(exc, ("path",))
        assert text == "'path': Value error, no such file: <path> (got \"x.csv\")"


@tool_registry
class Store:
    @tool
    async def put(self, key: str) -> str:
        return key


async def test_execute_names_the_first_ten_of_many_unknown_keys():
    """Through execute(): the same bounded message."""
    payload = json.dumps({"key": "k", **{f"x{i}": i for i in range(20_000)}})
    with pytest.raises(InvalidArgumentError) as excinfo:
        await Store.ToolPut(Store()).execute(payload)
    message = str(excinfo.value)
    assert message.startswith("Invalid argument: 'x0': unexpected argument (this tool takes: key)")
    assert message.endswith("; and 19990 more errors")
