"""``_codegen.runtime``: what a generated tool does per call (validate → call → serialise)."""

import copy
import dataclasses
import datetime
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any, NewType, Optional

import anyio
import pytest
from pydantic import AfterValidator, BaseModel, Field
from typing_extensions import TypeAliasType

from llm_worker import (
    Description,
    ExecutionFailedError,
    InvalidArgumentError,
    ToolError,
    tool,
    tool_registry,
)
from llm_worker._codegen.runtime import serialize_result

pytestmark = pytest.mark.anyio

# How long a test that waits for something may take before it fails instead of hanging.
GUARD = 10.0


class Tag(BaseModel):
    name: str
    weight: float = 1.0


@dataclasses.dataclass
class Pair:
    left: int
    right: str


class Opaque:
    def __repr__(self) -> str:
        return "<Opaque thing>"


class Stop(BaseException):
    """Stands in for KeyboardInterrupt / SystemExit: not an Exception."""


class Refused(ToolError):
    """A user-defined ToolError."""


RESULTS: dict[str, Any] = {
    "str": 'already "text", {not json}',
    "empty": "",
    "model": Tag(name="a", weight=2.5),
    "dataclass": Pair(left=1, right="r"),
    "dict": {"b": [1, 2], "a": {"c": None}},
    "list": [1, "two", 3.5, True, None],
    "int": 42,
    "float": 1.5,
    "true": True,
    "false": False,
    "none": None,
    "datetime": datetime.datetime(2024, 1, 2, 3, 4, 5),
    "date": datetime.date(2024, 1, 2),
    "opaque": Opaque(),
    "nested_opaque": {"x": [Opaque()]},
    "text_bytes": b"abc",
    "binary_bytes": b"\x00\xff",  # not UTF-8: base64, the string its schema promises
}


@tool_registry
class App:
    def __init__(self) -> None:
        self.calls = 0

    @tool
    async def search(
        self,
        query: Annotated[str, Description("what")],
        limit: int = 10,
        tags: list[Tag] = [],  # noqa: B006
    ) -> str:
        return f"{query}/{limit}/{','.join(t.name for t in tags)}"

    @tool
    async def noargs(self) -> str:
        return "ok"

    @tool
    async def many(
        self,
        a1: int,
        a2: int,
        a3: int,
        a4: int,
        a5: int,
        a6: int,
        a7: int,
        a8: int,
        a9: int,
        a10: int,
        a11: int,
        a12: int,
    ) -> str:
        return "ok"

    @tool
    async def result(self, kind: str) -> object:
        return RESULTS[kind]

    @tool
    def sync_result(self, kind: str) -> object:
        return RESULTS[kind]

    @tool
    async def fail(self, message: str) -> str:
        raise ValueError(message)

    @tool
    def sync_fail(self, message: str) -> str:
        raise ValueError(message)

    @tool
    async def refuse(self) -> str:
        raise Refused("not allowed")

    @tool
    async def stop_async(self) -> str:
        raise Stop("stop")

    @tool
    def stop_thread(self) -> str:
        raise Stop("stop")

    @tool(thread=False)
    def stop_inline(self) -> str:
        raise Stop("stop")

    @tool
    async def interrupt(self) -> str:
        raise KeyboardInterrupt

    @tool
    async def wait(self) -> str:
        self.calls += 1
        self.started.set()
        await anyio.sleep_forever()
        return "never"

    @tool
    async def rendezvous(self, name: str) -> str:
        self.calls += 1
        if self.calls == 2:
            self.both_started.set()
        await self.both_started.wait()
        return name


async def _invalid(tool_name: str, input_json: str) -> str:
    """The message of the InvalidArgumentError that input_json causes."""
    tool_class = next(b.tool_class for b in App.__llm_worker_tools__ if b.name == tool_name)
    with pytest.raises(InvalidArgumentError) as excinfo:
        await tool_class(App()).execute(input_json)
    return excinfo.value.message


class NotFoundError(ToolError):
    """A user-defined ToolError subclass."""


@tool_registry
class Calculator:
    @tool
    async def add(self, a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @tool
    async def ping(self) -> str:
        """Check that the app is alive."""
        return "pong"

    @tool
    async def divide(self, a: int, b: int) -> int:
        """Divide a by b."""
        if b == 0:
            raise ValueError("division by zero")
        return a // b

    @tool
    async def lookup(self, key: str) -> str:
        """Look a key up."""
        raise NotFoundError(f"no such key: {key}")


@tool_registry
class CounterApp:
    def __init__(self) -> None:
        self.count = 0

    @tool
    def increment(self) -> str:
        """Increment the counter."""
        self.count += 1
        return f"count: {self.count}"


class TestValidationMessages:
    async def test_wrong_type(self):
        """A wrong type names the argument, pydantic's reason and the value."""
        assert await _invalid("search", '{"query": 5}') == (
            "'query': Input should be a valid string (got 5)"
        )

    async def test_missing(self):
        """A missing argument is named."""
        assert await _invalid("search", "{}") == "'query': missing required argument"

    async def test_unexpected(self):
        """An unknown argument is named, with the arguments the tool takes."""
        assert await _invalid("search", '{"query": "q", "zzz": 1}') == (
            "'zzz': unexpected argument (this tool takes: query, limit, tags)"
        )

    async def test_unexpected_for_a_tool_without_arguments(self):
        """A tool without parameters says it takes none."""
        assert await _invalid("noargs", '{"x": 1}') == (
            "'x': unexpected argument (this tool takes: no arguments)"
        )

    async def test_several_problems_joined(self):
        """Every failing argument is named, joined with '; '."""
        assert await _invalid("search", '{"limit": "x", "other": null}') == (
            "'query': missing required argument; "
            "'limit': Input should be a valid integer (got \"x\"); "
            "'other': unexpected argument (this tool takes: query, limit, tags)"
        )

    async def test_nested_location(self):
        """Nested problems are located with dots and indexes."""
        assert await _invalid("search", '{"query": "q", "tags": [{"name": "a"}, {"name": 1}]}') == (
            "'tags[1].name': Input should be a valid string (got 1)"
        )

    async def test_nested_missing_and_extra(self):
        """Inside nested values, missing and unknown fields are reported as such."""
        message = await _invalid("search", '{"query": "q", "tags": [{"weight": 1}]}')
        assert message == "'tags[0].name': missing"

    async def test_at_most_ten_errors(self):
        """Past ten problems the rest are counted."""
        assert await _invalid("many", "{}") == "; ".join(
            [f"'a{i}': missing required argument" for i in range(1, 11)] + ["and 2 more errors"]
        )

    async def test_long_values_are_cut(self):
        """A long offending value is shown cut short."""
        message = await _invalid("search", '{"query": "q", "limit": "' + "x" * 200 + '"}')
        assert message == ("'limit': Input should be a valid integer (got \"" + "x" * 58 + "…)")

    @pytest.mark.parametrize(
        ("input_json", "kind"),
        [
            ("[1]", "array"),
            ("5", "number"),
            ("1.5", "number"),
            ('"s"', "string"),
            ("null", "null"),
            ("true", "boolean"),
        ],
    )
    async def test_not_an_object(self, input_json, kind):
        """Input that is JSON but not an object says what it is."""
        assert await _invalid("search", input_json) == f"input must be a JSON object, got {kind}"

    @pytest.mark.parametrize(
        ("input_json", "detail"),
        [
            ("{", "EOF while parsing an object at line 1 column 1"),
            ('{"query": "q",}', "trailing comma at line 1 column 15"),
            ("nope", "expected ident at line 1 column 2"),
            ('{"query": "q"} x', "trailing characters at line 1 column 16"),
        ],
    )
    async def test_not_json(self, input_json, detail):
        """Input that is not JSON says so, with the parser's position."""
        assert await _invalid("search", input_json) == f"input is not valid JSON ({detail})"

    @pytest.mark.parametrize("input_json", ["\ud800", '{"query": "\udfff"}', '{"\ud83d": 1}'])
    async def test_lone_surrogates(self, input_json):
        """Lone surrogates are invalid input, not a crash."""
        assert await _invalid("search", input_json) == "input is not valid Unicode text"

    @pytest.mark.parametrize(
        "input_json",
        ["[" * 100_000 + "]" * 100_000, '{"a":' * 100_000 + "1" + "}" * 100_000],
        ids=["arrays", "objects"],
    )
    async def test_deep_nesting(self, input_json):
        """Absurdly deep JSON is invalid input, not a RecursionError."""
        message = await _invalid("search", input_json)
        assert message.startswith("input ")
        assert "Traceback" not in message

    async def test_no_traceback_or_urls(self):
        """Messages carry no traceback text and no pydantic documentation links."""
        message = await _invalid("search", '{"query": [1], "tags": "x"}')
        assert "Traceback" not in message
        assert "errors.pydantic.dev" not in message
        assert "\n" not in message

    @pytest.mark.parametrize("input_json", ["", " ", "\n", "\t\r\n "])
    async def test_empty_input_means_empty_object(self, input_json):
        """Empty or whitespace input is '{}'."""
        assert await _invalid("search", input_json) == "'query': missing required argument"
        assert await App.ToolNoargs(App()).execute(input_json) == "ok"

    async def test_valid_input_with_defaults(self):
        """Defaults fill in what the input leaves out; nested models are built."""
        tool_instance = App.ToolSearch(App())
        assert await tool_instance.execute('{"query": "q"}') == "q/10/"
        assert (
            await tool_instance.execute('{"query": "q", "limit": 1, "tags": [{"name": "t"}]}')
            == "q/1/t"
        )

    @pytest.mark.parametrize(
        ("input_json", "message"),
        [
            ('{"a": "x", "b": 1}', "'a': Input should be a valid integer (got \"x\")"),
            ('{"a": 1}', "'b': missing required argument"),
            ("not json", "input is not valid JSON (expected ident at line 1 column 2)"),
            ("[1, 2]", "input must be a JSON object, got array"),
        ],
    )
    async def test_invalid_input_raises_invalid_argument(self, input_json, message):
        """Bad input raises InvalidArgumentError naming the problem, in its str() too."""
        _, tool_instance = Calculator().add_definition()()
        with pytest.raises(InvalidArgumentError) as excinfo:
            await tool_instance.execute(input_json)
        assert excinfo.value.message == message
        assert str(excinfo.value) == f"Invalid argument: {message}"

    @pytest.mark.parametrize("input_json", ["{}", "", "   ", "\n\t"])
    async def test_empty_input_calls_a_tool_without_arguments(self, input_json):
        """An empty object, an empty string or whitespace all call a parameterless tool."""
        _, tool_instance = Calculator().ping_definition()()
        assert await tool_instance.execute(input_json) == "pong"

    async def test_every_argument_reaches_the_method(self):
        """Both arguments reach the method; a non-str result is JSON."""
        _, tool_instance = Calculator().add_definition()()
        assert await tool_instance.execute('{"a": 2, "b": 40}') == "42"


class TestExecutionErrors:
    async def test_an_exception_is_chained_to_execution_failed(self):
        """A ValueError from the method becomes ExecutionFailedError, chained to it."""
        _, tool_instance = Calculator().divide_definition()()
        with pytest.raises(ExecutionFailedError) as excinfo:
            await tool_instance.execute('{"a": 1, "b": 0}')
        assert str(excinfo.value) == "Execution failed: division by zero"
        assert excinfo.value.message == "division by zero"
        assert isinstance(excinfo.value.__cause__, ValueError)
        assert str(excinfo.value.__cause__) == "division by zero"

    async def test_a_tool_error_subclass_passes_unchanged(self):
        """A ToolError subclass raised by the method is raised as it is."""
        _, tool_instance = Calculator().lookup_definition()()
        with pytest.raises(NotFoundError) as excinfo:
            await tool_instance.execute('{"key": "k"}')
        assert type(excinfo.value) is NotFoundError
        assert excinfo.value.message == "no such key: k"

    @pytest.mark.parametrize("name", ["fail", "sync_fail"])
    async def test_exception_becomes_execution_failed(self, name):
        """Any Exception becomes ExecutionFailedError(str(exc)), chained to it."""
        tool_class = App.ToolFail if name == "fail" else App.ToolSyncFail
        with pytest.raises(ExecutionFailedError) as excinfo:
            await tool_class(App()).execute('{"message": "disk full"}')
        assert str(excinfo.value) == "Execution failed: disk full"
        assert type(excinfo.value.__cause__) is ValueError

    async def test_empty_exception_message_uses_the_type(self):
        """An exception without text is named by its type."""
        with pytest.raises(ExecutionFailedError) as excinfo:
            await App.ToolFail(App()).execute('{"message": ""}')
        assert str(excinfo.value) == "Execution failed: ValueError"

    async def test_tool_error_passes_unchanged(self):
        """A ToolError from the method is raised as it is, not wrapped."""
        with pytest.raises(Refused) as excinfo:
            await App.ToolRefuse(App()).execute("")
        assert str(excinfo.value) == "not allowed"
        assert excinfo.value.__cause__ is None

    @pytest.mark.parametrize("name", ["stop_async", "stop_thread", "stop_inline"])
    async def test_other_base_exceptions_become_execution_failed(self, name):
        """A BaseException of the tool's own (not cancellation, KeyboardInterrupt or
        SystemExit) becomes an ExecutionFailedError chained to it."""
        tool_class = next(b.tool_class for b in App.__llm_worker_tools__ if b.name == name)
        with pytest.raises(ExecutionFailedError) as excinfo:
            await tool_class(App()).execute("")
        assert str(excinfo.value) == "Execution failed: stop"
        assert type(excinfo.value.__cause__) is Stop

    async def test_keyboard_interrupt_propagates(self):
        """KeyboardInterrupt is not turned into a tool error."""
        with pytest.raises(KeyboardInterrupt):
            await App.ToolInterrupt(App()).execute("")

    async def test_cancellation_propagates(self):
        """Cancelling a running tool cancels it; nothing is turned into a ToolError."""
        app = App()
        app.started = anyio.Event()
        seen: list[type[BaseException]] = []

        async def call() -> None:
            try:
                await App.ToolWait(app).execute("")
            except BaseException as exc:
                seen.append(type(exc))
                raise

        with anyio.fail_after(GUARD):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await app.started.wait()
                tg.cancel_scope.cancel()
        assert seen == [anyio.get_cancelled_exc_class()]


class TestResults:
    @pytest.mark.parametrize("name", ["result", "sync_result"])
    @pytest.mark.parametrize(
        ("kind", "expected"),
        [
            ("str", 'already "text", {not json}'),
            ("empty", ""),
            ("model", '{"name":"a","weight":2.5}'),
            ("dataclass", '{"left":1,"right":"r"}'),
            ("dict", '{"b":[1,2],"a":{"c":null}}'),
            ("list", '[1,"two",3.5,true,null]'),
            ("int", "42"),
            ("float", "1.5"),
            ("true", "true"),
            ("false", "false"),
            ("none", "null"),
            ("datetime", '"2024-01-02T03:04:05"'),
            ("date", '"2024-01-02"'),
            ("opaque", "<Opaque thing>"),
            ("nested_opaque", "{'x': [<Opaque thing>]}"),
            ("text_bytes", '"abc"'),
            ("binary_bytes", '"AP8="'),
        ],
    )
    async def test_serialisation(self, name, kind, expected):
        """str is returned unchanged; other values become compact JSON, or repr()."""
        tool_class = App.ToolResult if name == "result" else App.ToolSyncResult
        assert await tool_class(App()).execute(f'{{"kind": "{kind}"}}') == expected

    @pytest.mark.anyio
    async def test_a_model_pydantic_cannot_serialise_is_its_repr_with_a_warning(self, caplog):
        """A pydantic model whose serializer raises goes as its repr(), and the log says so
        (it was silent: the model read `Broken(x=1)` and nobody knew why)."""
        from pydantic import field_serializer

        class Broken(BaseModel):
            x: int

            @field_serializer("x")
            def bug(self, value: int) -> int:
                raise ValueError("serializer bug")

        @tool_registry
        class Models:
            @tool
            async def broken(self) -> Any:
                """Returns a model whose serializer fails."""
                return Broken(x=1)

        with caplog.at_level("WARNING", logger="llm_worker"):
            assert await Models.ToolBroken(Models()).execute("{}") == "Broken(x=1)"
        assert "Tool 'broken' returned a Broken pydantic could not serialise" in caplog.text

    def test_a_tool_made_with_another_class_instance_says_so(self):
        """A generated tool given an object of an unrelated class names both classes (it
        said the other class overrode the tool with NoneType)."""

        class Other:
            pass

        with pytest.raises(TypeError) as info:
            App.ToolResult(Other())  # type: ignore[arg-type]
        assert str(info.value) == (
            f"{App.ToolResult.__qualname__} takes an instance of {App.__qualname__}, not of "
            f"{Other.__qualname__} (which has no method 'result')"
        )

    def test_serialize_result_directly(self):
        """serialize_result is compact JSON with a repr() fallback."""
        assert serialize_result({"a": (1, 2)}) == '{"a":[1,2]}'
        assert serialize_result(Opaque()) == "<Opaque thing>"

    def test_a_lone_surrogate_is_replaced_and_the_rest_written_as_ever(self):
        """pydantic refuses a lone surrogate (a file name os.listdir gave): the value is
        still the JSON it would be (compact, NaN as "NaN", UTF-8 bytes as text, other
        bytes as base64), its texts made valid, not a repr."""
        value = {"name": "caf\udce9", "score": float("nan"), "raw": b"hi", "low": -float("inf")}
        assert serialize_result(value) == (
            '{"name":"caf\ufffd","score":"NaN","raw":"hi","low":"-Infinity"}'
        )
        assert serialize_result({"k\udcff": [b"\xff", 1.5]}) == '{"k\ufffd":["_w==",1.5]}'
        without = {"score": float("nan"), "raw": b"hi"}
        assert serialize_result(without) == '{"score":"NaN","raw":"hi"}'


class TestGeneratedTool:
    async def test_a_plain_def_keeps_state_on_the_app(self):
        """A plain def keeps state on the app between calls of one tool instance."""
        app = CounterApp()
        _, tool_instance = app.increment_definition()()
        assert await tool_instance.execute("") == "count: 1"
        assert await tool_instance.execute("{}") == "count: 2"
        assert await tool_instance.execute("") == "count: 3"
        assert app.count == 3

    def test_has_no_instance_dict(self):
        """Generated tools are slotted: ctx is their only state."""
        tool_instance = App.ToolSearch(App())
        with pytest.raises(AttributeError):
            tool_instance.other = 1  # type: ignore[attr-defined]

    def test_ctx_is_kept(self):
        """The app given to the constructor is ctx."""
        app = App()
        assert App.ToolSearch(app).ctx is app

    def test_repr(self):
        """repr shows the tool's qualname and ctx by class and id."""
        app = App()
        assert repr(App.ToolSearch(app)) == f"<App.ToolSearch ctx=<App at {id(app):#x}>>"

    async def test_concurrent_calls_on_one_instance(self):
        """One instance serves overlapping calls."""
        app = App()
        app.both_started = anyio.Event()
        tool_instance = App.ToolRendezvous(app)
        results: dict[str, str] = {}

        async def call(name: str) -> None:
            results[name] = await tool_instance.execute(f'{{"name": "{name}"}}')

        with anyio.fail_after(GUARD):  # each call waits for the other: only both at once end
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, "first")
                tg.start_soon(call, "second")
        assert results == {"first": "first", "second": "second"}


USERS = {"ada": "Ada Lovelace"}


@tool_registry
class Directory:
    @tool
    async def greet(self, user: Annotated[str, AfterValidator(lambda u: USERS[u])]) -> str:
        """Greet a known user."""
        return f"Hello, {user}"


class TestValidatorExceptions:
    @pytest.mark.anyio
    async def test_any_exception_from_a_validator_is_an_invalid_argument(self):
        """A user validator raising KeyError (which pydantic passes on) is still a ToolError."""
        tool_ = Directory.ToolGreet(Directory())
        assert await tool_.execute('{"user": "ada"}') == "Hello, Ada Lovelace"
        with pytest.raises(InvalidArgumentError) as info:
            await tool_.execute('{"user": "bob"}')
        assert str(info.value) == "Invalid argument: KeyError: 'bob'"
        assert isinstance(info.value.__cause__, KeyError)


OptionalInt = TypeAliasType("OptionalInt", int | None)
MaybeInt = NewType("MaybeInt", Optional[int])  # type: ignore[misc]  # noqa: UP045


@tool_registry
class Defaults:
    """Defaults given as ``= Field(...)``, the way pydantic models give them."""

    @tool
    async def limited(self, limit: int = Field(5, ge=1)) -> str:
        return str(limit)

    @tool
    async def described(self, limit: Annotated[int, Description("How many")] = Field(5)) -> str:
        return str(limit)

    @tool
    async def required(self, limit: int = Field(description="How many")) -> str:
        return str(limit)

    @tool
    async def collected(self, items: list[int] = Field(default_factory=list)) -> str:  # noqa: B008
        items.append(len(items))
        return str(items)

    @tool
    async def overridden(self, limit: Annotated[int, Field(7)] = 9) -> str:
        return str(limit)

    @tool
    async def derived(
        self, size: int, limit: int = Field(default_factory=lambda data: data["size"] * 2)
    ) -> str:
        return str(limit)

    @tool
    async def noneable(self, limit: int = None) -> str:  # type: ignore[assignment]  # noqa: RUF013
        return repr(limit)

    @tool
    async def aliased(self, limit: OptionalInt = 5) -> str:
        return repr(limit)

    @tool
    async def new_type(self, limit: MaybeInt = 5) -> str:  # type: ignore[assignment]
        return repr(limit)

    @tool
    async def ranked(
        self,
        limit: Annotated[int, Field(description="from Annotated")] = Field(
            5, description="from the default"
        ),
        other: Annotated[int, Field(description="from Annotated")] = 1,
    ) -> str:
        """Descriptions from three places.

        Args:
            limit: from the docstring
            other: from the docstring
        """
        return str(limit)

    @tool
    async def one(self, x: int | bool = 1) -> str:
        return repr(x)

    @tool
    async def true(self, x: int | bool = True) -> str:
        return repr(x)

    @tool
    async def flagged(self, limit: int = Field(5, deprecated="use size", frozen=True)) -> str:
        return str(limit)


async def _run(name: str, input_json: str) -> str:
    tool_class = next(b.tool_class for b in Defaults.__llm_worker_tools__ if b.name == name)
    return await tool_class(Defaults()).execute(input_json)


def _property(name: str) -> dict[str, Any]:
    record = next(b for b in Defaults.__llm_worker_tools__ if b.name == name)
    schema = record.meta().input_schema
    return {"required": schema.get("required", []), **schema["properties"]}


class TestFieldDefaults:
    async def test_a_field_default_is_the_default_and_keeps_its_constraints(self):
        """`limit: int = Field(5, ge=1)`: 5 when absent or null, and at least 1."""
        assert await _run("limited", "{}") == "5"
        assert await _run("limited", '{"limit": null}') == "5"
        with pytest.raises(InvalidArgumentError) as info:
            await _run("limited", '{"limit": 0}')
        assert str(info.value) == (
            "Invalid argument: 'limit': Input should be greater than or equal to 1 (got 0)"
        )
        assert _property("limited") == {
            "required": [],
            "limit": {"default": 5, "minimum": 1, "type": "integer"},
        }

    async def test_description_and_field_default_together(self):
        """Description(...) and a Field default on one parameter: both apply."""
        assert await _run("described", '{"limit": null}') == "5"
        assert _property("described") == {
            "required": [],
            "limit": {"default": 5, "description": "How many", "type": "integer"},
        }

    async def test_description_precedence(self):
        """A `= Field(description=)` outranks one in Annotated, which outranks the docstring."""
        assert _property("ranked")["limit"]["description"] == "from the default"
        assert _property("ranked")["other"]["description"] == "from Annotated"

    async def test_a_field_without_default_is_required(self):
        """`Field(description=...)` alone leaves the argument required; null is refused."""
        with pytest.raises(InvalidArgumentError) as info:
            await _run("required", "{}")
        assert str(info.value) == "Invalid argument: 'limit': missing required argument"
        with pytest.raises(InvalidArgumentError) as info:
            await _run("required", '{"limit": null}')
        assert str(info.value) == (
            "Invalid argument: 'limit': Input should be a valid integer (got null)"
        )
        assert _property("required") == {
            "required": ["limit"],
            "limit": {"description": "How many", "type": "integer"},
        }

    async def test_a_default_factory_makes_a_fresh_default_each_call(self):
        """The method appends to its list: each call still starts from a new one."""
        assert await _run("collected", "{}") == "[0]"
        assert await _run("collected", "{}") == "[0]"
        assert await _run("collected", '{"items": null}') == "[0]"
        assert _property("collected") == {
            "required": [],
            "items": {"items": {"type": "integer"}, "type": "array"},
        }

    async def test_an_assigned_default_outranks_one_in_annotated(self):
        """`Annotated[int, Field(7)] = 9` defaults to 9, as in pydantic."""
        assert await _run("overridden", "{}") == "9"
        assert await _run("overridden", '{"limit": null}') == "9"
        assert _property("overridden")["limit"]["default"] == 9

    async def test_a_factory_given_the_arguments_gets_them_for_null_too(self):
        """A factory taking the validated data gets it, for an absent or a null argument."""
        assert await _run("derived", '{"size": 3}') == "6"
        assert await _run("derived", '{"size": 3, "limit": null}') == "6"

    async def test_null_for_a_none_default_is_none(self):
        """`x: int = None`: null is the default, None, as {} gives it."""
        assert await _run("noneable", "{}") == "None"
        assert await _run("noneable", '{"limit": null}') == "None"
        with pytest.raises(InvalidArgumentError) as info:
            await _run("noneable", '{"limit": "3"}')
        assert str(info.value) == (
            "Invalid argument: 'limit': Input should be a valid integer (got \"3\")"
        )

    @pytest.mark.parametrize("name", ["aliased", "new_type"])
    async def test_null_is_a_value_when_the_type_admits_it(self, name):
        """Through a TypeAliasType or NewType of `int | None`, null is None, not the default."""
        assert await _run(name, "{}") == "5"
        assert await _run(name, '{"limit": null}') == "None"

    async def test_field_keywords_of_model_fields_are_accepted(self):
        """deprecated=, frozen= and the like belong on a field: no warning, no error."""
        assert await _run("flagged", "{}") == "5"
        assert _property("flagged")["limit"] == {
            "default": 5,
            "deprecated": True,
            "type": "integer",
        }

    async def test_equal_defaults_of_two_types_stay_apart(self):
        """1 and True are equal, but null means each tool's own default."""
        assert await _run("one", '{"x": null}') == "1"
        assert await _run("true", '{"x": null}') == "True"


def _fresh_registry() -> type:
    """A new registry class each time, so no test sees a model another one created."""

    class Lazy:
        @tool
        async def find(self, query: str, limit: int = 5) -> str:
            return f"{query}/{limit}"

    return tool_registry(Lazy)


class TestLazyArgsModel:
    def test_the_class_attribute_is_the_model(self):
        """MyApp.FindArgs, and ToolFind.args_model, are the model; the class holds a placeholder."""
        app = _fresh_registry()
        placeholder = vars(app)["FindArgs"]
        assert re.fullmatch(
            r"<.*Lazy\.FindArgs: a pydantic model created on first use, not created yet>",
            repr(placeholder),
        )
        model = app.FindArgs
        assert issubclass(model, BaseModel)
        assert model.__qualname__.endswith("Lazy.FindArgs")
        assert app.FindArgs is model
        assert app.ToolFind.args_model is model
        assert app().FindArgs is model
        assert list(model.model_fields) == ["query", "limit"]
        assert vars(app)["FindArgs"] is placeholder  # the user's class is left as it was
        assert repr(placeholder).endswith(", created>")

    def test_a_schema_creates_no_model(self):
        """Reading the meta (the schema) does not create the model."""
        app = _fresh_registry()
        assert app.find.meta().input_schema["required"] == ["query"]
        assert repr(vars(app)["FindArgs"]).endswith("not created yet>")

    async def test_the_first_call_creates_it_and_its_validator(self):
        """Reading the model builds no validator; the first call creates and builds both."""
        read = _fresh_registry()
        assert not read.FindArgs.__pydantic_complete__
        called = _fresh_registry()
        assert await called.ToolFind(called()).execute('{"query": "q"}') == "q/5"
        assert repr(vars(called)["FindArgs"]).endswith(", created>")
        assert called.FindArgs.__pydantic_complete__

    def test_read_through_a_subclass(self):
        """A subclass reads its base's model."""
        app = _fresh_registry()
        sub = type("Sub", (app,), {})
        assert sub.FindArgs is app.FindArgs

    def test_copies_share_the_model(self):
        """A copied placeholder is the placeholder: one model per tool."""
        app = _fresh_registry()
        copied = copy.deepcopy({"FindArgs": vars(app)["FindArgs"]})
        assert copied["FindArgs"] is vars(app)["FindArgs"]
        assert copy.copy(vars(app)["FindArgs"]).get() is app.FindArgs

    def test_one_model_across_threads(self):
        """Threads reading it at once all get the same model."""
        app = _fresh_registry()
        placeholder = vars(app)["FindArgs"]
        barrier = threading.Barrier(8, timeout=GUARD)

        def read() -> type:
            barrier.wait()
            return placeholder.get()

        with ThreadPoolExecutor(8) as pool:
            models = list(pool.map(lambda _: read(), range(8)))
        assert len({id(model) for model in models}) == 1
