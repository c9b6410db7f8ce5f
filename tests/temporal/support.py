"""What the durable-run tests share: a Temporal worker in the test process, waiting, history."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Worker

from llm_worker.temporal import Conversation, ConversationResult, LlmWorkerPlugin


@asynccontextmanager
async def temporal_worker(
    client: Client,
    task_queue: str,
    *,
    workflows: Sequence[type] = (),
    activities: Sequence[Callable[..., Any]] = (),
    **options: Any,
) -> AsyncIterator[Worker]:
    """A Temporal worker polling ``task_queue`` in this process, for the block's duration."""
    async with Worker(
        client,
        task_queue=task_queue,
        workflows=list(workflows),
        activities=list(activities),
        plugins=[LlmWorkerPlugin()],
        **options,
    ) as worker:
        yield worker


async def finished(conversation: Conversation, seconds: float = 60) -> ConversationResult:
    """The run's result, or a failure of the test if it takes longer than ``seconds``."""
    with anyio.fail_after(seconds):
        return await conversation.result()


def workflow_id() -> str:
    return f"conversation-{uuid.uuid4().hex[:12]}"


async def wait_for_status(conversation: Conversation, status: str, seconds: float = 30) -> None:
    """Poll the ``status`` query until it answers ``status``."""
    with anyio.fail_after(seconds):
        while (now := await conversation.status()) != status:
            assert now not in ("finished", "failed") or now == status, now
            await anyio.sleep(0.05)


async def wait_for_events(
    conversation: Conversation, kind: str, number: int, seconds: float = 30
) -> None:
    """Poll the event feed until it has ``number`` events of type ``kind``."""
    with anyio.fail_after(seconds):
        while True:
            page = await conversation.events()
            if sum(1 for event in page.events if event["type"] == kind) >= number:
                return
            await anyio.sleep(0.05)


async def wait_until(check: Callable[[], bool], seconds: float = 30) -> None:
    with anyio.fail_after(seconds):
        while not check():
            await anyio.sleep(0.05)


async def history_events(handle: WorkflowHandle[Any, Any]) -> list[HistoryEvent]:
    history = await handle.fetch_history()
    return list(history.events)


def activity_types(events: Sequence[HistoryEvent]) -> list[str]:
    """The activity type of each activity the workflow scheduled, in order."""
    return [
        event.activity_task_scheduled_event_attributes.activity_type.name
        for event in events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]


def count(events: Sequence[HistoryEvent], kind: int) -> int:
    return sum(1 for event in events if event.event_type == kind)
