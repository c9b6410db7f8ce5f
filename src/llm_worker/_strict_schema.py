"""OpenAI strict mode for any JSON Schema, and the nulls it introduces.

``strict_schema(schema)`` rewrites a tool's ``input_schema`` into the subset
OpenAI's Structured Outputs accept (its guide, "Supported schemas"), or raises
``StrictSchemaError`` listing every place that has no strict form. The rules
are in ``docs/export.md`` ("OpenAI strict mode"); in short:

- The root is one object: a root ``$ref``/``allOf`` is merged in, a root
  ``anyOf`` keeps its one object branch, ``["object", "null"]`` becomes
  ``"object"``, and ``{"type": "object"}`` is a tool without arguments.
- Every object is closed and lists every property in ``required``. An optional
  property becomes required as it is when it accepts null already or takes one
  value (``const``); one with a default below the top level keeps its type (the
  model sends a value; the default is noted); any other becomes nullable, and
  that ``null`` means "not given": ``drop_introduced_nulls`` takes it out again.
  (With ``introduce_nulls=False``, for a structured answer, every optional
  property is required as it is.)
- Only the documented keywords stay. Constraints strict mode cannot express
  become notes in the description; what it cannot express at all (a value of
  any type, keys not named in advance, items of any type, a reference that
  resolves to nothing) is refused.

Every rewrite is linear in the size of the schema: each ``$defs`` entry is
rewritten once, and a ``$ref`` with keywords beside it is replaced by what it
refers to only when that is small (``_INLINE_LIMIT`` nodes) and not itself
being inlined, else it becomes ``{"anyOf": [{"$ref": ...}], ...keywords}``.
The output's ``$defs`` holds only the entries a ``$ref`` of it points at.
Nesting deeper than ``MAX_DEPTH`` levels is refused rather than recursed into.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, cast

from ._json_schema import (
    ANNOTATIONS,
    MAX_DEPTH,
    NOTED,
    TYPES,
    JsonSchema,
    Merged,
    NoValue,
    Refs,
    SchemaProblem,
    admits_null,
    allows_type,
    flatten,
    is_list,
    is_schema,
    json_text,
    json_type,
    merge,
    node_count,
    single_valued,
    types_of,
    values_of,
)

__all__ = ["StrictSchemaError", "drop_introduced_nulls", "strict_schema"]

_INLINE_LIMIT = 32  # the largest schema (in nodes) a $ref with siblings is replaced by
_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
# Regular-expression syntax OpenAI's pattern engine refuses: look-around, backreferences,
# atomic groups, conditionals, recursion.
_UNSUPPORTED_REGEX = re.compile(r"\(\?(?:[=!]|<[=!]|>|\(|R|\d)|\\[1-9]|\\k<")
_PLACEHOLDER: JsonSchema = {"type": "null"}


class StrictSchemaError(Exception):
    """A schema with places that have no strict form; ``problems`` says which and why."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(problems)
        self.problems = problems


def strict_schema(schema: Mapping[str, Any], *, introduce_nulls: bool = True) -> JsonSchema:
    """``schema`` rewritten for OpenAI strict mode (new dicts), or ``StrictSchemaError``.

    ``introduce_nulls=False`` is for a value read as it comes (a structured final
    answer), where no ``drop_introduced_nulls`` runs: an optional property is then
    required as it is, never made nullable, so the model always sends a value of
    its own type.
    """
    return _Rewriter(dict(schema), introduce_nulls=introduce_nulls).run()


class _Rewriter:
    """One rewrite: the root, then each referenced ``$defs`` entry once, from a work list."""

    def __init__(self, root: JsonSchema, *, introduce_nulls: bool = True) -> None:
        self.refs = Refs(root)
        self.introduce_nulls = introduce_nulls
        self.problems: list[str] = []
        self.names: dict[str, str] = {}  # ref -> name in the output's $defs
        self.queue: list[str] = []
        self.defs: dict[str, JsonSchema] = {}
        self.inlining: list[str] = []
        self.sizes: dict[str, int] = {}
        # Merging allOf/anyOf copies schemas: bound the whole rewrite's work.
        self.budget = 50 * node_count(root) + 10_000

    def run(self) -> JsonSchema:
        result: JsonSchema = {}
        try:
            result = self.root(self.refs.root)
            done = 0
            while done < len(self.queue):
                ref = self.queue[done]
                done += 1
                try:
                    self.defs[self.names[ref]] = self.node(self.refs.resolve(ref), _path_of(ref), 1)
                except NoValue:
                    self.problems.append(f"{_where(_path_of(ref))}: no value satisfies this schema")
        except _OverBudget:
            self.problems.append("the schema is too large once its allOf and $refs are merged")
        except RecursionError:
            self.problems.append(f"the schema nests deeper than {MAX_DEPTH} levels")
        if self.problems:
            raise StrictSchemaError(self.problems)
        defs = _used_defs(result, self.defs)
        if defs:
            result["$defs"] = defs
        return result

    # -- nodes ---------------------------------------------------------------------------

    def root(self, schema: JsonSchema) -> JsonSchema:
        try:
            node = flatten(schema, self.refs)
            branches = node.get("anyOf", node.get("oneOf"))
            if is_list(branches):
                node = self.root_branch(node, branches)
            types = types_of(node)
            if types is not None and "object" not in types:
                raise SchemaProblem(
                    f"the arguments must be an object, and this schema allows {_kinds(types)}"
                )
            node = {**node, "type": "object"}
            result: JsonSchema = {"type": "object"}
            self.closed_object(node, result, "", 1, top=True)
            return _annotated(result, node, _notes(node))
        except NoValue:
            self.problems.append("at the top level: no arguments can satisfy this schema")
        except SchemaProblem as exc:
            self.problems.append(f"at the top level: {exc}")
        return {"type": "object"}

    def root_branch(self, node: JsonSchema, branches: list[Any]) -> JsonSchema:
        """The one ``anyOf`` branch a root can take (arguments are always an object)."""
        own = {k: v for k, v in node.items() if k not in ("anyOf", "oneOf")}
        objects: list[JsonSchema] = []
        for branch in branches:
            try:
                merged = merge([own, flatten(branch, self.refs)])
            except NoValue:
                continue
            types = types_of(merged)
            if types is None or "object" in types:
                objects.append(merged)
        if len(objects) != 1:
            raise SchemaProblem(
                "the arguments must be one object; an anyOf of several objects at the top level "
                "has no strict form"
                if objects
                else "the arguments must be an object, and no branch of its anyOf is one"
            )
        return objects[0]

    def node(self, schema: object, path: str, depth: int) -> JsonSchema:
        """The strict form of ``schema``: problems are recorded, ``NoValue`` propagates."""
        try:
            return self.rewrite(schema, path, depth)
        except SchemaProblem as exc:
            self.problems.append(f"{_where(path)}: {exc}")
            return dict(_PLACEHOLDER)

    def rewrite(self, schema: object, path: str, depth: int) -> JsonSchema:
        self.spend(1)
        if depth > MAX_DEPTH:
            raise SchemaProblem(f"the schema nests deeper than {MAX_DEPTH} levels")
        if schema is True or schema == {}:
            raise SchemaProblem("a value of any type (no 'type') has no strict form")
        if not is_schema(schema):
            raise NoValue
        ref = schema.get("$ref")
        if isinstance(ref, str) and all(k in ANNOTATIONS for k in schema if k != "$ref"):
            return self.reference(schema, ref, path, depth)
        node = flatten(schema, self.refs) if "$ref" in schema or "allOf" in schema else schema
        if "anyOf" in node and "oneOf" in node:
            raise SchemaProblem("anyOf and oneOf in one schema have no strict form")
        branches = node.get("anyOf", node.get("oneOf"))
        if branches is not None:
            if not is_list(branches):
                raise SchemaProblem("'anyOf' is not a list")
            return self.any_of(node, branches, path, depth)
        return self.typed(node, path, depth)

    def reference(self, schema: JsonSchema, ref: str, path: str, depth: int) -> JsonSchema:
        # The definition is named (and queued) only where a $ref to it is written: an
        # inlined reference needs none.
        siblings = {k: v for k, v in schema.items() if k != "$ref"}
        if not any(k in siblings for k in ("title", "description", "default")):
            return {"$ref": f"#/$defs/{self.name(ref)}"}
        target = self.refs.resolve(ref)
        if is_schema(target) and not self.inlining and self.size(ref, target) <= _INLINE_LIMIT:
            # Small: the referenced schema with the siblings on top, as the openai SDK does
            # (one level deep: references inside it are wrapped, so the output stays linear).
            self.inlining.append(ref)
            try:
                return self.rewrite({**target, **siblings}, path, depth + 1)
            finally:
                self.inlining.pop()
        # Strict mode refuses keywords beside $ref, but takes them beside anyOf.
        wrapped = {"anyOf": [{"$ref": f"#/$defs/{self.name(ref)}"}]}
        return _annotated(wrapped, siblings, _notes(siblings))

    def any_of(self, node: JsonSchema, branches: list[Any], path: str, depth: int) -> JsonSchema:
        own = {k: v for k, v in node.items() if k not in ("anyOf", "oneOf")}
        assertions = {k: v for k, v in own.items() if k not in ANNOTATIONS}
        kind = "anyOf" if "anyOf" in node else "oneOf"
        results = _Distinct()
        for i, branch in enumerate(branches):
            try:
                if assertions:  # keywords beside anyOf apply to every branch
                    self.spend(len(assertions))
                    branch = merge([assertions, flatten(branch, self.refs)])
                result = self.node(branch, f"{_join(path, kind, str(i))}", depth + 1)
            except NoValue:
                continue
            for each in result["anyOf"] if set(result) == {"anyOf"} else [result]:
                results.add(each)
        if not results:
            raise NoValue
        self.check_nulls_are_unambiguous(branches, assertions)
        notes = _notes(own)
        if len(results) == 1 and not any(k in own for k in ("title", "description")) and not notes:
            return results[0]
        return _annotated({"anyOf": list(results)}, own, notes)

    def typed(self, node: JsonSchema, path: str, depth: int) -> JsonSchema:
        types = types_of(node)
        values = values_of(node)
        if values is not None:
            if types is not None:
                values = [v for v in values if allows_type(types, json_type(v))]
            if not values:
                raise NoValue
            kinds = [t for t in TYPES if any(_value_kind(v) == t for v in values)]
        elif types is None:
            raise SchemaProblem("a value of any type (no 'type') has no strict form")
        else:
            kinds = [t for t in TYPES if t in types and not (t == "integer" and "number" in types)]
        notes = _notes(node)
        leaves: list[JsonSchema] = []
        for kind in kinds:
            leaf_values = None if values is None else [v for v in values if _value_kind(v) == kind]
            try:
                leaves.append(self.leaf(kind, node, leaf_values, notes, path, depth))
            except NoValue:
                continue
        if not leaves:
            raise NoValue
        result = leaves[0] if len(leaves) == 1 else {"anyOf": leaves}
        return _annotated(result, node, notes)

    def leaf(
        self,
        kind: str,
        node: JsonSchema,
        values: list[Any] | None,
        notes: list[str],
        path: str,
        depth: int,
    ) -> JsonSchema:
        result: JsonSchema = {"type": kind}
        if values is not None:
            if "const" in node and len(values) == 1:
                result["const"] = values[0]
            else:
                result["enum"] = values
        if kind == "string":
            pattern = node.get("pattern")
            if isinstance(pattern, str):
                if _UNSUPPORTED_REGEX.search(pattern):
                    notes.append(f"pattern: {pattern}")
                else:
                    result["pattern"] = pattern
            fmt = node.get("format")
            if isinstance(fmt, str):
                if fmt in _FORMATS:
                    result["format"] = fmt
                else:
                    notes.append(f"format: {fmt}")
        elif kind in ("number", "integer"):
            _numeric(node, result)
        elif kind == "array":
            self.array_items(node, result, path, depth)
        elif kind == "object":
            self.closed_object(node, result, path, depth, top=False)
        return result

    def array_items(self, node: JsonSchema, result: JsonSchema, path: str, depth: int) -> None:
        for key in ("minItems", "maxItems"):
            if isinstance(node.get(key), int) and not isinstance(node.get(key), bool):
                result[key] = node[key]
        prefix = node.get("prefixItems")
        rest, has_rest = node.get("items"), "items" in node
        if is_list(rest):  # draft 7 tuples: items is the list, additionalItems the rest
            prefix, rest, has_rest = rest, node.get("additionalItems"), "additionalItems" in node
        prefix = prefix if is_list(prefix) else []
        choices = _Distinct()
        length: int | None = None  # how many items there can be at most, if the tuple says
        for i, sub in enumerate(prefix):
            try:
                choice = self.node(sub, _join(path, "prefixItems", str(i)), depth + 1)
            except NoValue:  # nothing can stand at position i: the array ends before it
                length = i
                break
            choices.add(choice)
        max_items = result.get("maxItems")
        if length is None and (max_items is None or max_items > len(prefix)):
            if rest is False:
                length = len(prefix)
            elif not has_rest or rest is True or rest == {}:
                raise SchemaProblem(
                    "an array whose items may be any value has no strict form (give 'items' a type)"
                )
            else:
                try:
                    choice = self.node(rest, _join(path, "items"), depth + 1)
                except NoValue:
                    length = len(prefix)
                else:
                    choices.add(choice)
        if length is not None:
            result["maxItems"] = length if max_items is None else min(max_items, length)
        if not choices:  # an empty array: strict mode still wants items
            result["maxItems"] = 0
            choices.add(dict(_PLACEHOLDER))
        if result.get("minItems", 0) > result.get("maxItems", result.get("minItems", 0)):
            raise NoValue
        result["items"] = choices[0] if len(choices) == 1 else {"anyOf": list(choices)}

    def closed_object(
        self, node: JsonSchema, result: JsonSchema, path: str, depth: int, *, top: bool
    ) -> None:
        properties = node.get("properties", {})
        if not is_schema(properties):
            raise SchemaProblem("'properties' is not an object")
        extra = node.get("additionalProperties")
        if node.get("patternProperties") or (extra is not None and extra is not False):
            raise SchemaProblem(
                "an object with keys not named in advance (such as dict[str, ...]) has no strict "
                "form (strict mode needs additionalProperties false)"
            )
        if "properties" not in node and extra is None and not top:
            raise SchemaProblem(
                "an object with keys not named in advance (no 'properties') has no strict form"
            )
        listed = node.get("required", [])
        if not is_list(listed):
            raise SchemaProblem("'required' is not a list")
        required = {name for name in listed if isinstance(name, str)}
        missing = [name for name in required if name not in properties]
        if missing:
            raise NoValue  # a closed object cannot hold a required key it does not describe
        rewritten: JsonSchema = {}
        for name, sub in properties.items():
            sub_path = _join(path, "properties", name)
            try:
                strict = self.node(sub, sub_path, depth + 1)
            except NoValue:
                if name in required:
                    raise
                continue  # nothing fits: the property can only be left out
            if (
                self.introduce_nulls
                and name not in required
                and _introduces_null(sub, self.refs, top=top)
            ):
                strict = _nullable(strict)
            rewritten[name] = strict
        result["properties"] = rewritten
        result["required"] = list(rewritten)
        result["additionalProperties"] = False

    # -- references and budget -----------------------------------------------------------

    def name(self, ref: str) -> str:
        """The ``$defs`` name ``ref`` gets in the output (queued for rewriting once)."""
        name = self.names.get(ref)
        if name is not None:
            return name
        self.refs.resolve(ref)  # SchemaProblem if it points to nothing
        match = re.fullmatch(r"#/(?:\$defs|definitions)/([^/]+)", ref)
        # A name that needs no escaping in a JSON pointer or a URI fragment ("x/y" and
        # "x y" would): the output's references resolve whatever reads them.
        base = _safe_name(match.group(1)) if match else _pointer_name(ref)
        name, n = base, 1
        taken = set(self.names.values())
        while name in taken:
            n += 1
            name = f"{base}_{n}"
        self.names[ref] = name
        self.queue.append(ref)
        return name

    def size(self, ref: str, target: object) -> int:
        size = self.sizes.get(ref)
        if size is None:
            size = self.sizes[ref] = node_count(target)
        return size

    def spend(self, work: int) -> None:
        self.budget -= work
        if self.budget < 0:
            raise _OverBudget

    def check_nulls_are_unambiguous(self, branches: list[Any], assertions: JsonSchema) -> None:
        """Refuse branches a model's ``null`` could not be told apart in.

        Two object branches with the same properties, where one property's null
        would mean "not given" in one branch and ``null`` itself in the other.
        """
        seen: dict[frozenset[str], dict[str, str]] = {}
        for branch in branches:
            try:
                node = merge([assertions, flatten(branch, self.refs)])
            except (NoValue, SchemaProblem):
                continue
            properties = node.get("properties")
            if not is_schema(properties) or not properties:
                continue
            states = _null_states(node, self.refs, top=False)
            other = seen.setdefault(frozenset(properties), states)
            for name, state in states.items():
                if {state, other.get(name)} == {_NOT_GIVEN, _NULL}:
                    raise SchemaProblem(
                        f"anyOf branches with the same properties, where a null for {name!r} "
                        f"means 'not given' in one and null in another, have no strict form"
                    )


class _OverBudget(Exception):
    pass


def _used_defs(root: JsonSchema, defs: dict[str, JsonSchema]) -> dict[str, JsonSchema]:
    """The entries of ``defs`` a ``$ref`` in ``root``, or in an entry used, refers to.

    A rewrite that was dropped (an ``anyOf`` branch or an optional property
    nothing satisfies) may have named a definition no ``$ref`` of the output
    points at any more.
    """
    used: set[str] = set()
    pending = [root]
    while pending:
        for name in _referenced_names(pending.pop()):
            if name not in used and name in defs:
                used.add(name)
                pending.append(defs[name])
    return {name: schema for name, schema in defs.items() if name in used}


def _referenced_names(schema: JsonSchema) -> list[str]:
    """The ``$defs`` names the ``$ref``s of a strict ``schema`` (not its ``$defs``) point at.

    A strict schema nests schemas in ``properties``, ``items`` and ``anyOf`` only.
    """
    names: list[str] = []
    stack: list[object] = [schema]
    while stack:
        found = stack.pop()
        if not isinstance(found, dict):
            continue
        node = cast("dict[str, object]", found)
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            names.append(ref.removeprefix("#/$defs/"))
        properties = node.get("properties")
        if isinstance(properties, dict):
            stack.extend(cast("dict[str, object]", properties).values())
        stack.append(node.get("items"))
        branches = node.get("anyOf")
        if isinstance(branches, list):
            stack.extend(cast("list[object]", branches))
    return names


class _Distinct(list[JsonSchema]):
    """Schemas in order, each once (compared by their JSON text: linear, not pairwise)."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[str] = set()

    def add(self, schema: JsonSchema) -> None:
        text = json_text(schema)
        if text not in self._seen:
            self._seen.add(text)
            self.append(schema)


_NOT_GIVEN, _NULL, _NO_NULL = "not given", "null", "no null"


def _null_states(node: JsonSchema, refs: Refs, *, top: bool) -> dict[str, str]:
    """What a model's ``null`` for each property of an object means in strict mode."""
    properties = node.get("properties", {})
    listed = node.get("required", [])
    required: set[str] = set()
    if is_list(listed):
        required = {name for name in listed if isinstance(name, str)}
    states: dict[str, str] = {}
    for name, sub in properties.items() if is_schema(properties) else ():
        if name not in required and _introduces_null(sub, refs, top=top):
            states[name] = _NOT_GIVEN
        elif admits_null(sub, refs):
            states[name] = _NULL
        else:
            states[name] = _NO_NULL
    return states


def _introduces_null(schema: object, refs: Refs, *, top: bool) -> bool:
    """Whether strict mode makes this optional property nullable, null meaning "not given".

    Not when null is valid already, when it takes one value, or (below the top
    level) when it has a default other than null: the model then sends a value.
    """
    if single_valued(schema) or admits_null(schema, refs):
        return False
    return top or not _has_default(schema)


def _has_default(schema: object) -> bool:
    if not is_schema(schema):
        return False
    parts = schema.get("allOf")
    if isinstance(parts, Merged):
        return any(_has_default(part) for part in parts)
    return schema.get("default") is not None


def _nullable(schema: JsonSchema) -> JsonSchema:
    """``schema`` or ``null``; the description moves outside, next to the choices."""
    core = {k: v for k, v in schema.items() if k != "description"}
    outer = {k: v for k, v in schema.items() if k == "description"}
    branches = core["anyOf"] if set(core) == {"anyOf"} else [core]
    return {"anyOf": [*branches, {"type": "null"}], **outer}


def _numeric(node: JsonSchema, result: JsonSchema) -> None:
    for key in ("minimum", "maximum", "multipleOf"):
        if _is_number(node.get(key)):
            result[key] = node[key]
    for key, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        value = node.get(key)
        if value is True and bound in result:  # draft 4: a flag on the bound
            result[key] = result.pop(bound)
        elif _is_number(value):
            result[key] = value


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _value_kind(value: object) -> str:
    kind = json_type(value)
    return "number" if kind == "integer" and isinstance(value, float) else kind


def _notes(node: JsonSchema) -> list[str]:
    """What the description keeps of ``node``'s default and of constraints strict mode lacks."""
    notes: list[str] = []
    if node.get("default") is not None:  # a None default needs no note: the type admits null
        notes.append(f"default: {json_text(node['default'])}")
    notes.extend(f"{key}: {json_text(node[key])}" for key in node if key in NOTED)
    return notes


def _annotated(result: JsonSchema, node: JsonSchema, notes: list[str]) -> JsonSchema:
    """``result`` with ``node``'s title and description, and the notes added to it."""
    title = node.get("title")
    if isinstance(title, str):
        result["title"] = title
    description = node.get("description")
    text = description if isinstance(description, str) and description else ""
    if notes:
        note = f"({'; '.join(notes)})"
        text = f"{text} {note}" if text else note
    if text:
        result["description"] = text
    return result


def _kinds(types: set[str]) -> str:
    return " or ".join(t for t in TYPES if t in types)


def _join(path: str, *parts: str) -> str:
    return "/".join((path, *parts)) if path else "/".join(parts)


def _where(path: str) -> str:
    return f"at {path}" if path else "at the top level"


def _path_of(ref: str) -> str:
    return ref[2:] if ref.startswith("#/") else "(the whole schema)"


def _safe_name(token: str) -> str:
    """A ``$defs`` key from a reference's last token (a URI fragment, then a JSON pointer)."""
    from urllib.parse import unquote

    key = unquote(token).replace("~1", "/").replace("~0", "~")
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", key).strip("_") or "def"


def _pointer_name(ref: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", ref.lstrip("#/")).strip("_")
    return name or "root"


# ---------------------------------------------------------------------------------------
# Undoing it: the nulls strict mode introduced mean "not given".

_MAX_ARGUMENT_DEPTH = MAX_DEPTH


def drop_introduced_nulls(
    input_schema: Mapping[str, Any], arguments: dict[str, Any]
) -> dict[str, Any]:
    """``arguments`` without the ``null``s OpenAI strict mode introduced, which mean "not given".

    ``input_schema`` is the tool's own schema (not the strict rewrite);
    ``arguments`` the parsed JSON object a model sent. A ``null`` is dropped
    where strict mode made an optional property nullable: at the top level,
    every optional argument whose schema does not accept null; below it, such
    a property when it has no default (``docs/export.md`` has the rules). A
    ``null`` the schema accepts is kept: it means null.

    Cheap when nothing is dropped: with no ``null`` in ``arguments`` it returns
    them after one scan, without reading the schema (a caller holding the JSON
    text can skip the call when ``"null"`` does not occur in it). It never
    changes ``arguments``: what it drops from is copied. It never raises: a
    schema it cannot read leaves the arguments as they are.
    """
    if not _has_null(arguments):
        return arguments
    refs = Refs(dict(input_schema))
    try:
        return _drop_in_object(arguments, refs.root, refs, top=True, depth=0)
    except (SchemaProblem, NoValue, RecursionError):
        return arguments


def _has_null(value: object) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if item is None:
            return True
        if isinstance(item, dict):
            stack.extend(item.values())  # pyright: ignore[reportUnknownArgumentType]
        elif isinstance(item, list):
            stack.extend(item)  # pyright: ignore[reportUnknownArgumentType]
    return False


def _drop(value: Any, schema: object, refs: Refs, depth: int) -> Any:
    if depth > _MAX_ARGUMENT_DEPTH or not _has_null(value):
        return value
    if isinstance(value, dict):
        return _drop_in_object(value, schema, refs, top=False, depth=depth)  # pyright: ignore[reportUnknownArgumentType]
    if isinstance(value, list):
        return _drop_in_array(value, schema, refs, depth)  # pyright: ignore[reportUnknownArgumentType]
    return value


def _drop_in_object(
    value: dict[str, Any], schema: object, refs: Refs, *, top: bool, depth: int
) -> dict[str, Any]:
    node = _branch_for(value, flatten(schema, refs), refs, top=top)
    if node is None:
        return value
    properties = node.get("properties", {})
    if not is_schema(properties):
        return value
    states = _null_states(node, refs, top=top)
    result: dict[str, Any] = {}
    changed = False
    for key, item in value.items():
        if item is None and states.get(key) == _NOT_GIVEN:
            changed = True
            continue
        sub = properties.get(key)
        new = item if sub is None or item is None else _drop(item, sub, refs, depth + 1)
        changed = changed or new is not item
        result[key] = new
    return result if changed else value


def _drop_in_array(value: list[Any], schema: object, refs: Refs, depth: int) -> list[Any]:
    node = _branch_for(value, flatten(schema, refs), refs, top=False)
    if node is None:
        return value
    prefix = node.get("prefixItems")
    items = node.get("items")
    if is_list(items):
        prefix, items = items, node.get("additionalItems")
    if is_list(prefix):
        # Strict mode let any of a tuple's item types stand anywhere: so may the model's.
        items = {"anyOf": [*prefix, *([items] if is_schema(items) else [])]}
    result: list[Any] = []
    for item in value:
        result.append(item if not is_schema(items) else _drop(item, items, refs, depth + 1))
    return result if any(a is not b for a, b in zip(result, value, strict=True)) else value


def _branch_for(value: Any, node: JsonSchema, refs: Refs, *, top: bool) -> JsonSchema | None:
    """The node (or ``anyOf`` branch) a strict-mode ``value`` was written for, if one fits.

    For an object: the first branch with exactly its keys (strict mode sends
    every property, and only those) whose properties may be null where it is;
    else the first with more (strict mode leaves out a property nothing fits).
    For an array: the first whose items may be of the kinds its items are.
    """
    branches = node.get("anyOf", node.get("oneOf"))
    if not is_list(branches):
        return node
    own = {k: v for k, v in node.items() if k not in ("anyOf", "oneOf")}
    kind = "object" if isinstance(value, dict) else "array"
    near: JsonSchema | None = None  # a branch with more properties (strict may have cut some)
    for branch in branches:
        try:
            merged = merge([own, flatten(branch, refs)])
        except (NoValue, SchemaProblem):
            continue
        if is_list(merged.get("anyOf", merged.get("oneOf"))):
            found = _branch_for(value, merged, refs, top=top)
            if found is not None:
                return found
            continue
        types, values = types_of(merged), values_of(merged)
        if types is not None and kind not in types:
            continue
        if values is not None and all(json_type(v) != kind for v in values):
            continue
        if kind == "array":
            items = cast("list[Any]", value)
            if _length_fits(items, merged) and _items_fit(items, merged, refs):
                return merged
            continue
        keys = set(cast("dict[str, Any]", value))
        properties = merged.get("properties", {})
        if not is_schema(properties) or not keys <= set(properties):
            continue
        states = _null_states(merged, refs, top=top)
        if any(states.get(k) == _NO_NULL for k in keys if value[k] is None):
            continue
        if keys == set(properties):
            return merged
        near = near or merged
    return near


def _length_fits(value: list[Any], node: JsonSchema) -> bool:
    """Whether ``node``'s ``minItems``/``maxItems`` (which strict mode keeps) allow ``value``:
    an empty tuple's branch is no branch for two items."""
    shortest, longest = node.get("minItems", 0), node.get("maxItems")
    if isinstance(shortest, int) and len(value) < shortest:
        return False
    return not (isinstance(longest, int) and len(value) > longest)


def _items_fit(value: list[Any], node: JsonSchema, refs: Refs) -> bool:
    """Whether each item of ``value`` is of a kind (object, string...) ``node``'s items allow."""
    prefix = node.get("prefixItems")
    items = node.get("items")
    if is_list(items):
        prefix, items = items, node.get("additionalItems")
    choices = [*(prefix if is_list(prefix) else []), *([items] if is_schema(items) else [])]
    if not choices:
        return True
    return all(any(_kind_fits(item, choice, refs) for choice in choices) for item in value)


def _kind_fits(value: Any, schema: object, refs: Refs) -> bool:
    """Whether ``schema`` allows values of ``value``'s JSON type (its branches included)."""
    try:
        node = flatten(schema, refs)
    except (NoValue, SchemaProblem):
        return False
    kind = json_type(value)
    types, values = types_of(node), values_of(node)
    if types is not None and not allows_type(types, kind):
        return False
    if values is not None and all(json_type(v) != kind for v in values):
        return False
    branches = node.get("anyOf", node.get("oneOf"))
    if is_list(branches):
        own = {k: v for k, v in node.items() if k not in ("anyOf", "oneOf")}
        return any(_kind_fits(value, {**own, "allOf": [branch]}, refs) for branch in branches)
    return True
