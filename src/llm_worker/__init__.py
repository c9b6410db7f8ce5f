"""llm-worker: give an LLM the methods of your classes as tools.

Public API: the names in ``__all__`` (and ``llm_worker.testing``). Everything
in underscored modules is private.
"""

from __future__ import annotations

import contextlib

from ._decorators import (
    BoundToolMethod,
    ToolMethod,
    tool,
    tool_definitions,
    tool_metas,
    tool_registry,
)
from ._exceptions import (
    DuplicateToolError,
    ExecutionFailedError,
    InternalToolError,
    InvalidArgumentError,
    ToolError,
    ToolExecutionError,
    ToolNotFoundError,
    ToolServerError,
)
from ._meta import LlmToolDefinition, ToolMeta
from ._options import Description
from ._server import ToolServer, ToolServerHandle
from ._types import Tool, ToolDefinition

__version__ = "0.1.0"

__all__ = [
    "BoundToolMethod",
    "Description",
    "DuplicateToolError",
    "ExecutionFailedError",
    "InternalToolError",
    "InvalidArgumentError",
    "LlmToolDefinition",
    "Tool",
    "ToolDefinition",
    "ToolError",
    "ToolExecutionError",
    "ToolMeta",
    "ToolMethod",
    "ToolNotFoundError",
    "ToolServer",
    "ToolServerError",
    "ToolServerHandle",
    "tool",
    "tool_definitions",
    "tool_metas",
    "tool_registry",
]


def _set_public_module() -> None:
    # Tracebacks, reprs, docs and pickle show `llm_worker.ToolServer`, not the private module.
    namespace = globals()
    for name in __all__:
        obj = namespace[name]
        if getattr(obj, "__module__", "").startswith("llm_worker."):
            with contextlib.suppress(AttributeError, TypeError):  # aliases such as ToolDefinition
                obj.__module__ = "llm_worker"


_set_public_module()
