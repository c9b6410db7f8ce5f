"""Argument JSON must be JSON: ``NaN``, ``Infinity`` and numbers no float can hold are refused.

Python's ``json`` module and pydantic both read ``NaN``, ``Infinity`` and
``-Infinity``, and read ``1e400`` as infinity. None of them is JSON (RFC 8259
has no such values, and a number past a 64-bit float's range has no meaning
in one), and a tool handed ``nan`` gets a value that every comparison calls
false (``amount > limit`` lets it through).

Where pydantic validates a ``float`` it refuses them itself
(``allow_inf_nan=False``); ``non_finite_problem`` looks for them in what it
let through unchecked (values typed ``Any``, floats of models with their own
config): one look at each parsed value, however the input was spelled, so
hostile spellings cost nothing extra.

Duplicate keys are left alone: ``{"cmd": "ls", "cmd": "rm"}`` means
``{"cmd": "rm"}`` (the last one wins), to pydantic, to ``json.loads`` (what a
hook reads) and to JavaScript alike, so every reader of the input agrees.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from decimal import Decimal
from typing import cast

from pydantic import BaseModel

from ._model_texts import NOT_JSON_NUMBER

__all__ = ["non_finite_problem"]


def non_finite_problem(values: Iterable[object]) -> str | None:
    """Why parsed argument ``values`` hold something that was not JSON, or ``None``.

    Looks inside dicts, lists, tuples, sets, pydantic models and dataclasses,
    without recursion (any depth).
    """
    pending = list(values)
    while pending:
        value = pending.pop()
        if isinstance(value, float):
            if not math.isfinite(value):
                return NOT_JSON_NUMBER.format(value=_spelling(value))
        elif isinstance(value, dict):
            pending.extend(cast("dict[object, object]", value).values())
        elif isinstance(value, (list, tuple, set, frozenset)):
            pending.extend(cast("Iterable[object]", value))
        elif isinstance(value, Decimal):
            if not value.is_finite():
                return NOT_JSON_NUMBER.format(value=_spelling(float(value)))
        elif isinstance(value, BaseModel):
            pending.extend(value.__dict__.values())
            pending.extend((value.__pydantic_extra__ or {}).values())
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            pending.extend(getattr(value, field.name) for field in dataclasses.fields(value))
    return None


def _spelling(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"
