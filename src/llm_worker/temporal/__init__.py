"""Durable runs on Temporal: a Worker's conversation as a workflow (extra ``llm-worker[temporal]``).

The workflow runs the same turn loop as a process; each model request and each
tool call is a Temporal activity, retried by Temporal's policies and recorded
in the workflow's history, so a run survives crashes and its tools can run on
other machines. See docs/durable.md.

    DurableWorker               the definition both sides are built from: prompt, tools, hooks
    ActivityConfig              task queue, timeouts and retry policy of the activities
    ConversationWorkflow        the workflow base class: run, the decide update, the queries
    ConversationStart           the workflow's input; ConversationOutcome, its result
    Conversation                a handle on a run: start, pending, decide, events, result
    ConversationNotFoundError   no workflow has the conversation's id
    DefinitionChangedError      a worker's definition is not the one a run started with
    LlmWorkerPlugin             passes llm_worker through Temporal's workflow sandbox
"""

from __future__ import annotations

try:
    import temporalio  # noqa: F401  # pyright: ignore[reportUnusedImport]
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "llm_worker.temporal needs the temporal extra: pip install 'llm-worker[temporal]'"
    ) from exc

from ._config import ActivityConfig
from ._conversation import (
    Conversation,
    ConversationNotFoundError,
    ConversationResult,
    EventPage,
)
from ._definition import DefinitionChangedError
from ._durable import DurableWorker
from ._plugin import LlmWorkerPlugin
from ._workflow import ConversationOutcome, ConversationStart, ConversationWorkflow

__all__ = [
    "ActivityConfig",
    "Conversation",
    "ConversationNotFoundError",
    "ConversationOutcome",
    "ConversationResult",
    "ConversationStart",
    "ConversationWorkflow",
    "DefinitionChangedError",
    "DurableWorker",
    "EventPage",
    "LlmWorkerPlugin",
]
