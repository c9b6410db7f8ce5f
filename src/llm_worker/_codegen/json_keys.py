"""Dict keys read from JSON text one way each.

Dict keys are text in JSON, and pydantic reads ``"1"``, ``"01"``, ``" 1"`` and
``"+1"`` into one ``int`` key, keeping one value without a word. An ``int`` key
must be written as ``json.dumps`` writes it (the schema's ``propertyNames``
pattern says so), a ``bool``, ``Literal`` or Enum key as its value's JSON text
(``"true"``, ``"1"``): then no two keys are one. Keys of other types that
several texts read as one (``float``, ``Decimal``, ``UUID``, dates...) are
refused at declaration (``mapping_key_problem``).
"""

from __future__ import annotations

import collections
import collections.abc
import json
import re
import types
from enum import Enum
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import GetCoreSchemaHandler
from pydantic_core import CoreSchema, PydanticKnownError, core_schema
from typing_extensions import final

from .json_choices import JSON_SCALARS, expected, reads_only_its_values

__all__ = ["INT_KEY_PATTERN", "KEY_NAMES", "MAPPINGS", "key_as_argument", "mapping_key_problem"]

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
        return Annotated[key, _IntKeys()]
    if isinstance(kind, tuple):
        return Annotated[key, _KeyTexts(kind)]
    return key  # text, read exactly; any other key type is refused at declaration


def mapping_key_problem(annotation: Any) -> str | None:
    """Why a dict in ``annotation`` cannot take its keys from JSON one way each, if one cannot.

    JSON keys are text. A key type that several texts read as one key
    (``float``: ``"1.5"``, ``"1.50"``, ``"15e-1"``) would keep one of their values
    and lose the others without a word.
    """
    args = get_args(annotation)
    origin = get_origin(annotation)
    if origin is Literal:
        return None
    if origin is Annotated:
        return mapping_key_problem(args[0])
    if origin in MAPPINGS and args and _key_kind(args[0]) is None:
        key = args[0]
        name = key.__qualname__ if isinstance(key, type) else repr(key).replace("typing.", "")
        return (
            f"its dict keys are {name}, and a JSON object's keys are text that several "
            f"spellings of one {name} would be read into, keeping one value and losing the "
            f"others; use str keys (dict[str, ...]), or int, bool, Literal or Enum keys"
        )
    for arg in args:
        problem = mapping_key_problem(arg)
        if problem is not None:
            return problem
    return None


def _key_kind(key: Any) -> str | _Texts | None:
    """How dict keys of type ``key`` are read from JSON text: as they are (``"text"``), as
    an ``"int"``, as one of a few texts (``_Texts``); ``None`` if not one way each."""
    key = _unaliased(key)
    if key is Any or key is object:
        return "text"
    if isinstance(key, type):
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
        return _texts(tuple((c.value if isinstance(c, Enum) else c, c) for c in choices))
    if origin is Union or isinstance(key, types.UnionType):
        members = get_args(key)
        return "text" if all(_key_kind(member) == "text" for member in members) else None
    return None


def _enum_key_kind(cls: type[Enum]) -> str | _Texts | None:
    pairs = tuple((member.value, member) for member in cls)
    if not reads_only_its_values(cls, pairs):
        return None
    return _texts(pairs)


def _texts(pairs: tuple[tuple[Any, Any], ...]) -> str | _Texts | None:
    if all(type(value) is str for value, _ in pairs):
        return "text"  # pydantic reads strings exactly
    if not all(type(value) in JSON_SCALARS for value, _ in pairs):
        return None
    return tuple((v if type(v) is str else json.dumps(v), choice) for v, choice in pairs)


def _unaliased(key: Any) -> Any:
    """``key`` past ``Annotated``, ``NewType`` and ``TypeAliasType``."""
    for _ in range(32):  # an alias of an alias...
        if isinstance(key, type):
            return key
        if get_origin(key) is Annotated:
            key = get_args(key)[0]
            continue
        aliased = getattr(key, "__supertype__", None) or getattr(key, "__value__", None)
        if aliased is None:
            return key
        key = aliased
    return key


@final
class _IntKeys:
    """``Annotated`` metadata of an ``int`` dict key: from JSON, an integer written one way
    (``INT_KEY_PATTERN``). Python input is validated as before.

    A key that is no text went through a validator already (a ``defaultdict``
    validates its dict twice, a ``BeforeValidator`` may give ints): it is the
    key's type's to judge.
    """

    __slots__ = ()

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        python = handler(source)  # with the key's own constraints (Field(ge=0)...)
        return core_schema.json_or_python_schema(
            json_schema=core_schema.no_info_before_validator_function(_int_of_key, python),
            python_schema=python,
            metadata={KEY_NAMES: {"pattern": INT_KEY_PATTERN}},
        )


_INT_KEY = re.compile(INT_KEY_PATTERN)


def _int_of_key(key: Any) -> Any:
    if type(key) is not str:
        return key
    if _INT_KEY.match(key) is None:
        raise PydanticKnownError("string_pattern_mismatch", {"pattern": INT_KEY_PATTERN})
    return int(key)


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
