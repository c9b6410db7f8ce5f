"""``_codegen.introspect``: one ``@tool`` method read into a ``MethodSpec``, or its problems."""

from collections.abc import Callable
from dataclasses import InitVar
from typing import Annotated, Any, ClassVar, Final, Literal, get_args, get_origin

import annotated_types
import pytest
from pydantic import BaseModel, Field
from pydantic.fields import FieldInfo

from llm_worker import Description
from llm_worker._codegen.introspect import (
    REQUIRED,
    MethodSpec,
    ParameterSpec,
    annotation_key,
    introspect_method,
)
from llm_worker._options import ToolOptions


class Point(BaseModel):
    x: int
    y: int


class Unsupported:
    pass


def _introspect(cls: type, attr_name: str, options: ToolOptions | None = None):
    errors: list[str] = []
    func = cls.__dict__[attr_name]
    spec = introspect_method(cls, attr_name, func, options or ToolOptions(), errors)
    return spec, errors


class App:
    async def search(
        self,
        query: Annotated[str, Description("what to find")],
        limit: Annotated[int, Field(ge=1, description="how many")] = 10,
        near: Point | None = None,
        *,
        mode: Literal["fast", "exact"] = "fast",
    ) -> list[str]:
        """Search things.

        Args:
            query: ignored, Description wins
            limit: ignored, Field wins
            near: close to this point
        """
        return []

    def plain(self) -> str:
        return ""

    def string_annotations(self, p: "Point", n: "int") -> str:
        return ""

    def class_local(self, kind: "Kind") -> str:
        return ""

    Kind = Literal["a", "b"]


class TestIntrospectMethod:
    def test_spec_of_a_full_method(self):
        """Name, parameters, defaults, descriptions, async-ness and options are read."""
        options = ToolOptions(name="find")
        spec, errors = _introspect(App, "search", options)
        assert errors == []
        assert isinstance(spec, MethodSpec)
        assert spec.attr_name == "search"
        assert spec.tool_name == "find"
        assert spec.func is App.__dict__["search"]
        assert spec.is_async is True
        assert spec.options is options
        assert spec.description == "Search things."
        assert [p.name for p in spec.parameters] == ["query", "limit", "near", "mode"]

    def test_description_is_taken_out_of_annotated(self):
        """Description text moves to the spec and leaves the annotation."""
        spec, _ = _introspect(App, "search")
        assert spec.parameters[0] == ParameterSpec("query", str, REQUIRED, "what to find")

    def test_field_metadata_is_kept_in_annotated(self):
        """Field(...) stays in the annotation; its description is used."""
        spec, _ = _introspect(App, "search")
        limit = spec.parameters[1]
        assert (limit.name, limit.default, limit.description) == ("limit", 10, "how many")
        assert get_origin(limit.annotation) is Annotated
        base, field = get_args(limit.annotation)
        assert base is int
        assert isinstance(field, FieldInfo)

    def test_docstring_fills_in_missing_descriptions(self):
        """Without Description or Field text, the docstring's entry is used."""
        spec, _ = _introspect(App, "search")
        assert spec.parameters[2] == ParameterSpec(
            "near", Point | None, None, "close to this point"
        )
        assert spec.parameters[3] == ParameterSpec("mode", Literal["fast", "exact"], "fast", None)

    def test_plain_method(self):
        """A plain def without docstring: not async, no parameters, fallback description."""
        spec, errors = _introspect(App, "plain")
        assert errors == []
        assert spec.is_async is False
        assert spec.parameters == ()
        assert spec.description == "Tool: plain"

    def test_fallback_uses_the_tool_name(self):
        """The fallback description names the tool, not the method."""
        spec, _ = _introspect(App, "plain", ToolOptions(name="renamed"))
        assert spec.description == "Tool: renamed"

    def test_string_annotations_resolve(self):
        """String annotations resolve against the function's module."""
        spec, errors = _introspect(App, "string_annotations")
        assert errors == []
        assert [(p.name, p.annotation) for p in spec.parameters] == [("p", Point), ("n", int)]

    def test_a_field_default_joins_the_annotation(self):
        """`x: T = Field(5, ge=1)` reads as `x: Annotated[T, Field(5, ge=1)] = 5`."""

        def f(self, x: int = Field(5, ge=1, description="from Field")) -> str:
            return ""

        spec, errors = _introspect(type("Holder", (), {"f": f}), "f")
        assert errors == []
        (x,) = spec.parameters
        assert (x.default, x.description, x.default_factory) == (5, "from Field", None)
        base, field = get_args(x.annotation)
        assert base is int
        assert isinstance(field, FieldInfo)

    def test_a_default_factory_is_given_the_validated_arguments(self):
        """Factories are kept in one form: given the arguments validated so far."""

        def f(
            self,
            plain: list[int] = Field(default_factory=lambda: [1]),  # noqa: B008
            with_data: int = Field(default_factory=lambda data: len(data)),
        ) -> str:
            return ""

        spec, _ = _introspect(type("Holder", (), {"f": f}), "f")
        plain, with_data = spec.parameters
        assert plain.default is REQUIRED
        assert plain.default_factory({"a": 1}) == [1]
        assert with_data.default_factory({"a": 1, "b": 2}) == 2

    def test_class_body_names_resolve(self):
        """String annotations may name things defined in the class body."""
        spec, errors = _introspect(App, "class_local")
        assert errors == []
        assert spec.parameters[0].annotation == Literal["a", "b"]


class TestDescriptions:
    def test_a_plain_string_in_annotated_is_a_description(self):
        """Annotated[int, "First number"], as the OpenAI Agents SDK and FastMCP read it."""

        def f(self, a: Annotated[int, "First number"], b: Annotated[str, "x", "Last wins"]) -> str:
            return ""

        spec = _spec(f)
        assert spec.parameters[0] == ParameterSpec("a", int, REQUIRED, "First number")
        assert spec.parameters[1] == ParameterSpec("b", str, REQUIRED, "Last wins")

    def test_precedence(self):
        """Description, then Field(description=), then a plain string, then the docstring."""

        def f(
            self,
            a: Annotated[int, "string", Field(description="field"), Description("described")],
            b: Annotated[int, "string", Field(description="field")],
            c: Annotated[int, "string"],
            d: int,
            e: Annotated[int, "string"] = Field(1, description="field default"),
        ) -> str:
            """Do it.

            Args:
                a: doc
                b: doc
                c: doc
                d: doc
                e: doc
            """
            return ""

        spec = _spec(f)
        assert [p.description for p in spec.parameters] == [
            "described",
            "field",
            "string",
            "doc",
            "field default",
        ]

    def test_a_string_leaves_the_annotation_and_field_stays(self):
        """The string is taken out; Field(...) constraints stay in the annotation."""

        def f(self, a: Annotated[int, "n", Field(ge=1)]) -> str:
            return ""

        [param] = _spec(f).parameters
        assert get_origin(param.annotation) is Annotated
        assert [type(m) for m in get_args(param.annotation)[1:]] == [FieldInfo]

    def test_an_unreadable_docstring_warns_and_the_class_still_builds(self):
        """A section docstring-parser cannot read warns, naming Class.method and the line."""

        def f(self, a: int, b: int) -> str:
            """Do it.

            :param a - no colon here
            :param b: The b.
            """
            return ""

        with pytest.warns(UserWarning, match=r"^Holder\.f: cannot read") as caught:
            spec = _spec(f)
        [warning] = caught
        line = f.__code__.co_firstlineno + 3
        assert str(warning.message) == (
            f"Holder.f: cannot read the parameter descriptions in its docstring, line {line}: "
            "':param a - no colon here' (Error parsing meta information near \":param a - no "
            "colon here\".); that section stays in the tool's description as written (fix the "
            "line to give the parameters their descriptions)"
        )
        assert (warning.filename, warning.lineno) == (__file__, line)
        assert spec.description == "Do it.\n\n:param a - no colon here"
        assert [p.description for p in spec.parameters] == [None, "The b."]


def _spec(method: Callable[..., Any]) -> MethodSpec:
    cls = type("Holder", (), {method.__name__: method})
    errors: list[str] = []
    spec = introspect_method(cls, method.__name__, method, ToolOptions(), errors)
    assert errors == []
    assert spec is not None
    return spec


def _problems(*methods: Callable[..., Any], options: ToolOptions | None = None) -> list[str]:
    cls = type("Holder", (), {m.__name__: m for m in methods})
    errors: list[str] = []
    for method in methods:
        spec = introspect_method(cls, method.__name__, method, options or ToolOptions(), errors)
        assert (spec is None) == bool(errors)
    return errors


class TestUnionOrder:
    """``list[str | float] == list[float | str]``, and typing caches ``Annotated`` by equality."""

    def test_description_taken_out_of_a_rebuilt_annotation(self):
        """With other metadata left, each parameter keeps its own union order."""
        min_one = annotated_types.MinLen(1)

        class StrFirst:
            def pick(self, x: Annotated[list[str | float], Description("a"), min_one]) -> str:
                return ""

        class FloatFirst:
            def pick(self, x: Annotated[list[float | str], Description("b"), min_one]) -> str:
                return ""

        for cls, order in ((StrFirst, "str | float"), (FloatFirst, "float | str")):
            spec, errors = _introspect(cls, "pick")
            assert errors == []
            assert spec is not None
            (x,) = spec.parameters
            assert f"list[{order}]" in repr(x.annotation)
            assert min_one in x.annotation.__metadata__

    def test_one_field_object_defaulting_two_parameters(self):
        """A Field(...) default shared by two tools joins each one's own annotation."""
        shared = Field(default_factory=list)

        class StrFirst:
            def pick(self, x: list[str | float] = shared) -> str:
                return ""

        class FloatFirst:
            def pick(self, x: list[float | str] = shared) -> str:
                return ""

        for cls, order in ((StrFirst, "str | float"), (FloatFirst, "float | str")):
            spec, errors = _introspect(cls, "pick")
            assert errors == []
            assert spec is not None
            (x,) = spec.parameters
            assert repr(get_args(x.annotation)[0]) == f"list[{order}]"
            assert x.default_factory is not None
            assert x.default_factory({}) == []


class TestProblems:
    def test_var_positional(self):
        """*args is reported."""

        def f(self, *items: int) -> str:
            return ""

        assert _problems(f) == ["f: *items is not supported; a tool takes named arguments only"]

    def test_var_keyword(self):
        """**kwargs is reported."""

        def f(self, **options: int) -> str:
            return ""

        assert _problems(f) == ["f: **options is not supported; a tool takes named arguments only"]

    def test_missing_annotation(self):
        """Each unannotated parameter is reported, with an example fix."""

        def f(self, a, b: int, c) -> str:
            return ""

        assert _problems(f) == [
            "f: parameter 'a' has no type annotation (add one, e.g. a: str)",
            "f: parameter 'c' has no type annotation (add one, e.g. c: str)",
        ]

    def test_alias(self):
        """An alias would make the argument's name differ from the parameter's."""

        def f(
            self,
            a: int = Field(1, alias="b"),
            c: Annotated[int, Field(validation_alias="d")] = 2,
        ) -> str:
            return ""

        assert _problems(f) == [
            "f: parameter 'a' has the alias 'b'; a tool's arguments are named by its "
            "parameters, so rename the parameter instead",
            "f: parameter 'c' has the alias 'd'; a tool's arguments are named by its "
            "parameters, so rename the parameter instead",
        ]

    def test_class_attribute_qualifiers(self):
        """ClassVar, Final and InitVar mark class attributes; pydantic would drop the field."""

        def f(
            self,
            a: ClassVar[int],
            b: Final[int],
            c: Annotated[Final[int], Description("c")],
            d: InitVar[int],
        ) -> str:
            return ""

        assert _problems(f) == [
            f"f: parameter {name!r} is marked {marker}, which only class attributes take; "
            f"drop it from the annotation"
            for name, marker in [
                ("a", "ClassVar"),
                ("b", "Final"),
                ("c", "Final"),
                ("d", "InitVar"),
            ]
        ]

    def test_field_pydantic_refuses(self):
        """A Field(...) combination pydantic refuses is reported, in pydantic's words."""

        def f(self, a: Annotated[list[int], Field(default_factory=list)] = Field([1])) -> str:  # noqa: B008
            return ""

        assert _problems(f) == ["f: parameter 'a': cannot specify both default and default_factory"]

    def test_a_constraint_pydantic_refuses_shows_its_reason(self):
        """A regex with look-around: pydantic's actual reason, and the Field as written."""

        def f(self, a: Annotated[str, Field(pattern=r"^(?!a)b")]) -> str:
            return ""

        assert _problems(f) == [
            "f: parameter 'a' has type Annotated[str, Field(pattern='^(?!a)b')], which pydantic "
            "cannot validate or describe in JSON Schema (regex parse error: ^(?!a)b error: "
            "look-around, including look-ahead and look-behind, is not supported)"
        ]

    def test_positional_only(self):
        """Positional-only parameters are reported."""

        def f(self, a: int, /, b: int) -> str:
            return ""

        assert _problems(f) == ["f: parameter 'a' is positional-only; tools pass arguments by name"]

    @pytest.mark.parametrize("name", ["_private", "model_config"])
    def test_reserved_parameter_names(self, name):
        """Names pydantic reserves are reported."""
        namespace: dict[str, Any] = {}
        exec(f"def f(self, {name}: int) -> str:\n    return ''", namespace)
        assert _problems(namespace["f"]) == [
            f"f: parameter {name!r} cannot be an argument name (pydantic reserves it); rename it"
        ]

    def test_unresolvable_forward_reference(self):
        """An annotation naming something undefined names the missing name."""

        def f(self, a: "NotDefinedAnywhere", b: int) -> str:  # noqa: F821
            return ""

        assert _problems(f) == [
            "f: cannot resolve the annotation of parameter 'a' (NameError: name "
            "'NotDefinedAnywhere' is not defined); define or import it before the class"
        ]

    def test_unsupported_type(self):
        """A type pydantic cannot handle is reported with pydantic's reason."""

        def f(self, a: Unsupported) -> str:
            return ""

        [problem] = _problems(f)
        assert problem.startswith(
            "f: parameter 'a' has type Unsupported, which pydantic cannot validate or "
            "describe in JSON Schema (Unable to generate pydantic-core schema for "
        )

    def test_unsupported_type_inside_a_container(self):
        """An unsupported type nested in list/dict/union is found."""

        def f(self, a: dict[str, list[Unsupported | None]]) -> str:
            return ""

        [problem] = _problems(f)
        assert problem.startswith("f: parameter 'a' has type dict[str, list[")
        assert "which pydantic cannot validate or describe in JSON Schema" in problem

    def test_callable(self):
        """A Callable has no JSON Schema."""

        def f(self, a: Callable[[], int]) -> str:
            return ""

        [problem] = _problems(f)
        assert problem.endswith(
            "which pydantic cannot validate or describe in JSON Schema "
            "(Cannot generate a JsonSchema for core_schema.CallableSchema)"
        )

    def test_no_self(self):
        """A method without a first positional parameter is reported."""

        def f() -> str:
            return ""

        def g(*, x: int) -> str:
            return ""

        assert _problems(f, g) == [
            "f: a tool method must take 'self' as its first parameter",
            "g: a tool method must take 'self' as its first parameter",
        ]

    def test_invalid_tool_name(self):
        """A tool name providers would refuse is reported."""

        def f(self) -> str:
            return ""

        assert _problems(f, options=ToolOptions(name="no spaces")) == [
            "f: tool name 'no spaces' is not valid; use 1-64 letters, digits, '_' or '-' "
            "(what model providers accept)"
        ]

    def test_generators(self):
        """Generator and async generator methods are reported."""

        def f(self) -> Any:
            yield 1

        async def g(self) -> Any:
            yield 1

        assert _problems(f, g) == [
            "f: generator methods cannot be tools; return a list instead",
            "g: generator methods cannot be tools; return a list instead",
        ]

    def test_all_problems_of_one_method(self):
        """Every problem of a method is reported, not just the first."""

        def f(self, *a: int, b, c: "Nowhere", **d: int) -> str:  # noqa: F821
            return ""

        assert _problems(f, options=ToolOptions(name="bad name")) == [
            "f: tool name 'bad name' is not valid; use 1-64 letters, digits, '_' or '-' "
            "(what model providers accept)",
            "f: cannot resolve the annotation of parameter 'c' (NameError: name 'Nowhere' is "
            "not defined); define or import it before the class",
            "f: *a is not supported; a tool takes named arguments only",
            "f: parameter 'b' has no type annotation (add one, e.g. b: str)",
            "f: **d is not supported; a tool takes named arguments only",
        ]

    @pytest.mark.parametrize(
        "annotation",
        [
            str,
            int,
            float,
            bool,
            list[int],
            dict[str, float],
            tuple[int, ...],
            set[str],
            Literal[1, 2],
            int | None,
            Any,
            Point,
            list[Point],
        ],
    )
    def test_supported_types(self, annotation):
        """Ordinary JSON-able types and models are accepted."""

        def f(self, a: int) -> str:
            return ""

        f.__annotations__["a"] = annotation
        assert _problems(f) == []


class TestAnnotationKey:
    def test_equal_fields_written_twice_are_one_key(self):
        """Two Field(...)s with the same attributes give one key, though each is only == itself."""
        first = Annotated[int, Field(ge=1, description="d")]
        second = Annotated[int, Field(ge=1, description="d")]
        assert first != second
        assert annotation_key(first) == annotation_key(second)
        assert hash(annotation_key(first)) == hash(annotation_key(second))

    @pytest.mark.parametrize(
        "other",
        [
            Annotated[int, Field(ge=2, description="d")],
            Annotated[int, Field(ge=True, description="d")],
            Annotated[int, Field(ge=1)],
            Annotated[bool, Field(ge=1, description="d")],
        ],
        ids=["other-bound", "bool-bound", "no-description", "other-type"],
    )
    def test_different_fields_are_different_keys(self, other):
        """Any attribute, or the base type, makes another key."""
        assert annotation_key(Annotated[int, Field(ge=1, description="d")]) != annotation_key(other)

    def test_an_explicit_none_is_another_key(self):
        """Field(description=None) overrides an earlier description; Field() does not."""
        explicit = Annotated[int, Field(description="d"), Field(description=None)]
        unset = Annotated[int, Field(description="d"), Field()]
        assert annotation_key(explicit) != annotation_key(unset)

    def test_annotations_without_field_are_their_own_key(self):
        """Without Field(...) metadata the annotation is its own key."""
        assert annotation_key(list[int] | None) == list[int] | None

    def test_unhashable_metadata_has_no_key(self):
        """Unhashable metadata: TypeError, so callers skip their caches."""
        with pytest.raises(TypeError):
            annotation_key(Annotated[int, Field(ge=1), {"not": "hashable"}])
