"""What fits in one Temporal payload: an activity's input, or its result.

The Temporal server refuses a payload over its blob size limit (its
``limit.blobSize.error``, 2 MiB by default). A workflow task that schedules an
activity with a larger input then fails again at every attempt, and an
activity whose result is larger is retried without end. So a durable run
measures what it sends, as Temporal's JSON converter writes it, against
``DurableWorker(max_payload_bytes=)``: a model request that would not fit
fails the run (its state goes with the failure), and a tool result that would
not fit is an error result the model reads.
"""

from __future__ import annotations

import json

__all__ = ["DEFAULT_MAX_PAYLOAD_BYTES", "PAYLOAD_LIMIT_PATCH", "payload_size"]

DEFAULT_MAX_PAYLOAD_BYTES = 2_000_000
"""Under the Temporal server's default limit (2 MiB), with room for the payload's metadata."""

PAYLOAD_LIMIT_PATCH = "llm-worker.max-payload-bytes"
"""The ``workflow.patched()`` id of the checks: a workflow an earlier version ran (which
sent what it was given) replays as it ran."""


def payload_size(value: object) -> int:
    """The bytes of ``value`` as Temporal's JSON converter writes it (compact, ASCII)."""
    return len(json.dumps(value, separators=(",", ":")))
