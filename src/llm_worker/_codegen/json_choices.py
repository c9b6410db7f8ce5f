"""Literal and Enum choices read from JSON as the schema lists them.

A ``Literal`` of Enum members lists their values in the schema, and strict
mode would match JSON only against the members themselves (refusing ``"red"``
for ``Literal[Color.RED]``): from JSON such a field takes the values, and the
method still gets the members.

A ``Literal`` or an Enum with a number or a ``bool`` among its values takes a
JSON value of the same kind only. pydantic-core matches ``true`` to ``1``
(``True == 1`` in Python), which the schema (``"enum": [1, 2]``) refuses, as a
plain ``int`` argument does. A ``@tool(strict=False)`` tool keeps pydantic's
lax reading.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import GetCoreSchemaHandler
from pydantic_core import CoreSchema, PydanticKnownError, core_schema
from typing_extensions import final

__all__ = [
    "JSON_SCALARS",
    "SCHEMA_OF_PYTHON_SIDE",
    "enum_as_argument",
    "expected",
    "literal_as_argument",
    "reads_only_its_values",
]

# Marks a json-or-python core schema whose JSON Schema is its Python side's (an Enum's $ref).
SCHEMA_OF_PYTHON_SIDE = "llm_worker_schema_of_python_side"

JSON_SCALARS = (str, int, float, bool, type(None))


def literal_as_argument(annotation: Any, choices: tuple[Any, ...]) -> Any:
    pairs = tuple((c.value if isinstance(c, Enum) else c, c) for c in choices)
    by_value = any(isinstance(c, Enum) for c in choices)
    if not by_value and not _has_numbers_or_bools(pairs):
        return annotation  # strings and None: pydantic reads them exactly
    return Annotated[annotation, _JsonChoices(pairs, "literal_error", by_value=by_value)]


def enum_as_argument(cls: type[Enum]) -> Any:
    pairs = tuple((member.value, member) for member in cls)
    if not reads_only_its_values(cls, pairs) or not _has_numbers_or_bools(pairs):
        return cls
    return Annotated[cls, _JsonChoices(pairs, "enum", by_value=True, enum=True)]


def reads_only_its_values(cls: type[Enum], pairs: tuple[tuple[Any, Any], ...]) -> bool:
    """Whether pydantic reads ``cls`` from its JSON-scalar values only: not a Flag (whose
    members combine), nor an Enum whose ``_missing_`` takes other values."""
    missing: object = getattr(cls._missing_, "__func__", None)
    plain_missing = missing is vars(Enum)["_missing_"].__func__
    return bool(pairs) and plain_missing and all(type(v) in JSON_SCALARS for v, _ in pairs)


def _has_numbers_or_bools(pairs: tuple[tuple[Any, Any], ...]) -> bool:
    return any(isinstance(value, (int, float)) for value, _ in pairs)  # bool is an int


def _kind_key(value: Any) -> tuple[bool, Any]:
    """``value`` as a dict key apart from the other kind: ``True == 1``, but not as JSON."""
    return (type(value) is bool, value)


def expected(values: list[Any]) -> str:
    """The values as pydantic-core lists them in its errors: ``1, 2 or '1'``."""
    texts = [repr(value) for value in values]
    return texts[0] if len(texts) == 1 else f"{', '.join(texts[:-1])} or {texts[-1]}"


@final
class _JsonChoices:
    """``Annotated`` metadata of a ``Literal`` or an Enum: from JSON, a value of the choices'
    own kind (``true`` is no ``1``); with ``by_value``, the choices are matched by value.

    Python input is validated as before, and so is JSON in lax mode
    (``@tool(strict=False)``), Enum members in a ``Literal`` by value. The JSON
    Schema is a ``Literal``'s values, or an Enum's own (its ``$ref``). A new one is
    made for every field, equal only to itself, as ``_NullMeansDefault`` is.
    """

    __slots__ = ("_by_value", "_enum", "_error", "_pairs")
    _error: Literal["literal_error", "enum"]  # the kind of error pydantic gives for others

    def __init__(
        self,
        pairs: tuple[tuple[Any, Any], ...],
        error: Literal["literal_error", "enum"],
        *,
        by_value: bool,
        enum: bool = False,
    ) -> None:
        self._pairs = pairs  # (value, choice): the choice is what the method gets
        self._error = error
        self._by_value = by_value
        self._enum = enum

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        by_kind: dict[tuple[bool, Any], tuple[Any, Any]] = {}
        for value, choice in self._pairs:  # the first written wins a value two choices share
            by_kind.setdefault(_kind_key(value), (value, choice))
        values = [value for value, _ in by_kind.values()]
        members = {choice: value for value, choice in self._pairs if isinstance(choice, Enum)}
        listed = expected(values)
        error = self._error

        def canonical(value: Any) -> Any:
            try:
                return by_kind[_kind_key(value)][0]
            except (KeyError, TypeError):  # another value, or a list or an object
                pass
            if isinstance(value, Enum) and value in members:  # validated already (a wrapper's)
                return members[value]
            raise PydanticKnownError(error, {"expected": listed})

        def chosen(value: Any) -> Any:
            return by_kind[_kind_key(value)][1]

        python = handler(source)
        lax = python  # pydantic's own reading
        if self._by_value and not self._enum:  # Enum members in a Literal: by value
            lax = core_schema.no_info_after_validator_function(
                chosen, core_schema.literal_schema(values)
            )
        from_json = lax
        if _has_numbers_or_bools(self._pairs):
            exact: CoreSchema = core_schema.no_info_before_validator_function(
                canonical, core_schema.literal_schema(values)
            )
            if self._by_value:
                exact = core_schema.no_info_after_validator_function(chosen, exact)
            from_json = core_schema.lax_or_strict_schema(lax_schema=lax, strict_schema=exact)
        return core_schema.json_or_python_schema(
            json_schema=from_json,
            python_schema=python,
            metadata={SCHEMA_OF_PYTHON_SIDE: True} if self._enum else None,
        )

    def __repr__(self) -> str:
        return f"<choices read exactly from JSON, at {id(self):#x}>"
