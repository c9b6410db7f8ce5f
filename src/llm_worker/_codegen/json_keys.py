"""Dict keys read from JSON text one way each.

Dict keys are text in JSON, and pydantic reads ``"1"``, ``"01"``, ``" 1"`` and
``"+1"`` into one ``int`` key, keeping one value without a word. An ``int`` key
must be written as ``json.dumps`` writes it (the schema's ``propertyNames``
pattern says so), a ``bool``, ``Literal`` or Enum key as its value's JSON text
(``"true"``, ``"1"``): then no two keys are one. The bounds of an ``int``
key (``Annotated[int, Field(ge=0)]``) are in its pattern too, since a JSON
Schema's ``minimum`` is for numbers, not keys. Keys of other types that
several texts read as one (``float``, ``Decimal``, ``UUID``, dates...), and
``int`` keys with a ``multiple_of``, which no pattern says, are refused at
declaration (``mapping_key_problem``).
"""

from __future__ import annotations

import collections
import collections.abc
import json
import math
import re
import types
from collections.abc import Iterator
from enum import Enum
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import GetCoreSchemaHandler
from pydantic.fields import FieldInfo
from pydantic_core import CoreSchema, PydanticKnownError, core_schema
from typing_extensions import final

from .._annotations import is_class
from .aliases import aliased
from .json_choices import JSON_SCALARS, expected, reads_only_its_values

__all__ = [
    "INT_KEY_PATTERN",
    "KEY_NAMES",
    "MAPPINGS",
    "int_key_pattern",
    "key_as_argument",
    "mapping_key_problem",
]

# On the core schema of a dict's keys: the `propertyNames` the dict's JSON Schema gets.
KEY_NAMES = "llm_worker_key_names"

# Generic mappings, whose first argument is the type of their keys.
MAPPINGS = frozenset(
    {
        dict,
        collections.abc.Mapping,
        collections.abc.MutableMapping,
        collections.OrderedDict,
        collections.defaultdict,
        collections.Counter,
    }
)

# An integer as json.dumps writes it: no sign but '-', no leading zero, no "-0" (which is "0").
INT_KEY_PATTERN = r"^(0|-?[1-9][0-9]*)$"

_Texts = tuple[tuple[str, Any], ...]  # (JSON text, key): the texts a key type with few values takes


def key_as_argument(key: Any) -> Any:
    kind = _key_kind(key)
    if kind == "int":
        return Annotated[key, _IntKeys(int_key_pattern(*_int_bounds(key)))]
    if isinstance(kind, tuple):
        return Annotated[key, _KeyTexts(kind)]
    return key  # text, read exactly; any other key type is refused at declaration


def mapping_key_problem(annotation: Any) -> str | None:
    """Why a dict in ``annotation`` cannot take its keys from JSON one way each, if one cannot.

    JSON keys are text. A key type that several texts read as one key
    (``float``: ``"1.5"``, ``"1.50"``, ``"15e-1"``) would keep one of their values
    and lose the others without a word. An ``int`` key's ``multiple_of`` is in
    no pattern, so the schema would let through keys the tool refuses.
    """
    return _mapping_key_problem(annotation, ())


def _mapping_key_problem(annotation: Any, aliases: tuple[Any, ...]) -> str | None:
    """``mapping_key_problem`` inside ``aliases`` (an alias may be in itself: Tree)."""
    value = aliased(annotation)
    if value is not None:
        alias = get_origin(annotation) or annotation  # Pair for Pair[int]
        if any(alias is outer for outer in aliases):
            return None
        return _mapping_key_problem(value, (*aliases, alias))
    args = get_args(annotation)
    origin = get_origin(annotation)
    if origin is Literal:
        return None
    if origin is Annotated:
        return _mapping_key_problem(args[0], aliases)
    if origin in MAPPINGS and args:
        problem = _key_problem(args[0])
        if problem is not None:
            return problem
    for arg in args:
        problem = _mapping_key_problem(arg, aliases)
        if problem is not None:
            return problem
    return None


def _key_problem(key: Any) -> str | None:
    kind = _key_kind(key)
    if kind is None:
        name = key.__qualname__ if is_class(key) else repr(key).replace("typing.", "")
        return (
            f"its dict keys are {name}, and a JSON object's keys are text that several "
            f"spellings of one {name} would be read into, keeping one value and losing the "
            f"others; use str keys (dict[str, ...]), or int, bool, Literal or Enum keys"
        )
    if kind != "int":
        return None
    for c in _constraints(key):
        if isinstance(c, annotated_types.MultipleOf):
            return (
                f"its dict keys are ints that are multiples of {c.multiple_of!r}, which a "
                f"schema cannot say of a JSON object's keys (text); drop multiple_of from "
                f"the keys and check them in the method"
            )
    return None


def _key_kind(key: Any) -> str | _Texts | None:
    """How dict keys of type ``key`` are read from JSON text: as they are (``"text"``), as
    an ``"int"``, as one of a few texts (``_Texts``); ``None`` if not one way each."""
    key = _unaliased(key)
    if key is Any or key is object:
        return "text"
    if is_class(key):
        if issubclass(key, Enum):
            return _enum_key_kind(key)
        if key is bool:
            return (("true", True), ("false", False))
        if issubclass(key, (str, bytes)):
            return "text"
        return "int" if key is int else None
    origin = get_origin(key)
    if origin is Literal:
        choices = get_args(key)
        pairs = tuple((c.value if isinstance(c, Enum) else c, c) for c in choices)
        # Enum members are keys of their values' text: strict pydantic takes only members.
        return _texts(pairs, by_value=any(isinstance(c, Enum) for c in choices))
    if origin is Union or isinstance(key, types.UnionType):
        members = get_args(key)
        return "text" if all(_key_kind(member) == "text" for member in members) else None
    return None


def _enum_key_kind(cls: type[Enum]) -> str | _Texts | None:
    pairs = tuple((member.value, member) for member in cls)
    if not reads_only_its_values(cls, pairs):
        return None
    return _texts(pairs)


def _texts(pairs: tuple[tuple[Any, Any], ...], *, by_value: bool = False) -> str | _Texts | None:
    if not by_value and all(type(value) is str for value, _ in pairs):
        return "text"  # pydantic reads strings exactly
    if not all(type(value) in JSON_SCALARS for value, _ in pairs):
        return None
    return tuple((v if type(v) is str else json.dumps(v), choice) for v, choice in pairs)


def _unaliased(key: Any) -> Any:
    """``key`` past ``Annotated``, ``NewType`` and ``TypeAliasType``."""
    for _ in range(_MAX_ALIASES):  # an alias of an alias...
        if is_class(key):
            return key
        if get_origin(key) is Annotated:
            key = get_args(key)[0]
            continue
        value = aliased(key)
        if value is None:
            return key
        key = value
    return key


_MAX_ALIASES = 32


def _constraints(key: Any) -> Iterator[Any]:
    """The ``annotated_types`` constraints on ``key`` (``Field(ge=0)``'s among them), past
    aliases, in the order pydantic applies them."""
    for _ in range(_MAX_ALIASES):
        if get_origin(key) is Annotated:
            for meta in key.__metadata__:
                items = meta.metadata if isinstance(meta, FieldInfo) else [meta]
                for item in items:
                    if isinstance(item, annotated_types.GroupedMetadata):
                        yield from item  # Interval(ge=0, lt=10)
                    else:
                        yield item
            key = get_args(key)[0]
            continue
        value = None if is_class(key) else aliased(key)
        if value is None:
            return
        key = value


def _int_bounds(key: Any) -> tuple[float, float]:
    """The least and the greatest ``int`` the key's constraints let through (or ∓inf)."""
    least, greatest = -math.inf, math.inf
    for c in _constraints(key):
        if isinstance(c, annotated_types.Gt):
            least = max(least, _rounded(c.gt, math.floor, none_past=math.inf) + 1)
        elif isinstance(c, annotated_types.Ge):
            least = max(least, _rounded(c.ge, math.ceil, none_past=math.inf))
        elif isinstance(c, annotated_types.Lt):
            greatest = min(greatest, _rounded(c.lt, math.ceil, none_past=-math.inf) - 1)
        elif isinstance(c, annotated_types.Le):
            greatest = min(greatest, _rounded(c.le, math.floor, none_past=-math.inf))
    return least, greatest


def _rounded(bound: Any, to_int: Any, *, none_past: float) -> float:
    """``bound`` rounded to an int; an infinite one as it is, and a NaN (which no number
    passes) as ``none_past``."""
    if bound != bound:
        return none_past
    try:
        return int(to_int(bound))
    except (OverflowError, ValueError):
        return math.inf if bound > 0 else -math.inf
    except TypeError:  # no number: pydantic's to judge, as for any other key
        return -none_past


def int_key_pattern(least: float, greatest: float) -> str | None:
    """The pattern of the integers from ``least`` to ``greatest`` as ``json.dumps`` writes
    them (either may be infinite); ``None`` if there are none."""
    if least == -math.inf and greatest == math.inf:
        return INT_KEY_PATTERN
    if least > greatest:
        return None
    parts: list[str] = []
    if greatest >= 0:
        parts.extend(_numerals(int(max(least, 0)), greatest))
    if least < 0:
        parts.append("-" + _either(_numerals(int(max(-greatest, 1)), -least)))
    return f"^({'|'.join(parts)})$"


def _numerals(least: int, greatest: float) -> list[str]:
    """Patterns of the numerals (no sign, no leading zero) from ``least`` to ``greatest``."""
    parts: list[str] = []
    if least == 0:
        parts.append("0")
        least = 1
    while least <= greatest:
        width = len(str(least))
        if greatest == math.inf and least == 10 ** (width - 1):
            parts.append("[1-9]" + _any_digits(width - 1, or_more=True))  # every longer one
            break
        top = int(min(greatest, 10**width - 1))
        parts.extend(_one_width(str(least), str(top)))
        least = top + 1
    return parts


def _one_width(low: str, high: str) -> list[str]:
    """Patterns of the digit strings of ``low``'s width from ``low`` to ``high``."""
    if low == high:
        return [low]
    if len(low) == 1:
        return [_digit_range(low, high)]
    if low[0] == high[0]:
        return [low[0] + _either(_one_width(low[1:], high[1:]))]
    rest = len(low) - 1
    first, last = int(low[0]), int(high[0])
    parts: list[str] = []
    if low[1:] != "0" * rest:
        parts.append(low[0] + _either(_one_width(low[1:], "9" * rest)))
        first += 1
    ending: list[str] = []
    if high[1:] != "9" * rest:
        ending.append(high[0] + _either(_one_width("0" * rest, high[1:])))
        last -= 1
    if first <= last:
        parts.append(_digit_range(str(first), str(last)) + _any_digits(rest))
    return parts + ending


def _digit_range(low: str, high: str) -> str:
    return low if low == high else f"[{low}-{high}]"


def _any_digits(count: int, *, or_more: bool = False) -> str:
    if count == 0:
        return "[0-9]*" if or_more else ""
    if count == 1:
        return "[0-9]+" if or_more else "[0-9]"
    return f"[0-9]{{{count},}}" if or_more else f"[0-9]{{{count}}}"


def _either(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else f"({'|'.join(parts)})"


@final
class _IntKeys:
    """``Annotated`` metadata of an ``int`` dict key: from JSON, an integer written one way
    (``INT_KEY_PATTERN``); ``pattern`` says that and the key's bounds to the schema
    (``None``: no key is in bounds). Python input is validated as before.

    A key that is no text went through a validator already (a ``defaultdict``
    validates its dict twice, a ``BeforeValidator`` may give ints): it is the
    key's type's to judge.
    """

    __slots__ = ("_pattern",)

    def __init__(self, pattern: str | None) -> None:
        self._pattern = pattern

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        python = handler(source)  # with the key's own constraints (Field(ge=0)...)
        pattern = self._pattern
        names: dict[str, Any] = {"not": {}} if pattern is None else {"pattern": pattern}
        mismatch = {"pattern": INT_KEY_PATTERN if pattern is None else pattern}

        def int_of_key(key: Any) -> Any:
            if type(key) is not str:
                return key
            if _INT_KEY.fullmatch(key) is None:  # not `match`: its '$' passes "1\n"
                raise PydanticKnownError("string_pattern_mismatch", mismatch)
            try:
                return int(key)
            except ValueError:  # more digits than sys.get_int_max_str_digits()
                raise PydanticKnownError("int_parsing_size") from None

        return core_schema.json_or_python_schema(
            json_schema=core_schema.no_info_before_validator_function(int_of_key, python),
            python_schema=python,
            metadata={KEY_NAMES: names},
        )


_INT_KEY = re.compile(INT_KEY_PATTERN)


@final
class _KeyTexts:
    """``Annotated`` metadata of a dict key with few values (``bool``, a ``Literal``, an
    Enum): from JSON, each value's JSON text (``"true"``, ``"1"``), and no other.

    A key that is no text is the key's type's to judge, as for ``_IntKeys``.
    """

    __slots__ = ("_texts",)

    def __init__(self, texts: _Texts) -> None:
        self._texts = texts

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        by_text: dict[str, Any] = {}
        for text, key in self._texts:  # the first written wins a text two keys share
            by_text.setdefault(text, key)
        listed = expected(list(by_text))

        def key_of(text: Any) -> Any:
            if type(text) is not str:
                return text
            try:
                return by_text[text]
            except KeyError:
                raise PydanticKnownError("literal_error", {"expected": listed}) from None

        python = handler(source)
        return core_schema.json_or_python_schema(
            json_schema=core_schema.no_info_before_validator_function(key_of, python),
            python_schema=python,
            metadata={KEY_NAMES: {"enum": list(by_text)}},
        )
