"""llm-worker: give an LLM the methods of your classes as tools.

Public API: the names in ``__all__`` (and ``llm_worker.testing``). Everything
in underscored modules is private.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import typing

if typing.TYPE_CHECKING:
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

# Where each public name is defined. `import llm_worker` loads none of these modules: each
# loads when one of its names is first used (PEP 562, as anyio does), so code that only
# declares tools never pays for the Worker. tests/test_exported_members.py checks that this
# table and the imports above (what type checkers read) name the same things.
_HOMES: dict[str, str] = {
    "Approve": "._approvals",
    "Decision": "._approvals",
    "Deny": "._approvals",
    "PendingCall": "._approvals",
    "Completion": "._client",
    "LlmClient": "._client",
    "LlmEvent": "._client",
    "LlmRequest": "._client",
    "OutputFormat": "._client",
    "ProviderItemDone": "._client",
    "ReasoningDelta": "._client",
    "TextDelta": "._client",
    "ToolChoice": "._client",
    "ToolInputDelta": "._client",
    "ToolUseStart": "._client",
    "ToolUseStop": "._client",
    "ContentPart": "._content",
    "DataPart": "._content",
    "MediaPart": "._content",
    "TextPart": "._content",
    "ToolReturn": "._content",
    "ToolContext": "._context",
    "AssistantMessage": "._conversation",
    "Message": "._conversation",
    "ProviderItem": "._conversation",
    "RunUsage": "._conversation",
    "ToolCall": "._conversation",
    "ToolResult": "._conversation",
    "Usage": "._conversation",
    "UserMessage": "._conversation",
    "tool": "._decorators",
    "tool_definitions": "._decorators",
    "tool_metas": "._decorators",
    "tool_registry": "._decorators",
    "ApprovalRequested": "._events",
    "ResponseCompleted": "._events",
    "ResponseStarted": "._events",
    "RunAborted": "._events",
    "RunEvent": "._events",
    "RunFailed": "._events",
    "RunFinished": "._events",
    "RunPaused": "._events",
    "ToolCallFinished": "._events",
    "ToolCallOutcome": "._events",
    "ToolCallProgress": "._events",
    "ToolCallReady": "._events",
    "ToolCallRunning": "._events",
    "DuplicateToolError": "._exceptions",
    "ExecutionFailedError": "._exceptions",
    "HookError": "._exceptions",
    "InternalToolError": "._exceptions",
    "InvalidArgumentError": "._exceptions",
    "LlmClientError": "._exceptions",
    "MaxTurnsExceededError": "._exceptions",
    "OutputValidationError": "._exceptions",
    "ProviderError": "._exceptions",
    "RunStateError": "._exceptions",
    "ToolError": "._exceptions",
    "ToolExecutionError": "._exceptions",
    "ToolNotFoundError": "._exceptions",
    "ToolServerError": "._exceptions",
    "UsageLimitExceededError": "._exceptions",
    "WorkerAbortedError": "._exceptions",
    "WorkerError": "._exceptions",
    "WorkerStateError": "._exceptions",
    "FORMATS": "._formats",
    "FormatName": "._formats",
    "export_tools": "._formats",
    "Abort": "._hooks",
    "ApprovalPolicy": "._hooks",
    "Continue": "._hooks",
    "Pause": "._hooks",
    "PostToolCallContext": "._hooks",
    "PostToolCallDecision": "._hooks",
    "PostToolCallHook": "._hooks",
    "PreToolCallDecision": "._hooks",
    "PreToolCallHook": "._hooks",
    "Skip": "._hooks",
    "SyntheticResult": "._hooks",
    "ToolCallContext": "._hooks",
    "Instrumentation": "._instrumentation",
    "RequestSpan": "._instrumentation",
    "RunSpan": "._instrumentation",
    "ToolSpan": "._instrumentation",
    "Limits": "._limits",
    "LlmToolDefinition": "._meta",
    "ToolAnnotations": "._meta",
    "ToolMeta": "._meta",
    "Description": "._options",
    "BoundToolMethod": "._registry",
    "ToolMethod": "._registry",
    "is_tool_registry": "._registry",
    "RunStream": "._run",
    "ToolServer": "._server",
    "ToolServerHandle": "._server",
    "RunState": "._state",
    "drop_introduced_nulls": "._strict_schema",
    "Tool": "._types",
    "ToolDefinition": "._types",
    "LockedWorker": "._worker",
    "RunStateWarning": "._worker",
    "Worker": "._worker",
    "WorkerResult": "._worker",
}


_NOT_YET = object()
_NAMES_OF: dict[str, list[str]] = {  # module -> its public names, from _HOMES
    home: [name for name, of in _HOMES.items() if of == home]
    for home in dict.fromkeys(_HOMES.values())
}
_presented: set[str] = set()  # the modules whose names are all presented


def _present_loaded() -> None:
    """Present, as ``llm_worker.X``, every public name of each module loaded so far.

    Tracebacks, reprs, docs and pickle then show `llm_worker.ToolServer`, not the private
    module, also for a value the library made before anyone looked its name up here.
    """
    namespace = globals()
    for home, names in _NAMES_OF.items():
        module = sys.modules.get(__name__ + home)
        if home in _presented or module is None:
            continue
        complete = True
        for name in names:
            value = getattr(module, name, _NOT_YET)
            if value is _NOT_YET:  # the module is still being imported (by another thread)
                complete = False
                continue
            home_name = getattr(value, "__module__", "")
            if home_name.startswith("llm_worker."):
                with contextlib.suppress(AttributeError, TypeError):  # aliases: ToolDefinition
                    # The same type: a name that is also a descriptor stays one.
                    value.__module__ = type(home_name)(__name__)
            namespace[name] = value
        if complete:
            _presented.add(home)


if not typing.TYPE_CHECKING:  # type checkers read the imports above, and refuse unknown names

    def __getattr__(name: str) -> typing.Any:
        home = _HOMES.get(name)
        if home is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        importlib.import_module(home, __name__)
        _present_loaded()  # its imports loaded other modules of public names too
        return globals()[name]

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})
