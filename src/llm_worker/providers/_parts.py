"""Rich tool results for the provider clients: a result's media, written the way APIs take them.

A ``ToolResult`` whose parts hold no media is sent as its text (``content``),
exactly as a text result: only media change a request. Each client decides
what its API takes in a tool result and where the rest goes (docs/providers.md,
"Rich tool results"); this module has what they share: which parts are
media, their MIME type, base64 and data URLs, file names, the form a part
by URL is sent in (``sendable``), and the notes a model reads in place of media it
cannot be sent.

Nothing here imports a provider SDK.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from .._content import ContentPart, MediaPart, TextPart, data_url_bytes
from .._conversation import ToolResult
from .._model_texts import (
    MEDIA_ATTACHED,
    MEDIA_NOT_SENT,
    MEDIA_URL_NOT_FETCHED,
    MEDIA_URL_UNREADABLE,
    media_label,
    shown_media_type,
)

__all__ = [
    "FILE_EXTENSIONS",
    "attached_note",
    "base64_of",
    "data_url",
    "file_name",
    "has_media",
    "mime_type",
    "not_sent",
    "plain_text",
    "result_blocks",
    "sendable",
    "text_of_part",
]


_Block = TypeVar("_Block")


def has_media(result: ToolResult) -> bool:
    """Whether ``result`` holds a media part (a text result, or text and data, holds none)."""
    return bool(result.parts) and any(isinstance(part, MediaPart) for part in result.parts)


def text_of_part(part: ContentPart) -> str:
    """A text or data part's text (a data part's JSON); ``""`` for media."""
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, MediaPart):
        return ""
    return part.json_text


def sendable(part: MediaPart, schemes: frozenset[str]) -> MediaPart | None:
    """``part`` in a form an API that fetches URLs of ``schemes`` (lower-case) takes, or
    ``None`` if there is none: the model then reads ``not_sent(part, None)`` in its place.

    A part with bytes, or a URL of one of ``schemes``, is sent as it is; a ``data:`` URL
    (which no API fetches) as a part with the bytes it holds (``data_url_bytes``, read
    here once), or ``None`` if they cannot be read; a URL of another scheme (``gs://``
    for an API that fetches only http(s)), ``None``. Sent, such a URL would be refused
    with the request, and with every later one of the conversation, which carries it.
    """
    url = part.url
    if url is None:
        return part
    scheme = url[: url.find(":")].lower()  # a MediaPart's url has one (_content._FETCHED_URL)
    if scheme in schemes:
        return part
    if scheme == "data":
        data = data_url_bytes(url)
        if data is not None:
            return MediaPart(part.media_type, data=data, name=part.name)
    return None


def mime_type(part: MediaPart) -> str:
    """The part's MIME type without parameters, lower-cased: ``"image/png"``."""
    return part.media_type.split(";", 1)[0].strip().lower()


def base64_of(part: MediaPart) -> str:
    """The part's bytes in base64 (``""`` for a URL part)."""
    return base64.b64encode(part.data).decode("ascii") if part.data is not None else ""


def data_url(part: MediaPart) -> str:
    """Where the part is: its URL, or its bytes as a ``data:`` URL."""
    if part.url is not None:
        return part.url
    return f"data:{mime_type(part)};base64,{base64_of(part)}"


FILE_EXTENSIONS: Mapping[str, str] = {
    "application/pdf": ".pdf",
    # Text and code
    "text/plain": ".txt",
    "text/markdown": ".md",
    "text/x-markdown": ".md",
    "text/csv": ".csv",
    "text/tab-separated-values": ".tsv",
    "text/html": ".html",
    "text/css": ".css",
    "text/xml": ".xml",
    "application/xml": ".xml",
    "application/json": ".json",
    "text/javascript": ".js",
    "application/javascript": ".js",
    "application/typescript": ".ts",
    "text/x-typescript": ".ts",
    "text/x-python": ".py",
    "application/x-python": ".py",
    "text/x-c": ".c",
    "text/x-c++": ".cpp",
    "text/x-csharp": ".cs",
    "text/x-go": ".go",
    "text/x-java": ".java",
    "text/x-php": ".php",
    "text/x-ruby": ".rb",
    "application/x-sh": ".sh",
    "text/x-sh": ".sh",
    "application/sql": ".sql",
    "application/x-tex": ".tex",
    "text/x-tex": ".tex",
    "application/yaml": ".yaml",
    "application/x-yaml": ".yaml",
    "text/yaml": ".yaml",
    "text/x-yaml": ".yaml",
    # Rich documents, presentations, spreadsheets
    "text/rtf": ".rtf",
    "application/rtf": ".rtf",
    "application/msword": ".doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "application/vnd.oasis.opendocument.text": ".odt",
    "application/vnd.ms-powerpoint": ".ppt",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
    "application/vnd.ms-excel": ".xls",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ".xlsx",
}
"""The extension of an unnamed document's file name, by ``mime_type()``: the documents
OpenAI reads (``input_file``), which it tells apart by the name. A fixed table, not
``mimetypes``, whose answers depend on the host (its ``/etc/mime.types``, the Windows
registry) and the Python version: the same history is sent as the same request
everywhere."""


def file_name(part: MediaPart) -> str:
    """The part's file name, or one made from its kind and type (``FILE_EXTENSIONS``):
    ``document.pdf``; ``document`` for a type off the table."""
    if part.name:
        return part.name
    return f"{part.kind}{FILE_EXTENSIONS.get(mime_type(part), '')}"


def plain_text(part: MediaPart) -> str | None:
    """A ``text/*`` document's bytes as text (UTF-8; ``None`` for other parts and URLs)."""
    if part.data is None or not mime_type(part).startswith("text/"):
        return None
    return part.data.decode("utf-8", "replace")


def not_sent(part: MediaPart, sent: MediaPart | None) -> str:
    """What the model reads in place of a media part its API cannot take in a tool result.

    ``sent`` is ``sendable(part, ...)``: ``None`` when the part's URL is why (a scheme the
    API does not fetch, a ``data:`` URL that cannot be read), else the part the API was
    offered, whose type it does not take there.
    """
    url = part.url
    if sent is None and url is not None:
        scheme = url[: url.find(":")].lower()
        if scheme == "data":
            return MEDIA_URL_UNREADABLE.format(media=media_label(part))
        return MEDIA_URL_NOT_FETCHED.format(media=media_label(part), scheme=scheme)
    return MEDIA_NOT_SENT.format(
        media=media_label(part), media_type=shown_media_type(part.media_type)
    )


def attached_note(parts: Sequence[MediaPart]) -> str:
    """What a text-only tool message says of its media, sent in the next user message."""
    return MEDIA_ATTACHED.format(media=", ".join(media_label(part) for part in parts))


def result_blocks(
    result: ToolResult,
    media: Callable[[MediaPart], _Block | None],
    text: Callable[[str], _Block],
    *,
    schemes: frozenset[str],
    blank: bool = True,
) -> list[_Block]:
    """A rich result's parts as an API's blocks, in order: ``media(sendable(part, schemes))``
    for a media part (``None``, from either: the API cannot take it there, and the model
    reads a note in its place), ``text(...)`` for text and data (its JSON). Empty texts are
    left out: APIs refuse them; ``blank=False`` leaves out texts of whitespace only too, for
    an API that refuses those.
    """
    blocks: list[_Block] = []
    for part in result.parts:
        if isinstance(part, MediaPart):
            sent = sendable(part, schemes)
            block = None if sent is None else media(sent)
            if block is not None:
                blocks.append(block)
                continue
            written = not_sent(part, sent)
        else:
            written = text_of_part(part)
        if written and (blank or not written.isspace()):
            blocks.append(text(written))
    return blocks
