"""What a tool result can hold besides text: images, audio, documents, structured data.

A tool returns them as a ``ToolReturn`` (or, from a ``@tool`` method, a part or
a list of parts); the worker keeps them in ``ToolResult.parts`` and the
provider clients send them as the API allows (see docs/results-and-errors.md,
"Rich results"). Every part is frozen, and JSON in the run state (bytes as
base64).

    TextPart(text)                          text, where it stands among the others
    MediaPart(media_type, data=... | url=...)   an image, audio, a video or a document
    DataPart(value)                         a JSON value (structured content)
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, cast

__all__ = [
    "MAX_METADATA_DEPTH",
    "ContentPart",
    "DataPart",
    "MediaPart",
    "TextPart",
    "ToolReturn",
    "check_metadata",
    "data_url_bytes",
    "text_of",
]


@dataclass(frozen=True)
class TextPart:
    """Text among other parts."""

    text: str

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError(f"TextPart text must be a str, not {type(self.text).__name__}")


MediaKind = Literal["image", "audio", "video", "document"]

# A media type as RFC 6838 writes one: type "/" subtype, each 1 to 127 of its characters
# (the first a letter or digit), then any parameters ("; charset=utf-8"), in which
# MediaPart also refuses control characters (a line break would start a new header).
_MEDIA_TYPE = re.compile(
    r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}(?: *;.*)?"
)


def _is_media_type(text: object) -> bool:
    return isinstance(text, str) and _MEDIA_TYPE.fullmatch(text) is not None and text.isprintable()


# The URLs a provider fetches (docs/providers.md, "Rich tool results"): http(s) (every
# API; Gemini's Files API URIs are https too), data: (the part's bytes in the URL), gs://
# (Gemini on Vertex AI's file_uri). A path, a file:// URL or "" reaches no provider: each
# would refuse the request, and every later one of the conversation, which carries it.
_FETCHED_URL = re.compile(r"(?:https?|gs|data):", re.IGNORECASE)
_URL_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def _url_problem(url: str) -> str:
    """Why ``url`` is not one a provider fetches (``_FETCHED_URL`` did not match)."""
    scheme = _URL_SCHEME.match(url, 0, 40)
    shown = url if len(url) <= 100 else url[:99] + "…"
    if scheme is None or len(scheme.group()) == 2:  # "C:": a Windows path's drive
        what = f"{shown!r} has no scheme (a path is not a URL)"
    else:
        what = f"{shown!r} is a URL of scheme {scheme.group()[:-1]!r}, which no provider fetches"
    return (
        f"MediaPart url must be an http(s), data: or gs:// URL a provider can fetch: {what}; "
        f"give a local file's bytes instead, MediaPart(media_type, data=...)"
    )


def data_url_bytes(url: str) -> bytes | None:
    """The bytes a ``data:`` URL holds (RFC 2397: base64 after ``;base64``, else
    percent-encoded; scheme and ``;base64`` in any case), or ``None`` for any other URL,
    or one that cannot be read (not base64, a bad escape, text that is not UTF-8).

    Never more bytes than the URL has in UTF-8, which is what a part's URL counts against
    ``Limits.max_media_bytes``: its bytes are within the cap too. Base64 is read strictly;
    line breaks and spaces (as MIME base64 has) are let through.
    """
    if url[:5].lower() != "data:":
        return None
    comma = url.find(",", 5)
    if comma < 0:
        return None
    import base64  # here, not at the top: ``import llm_worker`` stays cheap
    from urllib.parse import unquote, unquote_to_bytes

    header, body = url[5:comma], url[comma + 1 :]  # the body copied once
    try:
        if not header.rstrip().lower().endswith(";base64"):
            return unquote_to_bytes(body)
        text = unquote(body, errors="strict") if "%" in body else body
        try:
            return base64.b64decode(text, validate=True)
        except ValueError:
            compact = "".join(text.split())
            if compact == text:
                return None
            return base64.b64decode(compact, validate=True)
    except ValueError:  # not base64, or not UTF-8 (a lone surrogate, a bad escape)
        return None


@dataclass(frozen=True)
class MediaPart:
    """An image, audio, a video or a document: its bytes (``data``) or where it is (``url``).

    ``media_type`` is its MIME type (``"image/png"``, ``"application/pdf"``;
    ``ValueError`` if it is not ``type/subtype``, parameters after ``;`` allowed);
    ``kind`` follows from it. ``url`` is an ``http(s)://``, ``data:`` or ``gs://`` URL
    (``ValueError`` for a path, a ``file://`` URL, or any other a provider does not
    fetch: give its bytes). ``name`` is a file name, for documents.
    """

    media_type: str
    data: bytes | None = field(default=None, repr=False)
    url: str | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        if not _is_media_type(self.media_type):
            raise ValueError(
                f"MediaPart media_type must be a MIME type, type/subtype such as 'image/png' "
                f"(parameters after ';' allowed, no control characters), not {self.media_type!r}"
            )
        if (self.data is None) == (self.url is None):
            raise ValueError(
                "a MediaPart has either data (its bytes) or a url, not both or neither"
            )
        if self.data is not None and not isinstance(self.data, bytes):
            raise TypeError(f"MediaPart data must be bytes, not {type(self.data).__name__}")
        # A run state writes them as JSON strings: bytes could not be written, a number
        # could not be read back.
        url = self.url
        if url is not None:
            if not isinstance(url, str):
                raise TypeError(f"MediaPart url must be a str, not {type(url).__name__}")
            if _FETCHED_URL.match(url) is None:
                raise ValueError(_url_problem(url))
        if self.name is not None and not isinstance(self.name, str):
            raise TypeError(f"MediaPart name must be a str, not {type(self.name).__name__}")

    @property
    def kind(self) -> MediaKind:
        """What it is, from its media type: ``"image"``, ``"audio"``, ``"video"`` or
        ``"document"`` (anything else)."""
        major = self.media_type.split("/", 1)[0].lower()
        if major in ("image", "audio", "video"):
            return major  # type: ignore[return-value]
        return "document"

    @property
    def size(self) -> int:
        """Its size in bytes (0 for a URL)."""
        return 0 if self.data is None else len(self.data)

    def __repr__(self) -> str:
        where = f"url={self.url!r}" if self.url is not None else f"{self.size} bytes"
        return (
            f"MediaPart({self.media_type!r}, {where}{f', name={self.name!r}' if self.name else ''})"
        )


@dataclass(frozen=True)
class DataPart:
    """A JSON value: structured content (kept as JSON text, so the part stays immutable).

    ``json_text`` must be JSON a run state reads back (``ValueError`` if not): checked
    here, where the part is made, not when a saved state fails to load.
    """

    json_text: str

    def __post_init__(self) -> None:
        text = self.json_text
        if not isinstance(text, str):
            raise TypeError(f"DataPart json_text must be a str, not {type(text).__name__}")
        try:
            json.loads(text)  # as RunState.from_json and set_history read it
        except ValueError as exc:
            raise ValueError(f"DataPart json_text is not JSON ({exc})") from None
        except RecursionError:  # deeper than json.loads reads (about 1 000 levels)
            raise ValueError("DataPart json_text nests too deep to read as JSON") from None

    @classmethod
    def of(cls, value: Any) -> DataPart:
        """The part holding ``value`` (anything pydantic can make JSON of).

        ``ValueError``, as ``DataPart(json_text)`` raises it, for an int of more digits
        than Python reads back (``sys.get_int_max_str_digits()``, 4 300 by default).
        """
        from pydantic_core import to_json

        text = to_json(value).decode()
        # Not parsed again (which costs more than the writing): pydantic writes JSON that
        # json.loads reads, at most 254 levels deep, but for an int of more digits than
        # Python reads (4 300 by default): a text that could hold one is parsed as the
        # constructor parses it, and raises as it does.
        limit = sys.get_int_max_str_digits()
        if limit and len(text) > limit and _has_digit_run(text, limit + 1):
            return cls(text)
        part = object.__new__(cls)
        object.__setattr__(part, "json_text", text)
        return part

    @property
    def value(self) -> Any:
        """The JSON value, parsed."""
        return json.loads(self.json_text)


_DIGITS = "0123456789"


def _has_digit_run(text: str, length: int) -> bool:
    """Whether ``text`` holds ``length`` digits in a row. Such a run holds one of every
    ``length``-th character: only the runs through those are measured."""
    for at in range(length - 1, len(text), length):
        if text[at] in _DIGITS:
            before = text[max(0, at - length + 1) : at]
            after = text[at + 1 : at + length]
            run_before = len(before) - len(before.rstrip(_DIGITS))
            run_after = len(after) - len(after.lstrip(_DIGITS))
            if run_before + 1 + run_after >= length:
                return True
    return False


ContentPart: TypeAlias = TextPart | MediaPart | DataPart
"""One part of a rich tool result."""


@dataclass(frozen=True)
class ToolReturn:
    """What a tool returns for more than text.

    ``content`` is what the model gets: text, a part, or parts in order.
    ``metadata`` is for the application only (the run stream, hooks, the
    history) and never sent to a model: any JSON-ready value.

    >>> ToolReturn([TextPart("The chart:"), MediaPart("image/png", data=png)])
    """

    content: str | ContentPart | Sequence[ContentPart]
    metadata: Any = None

    def parts(self) -> tuple[ContentPart, ...]:
        """``content`` as a tuple of parts; ``TypeError`` for content that is not text, a
        part, or a list or tuple of parts.

        A list or tuple is read as it is stored, whatever its class's ``__iter__`` says:
        the parts are those the tool made. An iterator (or any other iterable) is refused
        unread, since reading an endless one would never end: nothing interrupts a loop
        that does not await, not even the call's timeout.
        """
        content = self.content
        if isinstance(content, str):
            return (TextPart(content),)
        if isinstance(content, (TextPart, MediaPart, DataPart)):
            return (content,)
        if isinstance(content, tuple):
            parts = content if type(content) is tuple else tuple(_tuple_items(content))
        elif isinstance(content, list):
            parts = tuple(_list_items(content))
        else:
            raise TypeError(
                f"a ToolReturn's content is text, a part, or a list or tuple of parts, "
                f"not {type(content).__name__}"
            )
        for part in parts:
            if not isinstance(part, (TextPart, MediaPart, DataPart)):
                raise TypeError(
                    f"a ToolReturn's content is text or TextPart/MediaPart/DataPart parts, "
                    f"not {type(part).__name__}"
                )
        return parts


# What a list or tuple holds, as stored: a subclass's own __iter__ (an endless one) is not called.
_list_items: Callable[[list[ContentPart]], Iterator[ContentPart]] = list.__iter__  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
_tuple_items: Callable[[tuple[ContentPart, ...]], Iterator[ContentPart]] = tuple.__iter__  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]


def text_of(parts: Sequence[ContentPart]) -> str:
    """The text a model that reads only text gets of ``parts``: its text and data parts, in
    order, one per line (media parts are the provider client's to send).

    An empty text part adds no line: the clients that send parts leave it out (their APIs
    refuse empty text), and a text-only API would read an empty line there.
    """
    texts = (
        part.text if isinstance(part, TextPart) else part.json_text
        for part in parts
        if not isinstance(part, MediaPart)
    )
    return "\n".join(text for text in texts if text)  # a data part's JSON is never empty


MAX_METADATA_DEPTH = 100
"""How deep a result's metadata may nest (each list or dict a level: ``[[1]]`` is 2). A
run state reads its whole document 200 levels deep at most (pydantic's JSON parser), and
metadata sits 5 levels down in it; 100 leaves room for the format to grow."""

_CONTAINERS = (dict, list, tuple)  # what json.dumps writes as an array or an object
_Container: TypeAlias = "dict[object, object] | list[object] | tuple[object, ...]"


def check_metadata(metadata: object) -> None:
    """Raise unless ``metadata`` can be written in a run state as JSON, and read back:
    ``TypeError`` for a value JSON has no form for (a ``datetime``, a ``set``,
    ``bytes``), ``ValueError`` for ``NaN`` or an infinity, a cycle, or nesting deeper
    than ``MAX_METADATA_DEPTH`` levels.

    What a result's metadata is checked with wherever it enters a history, so that
    ``to_json()`` never fails on it later, far from where it came from, nor writes a
    state ``from_json()`` cannot read.
    """
    try:
        text = json.dumps(metadata, ensure_ascii=False, allow_nan=False)  # as to_json() does
    except RecursionError:
        raise ValueError("it nests too deep to write as JSON") from None
    # Fewer brackets than levels allowed (most metadata): it cannot nest too deep.
    if text.count("[") + text.count("{") > MAX_METADATA_DEPTH and _nests_deeper(
        metadata, MAX_METADATA_DEPTH
    ):
        raise ValueError(
            f"it nests deeper than {MAX_METADATA_DEPTH} levels, more than a run state keeps"
        )


def _nests_deeper(value: object, limit: int) -> bool:
    """Whether ``value`` (JSON data: json.dumps wrote it) has lists and dicts more than
    ``limit`` levels deep. Level by level, without recursion: one pass over its items."""
    level: list[_Container] = [cast(_Container, value)] if isinstance(value, _CONTAINERS) else []
    for _ in range(limit):
        # One comprehension: a level of 100 000 dicts costs what json.dumps does.
        below: list[_Container] = [
            item  # pyright: ignore[reportUnknownVariableType]
            for container in level
            for item in (container.values() if isinstance(container, dict) else container)
            if isinstance(item, _CONTAINERS)
        ]
        if not below:
            return False
        level = below
    return True  # `level` holds lists or dicts `limit + 1` levels down
