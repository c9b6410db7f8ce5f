"""``LlmWorkerPlugin``: lets llm_worker run inside Temporal's workflow sandbox.

Temporal re-imports a workflow's modules in a sandbox for every workflow run,
so that module-level state cannot leak between runs. llm_worker and the
libraries it is built on keep no state a run could see, so the plugin passes
them through: they are imported once, outside, and shared (as Temporal does
for its own modules and the standard library). Without it, each workflow run
would import pydantic again.

Give it to the Temporal ``Worker`` and the ``Replayer`` that run
``ConversationWorkflow``s: ``Worker(..., plugins=[LlmWorkerPlugin()])``.
"""

from __future__ import annotations

import dataclasses

from temporalio.plugin import SimplePlugin
from temporalio.worker import WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

__all__ = ["PASSED_THROUGH", "LlmWorkerPlugin"]

PASSED_THROUGH = (
    "llm_worker",
    "pydantic",
    "pydantic_core",
    "annotated_types",
    "typing_inspection",
    "typing_extensions",
    "anyio",
    "sniffio",
    "docstring_parser",
)
"""The modules the plugin passes through the sandbox: llm_worker and its dependencies."""


class LlmWorkerPlugin(SimplePlugin):
    """A Temporal worker plugin: passes llm_worker through the workflow sandbox."""

    def __init__(self) -> None:
        super().__init__(  # pyright: ignore[reportUnknownMemberType]
            "llm_worker.LlmWorkerPlugin", workflow_runner=_pass_through
        )


def _pass_through(runner: WorkflowRunner | None) -> WorkflowRunner:
    if runner is None:
        runner = SandboxedWorkflowRunner()
    if isinstance(runner, SandboxedWorkflowRunner):
        restrictions = runner.restrictions.with_passthrough_modules(*PASSED_THROUGH)
        return dataclasses.replace(runner, restrictions=restrictions)
    return runner  # an unsandboxed runner needs nothing
