"""Quickstart: give an LLM the methods of a small issue tracker as tools.

Run it with:  python examples/quickstart.py

It declares an ordinary class, registers its tools on a ToolServer, prints the
tool definitions a model would receive, then calls each tool with JSON
arguments the way a model does, including calls a model gets wrong.
No network, no API key: the "model" here is this script.
"""

from __future__ import annotations

import json
import time
from typing import Annotated, Literal

import anyio
from pydantic import BaseModel

from llm_worker import (
    Description,
    ExecutionFailedError,
    ToolServer,
    ToolServerError,
    ToolServerHandle,
    tool,
    tool_registry,
)

# -- The data the tools take and return: ordinary pydantic models. --------------------------


class Label(BaseModel):
    name: Annotated[str, Description("Short label, e.g. 'bug' or 'docs'")]
    color: str = "grey"


class NewIssue(BaseModel):
    title: str
    body: str = ""
    labels: list[Label] = []


class Issue(BaseModel):
    id: int
    title: str
    status: Literal["open", "closed"]
    labels: list[str]


# -- The application: it holds its own state; @tool marks what a model may call. ------------


@tool_registry
class IssueTracker:
    """A tiny in-memory issue tracker."""

    def __init__(self, project: str) -> None:
        self.project = project
        self.issues: dict[int, Issue] = {}

    @tool
    async def file_issues(
        self, issues: Annotated[list[NewIssue], Description("The issues to file")]
    ) -> list[Issue]:
        """File new issues in the tracker.

        Returns the filed issues with the ids they were given.
        """
        filed: list[Issue] = []
        for new in issues:
            issue = Issue(
                id=len(self.issues) + 1,
                title=new.title,
                status="open",
                labels=[label.name for label in new.labels],
            )
            self.issues[issue.id] = issue
            filed.append(issue)
        return filed

    @tool
    async def search(
        self,
        query: Annotated[str, Description("Words to look for in issue titles")],
        status: Literal["open", "closed"] | None = None,
        limit: int = 10,
    ) -> list[Issue]:
        """Find issues whose title contains the query.

        Args:
            status: Only issues with this status (default: any).
            limit: At most this many issues.
        """
        words = query.lower().split()
        found = [
            issue
            for issue in self.issues.values()
            if all(word in issue.title.lower() for word in words)
            and (status is None or issue.status == status)
        ]
        return found[:limit]

    @tool
    def close_issue(self, issue_id: int, comment: str = "") -> str:
        """Close an issue, with an optional closing comment.

        Args:
            issue_id: The id of the issue to close.
            comment: Why it is being closed.
        """
        issue = self.issues.get(issue_id)
        if issue is None:
            # The text of a ToolError is exactly what the model reads.
            raise ExecutionFailedError(f"there is no issue #{issue_id} in {self.project}")
        time.sleep(0.05)  # stands in for a slow, blocking write; a plain def runs in a thread
        issue.status = "closed"
        return f"Closed #{issue_id}" + (f": {comment}" if comment else "")


# -- What a model-driven loop does: list the tools, then call them with JSON. ---------------


async def call(handle: ToolServerHandle, name: str, arguments: str) -> None:
    """Call one tool the way a model would, and print what the model would read."""
    print(f"\n>>> {name} {arguments}")
    try:
        print(await handle.call_tool(name, arguments))
    except ToolServerError as exc:
        print(f"error: {exc}")


async def main() -> None:
    tracker = IssueTracker(project="llm-worker")

    server = ToolServer()
    server.register_tools(
        [
            tracker.file_issues.definition(),
            tracker.search.definition(),
            tracker.close_issue.definition(),
        ]
    )
    handle = server.handle()

    # 1. The definitions sent to the model: name, description, JSON Schema.
    definitions = [d.to_dict() for d in handle.tool_definitions_sorted()]
    print(json.dumps(definitions, indent=2))

    # 2. Calls a model might make. Arguments arrive as JSON text.
    await call(
        handle,
        "file_issues",
        '{"issues": [{"title": "Crash on empty input", "labels": [{"name": "bug"}]},'
        ' {"title": "Document the quickstart", "labels": [{"name": "docs", "color": "blue"}]}]}',
    )
    await call(handle, "search", '{"query": "crash", "status": "open"}')
    await call(handle, "close_issue", '{"issue_id": 1, "comment": "fixed in 0.1.1"}')
    await call(handle, "search", '{"query": "crash"}')

    # 3. Calls a model gets wrong. Each error text is what the model reads next.
    await call(handle, "search", '{"query": 42, "limit": "5", "sort": "newest"}')
    await call(handle, "file_issues", '{"issues": [{"labels": [{"name": 7}]}]}')
    await call(handle, "close_issue", '{"issue_id": 99}')
    await call(handle, "delete_issue", '{"issue_id": 1}')


if __name__ == "__main__":
    anyio.run(main)
