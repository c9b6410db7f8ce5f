"""A run goes on only with the definition it started with (``DurableWorker.definition()``).

A workflow's history is what its definition made of the run: a call held for
approval, a tool offered to the model. Code deployed later with another
definition would go on from that history as if it had made it: a paused call
whose tool no longer needs approval runs whatever the human decides; a paused
call of a tool removed is dropped. Temporal's replay does not see this (the
commands are the same), so the workflow checks it.

At its first workflow task the workflow records its definition's fingerprint in
its history, as two ``workflow.patched()`` markers: ``DEFINITION_PATCH`` (this
history has one) and ``DEFINITION_PATCH/<the fingerprint's first 16 hex digits>``.
A worker that replays the history later, with a definition whose fingerprint has
no marker, raises ``DefinitionChangedError``: the workflow task fails, and
Temporal retries it until a worker with the run's definition takes it. A history recorded before
the check (no ``DEFINITION_PATCH`` marker) goes on as it did.

The fingerprint alone does not say what changed; the definition
``Conversation.start`` put in the workflow's input does, when the run began with
it (its fingerprint has the marker).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from temporalio import workflow

from .._safe_text import bounded_repr

__all__ = ["DEFINITION_PATCH", "DefinitionChangedError", "check_definition"]

DEFINITION_PATCH = "llm-worker.definition"
"""The ``workflow.patched()`` id that marks a history whose definition is recorded."""

_MOST_CHANGES = 10  # named in the error; the rest are counted


class DefinitionChangedError(RuntimeError):
    """This worker's definition is not the one the run started with.

    Raised in the workflow, and not a Temporal failure: it fails the workflow task,
    which Temporal retries (the run waits, nothing of it changes) until a worker with
    the run's definition takes it.
    """


def check_definition(name: str, current: Mapping[str, Any], started: object) -> None:
    """Raise ``DefinitionChangedError`` unless the run's history was made by ``current``.

    ``name``: the DurableWorker's; ``started``: the definition the workflow's input
    carries (``None`` when it was not started by ``Conversation.start``). At the first
    workflow task this records ``current``'s fingerprint instead. Workflow code only.
    """
    if not workflow.patched(DEFINITION_PATCH):
        return  # a run started before definitions were recorded: nothing to hold it to
    if workflow.patched(_patch_id(current["fingerprint"])):
        return
    raise DefinitionChangedError(_changed_text(name, current, _started_with(started)))


def _started_with(started: object) -> Mapping[str, Any] | None:
    """The definition of the workflow's input if the run started with it: its
    fingerprint is in the history."""
    if not isinstance(started, Mapping):
        return None
    definition = cast("Mapping[str, Any]", started)
    fingerprint = definition.get("fingerprint")
    if not isinstance(fingerprint, str) or not isinstance(definition.get("tools"), Mapping):
        return None
    return definition if workflow.patched(_patch_id(fingerprint)) else None


def _patch_id(fingerprint: str) -> str:
    """The marker of a fingerprint: short (Temporal lists the patch ids of a workflow in
    its ``TemporalChangeVersion`` search attribute), long enough to tell two apart."""
    return f"{DEFINITION_PATCH}/{fingerprint.removeprefix('sha256:')[:16]}"


def _changed_text(name: str, current: Mapping[str, Any], started: Mapping[str, Any] | None) -> str:
    if started is None:
        what = "(the workflow's input does not say what it was: it was not started by "
        what += "Conversation.start)"
    else:
        changes = definition_changes(started, current)
        shown = changes[:_MOST_CHANGES]
        if len(changes) > len(shown):
            shown.append(f"and {len(changes) - len(shown)} more")
        what = "; ".join(shown)
    return (
        f"The definition of DurableWorker {name!r} is not the one this run started with: "
        f"{what}. A run goes on only with its own definition (its history was made by it): "
        f"run workers that have it for this workflow type until its runs end (deploy a "
        f"changed definition as a new workflow type, or with Temporal's worker versioning), "
        f"or end the run and continue its state in a new workflow (docs/durable.md). "
        f"Temporal retries this workflow task; nothing of the run changes meanwhile."
    )


def definition_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """What differs between two ``DurableWorker.definition()``s, as a developer reads it."""
    changes: list[str] = []
    if before.get("system_prompt") != after.get("system_prompt"):
        changes.append("the system prompt changed")
    if before.get("max_turns") != after.get("max_turns"):
        was, now = _shown(before.get("max_turns")), _shown(after.get("max_turns"))
        changes.append(f"max_turns was {was}, is {now}")
    old = _tools(before)
    new = _tools(after)
    for tool in sorted(old.keys() - new.keys()):
        changes.append(f"tool {_shown(tool)} was removed")
    for tool in sorted(new.keys() - old.keys()):
        changes.append(f"tool {_shown(tool)} was added")
    for tool in sorted(old.keys() & new.keys()):
        changes.extend(_tool_changes(tool, old[tool], new[tool]))
    return changes or ["its fingerprint differs"]


def _tools(definition: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    tools = definition.get("tools")
    if not isinstance(tools, Mapping):
        return {}
    return {
        str(name): cast("Mapping[str, Any]", tool)
        for name, tool in cast("Mapping[object, object]", tools).items()
        if isinstance(tool, Mapping)
    }


def _tool_changes(tool: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    changes: list[str] = []
    if before.get("definition") != after.get("definition"):
        changes.append(f"tool {_shown(tool)}: its description or input schema changed")
    for option in ("requires_approval", "sequential"):
        if before.get(option) != after.get(option):
            changes.append(
                f"tool {_shown(tool)}: {option} was {_shown(before.get(option))}, "
                f"is {_shown(after.get(option))}"
            )
    return changes


def _shown(value: object) -> str:
    """A value of a definition in the error, short: the input's may be anything."""
    return bounded_repr(value, 80)
