"""Use the tools of a connected MCP server as llm-worker tools.

``await mcp_tool_definitions(session)`` lists the server's tools (every page)
and returns one ``ToolDefinition`` per tool. Registering them in a ``Worker``
puts the remote tools next to local ones; each call is forwarded over the
session. A tool whose name model providers refuse (``files.read``, spaces,
over 64 characters) gets a local name by the rule of ``_tool_names``; its
calls still go out under the server's name. Its ``ToolMeta`` keeps the
server's ``title``, ``annotations`` (``readOnlyHint`` becomes ``read_only``...)
and ``outputSchema``, for hooks and approval policies; models are sent none of them.

What a call of a remote tool does:

=========================================  ==============================================
situation                                  ``execute()``
=========================================  ==============================================
argument JSON empty or whitespace          sends ``{}``
argument JSON not JSON, or not an object   ``InvalidArgumentError``, nothing is sent
(``NaN``, ``Infinity`` and ``1e400`` are
not JSON; of duplicate keys the last wins)
a ``null`` OpenAI strict mode introduced   left out (``drop_introduced_nulls``): it means
                                           "not given", which the server's schema says
                                           by leaving the argument out
the server's result                        its text blocks joined by newlines (a
                                           ``str``); with anything more (images, audio,
                                           resources, structured content, content for
                                           the user only) a ``ToolReturn`` of parts and
                                           metadata, as ``_content`` maps them (the
                                           metadata within ``limits``)
the server reports progress                ``execute_with_context`` (what a ``Worker``
                                           calls) passes it on: ``ToolCallProgress``
the result has ``isError: true``           ``ExecutionFailedError`` with its text (with
                                           none, its ``structuredContent`` as JSON),
                                           made safe like a local exception's (paths,
                                           reprs, secrets scrubbed; 500 characters)
media data that is not base64              ``ExecutionFailedError`` naming the block
a result that is not valid MCP (a block    ``ExecutionFailedError`` saying where (``at
of no known type, no ``content``: the      /content: Field required``)
SDK's pydantic ``ValidationError``)
``structuredContent`` that does not match  ``ExecutionFailedError`` saying where (``at
the tool's ``outputSchema``, or none       /n: 'two' is not of type 'integer'``), or
(the SDK checks it)                        ``no structuredContent``
an ``outputSchema`` the SDK cannot check   ``ExecutionFailedError`` saying so
with (one changed since it was listed)
an MCP error response, a timeout or a      ``ExecutionFailedError("MCP error: ...")``
closed connection (``mcp.MCPError``)       with the error's message
the connection is gone (stream closed or   ``ExecutionFailedError("lost the connection
broken, ``OSError``)                       to the MCP server (...)")``
anything else the SDK raises               ``InternalToolError``, naming only the
                                           exception type; the traceback is logged
=========================================  ==============================================

The texts never carry tracebacks; cancellation propagates. Only the last row is
logged with its traceback (a bug to look into): the others are failures of the
server or the network, logged as any failed call is (at INFO) by whoever runs it.

A tool the server marks ``execution.taskSupport: "required"`` can only be
called as a task, which this client does not do: it is not offered (a warning
is logged), rather than offered to fail every call. Nor is a tool whose schemas
hold a number JSON has none for (``NaN``, ``Infinity``, ``1e400``: Python's JSON
reader takes them), which no model request could carry, or are no valid JSON
Schema (``"type": "strin"``, a ``$ref`` to nothing), which providers refuse (an
``inputSchema``: every request of the worker fails) or the SDK cannot check a
result with (an ``outputSchema``: every call fails), or a tool listed twice with
different schemas: one such tool leaves the server's others offered.
"""

from __future__ import annotations

import json
import logging
from contextlib import suppress
from typing import Any, TypeAlias, cast

import anyio
import mcp.types as types
from jsonschema import Draft202012Validator, validators
from jsonschema import exceptions as schema_errors
from mcp import Client, ClientSession, MCPError
from mcp.shared.dispatcher import ProgressFnT
from pydantic import TypeAdapter, ValidationError
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012, specification_with
from typing_extensions import final

from .._content import ToolReturn
from .._context import ToolContext
from .._exceptions import ExecutionFailedError, InternalToolError, InvalidArgumentError, ToolError
from .._limits import Limits
from .._meta import ToolAnnotations, ToolMeta
from .._model_texts import (
    MCP_BAD_OUTPUT_SCHEMA,
    MCP_BAD_RESULT,
    MCP_CONNECTION_LOST,
    MCP_ERROR,
    MCP_NO_MESSAGE,
    MCP_NOT_STRUCTURED,
    MCP_UNEXPECTED,
    call_text,
    describe_validation_error,
)
from .._safe_text import model_safe_text, safe_text
from .._strict_json import non_finite_problem
from .._strict_schema import drop_introduced_nulls
from .._tool_names import provider_safe_names
from .._types import Tool
from ._content import error_text, not_valid_mcp, schema_mismatch, tool_return

__all__ = ["McpConnection", "McpTool", "McpToolDefinition", "mcp_tool_definitions"]

logger = logging.getLogger("llm_worker.mcp")

McpConnection: TypeAlias = ClientSession | Client
"""An initialized ``mcp.ClientSession``, or an entered ``mcp.Client``."""

# A server whose paging never ends must not hang the caller (the SDK caps its own re-list at 100).
_MAX_PAGES = 100
# Characters of a schema's problem in a warning: it quotes the schema, which may be long.
_MAX_PROBLEM = 200
_ARGUMENTS = TypeAdapter(dict[str, Any])
_DEFAULT_LIMITS = Limits()
_CONNECTION_ERRORS = (
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
    OSError,
)


async def mcp_tool_definitions(
    session: McpConnection,
    *,
    prefix: str = "",
    limits: Limits | None = None,
    timeout: float | None = 60.0,
) -> list[McpToolDefinition]:
    """One ``McpToolDefinition`` (a ``ToolDefinition``) per tool of the MCP server behind
    ``session``, in its order.

    ``session`` is an initialized ``mcp.ClientSession`` (or an entered
    ``mcp.Client``); it must stay open while the tools are used. Each tool
    keeps the server's name (after ``prefix``, which tells apart tools of
    several servers), description and ``inputSchema``; calls go to the server
    under its own name. A name model providers refuse (``files.read``) is
    renamed locally (``files_read``; ``docs/mcp.md`` has the rule), and the
    definition's ``remote_name`` keeps the server's. A tool listed more than once is
    offered once, as first listed, if every listing has the same schemas. One listed
    with different schemas, one only run as a task, or one whose schemas are no valid
    JSON Schema (or hold a number JSON has none for, ``NaN``, ``Infinity``) is not
    offered (a warning is logged for each), and takes no name from the others.

    Each page of the listing is waited for ``timeout`` seconds at most (``None``: as
    long as the server takes): past it, ``TimeoutError``. A listing that is not valid
    MCP (a tool whose ``inputSchema`` is no object schema makes the SDK refuse the
    whole page) is a ``RuntimeError`` saying where; other errors of the listing
    (``mcp.MCPError``...) propagate.

    ``limits`` (the ``Worker``'s; default ``Limits()``) bound what a result's metadata
    keeps, which a ``Worker`` does not cap: the content for the user only and the
    ``structuredContent`` (by ``max_media_bytes`` and ``max_result_bytes``; see
    ``_content``). Its other fields are the ``Worker``'s to apply.
    """
    if not isinstance(session, (ClientSession, Client)):
        raise TypeError(
            f"mcp_tool_definitions() takes an mcp.ClientSession or mcp.Client, "
            f"not {type(session).__name__}"
        )
    if not isinstance(prefix, str):
        raise TypeError(f"prefix must be a str, not {type(prefix).__name__}")
    limits = _limits_or_default(limits)
    timeout = _timeout_or_none(timeout)
    # Each tool's definition is made before the names are chosen, so that one left out
    # takes no name from the others; one renamed (rarely) is made again under its name.
    offered: list[tuple[types.Tool, McpToolDefinition]] = []
    for tool in _first_of_each(await _list_tools(session, timeout)):
        if not _task_only(tool):
            definition = _definition_or_none(session, tool, prefix + tool.name, limits)
            if definition is not None:
                offered.append((tool, definition))
    names = provider_safe_names([prefix + tool.name for tool, _ in offered])
    definitions: list[McpToolDefinition] = []
    for (tool, definition), name in zip(offered, names, strict=True):
        if name != prefix + tool.name:
            logger.info(
                "MCP tool %r is named %r here: %s",
                tool.name,
                name,
                _why_renamed(prefix + tool.name, name),
            )
            definition = McpToolDefinition(session, tool, name=name, limits=limits)
        definitions.append(definition)
    return definitions


def _first_of_each(tools: list[types.Tool]) -> list[types.Tool]:
    """The listed tools, each name once: the first listing of a name is kept, or none if
    its listings differ in a schema (a warning for each name listed more than once).

    Which of two inputSchemas the server checks is unknown, and the SDK checks results
    against the outputSchema of the last listing, the definition having the first's."""
    listings: dict[str, list[types.Tool]] = {}
    for tool in tools:
        listings.setdefault(tool.name, []).append(tool)
    kept: list[types.Tool] = []
    for name, (first, *again) in listings.items():
        if again:
            differ = _schemas_that_differ(first, again)
            if differ:
                logger.warning(
                    "MCP tool %r is not offered: the server lists it more than once with "
                    "different %s, and which one holds is unknown",
                    name,
                    " and ".join(differ),
                )
                continue
            logger.warning(
                "MCP server lists tool %r more than once: only its first listing is used "
                "(calls of either would go to the same remote tool)",
                name,
            )
        kept.append(first)
    return kept


def _schemas_that_differ(first: types.Tool, again: list[types.Tool]) -> list[str]:
    differ: list[str] = []
    if any(not _same_schema(first.input_schema, other.input_schema) for other in again):
        differ.append("inputSchemas")
    if any(not _same_schema(first.output_schema, other.output_schema) for other in again):
        differ.append("outputSchemas")
    return differ


def _same_schema(one: dict[str, Any] | None, other: dict[str, Any] | None) -> bool:
    """JSON equality, as the SDK compares output schemas (``==`` takes ``true`` for ``1``)."""
    try:
        return json.dumps(one, sort_keys=True) == json.dumps(other, sort_keys=True)
    except (RecursionError, TypeError, ValueError):  # none a ToolMeta would take anyway
        return False


def _why_renamed(local: str, name: str) -> str:
    # The name it would get alone follows from the providers' rule; any other is the hashed
    # form, given because another tool of the listing has (or would get) that name.
    alone = provider_safe_names([local])[0]
    if name == alone:
        return "providers refuse its name"
    return f"providers refuse its name, and {alone!r} would clash with another tool's name"


def _task_only(tool: types.Tool) -> bool:
    if tool.execution is None or tool.execution.task_support != "required":
        return False
    logger.warning(
        "MCP tool %r is not offered: the server only runs it as a task "
        "(execution.taskSupport: required)",
        tool.name,
    )
    return True


def _definition_or_none(
    session: McpConnection, tool: types.Tool, name: str, limits: Limits
) -> McpToolDefinition | None:
    """``tool``'s definition, or ``None`` (with a warning saying why) if its schemas are
    none a ``ToolMeta`` takes: a number JSON has none for (``NaN``, ``Infinity``, ``1e400``,
    which Python's JSON reader takes), which no model request could carry; or no valid
    JSON Schema (``_schema_problem``): providers refuse every request that carries such an
    inputSchema, the worker's calls of other tools too, and the SDK fails every call of a
    tool whose outputSchema it cannot check a result with."""
    try:
        definition = McpToolDefinition(session, tool, name=name, limits=limits)
    except (TypeError, ValueError) as exc:  # ToolMeta's refusals of a schema
        logger.warning("MCP tool %r is not offered: its schema cannot be used (%s)", tool.name, exc)
        return None
    meta = definition.meta
    for field, schema in (("inputSchema", meta.input_schema), ("outputSchema", meta.output_schema)):
        problem = None if schema is None else _schema_problem(schema)
        if problem is not None:
            logger.warning(
                "MCP tool %r is not offered: its %s is not a valid JSON Schema (%s)",
                tool.name,
                field,
                problem,
            )
            return None
    return definition


def _schema_problem(schema: dict[str, Any]) -> str | None:
    """Why ``schema`` is no valid JSON Schema, short, or ``None`` if it is one: it fails
    the metaschema of its ``$schema`` (2020-12 without one, as the SDK checks it), or a
    local ``$ref`` in it points to nothing (the SDK resolves them within the document)."""
    dialect = schema.get("$schema", "")
    # A $schema that is no string is one the 2020-12 metaschema refuses.
    validator_class = (
        validators.validator_for(schema, default=Draft202012Validator)
        if isinstance(dialect, str)
        else Draft202012Validator
    )
    try:
        validator_class.check_schema(schema)
    except schema_errors.SchemaError as exc:
        return schema_mismatch(exc)
    except RecursionError:  # jsonschema recurses a few frames per level
        return "it nests too deeply to be checked"
    ref = _ref_to_nothing(schema)
    if ref is None:
        return None
    problem = f"its $ref {ref!r} points to nothing"
    return problem if len(problem) <= _MAX_PROBLEM else problem[: _MAX_PROBLEM - 1] + "…"


def _ref_to_nothing(schema: dict[str, Any]) -> str | None:
    """The first local ``$ref`` (``#/$defs/x``, ``#anchor``) of ``schema`` (a valid JSON
    Schema) that does not resolve, looked up as a validator does: in the schema's own
    resources (an ``$id`` starts one), walked without recursion. Other ``$ref``s (to
    other documents) are the SDK's to resolve, or to fail on, at a call."""
    dialect = schema.get("$schema")
    specification = (
        specification_with(dialect, default=DRAFT202012)
        if isinstance(dialect, str)
        else DRAFT202012
    )
    root: Resource[Any] = specification.create_resource(schema)
    registry: Registry[Any] = Registry()
    pending = [(registry.resolver_with_root(root), root)]
    while pending:
        resolver, resource = pending.pop()
        contents: object = resource.contents
        if isinstance(contents, dict):
            ref = cast("dict[str, object]", contents).get("$ref")
            if isinstance(ref, str) and ref.startswith("#"):
                try:
                    resolver.lookup(ref)
                except Unresolvable:
                    return ref
        pending.extend((resolver.in_subresource(sub), sub) for sub in resource.subresources())
    return None


@final
class McpToolDefinition:
    """A ``ToolDefinition`` for one tool of an MCP server: makes ``(ToolMeta, McpTool)``.

    ``name`` is the tool's local name (default: ``prefix`` + the server's name,
    renamed by the provider rule if providers would refuse it); ``limits`` bound
    its results' metadata, as ``mcp_tool_definitions`` says. A tool only run as
    a task is a ``ValueError``; schemas a ``ToolMeta`` refuses (a ``NaN`` or an
    infinity in them) are its ``TypeError``.
    """

    __slots__ = ("_meta", "_tool")

    def __init__(
        self,
        session: McpConnection,
        tool: types.Tool,
        prefix: str = "",
        *,
        name: str | None = None,
        limits: Limits | None = None,
    ) -> None:
        if tool.execution is not None and tool.execution.task_support == "required":
            raise ValueError(
                f"MCP tool {tool.name!r} can only be called as a task "
                f"(execution.taskSupport: required); llm-worker calls tools directly"
            )
        local = provider_safe_names([prefix + tool.name])[0] if name is None else name
        hints = tool.annotations
        self._meta = ToolMeta(
            name=local,
            description=tool.description or "",
            input_schema=tool.input_schema,
            # MCP's order for a display name: the tool's title, then its annotations' title.
            title=tool.title or (None if hints is None else hints.title),
            annotations=None if hints is None else _annotations(hints),
            output_schema=tool.output_schema,  # an object schema: the SDK refuses others
        )
        self._tool = McpTool(
            session, tool.name, input_schema=self._meta.input_schema, limits=limits
        )

    @property
    def meta(self) -> ToolMeta:
        """The tool's metadata: the local name, the description and the input schema, and the
        server's title, annotations and output schema."""
        return self._meta

    @property
    def remote_name(self) -> str:
        """The server's name for the tool, which calls use."""
        return self._tool.remote_name

    def __call__(self) -> tuple[ToolMeta, Tool]:
        return self._meta, self._tool

    def __repr__(self) -> str:
        return f"<McpToolDefinition {self._meta.name!r}>"


@final
class McpTool:
    """A ``Tool`` that forwards every call to one tool of an MCP server.

    ``input_schema`` (the server's schema for the tool) tells which ``null``s
    OpenAI strict mode introduced; without it every argument is sent as given.
    ``limits`` (default ``Limits()``) bound what a result's metadata keeps: its
    ``max_result_bytes`` and ``max_media_bytes`` (see ``mcp_tool_definitions``).
    """

    __slots__ = ("_input_schema", "_limits", "remote_name", "session")

    def __init__(
        self,
        session: McpConnection,
        remote_name: str,
        *,
        input_schema: dict[str, Any] | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.session = session
        self.remote_name = remote_name
        self._input_schema = input_schema
        self._limits = _limits_or_default(limits)

    async def execute(self, input_json: str) -> str | ToolReturn:
        """Send ``tools/call`` with these arguments: the result's text, or its parts and
        metadata (see the module's table), or a ``ToolError``."""
        return await self._call(input_json, None)

    async def execute_with_context(
        self, input_json: str, context: ToolContext[Any]
    ) -> str | ToolReturn:
        """``execute``, reporting the server's progress notifications through ``context``."""

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            with suppress(ValueError):  # numbers that are not finite are no progress
                context.report_progress(progress, total, message)

        return await self._call(input_json, on_progress)

    async def _call(self, input_json: str, on_progress: ProgressFnT | None) -> str | ToolReturn:
        arguments = _parse_arguments(input_json)
        if self._input_schema is not None and "null" in input_json:
            arguments = drop_introduced_nulls(self._input_schema, arguments)
        name = self.remote_name
        try:
            if on_progress is None:
                result = await self.session.call_tool(name, arguments)
            else:
                result = await self.session.call_tool(
                    name, arguments, progress_callback=on_progress
                )
        # The server's answer or the network's, not a bug of this process: not chained, so
        # that it is logged as the failure it is (at INFO), without a traceback.
        except MCPError as exc:
            raise ExecutionFailedError(MCP_ERROR.format(message=model_safe_text(exc))) from None
        except _CONNECTION_ERRORS as exc:
            raise ExecutionFailedError(
                MCP_CONNECTION_LOST.format(kind=type(exc).__name__)
            ) from None
        except ValidationError as exc:  # pydantic's, of the SDK reading the server's result
            # Not scrubbed: where in the result and pydantic's words (a path would be hidden).
            raise ExecutionFailedError(
                call_text(MCP_BAD_RESULT, name, problem=not_valid_mcp(exc))
            ) from None
        except Exception as exc:
            if _unusable_output_schema(exc):
                raise ExecutionFailedError(call_text(MCP_BAD_OUTPUT_SCHEMA, name)) from None
            mismatch = _output_schema_mismatch(exc)
            if mismatch is not None:
                # Not scrubbed: it quotes the result, which was meant for the model.
                raise ExecutionFailedError(
                    call_text(MCP_NOT_STRUCTURED, name, why=mismatch)
                ) from None
            logger.exception("Calling MCP tool %r raised %s", name, type(exc).__name__)
            raise InternalToolError(
                MCP_UNEXPECTED.format(name=name, kind=type(exc).__name__)
            ) from exc
        if result.is_error:
            # The server's words, scrubbed and capped as a local exception's would be.
            raise _remote_error(safe_text(error_text(result)) or MCP_NO_MESSAGE.format(name=name))
        return tool_return(result, name, self._limits)

    def __repr__(self) -> str:
        return f"<McpTool {self.remote_name!r} session=<{type(self.session).__name__}>>"


def _limits_or_default(limits: Limits | None) -> Limits:
    if limits is None:
        return _DEFAULT_LIMITS
    if not isinstance(limits, Limits):
        raise TypeError(f"limits must be a Limits, not {type(limits).__name__}")
    return limits


def _timeout_or_none(timeout: object) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(
            f"timeout must be a number of seconds or None, not {type(timeout).__name__}"
        )
    if not timeout > 0:  # NaN too
        raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
    return float(timeout)


def _unusable_output_schema(exc: Exception) -> bool:
    """Whether the SDK raised ``exc`` because the tool's outputSchema is no JSON Schema it
    can check a result with (``ClientSession.validate_tool_result``'s ``RuntimeError``):
    one changed since the tool was listed, as ``_definition_or_none`` leaves out others."""
    return isinstance(exc, RuntimeError) and str(exc).startswith("Invalid schema for tool ")


def _output_schema_mismatch(exc: Exception) -> str | None:
    """How the result did not match the tool's output schema, if that is why the SDK
    raised ``exc`` (``ClientSession.validate_tool_result``'s ``RuntimeError``)."""
    if not isinstance(exc, RuntimeError):
        return None
    if isinstance(exc.__cause__, schema_errors.ValidationError):
        return schema_mismatch(exc.__cause__)
    if "did not return structured content" in str(exc):  # the SDK's words
        return "no structuredContent"
    return None


def _remote_error(message: str) -> ToolError:
    """A remote error text as the error it says it is: one that starts as ours do (an
    llm-worker server's) keeps its kind, not "Execution failed: Invalid argument: ..."."""
    for kind in (InvalidArgumentError, ExecutionFailedError, InternalToolError):
        prefix = str(kind(""))
        if message.startswith(prefix) and len(message) > len(prefix):
            return kind(message.removeprefix(prefix))
    return ExecutionFailedError(message)


def _parse_arguments(input_json: str) -> dict[str, Any]:
    if not input_json or input_json.isspace():
        return {}
    try:
        arguments = _ARGUMENTS.validate_json(input_json)
    except ValidationError as exc:
        raise InvalidArgumentError(describe_validation_error(exc, ())) from exc
    problem = non_finite_problem(arguments.values())  # NaN, Infinity, 1e400: not JSON
    if problem is not None:
        raise InvalidArgumentError(problem)
    return arguments


def _annotations(hints: types.ToolAnnotations) -> ToolAnnotations:
    return ToolAnnotations(
        read_only=hints.read_only_hint,
        destructive=hints.destructive_hint,
        idempotent=hints.idempotent_hint,
        open_world=hints.open_world_hint,
    )


async def _list_tools(session: McpConnection, timeout: float | None) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor: str | None = None
    for number in range(1, _MAX_PAGES + 1):
        page = await _list_page(session, cursor, timeout, number)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return tools
    raise RuntimeError(f"the MCP server's tools/list did not end after {_MAX_PAGES} pages")


async def _list_page(
    session: McpConnection, cursor: str | None, timeout: float | None, number: int
) -> types.ListToolsResult:
    """Page ``number`` of the listing, waited for ``timeout`` seconds at most: neither the
    SDK (without a ``read_timeout_seconds``) nor the server has to end the wait, and an
    answer the SDK cannot read as JSON-RPC (logged, and dropped) never ends it."""
    page: types.ListToolsResult | None = None
    with anyio.move_on_after(timeout):
        try:
            if isinstance(session, Client):
                page = await session.list_tools(cursor=cursor)
            else:
                params = None if cursor is None else types.PaginatedRequestParams(cursor=cursor)
                page = await session.list_tools(params=params)
        except ValidationError as exc:  # pydantic's: the SDK reads the page whole, or not
            raise RuntimeError(
                f"the MCP server's tools/list is not valid MCP: {not_valid_mcp(exc)}"
            ) from exc
    if page is None:
        which = "tools/list" if number == 1 else f"tools/list (page {number})"
        raise TimeoutError(f"the MCP server did not answer {which} within {timeout:g} s")
    return page
