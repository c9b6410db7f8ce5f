"""llm-worker: give an LLM the methods of your classes as tools.

Public API: the names in ``__all__`` (and ``llm_worker.testing``). Everything
in underscored modules is private.
"""

from __future__ import annotations

import contextlib

from ._client import (
    Completion,
    LlmClient,
    LlmEvent,
    LlmRequest,
    TextDelta,
    ToolInputDelta,
    ToolUseStart,
    ToolUseStop,
)
from ._conversation import AssistantMessage, Message, ToolCall, ToolResult, Usage, UserMessage
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
    HookError,
    InternalToolError,
    InvalidArgumentError,
    LlmClientError,
    MaxTurnsExceededError,
    ProviderError,
    ToolError,
    ToolExecutionError,
    ToolNotFoundError,
    ToolServerError,
    WorkerAbortedError,
    WorkerError,
    WorkerStateError,
)
from ._formats import FORMATS, FormatName, export_tools
from ._hooks import (
    Abort,
    Continue,
    Pause,
    PostToolCallContext,
    PostToolCallDecision,
    PostToolCallHook,
    PreToolCallDecision,
    PreToolCallHook,
    Skip,
    ToolCallContext,
)
from ._limits import Limits
from ._meta import LlmToolDefinition, ToolMeta
from ._options import Description
from ._server import ToolServer, ToolServerHandle
from ._strict_schema import drop_introduced_nulls
from ._types import Tool, ToolDefinition
from ._worker import LockedWorker, Worker, WorkerResult

__version__ = "0.1.0"

__all__ = [
    "FORMATS",
    "Abort",
    "AssistantMessage",
    "BoundToolMethod",
    "Completion",
    "Continue",
    "Description",
    "DuplicateToolError",
    "ExecutionFailedError",
    "FormatName",
    "HookError",
    "InternalToolError",
    "InvalidArgumentError",
    "Limits",
    "LlmClient",
    "LlmClientError",
    "LlmEvent",
    "LlmRequest",
    "LlmToolDefinition",
    "LockedWorker",
    "MaxTurnsExceededError",
    "Message",
    "Pause",
    "PostToolCallContext",
    "PostToolCallDecision",
    "PostToolCallHook",
    "PreToolCallDecision",
    "PreToolCallHook",
    "ProviderError",
    "Skip",
    "TextDelta",
    "Tool",
    "ToolCall",
    "ToolCallContext",
    "ToolDefinition",
    "ToolError",
    "ToolExecutionError",
    "ToolInputDelta",
    "ToolMeta",
    "ToolMethod",
    "ToolNotFoundError",
    "ToolResult",
    "ToolServer",
    "ToolServerError",
    "ToolServerHandle",
    "ToolUseStart",
    "ToolUseStop",
    "Usage",
    "UserMessage",
    "Worker",
    "WorkerAbortedError",
    "WorkerError",
    "WorkerResult",
    "WorkerStateError",
    "drop_introduced_nulls",
    "export_tools",
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
