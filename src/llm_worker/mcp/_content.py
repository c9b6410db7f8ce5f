"""Our result parts as MCP content blocks (serve), and MCP content blocks as parts (use).

Serve: a ``ToolResult`` becomes a ``CallToolResult``. A text-only result is one
text block; a rich one is a block per part, in order:

================================  ====================================================
part                              content block
================================  ====================================================
``TextPart``                      ``TextContent``
``DataPart``                      ``TextContent`` of its JSON
``MediaPart`` image, with data    ``ImageContent`` (the bytes in base64)
``MediaPart`` audio, with data    ``AudioContent``
``MediaPart`` video or document,  ``EmbeddedResource`` with ``BlobResourceContents`` at
with data                         ``llm-worker://media/<sha256 of the bytes>/<name>``
                                  (nothing after the last ``/`` when it has no name)
``MediaPart`` with a ``data:``    the block of a part with its bytes (the part's type;
URL that can be read              its bytes never more than the URL's bytes, which
                                  ``max_media_bytes`` counts)
``MediaPart`` with another url    ``ResourceLink`` (``uri`` the url, ``name`` the
                                  part's name or the url, ``mimeType``)
================================  ====================================================

Each block of a ``MediaPart`` has ``_meta`` ``{"llm-worker/media": {"name": <its
name>}}`` (``{}`` for a part without one), which our client reads back: MCP has no
name field on an image or audio, a link's ``name`` is its url when the part has none,
and a document's uri keeps a name with a ``/`` only quoted.

A tool with an ``output_schema`` also gets ``structuredContent``: its JSON value
(the only ``DataPart`` of a rich result, else its text), as ``{"result": value}``
when the schema is a wrapped one, checked against the schema (the MCP
specification says it must conform; a value that does not is an ``isError``
result naming where); an ``isError`` result never has it. So a result over the
server's ``max_result_bytes`` (a cut value conforms to no schema) is an
``isError`` result of the content cut as a ``Worker`` cuts it, with the
truncation note. The metadata is never sent. Some values of a generated tool
fit no schema: NaN and the infinities (JSON has no such numbers: pydantic
writes them as ``"NaN"``, or as ``null`` in a model) and integers of more
digits than Python reads (4300), so their ``isError`` text names them for what
they are; so does a value nested deeper than the SDK writes JSON (about 250
levels: a recursive model, a tree, 127 levels deep), or than the schema can be
checked, and (a hand-written tool's JSON text) a lone surrogate.

Use: a ``CallToolResult`` becomes what the model reads (``tool_return``):

=====================================  ===============================================
content block                          part
=====================================  ===============================================
``TextContent``                        ``TextPart``
``ImageContent``, ``AudioContent``     ``MediaPart`` with the decoded bytes
``EmbeddedResource``, text             ``TextPart``: ``[resource <uri>]`` and the text
``EmbeddedResource``, blob             ``MediaPart`` with the decoded bytes (named after
                                       the uri's last segment; ``application/octet-
                                       stream`` if the server gave no type)
``ResourceLink`` to http(s) with a     ``MediaPart`` by url
``mimeType``
any other ``ResourceLink``             ``TextPart``: ``[resource link: name <uri>]``
a block for the user only              not for the model: kept in the metadata
(``audience`` has ``"user"``, not      (``"user_content"``, each block as MCP JSON)
``"assistant"``)
=====================================  ===============================================

A block with ``"llm-worker/media"`` (an object) in its ``_meta`` is a ``MediaPart``'s
of an llm-worker server: named by it (not by its uri, nor a link's ``name``), and a
``ResourceLink`` with a ``mimeType`` is a ``MediaPart`` by url of any scheme a ``MediaPart``
takes (``gs://``: the part was one). So our server's parts come back as they were
returned, a ``data:`` URL as the bytes it holds.

``structuredContent`` is kept in the metadata (``"structured_content"``) and,
when no block is for the model, is what it reads (a ``DataPart``). A result of
plain text blocks, with nothing for the metadata, stays a ``str``. Data that is
not base64 is an ``ExecutionFailedError``.

The metadata is capped by the client's ``Limits`` (a ``Worker`` caps only what the
model reads; the history and every run state keep the metadata): a
``structuredContent`` whose JSON is over ``max_result_bytes`` is left out
(``"structured_content_dropped"``: its size); of the blocks for the user, those with
media data (image, audio, blob) share ``max_media_bytes`` and the others
``max_result_bytes``, each counting its JSON, and one past its share is left out
(``"user_content_dropped"``: how many).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import sys
from collections.abc import Iterable
from typing import Any, cast
from urllib.parse import quote, unquote, urlsplit

import mcp.types as types
import pydantic
import pydantic_core
from jsonschema import exceptions as schema_errors
from jsonschema import validators
from jsonschema.protocols import Validator

from .._content import ContentPart, DataPart, MediaPart, TextPart, ToolReturn, data_url_bytes
from .._conversation import ToolResult
from .._exceptions import ExecutionFailedError
from .._limits import Limits, cap_result, cap_texts
from .._model_texts import MCP_BAD_CONTENT, NOT_STRUCTURED, call_text
from .._output_schema import WRAPPED
from .._safe_text import valid_unicode

__all__ = ["call_tool_result", "error_text", "not_valid_mcp", "schema_mismatch", "tool_return"]

MEDIA_URI = "llm-worker://media/{digest}/{name}"
"""Where an embedded media part says it is: its bytes' SHA-256, then its name (if any)."""

MEDIA_META = "llm-worker/media"
"""The ``_meta`` key of a block made of a ``MediaPart``: ``{"name": <its name>}``, or ``{}``
for a part without one (an image's or audio's block has no field for it, a link's
``name`` is the url when it has none, and a document's uri is cut at its last ``/``)."""

# Output schemas' validators, made once per schema object (and kept with it, so that its
# id is not reused); bounded for a server whose tools are registered again and again.
_VALIDATORS: dict[str, tuple[dict[str, Any], Validator]] = {}  # by the schema's JSON text
_MAX_VALIDATORS = 512
_MAX_MISMATCH = 200  # characters of where and how a value does not fit, for the model

# Why a NaN or an infinity cannot be structured content (RFC 8259 has no such numbers).
_NOT_A_JSON_NUMBER = "which JSON cannot carry as a number"
_NON_FINITE = ("NaN", "Infinity", "-Infinity")  # how pydantic writes them as strings
_NULL_NUMBER = (
    "a pydantic model writes NaN and Infinity, which JSON cannot carry as numbers, as null"
)
# Why a value JSON reads cannot be structured content all the same.
_TOO_DEEP = "nested deeper than MCP can carry"  # than the SDK's JSON writer goes
_TOO_DEEP_TO_CHECK = "nested too deeply to be checked against its output schema"
_LONE_SURROGATE = "a lone surrogate in a string, which no JSON-RPC wire can carry"

_DEFAULT_BLOB_TYPE = "application/octet-stream"
_LINKED_SCHEMES = ("http", "https")  # what a model provider can fetch itself
# What a MediaPart's url may be (http(s), gs:, data:): a marked link of another scheme is
# no part of ours (a hostile server's), and is read as any other link.
_MARKED_SCHEMES = (*_LINKED_SCHEMES, "gs", "data")


# -- serve: a ToolResult as a CallToolResult ------------------------------------------------


def call_tool_result(
    result: ToolResult, name: str, output_schema_json: str | None, max_bytes: int | None = None
) -> types.CallToolResult:
    """``result`` (of a call of tool ``name``) as MCP content, and its structured content
    when the tool has an output schema (``ToolMeta.output_schema_json``). A value the
    schema cannot describe (not JSON, not an object) is an ``isError`` result saying so.

    ``max_bytes`` cuts the result of a tool with an output schema (which runs uncapped:
    see ``_serve``) as a ``Worker`` cuts it, truncation note and all. A cut value
    conforms to no schema, and structured content must: such a result is an
    ``isError`` result (an error need not conform) of the cut content, so the model
    still reads what fits, and why the rest is missing."""
    if max_bytes is not None and output_schema_json is not None:
        cut = _cut(result, max_bytes)
        if cut is not None:
            return types.CallToolResult(content=cut, is_error=True)
    content: list[types.ContentBlock]
    if result.parts:
        content = [_block(part) for part in result.parts]
    else:
        # A lone surrogate (a file name that is not UTF-8, from os.listdir) cannot go on the wire.
        content = [types.TextContent(text=valid_unicode(result.content))]
    if output_schema_json is None or result.is_error:
        return types.CallToolResult(content=content, is_error=result.is_error)
    try:
        schema, validator = _validator(output_schema_json)
        structured = _structured(result, wrapped=schema.get(WRAPPED) is True)
        _check_writable(structured)
        _check(structured, validator)
    except ValueError as exc:
        text = call_text(NOT_STRUCTURED, name, why=str(exc))
        return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)
    return types.CallToolResult(content=content, structured_content=structured)


def _cut(result: ToolResult, max_bytes: int) -> list[types.ContentBlock] | None:
    """``result``'s blocks with its texts cut at ``max_bytes`` together, as a ``Worker``
    cuts them (``cap_texts``: the one that crosses the cap ends in the truncation note,
    those after it are left out; media as they are), or ``None`` if it is within."""
    if not result.parts:
        text = cap_result(result.content, max_bytes)
        return None if text is result.content else [types.TextContent(text=valid_unicode(text))]
    texts = [
        part.text if isinstance(part, TextPart) else part.json_text
        for part in result.parts
        if not isinstance(part, MediaPart)
    ]
    kept = cap_texts(texts, max_bytes, separator=1)  # one per line, as text_of joins them
    if kept == texts:  # the same strings (an identity check each) when none was cut
        return None
    left = iter(kept)
    blocks: list[types.ContentBlock] = []
    for part in result.parts:
        if isinstance(part, MediaPart):
            blocks.append(_block(part))
        elif (cut := next(left, None)) is not None:  # None: past the cap, left out
            blocks.append(types.TextContent(text=valid_unicode(cut)))
    return blocks


def _block(part: ContentPart) -> types.ContentBlock:
    if isinstance(part, TextPart):
        return types.TextContent(text=valid_unicode(part.text))
    if isinstance(part, DataPart):
        return types.TextContent(text=part.json_text)
    # A name or url may hold a lone surrogate (a file name from os.listdir): not on the wire.
    name = None if part.name is None else valid_unicode(part.name)
    media_type = valid_unicode(part.media_type)
    meta: dict[str, Any] = {MEDIA_META: {} if name is None else {"name": name}}
    data = part.data
    if data is None:
        assert part.url is not None  # a MediaPart has one or the other
        data = data_url_bytes(part.url)
        if data is None:
            url = valid_unicode(part.url)
            return types.ResourceLink(name=name or url, uri=url, mime_type=media_type, _meta=meta)
    encoded = base64.b64encode(data).decode("ascii")
    if part.kind == "image":
        return types.ImageContent(data=encoded, mime_type=media_type, _meta=meta)
    if part.kind == "audio":
        return types.AudioContent(data=encoded, mime_type=media_type, _meta=meta)
    uri = MEDIA_URI.format(digest=hashlib.sha256(data).hexdigest(), name=quote(name or "", safe=""))
    return types.EmbeddedResource(
        resource=types.BlobResourceContents(uri=uri, mime_type=media_type, blob=encoded),
        _meta=meta,
    )


def _structured(result: ToolResult, *, wrapped: bool) -> Any:
    data = [part for part in result.parts if isinstance(part, DataPart)]
    if len(data) > 1:
        raise ValueError(f"{len(data)} data parts, not one")
    text = data[0].json_text if data else result.content
    numbers = _NumberReader()
    try:
        value = json.loads(
            text,
            parse_constant=numbers.constant,
            parse_int=numbers.integer,
            parse_float=numbers.fraction,
        )
    except (ValueError, RecursionError):  # RecursionError: nested deeper than json reads
        raise ValueError("not JSON") from None
    if wrapped:
        value = {"result": value}
    if numbers.found:
        where, unsendable = _first_unsendable(value)
        raise ValueError(unsendable.text(where))
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    return cast("dict[str, Any]", value)


class _Unsendable:
    """In place of a number of the result's JSON text that no JSON value can carry."""

    __slots__ = ("reason", "what")

    def __init__(self, what: str, reason: str) -> None:
        self.what = what
        self.reason = reason

    def text(self, where: str) -> str:
        return _short(f"{self.what} at {where}, {self.reason}")


class _NumberReader:
    """``json.loads``'s readers of numbers: an ``_Unsendable`` for each that would not be
    what the text says (``found`` tells whether any was)."""

    __slots__ = ("found",)

    def __init__(self) -> None:
        self.found = False

    def _unsendable(self, what: str, reason: str) -> _Unsendable:
        self.found = True
        return _Unsendable(what, reason)

    def constant(self, spelling: str) -> object:  # NaN, Infinity, -Infinity
        return self._unsendable(spelling, _NOT_A_JSON_NUMBER)

    def integer(self, digits: str) -> object:
        try:
            return int(digits)
        except ValueError:  # more digits than int() takes from text
            limit = sys.get_int_max_str_digits()
            return self._unsendable(
                f"an integer of more than {limit} digits", "more than Python reads from JSON"
            )

    def fraction(self, spelling: str) -> object:
        number = float(spelling)
        if math.isfinite(number):
            return number
        # 1e400: float() reads it as infinity (which the SDK would send as null).
        return self._unsendable(
            "a number out of a float's range", f"read as Infinity, {_NOT_A_JSON_NUMBER}"
        )


def _first_unsendable(value: Any) -> tuple[str, _Unsendable]:
    """Where in ``value`` its first ``_Unsendable`` is (``/items/2``), and it; walked without
    recursion, as json reads up to about 1 000 levels."""
    pending: list[tuple[str, object]] = [("", value)]
    while pending:
        where, item = pending.pop()
        if isinstance(item, _Unsendable):
            return where or "/", item
        if isinstance(item, dict):
            entries: Iterable[tuple[object, object]] = cast("dict[str, object]", item).items()
        elif isinstance(item, list):
            entries = enumerate(cast("list[object]", item))
        else:
            continue
        pending.extend(reversed([(f"{where}/{key}", inner) for key, inner in entries]))
    raise AssertionError("no _Unsendable in the value")  # only called when one was made


def _validator(schema_json: str) -> tuple[dict[str, Any], Validator]:
    """The schema of ``schema_json`` and its validator: built once per schema text."""
    cached = _VALIDATORS.get(schema_json)
    if cached is None:
        if len(_VALIDATORS) >= _MAX_VALIDATORS:
            _VALIDATORS.clear()
        schema: dict[str, Any] = json.loads(schema_json)
        validator_class = validators.validator_for(schema)
        try:
            validator_class.check_schema(schema)
        except schema_errors.SchemaError:
            raise ValueError("its output schema is not a valid JSON Schema") from None
        cached = _VALIDATORS[schema_json] = (schema, validator_class(schema))
    return cached


def _check_writable(value: dict[str, Any]) -> None:
    """``ValueError`` saying why the SDK could not write ``value`` as JSON, if it could not.

    Written as the SDK writes a result (pydantic's serializer), which goes about 250 levels
    deep, where ``json`` reads about 1 000: a recursive model 127 levels deep (a tree) is
    JSON text, but no message. The SDK would fail the request with its exception's text.
    """
    try:
        pydantic_core.to_json(value)
    except ValueError:
        try:  # only once it failed: which of the two it was
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(_LONE_SURROGATE) from None
        except (ValueError, RecursionError):
            pass
        raise ValueError(_TOO_DEEP) from None


def _check(value: Any, validator: Validator) -> None:
    """``ValueError`` saying where ``value`` does not fit the validator's schema (its first
    error), or that it is nested too deeply to tell (``jsonschema`` recurses, through each
    ``$ref`` too, a few calls per level)."""
    try:
        error = next(iter(validator.iter_errors(value)), None)
    except RecursionError:
        raise ValueError(_TOO_DEEP_TO_CHECK) from None
    if error is not None:
        raise ValueError(_non_finite(error) or schema_mismatch(error))


def schema_mismatch(error: schema_errors.ValidationError | schema_errors.SchemaError) -> str:
    """Where a value does not fit a schema, and how, short: ``at /n: 'two' is not of type
    'integer'`` (for a ``SchemaError``, the value is a schema, and the schema the
    metaschema)."""
    return _short(f"at {_where(error)}: {error.message}")


def not_valid_mcp(error: pydantic.ValidationError) -> str:
    """Where a message the SDK read is not valid MCP, and how, short: its first error
    (``at /content/0/TextContent/text: Field required``), and how many more there are."""
    count = error.error_count()
    [first] = error.errors(include_url=False, include_context=False, include_input=False)[:1]
    where = "".join(f"/{step}" for step in first["loc"]) or "/"
    more = "" if count == 1 else f" (and {count - 1} more error{'s' if count > 2 else ''})"
    return _short(f"at {where}: {first['msg']}") + more


def _non_finite(error: schema_errors.ValidationError) -> str | None:
    """What ``error`` says, for a value where a number belongs that stands for NaN or an
    infinity: pydantic writes them as ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` (or as
    ``null``, in a model), JSON having no such numbers; else ``None``. Looks into the
    branches of an ``anyOf`` (``float | None``) too."""
    for cause in (error, *(error.context or ())):
        if cause.validator != "type":
            continue
        wanted: object = cause.validator_value  # "number", or a list of types
        kinds = cast("list[object]", wanted) if isinstance(wanted, list) else [wanted]
        if "number" not in kinds and "integer" not in kinds:
            continue
        if isinstance(cause.instance, str) and cause.instance in _NON_FINITE:
            return _short(f"{cause.instance} at {_where(cause)}, {_NOT_A_JSON_NUMBER}")
        if cause.instance is None:
            return _short(f"null at {_where(cause)} where a number belongs: {_NULL_NUMBER}")
    return None


def _where(error: schema_errors.ValidationError | schema_errors.SchemaError) -> str:
    return "".join(f"/{step}" for step in error.absolute_path) or "/"


def _short(text: str) -> str:
    # Where a value is may be long: its keys are the tool's.
    return text if len(text) <= _MAX_MISMATCH else text[: _MAX_MISMATCH - 1] + "…"


# -- use: a CallToolResult as what the model reads ------------------------------------------


def tool_return(result: types.CallToolResult, name: str, limits: Limits) -> str | ToolReturn:
    """What the model reads of a (successful) result of MCP tool ``name``: see the table.

    The metadata holds what ``limits`` allow (``_for_user``, ``_structured_metadata``): a
    ``Worker`` caps only what the model reads, and the history keeps the metadata too."""
    content = result.content
    structured = result.structured_content
    if structured is None:
        texts = _plain_texts(content)
        if texts is not None:
            return "\n".join(texts)  # the common case, as cheap as ever
    parts: list[ContentPart] = []
    for_user: list[types.ContentBlock] = []
    for block in content:
        if _for_user_only(block):
            for_user.append(block)
        else:
            parts.append(_part(block, name))
    metadata: dict[str, Any] = {}
    if for_user:
        _for_user(for_user, limits, metadata)
    if structured is not None:
        _structured_metadata(structured, limits.max_result_bytes, metadata)
        if not parts:
            parts.append(DataPart.of(structured))
    if not metadata and all(isinstance(part, TextPart) for part in parts):
        return "\n".join(part.text for part in parts if isinstance(part, TextPart))
    return ToolReturn(parts, metadata or None)


def _for_user(blocks: list[types.ContentBlock], limits: Limits, metadata: dict[str, Any]) -> None:
    """The blocks for the user only, as MCP JSON, into ``metadata["user_content"]``, in
    order: those with media data (an image, audio, a blob) within ``max_media_bytes``
    together, the others within ``max_result_bytes`` together, each counting the size of
    its JSON. A block that would take its share past the cap is left out (a smaller one
    after it may fit), and ``metadata["user_content_dropped"]`` counts those."""
    kept: list[dict[str, Any]] = []
    dropped = 0
    media_room = limits.max_media_bytes
    text_room = limits.max_result_bytes
    for block in blocks:
        dumped = block.model_dump(mode="json", by_alias=True, exclude_none=True)
        size = _json_size(dumped)
        if _has_media_data(block):
            if size <= media_room:
                media_room -= size
                kept.append(dumped)
                continue
        elif size <= text_room:
            text_room -= size
            kept.append(dumped)
            continue
        dropped += 1
    if kept:
        metadata["user_content"] = kept
    if dropped:
        metadata["user_content_dropped"] = dropped


def _json_size(value: Any) -> int:
    """The bytes of ``value``'s JSON (UTF-8, compact), a lone surrogate counted as 3."""
    try:
        return len(pydantic_core.to_json(value))
    except ValueError:  # a lone surrogate (an in-process server's text): UTF-8 has none
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return len(text.encode("utf-8", "surrogatepass"))


def _has_media_data(block: types.ContentBlock) -> bool:
    if isinstance(block, (types.ImageContent, types.AudioContent)):
        return True
    return isinstance(block, types.EmbeddedResource) and isinstance(
        block.resource, types.BlobResourceContents
    )


def _structured_metadata(structured: Any, max_bytes: int, metadata: dict[str, Any]) -> None:
    """``structured`` into ``metadata["structured_content"]`` if its JSON is within
    ``max_bytes``; else its size (bytes of JSON) into ``"structured_content_dropped"``."""
    size = _json_size(structured)
    if size <= max_bytes:
        metadata["structured_content"] = structured
    else:
        metadata["structured_content_dropped"] = size


def _plain_texts(content: list[types.ContentBlock]) -> list[str] | None:
    """The texts of ``content`` if it is nothing but text blocks with no annotations."""
    texts: list[str] = []
    for block in content:
        if type(block) is not types.TextContent or block.annotations is not None:
            return None
        texts.append(block.text)
    return texts


def error_text(result: types.CallToolResult) -> str:
    """The text of an ``isError`` result the model reads: its text blocks for the model, or,
    with no text in them, its ``structuredContent`` as compact JSON (as a successful
    result's is read when no block is for the model); ``""`` if it has neither. The caller
    makes it safe and caps it (``safe_text``)."""
    lines: list[str] = []
    for block in result.content:
        if _for_user_only(block):
            continue
        if isinstance(block, types.TextContent):
            lines.append(block.text)
        elif isinstance(block, types.EmbeddedResource) and isinstance(
            block.resource, types.TextResourceContents
        ):
            lines.append(block.resource.text)
    text = "\n".join(lines)
    if result.structured_content is not None and not text.strip():
        return _compact_json(result.structured_content)
    return text


def _compact_json(value: Any) -> str:
    """``value``'s JSON, compact; ``""`` for one nested too deeply to be written."""
    try:
        return pydantic_core.to_json(value).decode("utf-8")
    except ValueError:  # a lone surrogate (an in-process server's text), or too deep
        try:
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        except RecursionError:
            return ""


def _for_user_only(block: types.ContentBlock) -> bool:
    annotations = block.annotations
    audience = None if annotations is None else annotations.audience
    return audience is not None and "user" in audience and "assistant" not in audience


def _part(block: types.ContentBlock, name: str) -> ContentPart:
    if isinstance(block, types.TextContent):
        return TextPart(block.text)
    mark = _media_mark(block)  # a MediaPart's block, from an llm-worker server
    if isinstance(block, (types.ImageContent, types.AudioContent)):
        what = f"{'an image' if block.type == 'image' else 'audio'} ({_shown(block.mime_type)})"
        file_name = None if mark is None else _marked_name(mark)
        return _media(name, what, block.mime_type, data=block.data, file_name=file_name)
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            return TextPart(f"[resource <{resource.uri}>]\n{resource.text}")
        media_type = resource.mime_type or _DEFAULT_BLOB_TYPE
        what = f"the resource <{_shown(resource.uri)}>"
        file_name = _file_name(resource.uri) if mark is None else _marked_name(mark)
        return _media(name, what, media_type, data=resource.blob, file_name=file_name)
    if isinstance(block, types.ResourceLink):
        # A MediaPart's url is a part by url again (gs:, a data: URL that could not be
        # read); another server's link, only one a provider can fetch.
        schemes = _LINKED_SCHEMES if mark is None else _MARKED_SCHEMES
        linked = urlsplit(block.uri).scheme in schemes
        if block.mime_type is not None and linked:
            if mark is not None:
                link_name = _marked_name(mark)
            else:  # a link named by its own address has no name
                link_name = None if block.name == block.uri else block.name
            what = f"a link to <{_shown(block.uri)}>"
            return _media(name, what, block.mime_type, url=block.uri, file_name=link_name)
        return TextPart(f"[resource link: {block.name} <{block.uri}>]")
    return TextPart(f"[{getattr(block, 'type', 'unknown')} content not shown]")


def _media_mark(block: types.ContentBlock) -> dict[str, Any] | None:
    """The ``MEDIA_META`` object of ``block``'s ``_meta``, if it has one."""
    meta = getattr(block, "meta", None)
    mark: object = None if meta is None else meta.get(MEDIA_META)
    return cast("dict[str, Any]", mark) if isinstance(mark, dict) else None


def _marked_name(mark: dict[str, Any]) -> str | None:
    name = mark.get("name")
    return name if isinstance(name, str) else None


def _media(
    name: str,
    what: str,
    media_type: str,
    *,
    data: str | None = None,
    url: str | None = None,
    file_name: str | None = None,
) -> MediaPart:
    raw = None
    if data is not None:
        try:
            raw = _decode(data)
        except ValueError:  # binascii.Error, or text that is not ASCII
            raise _unreadable(name, what, "its data is not base64") from None
    try:
        return MediaPart(media_type, data=raw, url=url, name=file_name)
    except ValueError:
        raise _unreadable(name, what, f"{media_type!r} is not a MIME type") from None


def _shown(text: str) -> str:
    """``text`` for an error text: escaped as ``repr`` escapes it if it has a line break or
    another control character (a media type that is none because it has one)."""
    return text if text.isprintable() else repr(text)[1:-1]


def _unreadable(name: str, what: str, problem: str) -> ExecutionFailedError:
    return ExecutionFailedError(call_text(MCP_BAD_CONTENT, name, what=what, problem=problem))


def _decode(data: str) -> bytes:
    """Base64, strictly; line breaks and spaces (as MIME base64 has) are let through."""
    try:
        return base64.b64decode(data, validate=True)
    except ValueError:
        compact = "".join(data.split())
        if compact == data:
            raise
        return base64.b64decode(compact, validate=True)


def _file_name(uri: str) -> str | None:
    """The last segment of ``uri``'s path, if it has one: ``file:///data/q3.pdf`` → ``q3.pdf``.

    Cut after unquoting, at ``/`` and ``\\`` alike: a name is never a path (``%2e%2e%2f``
    would make ``../``), and ``.`` or ``..`` is no name."""
    last = unquote(urlsplit(uri).path).replace("\\", "/").rpartition("/")[2]
    return None if last in ("", ".", "..") else last
