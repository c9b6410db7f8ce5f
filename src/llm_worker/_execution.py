"""Running one resolved tool call for a model: the one place its outcome becomes text.

``execute_call`` is shared by the Worker and the MCP server: a ``ToolError``
becomes its text, any other exception the "failed unexpectedly" text (with
the traceback logged, never shown), a result that is not text the "not text"
one, and the result is capped and made valid Unicode. Only cancellation,
``KeyboardInterrupt`` and ``SystemExit`` propagate (``passes_through``), as
from a generated tool: not what a tool's own objects raise (an error whose
``__str__`` fails, a result whose ``__class__`` does), which would cancel
the calls beside it. ``ToolServerHandle.call_tool`` keeps its own,
documented, wrapping for direct callers.
"""

from __future__ import annotations

import logging
import math
from typing import Any, NamedTuple

from ._content import ContentPart, DataPart, MediaPart, TextPart, ToolReturn, text_of
from ._context import ToolContext
from ._conversation import ToolCall, ToolResult
from ._exceptions import (
    ExecutionFailedError,
    InternalToolError,
    InvalidArgumentError,
    ToolError,
    passes_through,
)
from ._limits import WITHIN_LIMITS, Limits, cap_result, cap_texts, input_limit_problem
from ._model_texts import (
    MEDIA_DROPPED,
    MEDIA_PARTS_DROPPED,
    NOT_TEXT,
    TIMED_OUT,
    UNEXPECTED,
    UNSENDABLE_RETURN,
    call_text,
    shown_media_type,
)
from ._safe_text import valid_unicode
from ._server import ToolEntry, error_text, json_metadata
from ._timeouts import TimedOut, within

__all__ = ["MAX_MEDIA_PARTS", "execute_call", "rich_result", "timed_out", "valid_text"]

logger = logging.getLogger("llm_worker")

MAX_MEDIA_PARTS = 100
"""The media parts one result holds at most, under a Worker's ``Limits`` (what Anthropic
takes in one request): each costs a block of the request whatever its size, and notes
in place of dropped ones would otherwise be as many as the tool made parts."""


class _Caps(NamedTuple):
    """What one result may hold: text bytes, media bytes, media parts."""

    max_bytes: float
    max_media_bytes: float
    max_media_parts: float


_NO_CAPS = _Caps(math.inf, math.inf, math.inf)


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
    tool's own; ``None`` applies only the tool's. The input, once found within
    them, is marked so while the tool runs (``WITHIN_LIMITS``): a generated tool
    whose own limits are no stricter does not scan it again. ``timed=False``: the
    caller holds ``limits.tool_timeout`` itself, and gives ``timed_out()`` when it
    expires. ``context`` is passed to a tool that takes one.
    """
    if limits is None:
        return await _execute(entry, call, context, _NO_CAPS)
    checked = (call.input_json, limits.max_input_bytes, limits.max_input_depth)
    problem = input_limit_problem(*checked)
    if problem is not None:
        logger.info("Tool %r refused its input: %s", call.name, problem)
        return ToolResult(call.id, str(InvalidArgumentError(problem)), True)
    timeout = limits.tool_timeout
    caps = _Caps(limits.max_result_bytes, limits.max_media_bytes, MAX_MEDIA_PARTS)
    mark = WITHIN_LIMITS.set(checked)
    try:
        if timeout is None or not timed:
            return await _execute(entry, call, context, caps)
        result = await within(_execute(entry, call, context, caps), timeout)
    finally:
        WITHIN_LIMITS.reset(mark)
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
    caps: _Caps,
) -> ToolResult:
    try:
        with_context = entry.execute_with_context
        if with_context is not None and context is not None:
            content: object = await with_context(call.input_json, context)
        else:
            content = await entry.execute(call.input_json)
    except ToolError as exc:
        text = error_text(call.name, exc)
        _log_failure(call.name, exc, text)
        return ToolResult(call.id, valid_text(text, caps.max_bytes), True)
    except GeneratorExit:
        raise  # the call is being closed: a coroutine lets that through
    except BaseException as exc:  # an Exception, or a BaseException of the tool's own
        if passes_through(exc):
            raise
        return _unexpected(call, exc, "raised")
    try:
        return _result_of(call, content, caps)
    except BaseException as exc:  # the result's own code (a __class__ property, a generator)
        if passes_through(exc):
            raise
        return _unexpected(call, exc, "returned a result whose reading raised")


def _result_of(call: ToolCall, content: object, caps: _Caps) -> ToolResult:
    if type(content) is str or isinstance(content, str):  # a StrEnum member is text too
        return ToolResult(call.id, valid_text(str.__str__(content), caps.max_bytes))
    if isinstance(content, ToolReturn):
        try:
            return rich_result(call, content, caps)
        except Exception as exc:  # parts that are not parts, metadata that is not JSON
            logger.error("Tool %r returned a bad ToolReturn", call.name, exc_info=exc)
            kind = UNSENDABLE_RETURN.format(error=type(exc).__name__)
            return ToolResult(call.id, call_text(NOT_TEXT, call.name, kind=kind), True)
    logger.error("Tool %r returned %s, not a str", call.name, type(content).__name__)
    return ToolResult(call.id, call_text(NOT_TEXT, call.name, kind=type(content).__name__), True)


def _unexpected(call: ToolCall, exc: BaseException, what: str) -> ToolResult:
    """The "failed unexpectedly" result; ``exc`` is logged with its traceback, never shown."""
    logger.error("Tool %r %s %s", call.name, what, type(exc).__name__, exc_info=exc)
    return ToolResult(call.id, call_text(UNEXPECTED, call.name, kind=type(exc).__name__), True)


def rich_result(call: ToolCall, returned: ToolReturn, caps: _Caps) -> ToolResult:
    """A ``ToolReturn`` as the result the model reads, within ``caps``.

    The media share ``max_media_bytes`` (a URL counts its length: a ``data:`` URL is
    media too), the first ``max_media_parts`` of them: a part past the bytes is replaced
    by a note saying so, those past the count by one note. The texts (data parts and
    the notes for parts past the bytes too) then share the result cap, in order: the one
    that crosses it is cut, those after it are left out (each part given room of its own
    would let many parts past it). The note for the parts past the count is kept whole,
    in the room it needs of the cap: the model reads how many were dropped even when the
    text before that note was cut.
    """
    texts: list[str] = []
    sources: list[TextPart | DataPart | None] = []  # the part of each text; None: a note
    order: list[MediaPart | int] = []  # the media kept, and each text's index, as given
    media_budget = caps.max_media_bytes
    media_count = 0
    counted_note: int | None = None  # the index of the note for those past max_media_parts
    for part in returned.parts():
        if not isinstance(part, MediaPart):
            order.append(len(texts))
            texts.append(part.text if isinstance(part, TextPart) else part.json_text)
            sources.append(part)
            continue
        media_count += 1
        if media_count > caps.max_media_parts:
            if counted_note is None:  # written once the count is known
                counted_note = len(texts)
                order.append(counted_note)
                texts.append("")
                sources.append(None)
            continue
        size = _media_size(part)
        if size <= media_budget:
            media_budget -= size
            order.append(part)
            continue
        order.append(len(texts))
        texts.append(
            call_text(
                MEDIA_DROPPED,
                call.name,
                media_type=shown_media_type(part.media_type),
                size=size,
                limit=int(caps.max_media_bytes),
            )
        )
        sources.append(None)
    if counted_note is not None:
        texts[counted_note] = call_text(
            MEDIA_PARTS_DROPPED,
            call.name,
            count=media_count - int(caps.max_media_parts),
            limit=int(caps.max_media_parts),
        )
    kept: list[str] | list[str | None] = (
        texts if caps.max_bytes == math.inf else _capped(texts, int(caps.max_bytes), counted_note)
    )
    parts: list[ContentPart] = []
    for slot in order:
        if isinstance(slot, MediaPart):
            parts.append(slot)
            continue
        capped = kept[slot]
        if capped is None:  # past the cap
            continue
        text = valid_unicode(capped)  # after the cap: only what is kept is encoded
        source = sources[slot]
        parts.append(
            source if isinstance(source, DataPart) and text is texts[slot] else TextPart(text)
        )
    metadata = returned.metadata
    if metadata is not None:
        metadata = json_metadata(metadata)  # the run state keeps it as JSON
    only_text = all(isinstance(part, TextPart) for part in parts)
    content = text_of(parts)
    if only_text and metadata is None:
        return ToolResult(call.id, content)  # as cheap and as plain as a str result
    return ToolResult(call.id, content, False, tuple(parts), metadata)


def _capped(texts: list[str], max_bytes: int, whole: int | None) -> list[str | None]:
    """``texts`` within ``max_bytes`` together (a byte between each two, as ``text_of``
    joins them by lines), ``None`` for those left out. ``whole`` is the index of a text
    kept whole (the note for the media parts past the count), the others are capped in
    the room it leaves them."""
    if whole is None:
        others = texts
        room = max_bytes
    else:
        others = texts[:whole] + texts[whole + 1 :]
        room = max(0, max_bytes - len(texts[whole].encode("utf-8", "surrogatepass")) - 1)
    kept: list[str | None] = list(cap_texts(others, room, separator=1))
    kept.extend([None] * (len(others) - len(kept)))
    if whole is not None:
        kept.insert(whole, texts[whole])
    return kept


def _media_size(part: MediaPart) -> int:
    url = part.url
    if url is None:
        return part.size
    return len(url) if url.isascii() else len(url.encode("utf-8", "surrogatepass"))


def _log_failure(name: str, exc: ToolError, text: str) -> None:
    # A tool's bug (an exception the tool did not raise on purpose, wrapped by a
    # generated tool) is logged like a hand-written tool's: at ERROR, with its traceback.
    cause = exc.__cause__
    if (
        isinstance(exc, (ExecutionFailedError, InternalToolError))
        and isinstance(cause, Exception)
        and not isinstance(cause, ToolError)
    ):
        logger.error("Tool %r raised %s: %s", name, type(cause).__name__, text, exc_info=cause)
    else:
        logger.info("Tool %r failed: %s", name, text)


def valid_text(text: str, max_bytes: float) -> str:
    """``text`` capped at ``max_bytes``, then made valid Unicode (lone surrogates become U+FFFD).

    A lone surrogate (say a file name ``os.listdir`` decoded with surrogateescape)
    in the history would make every later request of the conversation fail to encode.
    Capped first, so that only what is kept is encoded (a 100 MB result costs what the
    cap keeps); the cap counts a lone surrogate 3 bytes, as many as its U+FFFD.
    """
    if max_bytes != math.inf:
        text = cap_result(text, int(max_bytes))
    return valid_unicode(text)
