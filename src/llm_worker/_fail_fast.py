"""A screen that finds a large input's errors with bounded work, before pydantic does.

pydantic reports every error it finds, and one argument can hold very many: a list of
300 000 empty objects, each missing ten required fields, is 3 million errors, built on
the event loop in seconds and gigabytes, from a call well under ``max_input_bytes``. A
model reads only the first few (``describe_validation_error``), and pydantic has no
error budget (pydantic/pydantic#8242). Its ``fail_fast`` stops a list, tuple, set or
dict at its first bad item, but only where a schema asks, and a model nested in an
argument validates with its own prebuilt validator, whatever the schema around it says.

So a large input is screened first, by a validator built from the same core schema
with every collection failing fast and every model, dataclass and TypedDict validated
in place (into a stand-in object, never the application's class). It must never refuse
what pydantic accepts, so it is made only for a schema that runs none of the
application's code on the input (validator functions, a custom ``__init__``, a
callable discriminator, an Enum's ``_missing_``): what that code accepts, or makes of
a value, only that code knows. Such a schema gets no screen (``screen_of`` is
``None``). A set is screened as a list without its length bounds (its items' hashes
and duplicates are the real validator's business), and a default factory is not
called. An input the screen refuses is refused with the screen's errors (the first
ones, fewer of them); one it accepts is validated for real, in full.
"""

from __future__ import annotations

import enum
from typing import Any, cast

from pydantic_core import SchemaValidator

__all__ = ["SCREENED_FROM", "screen_of"]

SCREENED_FROM = 1024
"""Inputs longer than this (characters) are screened: a shorter one holds too few values
to make many errors (and is validated faster than it would be screened)."""

# The core schema types that take ``fail_fast`` (pydantic-core's list_schema, ...).
_COLLECTIONS = frozenset(
    {"list", "tuple", "set", "frozenset", "dict", "deque", "counter", "ordered-dict", "frozendict"}
)
# Keys whose values are data, never schemas: a default of {"type": "list"} stays as it is.
_VALUES = frozenset({"default", "expected", "metadata", "custom_error_context", "config"})
# Nodes that run the application's code on the input.
_USER_CODE = frozenset(
    {"function-before", "function-after", "function-wrap", "function-plain", "call"}
)
_SETS = frozenset({"set", "frozenset"})


class _RunsUserCode(Exception):
    """The schema runs the application's code: no screen can be made of it."""


class _StandIn:
    """What the screen validates a model or dataclass into (and throws away): a subclass
    named as the class it stands in for, since errors name it ("instance of Item")."""


def screen_of(schema: Any) -> SchemaValidator | None:
    """The screen of ``schema`` (a pydantic core schema), or ``None`` if the schema runs
    code of the application's, or (a schema this module does not foresee) cannot be made
    into one: see the module docstring."""
    try:
        return SchemaValidator(_Screening().screened(schema))
    except Exception:  # _RunsUserCode, or pydantic-core refused the copy
        return None


class _Screening:
    """One schema's copy for the screen; a node shared in the schema is shared in it."""

    def __init__(self) -> None:
        self._done: dict[int, Any] = {}
        self._stand_ins: dict[type, type[_StandIn]] = {}

    def screened(self, node: Any) -> Any:
        if isinstance(node, (list, tuple)):  # tuples: a union's (schema, label) choices
            items: list[Any] | tuple[Any, ...] = node  # pyright: ignore[reportUnknownVariableType]
            copied = [self.screened(item) for item in items]
            return copied if isinstance(items, list) else tuple(copied)
        if not isinstance(node, dict):
            return node  # a class, a function, a value: shared as it is
        schema = cast("dict[str, Any]", node)
        done = self._done.get(id(schema))
        if done is None:
            done = self._done[id(schema)] = self._screened(schema)
        return done

    def _screened(self, node: dict[str, Any]) -> Any:
        kind = node.get("type")
        if not isinstance(kind, str):  # not a schema: fields by name, one named "type"
            kind = None
        if (
            kind in _USER_CODE
            or node.get("custom_init")
            or (kind == "enum" and _own_missing(node))
            or (kind == "tagged-union" and callable(node.get("discriminator")))
        ):
            raise _RunsUserCode
        copied = {
            key: value if key in _VALUES else self.screened(value) for key, value in node.items()
        }
        if kind in _SETS:
            copied["type"] = "list"
            copied.pop("min_length", None)
            copied.pop("max_length", None)
        if kind in _COLLECTIONS:
            copied["fail_fast"] = True  # whatever the schema says: it decides nothing here
        elif kind in ("model", "dataclass"):
            # Not the application's class: pydantic-core would use its prebuilt validator.
            copied["cls"] = self._stand_in(node["cls"])
            copied.pop("post_init", None)
            copied.pop("generic_origin", None)
        elif kind == "typed-dict":
            copied.pop("cls", None)
        elif kind == "default" and "default_factory" in copied:
            # A missing value is fine where it has a default: no need to make one.
            del copied["default_factory"]
            copied.pop("default_factory_takes_data", None)
            copied["default"] = None
            copied["validate_default"] = False
        return copied

    def _stand_in(self, cls: type) -> type[_StandIn]:
        stand_in = self._stand_ins.get(cls)
        if stand_in is None:
            names = {"__qualname__": cls.__qualname__, "__module__": cls.__module__}
            stand_in = self._stand_ins[cls] = type(cls.__name__, (_StandIn,), names)
        return stand_in


def _own_missing(node: dict[str, Any]) -> bool:
    """Whether an enum schema's class has a ``_missing_`` of its own (which pydantic asks)."""
    if node.get("missing") is not None:
        return True
    missing = getattr(node.get("cls"), "_missing_", None)
    default: object = getattr(enum.Enum._missing_, "__func__", None)
    return getattr(missing, "__func__", missing) is not default
