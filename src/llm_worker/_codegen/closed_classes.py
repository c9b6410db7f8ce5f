"""Closed copies of the TypedDicts and dataclasses used as arguments.

A TypedDict or a stdlib dataclass without a config of its own is validated
with the config of what holds it: closed (``extra="forbid"``) as an argument,
as your model says inside your model. pydantic gives it one ``$defs`` entry
(its core schema's ``ref`` is made from the class alone), which could say only
one of the two. So as an argument it is validated as a copy of its own with
the arguments' config, a subclass made once (its *carrier*), which pydantic
names apart: one entry for the two when they say the same, an entry for each,
named by module (``app__Movie`` and ``app__closed__Movie``), when they do not,
whatever the order of the parameters.

The arguments' config reaches the TypedDicts and dataclasses in its fields
too, so those are closed copies in the carrier's fields (``fields_as``
rewrites them), and a generic one is copied as generic, given the arguments
it was given (``Box[int]``). The copy is pydantic's alone: the field is
still annotated with your class (``Annotated[Movie, ...]``), and a
dataclass's validator makes and takes instances of your class itself (its
core schema names it), so ``__post_init__``, ``Args(movie=Movie(...))`` and
the method all see ``Movie``.

A dataclass whose subclasses run code of their own (a metaclass other than
``type`` and ``ABCMeta``, an ``__init_subclass__``) cannot be copied without
running it: as an argument it is a declaration error (``closing_problem``)
unless it has a config of its own.
"""

from __future__ import annotations

import copy
import dataclasses
import threading
import types
from collections.abc import Callable
from typing import Annotated, Any, Literal, cast, get_args, get_origin

import typing_extensions
from pydantic import ConfigDict, GetCoreSchemaHandler
from pydantic_core import CoreSchema
from typing_extensions import final, is_typeddict

from .._annotations import is_class
from .aliases import aliased

__all__ = ["closed", "closing_problem", "takes_the_holders_config"]

# A class (TypedDict, dataclass) -> its carrier: the closed copy pydantic validates it as
# (None for a dataclass that cannot be copied). The lock makes a carrier whole (its fields
# rewritten) before any other thread sees it; it is re-entered by classes in its fields.
_CARRIERS: dict[type, type | None] = {}
_LOCK = threading.RLock()
_NO_EXTRA_ITEMS = getattr(typing_extensions, "NoExtraItems", None)
# Where the metaclasses and `__init_subclass__`s that subclassing may run are known to do
# nothing else (ABCMeta, Generic's).
_STANDARD_MODULES = frozenset({"builtins", "abc", "typing", "typing_extensions"})


def takes_the_holders_config(cls: type) -> bool:
    """Whether pydantic validates ``cls`` with the config of what holds it: a TypedDict or a
    stdlib dataclass without a config (or, for a TypedDict, ``closed``/``extra_items``) of its
    own."""
    if is_typeddict(cls):
        return not any(_sets_its_extra(base) for base in _typed_dict_bases(cls))
    return dataclasses.is_dataclass(cls) and getattr(cls, "__pydantic_config__", None) is None


def closing_problem(annotation: Any) -> str | None:
    """Why an argument of type ``annotation`` cannot be closed, if it cannot: a dataclass in
    it (or in the fields of those closed with it) whose subclasses run code of their own."""
    return _problem(annotation, set())


def closed(
    annotation: Any,
    cls: type,
    arguments: tuple[Any, ...],
    config: ConfigDict,
    fields_as: Callable[[Any], Any],
) -> Any:
    """``annotation`` (``cls``, or ``cls[*arguments]``) validated as its closed copy.

    ``config`` is the arguments' config; ``fields_as`` rewrites the annotation of
    a field of the copy (closing the classes in it).
    """
    carrier = _carrier(cls, config, fields_as)
    if carrier is None:
        return annotation  # refused at declaration (closing_problem)
    target = cast(Any, carrier)[arguments] if arguments else carrier
    return Annotated[annotation, _Closed(target, carrier, cls)]


# -- which classes --------------------------------------------------------------------------


def _typed_dict_bases(cls: type) -> list[type]:
    """``cls`` and the TypedDicts it derives from (a TypedDict's ``__mro__`` lists none)."""
    found: list[type] = []
    pending = [cls]
    while pending:
        current = pending.pop()
        if current not in found:
            found.append(current)
            for base in getattr(current, "__orig_bases__", ()):
                base = get_origin(base) or base  # Box[int] in `class IntBox(Box[int])`
                if is_class(base) and is_typeddict(base):
                    pending.append(base)
    return found


def _sets_its_extra(cls: type) -> bool:
    own = vars(cls)
    if "__pydantic_config__" in own or own.get("__closed__") is not None:
        return True
    extra_items = own.get("__extra_items__", _NO_EXTRA_ITEMS)
    return extra_items is not _NO_EXTRA_ITEMS


def _subclassing_runs(cls: type) -> str | None:
    """What code of its own making a subclass of dataclass ``cls`` would run, if any."""
    meta = type(cls)
    if meta.__module__ not in _STANDARD_MODULES:
        return f"its metaclass {meta.__qualname__}"
    for base in cls.__mro__[:-1]:
        if "__init_subclass__" in vars(base) and base.__module__ not in _STANDARD_MODULES:
            return f"{base.__qualname__}.__init_subclass__"
    return None


def _problem(annotation: Any, seen: set[int], within: type | None = None) -> str | None:
    """``closing_problem``; ``seen``: the ids of the classes and aliases walked already."""
    if is_class(annotation):
        return _class_problem(annotation, seen, within)
    value = aliased(annotation)
    if value is not None:
        alias = id(get_origin(annotation) or annotation)  # Pair for Pair[int]
        if alias in seen:  # an alias of itself (type Tree = list[Tree] | int)
            return None
        seen.add(alias)
        return _problem(value, seen, within)
    origin = get_origin(annotation)
    if origin is Literal:
        return None
    if is_class(origin):  # Box[int]
        problem = _class_problem(origin, seen, within)
        if problem is not None:
            return problem
    for arg in get_args(annotation):
        problem = _problem(arg, seen, within)
        if problem is not None:
            return problem
    return None


def _class_problem(cls: type, seen: set[int], within: type | None) -> str | None:
    if id(cls) in seen or not takes_the_holders_config(cls):
        return None
    seen.add(id(cls))
    if not is_typeddict(cls):
        runs = _subclassing_runs(cls)
        if runs is not None:
            where = "" if within is None else f" (in {within.__qualname__})"
            return (
                f"{cls.__qualname__}{where} is a dataclass whose subclasses run code of their "
                f"own ({runs}), and as an argument it is validated as a subclass closed like "
                f"the arguments; give it a config of its own "
                f"(@with_config(ConfigDict(extra='forbid')) from pydantic) or make it a "
                f"pydantic model"
            )
    for hint in (_hints(cls) or {}).values():
        problem = _problem(hint, seen, cls)
        if problem is not None:
            return problem
    return None


def _hints(cls: type) -> dict[str, Any] | None:
    """The resolved annotations of ``cls``'s fields (read once), or ``None`` while they
    cannot be resolved (pydantic reports those, with the field)."""
    try:
        return _HINTS[cls]
    except KeyError:
        pass
    try:
        hints = typing_extensions.get_type_hints(cls, include_extras=True)
    except Exception:
        return None  # not kept: a name defined later may resolve it then
    return _HINTS.setdefault(cls, hints)


_HINTS: dict[type, dict[str, Any]] = {}


# -- the copies -----------------------------------------------------------------------------


def _carrier(cls: type, config: ConfigDict, fields_as: Callable[[Any], Any]) -> type | None:
    with _LOCK:
        if cls in _CARRIERS:
            return _CARRIERS[cls]
        if is_typeddict(cls):
            carrier: type | None = _typed_dict_carrier(cls, config)
        elif _subclassing_runs(cls) is None:
            carrier = _dataclass_carrier(cls, config)
        else:
            carrier = None
        _CARRIERS[cls] = carrier  # first: the fields may name `cls` again (a tree)
        if carrier is not None:
            _close_fields(cls, carrier, fields_as)
        return carrier


def _closed_names(cls: type) -> dict[str, Any]:
    return {
        "__module__": cls.__module__,
        "__qualname__": f"closed.{cls.__qualname__}",
        "__doc__": cls.__doc__,  # the schema's description
    }


def _generic_base(cls: type) -> Any:
    """What a copy of ``cls`` derives from: ``cls``, or ``cls[T]`` so that it stays generic."""
    parameters: tuple[Any, ...] = getattr(cls, "__parameters__", ())
    return cls[parameters] if parameters else cls  # type: ignore[index]


def _typed_dict_carrier(cls: type, config: ConfigDict) -> type:
    names = _closed_names(cls)
    carrier = types.new_class(
        cls.__name__, (_generic_base(cls),), {}, lambda namespace: namespace.update(names)
    )
    carrier.__pydantic_config__ = config  # type: ignore[attr-defined]
    return carrier


def _dataclass_carrier(cls: type, config: ConfigDict) -> type:
    fields = getattr(cls, "__dataclass_fields__")  # noqa: B009
    namespace: dict[str, Any] = {
        **_closed_names(cls),
        "__pydantic_config__": config,
        # Its own copies, whose types `_close_fields` may rewrite (pydantic reads a
        # dataclass's fields from them).
        "__dataclass_fields__": {name: copy.copy(field) for name, field in fields.items()},
    }
    return types.new_class(cls.__name__, (_generic_base(cls),), {}, lambda ns: ns.update(namespace))


def _close_fields(cls: type, carrier: type, fields_as: Callable[[Any], Any]) -> None:
    """Give ``carrier`` the fields of ``cls`` as ``fields_as`` rewrites them."""
    hints = _hints(cls)
    if hints is None:
        return
    changed = {name: new for name, hint in hints.items() if (new := fields_as(hint)) is not hint}
    if not changed:
        return
    if is_typeddict(cls):
        carrier.__annotations__ = {**carrier.__annotations__, **changed}
        return
    for name, field in getattr(carrier, "__dataclass_fields__").items():  # noqa: B009
        if name in changed:
            field.type = changed[name]


@final
class _Closed:
    """``Annotated`` metadata of a TypedDict or a dataclass argument: validated as its
    carrier (``target``, the carrier or its parametrization), instances of ``cls``."""

    __slots__ = ("_carrier", "_cls", "_target")

    def __init__(self, target: Any, carrier: type, cls: type) -> None:
        self._target = target
        self._carrier = carrier
        self._cls = cls

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        schema = handler.generate_schema(self._target)
        if not is_typeddict(self._cls):
            self._of_instances_of_cls(handler, schema)
        return schema

    def _of_instances_of_cls(self, handler: GetCoreSchemaHandler, schema: CoreSchema) -> None:
        """The dataclass core schema of the carrier, made to create and accept ``cls``'s
        instances (pydantic reads the carrier only for its fields and config)."""
        try:
            node: object = handler.resolve_ref_schema(schema)
        except LookupError:  # still being made (a tree): the use that makes it does this
            return
        while isinstance(node, dict):  # past the wrappers of model validators
            current = cast("dict[str, object]", node)
            if current.get("type") == "dataclass":
                for key in ("cls", "generic_origin"):
                    if current.get(key) is self._carrier:
                        current[key] = self._cls
                return
            node = current.get("schema")

    def __repr__(self) -> str:
        return f"<validated as a closed copy of {self._cls.__qualname__}>"
