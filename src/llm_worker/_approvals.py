"""Calls held for a human's decision, and the decisions ``resume()`` takes.

When a response holds calls that need approval (``@tool(requires_approval=...)``,
``register_tool(..., requires_approval=...)``) or that a pre-hook paused, the
run pauses once for the whole response: ``worker.pending`` lists each held
call as a ``PendingCall``, and ``resume(decisions)`` takes one decision per
call id, ``Approve()`` (optionally with other arguments) or ``Deny(reason)``.
Each pause has an id of its own (``worker.pause_id``), which ``resume(...,
pause_id=...)`` checks.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from ._conversation import ToolCall
from ._meta import ToolMeta

__all__ = [
    "APPROVAL_NEEDED",
    "MAX_PAUSE_ID_CHARS",
    "PAUSE_ID_PATTERN",
    "Approve",
    "Decision",
    "Deny",
    "PendingCall",
    "new_pause_id",
]

APPROVAL_NEEDED = "requires approval"
"""The ``reason`` of a call held because its tool's approval policy asks for a person."""

MAX_PAUSE_ID_CHARS = 64
"""The longest pause id a saved state may hold (a worker makes them 16 characters long)."""
PAUSE_ID_PATTERN = r"^[!-~]+$"
"""What a saved pause id may hold: printable ASCII without spaces, safe to show and log."""


def new_pause_id() -> str:
    """A fresh, unguessable id for a pause (``secrets.token_hex(8)``, without its import);
    inside a Temporal workflow, one drawn from ``workflow.random()``, the same at each replay.

    Model call ids repeat across responses; a pause id names one pause, so a decision
    made for it (``resume(..., pause_id=...)``) can never decide a later one.
    """
    workflow = _temporal_workflow()
    if workflow is not None:
        return f"{workflow.random().getrandbits(64):016x}"
    return os.urandom(8).hex()


def _temporal_workflow() -> Any:
    """Temporal's ``workflow`` module when this runs inside a workflow, else ``None``.

    A workflow is replayed (after a worker restart, an eviction from its cache) and must
    make the same pause ids each time: a UI holds on to the id the feed showed.
    """
    # Looked up, not imported: temporalio is an optional extra, which a process without
    # durable runs need not have (or pay for); code running in a workflow has imported it.
    workflow = sys.modules.get("temporalio.workflow")
    if workflow is None or not workflow.in_workflow():
        return None
    return workflow


@dataclass(frozen=True)
class PendingCall:
    """A call waiting for a decision: the ``call`` as it would run, its tool's ``meta``, and why.

    ``reason`` is ``"requires approval"`` (``APPROVAL_NEEDED``) for a tool that needs approval, or
    the reason a pre-hook gave ``Pause(reason)``.
    """

    call: ToolCall
    meta: ToolMeta
    reason: str


@dataclass(frozen=True)
class Approve:
    """Run the call; with ``arguments`` (a JSON object, as text or a mapping), run it with those."""

    arguments: str | Mapping[str, Any] | None = None

    def input_json(self, call: ToolCall) -> str:
        """The argument JSON the approved call runs with."""
        arguments = self.arguments
        if arguments is None:
            return call.input_json
        if isinstance(arguments, str):
            parsed = json.loads(arguments, parse_constant=_not_json, parse_float=_finite)
            if not isinstance(parsed, dict):
                raise TypeError("the text is JSON, but not an object of arguments")
            return arguments
        if not isinstance(arguments, Mapping):  # dict() would take a list of pairs
            raise TypeError(f"{type(arguments).__name__} is not a mapping of names to values")
        return json.dumps(dict(arguments), ensure_ascii=False, allow_nan=False)


def _not_json(constant: str) -> float:
    raise ValueError(f"{constant} is not JSON")  # what a mapping's NaN gets from json.dumps


def _finite(number: str) -> float:
    value = float(number)
    if not math.isfinite(value):
        raise ValueError(f"{number} is out of range for a JSON number")
    return value


@dataclass(frozen=True)
class Deny:
    """Do not run the call; the model reads that it was denied, and ``reason``."""

    reason: str

    def __post_init__(self) -> None:
        if not isinstance(self.reason, str):  # the model reads it, the run state keeps it
            raise TypeError(f"Deny reason must be a str, not {type(self.reason).__name__}")


Decision: TypeAlias = Approve | Deny
"""What ``resume()`` takes for a pending call."""
