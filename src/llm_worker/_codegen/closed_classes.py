"""Closed copies of the TypedDicts and dataclasses used as arguments.

A TypedDict or a stdlib dataclass without a config of its own is validated
with the config of what holds it: closed (``extra="forbid"``) as an argument,
as your model says inside your model. Its schema is one ``$defs`` entry, which
could say only one of the two. So as an argument it is given a copy of its
own, with the arguments' config (``closed``): pydantic then writes one entry
for the two when they say the same, and an entry for each, named by module
(``app__Movie`` and ``app__closed__Movie``), when they do not, whatever the
order of the parameters. The method still gets an instance of the dataclass
as written.
"""

from __future__ import annotations

import dataclasses
import types
from typing import Annotated, Any

import typing_extensions
from pydantic import ConfigDict, GetCoreSchemaHandler
from pydantic_core import CoreSchema, core_schema
from typing_extensions import final, is_typeddict

__all__ = ["closed", "takes_the_holders_config"]

# A class (TypedDict, dataclass) -> what it is as an argument: its closed copy.
_CLOSED: dict[type, Any] = {}
_NO_EXTRA_ITEMS = getattr(typing_extensions, "NoExtraItems", None)


def takes_the_holders_config(cls: type) -> bool:
    """Whether pydantic validates ``cls`` with the config of what holds it: a TypedDict or a
    stdlib dataclass without a config (or, for a TypedDict, ``closed``/``extra_items``) of its
    own, not generic. A dataclass whose subclasses run code of their users' is left alone."""
    if getattr(cls, "__parameters__", ()):
        return False
    if is_typeddict(cls):
        return not any(_sets_its_extra(base) for base in _typed_dict_bases(cls))
    if not dataclasses.is_dataclass(cls) or getattr(cls, "__pydantic_config__", None) is not None:
        return False
    runs_code = any("__init_subclass__" in vars(base) for base in cls.__mro__[:-1])
    return type(cls) is type and not runs_code


def _typed_dict_bases(cls: type) -> list[type]:
    """``cls`` and the TypedDicts it derives from (a TypedDict's ``__mro__`` lists none)."""
    found: list[type] = []
    pending = [cls]
    while pending:
        current = pending.pop()
        if current not in found:
            found.append(current)
            bases = getattr(current, "__orig_bases__", ())
            pending.extend(base for base in bases if isinstance(base, type) and is_typeddict(base))
    return found


def _sets_its_extra(cls: type) -> bool:
    own = vars(cls)
    if "__pydantic_config__" in own or own.get("__closed__") is not None:
        return True
    extra_items = own.get("__extra_items__", _NO_EXTRA_ITEMS)
    return extra_items is not _NO_EXTRA_ITEMS


def closed(cls: type, config: ConfigDict) -> Any:
    """``cls`` as an argument: a copy with the arguments' ``config``, made once.

    Named ``cls`` in the schema, it is told apart by module (``closed.Movie``)
    only where pydantic must (``cls`` itself is in the schema too, and says
    other things). A dataclass's instances get ``cls`` back as their class.
    """
    copied = _CLOSED.get(cls)
    if copied is None:
        make = _closed_typed_dict if is_typeddict(cls) else _closed_dataclass
        copied = _CLOSED.setdefault(cls, make(cls, config))  # two threads: the first one's
    return copied


def _closed_names(cls: type) -> dict[str, Any]:
    return {
        "__module__": cls.__module__,
        "__qualname__": f"closed.{cls.__qualname__}",
        "__doc__": cls.__doc__,  # the schema's description
    }


def _closed_typed_dict(cls: type, config: ConfigDict) -> type:
    names = _closed_names(cls)
    copied = types.new_class(cls.__name__, (cls,), {}, lambda namespace: namespace.update(names))
    copied.__pydantic_config__ = config  # type: ignore[attr-defined]
    return copied


def _closed_dataclass(cls: type, config: ConfigDict) -> Any:
    namespace: dict[str, Any] = {
        **_closed_names(cls),
        "__pydantic_config__": config,
        # Its own: so pydantic reads it as the dataclass it is (and skips the docstring
        # `dataclasses` wrote, as it does for `cls`).
        "__dataclass_fields__": getattr(cls, "__dataclass_fields__"),  # noqa: B009
    }
    if "__slots__" in vars(cls):
        namespace["__slots__"] = ()  # the layout of `cls`, so that instances can take it back
    return Annotated[type(cls.__name__, (cls,), namespace), _AsWritten(cls)]


@final
class _AsWritten:
    """``Annotated`` metadata of a dataclass's closed copy: its instances become ``cls``'s."""

    __slots__ = ("_cls",)

    def __init__(self, cls: type) -> None:
        self._cls = cls

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        cls = self._cls

        def as_written(value: Any) -> Any:
            object.__setattr__(value, "__class__", cls)  # one layout: see _closed_dataclass
            return value

        return core_schema.no_info_after_validator_function(as_written, handler(source))

    def __repr__(self) -> str:
        return f"<an instance of {self._cls.__qualname__}>"
