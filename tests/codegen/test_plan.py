"""``_codegen.plan``: generated names and whole-class checks, with nothing built."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_worker._codegen.introspect import MethodSpec
from llm_worker._codegen.plan import RegistryPlan, ToolPlan, pascal_case, plan_registry
from llm_worker._options import ToolOptions

snake_segments = st.lists(
    st.from_regex(r"[a-z][a-z0-9]{0,7}", fullmatch=True), min_size=1, max_size=5
)


def _spec(attr_name: str, tool_name: str | None = None) -> MethodSpec:
    def func(self: object) -> str:
        return attr_name

    return MethodSpec(
        attr_name=attr_name,
        tool_name=tool_name if tool_name is not None else attr_name,
        func=func,
        parameters=(),
        description=f"Tool: {attr_name}",
        is_async=False,
        options=ToolOptions(),
    )


class Empty:
    pass


class TestPascalCase:
    @pytest.mark.parametrize(
        ("snake", "pascal"),
        [
            ("search", "Search"),
            ("get_user", "GetUser"),
            ("get_user_by_id", "GetUserById"),
            ("v2_api", "V2Api"),
            ("x", "X"),
        ],
    )
    def test_examples(self, snake, pascal):
        """Each underscore-separated segment is capitalised and joined."""
        assert pascal_case(snake) == pascal

    def test_rest_of_segment_is_kept(self):
        """Only the first letter of a segment changes; the rest stays as written."""
        assert pascal_case("get_HTTP_status") == "GetHTTPStatus"
        assert pascal_case("getUser") == "GetUser"

    @settings(max_examples=200)
    @given(segments=snake_segments)
    def test_snake_names(self, segments):
        """For any snake name, the result is the capitalised segments joined."""
        snake = "_".join(segments)
        pascal = pascal_case(snake)
        assert pascal == "".join(segment.capitalize() for segment in segments)
        assert "_" not in pascal
        assert pascal[0].isupper()
        assert pascal.lower() == snake.replace("_", "")


class TestPlanRegistry:
    def test_names_in_declaration_order(self):
        """Each spec gets its Args, Tool and definition names, in the order given."""
        specs = [_spec("search"), _spec("get_user", "users")]
        errors: list[str] = []
        plan = plan_registry(Empty, specs, {}, errors)
        assert errors == []
        assert isinstance(plan, RegistryPlan)
        assert plan.cls is Empty
        assert plan.tools == (
            ToolPlan(specs[0], "SearchArgs", "ToolSearch", "search_definition"),
            ToolPlan(specs[1], "GetUserArgs", "ToolGetUser", "get_user_definition"),
        )
        assert plan.tools[1].generated_names == (
            "GetUserArgs",
            "ToolGetUser",
            "get_user_definition",
        )

    def test_names_follow_the_attribute_not_the_tool_name(self):
        """A renamed tool still gets names from its method."""
        plan = plan_registry(Empty, [_spec("find", "lookup-thing")], {}, [])
        assert plan.tools[0].generated_names == ("FindArgs", "ToolFind", "find_definition")

    def test_is_pure(self):
        """Planning touches neither the class nor anything else."""
        before = dict(Empty.__dict__)
        plan_registry(Empty, [_spec("search")], {}, [])
        assert dict(Empty.__dict__) == before

    def test_duplicate_tool_names(self):
        """Two specs with one tool name are reported against the later one."""
        errors: list[str] = []
        plan_registry(Empty, [_spec("a", "same"), _spec("b", "same")], {}, errors)
        assert errors == [
            "b: tool name 'same' is already used by a (pass @tool(name=...) to rename one)"
        ]

    def test_duplicate_of_an_inherited_tool(self):
        """A tool name already inherited is reported with the inherited method."""
        errors: list[str] = []
        plan_registry(Empty, [_spec("mine", "theirs")], {"theirs": "Base.theirs"}, errors)
        assert errors == [
            "mine: tool name 'theirs' is already used by Base.theirs "
            "(pass @tool(name=...) to rename one)"
        ]

    @pytest.mark.parametrize("existing", ["SearchArgs", "ToolSearch", "search_definition"])
    def test_clash_with_class_attribute(self, existing):
        """A generated name the class defines itself is an error, never overwritten."""
        cls = type("Clashing", (), {existing: 1})
        errors: list[str] = []
        plan_registry(cls, [_spec("search")], {}, errors)
        assert errors == [
            f"search: cannot generate {existing!r}, the class already defines it "
            f"(rename the method or the attribute)"
        ]
        assert cls.__dict__[existing] == 1

    def test_inherited_attribute_is_not_a_clash(self):
        """Only the class's own namespace counts; a base's attribute may be shadowed."""
        base = type("Base", (), {"SearchArgs": 1})
        sub = type("Sub", (base,), {})
        errors: list[str] = []
        plan_registry(sub, [_spec("search")], {}, errors)
        assert errors == []

    def test_two_methods_generating_one_name(self):
        """get_user and getUser would both generate GetUserArgs: reported once per name."""
        errors: list[str] = []
        plan_registry(Empty, [_spec("get_user"), _spec("getUser")], {}, errors)
        assert errors == [
            "getUser: generated name 'GetUserArgs' is also generated for get_user "
            "(rename one of the methods)",
            "getUser: generated name 'ToolGetUser' is also generated for get_user "
            "(rename one of the methods)",
        ]

    def test_every_problem_is_collected(self):
        """All problems of all specs are appended, in declaration order."""
        cls = type("Clashing", (), {"ToolA": 1})
        errors: list[str] = ["earlier problem"]
        plan = plan_registry(cls, [_spec("a"), _spec("b", "a")], {}, errors)
        assert errors == [
            "earlier problem",
            "a: cannot generate 'ToolA', the class already defines it "
            "(rename the method or the attribute)",
            "b: tool name 'a' is already used by a (pass @tool(name=...) to rename one)",
        ]
        assert len(plan.tools) == 2
