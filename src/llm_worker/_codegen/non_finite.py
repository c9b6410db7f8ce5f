"""Which ``Args`` models could hand a tool ``NaN`` or infinity: those check what they parsed.

pydantic reads the non-JSON ``NaN``, ``Infinity`` and ``1e400`` as floats (see
``_strict_json``). A ``float`` argument refuses them itself, at no cost:
``ARGS_CONFIG`` sets ``allow_inf_nan=False``. What pydantic does not check
lets them through: a value typed ``Any`` or ``object``, a ``float`` in a
nested model with its own config, a validator function of the user's (it
sees the raw value). ``admits_non_finite`` finds those, once per tool, in the
model's core schema; the tools it finds look at their validated arguments
(``non_finite_problem``) before the method runs. Anything it does not know
counts as letting them through.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import fields

__all__ = ["admits_non_finite"]

# Validators of these kinds never turn JSON into a float (or refuse NaN and infinity).
_NO_FLOATS = frozenset(
    {
        "str",
        "int",
        "bool",
        "none",
        "literal",
        "enum",
        "date",
        "time",
        "datetime",
        "timedelta",
        "uuid",
        "url",
        "multi-host-url",
        "bytes",
        "missing-sentinel",
    }
)
# One inner schema under this key; the node itself adds no raw value.
_WRAPPERS = {
    "nullable": "schema",
    "default": "schema",
    "function-after": "schema",
    "custom-error": "schema",
    "model-field": "schema",
    "typed-dict-field": "schema",
    "dataclass-field": "schema",
    "json-or-python": "json_schema",  # the input is JSON
}


def admits_non_finite(schema: Mapping[str, Any]) -> bool:
    """Whether validating JSON against ``schema`` (a pydantic core schema) can yield NaN or inf."""
    return _Walk().admits(schema, allow_inf_nan=True)


class _Walk:
    def __init__(self) -> None:
        self.definitions: dict[str, Mapping[str, Any]] = {}
        self.seen: set[tuple[str, bool]] = set()  # a recursive model is judged by its other parts

    def admits(self, node: Mapping[str, Any], *, allow_inf_nan: bool) -> bool:
        kind = node.get("type")
        if kind in _NO_FLOATS:
            return False
        if kind in ("float", "decimal"):
            return bool(node.get("allow_inf_nan", allow_inf_nan))
        if kind in _WRAPPERS:
            return self.admits(node[_WRAPPERS[kind]], allow_inf_nan=allow_inf_nan)
        if kind in ("model", "typed-dict", "dataclass"):
            config: Mapping[str, Any] = node.get("config") or {}
            inner = config.get("allow_inf_nan", True)
            if kind == "typed-dict":
                return self.any_admits(node["fields"].values(), inner)
            return self.admits(node["schema"], allow_inf_nan=inner)
        if kind == "model-fields":
            return self.any_admits(node["fields"].values(), allow_inf_nan)
        if kind == "dataclass-args":
            return self.any_admits(node["fields"], allow_inf_nan)
        if kind in ("list", "set", "frozenset", "generator"):
            items = node.get("items_schema")
            return items is None or self.admits(items, allow_inf_nan=allow_inf_nan)
        if kind == "tuple":
            items = node.get("items_schema")
            return items is None or self.any_admits(items, allow_inf_nan)
        if kind == "dict":
            keys, values = node.get("keys_schema"), node.get("values_schema")
            return keys is None or values is None or self.any_admits((keys, values), allow_inf_nan)
        if kind == "union":
            choices: list[Any] = [
                choice[0] if isinstance(choice, tuple) else choice for choice in node["choices"]
            ]
            return self.any_admits(choices, allow_inf_nan)
        if kind == "tagged-union":
            return self.any_admits(node["choices"].values(), allow_inf_nan)
        if kind == "chain":
            return self.any_admits(node["steps"], allow_inf_nan)
        if kind == "lax-or-strict":
            pair = (node["lax_schema"], node["strict_schema"])
            return self.any_admits(pair, allow_inf_nan)
        if kind in ("function-before", "function-wrap"):
            if not _ours(node["function"]):
                return True  # the user's function sees the raw value
            return self.admits(node["schema"], allow_inf_nan=allow_inf_nan)
        if kind == "definitions":
            for definition in node["definitions"]:
                self.definitions[definition["ref"]] = definition
            return self.admits(node["schema"], allow_inf_nan=allow_inf_nan)
        if kind == "definition-ref":
            key = (node["schema_ref"], allow_inf_nan)
            if key in self.seen:
                return False
            self.seen.add(key)
            target = self.definitions.get(node["schema_ref"])
            return target is None or self.admits(target, allow_inf_nan=allow_inf_nan)
        return True  # "any", "function-plain", "complex", "json", a kind added later...

    def any_admits(self, nodes: Any, allow_inf_nan: bool) -> bool:
        return any(self.admits(node, allow_inf_nan=allow_inf_nan) for node in nodes)


def _ours(function: Mapping[str, Any]) -> bool:
    """Whether a validator is one ``fields`` adds (``null`` means the default): it keeps values."""
    return getattr(function.get("function"), "__module__", None) == fields.__name__
