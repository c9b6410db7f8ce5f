"""``ToolServer`` owns the tool map; ``ToolServerHandle`` looks up and runs tools in it.

Guarantees (each one tested under the same words):

- ``register_tools`` registers all or none; each factory is called once, outside the lock.
- The server lock is never held while a tool runs.
- ``tool_definitions_sorted`` is sorted by name and byte-identical for the same registrations.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, cast

from typing_extensions import final

from ._content import ToolReturn, check_metadata, text_of
from ._exceptions import (
    DuplicateToolError,
    ToolError,
    ToolExecutionError,
    ToolNotFoundError,
    passes_through,
)
from ._meta import LlmToolDefinition, ToolMeta
from ._model_texts import NOT_TEXT, UNEXPECTED, UNSENDABLE_RETURN, call_text
from ._registry import BoundToolMethod, ToolMethod, is_tool_registry
from ._types import Tool, ToolDefinition

if TYPE_CHECKING:
    from ._context import ToolContext
    from ._hooks import ApprovalPolicy

__all__ = [
    "ToolEntry",
    "ToolServer",
    "ToolServerHandle",
    "add_entries",
    "entry_of",
    "error_text",
    "json_metadata",
    "make_entries",
    "sorted_definitions",
    "sorted_metas",
]

logger = logging.getLogger("llm_worker")


@final
class ToolEntry:
    """A registered tool, resolved once at registration: what every call of it needs.

    ``requires_approval`` and ``sequential`` come from the registration's
    keywords, else from the tool's attributes of those names (``@tool(...)``
    sets them on generated tools), else ``False``. ``execute_with_context`` is
    the tool's method of that name when it takes a ``ToolContext``.
    ``waits_its_turn``: the tool waits for its turn in a run itself (a generated
    tool with a timeout of its own does, inside it); for any other the run waits.
    """

    __slots__ = (
        "execute",
        "execute_with_context",
        "meta",
        "pair",
        "requires_approval",
        "sequential",
        "tool",
        "waits_its_turn",
    )

    def __init__(
        self,
        meta: ToolMeta,
        tool: Tool,
        requires_approval: ApprovalPolicy | None,
        sequential: bool | None,
    ) -> None:
        self.meta = meta
        self.tool = tool
        self.pair = (meta, tool)
        self.execute: Callable[[str], Awaitable[str | ToolReturn]] = tool.execute
        with_context: object = getattr(tool, "execute_with_context", None)
        self.execute_with_context = cast(
            "Callable[[str, ToolContext[Any]], Awaitable[str | ToolReturn]] | None",
            with_context if callable(with_context) else None,
        )
        self.requires_approval: ApprovalPolicy = _option(
            meta.name, tool, "requires_approval", requires_approval
        )
        self.sequential: bool = _option(meta.name, tool, "sequential", sequential) is True
        self.waits_its_turn: bool = getattr(self.execute, "_waits_its_turn", False) is True

    def __repr__(self) -> str:
        return f"<ToolEntry {self.meta.name!r}>"


def _option(name: str, tool: Tool, option: str, given: object) -> Any:
    value = getattr(tool, option, False) if given is None else given
    if option == "sequential" and not isinstance(value, bool):
        raise TypeError(f"tool {name!r}: sequential must be True or False, not {value!r}")
    if option == "requires_approval" and not (isinstance(value, bool) or callable(value)):
        raise TypeError(
            f"tool {name!r}: requires_approval must be True, False or a function of the "
            f"call's ToolCallContext returning a bool, not {value!r}"
        )
    return value


class _ToolMap:
    """The state a server and all its handles share.

    ``tools`` is copied on write: registration builds a new dict under the lock
    and swaps it in, so a lookup reads one consistent snapshot without locking.
    """

    __slots__ = ("lock", "sorted_definitions", "tools")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tools: dict[str, ToolEntry] = {}  # never mutated once published
        # Rebuilt lazily after each registration; tuples so callers get copies.
        self.sorted_definitions: tuple[LlmToolDefinition, ...] | None = None


@final
class ToolServer:
    """Owns the tools of one session. Only the owner can register tools.

    Give the rest of the program a ``handle()``: it can look up and call
    tools, but not register them.
    """

    __slots__ = ("_map",)

    def __init__(self) -> None:
        self._map = _ToolMap()

    def handle(self) -> ToolServerHandle:
        """A handle sharing this server's tools (lookup and calls, no registration)."""
        return ToolServerHandle._create(self._map)

    def register_tool(
        self,
        definition: ToolDefinition,
        *,
        requires_approval: ApprovalPolicy | None = None,
        sequential: bool | None = None,
    ) -> None:
        """Call ``definition`` once and register the tool it makes.

        Raises ``DuplicateToolError`` if the name is taken. ``requires_approval``
        and ``sequential`` (see ``Worker.register_tool``) override the tool's own.
        """
        self.register_tools(
            (definition,), requires_approval=requires_approval, sequential=sequential
        )

    def register_tools(
        self,
        definitions: Iterable[ToolDefinition],
        *,
        requires_approval: ApprovalPolicy | None = None,
        sequential: bool | None = None,
    ) -> None:
        """Register a batch: all or none; each factory is called once, outside the lock.

        If any factory raises, or any name is taken or appears twice in the
        batch, nothing of the batch is added and the error propagates
        (``DuplicateToolError`` for names). The keywords apply to every tool
        of the batch.
        """
        add_entries(self, make_entries(definitions, requires_approval, sequential))

    def __repr__(self) -> str:
        return f"<ToolServer tools={len(self._map.tools)}>"


@final
class ToolServerHandle:
    """Looks up and calls the tools of a ``ToolServer``; cannot register.

    Get one from ``ToolServer.handle()`` (or ``Worker.tool_server_handle()``).
    Handles are cheap and share their server's tools.
    """

    __slots__ = ("_map",)

    _map: _ToolMap

    def __init__(self) -> None:
        raise TypeError(
            "ToolServerHandle has no public constructor; use ToolServer().handle() "
            "or Worker.tool_server_handle()"
        )

    @classmethod
    def _create(cls, tool_map: _ToolMap) -> ToolServerHandle:
        self = object.__new__(cls)
        self._map = tool_map
        return self

    def get_tool(self, name: str) -> tuple[ToolMeta, Tool] | None:
        """The ``(meta, tool)`` registered under ``name``, or ``None``."""
        entry = self._map.tools.get(name)
        return None if entry is None else entry.pair

    async def call_tool(self, name: str, input_json: str) -> str:
        """Run tool ``name`` on ``input_json`` and return its text.

        Raises ``TypeError`` for a ``name`` or ``input_json`` that is not a
        ``str``, ``ToolNotFoundError`` for an unknown name and
        ``ToolExecutionError`` (chained to the tool's ``ToolError``) when the
        tool fails, or returns what is not text (a hand-written tool's bug). The
        server lock is never held while a tool runs. A tool that returns a
        ``ToolReturn`` gives its text here (the Worker and the MCP server keep its
        other parts); one the Worker could not send (a part that is not one,
        metadata that is not JSON) is refused here too.
        """
        if type(name) is not str and not isinstance(name, str):
            raise TypeError(
                f"call_tool() takes the tool's name as a str, not {type(name).__name__}: "
                f"call_tool(name, json.dumps(arguments))"
            )
        entry = self._map.tools.get(name)
        if entry is None:
            raise ToolNotFoundError(name)
        if type(input_json) is not str and not isinstance(input_json, str):
            raise TypeError(
                f"call_tool() takes the arguments as JSON text (a str), not "
                f"{type(input_json).__name__}: call_tool({name!r}, json.dumps(arguments))"
            )
        try:
            result = await entry.execute(input_json)
        except ToolError as exc:
            raise ToolExecutionError(name, error_text(name, exc)) from exc
        return result if type(result) is str else _text_of(name, result)

    def tool_definitions_sorted(self) -> list[LlmToolDefinition]:
        """Every tool's definition, sorted by name: the same registrations give the same list."""
        return list(_sorted_definitions(self._map))

    def __len__(self) -> int:
        return len(self._map.tools)

    def __contains__(self, name: object) -> bool:
        return name in self._map.tools

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ToolServerHandle):
            return NotImplemented
        return self._map is other._map

    def __hash__(self) -> int:
        return id(self._map)

    def __repr__(self) -> str:
        return f"<ToolServerHandle tools={len(self._map.tools)}>"


def _sorted_definitions(tool_map: _ToolMap) -> tuple[LlmToolDefinition, ...]:
    cached = tool_map.sorted_definitions  # set once per change of the tools: read without a lock
    if cached is not None:
        return cached
    with tool_map.lock:
        if tool_map.sorted_definitions is None:
            tools = tool_map.tools
            tool_map.sorted_definitions = tuple(
                tools[name].meta.to_llm_definition() for name in sorted(tools)
            )
        return tool_map.sorted_definitions


def make_entries(
    definitions: Iterable[ToolDefinition],
    requires_approval: ApprovalPolicy | None,
    sequential: bool | None,
) -> dict[str, ToolEntry]:
    """Call each factory once (outside any lock) and check the batch's names."""
    batch: dict[str, ToolEntry] = {}
    for definition in _definitions_of(definitions):
        meta, tool = _call_factory(definition)
        if meta.name in batch:
            raise DuplicateToolError(meta.name)
        batch[meta.name] = ToolEntry(meta, tool, requires_approval, sequential)
    return batch


def _definitions_of(given: Iterable[ToolDefinition]) -> Iterator[ToolDefinition]:
    """``iter(given)``; for what is no iterable (an app, a tool method, one definition),
    a ``TypeError`` saying what to pass instead of Python's bare "is not iterable"."""
    try:
        return iter(given)
    except TypeError:
        if getattr(type(given), "__iter__", None) is not None:
            raise  # an __iter__ of its own failed: its error, as it is
    instead = _batch_instead(given)
    raise TypeError(
        f"register_tools() takes an iterable of tool definitions, not {instead}"
    ) from None


def _batch_instead(given: object) -> str:
    """What ``given``, refused as a batch, is, and the batch to pass (after "not ")."""
    if isinstance(given, BoundToolMethod):
        return f"a tool method ({given!r}): pass [app.{given.__name__}.definition()]"
    if isinstance(given, ToolMethod):
        return f"a tool method ({given!r}): pass [{given.__qualname__}.definition(app)]"
    if isinstance(given, type) and is_tool_registry(given):
        name = given.__qualname__
        return f"the @tool_registry class {name}: pass tool_definitions({name}(...))"
    if is_tool_registry(type(given)):
        name = type(given).__qualname__
        return f"a @tool_registry app ({name}): pass tool_definitions(app)"
    if callable(given):
        return (
            f"one definition ({type(given).__name__}): put it in a list, "
            f"register_tools([...]), or call register_tool(definition)"
        )
    return type(given).__name__


def add_entries(server: ToolServer, batch: dict[str, ToolEntry]) -> None:
    """Add ``batch`` to ``server``'s map, all or none (``DuplicateToolError`` for a taken name)."""
    tool_map = server._map
    with tool_map.lock:
        for name in batch:
            if name in tool_map.tools:
                raise DuplicateToolError(name)
        tool_map.tools = {**tool_map.tools, **batch}
        tool_map.sorted_definitions = None


def entry_of(handle: ToolServerHandle, name: str) -> ToolEntry | None:
    """The ``ToolEntry`` registered under ``name``: how the Worker and MCP resolve a call."""
    return handle._map.tools.get(name)


def sorted_definitions(handle: ToolServerHandle) -> tuple[LlmToolDefinition, ...]:
    """``tool_definitions_sorted()`` without the copy: for the Worker's every request."""
    return _sorted_definitions(handle._map)


def sorted_metas(handle: ToolServerHandle) -> list[ToolMeta]:
    """Every tool's whole ``ToolMeta``, sorted by name: what MCP lists (title, annotations...)."""
    tools = handle._map.tools  # a snapshot: the published dict is never mutated
    return [tools[name].meta for name in sorted(tools)]


def _text_of(name: str, result: object) -> str:
    """The text of what tool ``name`` returned; ``ToolExecutionError`` if it has none."""
    if isinstance(result, str):
        return result
    if not isinstance(result, ToolReturn):
        raise ToolExecutionError(name, call_text(NOT_TEXT, name, kind=type(result).__name__))
    try:
        text = text_of(result.parts())
        if result.metadata is not None:
            json_metadata(result.metadata)  # refused as the Worker refuses it
    except Exception as exc:  # a part that is not one, metadata that is not JSON
        kind = UNSENDABLE_RETURN.format(error=type(exc).__name__)
        raise ToolExecutionError(name, call_text(NOT_TEXT, name, kind=kind)) from exc
    return text


def error_text(name: str, exc: ToolError) -> str:
    """``str(exc)``, the text a model reads of tool ``name``'s error; if the error's own
    ``__str__`` fails, the "failed unexpectedly" text naming its class (the failure logged)."""
    try:
        text = str(exc)
        # A __str__ may return a str subclass: made plain here, inside the guard, as its
        # own methods (isascii, encode) would otherwise run, and raise, where nothing
        # catches them, ending the run.
        return text if type(text) is str else str.__str__(text)
    except BaseException as failure:  # an Exception, or a BaseException of the tool's own
        if passes_through(failure):
            raise
        logger.error(
            "Tool %r raised %s, whose text could not be made (%s)",
            name,
            type(exc).__name__,
            type(failure).__name__,
            exc_info=failure,
        )
        return call_text(UNEXPECTED, name, kind=type(exc).__name__)


def json_metadata(metadata: object) -> object:
    """A ``ToolReturn``'s ``metadata`` as the JSON data the run state keeps.

    Raises (``ValueError``, pydantic's ``PydanticSerializationError``...) if it is
    not JSON, NaN and the infinities included: kept, they would make every later
    ``RunState.to_json()`` of the conversation fail. ``ValueError`` too if it nests
    deeper than ``MAX_METADATA_DEPTH`` (100) levels, which a saved state could not be
    read back with.
    """
    # Imported here: pydantic_core costs `import llm_worker` about 20 ms.
    from pydantic_core import to_jsonable_python

    from ._codegen.runtime import inside_problem

    problem = inside_problem(metadata)  # an iterator in it would be read forever
    if problem is not None:
        raise TypeError(f"a ToolReturn's metadata must be JSON data: {problem}")
    data = to_jsonable_python(metadata)
    check_metadata(data)  # what RunState.to_json() will do with it, and from_json() read
    return data


def _call_factory(definition: ToolDefinition) -> tuple[ToolMeta, Tool]:
    _refuse_tool_method(definition)
    if not callable(definition):
        raise TypeError(
            f"a tool definition must be a callable returning (ToolMeta, Tool), "
            f"not {type(definition).__name__}"
        )
    made = definition()
    problem = _pair_problem(made)  # its type is what it should be, not what it is
    if problem is not None:
        raise TypeError(f"tool definition {definition!r} must return (ToolMeta, Tool), {problem}")
    return made


def _refuse_tool_method(given: object) -> None:
    """Refuse a tool method or a registry app given as a definition, before calling it:
    called, a tool method would run the tool itself (``db.reset`` deleting the rows)."""
    if isinstance(given, BoundToolMethod):
        name = given.__name__
        raise TypeError(
            f"{given!r} is a tool method, not its definition: register "
            f"app.{name}.definition(), or tool_definitions(app) for every tool of the app"
        )
    if isinstance(given, ToolMethod):
        raise TypeError(
            f"{given!r} is a tool method, not its definition: register "
            f"{given.__qualname__}.definition(app), or tool_definitions(app) for every tool "
            f"of the app"
        )
    if isinstance(given, type) and is_tool_registry(given):  # called, it would make an app
        name = given.__qualname__
        raise TypeError(
            f"the @tool_registry class {name} is not a tool definition: register "
            f"tool_definitions({name}(...)), its tools' definitions"
        )
    if is_tool_registry(type(given)):
        raise TypeError(
            f"a @tool_registry app ({type(given).__qualname__}) is not a tool definition: "
            f"register tool_definitions(app), its tools' definitions"
        )


def _pair_problem(made: object) -> str | None:
    """What is wrong with what a factory returned (after "must return (ToolMeta, Tool), "),
    or ``None`` if it is a ``(ToolMeta, Tool)``."""
    if not isinstance(made, tuple):
        return f"got {type(made).__name__}"
    pair = cast("tuple[object, ...]", made)
    if len(pair) != 2:
        return f"got a tuple of {len(pair)} items"
    meta, tool = pair
    got = f"got ({type(meta).__name__}, {type(tool).__name__})"
    if not isinstance(meta, ToolMeta):
        return f"{got}: the first item is not a ToolMeta"
    execute: object = getattr(tool, "execute", None)
    if execute is None:
        return f"{got}: {type(tool).__name__} has no execute method"
    if not callable(execute):
        return f"{got}: {type(tool).__name__}.execute is a {type(execute).__name__}, not a method"
    return None
