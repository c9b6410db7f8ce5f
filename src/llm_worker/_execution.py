"""Running one resolved tool call for a model: the one place its outcome becomes text.

``execute_call`` is shared by the Worker and the MCP server: a ``ToolError``
becomes its text, any other exception the "failed unexpectedly" text (with
the traceback logged, never shown), a result that is not text the "not text"
one, and the result is made valid Unicode and capped. Only cancellation,
``KeyboardInterrupt`` and ``SystemExit`` propagate (``passes_through``), as
from a generated tool. ``ToolServerHandle.call_tool`` keeps its own,
documented, wrapping for direct callers.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from ._content import ContentPart, MediaPart, TextPart, ToolReturn, text_of
from ._context import ToolContext
from ._conversation import ToolCall, ToolResult
from ._exceptions import (
    ExecutionFailedError,
    InternalToolError,
    InvalidArgumentError,
    ToolError,
    passes_through,
)
from ._limits import Limits, cap_result, cap_texts, input_limit_problem
from ._model_texts import MEDIA_DROPPED, NOT_TEXT, TIMED_OUT, UNEXPECTED, call_text
from ._safe_text import valid_unicode
from ._server import ToolEntry
from ._timeouts import TimedOut, within

__all__ = ["execute_call", "rich_result", "timed_out", "valid_text"]

logger = logging.getLogger("llm_worker")


async def execute_call(
    entry: ToolEntry,
    call: ToolCall,
    limits: Limits | None,
    context: ToolContext[Any] | None,
    *,
    timed: bool = True,
) -> ToolResult:
    """Run ``call`` on ``entry``'s tool within ``limits``: the result the model reads.

    ``limits`` (a Worker's) add input limits, a timeout and a result cap to the
    tool's own; ``None`` applies only the tool's. ``timed=False``: the caller
    holds ``limits.tool_timeout`` itself, and gives ``timed_out()`` when it
    expires. ``context`` is passed to a tool that takes one.
    """
    if limits is None:
        return await _execute(entry, call, context, math.inf, math.inf)
    problem = input_limit_problem(call.input_json, limits.max_input_bytes, limits.max_input_depth)
    if problem is not None:
        logger.info("Tool %r refused its input: %s", call.name, problem)
        return ToolResult(call.id, str(InvalidArgumentError(problem)), True)
    timeout = limits.tool_timeout
    caps = (limits.max_result_bytes, limits.max_media_bytes)
    if timeout is None or not timed:
        return await _execute(entry, call, context, *caps)
    result = await within(_execute(entry, call, context, *caps), timeout)
    return timed_out(call, timeout) if isinstance(result, TimedOut) else result


def timed_out(call: ToolCall, seconds: float) -> ToolResult:
    """The result of a call that ran past its ``seconds``."""
    logger.info("Tool %r timed out after %ss", call.name, seconds)
    text = str(ExecutionFailedError(call_text(TIMED_OUT, call.name, seconds=seconds)))
    return ToolResult(call.id, text, True)


async def _execute(
    entry: ToolEntry,
    call: ToolCall,
    context: ToolContext[Any] | None,
    max_bytes: float,
    max_media_bytes: float,
) -> ToolResult:
    try:
        with_context = entry.execute_with_context
        if with_context is not None and context is not None:
            content: object = await with_context(call.input_json, context)
        else:
            content = await entry.execute(call.input_json)
    except ToolError as exc:
        _log_failure(call.name, exc)
        return ToolResult(call.id, valid_text(str(exc), max_bytes), True)
    except GeneratorExit:
        raise  # the call is being closed: a coroutine lets that through
    except BaseException as exc:  # an Exception, or a BaseException of the tool's own
        if passes_through(exc):
            raise
        logger.error("Tool %r raised %s", call.name, type(exc).__name__, exc_info=exc)
        return ToolResult(call.id, call_text(UNEXPECTED, call.name, kind=type(exc).__name__), True)
    if type(content) is str or isinstance(content, str):  # a StrEnum member is text too
        return ToolResult(call.id, valid_text(str.__str__(content), max_bytes))
    if isinstance(content, ToolReturn):
        try:
            return rich_result(call, content, max_bytes, max_media_bytes)
        except Exception as exc:  # parts that are not parts, metadata that is not JSON
            logger.error("Tool %r returned a bad ToolReturn", call.name, exc_info=exc)
            kind = f"a ToolReturn that cannot be sent ({type(exc).__name__})"
            return ToolResult(call.id, call_text(NOT_TEXT, call.name, kind=kind), True)
    logger.error("Tool %r returned %s, not a str", call.name, type(content).__name__)
    return ToolResult(call.id, call_text(NOT_TEXT, call.name, kind=type(content).__name__), True)


def rich_result(
    call: ToolCall, returned: ToolReturn, max_bytes: float, max_media_bytes: float
) -> ToolResult:
    """A ``ToolReturn`` as the result the model reads: every text within the result cap, the
    media within ``max_media_bytes`` (a part past it is replaced by a note saying so)."""
    given = returned.parts()
    # The texts share the cap, in order: the one that crosses it is cut, those after it
    # are left out (each part given room of its own would let many parts past it).
    originals = [
        part.text if isinstance(part, TextPart) else part.json_text
        for part in given
        if not isinstance(part, MediaPart)
    ]
    texts = [valid_unicode(text) for text in originals]
    if max_bytes != math.inf:
        texts = cap_texts(texts, int(max_bytes), separator=1)
    parts: list[ContentPart] = []
    media_budget = max_media_bytes
    position = 0
    for part in given:
        if isinstance(part, MediaPart):
            if part.size > media_budget:
                parts.append(
                    TextPart(
                        call_text(
                            MEDIA_DROPPED,
                            call.name,
                            media_type=part.media_type,
                            size=part.size,
                            limit=int(max_media_bytes),
                        )
                    )
                )
                continue
            media_budget -= part.size
            parts.append(part)
            continue
        if position == len(texts):
            continue  # past the cap
        text = texts[position]
        if isinstance(part, TextPart) or text is not originals[position]:
            parts.append(TextPart(text))
        else:
            parts.append(part)
        position += 1
    metadata = returned.metadata
    if metadata is not None:
        # Imported here: pydantic_core costs `import llm_worker` about 20 ms.
        from pydantic_core import to_jsonable_python

        metadata = to_jsonable_python(metadata)  # the run state keeps it as JSON
    only_text = all(isinstance(part, TextPart) for part in parts)
    content = text_of(parts)
    if only_text and metadata is None:
        return ToolResult(call.id, content)  # as cheap and as plain as a str result
    return ToolResult(call.id, content, False, tuple(parts), metadata)


def _log_failure(name: str, exc: ToolError) -> None:
    # A tool's bug (an exception the tool did not raise on purpose, wrapped by a
    # generated tool) is logged like a hand-written tool's: at ERROR, with its traceback.
    cause = exc.__cause__
    if (
        isinstance(exc, (ExecutionFailedError, InternalToolError))
        and isinstance(cause, Exception)
        and not isinstance(cause, ToolError)
    ):
        logger.error("Tool %r raised %s: %s", name, type(cause).__name__, exc, exc_info=cause)
    else:
        logger.info("Tool %r failed: %s", name, exc)


def valid_text(text: str, max_bytes: float) -> str:
    """``text`` as valid Unicode (lone surrogates become U+FFFD), capped at ``max_bytes``.

    A lone surrogate (say a file name ``os.listdir`` decoded with surrogateescape)
    in the history would make every later request of the conversation fail to encode.
    """
    text = valid_unicode(text)
    if max_bytes == math.inf:
        return text
    return cap_result(text, int(max_bytes))
