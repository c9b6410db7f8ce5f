"""The Rust crate's tool-macro tests (`#[tool_registry]` / `#[tool]`), ported to Python."""

from typing import Annotated

import pytest

from llm_worker import (
    Description,
    DuplicateToolError,
    ExecutionFailedError,
    InvalidArgumentError,
    Tool,
    ToolError,
    ToolExecutionError,
    ToolMeta,
    ToolNotFoundError,
    ToolServer,
    tool,
    tool_registry,
)

pytestmark = pytest.mark.anyio


class NotFoundError(ToolError):
    """A user-defined ToolError subclass."""


@tool_registry
class MyApp:
    def __init__(self, prefix: str = "Results for") -> None:
        self.prefix = prefix

    @tool
    async def search(self, query: Annotated[str, Description("search query")]) -> str:
        """Run a search.
        Searches the database for the given query."""
        return f"{self.prefix}: {query}"

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


class TestBasicGeneration:
    def test_generated_attributes_exist(self):
        """@tool_registry attaches SearchArgs, ToolSearch and search_definition."""
        assert isinstance(MyApp.SearchArgs, type)
        assert isinstance(MyApp.ToolSearch, type)
        assert callable(MyApp.search_definition)

    def test_factory_yields_meta_name(self):
        """The factory's ToolMeta is named after the method."""
        meta, _ = MyApp().search_definition()()
        assert meta.name == "search"

    def test_factory_yields_description_from_docstring(self):
        """The description is the whole docstring prose, line break kept."""
        meta, _ = MyApp().search_definition()()
        assert meta.description == "Run a search.\nSearches the database for the given query."

    def test_factory_yields_schema_with_described_query(self):
        """The schema describes `query` with its Description text."""
        meta, _ = MyApp().search_definition()()
        assert meta.input_schema == {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "search query"}},
            "required": ["query"],
            "additionalProperties": False,
        }

    def test_factory_yields_a_tool(self):
        """The second element is a Tool instance of the generated class."""
        meta, tool_instance = MyApp().search_definition()()
        assert isinstance(meta, ToolMeta)
        assert isinstance(tool_instance, Tool)
        assert type(tool_instance) is MyApp.ToolSearch

    async def test_execute_runs_the_method(self):
        """execute() validates the JSON input and calls the method on the app."""
        _, tool_instance = MyApp(prefix="Found").search_definition()()
        assert await tool_instance.execute('{"query": "cats"}') == "Found: cats"


class TestMultipleArguments:
    def test_schema_lists_every_argument(self):
        """Each parameter becomes a required property."""
        meta, _ = MyApp().add_definition()()
        assert meta.input_schema == {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
            "additionalProperties": False,
        }

    async def test_execute_passes_every_argument(self):
        """Both arguments reach the method; a non-str result is JSON."""
        _, tool_instance = MyApp().add_definition()()
        assert await tool_instance.execute('{"a": 2, "b": 40}') == "42"


class TestNoArguments:
    def test_args_model_is_empty(self):
        """A method without parameters gets an empty Args model."""
        assert MyApp.PingArgs.model_fields == {}

    def test_schema_has_empty_properties(self):
        """The schema of a parameterless tool has no properties."""
        meta, _ = MyApp().ping_definition()()
        assert meta.input_schema == {
            "type": "object",
            "properties": {},
            "additionalProperties": False,
        }

    @pytest.mark.parametrize("input_json", ["{}", "", "   ", "\n\t"])
    async def test_empty_input_means_no_arguments(self, input_json):
        """An empty object, an empty string or whitespace all call the tool."""
        _, tool_instance = MyApp().ping_definition()()
        assert await tool_instance.execute(input_json) == "pong"


class TestInvalidArguments:
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
        """Bad input raises InvalidArgumentError naming the problem."""
        _, tool_instance = MyApp().add_definition()()
        with pytest.raises(InvalidArgumentError) as excinfo:
            await tool_instance.execute(input_json)
        assert excinfo.value.message == message
        assert str(excinfo.value) == f"Invalid argument: {message}"


class TestErrorResults:
    async def test_exception_becomes_execution_failed(self):
        """A ValueError from the method becomes ExecutionFailedError, chained to it."""
        _, tool_instance = MyApp().divide_definition()()
        with pytest.raises(ExecutionFailedError) as excinfo:
            await tool_instance.execute('{"a": 1, "b": 0}')
        assert str(excinfo.value) == "Execution failed: division by zero"
        assert excinfo.value.message == "division by zero"
        assert isinstance(excinfo.value.__cause__, ValueError)
        assert str(excinfo.value.__cause__) == "division by zero"

    async def test_tool_error_subclass_passes_unchanged(self):
        """A ToolError subclass raised by the method is raised as it is."""
        _, tool_instance = MyApp().lookup_definition()()
        with pytest.raises(NotFoundError) as excinfo:
            await tool_instance.execute('{"key": "k"}')
        assert type(excinfo.value) is NotFoundError
        assert excinfo.value.message == "no such key: k"


class TestSyncMethodCounter:
    async def test_state_increments_across_calls(self):
        """A plain def keeps state on the app between calls of one tool instance."""
        app = CounterApp()
        _, tool_instance = app.increment_definition()()
        assert await tool_instance.execute("") == "count: 1"
        assert await tool_instance.execute("{}") == "count: 2"
        assert await tool_instance.execute("") == "count: 3"
        assert app.count == 3

    async def test_registered_instance_is_reused(self):
        """The server keeps the one instance made at registration and reuses it."""
        server = ToolServer()
        server.register_tool(CounterApp().increment_definition())
        handle = server.handle()
        entry = handle.get_tool("increment")
        assert entry is not None
        first_tool = entry[1]
        assert await handle.call_tool("increment", "") == "count: 1"
        assert await handle.call_tool("increment", "") == "count: 2"
        again = handle.get_tool("increment")
        assert again is not None
        assert again[1] is first_tool
        assert first_tool.ctx.count == 2


class TestMetaStability:
    def test_metas_are_equal_across_factory_calls(self):
        """Calling one factory repeatedly yields equal metas."""
        definition = MyApp().search_definition()
        metas = [definition()[0] for _ in range(3)]
        assert metas[0] == metas[1] == metas[2]
        assert len({hash(meta) for meta in metas}) == 1

    def test_metas_are_equal_across_definitions(self):
        """Two definitions of one tool, even of different apps, have equal metas."""
        assert MyApp().search_definition()()[0] == MyApp("x").search_definition()()[0]

    def test_each_call_makes_a_new_tool_bound_to_the_same_app(self):
        """Each factory call creates a new tool instance whose ctx is the same app."""
        app = MyApp()
        definition = app.search_definition()
        _, first = definition()
        _, second = definition()
        assert first is not second
        assert first.ctx is app
        assert second.ctx is app


class TestToolServerIntegration:
    def test_duplicate_registration_is_rejected(self):
        """Registering the same tool name twice raises DuplicateToolError."""
        server = ToolServer()
        app = MyApp()
        server.register_tool(app.search_definition())
        with pytest.raises(DuplicateToolError) as excinfo:
            server.register_tool(app.search_definition())
        assert str(excinfo.value) == "Tool with name 'search' already registered"
        assert excinfo.value.name == "search"

    async def test_unknown_tool_is_not_found(self):
        """Calling a name that is not registered raises ToolNotFoundError."""
        server = ToolServer()
        server.register_tool(MyApp().search_definition())
        with pytest.raises(ToolNotFoundError) as excinfo:
            await server.handle().call_tool("nope", "{}")
        assert str(excinfo.value) == "Tool 'nope' not found"

    async def test_tool_error_becomes_tool_execution_error(self):
        """A tool's ToolError reaches the caller as ToolExecutionError, chained."""
        server = ToolServer()
        server.register_tool(MyApp().divide_definition())
        with pytest.raises(ToolExecutionError) as excinfo:
            await server.handle().call_tool("divide", '{"a": 1, "b": 0}')
        assert str(excinfo.value) == "Tool execution failed: Execution failed: division by zero"
        assert isinstance(excinfo.value.__cause__, ExecutionFailedError)

    async def test_call_tool_runs_the_generated_tool(self):
        """call_tool dispatches to the registered generated tool."""
        server = ToolServer()
        app = MyApp()
        server.register_tools([app.search_definition(), app.add_definition()])
        handle = server.handle()
        assert await handle.call_tool("search", '{"query": "q"}') == "Results for: q"
        assert await handle.call_tool("add", '{"a": 1, "b": 2}') == "3"

    def test_definitions_are_sorted_by_name(self):
        """tool_definitions_sorted() lists the generated tools by name."""
        server = ToolServer()
        app = MyApp()
        server.register_tools(
            [
                app.search_definition(),
                app.add_definition(),
                app.ping_definition(),
                app.divide_definition(),
            ]
        )
        definitions = server.handle().tool_definitions_sorted()
        assert [d.name for d in definitions] == ["add", "divide", "ping", "search"]
        assert definitions[3].description == (
            "Run a search.\nSearches the database for the given query."
        )
        assert definitions[3].input_schema == MyApp.search.meta().input_schema
