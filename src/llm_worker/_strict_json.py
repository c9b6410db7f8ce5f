"""Argument JSON must be JSON: ``NaN``, ``Infinity`` and numbers no float can hold are refused.

Python's ``json`` module and pydantic both read ``NaN``, ``Infinity`` and
``-Infinity``, and read ``1e400`` as infinity. None of them is JSON (RFC 8259
has no such values, and a number past a 64-bit float's range has no meaning
in one), and a tool handed ``nan`` gets a value that every comparison calls
false (``amount > limit`` lets it through). ``non_json_problem`` finds them,
outside strings, in time linear in the input.

Duplicate keys are left alone: ``{"cmd": "ls", "cmd": "rm"}`` means
``{"cmd": "rm"}`` (the last one wins), to pydantic, to ``json.loads`` (what a
hook reads) and to JavaScript alike, so every reader of the input agrees.
"""

from __future__ import annotations

import math
import re

from ._limits import JSON_STRING
from ._model_texts import NOT_JSON_NUMBER, NOT_JSON_VALUE

__all__ = ["non_json_problem"]

# Outside strings, as a value: not the tail of a word or a number.
_NOT_A_JSON_VALUE = re.compile(r"(?<![\w.])-?(?:NaN|Infinity)(?![\w.])")
# A number that may overflow: an exponent of three digits or more, or 309 digits before a
# point. The parts are disjoint, so a long run of digits is read once: linear time.
_HUGE_NUMBER = re.compile(
    r"(?<![\w.+-])-?[0-9]+(?:\.[0-9]*)?[eE]\+?[0-9]{3,}|(?<![\w.+-])-?[0-9]{309,}\.[0-9]*"
)
_MAX_SHOWN = 24


def non_json_problem(input_json: str) -> str | None:
    """Why a number makes ``input_json`` not JSON, or ``None``. Cheap for ordinary inputs."""
    words = "NaN" in input_json or "Infinity" in input_json
    if not words and _HUGE_NUMBER.search(input_json) is None:
        return None
    bare = JSON_STRING.sub('""', input_json)  # what strings hold is text, never a number
    if words:
        match = _NOT_A_JSON_VALUE.search(bare)
        if match is not None:
            return NOT_JSON_VALUE.format(value=match[0])
    for match in _HUGE_NUMBER.finditer(bare):
        if math.isinf(float(match[0])):
            number = match[0]
            if len(number) > _MAX_SHOWN:
                number = number[: _MAX_SHOWN - 1] + "…"
            return NOT_JSON_NUMBER.format(number=number)
    return None
