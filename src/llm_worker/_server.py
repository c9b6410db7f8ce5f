"""``ToolServer`` owns the tool map; ``ToolServerHandle`` looks up and runs tools in it.

Guarantees (each one tested under the same words):

- ``register_tools`` registers all or none; each factory is called once, outside the lock.
- The server lock is never held while a tool runs.
- ``tool_definitions_sorted`` is sorted by name and byte-identical for the same registrations.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import cast

from typing_extensions import final

from ._exceptions import DuplicateToolError, ToolError, ToolExecutionError, ToolNotFoundError
from ._meta import LlmToolDefinition, ToolMeta
from ._model_texts import NOT_TEXT, UNEXPECTED
from ._types import Tool, ToolDefinition

__all__ = ["ToolServer", "ToolServerHandle", "call_for_model"]

logger = logging.getLogger("llm_worker")

_Entry = tuple[ToolMeta, Tool]


class _ToolMap:
    """The state a server and all its handles share.

    ``tools`` is copied on write: registration builds a new dict under the lock
    and swaps it in, so a lookup reads one consistent snapshot without locking.
    """

    __slots__ = ("lock", "sorted_definitions", "tools")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tools: dict[str, _Entry] = {}  # never mutated once published
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

    def register_tool(self, definition: ToolDefinition) -> None:
        """Call ``definition`` once and register the tool it makes.

        Raises ``DuplicateToolError`` if the name is taken.
        """
        self.register_tools((definition,))

    def register_tools(self, definitions: Iterable[ToolDefinition]) -> None:
        """Register a batch: all or none; each factory is called once, outside the lock.

        If any factory raises, or any name is taken or appears twice in the
        batch, nothing of the batch is added and the error propagates
        (``DuplicateToolError`` for names).
        """
        batch: dict[str, _Entry] = {}
        for definition in definitions:
            meta, tool = _call_factory(definition)
            if meta.name in batch:
                raise DuplicateToolError(meta.name)
            batch[meta.name] = (meta, tool)
        tool_map = self._map
        with tool_map.lock:
            for name in batch:
                if name in tool_map.tools:
                    raise DuplicateToolError(name)
            tool_map.tools = {**tool_map.tools, **batch}
            tool_map.sorted_definitions = None

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
        return self._map.tools.get(name)

    async def call_tool(self, name: str, input_json: str) -> str:
        """Run tool ``name`` on ``input_json`` and return its text.

        Raises ``ToolNotFoundError`` for an unknown name and
        ``ToolExecutionError`` (chained to the tool's ``ToolError``) when the
        tool fails. The server lock is never held while a tool runs.
        """
        entry = self._map.tools.get(name)
        if entry is None:
            raise ToolNotFoundError(name)
        try:
            return await entry[1].execute(input_json)
        except ToolError as exc:
            raise ToolExecutionError(name, str(exc)) from exc

    def tool_definitions_sorted(self) -> list[LlmToolDefinition]:
        """Every tool's definition, sorted by name: the same registrations give the same list."""
        tool_map = self._map
        with tool_map.lock:
            if tool_map.sorted_definitions is None:
                tools = tool_map.tools
                tool_map.sorted_definitions = tuple(
                    tools[name][0].to_llm_definition() for name in sorted(tools)
                )
            return list(tool_map.sorted_definitions)

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


def _call_factory(definition: ToolDefinition) -> _Entry:
    if not callable(definition):
        raise TypeError(
            f"a tool definition must be a callable returning (ToolMeta, Tool), "
            f"not {type(definition).__name__}"
        )
    made: object = definition()
    pair = cast("tuple[object, ...]", made) if isinstance(made, tuple) else ()
    if not (
        len(pair) == 2
        and isinstance(pair[0], ToolMeta)
        and callable(getattr(pair[1], "execute", None))
    ):
        raise TypeError(
            f"tool definition {definition!r} must return (ToolMeta, Tool), "
            f"got {type(made).__name__}"
        )
    return pair[0], cast(Tool, pair[1])


async def call_for_model(handle: ToolServerHandle, name: str, input_json: str) -> tuple[str, bool]:
    """Call a tool and return ``(text the model reads, is_error)``; ordinary failures never raise.

    Shared by the Worker and the MCP server, so a model reads the same text
    for the same failure wherever it called from. The full exception goes to
    the ``llm_worker`` logger.
    """
    try:
        content: object = await handle.call_tool(name, input_json)
    except ToolExecutionError as exc:
        logger.info("Tool %r failed: %s", name, exc.detail, exc_info=exc)
        return exc.detail, True
    except ToolNotFoundError as exc:
        return str(exc), True
    except Exception as exc:
        logger.exception("Tool %r raised %s", name, type(exc).__name__)
        return UNEXPECTED.format(name=name, kind=type(exc).__name__), True
    if isinstance(content, str):  # a str subclass (a StrEnum member) is text too
        return str.__str__(content), False
    logger.error("Tool %r returned %r, not a str", name, content)
    return NOT_TEXT.format(name=name, kind=type(content).__name__), True
