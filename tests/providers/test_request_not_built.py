"""A request the SDK or the HTTP library cannot build or send is a ``ProviderError`` that is
not retryable (``request_not_built``), and no exception text a provider error quotes shows a
secret.

The triggers are what users meet: an API key read from a file with its newline (the HTTP
library refuses the header, quoting its value), a key pasted with a no-break space, an
``extra_body`` value JSON cannot encode. The real SDKs against the local server, which
must receive nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import anyio
import httpx2
import openai
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from llm_worker import LlmClient, LlmRequest, ProviderError, UserMessage, Worker
from llm_worker.otel import OpenTelemetry
from llm_worker.providers import anthropic as anthropic_provider
from llm_worker.providers import openai as openai_provider
from llm_worker.providers._common import (
    connection_failed,
    exception_text,
    http_failure,
    malformed_stream,
    request_not_built,
)
from llm_worker.providers.anthropic import AnthropicClient
from llm_worker.providers.openai import OpenAIChatClient, OpenAIResponsesClient

from . import wire
from .server import ProviderServer, stream

pytestmark = pytest.mark.filterwarnings(
    r"ignore:Async generator '(anthropic|openai|httpx2|httpcore2)\.[^']*' was garbage "
    r"collected:ResourceWarning"
)

SECRET = "sk-proj-SECRETSECRET1234"
NOT_BUILT = "the request could not be built, so it was not sent"

Maker = Callable[..., LlmClient]


def chat(server: ProviderServer, **options: Any) -> OpenAIChatClient:
    options.setdefault("api_key", "test-key")
    return OpenAIChatClient("m", base_url=f"{server.base_url}/v1", max_retries=0, **options)


def responses(server: ProviderServer, **options: Any) -> OpenAIResponsesClient:
    options.setdefault("api_key", "test-key")
    return OpenAIResponsesClient("m", base_url=f"{server.base_url}/v1", max_retries=0, **options)


def claude(server: ProviderServer, **options: Any) -> AnthropicClient:
    options.setdefault("api_key", "test-key")
    return AnthropicClient("m", base_url=server.base_url, max_retries=0, **options)


CLIENTS: dict[str, Maker] = {"chat": chat, "responses": responses, "anthropic": claude}


async def failed_run(client: LlmClient, worker: Worker | None = None) -> ProviderError:
    async with client:
        worker = worker or Worker(client)
        with anyio.fail_after(10), pytest.raises(ProviderError) as info:
            await worker.run("hi")
    return info.value


class TestHeadersTheHttpLibraryRefuses:
    @pytest.mark.anyio
    @pytest.mark.parametrize("name", CLIENTS)
    async def test_an_api_key_with_a_newline_is_not_built_and_not_shown(
        self, server: ProviderServer, name: str
    ) -> None:
        """A key read from a file with its newline: the HTTP library refuses the header
        (quoting it, ``Bearer sk-...``). Not retryable, nothing sent, and the key is in
        neither the error nor any span's status."""
        spans = InMemorySpanExporter()
        tracing = TracerProvider()
        tracing.add_span_processor(SimpleSpanProcessor(spans))
        client = CLIENTS[name](server, api_key=SECRET + "\n")
        worker = Worker(client, instrumentation=OpenTelemetry(tracer_provider=tracing))
        failure = await failed_run(client, worker)
        assert failure.message == (
            f"{NOT_BUILT} (LocalProtocolError: Illegal header value (not shown))"
        )
        assert (failure.retryable, failure.status) == (False, None)
        # Chained to the SDK's connection error, whose cause is the HTTP library's.
        assert isinstance(failure.__cause__.__cause__, httpx2.LocalProtocolError)
        assert SECRET not in str(failure)
        described = [span.status.description or "" for span in spans.get_finished_spans()]
        assert any(NOT_BUILT in text for text in described)
        assert not [text for text in described if SECRET in text]
        assert server.requests == []

    @pytest.mark.anyio
    async def test_a_header_no_name_gives_away_is_not_shown(self, server: ProviderServer) -> None:
        """A key in a header of another name (Azure's ``api-key``), which no scrubber can
        tell from its value alone: a refused header's value is never quoted."""
        sdk = openai.AsyncOpenAI(
            api_key="test-key",
            base_url=f"{server.base_url}/v1",
            max_retries=0,
            default_headers={"api-key": SECRET + "\n"},
        )
        failure = await failed_run(OpenAIChatClient("m", client=sdk))
        await sdk.close()
        assert SECRET not in failure.message
        assert failure.message.startswith(f"{NOT_BUILT} (LocalProtocolError: ")
        assert failure.retryable is False


class TestRequestsTheSdkCannotBuild:
    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("name", "extra_body", "said"),
        [
            *(
                pytest.param(name, {"temperature": Decimal("0.2")}, "Decimal", id=f"{name}-decimal")
                for name in ("chat", "responses", "anthropic")
            ),
            # The anthropic SDK sends a set as a list.
            *(
                pytest.param(name, {"metadata": {"tags": {"a"}}}, "set", id=f"{name}-set")
                for name in ("chat", "responses")
            ),
        ],
    )
    async def test_extra_body_json_cannot_encode(
        self, server: ProviderServer, name: str, extra_body: dict[str, Any], said: str
    ) -> None:
        """The SDK's ``TypeError`` while it builds the body is a ``ProviderError``, not
        retryable, and nothing is sent."""
        failure = await failed_run(CLIENTS[name](server, extra_body=extra_body))
        assert failure.message == (
            f"{NOT_BUILT} (TypeError: Object of type {said} is not JSON serializable)"
        )
        assert (failure.retryable, failure.status) == (False, None)
        assert isinstance(failure.__cause__, TypeError)
        assert server.requests == []

    @pytest.mark.anyio
    @pytest.mark.parametrize("name", ["chat", "responses"])  # the anthropic SDK sends it
    async def test_an_api_key_with_a_character_a_header_cannot_hold(
        self, server: ProviderServer, name: str
    ) -> None:
        """A key pasted with a no-break space: the ``UnicodeEncodeError`` (a ``ValueError``)
        of the headers is a request not built."""
        failure = await failed_run(CLIENTS[name](server, api_key="sk-test\u00a0"))
        assert failure.message.startswith(f"{NOT_BUILT} (UnicodeEncodeError: 'ascii' codec ")
        assert failure.retryable is False
        assert isinstance(failure.__cause__, UnicodeEncodeError)
        assert server.requests == []

    @pytest.mark.anyio
    @pytest.mark.parametrize("name", CLIENTS)
    async def test_our_own_conversion_errors_are_not_taken_for_the_sdks(
        self, server: ProviderServer, name: str
    ) -> None:
        """Only the SDK's call is watched: a history item that is no message fails the
        client's own conversion with its ``TypeError``, as it did, not as a request the SDK
        could not build."""
        request = LlmRequest(None, (UserMessage("hi"), "not a message"), ())  # type: ignore[arg-type]
        async with CLIENTS[name](server) as client:
            with anyio.fail_after(10), pytest.raises(TypeError, match="not a history item"):
                async for _ in client.stream(request):
                    pass
        assert server.requests == []

    @pytest.mark.anyio
    async def test_a_request_that_is_built_is_sent(self, server: ProviderServer) -> None:
        """The same clients send a request they can build (the check costs nothing else)."""
        server.add(stream(*wire.chat_text("hi")))
        async with chat(server, extra_body={"temperature": 0.2}) as client:
            worker = Worker(client)
            with anyio.fail_after(10):
                await worker.run("hi")
        assert worker.final_text == "hi"
        assert server.requests[0].json["temperature"] == 0.2


BEARER = f"Authorization: Bearer {SECRET}"


class TestExceptionTextsAreScrubbed:
    """Every exception text a provider error quotes goes through ``safe_text``."""

    def test_a_connection_failure(self) -> None:
        failure = connection_failed("openai", httpx2.ConnectError(f"refused ({BEARER})"), "x")
        assert failure.message == (
            "the connection failed (ConnectError: refused (Authorization: Bearer <redacted>))"
        )
        assert failure.retryable is True

    def test_a_connection_failure_without_text_says_the_fallback(self) -> None:
        failure = connection_failed("openai", httpx2.ConnectError(""), "Connection error.")
        assert failure.message == "the connection failed (Connection error.)"

    def test_a_malformed_stream(self) -> None:
        failure = malformed_stream("anthropic", ValueError(f"bad event {BEARER}"))
        assert SECRET not in failure.message
        assert failure.message.endswith("(ValueError: bad event Authorization: Bearer <redacted>)")

    def test_a_request_not_built(self) -> None:
        failure = request_not_built("gemini", TypeError(f"cannot encode 'Bearer {SECRET}'"))
        assert SECRET not in failure.message

    def test_a_refused_header_is_a_request_not_built(self) -> None:
        """``http_failure``: the HTTP library's ``LocalProtocolError`` is a request it refused
        to send, not retryable; its other errors a connection that failed."""
        refused = http_failure(
            "openai", httpx2.LocalProtocolError(f"Illegal header value b'{SECRET}\\n'"), "x"
        )
        assert (
            refused.message == f"{NOT_BUILT} (LocalProtocolError: Illegal header value (not shown))"
        )
        assert refused.retryable is False
        broken = http_failure("openai", httpx2.ReadError("reset"), "x")
        assert (broken.message, broken.retryable) == (
            "the connection failed (ReadError: reset)",
            True,
        )

    def test_an_sdk_error_of_no_known_kind(self) -> None:
        """The fallback of each client's ``provider_error``: the exception's text, scrubbed."""
        for provider_error, error in [
            (openai_provider.provider_error, openai.OpenAIError(BEARER)),
            (
                anthropic_provider.provider_error,
                anthropic_provider.anthropic.AnthropicError(BEARER),
            ),
        ]:
            assert provider_error(error).message == "Authorization: Bearer <redacted>"

    def test_an_exception_without_text_is_its_class(self) -> None:
        assert exception_text(ValueError()) == "ValueError"
