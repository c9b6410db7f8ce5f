"""What fits in one Temporal payload: an activity's input, or its result.

The Temporal server refuses a payload over its blob size limit (its
``limit.blobSize.error``, 2 MiB by default). A workflow task that schedules an
activity with a larger input then fails again at every attempt, and an
activity whose result is larger is retried without end. So a durable run
measures what it sends, as Temporal's JSON converter writes it, against
``DurableWorker(max_payload_bytes=)``: a model request that would not fit
fails the run (its state goes with the failure), and a tool result that would
not fit is an error result the model reads.

Two more limits hold for what a workflow records and sends as a whole. The
server terminates a workflow whose history passes its history size limit
(``limit.historySize.error``, 50 MiB by default): its run's work is lost. So a
model request or tool call that, with room for its result, would take the
history past ``DurableWorker(max_history_bytes=)`` is not scheduled: the
request fails the run with its state, the call is an error result. And one
workflow task's commands travel in one gRPC message (4 MiB by default): a call
whose input would take its task's inputs past ``TASK_INPUT_BYTES`` waits for the
next workflow task (when a call of the batch completes).

An error's text goes out in a failure (an activity's, or the workflow's), which
the server refuses past the same blob size limit, and whose strings must be
UTF-8: ``bounded_text`` cuts it to ``MAX_FAILURE_TEXT`` characters and replaces
what UTF-8 cannot carry.
"""

from __future__ import annotations

import json

from .._safe_text import valid_unicode

__all__ = [
    "DEFAULT_MAX_HISTORY_BYTES",
    "DEFAULT_MAX_PAYLOAD_BYTES",
    "HISTORY_LIMIT_PATCH",
    "MAX_FAILURE_TEXT",
    "PAYLOAD_LIMIT_PATCH",
    "TASK_INPUT_BYTES",
    "bounded_text",
    "payload_size",
]

DEFAULT_MAX_PAYLOAD_BYTES = 2_000_000
"""Under the Temporal server's default limit (2 MiB), with room for the payload's metadata."""

DEFAULT_MAX_HISTORY_BYTES = 40_000_000
"""Under the Temporal server's default history limit (50 MiB), with room for the run's
failure and its state."""

TASK_INPUT_BYTES = 3_000_000
"""The most activity input one workflow task schedules (under gRPC's 4 MiB per message);
a single input larger than this still goes, alone in its task."""

PAYLOAD_LIMIT_PATCH = "llm-worker.max-payload-bytes"
"""The ``workflow.patched()`` id of the checks: a workflow an earlier version ran (which
sent what it was given) replays as it ran."""

HISTORY_LIMIT_PATCH = "llm-worker.history-and-task-limits"
"""The ``workflow.patched()`` id of the history and workflow task checks, likewise."""


def payload_size(value: object) -> int:
    """The bytes of ``value`` as Temporal's JSON converter writes it (compact, ASCII)."""
    return len(json.dumps(value, separators=(",", ":")))


MAX_FAILURE_TEXT = 10_000
"""The most characters of an error's text a failure carries. Temporal refuses a failure
over its blob size limit: a model request activity's completion is lost (it times out
and runs again, another paid request, without end), a workflow's failure fails its
workflow task at every attempt (the run never ends)."""


def bounded_text(text: str, limit: int = MAX_FAILURE_TEXT) -> str:
    """``text``, cut to ``limit`` characters (saying so), as valid Unicode: a lone
    surrogate, which UTF-8 cannot encode, would make the failure it goes in unsendable."""
    if len(text) > limit:
        text = f"{text[:limit]}... ({len(text) - limit} more characters)"
    return valid_unicode(text)
