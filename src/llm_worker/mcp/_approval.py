"""A served call that needs a person's approval: asked of the host through MCP elicitation.

A tool's ``requires_approval`` (``True``, or a function of the call's
``ToolCallContext``) says which calls need it. Such a call runs only once the
host's user approved it; it is never run unapproved:

================================================  =====================================
the client                                        what happens
================================================  =====================================
declared ``elicitation`` (form mode), handshake   ``elicitation/create`` is sent while
era (stdio, stateful HTTP)                        the call waits for the answer
declared ``elicitation``, 2026-07-28 era (no      the call answers ``input_required``
server-to-client requests)                        with the same question; the client's
                                                  retry carries the answer, and a
                                                  ``requestState`` binding it to this
                                                  tool and these arguments
did not declare it                                an ``isError`` refusal: the call needs
                                                  an approval the host cannot give
================================================  =====================================

The question names the tool and its arguments and asks for one boolean,
``approve``. Only ``accept`` with ``approve: true`` runs the call; ``decline``,
``accept`` with ``approve: false``, and ``cancel`` are ``isError`` results the
model reads (``_model_texts``), and so is a policy that fails, and a question the host
answers with an error, or with no valid answer (the call waits for the answer as long as
the host's user takes: no deadline, but the client may cancel the call).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
from collections.abc import Mapping
from typing import Any

import mcp.types as types
import pydantic
from mcp.server import ServerRequestContext
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from .._conversation import ToolCall
from .._exceptions import HookError
from .._hooks import ToolCallContext, needs_approval
from .._model_texts import (
    APPROVAL_CANCELLED,
    APPROVAL_DECLINED,
    APPROVAL_FAILED,
    APPROVAL_POLICY_FAILED,
    APPROVAL_UNAVAILABLE,
    call_text,
)
from .._safe_text import model_safe_text
from .._server import ToolEntry
from ._content import not_valid_mcp

__all__ = ["APPROVAL_SCHEMA", "Approvals", "approval_question"]

logger = logging.getLogger("llm_worker.mcp")

APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Approve",
            "description": "Run this tool call",
            "default": True,
        }
    },
    "required": ["approve"],
}
"""What the host asks its user for: one boolean (a checkbox, ticked to begin with)."""

_INPUT_KEY = "approval"  # the key of our question in an input_required result
_MAX_ARGUMENTS_SHOWN = 2000  # characters of argument values, shared out among them
_MIN_VALUE_SHOWN = 80  # characters of each value, however many there are
_MAX_OTHERS_SHOWN = 5  # arguments the tool does not take

Refusal = types.CallToolResult
"""Why a call did not run (``isError``), as the client gets it."""


class Approvals:
    """Decides, per served call, whether it may run now; asks the host when it needs to.

    Holds the key that binds a 2026-07-28 client's answer to the call it answers
    (a fresh one per server: answers do not outlive the process).
    """

    __slots__ = ("_key",)

    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)

    async def check(
        self,
        entry: ToolEntry,
        call: ToolCall,
        arguments: Mapping[str, Any],
        request: ServerRequestContext[Any] | None,
        params: types.CallToolRequestParams | None,
    ) -> Refusal | types.InputRequiredResult | None:
        """``None`` if ``call`` may run; else what to answer instead: a refusal, or (for a
        2026-07-28 client) the question."""
        policy = entry.requires_approval
        if policy is False:
            return None
        try:
            needed = await needs_approval(policy, ToolCallContext(call, entry.meta, entry.tool))
        except HookError as exc:
            logger.error("The approval policy of tool %r failed: %s", call.name, exc, exc_info=exc)
            kind = type(exc.__cause__ or exc).__name__
            return _refusal(call_text(APPROVAL_POLICY_FAILED, call.name, kind=kind))
        if not needed:
            return None
        if request is None or not _asks_forms(request.session.client_capabilities):
            return _refusal(call_text(APPROVAL_UNAVAILABLE, call.name))
        question = approval_question(entry, arguments)
        if request.session.can_send_request:
            return await _ask(request, question, call.name)
        if request.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return _refusal(call_text(APPROVAL_UNAVAILABLE, call.name))
        # No server-to-client requests (2026-07-28): the question is the result, and the
        # client's retry of this call carries the answer.
        state = self._state(call.name, arguments)
        answer = _answer(params, state)
        if answer is None:
            ask = types.ElicitRequest(
                params=types.ElicitRequestFormParams(
                    message=question, requested_schema=APPROVAL_SCHEMA
                )
            )
            return types.InputRequiredResult(input_requests={_INPUT_KEY: ask}, request_state=state)
        return _decided(answer, call.name)

    def _state(self, name: str, arguments: Mapping[str, Any]) -> str:
        """The ``requestState`` of the question about this call: a MAC of its tool and
        arguments, so an answer approves only the call it was asked about."""
        text = json.dumps([name, arguments], sort_keys=True, ensure_ascii=False)
        digest = hmac.new(self._key, text.encode("utf-8", "surrogatepass"), hashlib.sha256)
        return digest.hexdigest()


def approval_question(entry: ToolEntry, arguments: Mapping[str, Any]) -> str:
    """What the host's user is asked: the tool (its title too, if it has one) and each
    argument on a line of its own, as JSON.

    Every argument is shown, those the schema names first and in its order, each cut
    short on its own: a long harmless one cannot push the one that matters out of
    sight. Only a schema that takes no others (``additionalProperties: false``) lets
    the rest be counted past a few: the call will be refused for them.
    """
    meta = entry.meta
    tool = f"'{meta.name}'" if meta.title is None else f"{meta.title} ('{meta.name}')"
    schema = meta.input_schema
    declared = list(schema.get("properties") or {})
    names = [name for name in declared if name in arguments]
    others = [name for name in arguments if name not in declared]
    unshown = 0
    if schema.get("additionalProperties") is False and not schema.get("patternProperties"):
        others, unshown = others[:_MAX_OTHERS_SHOWN], len(others) - _MAX_OTHERS_SHOWN
    shown = names + others
    room = max(_MIN_VALUE_SHOWN, _MAX_ARGUMENTS_SHOWN // max(len(shown), 1))
    lines = [f"Allow the tool {tool} to run with these arguments?"]
    for name in shown:
        # A name the schema does not declare is the caller's text: quoted, so that no
        # newline in it can fake a line of the question.
        label = name if name in declared else _cut(_json(name), 100)
        lines.append(f"{label}: {_cut(_json(arguments[name]), room)}")
    if unshown > 0:
        lines.append(f"(and {unshown} more arguments the tool does not take)")
    return "\n".join(lines)


def _json(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):  # not from JSON (an in-process caller's object)
        return repr(value)


def _cut(text: str, room: int) -> str:
    """``text`` made visible (``_visible``), cut in the middle to ``room`` characters if it
    is longer: its start and its end both show, so a harmless start cannot hide a
    ``/../../etc/passwd`` at its end."""
    if len(text) <= room:
        visible = _visible(text)
        if len(visible) <= room:
            return visible
    # Escaping only lengthens: the ends of the visible text are those of the text's ends.
    suffix = f" ({len(text)} characters)"
    keep = max(room - len(suffix) - 1, 2)
    head = _visible(text[:keep])[: keep - keep // 2]
    tail = _visible(text[-keep:])[-(keep // 2) :]
    return f"{head}…{tail}{suffix}"


def _visible(text: str) -> str:
    """``text`` with every character that does not show as itself escaped as JSON does
    (``\\u202e``): line breaks JSON leaves (U+2028, U+0085), bidi overrides that would
    show ``gnp.exe`` as ``exe.png``, zero-width and other format or control characters."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else _escaped(char) for char in text)


def _escaped(char: str) -> str:
    return json.dumps(char)[1:-1]  # \uXXXX, and a surrogate pair beyond the BMP


async def _ask(request: ServerRequestContext[Any], question: str, name: str) -> Refusal | None:
    """Send the client ``elicitation/create`` and wait for its user's answer."""
    try:
        answer = await request.session.elicit_form(
            question, APPROVAL_SCHEMA, related_request_id=request.request_id
        )
    except pydantic.ValidationError as exc:  # an answer that is no ElicitResult
        logger.info("Asking to approve %r failed: the answer is not valid MCP: %s", name, exc)
        # Where in the answer and pydantic's words, not its dump (no input, no URL); not
        # scrubbed, as the client's own (a path would be hidden: "at /action").
        why = f"the answer is not valid MCP: {not_valid_mcp(exc)}"
        return _refusal(call_text(APPROVAL_FAILED, name, why=why))
    except Exception as exc:  # an MCP error, a client gone
        logger.info("Asking to approve %r failed: %r", name, exc)
        why = f"{type(exc).__name__}: {model_safe_text(exc)}"
        return _refusal(call_text(APPROVAL_FAILED, name, why=why))
    return _decided(answer, name)


def _asks_forms(capabilities: types.ClientCapabilities | None) -> bool:
    """Whether the client takes form elicitations (``elicitation: {}`` means forms)."""
    elicitation = None if capabilities is None else capabilities.elicitation
    if elicitation is None:
        return False
    return elicitation.form is not None or elicitation.url is None


def _answer(params: types.CallToolRequestParams | None, state: str) -> types.ElicitResult | None:
    """The answer a retry carries to the question about this very call, if it carries one."""
    if params is None or params.input_responses is None or params.request_state is None:
        return None
    if not hmac.compare_digest(params.request_state.encode("utf-8", "replace"), state.encode()):
        return None  # another call's question, or none of ours: ask about this one
    answer = params.input_responses.get(_INPUT_KEY)
    return answer if isinstance(answer, types.ElicitResult) else None


def _decided(answer: types.ElicitResult, name: str) -> Refusal | None:
    content = answer.content
    if answer.action == "accept" and content is not None and content.get("approve") is True:
        return None
    logger.info("The user did not approve tool call %r (%s)", name, answer.action)
    template = APPROVAL_CANCELLED if answer.action == "cancel" else APPROVAL_DECLINED
    return _refusal(call_text(template, name))


def _refusal(text: str) -> Refusal:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)
