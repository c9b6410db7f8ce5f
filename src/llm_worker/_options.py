"""Small frozen values the decorators attach: ``Description`` and ``ToolOptions``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from ._limits import timeout_seconds
from ._meta import ToolAnnotations

if TYPE_CHECKING:
    from pydantic import GetJsonSchemaHandler
    from pydantic_core import CoreSchema

    from ._hooks import ApprovalPolicy

__all__ = ["Description", "ThreadOption", "ToolOptions"]

ThreadOption: TypeAlias = bool | Literal["dedicated"]
"""Where a plain-``def`` tool runs: a worker thread (``True``), the event loop's own
thread (``False``), or its app object's own thread (``"dedicated"``)."""


@dataclass(frozen=True)
class Description:
    """Describes a tool argument to the model: ``Annotated[str, Description("...")]``.

    It outranks ``Field(description=...)`` and the docstring. It also works
    inside nested types and in your own pydantic models.
    """

    text: str

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError(f"Description text must be a str, not {type(self.text).__name__}")

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        schema = handler(core_schema)
        schema["description"] = self.text
        return schema


@dataclass(frozen=True)
class ToolOptions:
    """What ``@tool(...)`` or ``@tool_registry(...)`` was given; ``None`` means "inherit".

    A tool's own options win over its registry's, which win over the defaults.
    """

    name: str | None = None
    thread: ThreadOption | None = None
    strict: bool | None = None
    timeout: float | None = None
    max_input_bytes: int | None = None
    max_input_depth: int | None = None
    requires_approval: ApprovalPolicy | None = None
    sequential: bool | None = None
    title: str | None = None
    annotations: ToolAnnotations | None = None

    def __post_init__(self) -> None:
        # Not `in (True, False, ...)`: 1 == True, and a tool runs by `thread is True`.
        if self.thread is not None and type(self.thread) is not bool and self.thread != "dedicated":
            raise ValueError(f"thread must be True, False or 'dedicated', not {self.thread!r}")
        policy = self.requires_approval
        if policy is not None and not (isinstance(policy, bool) or callable(policy)):
            raise TypeError(
                f"requires_approval must be True, False or a function of the call's "
                f"ToolCallContext returning a bool, not {policy!r}"
            )
        if self.title is not None and not isinstance(self.title, str):
            raise TypeError(f"title must be a str, not {self.title!r}")
        if self.annotations is not None and not isinstance(self.annotations, ToolAnnotations):
            raise TypeError(
                f"annotations must be a ToolAnnotations(read_only=..., destructive=...), "
                f"not {self.annotations!r}"
            )
        if self.sequential is not None and not isinstance(self.sequential, bool):
            raise TypeError(f"sequential must be True or False, not {self.sequential!r}")
        timeout = self.timeout
        if timeout is not None:
            if not isinstance(timeout, (int, float)) or isinstance(timeout, bool):
                raise TypeError(
                    f"timeout must be a number of seconds, not {type(timeout).__name__}"
                )
            if not timeout > 0:  # NaN too
                raise ValueError(f"timeout must be a positive number of seconds, got {timeout}")
            # 10**400 refused (no deadline can hold it); past NO_LIMIT_PAST, math.inf.
            seconds = timeout_seconds("timeout", timeout, no_limit="math.inf")
            object.__setattr__(self, "timeout", seconds)  # frozen: set once, here
        for name in ("max_input_bytes", "max_input_depth"):
            value = getattr(self, name)
            if value is None:
                continue
            if not isinstance(value, int) or isinstance(value, bool):  # NaN, 1.5, True
                raise TypeError(f"{name} must be an int, not {type(value).__name__} {value!r}")
            if value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")

    def over(self, defaults: ToolOptions) -> ToolOptions:
        """These options, with every unset one taken from ``defaults``."""
        return ToolOptions(
            name=self.name,
            thread=self.thread if self.thread is not None else defaults.thread,
            strict=self.strict if self.strict is not None else defaults.strict,
            timeout=self.timeout if self.timeout is not None else defaults.timeout,
            max_input_bytes=self.max_input_bytes
            if self.max_input_bytes is not None
            else defaults.max_input_bytes,
            max_input_depth=self.max_input_depth
            if self.max_input_depth is not None
            else defaults.max_input_depth,
            requires_approval=self.requires_approval
            if self.requires_approval is not None
            else defaults.requires_approval,
            sequential=self.sequential if self.sequential is not None else defaults.sequential,
            title=self.title,
            annotations=_merged(self.annotations, defaults.annotations),
        )


def _merged(
    own: ToolAnnotations | None, defaults: ToolAnnotations | None
) -> ToolAnnotations | None:
    if own is None or defaults is None:
        return own if own is not None else defaults
    return own.over(defaults)
