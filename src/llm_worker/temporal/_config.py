"""``ActivityConfig``: how Temporal runs one kind of activity (queue, timeouts, retries).

A ``DurableWorker`` has one for its model requests and one for its tool calls,
and a tool may have its own (say, to run on a task queue of its own machines);
a field left ``None`` is taken from the more general one.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import timedelta
from typing import Any

from temporalio.common import RetryPolicy

__all__ = ["ActivityConfig"]


@dataclass(frozen=True)
class ActivityConfig:
    """Options of the activities that run model requests or tool calls.

    - ``task_queue``: where they run (default: the workflow's own queue).
    - ``start_to_close_timeout``: how long one attempt may take. For tool calls
      the default is the worker's ``Limits.tool_timeout`` plus
      10 s (the tool's own timeout ends a slow call with the
      usual "timed out" result first; Temporal's ends an attempt whose worker
      is gone). One that is not longer than ``tool_timeout`` is refused, unless
      ``schedule_to_close_timeout`` or ``retry_policy.maximum_attempts`` bounds
      the attempts: a slow call would be cut off and run again without end. For
      model requests, 10 minutes.
    - ``schedule_to_close_timeout``: how long all attempts together may take.
    - ``heartbeat_timeout``: a running attempt that stops heartbeating for this
      long is retried elsewhere: how soon a crashed worker process's calls run
      again (without it, only ``start_to_close_timeout`` notices). The
      activities heartbeat on their own while a tool runs or a response streams.
    - ``retry_policy``: Temporal's ``RetryPolicy`` (default: Temporal's, which
      retries with backoff until a timeout above ends it). A ``ProviderError``
      with ``retryable=False`` is never retried, whatever the policy.
    """

    task_queue: str | None = None
    start_to_close_timeout: timedelta | None = None
    schedule_to_close_timeout: timedelta | None = None
    heartbeat_timeout: timedelta | None = None
    retry_policy: RetryPolicy | None = None

    def __post_init__(self) -> None:
        for name in ("start_to_close_timeout", "schedule_to_close_timeout", "heartbeat_timeout"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, timedelta) or value <= timedelta(0)):
                raise ValueError(
                    f"ActivityConfig.{name} must be a positive timedelta (or None), got {value!r}"
                )
        if self.retry_policy is not None and not isinstance(self.retry_policy, RetryPolicy):
            raise TypeError(
                f"ActivityConfig.retry_policy must be a temporalio.common.RetryPolicy, "
                f"not {type(self.retry_policy).__name__}"
            )

    def over(self, base: ActivityConfig) -> ActivityConfig:
        """This config, with the fields it leaves ``None`` taken from ``base``."""
        return ActivityConfig(
            **{
                f.name: getattr(self, f.name)
                if getattr(self, f.name) is not None
                else getattr(base, f.name)
                for f in fields(self)
            }
        )

    def activity_options(self, default_timeout: timedelta | None) -> dict[str, Any]:
        """The keywords of ``workflow.execute_activity`` this config gives."""
        start_to_close = self.start_to_close_timeout or default_timeout
        return {
            "task_queue": self.task_queue,
            "start_to_close_timeout": start_to_close,
            "schedule_to_close_timeout": self.schedule_to_close_timeout,
            "heartbeat_timeout": self.heartbeat_timeout,
            "retry_policy": self.retry_policy,
        }


TOOL_TIMEOUT_GRACE = timedelta(seconds=10)
"""Added to ``Limits.tool_timeout`` for a tool call activity's default start-to-close timeout."""

MODEL_REQUEST_TIMEOUT = timedelta(minutes=10)
"""A model request activity's default start-to-close timeout."""
