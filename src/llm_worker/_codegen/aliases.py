"""Type aliases, looked through: what a ``TypeAliasType`` or a ``NewType`` stands for.

pydantic validates an alias as the type it names, so whatever ``fields``
rewrites in a type and ``json_keys`` or ``closed_classes`` check in it holds
behind an alias too: ``TypeAliasType("Counts", dict[int, int])`` (or Python
3.12's ``type Counts = dict[int, int]``), ``NewType("Counts", dict[int, int])``
and a generic alias given its arguments (``Pair[int]``).

Whether an annotation *is* an alias is asked here too (``is_type_alias``), and
never with ``isinstance``: on Python 3.10 ``Pair[int]`` forwards ``__class__``
to ``Pair``, so ``isinstance(Pair[int], TypeAliasType)`` is True there (see
``_annotations``, whose ``is_class`` asks the same of classes).
"""

from __future__ import annotations

import typing
from typing import Any, get_args, get_origin

import typing_extensions

__all__ = ["aliased", "is_type_alias"]

# typing_extensions' own class before Python 3.14, typing's (`type X = ...`) from 3.12.
_ALIAS_TYPES: tuple[Any, ...] = tuple(
    {typing_extensions.TypeAliasType, getattr(typing, "TypeAliasType", None)} - {None}
)
_NEW_TYPES: tuple[Any, ...] = tuple({typing.NewType, typing_extensions.NewType})


def is_type_alias(annotation: Any) -> bool:
    """Whether ``annotation`` is a ``TypeAliasType`` (``Pair``) itself, not one given its
    arguments (``Pair[int]``, which passes ``isinstance`` for one on Python 3.10)."""
    return issubclass(type(annotation), _ALIAS_TYPES)


def aliased(annotation: Any) -> Any | None:
    """The type ``annotation`` is an alias of, or ``None`` if it is no alias (nor a generic
    alias whose arguments can be put into what it names)."""
    if issubclass(type(annotation), _NEW_TYPES):
        return annotation.__supertype__
    if is_type_alias(annotation):
        return annotation.__value__
    origin = get_origin(annotation)
    if not is_type_alias(origin):
        return None
    value = origin.__value__  # Pair[int]: Pair's value, with int for its parameter
    parameters: tuple[Any, ...] = getattr(origin, "__type_params__", ())
    if not parameters or tuple(getattr(value, "__parameters__", ())) != parameters:
        return None
    try:
        return value[get_args(annotation)]
    except TypeError:
        return None
