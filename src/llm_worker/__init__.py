"""llm-worker: give an LLM the methods of your classes as tools.

Public API: the names in ``__all__`` (and ``llm_worker.testing``). Everything
in underscored modules is private.
"""

from __future__ import annotations

import contextlib

from ._approvals import Approve, Decision, Deny, PendingCall
from ._client import (
    Completion,
    LlmClient,
    LlmEvent,
    LlmRequest,
    OutputFormat,
    ProviderItemDone,
    ReasoningDelta,
    TextDelta,
    ToolChoice,
    ToolInputDelta,
    ToolUseStart,
    ToolUseStop,
)
from ._content import ContentPart, DataPart, MediaPart, TextPart, ToolReturn
from ._context import ToolContext
from ._conversation import (
    AssistantMessage,
    Message,
    ProviderItem,
    RunUsage,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from ._decorators import tool, tool_definitions, tool_metas, tool_registry
from ._events import (
    ApprovalRequested,
    ResponseCompleted,
    ResponseStarted,
    RunAborted,
    RunEvent,
    RunFailed,
    RunFinished,
    RunPaused,
    ToolCallFinished,
    ToolCallOutcome,
    ToolCallProgress,
    ToolCallReady,
    ToolCallRunning,
)
from ._exceptions import (
    DuplicateToolError,
    ExecutionFailedError,
    HookError,
    InternalToolError,
    InvalidArgumentError,
    LlmClientError,
    MaxTurnsExceededError,
    OutputValidationError,
    ProviderError,
    RunStateError,
    ToolError,
    ToolExecutionError,
    ToolNotFoundError,
    ToolServerError,
    UsageLimitExceededError,
    WorkerAbortedError,
    WorkerError,
    WorkerStateError,
)
from ._formats import FORMATS, FormatName, export_tools
from ._hooks import (
    Abort,
    ApprovalPolicy,
    Continue,
    Pause,
    PostToolCallContext,
    PostToolCallDecision,
    PostToolCallHook,
    PreToolCallDecision,
    PreToolCallHook,
    Skip,
    SyntheticResult,
    ToolCallContext,
)
from ._instrumentation import Instrumentation, RequestSpan, RunSpan, ToolSpan
from ._limits import Limits
from ._meta import LlmToolDefinition, ToolAnnotations, ToolMeta
from ._options import Description
from ._registry import BoundToolMethod, ToolMethod, is_tool_registry
from ._run import RunStream
from ._server import ToolServer, ToolServerHandle
from ._state import RunState
from ._strict_schema import drop_introduced_nulls
from ._types import Tool, ToolDefinition
from ._worker import LockedWorker, RunStateWarning, Worker, WorkerResult

__version__ = "0.1.0"

__all__ = [
    "FORMATS",
    "Abort",
    "ApprovalPolicy",
    "ApprovalRequested",
    "Approve",
    "AssistantMessage",
    "BoundToolMethod",
    "Completion",
    "ContentPart",
    "Continue",
    "DataPart",
    "Decision",
    "Deny",
    "Description",
    "DuplicateToolError",
    "ExecutionFailedError",
    "FormatName",
    "HookError",
    "Instrumentation",
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
    "MediaPart",
    "Message",
    "OutputFormat",
    "OutputValidationError",
    "Pause",
    "PendingCall",
    "PostToolCallContext",
    "PostToolCallDecision",
    "PostToolCallHook",
    "PreToolCallDecision",
    "PreToolCallHook",
    "ProviderError",
    "ProviderItem",
    "ProviderItemDone",
    "ReasoningDelta",
    "RequestSpan",
    "ResponseCompleted",
    "ResponseStarted",
    "RunAborted",
    "RunEvent",
    "RunFailed",
    "RunFinished",
    "RunPaused",
    "RunSpan",
    "RunState",
    "RunStateError",
    "RunStateWarning",
    "RunStream",
    "RunUsage",
    "Skip",
    "SyntheticResult",
    "TextDelta",
    "TextPart",
    "Tool",
    "ToolAnnotations",
    "ToolCall",
    "ToolCallContext",
    "ToolCallFinished",
    "ToolCallOutcome",
    "ToolCallProgress",
    "ToolCallReady",
    "ToolCallRunning",
    "ToolChoice",
    "ToolContext",
    "ToolDefinition",
    "ToolError",
    "ToolExecutionError",
    "ToolInputDelta",
    "ToolMeta",
    "ToolMethod",
    "ToolNotFoundError",
    "ToolResult",
    "ToolReturn",
    "ToolServer",
    "ToolServerError",
    "ToolServerHandle",
    "ToolSpan",
    "ToolUseStart",
    "ToolUseStop",
    "Usage",
    "UsageLimitExceededError",
    "UserMessage",
    "Worker",
    "WorkerAbortedError",
    "WorkerError",
    "WorkerResult",
    "WorkerStateError",
    "drop_introduced_nulls",
    "export_tools",
    "is_tool_registry",
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
